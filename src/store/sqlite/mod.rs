//! The SQLite store: one database file in WAL mode.
//!
//! Layout: `<root>/v1/store.sqlite3` (0600; SQLite gives its `-wal` and `-shm`
//! files the same mode), with a table `entries(key, value, size, checksum,
//! last_access)` and a table `meta(name, value)` holding the byte total (kept
//! exact by triggers) and the counters of every process. `PRAGMA user_version`
//! is the schema version. Compile leases are lock files in `<root>/v1/leases/`,
//! as for the file store (a lock held with `flock` dies with its holder, which
//! a row could not promise).
//!
//! Each `value` is framed with its key and `checksum` (blake3) covers the
//! frame:
//!
//! ```text
//! offset  size  field
//!      0     8  magic "kcsqlv2\n"
//!      8     4  key length, u32 little endian
//!     12     8  payload length, u64 little endian
//!     20     k  the key
//!   20+k     n  the payload
//! ```
//!
//! A read checks both, so a row found for another key (a damaged
//! index, swapped rows) is a miss, counted as corrupt, never served. The
//! database and its side files are opened without following a symlink, and
//! anything but a regular file there refuses the store (SQLite would block
//! on a FIFO); a file that is not a database is replaced by an empty one.
//! `verify` runs `PRAGMA integrity_check`, rebuilds the indexes of a damaged
//! database, and recreates it empty when that does not mend it.
//!
//! The cap counts keys and values; the database file is also kept under it
//! (or under 128 KiB, the least a database needs with room for entries, if
//! the cap is smaller): evictions go on while its used pages exceed it, and
//! the log is checkpointed every quarter of it.
//!
//! Concurrency: one connection per store behind a mutex, so threads are
//! serialised; processes are serialised by SQLite's locks (WAL: readers never
//! block, writers wait up to the busy timeout). Every write, including its
//! evictions, is one `BEGIN IMMEDIATE` transaction, committed with
//! `synchronous=FULL`: a concurrent rewrite either commits before the
//! eviction (and is then the newest entry, not the one evicted) or after it,
//! and a process killed mid-write leaves nothing of its transaction.
//!
//! Access times are buffered: a hit records its key in memory, and the
//! buffer is written in one transaction with the next write, every 64 hits,
//! and on `flush` and drop. Another process's eviction may therefore not see
//! this process's latest hits (the LRU across processes is best effort).

pub(crate) mod frame;
mod open;
mod verify;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{ffi, params, Connection, OptionalExtension, TransactionBehavior};

use super::file::LAYOUT_DIR;
use super::lease::{LeaseGrant, LockDir, LEASES_DIR};
use super::root::prepare_root;
use super::{
    counted::CountedStore, key_to_hex, Clock, CorruptEntry, CounterValues, Counters, EntryInfo,
    PruneReport, StoreError, StoreErrorKind, StoreStats, SystemClock, VerifyReport,
    DEFAULT_MAX_BYTES,
};

/// The schema version in `PRAGMA user_version` (2: values framed with their
/// key).
pub const SCHEMA_VERSION: i64 = 2;

/// The least disk budget: an empty database takes a few pages.
const MIN_DISK_BYTES: u64 = 128 << 10;

/// What the database file may occupy under a cap of `max_bytes`.
fn disk_budget(max_bytes: u64) -> u64 {
    max_bytes.max(MIN_DISK_BYTES)
}

/// The database's file name under `<root>/v1/`.
pub const DB_FILE: &str = "store.sqlite3";

/// Hits buffered before their access times are written.
const TOUCH_BATCH: usize = 64;

/// A point inside a write transaction, for [`SqliteOptions::hook`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlitePoint {
    /// A put (and its evictions) is written but not committed.
    PutBeforeCommit,
    /// A remove is written but not committed.
    RemoveBeforeCommit,
    /// A prune or clear is written but not committed.
    PruneBeforeCommit,
    /// Buffered access times and counters are written but not committed.
    FlushBeforeCommit,
}

/// A callback run at a [`SqlitePoint`] while the write lock is held.
pub type SqliteHook = Arc<dyn Fn(SqlitePoint) + Send + Sync>;

/// How the SQLite store is opened.
#[derive(Clone)]
pub struct SqliteOptions {
    /// The byte cap, counting keys and values. Default 2 GiB.
    pub max_bytes: u64,
    /// How long a write waits for another process's lock. Default 10 s.
    pub busy_timeout: Duration,
    /// The time source for access times.
    pub clock: Arc<dyn Clock>,
    /// Extra `PRAGMA name = value` statements run after the store's own
    /// (e.g. `("synchronous", "NORMAL")` to trade durability for speed).
    pub pragmas: Vec<(String, String)>,
    /// Runs at fixed points inside write transactions: a test seam that lets
    /// a test hold a transaction open (or kill the process) at a known point.
    pub hook: Option<SqliteHook>,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            busy_timeout: Duration::from_secs(10),
            clock: Arc::new(SystemClock),
            pragmas: Vec::new(),
            hook: None,
        }
    }
}

