//! `kcache cache`: look after the persistent program store.

use super::{write_stdout, Failure};
use clap::{Args, Subcommand};
use kcache::bytes::format_byte_size;
use kcache::resolve::stored;
use kcache::store::config::{ResolvedStoreConfig, StoreConfig, StoreKind};
use kcache::store::settings::{self, Zeroed};
use kcache::store::{RedisStore, Store, StoreErrorKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which store: flags override `KCACHE_STORE`, `KCACHE_DIR`, `KCACHE_MAX_BYTES`.
///
/// The flags are global: `kcache cache --dir X stats` and
/// `kcache cache stats --dir X` are the same.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Store")]
pub struct StoreFlags {
    /// The store kind: file, sqlite or none [env: KCACHE_STORE; default: file].
    #[arg(long, value_name = "KIND", global = true)]
    pub store: Option<StoreKind>,
    /// The cache directory [env: KCACHE_DIR; default: $XDG_CACHE_HOME/kcache or ~/.cache/kcache].
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

impl StoreFlags {
    /// The store these flags and the environment ask for (`None` for `none`),
    /// for a command that compiles: the store is an optimisation, so one that
    /// cannot be opened (unsafe, unreadable, not a store, on a full or
    /// read-only disk) is one warning and `None`. Only a configuration error
    /// fails.
    pub fn open(&self, max_bytes: Option<u64>) -> Result<Option<Arc<dyn Store>>, Failure> {
        let config = self.config(max_bytes)?;
        match config.open() {
            Ok(store) => Ok(store),
            Err(e) if e.kind() == StoreErrorKind::Config => Err(e.into()),
            Err(e) => {
                tracing::warn!("cannot use the program store ({e}); compiling without it");
                Ok(None)
            }
        }
    }

    /// Where the cc backend keeps its compilers' probe results: a
    /// `compilers` folder in the cache directory, unless the store is off,
    /// or the directory cannot be named or is refused (the store's open
    /// warns about that), when nothing is kept.
    pub fn compilers_dir(&self) -> Option<PathBuf> {
        // The directory as `StoreConfig::resolve` names it, without reading
        // the cap it also resolves (the store's open reads it).
        let config = self.config(None).ok()?;
        if config.kind.unwrap_or_default() == StoreKind::None {
            return None;
        }
        let dir = match config.dir {
            Some(dir) => dir,
            None => kcache::store::config::default_dir(|n| std::env::var_os(n)).ok()?,
        };
        match kcache::store::config::compilers_dir(&dir) {
            Ok(dir) => Some(dir),
            Err(e) => {
                tracing::debug!("keeping no compiler probes ({e})");
                None
            }
        }
    }

    fn config(&self, max_bytes: Option<u64>) -> Result<StoreConfig, Failure> {
        let flags = StoreConfig {
            kind: self.store,
            dir: self.dir.clone(),
            max_bytes,
        };
        Ok(flags.or(StoreConfig::from_env()?))
    }
}

#[derive(Args, Debug)]
pub struct CacheArgs {
    /// Print one JSON object (`ls`: a JSON list) instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(flatten)]
    store: StoreFlags,
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// The store, its cap, entries, bytes, and the counters since the last
    /// `zero`: hits and misses counted per kernel (a kernel answered from the
    /// store is one hit, though it may read a record and a program; one looked
    /// up and compiled is one miss), hit rate, evictions, errors, corrupt
    /// entries.
    Stats,
    /// One line per entry, most recent first: name, bytes it counts against
    /// the cap (they add up to `stats`' bytes), last access (UTC).
    Ls,
    /// Check every entry; remove and report corrupt ones (exit 1 if any).
    Verify,
    /// Evict least recently used entries down to N bytes.
    Prune {
        /// What to keep at most: a number of bytes, or with a unit (512M, 1.5G, 2GB).
        #[arg(long, value_name = "N", value_parser = parse_size)]
        max_bytes: u64,
    },
    /// Remove every entry (the statistics and the cap `set-cap` keeps stay).
    Clear,
    /// Zero the statistics of this kind of store: `stats` counts from now on.
    Zero,
    /// Keep a byte cap in the store directory (512M, 1.5G, 10G); `none`
    /// removes it. The cap in force is KCACHE_MAX_BYTES when set, else this
    /// one, else 2 GiB.
    SetCap {
        /// The cap, or `none`.
        #[arg(value_name = "N|none", value_parser = parse_cap)]
        cap: Cap,
    },
    /// Write an entry's raw compiled bytes (a kernel's: its program's) to FILE (`-`: stdout).
    Export {
        /// The entry, as `kcache cache ls` names it.
        name: String,
        /// Where to write the bytes (with --json, not `-`).
        file: PathBuf,
    },
}

#[derive(Clone, Copy, Debug)]
enum Cap {
    Bytes(u64),
    None,
}

fn parse_size(s: &str) -> Result<u64, String> {
    kcache::bytes::parse_byte_size(s)
}

fn parse_cap(s: &str) -> Result<Cap, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Cap::None);
    }
    parse_size(s).map(Cap::Bytes)
}

