//! `kcache cache`: look after the persistent program store.

use super::{write_stdout, Failure};
use clap::{Args, Subcommand};
use kcache::resolve::stored;
use kcache::store::config::{StoreConfig, StoreKind};
use kcache::store::{Store, StoreErrorKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which store: flags override `KCACHE_STORE`, `KCACHE_DIR`, `KCACHE_MAX_BYTES`.
#[derive(Args, Debug, Default, Clone)]
pub struct StoreFlags {
    /// The store kind: file, sqlite or none [env: KCACHE_STORE; default: file].
    #[arg(long, value_name = "KIND")]
    pub store: Option<StoreKind>,
    /// The cache directory [env: KCACHE_DIR; default: $XDG_CACHE_HOME/kcache or ~/.cache/kcache].
    #[arg(long, value_name = "DIR")]
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

    /// The store, for `kcache cache`: failing to open it is the error.
    fn open_strict(&self) -> Result<Option<Arc<dyn Store>>, Failure> {
        Ok(self.config(None)?.open()?)
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
    #[command(flatten)]
    store: StoreFlags,
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// Entries, bytes, hits, misses, evictions, errors.
    Stats {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One line per entry: name, size, last access.
    Ls {
        /// Print a JSON list of {"name", "size", "last_access"}.
        #[arg(long)]
        json: bool,
    },
    /// Check every entry; remove and report corrupt ones (exit 1 if any).
    Verify {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Evict least recently used entries down to N bytes.
    Prune {
        /// What to keep at most (a number, or with K, M, G: 512M, 2G).
        #[arg(long, value_name = "N", value_parser = parse_size)]
        max_bytes: u64,
    },
    /// Remove every entry.
    Clear,
    /// Write an entry's raw compiled bytes (a kernel's: its program's) to FILE (`-`: stdout).
    Export {
        /// The entry, as `kcache cache ls` names it.
        name: String,
        /// Where to write the bytes.
        file: PathBuf,
    },
}

fn parse_size(s: &str) -> Result<u64, String> {
    kcache::bytes::parse_byte_size(s)
}

pub fn cache(args: CacheArgs) -> Result<ExitCode, Failure> {
    let store = args.store.open_strict()?.ok_or_else(|| {
        Failure("no persistent store is configured (KCACHE_STORE=none or --store none)".into())
    })?;
    match args.command {
        CacheCommand::Stats { json } => {
            let s = store.stats()?;
            if json {
                let mut v = serde_json::to_value(s).map_err(|e| Failure(e.to_string()))?;
                v["store"] = store.describe().into();
                write_stdout(format!("{v}\n").as_bytes())?;
            } else {
                let text = format!(
                    "store      {}\nentries    {}\nbytes      {}\nhits       {}\nmisses     {}\nevictions  {}\nerrors     {}\ncorrupt    {}\n",
                    store.describe(),
                    s.entries,
                    s.bytes,
                    s.hits,
                    s.misses,
                    s.evictions,
                    s.errors,
                    s.corrupt
                );
                write_stdout(text.as_bytes())?;
            }
        }
        CacheCommand::Ls { json } => {
            let mut entries = store.list()?;
            entries.sort_by_key(|e| std::cmp::Reverse(e.last_access));
            let mut out = String::new();
            if json {
                let list: Vec<serde_json::Value> = entries
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "name": stored::entry_name(&e.key),
                            "size": e.size,
                            "last_access": unix_seconds(e.last_access),
                        })
                    })
                    .collect();
                out = format!("{}\n", serde_json::Value::Array(list));
            } else {
                for e in &entries {
                    out.push_str(&format!(
                        "{}  {:>10}  {}\n",
                        stored::entry_name(&e.key),
                        e.size,
                        utc(e.last_access)
                    ));
                }
            }
            write_stdout(out.as_bytes())?;
        }
        CacheCommand::Verify { json } => {
            let report = store.verify()?;
            if json {
                let v = serde_json::json!({
                    "checked": report.checked,
                    "corrupt": report.corrupt.iter().map(|c| serde_json::json!({
                        "location": c.location,
                        "name": c.key.as_deref().map(stored::entry_name),
                        "reason": c.reason,
                    })).collect::<Vec<_>>(),
                });
                write_stdout(format!("{v}\n").as_bytes())?;
            } else {
                let mut out = format!(
                    "checked {} entries, {} corrupt (removed)\n",
                    report.checked,
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
                write_stdout(out.as_bytes())?;
            }
            if !report.corrupt.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
        CacheCommand::Prune { max_bytes } => {
            let r = store.prune(max_bytes)?;
            write_stdout(
                format!(
                    "removed {} entries, freed {} bytes, {} bytes left\n",
                    r.removed, r.freed_bytes, r.remaining_bytes
                )
                .as_bytes(),
            )?;
        }
        CacheCommand::Clear => {
            let n = store.len()?;
            store.clear()?;
            write_stdout(format!("removed {n} entries\n").as_bytes())?;
        }
        CacheCommand::Export { name, file } => {
            let bytes = stored::export(&*store, &name)?
                .ok_or_else(|| Failure(format!("no entry {name} in {}", store.describe())))?;
            if file.as_os_str() == "-" {
                write_stdout(&bytes)?;
            } else {
                std::fs::write(&file, &bytes)
                    .map_err(|e| Failure(format!("cannot write {}: {e}", file.display())))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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
}