impl fmt::Debug for SqliteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteOptions")
            .field("max_bytes", &self.max_bytes)
            .field("busy_timeout", &self.busy_timeout)
            .field("clock", &self.clock)
            .field("pragmas", &self.pragmas)
            .field("hook", &self.hook.as_ref().map(|_| "..."))
            .finish()
    }
}

/// A store in one SQLite database; see the [module docs](self).
pub struct SqliteStore {
    path: PathBuf,
    opts: SqliteOptions,
    inner: Mutex<Inner>,
    counters: Counters,
    /// What opening repaired, for the next `verify` to report.
    repaired: Mutex<Vec<CorruptEntry>>,
    /// Whether a row found for another key was warned about.
    foreign_warned: AtomicBool,
    /// One lock file per key being compiled, beside the database.
    leases: LockDir,
}

struct Inner {
    conn: Connection,
    /// Access times of hits not yet written.
    touched: HashMap<Vec<u8>, i64>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// The broad cause of an SQLite error.
pub(crate) fn error_kind(e: &rusqlite::Error) -> StoreErrorKind {
    match e.sqlite_error_code() {
        Some(ffi::ErrorCode::DiskFull) => StoreErrorKind::NoSpace,
        Some(ffi::ErrorCode::ReadOnly) => StoreErrorKind::ReadOnly,
        Some(ffi::ErrorCode::PermissionDenied) | Some(ffi::ErrorCode::CannotOpen) => {
            StoreErrorKind::PermissionDenied
        }
        Some(ffi::ErrorCode::DatabaseBusy) | Some(ffi::ErrorCode::DatabaseLocked) => {
            StoreErrorKind::Busy
        }
        _ => StoreErrorKind::Other,
    }
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos().min(i64::MAX as u128) as i64)
        .unwrap_or(0)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries (
    key BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL,
    size INTEGER NOT NULL,
    checksum BLOB NOT NULL,
    last_access INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_access ON entries(last_access);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(name, value)
    SELECT 'bytes', COALESCE(SUM(size + length(key)), 0) FROM entries;
INSERT OR IGNORE INTO meta(name, value) VALUES
    ('hits', 0), ('misses', 0), ('evictions', 0), ('errors', 0), ('corrupt', 0);
CREATE TRIGGER IF NOT EXISTS entries_insert AFTER INSERT ON entries BEGIN
    UPDATE meta SET value = value + NEW.size + length(NEW.key) WHERE name = 'bytes';
END;
CREATE TRIGGER IF NOT EXISTS entries_delete AFTER DELETE ON entries BEGIN
    UPDATE meta SET value = value - OLD.size - length(OLD.key) WHERE name = 'bytes';
END;
CREATE TRIGGER IF NOT EXISTS entries_update AFTER UPDATE OF key, size ON entries BEGIN
    UPDATE meta SET value = value - OLD.size - length(OLD.key) + NEW.size + length(NEW.key)
        WHERE name = 'bytes';
END;
";

impl SqliteStore {
    /// Opens (creating if needed) the store under `root` with default
    /// options.
    pub fn open(root: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_with(root, SqliteOptions::default())
    }

    /// Opens (creating if needed) the store `<root>/v1/store.sqlite3`. The
    /// root is checked as for the file store.
    pub fn open_with(
        root: impl AsRef<Path>,
        opts: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let root = prepare_root(root.as_ref())?;
        let dir = root.join(LAYOUT_DIR);
        open::ensure_dir(&dir)?;
        let path = dir.join(DB_FILE);
        open::check_files(&path)?;
        open::precreate(&path)?;
        let mut repaired = Vec::new();
        let conn = match open::connect(&path, &opts) {
            Err(e) if open::is_damage(&e) => {
                tracing::warn!(db = %path.display(), error = %e,
                    "kcache store: the database is damaged; recreating it empty");
                open::recreate(&path)?;
                repaired.push(CorruptEntry {
                    location: path.display().to_string(),
                    key: None,
                    reason: format!("damaged database ({e}): recreated empty when opened"),
                });
                open::connect(&path, &opts)?
            }
            r => r?,
        };
        Ok(SqliteStore {
            path,
            opts,
            inner: Mutex::new(Inner {
                conn,
                touched: HashMap::new(),
            }),
            counters: Counters::default(),
            repaired: Mutex::new(repaired),
            foreign_warned: AtomicBool::new(false),
            leases: LockDir::new(dir.join(LEASES_DIR)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The byte cap.
    pub fn max_bytes(&self) -> u64 {
        self.opts.max_bytes
    }

    /// The bytes an entry counts against the cap.
    pub fn entry_cost(key_len: usize, value_len: usize) -> u64 {
        key_len as u64 + value_len as u64
    }

    /// The longest framed value a read loads.
    fn max_frame_len(&self) -> i64 {
        let cap = self.opts.max_bytes.min(crate::store::MAX_ENTRY_BYTES);
        // The frame adds its head to the key and value the cap counts.
        cap.saturating_add(64).min(i64::MAX as u64) as i64
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // SQLite rolls back any transaction a panic abandoned (the
        // Transaction guard's drop), so the connection is reusable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            op,
            source,
        }
    }

    fn hook(&self, point: SqlitePoint) {
        if let Some(h) = &self.opts.hook {
            h(point);
        }
    }

    /// Runs `body` in one IMMEDIATE transaction that also writes the
    /// buffered access times and this process's counters.
    fn write_tx<T>(
        &self,
        inner: &mut Inner,
        point: SqlitePoint,
        body: impl FnOnce(&rusqlite::Transaction<'_>, &mut CounterValues) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut counts = self.counters.take();
        let touched = std::mem::take(&mut inner.touched);
        let r = (|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            write_touches(&tx, &touched)?;
            let out = body(&tx, &mut counts)?;
            add_counters(&tx, &counts)?;
            self.hook(point);
            tx.commit()?;
            Ok(out)
        })();
        if r.is_err() {
            // Not written: keep the counts for the next try. The access
            // times are dropped; they are only an LRU hint.
            self.counters.restore(counts);
        }
        r.map_err(self.err("write"))
    }

    fn flush_inner(&self, inner: &mut Inner) -> Result<(), StoreError> {
        let counts = self.counters.snapshot();
        if inner.touched.is_empty() && counts.is_zero() {
            return Ok(());
        }
        self.write_tx(inner, SqlitePoint::FlushBeforeCommit, |_, _| Ok(()))
    }

    /// Deletes a corrupt row, unless a writer replaced it since it was read.
    fn drop_corrupt(&self, key: &[u8], rowid: i64, checksum: &[u8], reason: &str) {
        Counters::bump(&self.counters.corrupt);
        tracing::warn!(key = %key_to_hex(key), reason, db = %self.path.display(),
            "kcache store: removing corrupt entry");
        let mut inner = self.lock();
        let r = self.write_tx(&mut inner, SqlitePoint::RemoveBeforeCommit, |tx, _| {
            tx.execute(
                "DELETE FROM entries WHERE rowid = ?1 AND key = ?2 AND checksum = ?3",
                params![rowid, key, checksum],
            )
        });
        if let Err(e) = r {
            Counters::bump(&self.counters.errors);
            tracing::warn!(error = %e, "kcache store: could not remove corrupt entry");
        }
    }

    /// Returns freed pages to the filesystem.
    fn vacuum(&self, inner: &Inner) {
        vacuum(&inner.conn);
    }
}

impl CountedStore for SqliteStore {
    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn describe_store(&self) -> String {
        format!(
            "SQLite store at {} (cap {})",
            self.path.display(),
            crate::bytes::format_byte_size(self.opts.max_bytes)
        )
    }

    fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let now = nanos(self.opts.clock.now());
        let mut inner = self.lock();
        let row = inner
            .conn
            // A value larger than any entry kept is not read at all.
            .prepare_cached(
                "SELECT rowid, key, CASE WHEN length(value) <= ?2 THEN value END, checksum
                 FROM entries WHERE key = ?1",
            )
            .and_then(|mut s| {
                s.query_row(params![key, self.max_frame_len()], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Vec<u8>>(1)?,
                        r.get::<_, Option<Vec<u8>>>(2)?,
                        r.get::<_, Vec<u8>>(3)?,
                    ))
                })
                .optional()
            })
            .map_err(self.err("read"))?;
        let Some((rowid, row_key, value, sum)) = row else {
            self.counters.miss();
            return Ok(None);
        };
        if row_key != key {
            // The index led to another key's row: the database is damaged,
            // and deleting through it could hit anything. `verify` mends it.
            drop(inner);
            self.counters.miss();
            Counters::bump(&self.counters.corrupt);
            if !self.foreign_warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(db = %self.path.display(), key = %key_to_hex(key),
                    "kcache store: the database index is damaged (a lookup found another key's row); run `kcache cache verify`");
            }
            return Ok(None);
        }
        let Some(value) = value else {
            drop(inner);
            self.counters.miss();
            let reason = format!(
                "a value larger than any entry this store keeps ({} bytes); not read",
                self.max_frame_len()
            );
            self.drop_corrupt(key, rowid, &sum, &reason);
            return Ok(None);
        };
        match frame::decode(key, &value, &sum) {
            Ok(payload) => {
                let payload = payload.to_vec();
                inner.touched.insert(key.to_vec(), now);
                if inner.touched.len() >= TOUCH_BATCH {
                    if let Err(e) = self.flush_inner(&mut inner) {
                        tracing::debug!(error = %e, "kcache store: could not write access times");
                    }
                }
                self.counters.hit();
                Ok(Some(payload))
            }
            Err(damage) => {
                drop(inner);
                self.counters.miss();
                self.drop_corrupt(key, rowid, &sum, &damage.to_string());
                Ok(None)
            }
        }
    }

    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let cost = Self::entry_cost(key.len(), value.len());
        let max = self.opts.max_bytes;
        let framed = frame::encode(key, value);
        let sum = frame::checksum(&framed);
        let disk = disk_budget(max);
        let now = nanos(self.opts.clock.now());
        let mut inner = self.lock();
        self.write_tx(&mut inner, SqlitePoint::PutBeforeCommit, |tx, counts| {
            if cost > max || framed.len() as u64 > crate::store::MAX_ENTRY_BYTES {
                tx.execute("DELETE FROM entries WHERE key = ?1", [key])?;
                return Ok(());
            }
            tx.prepare_cached(
                "INSERT INTO entries(key, value, size, checksum, last_access)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size,
                     checksum = excluded.checksum, last_access = excluded.last_access",
            )?
            .execute(params![key, framed, value.len() as i64, &sum[..], now])?;
            let evicted = evict(tx, max, disk, Some(key))?;
            counts.evictions += evicted;
            if evicted > 0 {
                vacuum(tx);
            }
            Ok(())
        })
    }

    fn raw_remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        inner.touched.remove(key);
        self.write_tx(&mut inner, SqlitePoint::RemoveBeforeCommit, |tx, _| {
            Ok(tx.execute("DELETE FROM entries WHERE key = ?1", [key])? > 0)
        })
    }

    fn raw_clear(&self) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.touched.clear();
        self.write_tx(&mut inner, SqlitePoint::PruneBeforeCommit, |tx, _| {
            tx.execute("DELETE FROM entries", []).map(drop)
        })?;
        self.vacuum(&inner);
        Ok(())
    }

    fn raw_prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        let mut inner = self.lock();
        let report = self.write_tx(&mut inner, SqlitePoint::PruneBeforeCommit, |tx, counts| {
            let before = total_bytes(tx)?;
            let removed = evict(tx, max_bytes, disk_budget(max_bytes), None)?;
            counts.evictions += removed;
            let after = total_bytes(tx)?;
            Ok(PruneReport {
                removed,
                freed_bytes: before - after,
                remaining_bytes: after,
            })
        })?;
        if report.removed > 0 {
            self.vacuum(&inner);
        }
        Ok(report)
    }

    fn raw_len(&self) -> Result<usize, StoreError> {
        let inner = self.lock();
        inner
            .conn
            .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(self.err("count"))
    }

    fn raw_stats(&self) -> Result<StoreStats, StoreError> {
        let mut inner = self.lock();
        if let Err(e) = self.flush_inner(&mut inner) {
            tracing::debug!(error = %e, "kcache store: could not flush counters");
        }
        let read = || -> rusqlite::Result<StoreStats> {
            let entries: i64 = inner
                .conn
                .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))?;
            let mut s = StoreStats {
                entries: entries as u64,
                ..StoreStats::default()
            };
            let mut stmt = inner.conn.prepare("SELECT name, value FROM meta")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let name: String = row.get(0)?;
                let v = row.get::<_, i64>(1)?.max(0) as u64;
                match name.as_str() {
                    "bytes" => s.bytes = v,
                    "hits" => s.hits = v,
                    "misses" => s.misses = v,
                    "evictions" => s.evictions = v,
                    "errors" => s.errors = v,
                    "corrupt" => s.corrupt = v,
                    _ => {}
                }
            }
            Ok(s)
        };
        let mut s = read().map_err(self.err("read stats"))?;
        // Counts the flush could not write (a read-only database).
        self.counters.snapshot().add_to(&mut s);
        Ok(s)
    }

    fn raw_size_bytes(&self) -> Result<u64, StoreError> {
        let inner = self.lock();
        total_bytes(&inner.conn).map_err(self.err("read size"))
    }

    fn raw_list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        let mut inner = self.lock();
        if let Err(e) = self.flush_inner(&mut inner) {
            tracing::debug!(error = %e, "kcache store: could not write access times");
        }
        let read = || -> rusqlite::Result<Vec<EntryInfo>> {
            let mut stmt = inner.conn.prepare(
                "SELECT key, size, last_access FROM entries ORDER BY last_access DESC, key",
            )?;
            let rows = stmt.query_map([], |r| {
                let key: Vec<u8> = r.get(0)?;
                let size = r.get::<_, i64>(1)?.max(0) as u64;
                let at = r.get::<_, i64>(2)?.max(0) as u64;
                Ok(EntryInfo {
                    stored_bytes: size + key.len() as u64,
                    key,
                    size,
                    last_access: UNIX_EPOCH + Duration::from_nanos(at),
                })
            })?;
            rows.collect()
        };
        read().map_err(self.err("list"))
    }

    fn raw_verify(&self) -> Result<VerifyReport, StoreError> {
        self.verify_inner()
    }

    fn raw_lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        self.leases.lease(key, wait)
    }

    fn raw_flush(&self) -> Result<(), StoreError> {
        self.flush_inner(&mut self.lock())
    }
}

