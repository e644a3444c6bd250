//! Persistent program stores: bytes in, bytes out, safe across threads and
//! processes.
//!
//! A [`Store`] maps arbitrary key bytes (the resolver uses 32-byte program
//! keys and short prefixed index keys) to arbitrary value bytes (compiled
//! programs). Implementations:
//!
//! * [`MemoryStore`]: an in-process LRU with a byte cap.
//! * [`FileStore`]: one file per entry under a versioned directory, safe across
//!   processes (the default persistent store).
//! * [`SqliteStore`] (feature `sqlite`, on by default): one SQLite database in
//!   WAL mode, safe across threads, best effort across processes.
//! * [`RedisStore`]: a Redis server shared by many machines, the last tier
//!   of a [`Tiered`] when `KCACHE_REDIS_URL` is set (see [`redis`]).
//! * [`Tiered`]: stores composed fastest first (memory → file → Redis),
//!   reading through and writing through.
//!
//! [`config`] opens the store the environment (`KCACHE_STORE`, `KCACHE_DIR`,
//! `KCACHE_MAX_BYTES`) or the command line asks for.
//!
//! There is deliberately no `contains`: checking and then reading races
//! against other processes; call [`Store::get`] and use what it returns.
//!
//! # On-disk format of the file store
//!
//! ```text
//! <root>/                      0700, owned by the user; refused otherwise
//!   v1/                        layout version: a new layout gets a new directory
//!     state                    shared running byte total and counters (flock)
//!     entries/<aa>/<62 hex>    one entry per file, 0600
//!     tmp/                     temp files being written, and evicted entries
//!                              between their rename out and their unlink
//!     leases/<64 hex>          a compile lease's lock file (flock), 0600, one
//!                              per key being compiled; removed on release
//!                              (the SQLite store keeps the same directory)
//! ```
//!
//! An entry's name is the blake3 digest (in hex) of its key, split after two
//! characters: no caller string ever becomes a path. (What the resolver keeps
//! under its keys, a kernel's record carrying a small program so that a hit is
//! one read, and the versions of that record, is in [`crate::resolve::stored`].)
//! Each entry file is
//!
//! ```text
//! offset  size  field
//!      0     8  magic "kcache\x02\n"
//!      8     4  key length, u32 little endian
//!     12     4  reserved, zero
//!     16     8  payload length, u64 little endian
//!     24    16  xxh3-128 of the payload, little endian
//!     40    16  reserved, zero
//!     56     k  the key
//!   56+k     n  the payload
//! ```
//!
//! The checksum guards against damage, not forgery (see
//! [`crate::resolve::stored`]). An entry with magic `"kcache\x01\n"` (written
//! before the checksum changed) has blake3 of the payload in bytes 24..56:
//! it is still read and verified, never written.
//!
//! A read checks that the file is a regular file no larger than the cap or
//! [`MAX_ENTRY_BYTES`] (before reading any of it; one past the cap alone is a
//! miss, left to a process with a larger cap), the magic, that the
//! reserved bytes are zero, that the file's size matches both lengths, that
//! the stored key hashes to the file's name (so a damaged key is detected and a
//! hash collision could never serve another key's bytes) and the checksum.
//! Anything else is a corrupt entry: it is removed and the read is a miss.
//! What is not a regular file where an entry (or a shard directory) should be
//! — a symlink, a FIFO, a socket, a device, a directory — is removed the
//! first time it is met (a directory that is not empty is moved into `tmp/`
//! as `stray-…` and left there, with a warning: kcache did not write what it
//! holds), and `verify` reports it.
//!
//! The SQLite store keeps `key`, `value`, `size`, `checksum` and `last_access`
//! columns in one table; each value is framed with its key and the checksum
//! covers the frame, so every read checks both (see [`sqlite`]).
//!
//! # Hostile and unlucky directories (both persistent stores)
//!
//! * Every directory is created mode 0700 and every file 0600, set
//!   explicitly: the umask never decides.
//! * No other user can replace the root: every directory above it is the
//!   user's or root's and writable by no one else, unless sticky (`/tmp`) or
//!   group-writable for the user's private group alone.
//! * No symlink below the root is ever followed: paths are opened with
//!   `openat2(RESOLVE_NO_SYMLINKS)` (or one `O_NOFOLLOW` directory at a
//!   time), and unlink, rename and mkdir act through a handle on the
//!   directory. A planted symlink is a miss, a refusal or removed (the link,
//!   never what it points to); `verify`, `clear` and `prune` never touch
//!   anything outside the root.
//! * A read opens its entry beneath `entries/`, held open since the store was
//!   opened (and checked as the root is: the current user's directory, no
//!   one else's to write, reached without a symlink), with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`:
//!   two names to look up, not the whole path. Should `entries/` be moved or
//!   replaced, the process reads the directory it holds (entries verified as
//!   ever, a symlink put in its place never followed) until its next write,
//!   which holds whatever directory is then at the path.
//! * Nothing blocks on open: entries and the state file are opened
//!   `O_NONBLOCK` and checked with `fstat`; the SQLite database and its side
//!   files must be regular files before SQLite opens them.
//! * A store that cannot be opened or used is an error, never a panic or a
//!   hang; the resolver and the CLI turn it into one warning and a compile
//!   without the store.
//!
//! # Concurrency guarantees (file store)
//!
//! * Writes go to a fresh temp file in `tmp/` (created exclusively, 0600),
//!   which is fsynced, renamed over the entry, and whose directory is fsynced.
//!   A reader in any process sees the old entry, the new entry or none, never a
//!   mix; concurrent writers of one key leave exactly one of their values.
//! * A writer that dies between writing and renaming leaves only a temp file,
//!   swept once it is older than an hour (by the store's first write, before
//!   every eviction and on `clear`; a store only read leaves it be). Only
//!   regular files named as kcache names its temp files are swept, never a
//!   directory, a symlink or another name.
//!   A deleted `tmp/` (or shard directory) is recreated by the next write.
//! * A hit keeps its entry file open (per store at most 16 files of at most
//!   1 MiB, least recently used first out), and the next read of that entry
//!   is one `statx` of its name beneath the held `entries/` and one `preadv`
//!   of the file kept, only while the `statx` gives the file's own device and
//!   inode (exact: an inode held open is never reused), so a writer's rename,
//!   an eviction or a removal by any process is seen by the next read; what
//!   is read is verified like any read. An entry another process evicted
//!   holds its disk space until this process reads its name again or keeps
//!   another file in its place; this process's own removals close theirs.
//! * Hits stamp the access time through the descriptor they read from
//!   (`futimens`), so they can only ever re-stamp the file they read, never a
//!   fresh file another process renamed into place.
//! * Eviction, `prune`, `clear` and the removal of a corrupt entry take a
//!   snapshot (device, inode, size, mtime), re-stat before acting, and then
//!   move the entry into `tmp/` and check the snapshot again on what they moved:
//!   if a writer replaced the entry in between, the fresh file is linked back
//!   (unless an even newer one took its place). A fresh entry is never lost.
//! * The byte cap is soft. A running total shared by all processes lives in
//!   `v1/state` and is updated in O(1) under `flock` on every write; only when
//!   it exceeds the cap does a scan reconcile it and evict least recently used
//!   entries down to a low-water mark (90 % of the cap by default). An entry
//!   that another process deleted first still counts as gone, so a lost race
//!   never makes an eviction pass delete more than it must.
//! * The `flock` on `v1/state` is waited for 500 ms at most
//!   ([`FileStoreOptions::state_lock_wait`]): past that (a holder stopped by
//!   SIGSTOP or a debugger) the update is skipped, warned about once and
//!   counted as an error, and the process waits no more until it gets the
//!   lock again. Reads, writes and eviction need no lock and go on;
//!   `stats` is an error ([`StoreErrorKind::Busy`]); the skipped counts join
//!   the next update that gets the lock, which marks the byte total unknown
//!   so a later write scans.
//!
//! # Single-flight (file and SQLite stores)
//!
//! [`Store::lease`] takes a key's compile lease: `flock` on the key's lock
//! file, waited for with a backoff up to the caller's bound. The kernel drops
//! it when the holder dies, so a crashed compile never leaves one behind; a
//! store that cannot lease is an error, and the resolver compiles anyway (see
//! [`lease`]). Behind a Redis tier the lease is Redis's, across machines
//! (see [`redis`]), and the local store's while the server is unreachable.

