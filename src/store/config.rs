//! Which store to open, from the environment and the command line.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `KCACHE_STORE` | `file`, `sqlite` or `none` | `file` |
//! | `KCACHE_DIR` | the cache directory | `$XDG_CACHE_HOME/kcache`, else `~/.cache/kcache` |
//! | `KCACHE_MAX_BYTES` | the byte cap: a number with an optional unit | the cap kept in the store, else `2GiB` |
//! | `KCACHE_REDIS_URL` | a Redis server shared by many machines, the last tier (`KCACHE_REDIS_CLUSTER`: a Redis Cluster instead) (see [`super::redis`]) | off |
//!
//! The byte cap is taken from, in order: the caller's
//! [`StoreConfig::max_bytes`], then `KCACHE_MAX_BYTES`, then the cap kept in
//! the cache directory (`kcache cache set-cap`, see [`super::settings`]), then
//! 2 GiB.
//!
//! Units: `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024;
//! `KB`, `MB`, `GB`, `TB` powers of 1000; case is ignored. An empty variable
//! counts as unset. Flags fill a [`StoreConfig`] too, and override the
//! environment: `flags.or(StoreConfig::from_env()?)`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use super::{FileStore, FileStoreOptions, Store, StoreError, DEFAULT_MAX_BYTES};
use crate::bytes::parse_byte_size;

/// Selects the store kind.
pub const ENV_STORE: &str = "KCACHE_STORE";
/// Sets the cache directory.
pub const ENV_DIR: &str = "KCACHE_DIR";
/// Sets the byte cap.
pub const ENV_MAX_BYTES: &str = "KCACHE_MAX_BYTES";

/// The kinds of persistent store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreKind {
    /// [`FileStore`]: one file per entry.
    #[default]
    File,
    /// [`super::SqliteStore`]: one SQLite database.
    Sqlite,
    /// No persistent store.
    None,
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "file" => Ok(StoreKind::File),
            "sqlite" => Ok(StoreKind::Sqlite),
            "none" | "off" => Ok(StoreKind::None),
            _ => Err("expected file, sqlite or none".into()),
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreKind::File => "file",
            StoreKind::Sqlite => "sqlite",
            StoreKind::None => "none",
        })
    }
}

/// A store configuration; unset fields fall back to the next source and then
/// to the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreConfig {
    /// `--store` / `KCACHE_STORE`.
    pub kind: Option<StoreKind>,
    /// `--cache-dir` / `KCACHE_DIR`.
    pub dir: Option<PathBuf>,
    /// `--max-bytes` / `KCACHE_MAX_BYTES`.
    pub max_bytes: Option<u64>,
}

/// A configuration with every default applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedStoreConfig {
    /// The store kind.
    pub kind: StoreKind,
    /// The cache directory.
    pub dir: PathBuf,
    /// The byte cap.
    pub max_bytes: u64,
}