fn total_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT value FROM meta WHERE name = 'bytes'", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|v| v.max(0) as u64)
}

/// The bytes of the database's pages in use (not on its free list).
fn used_disk_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    // Runs on every write: statements from the connection's cache.
    let pragma = |sql: &str| -> rusqlite::Result<i64> {
        conn.prepare_cached(sql)?.query_row([], |r| r.get(0))
    };
    let used = pragma("PRAGMA page_count")? - pragma("PRAGMA freelist_count")?;
    Ok((used.max(0) as u64).saturating_mul(pragma("PRAGMA page_size")?.max(0) as u64))
}

/// Returns freed pages to the filesystem (inside a transaction: at its
/// commit).
fn vacuum(conn: &Connection) {
    // The pragma frees one page per step: run it to the end.
    let r = (|| -> rusqlite::Result<()> {
        let mut stmt = conn.prepare("PRAGMA incremental_vacuum")?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    })();
    if let Err(e) = r {
        tracing::debug!(error = %e, "kcache store: incremental vacuum failed");
    }
}

/// Deletes least recently used entries (never `keep`) until the byte total
/// is at most `max` and the pages in use fit in `disk`; how many.
fn evict(tx: &Connection, max: u64, disk: u64, keep: Option<&[u8]>) -> rusqlite::Result<u64> {
    let mut removed = 0;
    while total_bytes(tx)? > max || used_disk_bytes(tx)? > disk {
        let victim: Option<Vec<u8>> = tx
            .prepare_cached(
                "SELECT key FROM entries WHERE ?1 IS NULL OR key != ?1
                 ORDER BY last_access, key LIMIT 1",
            )?
            .query_row([keep], |r| r.get(0))
            .optional()?;
        let Some(victim) = victim else { break };
        tx.prepare_cached("DELETE FROM entries WHERE key = ?1")?
            .execute([victim])?;
        removed += 1;
    }
    Ok(removed)
}