/// Where the cap in force came from.
fn cap_source(config: &StoreConfig, dir: &Path) -> &'static str {
    if config.max_bytes.is_some() {
        "KCACHE_MAX_BYTES"
    } else if settings::read(dir).max_bytes.is_some() {
        "set-cap"
    } else {
        "default"
    }
}

pub fn cache(args: CacheArgs) -> Result<ExitCode, Failure> {
    let config = args.store.config(None)?;
    let resolved = config.resolve()?;
    if args.json
        && matches!(&args.command, CacheCommand::Export { file, .. } if file.as_os_str() == "-")
    {
        super::usage_error(
            "cache",
            "--json writes its report to standard output: export the bytes to a FILE, not `-`",
        );
    }
    if let CacheCommand::SetCap { cap } = args.command {
        return set_cap(&resolved, cap, args.json);
    }
    // The remote tier is looked after beside the local store (stats, ls,
    // verify, clear), never through it: each is reported on its own.
    let remote = RedisStore::from_env()?;
    let local = resolved.open_local()?;
    if local.is_none() && remote.is_none() {
        return Err(Failure(
            "no persistent store is configured (KCACHE_STORE=none or --store none)".into(),
        ));
    }
    let json = args.json;
    if let CacheCommand::Stats = args.command {
        let out = stats(local.as_deref(), remote.as_ref(), &config, &resolved, json)?;
        write_stdout(out.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let store: Arc<dyn Store> = match (&local, &remote) {
        (Some(l), _) => Arc::clone(l),
        (None, Some(r)) => Arc::new(r.clone()),
        (None, None) => unreachable!("refused above"),
    };
    // Where a command reads entries (`export`), a remote one counts too.
    let remote_only = remote.as_ref().filter(|_| local.is_some());
    let out = match args.command {
        CacheCommand::Stats => unreachable!("handled above"),
        CacheCommand::Ls => ls(&*store, remote_only, json)?,
        CacheCommand::Verify => {
            let mut report = store.verify()?;
            report.corrupt.extend(stored::verify_programs(&*store)?);
            if let Some(r) = remote_only {
                let rr = r.verify()?;
                report.checked += rr.checked;
                report.corrupt.extend(rr.corrupt);
                report.corrupt.extend(stored::verify_programs(r)?);
            }
            let out = if json {
                let v = serde_json::json!({
                    "checked": report.checked,
                    "corrupt": report.corrupt.iter().map(|c| serde_json::json!({
                        "location": c.location,
                        "name": c.key.as_deref().map(stored::entry_name),
                        "reason": c.reason,
                    })).collect::<Vec<_>>(),
                });
                format!("{v}\n")
            } else {
                let mut out = format!(
                    "checked {}, {} corrupt (removed)\n",
                    plural(report.checked, "entry", "entries"),
                    report.corrupt.len()
                );
                for c in &report.corrupt {
                    let name = c.key.as_deref().map(stored::entry_name);
                    out.push_str(&format!(
                        "corrupt: {} ({}): {}\n",
                        name.as_deref().unwrap_or("?"),
                        c.location,
                        c.reason
                    ));
                }
                out
            };
            write_stdout(out.as_bytes())?;
            return Ok(if report.corrupt.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        CacheCommand::Prune { max_bytes } => {
            let r = store.prune(max_bytes)?;
            if json {
                format!("{}\n", serde_json::json!(r))
            } else {
                format!(
                    "removed {}, freed {}, {} left\n",
                    plural(r.removed, "entry", "entries"),
                    format_byte_size(r.freed_bytes),
                    format_byte_size(r.remaining_bytes)
                )
            }
        }
        CacheCommand::Clear => {
            let mut n = store.len()? as u64;
            store.clear()?;
            if let Some(r) = remote_only {
                n += r.len()? as u64;
                r.clear()?;
            }
            if json {
                format!("{}\n", serde_json::json!({ "removed": n }))
            } else {
                format!("removed {}\n", plural(n, "entry", "entries"))
            }
        }
        CacheCommand::Zero => {
            let now = store.stats()?;
            let mut s = settings::read(&resolved.dir);
            let at = unix_seconds(SystemTime::now());
            s.zeroed
                .insert(resolved.kind.to_string(), Zeroed { at, stats: now });
            settings::write(&resolved.dir, &s)?;
            let when = utc(UNIX_EPOCH + std::time::Duration::from_secs(at));
            if json {
                format!("{}\n", serde_json::json!({ "zeroed_at": when }))
            } else {
                format!("statistics zeroed at {when}\n")
            }
        }
        CacheCommand::SetCap { .. } => unreachable!("handled before opening the store"),
        CacheCommand::Export { name, file } => {
            let tiered = resolved.open()?;
            let bytes = stored::export(tiered.as_deref().unwrap_or(&*store), &name)?
                .ok_or_else(|| Failure(format!("no entry {name} in {}", store.describe())))?;
            if file.as_os_str() == "-" {
                write_stdout(&bytes)?;
                return Ok(ExitCode::SUCCESS);
            }
            std::fs::write(&file, &bytes)
                .map_err(|e| Failure(format!("cannot write {}: {e}", file.display())))?;
            if json {
                let v = serde_json::json!({
                    "name": name,
                    "file": file.display().to_string(),
                    "bytes": bytes.len(),
                });
                format!("{v}\n")
            } else {
                // Plain export to a file prints nothing, like cp.
                String::new()
            }
        }
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn set_cap(resolved: &ResolvedStoreConfig, cap: Cap, json: bool) -> Result<ExitCode, Failure> {
    if resolved.kind == StoreKind::None {
        return Err(Failure(
            "no persistent store is configured (KCACHE_STORE=none or --store none)".into(),
        ));
    }
    let mut s = settings::read(&resolved.dir);
    s.max_bytes = match cap {
        Cap::Bytes(n) => Some(n),
        Cap::None => None,
    };
    settings::write(&resolved.dir, &s)?;
    let out = if json {
        format!("{}\n", serde_json::json!({ "max_bytes": s.max_bytes }))
    } else {
        match s.max_bytes {
            Some(n) => format!(
                "cap kept in {}: {}\n",
                resolved.dir.display(),
                format_byte_size(n)
            ),
            None => format!(
                "no cap kept in {}: the default, {}, applies\n",
                resolved.dir.display(),
                format_byte_size(kcache::store::DEFAULT_MAX_BYTES)
            ),
        }
    };
    if std::env::var_os(kcache::store::config::ENV_MAX_BYTES).is_some_and(|v| !v.is_empty()) {
        tracing::warn!(
            "KCACHE_MAX_BYTES is set and takes precedence over the cap kept in the store"
        );
    }
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The remote tier's part of `stats`: its entries and bytes, and the
/// counters of every process that used it; an unreachable server is said,
/// not a failure.
fn remote_stats(remote: &RedisStore) -> (serde_json::Value, String) {
    let totals = remote.remote_totals();
    let entries = remote.list();
    match (totals, entries) {
        (Ok(t), Ok(e)) => {
            let bytes: u64 = e.iter().map(|e| e.stored_bytes).sum();
            let mut v = serde_json::to_value(t).unwrap_or_default();
            v["entries"] = e.len().into();
            v["bytes"] = bytes.into();
            v["description"] = remote.describe().into();
            let text = format!(
                "remote     {}\n  entries  {}\n  bytes    {}\n  hits     {}\n  misses   {}\n  errors   {} ({} timeouts)\n  trips    {}\n  skipped  {}\n  refused  {} corrupt, {} unauthenticated\n  leases   {} won, {} waited, {} expired\n",
                remote.describe(),
                e.len(),
                format_byte_size(bytes),
                t.hits,
                t.misses,
                t.errors,
                t.timeouts,
                t.breaker_trips,
                t.skipped,
                t.corrupt,
                t.unauthenticated,
                t.leases_won,
                t.leases_waited,
                t.leases_expired,
            );
            (v, text)
        }
        (Err(e), _) | (_, Err(e)) => (
            serde_json::json!({ "description": remote.describe(), "error": e.to_string() }),
            format!("remote     {e}\n"),
        ),
    }
}

fn stats(
    local: Option<&dyn Store>,
    remote: Option<&RedisStore>,
    config: &StoreConfig,
    resolved: &ResolvedStoreConfig,
    json: bool,
) -> Result<String, Failure> {
    let remote = remote.map(remote_stats);
    let Some(store) = local else {
        let (v, text) = remote.unwrap_or_default();
        return Ok(if json {
            format!("{}\n", serde_json::json!({ "remote": v }))
        } else {
            text
        });
    };
    let zeroed = settings::read(&resolved.dir)
        .zeroed
        .remove(&resolved.kind.to_string());
    let raw = store.stats()?;
    let s = zeroed.map_or(raw, |z| z.since(raw));
    let lookups = s.hits + s.misses;
    let hit_rate = (lookups > 0).then(|| s.hits as f64 / lookups as f64);
    let zeroed_at = zeroed.map(|z| utc(UNIX_EPOCH + std::time::Duration::from_secs(z.at)));
    let source = cap_source(config, &resolved.dir);
    // The store made the directory absolute and real when it opened it.
    let dir = std::fs::canonicalize(&resolved.dir).unwrap_or_else(|_| resolved.dir.clone());
    if json {
        let mut v = serde_json::to_value(s).map_err(|e| Failure(e.to_string()))?;
        v["store"] = serde_json::json!({
            "kind": resolved.kind.to_string(),
            "dir": dir.display().to_string(),
            "max_bytes": resolved.max_bytes,
            "max_bytes_from": source,
            "description": store.describe(),
        });
        v["hit_rate"] = hit_rate.into();
        v["zeroed_at"] = zeroed_at.into();
        if let Some((r, _)) = remote {
            v["remote"] = r;
        }
        return Ok(format!("{v}\n"));
    }
    let rate = hit_rate.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0));
    let remote_text = remote.map(|(_, t)| t).unwrap_or_default();
    Ok(format!(
        "store      {} store at {}\ncap        {} (from {source})\nentries    {}\nbytes      {}\nhits       {}\nmisses     {}\nhit rate   {rate}\nevictions  {}\nerrors     {}\ncorrupt    {}\nzeroed     {}\n",
        resolved.kind,
        dir.display(),
        format_byte_size(resolved.max_bytes),
        s.entries,
        format_byte_size(s.bytes),
        s.hits,
        s.misses,
        s.evictions,
        s.errors,
        s.corrupt,
        zeroed_at.as_deref().unwrap_or("never"),
    ) + &remote_text)
}

/// The store's entries, then the remote tier's (marked `remote`) when it
/// is configured beside a local store.
fn ls(store: &dyn Store, remote: Option<&RedisStore>, json: bool) -> Result<String, Failure> {
    let tier = if store.is_remote() { "remote" } else { "local" };
    let mut entries: Vec<(&str, kcache::store::EntryInfo)> =
        store.list()?.into_iter().map(|e| (tier, e)).collect();
    entries.sort_by_key(|(_, e)| std::cmp::Reverse(e.last_access));
    if let Some(r) = remote {
        let mut more: Vec<_> = r.list()?.into_iter().map(|e| ("remote", e)).collect();
        more.sort_by_key(|(_, e)| std::cmp::Reverse(e.last_access));
        entries.extend(more);
    }
    if json {
        let list: Vec<serde_json::Value> = entries
            .iter()
            .map(|(tier, e)| {
                serde_json::json!({
                    "name": stored::entry_name(&e.key),
                    "size": e.size,
                    "stored_bytes": e.stored_bytes,
                    "last_access": utc(e.last_access),
                    "last_access_unix": unix_seconds(e.last_access),
                    "tier": tier,
                })
            })
            .collect();
        return Ok(format!("{}\n", serde_json::Value::Array(list)));
    }
    Ok(entries
        .iter()
        .map(|(tier, e)| {
            format!(
                "{}  {:>10}  {}{}\n",
                stored::entry_name(&e.key),
                e.stored_bytes,
                utc(e.last_access),
                if *tier == "remote" { "  remote" } else { "" }
            )
        })
        .collect())
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (days to civil date: Howard Hinnant's algorithm).
fn utc(t: SystemTime) -> String {
    let secs = unix_seconds(t) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(1_798_761_599)),
            "2026-12-31T23:59:59Z"
        );
    }

    #[test]
    fn the_compilers_dir_is_in_the_directory_the_store_resolves() {
        let t = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(t.path()).unwrap();
        for store in [StoreKind::File, StoreKind::Sqlite] {
            let flags = StoreFlags {
                store: Some(store),
                dir: Some(t.path().join("kc")),
            };
            assert_eq!(
                flags.compilers_dir(),
                Some(real.join("kc/compilers")),
                "{store:?}"
            );
        }
        let none = StoreFlags {
            store: Some(StoreKind::None),
            dir: Some(t.path().join("kc")),
        };
        assert_eq!(none.compilers_dir(), None);
    }

    /// Review 2026-12-02, store F8: a refused store directory still got
    /// probe records, written into (and read from) another user's folder.
    #[test]
    fn a_refused_store_directory_keeps_no_compilers_folder() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        // The root itself open to others, one below a directory open to
        // others, and the same reached through a symlink.
        for dir in [open.clone(), open.join("kc"), link.join("kc")] {
            let flags = StoreFlags {
                store: Some(StoreKind::File),
                dir: Some(dir.clone()),
            };
            assert_eq!(flags.compilers_dir(), None, "{}", dir.display());
        }
    }
}