pub mod config;
mod counted;
pub mod file;
pub mod fsio;
pub mod memory;
pub mod redis;
pub mod settings;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod tiered;

mod clock;
#[cfg(test)]
mod decode_fuzz;
mod entry;
pub mod lease;
mod nofollow;
mod root;
mod state;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::Serialize;

pub use self::redis::{RedisOptions, RedisStore, RemoteStats};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{open_from_env, ResolvedStoreConfig, StoreConfig, StoreKind};
pub use entry::MAX_ENTRY_BYTES;
pub use file::{FileStore, FileStoreOptions};
pub use fsio::{FsIo, RealFs};
pub use lease::{Lease, LeaseGrant, NoLease};
pub use memory::MemoryStore;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqlitePoint, SqliteStore};
pub use tiered::Tiered;

/// The default byte cap of the persistent stores: 2 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

/// A key-value store of compiled programs.
///
/// Keys and values are arbitrary bytes. Every method may be called from many
/// threads at once; persistent stores may also be shared by many processes.
/// The trait is object safe: the resolver holds an `Arc<dyn Store>`.
///
/// Implementations provide the five required methods; the rest have defaults
/// built on them (or report [`StoreError::Unsupported`]) and are overridden
/// where a store can do better.
pub trait Store: Send + Sync + fmt::Debug {
    /// The value stored under `key`, or `None` on a miss. A corrupt entry is
    /// removed and reported as a miss.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// Stores `value` under `key`, replacing any previous value. A value that
    /// could never fit under the store's byte cap is not retained (and any
    /// previous value of `key` is removed).
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError>;

