//! What a cache directory keeps about itself beside its entries: a
//! persistent byte cap (`kcache cache set-cap`) and the counters as they were
//! when the statistics were last zeroed (`kcache cache zero`), for each kind
//! of store (a file store and an SQLite store may share a directory, each
//! with its own counters).
//!
//! The file is `<dir>/settings`, a few `name value` lines, shared by every
//! store kind and layout version. It is only ever a preference: one that is
//! missing, unreadable or garbled reads as no settings (with a warning), so
//! it can never stop a compile.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::root::prepare_root;
use super::{StoreError, StoreStats};

/// The settings file's name in the cache directory.
pub const SETTINGS_FILE: &str = "settings";

/// More than any settings file kcache writes.
const MAX_LEN: u64 = 4096;

/// A cache directory's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The byte cap kept in the store: used when neither a flag nor
    /// `KCACHE_MAX_BYTES` gives one.
    pub max_bytes: Option<u64>,
    /// Per store kind (`file`, `sqlite`): the counters when its statistics
    /// were last zeroed, and when; the statistics shown are the counts since.
    pub zeroed: BTreeMap<String, Zeroed>,
}

/// The counters at the moment `kcache cache zero` ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Zeroed {
    /// When, in seconds since the Unix epoch.
    pub at: u64,
    /// The counters then (entries and bytes are not counters and stay).
    pub stats: StoreStats,
}

impl Zeroed {
    /// `now`'s counters since this zeroing. A store whose counters went back
    /// (its record was lost or cleared) counts from nothing again.
    pub fn since(&self, now: StoreStats) -> StoreStats {
        let b = &self.stats;
        let after = |n: u64, then: u64| n.checked_sub(then).unwrap_or(n);
        let went_back = now.hits < b.hits
            || now.misses < b.misses
            || now.evictions < b.evictions
            || now.errors < b.errors
            || now.corrupt < b.corrupt;
        if went_back {
            return now;
        }
        StoreStats {
            hits: after(now.hits, b.hits),
            misses: after(now.misses, b.misses),
            evictions: after(now.evictions, b.evictions),
            errors: after(now.errors, b.errors),
            corrupt: after(now.corrupt, b.corrupt),
            ..now
        }
    }
}

/// The settings file of cache directory `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(SETTINGS_FILE)
}

/// Reads `dir`'s settings; none when the file is absent or cannot be read,
/// and none with a warning when it cannot be parsed.
pub fn read(dir: &Path) -> Settings {
    let p = path(dir);
    match read_text(&p) {
        Ok(None) => Settings::default(),
        Ok(Some(text)) => parse(&text).unwrap_or_else(|why| {
            tracing::warn!(path = %p.display(), "ignoring the store's settings: {why}");
            Settings::default()
        }),
        // Whatever keeps the file from being read keeps the store from
        // opening too, and the store says so once.
        Err(e) => {
            tracing::debug!(path = %p.display(), error = %e, "cannot read the store's settings; ignoring them");
            Settings::default()
        }
    }
}

/// Writes `settings` to `dir` (created private if missing, and refused when
/// unsafe, like the stores' own root), replacing the file atomically.
pub fn write(dir: &Path, settings: &Settings) -> Result<(), StoreError> {
    let root = prepare_root(dir)?;
    let target = path(&root);
    let tmp = root.join(format!(".{SETTINGS_FILE}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| StoreError::io("create", &tmp, e))?;
    let written = f
        .write_all(render(settings).as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| StoreError::io("write", &tmp, e))
        .and_then(|()| {
            std::fs::rename(&tmp, &target).map_err(|e| StoreError::io("rename", &target, e))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn read_text(p: &Path) -> std::io::Result<Option<String>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_LEN).read_to_string(&mut text)?;
    Ok(Some(text))
}

fn render(s: &Settings) -> String {
    let mut out =
        String::from("# kcache store settings: `kcache cache set-cap`, `kcache cache zero`\n");
    if let Some(n) = s.max_bytes {
        out.push_str(&format!("max_bytes {n}\n"));
    }
    for (kind, z) in &s.zeroed {
        let c = &z.stats;
        for (field, n) in [
            ("at", z.at),
            ("hits", c.hits),
            ("misses", c.misses),
            ("evictions", c.evictions),
            ("errors", c.errors),
            ("corrupt", c.corrupt),
        ] {
            out.push_str(&format!("zeroed.{kind}.{field} {n}\n"));
        }
    }
    out
}

fn parse(text: &str) -> Result<Settings, String> {
    let mut s = Settings::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = line
            .split_once(' ')
            .ok_or_else(|| format!("`{line}` is not `name value`"))?;
        let n: u64 = value
            .trim()
            .parse()
            .map_err(|_| format!("`{name}`: `{value}` is not a number"))?;
        if name == "max_bytes" {
            s.max_bytes = Some(n);
            continue;
        }
        // A newer kcache's setting is not ours to judge: it is skipped.
        let Some((kind, field)) = name
            .strip_prefix("zeroed.")
            .and_then(|rest| rest.split_once('.'))
        else {
            continue;
        };
        let z = s.zeroed.entry(kind.to_string()).or_default();
        let slot = match field {
            "at" => &mut z.at,
            "hits" => &mut z.stats.hits,
            "misses" => &mut z.stats.misses,
            "evictions" => &mut z.stats.evictions,
            "errors" => &mut z.stats.errors,
            "corrupt" => &mut z.stats.corrupt,
            _ => continue,
        };
        *slot = n;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_through_the_file() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("c");
        assert_eq!(read(&dir), Settings::default());
        let zeroed = Zeroed {
            at: 1_700_000_000,
            stats: StoreStats {
                hits: 3,
                misses: 4,
                ..StoreStats::default()
            },
        };
        let s = Settings {
            max_bytes: Some(10 << 30),
            zeroed: [("sqlite".to_string(), zeroed)].into(),
        };
        write(&dir, &s).unwrap();
        assert_eq!(read(&dir), s);
    }

    #[test]
    fn garbled_settings_read_as_none() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(path(t.path()), "max_bytes lots\n").unwrap();
        assert_eq!(read(t.path()), Settings::default());
    }

    #[test]
    fn counts_since_zeroing_restart_when_the_counters_went_back() {
        let z = Zeroed {
            at: 0,
            stats: StoreStats {
                hits: 5,
                misses: 2,
                ..StoreStats::default()
            },
        };
        let now = StoreStats {
            hits: 7,
            misses: 2,
            entries: 9,
            ..StoreStats::default()
        };
        let since = z.since(now);
        assert_eq!((since.hits, since.misses, since.entries), (2, 0, 9));
        let lost = StoreStats {
            hits: 1,
            ..StoreStats::default()
        };
        assert_eq!(z.since(lost), lost);
    }
}