impl StoreConfig {
    /// The configuration the process environment asks for.
    pub fn from_env() -> Result<StoreConfig, StoreError> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// The configuration a variable lookup asks for (tests pass a map).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<StoreConfig, StoreError> {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let text = |name: &str, v: OsString| {
            v.into_string().map_err(|v| StoreError::Config {
                name: name.into(),
                value: v.to_string_lossy().into_owned(),
                reason: "not valid UTF-8".into(),
            })
        };
        let kind = match var(ENV_STORE) {
            Some(v) => {
                let v = text(ENV_STORE, v)?;
                Some(v.parse().map_err(|reason| StoreError::Config {
                    name: ENV_STORE.into(),
                    value: v.clone(),
                    reason,
                })?)
            }
            None => None,
        };
        let max_bytes = match var(ENV_MAX_BYTES) {
            Some(v) => {
                let v = text(ENV_MAX_BYTES, v)?;
                Some(parse_byte_size(&v).map_err(|reason| StoreError::Config {
                    name: ENV_MAX_BYTES.into(),
                    value: v.clone(),
                    reason,
                })?)
            }
            None => None,
        };
        Ok(StoreConfig {
            kind,
            dir: var(ENV_DIR).map(PathBuf::from),
            max_bytes,
        })
    }

    /// This configuration, with unset fields taken from `fallback` (flags
    /// over environment: `flags.or(env)`).
    pub fn or(self, fallback: StoreConfig) -> StoreConfig {
        StoreConfig {
            kind: self.kind.or(fallback.kind),
            dir: self.dir.or(fallback.dir),
            max_bytes: self.max_bytes.or(fallback.max_bytes),
        }
    }

    /// Applies the defaults, deriving the directory from `XDG_CACHE_HOME` or
    /// `HOME` in the process environment when unset.
    pub fn resolve(&self) -> Result<ResolvedStoreConfig, StoreError> {
        self.resolve_with(|name| std::env::var_os(name))
    }

    /// [`StoreConfig::resolve`] with a variable lookup (tests pass a map).
    pub fn resolve_with(
        &self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<ResolvedStoreConfig, StoreError> {
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => default_dir(lookup)?,
        };
        let kind = self.kind.unwrap_or_default();
        // The persistent cap is read only when nothing above it gives one,
        // and never for `none` (which has no directory to read).
        let max_bytes = match self.max_bytes {
            Some(n) => n,
            None if kind == StoreKind::None => DEFAULT_MAX_BYTES,
            None => super::settings::read(&dir)
                .max_bytes
                .unwrap_or(DEFAULT_MAX_BYTES),
        };
        Ok(ResolvedStoreConfig {
            kind,
            dir,
            max_bytes,
        })
    }

    /// Opens the configured store; `None` when the kind is `none`.
    pub fn open(&self) -> Result<Option<Arc<dyn Store>>, StoreError> {
        self.resolve()?.open()
    }
}

impl ResolvedStoreConfig {
    /// Opens the configured store: the local one, with the Redis tier behind
    /// it when `KCACHE_REDIS_URL` (or `KCACHE_REDIS_CLUSTER`) is set (the Redis tier alone for `none`);
    /// `None` when there is neither.
    pub fn open(&self) -> Result<Option<Arc<dyn Store>>, StoreError> {
        let local = self.open_local()?;
        let Some(remote) = super::RedisStore::from_env()? else {
            return Ok(local);
        };
        let remote: Arc<dyn Store> = Arc::new(remote);
        Ok(Some(match local {
            Some(local) => Arc::new(super::Tiered::new(vec![local, remote])),
            None => remote,
        }))
    }

    /// Opens the configured local store, without any remote tier; `None`
    /// when the kind is `none`.
    pub fn open_local(&self) -> Result<Option<Arc<dyn Store>>, StoreError> {
        match self.kind {
            StoreKind::None => Ok(None),
            StoreKind::File => {
                let opts = FileStoreOptions {
                    max_bytes: self.max_bytes,
                    ..FileStoreOptions::default()
                };
                Ok(Some(Arc::new(FileStore::open_with(&self.dir, opts)?)))
            }
            StoreKind::Sqlite => self.open_sqlite(),
        }
    }

    #[cfg(feature = "sqlite")]
    fn open_sqlite(&self) -> Result<Option<Arc<dyn Store>>, StoreError> {
        let opts = super::SqliteOptions {
            max_bytes: self.max_bytes,
            ..super::SqliteOptions::default()
        };
        Ok(Some(Arc::new(super::SqliteStore::open_with(
            &self.dir, opts,
        )?)))
    }

    #[cfg(not(feature = "sqlite"))]
    fn open_sqlite(&self) -> Result<Option<Arc<dyn Store>>, StoreError> {
        Err(StoreError::SqliteUnavailable)
    }
}

/// Opens the store the process environment asks for; `None` for
/// `KCACHE_STORE=none`.
pub fn open_from_env() -> Result<Option<Arc<dyn Store>>, StoreError> {
    StoreConfig::from_env()?.open()
}

/// Where the cc backend keeps its compilers' probe records for the store
/// directory `dir`: its `compilers/` folder, once `dir` passes the stores'
/// own check (created private if missing; refused when someone else
/// controls it), under the real path that check resolved. A refused
/// directory keeps no records: another user who controls it could plant a
/// FIFO there or have a sweep reach through it (review 2026-12-02, store F8).
pub fn compilers_dir(dir: &std::path::Path) -> Result<PathBuf, StoreError> {
    Ok(super::root::prepare_root(dir)?.join("compilers"))
}