    /// Removes `key`; whether an entry was there.
    fn remove(&self, key: &[u8]) -> Result<bool, StoreError>;

    /// Removes every entry.
    fn clear(&self) -> Result<(), StoreError>;

    /// The number of entries.
    fn len(&self) -> Result<usize, StoreError>;

    /// Whether the store holds no entry.
    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }

    /// A one-line description for humans: the kind of store and where it
    /// lives.
    fn describe(&self) -> String {
        format!("{self:?}")
    }

    /// Entries, bytes and the counters the store keeps. The default counts
    /// entries and bytes and reports no counters.
    fn stats(&self) -> Result<StoreStats, StoreError> {
        Ok(StoreStats {
            entries: self.len()? as u64,
            bytes: self.size_bytes()?,
            ..StoreStats::default()
        })
    }

    /// The bytes the entries occupy, as the store's cap counts them.
    fn size_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.list()?.iter().map(|e| e.stored_bytes).sum())
    }

    /// Every entry: its key, size and last access.
    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        Err(StoreError::Unsupported {
            store: self.describe(),
            op: "list",
        })
    }

    /// Checks every entry, removes the corrupt ones and reports them.
    fn verify(&self) -> Result<VerifyReport, StoreError> {
        Err(StoreError::Unsupported {
            store: self.describe(),
            op: "verify",
        })
    }

    /// Evicts least recently used entries until at most `max_bytes` remain.
    /// The default lists the entries and removes the oldest.
    fn prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        let mut entries = self.list()?;
        let mut remaining: u64 = entries.iter().map(|e| e.stored_bytes).sum();
        entries.sort_by_key(|e| e.last_access);
        let mut report = PruneReport::default();
        for e in entries {
            if remaining <= max_bytes {
                break;
            }
            if self.remove(&e.key)? {
                report.removed += 1;
                report.freed_bytes += e.stored_bytes;
            }
            remaining = remaining.saturating_sub(e.stored_bytes);
        }
        report.remaining_bytes = remaining;
        Ok(report)
    }

    /// Writes whatever the store buffers (counters, access times) to where
    /// other processes can see it. Stores also flush when dropped.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Takes `key`'s lease before compiling what it names, so processes
    /// sharing the store compile each key once (see [`lease`]): waits up to
    /// `wait` while another holder has it. The default grants every lease at
    /// once (no single-flight). An error means the store cannot coordinate:
    /// the caller compiles anyway.
    fn lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        let _ = (key, wait);
        Ok(LeaseGrant::Free(Box::new(NoLease)))
    }

    /// Counts lookups of kernels in the hits and misses [`Store::stats`]
    /// reports. The resolver reads its records and programs without the
    /// store counting those reads, then calls this once per batch, so a
    /// kernel answered from the store is one hit though it may take two reads
    /// (a record, then a program it does not carry).
    /// The default counts nothing.
    fn count_lookups(&self, hits: u64, misses: u64) {
        let _ = (hits, misses);
    }

    /// [`Store::get`], also saying whether the value came from a tier shared
    /// with other machines (the resolver's `shared` outcome). The default is
    /// a local read.
    fn get_traced(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Origin)>, StoreError> {
        Ok(self.get(key)?.map(|v| (v, Origin::Local)))
    }

    /// Whether the store is shared with other machines (the Redis tier).
    fn is_remote(&self) -> bool {
        false
    }

    /// The counters of the remote tier, if the store has one.
    fn remote_stats(&self) -> Option<Result<RemoteStats, StoreError>> {
        None
    }
}