fn write_touches(tx: &Connection, touched: &HashMap<Vec<u8>, i64>) -> rusqlite::Result<()> {
    if touched.is_empty() {
        return Ok(());
    }
    // max(): a hit buffered before another process's rewrite never moves the
    // fresh entry's time backwards.
    let mut stmt =
        tx.prepare_cached("UPDATE entries SET last_access = max(last_access, ?2) WHERE key = ?1")?;
    for (key, at) in touched {
        stmt.execute(params![key, at])?;
    }
    Ok(())
}

fn add_counters(tx: &Connection, c: &CounterValues) -> rusqlite::Result<()> {
    if c.is_zero() {
        return Ok(());
    }
    let mut stmt = tx.prepare_cached("UPDATE meta SET value = value + ?2 WHERE name = ?1")?;
    for (name, v) in [
        ("hits", c.hits),
        ("misses", c.misses),
        ("evictions", c.evictions),
        ("errors", c.errors),
        ("corrupt", c.corrupt),
    ] {
        if v > 0 {
            stmt.execute(params![name, v as i64])?;
        }
    }
    Ok(())
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        let mut inner = self.lock();
        if let Err(e) = self.flush_inner(&mut inner) {
            tracing::debug!(error = %e, "kcache store: could not flush on drop");
        }
    }
}

#[cfg(test)]
mod tests;