/// The default cache directory: `$XDG_CACHE_HOME/kcache` when that is an
/// absolute path (the XDG spec ignores relative ones), else
/// `$HOME/.cache/kcache`.
pub fn default_dir(lookup: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, StoreError> {
    let var = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(xdg) = var("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Ok(xdg.join("kcache"));
    }
    match var("HOME") {
        Some(home) => Ok(home.join(".cache").join("kcache")),
        None => Err(StoreError::NoCacheDir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn environment_is_read() {
        let c = StoreConfig::from_lookup(env(&[
            ("KCACHE_STORE", "sqlite"),
            ("KCACHE_DIR", "/x/y"),
            ("KCACHE_MAX_BYTES", "1M"),
        ]))
        .unwrap();
        assert_eq!(
            c,
            StoreConfig {
                kind: Some(StoreKind::Sqlite),
                dir: Some("/x/y".into()),
                max_bytes: Some(1 << 20),
            }
        );
        let empty = StoreConfig::from_lookup(env(&[("KCACHE_STORE", "")])).unwrap();
        assert_eq!(empty, StoreConfig::default());
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = StoreConfig::from_lookup(env(&[("KCACHE_STORE", "redis")])).unwrap_err();
        assert!(e.to_string().contains("KCACHE_STORE=\"redis\""), "{e}");
        let e = StoreConfig::from_lookup(env(&[("KCACHE_MAX_BYTES", "lots")])).unwrap_err();
        assert!(e.to_string().contains("KCACHE_MAX_BYTES"), "{e}");
    }

    #[test]
    fn flags_override_environment() {
        let flags = StoreConfig {
            kind: Some(StoreKind::None),
            dir: None,
            max_bytes: Some(5),
        };
        let envc = StoreConfig {
            kind: Some(StoreKind::Sqlite),
            dir: Some("/e".into()),
            max_bytes: Some(9),
        };
        assert_eq!(
            flags.or(envc),
            StoreConfig {
                kind: Some(StoreKind::None),
                dir: Some("/e".into()),
                max_bytes: Some(5),
            }
        );
    }

    #[test]
    fn default_dir_prefers_kcache_dir_then_xdg_then_home() {
        let c = StoreConfig::default();
        let r = c
            .resolve_with(env(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/h")]))
            .unwrap();
        assert_eq!(r.dir, PathBuf::from("/xdg/kcache"));
        assert_eq!(r.kind, StoreKind::File);
        assert_eq!(r.max_bytes, DEFAULT_MAX_BYTES);
        let r = c
            .resolve_with(env(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")]))
            .unwrap();
        assert_eq!(r.dir, PathBuf::from("/h/.cache/kcache"));
        assert!(matches!(
            c.resolve_with(env(&[])),
            Err(StoreError::NoCacheDir)
        ));
        let c = StoreConfig {
            dir: Some("/k".into()),
            ..StoreConfig::default()
        };
        assert_eq!(c.resolve_with(env(&[])).unwrap().dir, PathBuf::from("/k"));
    }

    #[test]
    fn opens_each_kind() {
        let t = tempfile::tempdir().unwrap();
        let open = |kind| {
            ResolvedStoreConfig {
                kind,
                dir: t.path().join("c"),
                max_bytes: 1 << 20,
            }
            .open()
        };
        assert!(open(StoreKind::None).unwrap().is_none());
        let f = open(StoreKind::File).unwrap().unwrap();
        f.put(b"k", b"v").unwrap();
        assert!(f.describe().starts_with("file store"), "{}", f.describe());
        let s = open(StoreKind::Sqlite);
        if cfg!(feature = "sqlite") {
            let s = s.unwrap().unwrap();
            s.put(b"k", b"v").unwrap();
            assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        } else {
            assert!(matches!(s, Err(StoreError::SqliteUnavailable)));
        }
    }
}