/// Where a value read through [`Store::get_traced`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// This machine's stores.
    Local,
    /// A tier other machines share: another machine may have compiled it.
    Remote,
}

/// Why a store operation failed.
///
/// A store error never fails a compile: the resolver logs it, counts it and
/// compiles without the store. [`StoreError::kind`] tells the usual causes
/// apart (full disk, read-only root) so the caller can say so once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A filesystem call failed.
    #[error("store I/O failed: {op} {}: {source}", path.display())]
    Io {
        /// What the store was doing (`"create temp file"`, `"rename"`, ...).
        op: &'static str,
        /// The path it was doing it to.
        path: PathBuf,
        /// The error the system returned.
        #[source]
        source: io::Error,
    },
    /// The cache directory is not safe to use.
    #[error("refusing to use {} as a cache directory: {reason}", path.display())]
    UnsafeRoot {
        /// The directory (or the symlink leading to it).
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No cache directory was given and none could be derived.
    #[error("no cache directory: set KCACHE_DIR, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    /// A configuration value (environment variable or flag) is invalid.
    #[error("invalid {name}={value:?}: {reason}")]
    Config {
        /// The variable or flag.
        name: String,
        /// The value given.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A key given as text (`kcache cache export KEY`) is not hex.
    #[error("not a store key: {text:?} (expected an even number of hex digits)")]
    BadKeyHex {
        /// The text given.
        text: String,
    },
    /// A key too long for the entry format (over 4 GiB).
    #[error("store key of {len} bytes is too long")]
    KeyTooLong {
        /// The key's length.
        len: usize,
    },
    /// The store was written by a newer kcache.
    #[error("{} has schema version {found}; this kcache reads version {expected}", path.display())]
    Incompatible {
        /// The store's path.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The version this build understands.
        expected: i64,
    },
    /// An SQLite call failed.
    #[cfg(feature = "sqlite")]
    #[error("SQLite store {}: {op}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        op: &'static str,
        /// The error SQLite returned.
        #[source]
        source: rusqlite::Error,
    },
    /// `KCACHE_STORE=sqlite` in a build without the `sqlite` feature.
    #[error("this kcache was built without the SQLite store (cargo feature `sqlite`)")]
    SqliteUnavailable,
    /// An entry's bytes are not what its key names (a program whose bytes do
    /// not hash to its id): removed, never used.
    #[error("stored {what} does not hold what its name says (bytes replaced?); removed")]
    Forged {
        /// The entry, as `kcache cache ls` names it.
        what: String,
    },
    /// The remote tier could not be reached, or refused the operation.
    #[error("{store}: {op} failed: {reason}")]
    Remote {
        /// The store, as [`Store::describe`] puts it.
        store: String,
        /// The operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
    /// Another process held the file store's state lock (`v1/state`) past
    /// the bound: the counters and byte total were left as they were.
    #[error("another process held {} locked for over {waited:?} (a stopped kcache?); the store's counters and byte total were not updated", path.display())]
    StateBusy {
        /// The state file.
        path: PathBuf,
        /// How long this process waits for it.
        waited: Duration,
    },
    /// The store does not implement an optional operation.
    #[error("{store} does not support {op}")]
    Unsupported {
        /// The store, as [`Store::describe`] puts it.
        store: String,
        /// The operation.
        op: &'static str,
    },
}

/// The broad cause of a [`StoreError`], for deciding what to tell the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// The disk (or quota, or the database's page limit) is full.
    NoSpace,
    /// The store's filesystem or database is read-only.
    ReadOnly,
    /// The store's files are not ours to write.
    PermissionDenied,
    /// Another process held the store locked for too long.
    Busy,
    /// The cache directory was refused as unsafe.
    Refused,
    /// The configuration is invalid.
    Config,
    /// Anything else.
    Other,
}

impl StoreError {
    /// The broad cause of the error.
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::Io { source, .. } => io_kind(source),
            StoreError::UnsafeRoot { .. } => StoreErrorKind::Refused,
            StoreError::StateBusy { .. } => StoreErrorKind::Busy,
            StoreError::Config { .. }
            | StoreError::BadKeyHex { .. }
            | StoreError::SqliteUnavailable => StoreErrorKind::Config,
            #[cfg(feature = "sqlite")]
            StoreError::Sqlite { source, .. } => sqlite::error_kind(source),
            // Nothing configured is no bad configuration (review F9.13).
            StoreError::NoCacheDir
            | StoreError::KeyTooLong { .. }
            | StoreError::Forged { .. }
            | StoreError::Incompatible { .. }
            | StoreError::Remote { .. }
            | StoreError::Unsupported { .. } => StoreErrorKind::Other,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

fn io_kind(e: &io::Error) -> StoreErrorKind {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreErrorKind::NoSpace,
        Some(libc::EROFS) => StoreErrorKind::ReadOnly,
        Some(libc::EACCES) | Some(libc::EPERM) => StoreErrorKind::PermissionDenied,
        _ => match e.kind() {
            io::ErrorKind::PermissionDenied => StoreErrorKind::PermissionDenied,
            _ => StoreErrorKind::Other,
        },
    }
}

/// What a store holds and what it has counted.
///
/// Persistent stores count across every process that used the store (each
/// process folds its counts into the shared record on writes, `flush` and
/// drop); the memory store counts for its own lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    /// Entries held.
    pub entries: u64,
    /// Bytes held, as the cap counts them.
    pub bytes: u64,
    /// Lookups that found their entry: kernels a resolver answered from the
    /// store (one each, though a record that does not carry its program
    /// takes a second read), and any
    /// other `get` that returned a value.
    pub hits: u64,
    /// Lookups that found nothing: kernels a resolver looked up and did not
    /// get from the store (no record, or no loadable program), and any other
    /// `get` that returned nothing (including corrupt entries).
    pub misses: u64,
    /// Entries removed to keep under the byte cap.
    pub evictions: u64,
    /// Operations that returned an error.
    pub errors: u64,
    /// Corrupt or truncated entries found (and removed) by reads and `verify`.
    pub corrupt: u64,
}

/// One entry, as `kcache cache ls` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryInfo {
    /// The key, as callers gave it; [`key_to_hex`] renders it for humans and
    /// [`key_from_hex`] reads it back for `export`.
    pub key: Vec<u8>,
    /// The value's length.
    pub size: u64,
    /// The bytes the entry counts against the cap (value, key and framing).
    pub stored_bytes: u64,
    /// When the entry was last read or written.
    pub last_access: SystemTime,
}

/// What [`Store::verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Entries checked.
    pub checked: u64,
    /// Entries found corrupt, and removed.
    pub corrupt: Vec<CorruptEntry>,
}

/// A corrupt entry that [`Store::verify`] removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CorruptEntry {
    /// Where it was: a file path, or the key in hex.
    pub location: String,
    /// Its key, when it could still be read.
    pub key: Option<Vec<u8>>,
    /// What was wrong.
    pub reason: String,
}

/// What [`Store::prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// Entries removed.
    pub removed: u64,
    /// Bytes they occupied.
    pub freed_bytes: u64,
    /// Bytes left.
    pub remaining_bytes: u64,
}

/// Lowercase hex of a key, as `kcache cache ls` prints it.
pub fn key_to_hex(key: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(key.len() * 2);
    for b in key {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// Parses a key printed by [`key_to_hex`] (either case).
pub fn key_from_hex(text: &str) -> Result<Vec<u8>, StoreError> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bad = || StoreError::BadKeyHex {
        text: text.to_string(),
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err(bad());
    }
    bytes
        .chunks_exact(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)
}

thread_local! {
    static UNCOUNTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Runs `f` with the reads this thread makes left out of every store's hit
/// and miss counters: the resolver counts per kernel instead, through
/// [`Store::count_lookups`]. Scopes nest.
pub(crate) fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            UNCOUNTED.with(|u| u.set(u.get() - 1));
        }
    }
    UNCOUNTED.with(|u| u.set(u.get() + 1));
    let _leave = Leave;
    f()
}

fn counting() -> bool {
    UNCOUNTED.with(|u| u.get() == 0)
}

/// The counters every store keeps for its own operations.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub evictions: AtomicU64,
    pub errors: AtomicU64,
    pub corrupt: AtomicU64,
}

impl Counters {
    /// A read that found its entry (unless the read is [`uncounted`]).
    pub fn hit(&self) {
        if counting() {
            Self::bump(&self.hits);
        }
    }

    /// A read that found nothing (unless the read is [`uncounted`]).
    pub fn miss(&self) {
        if counting() {
            Self::bump(&self.misses);
        }
    }

    /// Kernel lookups counted by [`Store::count_lookups`].
    pub fn lookups(&self, hits: u64, misses: u64) {
        Self::add(&self.hits, hits);
        Self::add(&self.misses, misses);
    }

    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts an error result on its way out.
    pub fn count<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        if r.is_err() {
            Self::bump(&self.errors);
        }
        r
    }

    /// The counts so far, leaving them in place.
    pub fn snapshot(&self) -> CounterValues {
        CounterValues {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
        }
    }

    /// The counts so far, resetting them to zero (to fold them into a shared
    /// record).
    pub fn take(&self) -> CounterValues {
        CounterValues {
            hits: self.hits.swap(0, Ordering::Relaxed),
            misses: self.misses.swap(0, Ordering::Relaxed),
            evictions: self.evictions.swap(0, Ordering::Relaxed),
            errors: self.errors.swap(0, Ordering::Relaxed),
            corrupt: self.corrupt.swap(0, Ordering::Relaxed),
        }
    }

    /// Puts counts taken by [`Counters::take`] back, when they could not be
    /// written anywhere.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub fn restore(&self, v: CounterValues) {
        Self::add(&self.hits, v.hits);
        Self::add(&self.misses, v.misses);
        Self::add(&self.evictions, v.evictions);
        Self::add(&self.errors, v.errors);
        Self::add(&self.corrupt, v.corrupt);
    }
}

/// Plain values of [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CounterValues {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub errors: u64,
    pub corrupt: u64,
}

impl CounterValues {
    pub fn is_zero(&self) -> bool {
        *self == CounterValues::default()
    }

    pub fn add_to(&self, s: &mut StoreStats) {
        s.hits += self.hits;
        s.misses += self.misses;
        s.evictions += self.evictions;
        s.errors += self.errors;
        s.corrupt += self.corrupt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let k = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(key_to_hex(&k), "0001abff");
        assert_eq!(key_from_hex("0001ABff").unwrap(), k);
        assert_eq!(key_from_hex("").unwrap(), Vec::<u8>::new());
        assert!(matches!(
            key_from_hex("abc"),
            Err(StoreError::BadKeyHex { .. })
        ));
        assert!(matches!(
            key_from_hex("zz"),
            Err(StoreError::BadKeyHex { .. })
        ));
    }

    #[test]
    fn io_errors_are_classified() {
        let e = |errno| StoreError::io("write", "/x", io::Error::from_raw_os_error(errno));
        assert_eq!(e(libc::ENOSPC).kind(), StoreErrorKind::NoSpace);
        assert_eq!(e(libc::EDQUOT).kind(), StoreErrorKind::NoSpace);
        assert_eq!(e(libc::EROFS).kind(), StoreErrorKind::ReadOnly);
        assert_eq!(e(libc::EACCES).kind(), StoreErrorKind::PermissionDenied);
        assert_eq!(e(libc::EIO).kind(), StoreErrorKind::Other);
        let msg = e(libc::ENOSPC).to_string();
        assert!(msg.contains("write /x"), "{msg}");
    }

    #[test]
    fn ticking_clock_orders_readings() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let c = ManualClock::ticking(t0, Duration::from_secs(1));
        assert_eq!(c.now(), t0);
        assert_eq!(c.now(), t0 + Duration::from_secs(1));
        c.advance(Duration::from_secs(10));
        assert_eq!(c.now(), t0 + Duration::from_secs(12));
    }
}
