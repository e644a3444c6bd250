//! The file store: one file per entry, safe across processes.
//!
//! The on-disk format and the concurrency guarantees are described in the
//! [`crate::store`] module docs.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod kept;
pub(crate) mod read;
mod remove;

use super::entry::{self, Damage, Header, HEADER_LEN};
use super::fsio::{FsIo, RealFs};
use super::lease::{LeaseGrant, LockDir, LEASES_DIR};
use super::nofollow;
use super::root::{hold_private_dir, prepare_root};
use super::state::{SharedState, DEFAULT_LOCK_WAIT};
use super::{
    counted::CountedStore, key_to_hex, Clock, CorruptEntry, Counters, EntryInfo, PruneReport,
    StoreError, StoreStats, SystemClock, VerifyReport, DEFAULT_MAX_BYTES,
};

/// The layout version: the directory under the root that holds everything.
pub const LAYOUT_DIR: &str = "v1";

/// How the file store is opened.
#[derive(Clone, Debug)]
pub struct FileStoreOptions {
    /// The soft byte cap, counting whole entry files. Default 2 GiB.
    pub max_bytes: u64,
    /// When over the cap, evict down to this percentage of it (1–100), so
    /// that the next scan is a while away. Default 90.
    pub low_water_percent: u8,
    /// Temp files older than this are a dead writer's and are swept.
    /// Default one hour.
    pub stale_temp_age: Duration,
    /// The filesystem calls; [`RealFs`] by default.
    pub io: Arc<dyn FsIo>,
    /// The time source for access times and temp-file ages.
    pub clock: Arc<dyn Clock>,
    /// How long an update of `v1/state` waits for another process's lock
    /// before going on without it (counted as an error, the byte total then
    /// rebuilt by a later scan). Default 500 ms.
    pub state_lock_wait: Duration,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            low_water_percent: 90,
            stale_temp_age: Duration::from_secs(3600),
            io: Arc::new(RealFs),
            clock: Arc::new(SystemClock),
            state_lock_wait: DEFAULT_LOCK_WAIT,
        }
    }
}

/// A directory of entry files, safe to share between threads and processes.
///
/// See the [`crate::store`] module docs for the layout, the entry format and
/// the concurrency guarantees.
#[derive(Debug)]
pub struct FileStore {
    root: PathBuf,
    v1: PathBuf,
    entries: PathBuf,
    /// `entries/`, held open so that a read looks up two names beneath it
    /// rather than the whole path from `/`; `None` where it cannot be held
    /// safely (then entries are opened by path). See
    /// [`FileStore::follow_entries_dir`].
    entries_dir: RwLock<Option<Arc<File>>>,
    /// Entry files kept open after a verified read (see [`kept`]).
    kept: kept::KeptFiles,
    tmp: PathBuf,
    opts: FileStoreOptions,
    counters: Counters,
    state: SharedState,
    /// One eviction scan at a time in this process.
    evicting: Mutex<()>,
    /// Stale temp files were swept since the store was opened: the first
    /// write sweeps (see [`FileStore::sweep_stale_temps`]).
    swept: AtomicBool,
    seq: AtomicU64,
    /// One lock file per key being compiled.
    leases: LockDir,
}

/// What identifies one version of an entry file: a writer's rename replaces
/// the inode and almost always the size and mtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Snapshot {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Snapshot {
    fn of(m: &Metadata) -> Snapshot {
        Snapshot {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

/// What a scan of the entries found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// The entry files.
    found: Vec<Found>,
    /// Their total size.
    total: u64,
    /// What is not an entry file where one could be: symlinks, directories,
    /// FIFOs, sockets, devices (and shards that are not directories).
    strays: Vec<PathBuf>,
}

/// An entry file found by a scan.
#[derive(Debug)]
pub(super) struct Found {
    path: PathBuf,
    snap: Snapshot,
    atime: (i64, i64),
}

pub(super) fn not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Whether an error says something other than an entry file (or a shard
/// directory) is in the way: a symlink (never followed), a directory, a
/// socket, a file where the shard directory should be.
pub(super) fn in_the_way(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ELOOP
                | libc::ENOTDIR
                | libc::EISDIR
                | libc::ENOTEMPTY
                | libc::EEXIST
                | libc::ENXIO
        )
    )
}

impl FileStore {
    /// Opens (creating if needed) the store under `root` with default
    /// options.
    pub fn open(root: impl AsRef<Path>) -> Result<FileStore, StoreError> {
        Self::open_with(root, FileStoreOptions::default())
    }

    /// Opens (creating if needed) the store under `root`.
    ///
    /// The root is created 0700; one owned by another user, writable by
    /// others, or reached through a symlink someone else controls is refused
    /// with [`StoreError::UnsafeRoot`]. Stale temp files are swept by the
    /// first write, not here (see [`FileStore::sweep_stale_temps`]).
    pub fn open_with(
        root: impl AsRef<Path>,
        mut opts: FileStoreOptions,
    ) -> Result<FileStore, StoreError> {
        opts.low_water_percent = opts.low_water_percent.clamp(1, 100);
        let root = prepare_root(root.as_ref())?;
        let v1 = root.join(LAYOUT_DIR);
        let entries = v1.join("entries");
        let tmp = v1.join("tmp");
        let held = match laid_out(&entries, &tmp) {
            Some(dir) => dir,
            None => {
                for dir in [&v1, &entries, &tmp] {
                    ensure_dir(&*opts.io, dir)?;
                }
                private_or_refused(&entries)?
            }
        };
        // `v1/` too must be the user's alone, as the root is (review
        // 2026-12-02: an `entries/` or `v1/` others could write let another
        // user's file be served, and loaded, as an entry).
        private_or_refused(&v1)?;
        let state = SharedState::open(&v1.join("state"), opts.state_lock_wait);
        let leases = LockDir::new(v1.join(LEASES_DIR));
        Ok(FileStore {
            root,
            v1,
            entries,
            entries_dir: RwLock::new(Some(Arc::new(held))),
            kept: kept::KeptFiles::default(),
            tmp,
            opts,
            counters: Counters::default(),
            state,
            evicting: Mutex::new(()),
            swept: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            leases,
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The soft byte cap.
    pub fn max_bytes(&self) -> u64 {
        self.opts.max_bytes
    }

    /// The bytes an entry counts against the cap: its whole file.
    pub fn entry_cost(key_len: usize, value_len: usize) -> u64 {
        (HEADER_LEN + key_len + value_len) as u64
    }

    /// The path of `key`'s entry file (whether or not it exists).
    pub fn entry_path(&self, key: &[u8]) -> PathBuf {
        self.entries.join(entry_rel(&entry::name_digest(key)))
    }

    /// Opens the entry file at `rel` below `entries/` for reading: beneath
    /// the held `entries/` when there is one (which it answers too), else by
    /// path.
    pub(super) fn open_entry(
        &self,
        rel: &Path,
        path: &Path,
    ) -> (Option<Arc<File>>, io::Result<File>) {
        let io = &*self.opts.io;
        let held = self
            .entries_dir
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // Never by path: a directory at `entries/` that could not be held
        // afresh is not the user's alone, and nothing in it is read.
        let file = match &held {
            Some(dir) => io.open_read_beneath(dir, rel, path),
            None => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "entries/ is no private directory of the current user",
            )),
        };
        (held, file)
    }

    /// Holds `entries/` afresh if the directory at its path is no longer the
    /// one held (moved away, replaced, deleted and made again), so that this
    /// process reads what it writes: called after every write. Until then
    /// reads come from the directory held, still ours, whose entries are
    /// verified like any other; a symlink put in its place is never held.
    pub(super) fn follow_entries_dir(&self) {
        let held = self
            .entries_dir
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let same = match (&*held, nofollow::metadata(&self.entries)) {
            (Some(dir), Ok(now)) => dir
                .metadata()
                .is_ok_and(|m| (m.dev(), m.ino()) == (now.dev(), now.ino())),
            _ => false,
        };
        drop(held);
        if !same {
            // Files kept open beneath the directory let go are let go too.
            self.kept.forget_all();
            let fresh = hold_private_dir(&self.entries).ok().map(Arc::new);
            *self
                .entries_dir
                .write()
                .unwrap_or_else(PoisonError::into_inner) = fresh;
        }
    }

    /// The directory of temp files.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp
    }

    /// Removes temp files older than the stale age (a dead writer's); how
    /// many. Runs before this store's first write, before every eviction
    /// and on `clear`: only a writer leaves temp files, so a store that is
    /// only read (a warm `kcache compile`) lists no directory for them.
    ///
    /// Only regular files named as this store names its temp files go
    /// (review 2026-12-02, store F5: everything old went, directories and
    /// files kcache never wrote included); a directory, a symlink or
    /// another name is left as it is.
    pub fn sweep_stale_temps(&self) -> Result<usize, StoreError> {
        self.swept.store(true, Ordering::Relaxed);
        let io = &*self.opts.io;
        let names = match io.read_dir(&self.tmp) {
            Ok(n) => n,
            Err(e) if not_found(&e) => return Ok(0),
            Err(e) => return Err(StoreError::io("list", &self.tmp, e)),
        };
        let now = self.opts.clock.now();
        let mut swept = 0;
        for name in names {
            if !remove::is_temp_name(&name) {
                continue;
            }
            let p = self.tmp.join(&name);
            // Not followed: a symlink is no file here.
            let Ok(m) = io.metadata(&p) else { continue };
            if !m.file_type().is_file() {
                continue;
            }
            let stale = m
                .modified()
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > self.opts.stale_temp_age);
            if !stale {
                continue;
            }
            match io.remove_file(&p) {
                Ok(()) => swept += 1,
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(StoreError::io("remove stale temp file", p, e)),
            }
        }
        if swept > 0 {
            tracing::debug!(swept, dir = %self.tmp.display(), "kcache store: swept stale temp files");
        }
        Ok(swept)
    }

    pub(super) fn temp_path(&self, prefix: &str) -> PathBuf {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        self.tmp
            .join(format!("{prefix}-{}-{seq}-{nanos:08x}", std::process::id()))
    }

    /// Creates a fresh temp file, recreating `tmp/` if someone deleted it.
    pub(super) fn create_temp(&self) -> Result<(PathBuf, File), StoreError> {
        let io = &*self.opts.io;
        let mut recreated = false;
        loop {
            let p = self.temp_path("put");
            match io.create_new(&p) {
                Ok(f) => return Ok((p, f)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if not_found(&e) && !recreated => {
                    recreated = true;
                    ensure_dir(io, &self.v1)?;
                    ensure_dir(io, &self.tmp)?;
                }
                Err(e) => return Err(StoreError::io("create temp file", p, e)),
            }
        }
    }

    pub(super) fn write_entry(
        &self,
        key: &[u8],
        value: &[u8],
        path: &Path,
    ) -> Result<u64, StoreError> {
        if !self.swept.load(Ordering::Relaxed) {
            if let Err(e) = self.sweep_stale_temps() {
                tracing::debug!(error = %e, "kcache store: sweeping stale temp files failed");
            }
        }
        let io = &*self.opts.io;
        let (tmp, mut file) = self.create_temp()?;
        let result = (|| {
            let head = entry::encode_head(key, value);
            let w = |f: &mut File, b: &[u8]| {
                io.write_all(f, b)
                    .map_err(|e| StoreError::io("write", &tmp, e))
            };
            w(&mut file, &head)?;
            w(&mut file, value)?;
            // The LRU runs on the store's clock, from the first write on; a
            // failure only costs the entry its place in that order.
            if let Err(e) = io.set_atime(&file, self.opts.clock.now()) {
                tracing::debug!(path = %tmp.display(), error = %e,
                    "kcache store: could not stamp access time");
            }
            io.sync_file(&file)
                .map_err(|e| StoreError::io("sync", &tmp, e))?;
            drop(file);
            let replaced = match io.metadata(path) {
                Ok(m) if m.is_file() => m.len(),
                _ => 0,
            };
            let shard = path.parent().expect("entry paths have a shard directory");
            let (mut made_shard, mut cleared) = (false, false);
            loop {
                match io.rename(&tmp, path) {
                    Ok(()) => break,
                    Err(e) if not_found(&e) && !made_shard => {
                        made_shard = true;
                        ensure_dir(io, shard)?;
                    }
                    Err(e) if in_the_way(&e) && !cleared => {
                        cleared = true;
                        self.remove_stray(path);
                        made_shard = true;
                        ensure_dir(io, shard)?;
                    }
                    Err(e) => return Err(StoreError::io("rename into place", path, e)),
                }
            }
            io.sync_dir(shard)
                .map_err(|e| StoreError::io("sync directory", shard, e))?;
            if made_shard {
                io.sync_dir(&self.entries)
                    .map_err(|e| StoreError::io("sync directory", &self.entries, e))?;
            }
            Ok(replaced)
        })();
        if result.is_err() {
            // Nothing half-written stays behind; the entry is untouched.
            let _ = io.remove_file(&tmp);
        }
        result
    }

    /// Adds `delta` bytes to the shared running total, folding this
    /// process's counters in; whether a scan is due. A state lock held past
    /// its bound is counted and answers no: the write stands, and the next
    /// update that gets the lock marks the total unknown, so a later write
    /// scans.
    pub(super) fn account(&self, delta: i64) -> bool {
        let counts = self.counters.take();
        let rec = self.state.update(|r| {
            r.bytes = r.bytes.saturating_add_signed(delta);
            r.absorb(counts);
        });
        match rec {
            Ok(rec) => !rec.bytes_known || rec.bytes > self.opts.max_bytes,
            Err(_) => {
                Counters::bump(&self.counters.errors);
                false
            }
        }
    }

    /// Moves this process's counters into the shared record (kept for a
    /// later update while another process holds its lock).
    pub(super) fn flush_counters(&self) -> Result<(), StoreError> {
        let counts = self.counters.take();
        if !counts.is_zero() {
            self.state.update(|r| r.absorb(counts))?;
        }
        Ok(())
    }

    /// Notes that an update of the shared record was skipped (the state
    /// lock was held past its bound; logged once by the state itself).
    pub(super) fn state_skipped<T>(&self, r: Result<T, StoreError>) {
        if r.is_err() {
            Counters::bump(&self.counters.errors);
        }
    }

    /// Every entry file, their total size, and what else is there.
    pub(super) fn scan(&self) -> Result<Scan, StoreError> {
        let io = &*self.opts.io;
        let shards = match io.read_dir(&self.entries) {
            Ok(n) => n,
            Err(e) if not_found(&e) => return Ok(Scan::default()),
            Err(e) => return Err(StoreError::io("list", &self.entries, e)),
        };
        let mut scan = Scan::default();
        for shard in shards {
            let dir = self.entries.join(&shard);
            let names = match io.read_dir(&dir) {
                Ok(n) => n,
                Err(e) if not_found(&e) => continue,
                // Not a directory (a symlink is never followed).
                Err(e) if in_the_way(&e) => {
                    scan.strays.push(dir);
                    continue;
                }
                Err(e) => return Err(StoreError::io("list", dir, e)),
            };
            for name in names {
                let path = dir.join(&name);
                let m = match io.metadata(&path) {
                    Ok(m) => m,
                    Err(e) if not_found(&e) => continue,
                    Err(e) => return Err(StoreError::io("stat", path, e)),
                };
                if !m.file_type().is_file() {
                    scan.strays.push(path);
                    continue;
                }
                scan.total += m.len();
                scan.found.push(Found {
                    path,
                    snap: Snapshot::of(&m),
                    atime: (m.atime(), m.atime_nsec()),
                });
            }
        }
        Ok(scan)
    }

    /// The largest entry file this store reads.
    pub(super) fn max_entry_len(&self) -> u64 {
        self.opts.max_bytes.min(entry::MAX_ENTRY_BYTES)
    }
}

/// An entry file's path below `entries/`, from the digest of its key: the
/// digest in hex, split after two characters.
fn entry_rel(name: &crate::key::Digest) -> PathBuf {
    let hex = name.to_hex();
    [&hex[..2], &hex[2..]].iter().collect()
}

/// `entries/` held (as [`hold_private_dir`] holds it) when the layout an
/// earlier open made is all there: `entries/` a private directory of the
/// user's reached without a symlink (so `v1/` is a real directory too) and
/// `tmp/` a directory, not a symlink. Three system calls, where making sure
/// of each directory in turn takes nine; `None` sends the open the long way,
/// which makes what is missing and reports what is in the way. `tmp/` is
/// looked at without resolving `v1/` afresh: every later use of it resolves
/// its whole path without following a symlink.
/// `dir` held, when it is a private directory of the current user; else
/// the store is refused.
fn private_or_refused(dir: &Path) -> Result<File, StoreError> {
    hold_private_dir(dir).map_err(|e| StoreError::UnsafeRoot {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })
}

fn laid_out(entries: &Path, tmp: &Path) -> Option<File> {
    let held = hold_private_dir(entries).ok()?;
    let t = std::fs::symlink_metadata(tmp).ok()?;
    t.is_dir().then_some(held)
}

pub(super) fn ensure_dir(io: &dyn FsIo, dir: &Path) -> Result<(), StoreError> {
    match io.metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(StoreError::io(
                "create directory",
                dir,
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
            ))
        }
        Err(e) if not_found(&e) => {}
        Err(e) => return Err(StoreError::io("stat", dir, e)),
    }
    match io.create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::io("create directory", dir, e)),
    }
}

// Reading, listing and verifying live in `read`, clearing in `remove`: the
// raw operations here only name them.
impl CountedStore for FileStore {
    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn describe_store(&self) -> String {
        format!(
            "file store at {} (cap {})",
            self.root.display(),
            crate::bytes::format_byte_size(self.opts.max_bytes)
        )
    }

    fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.get_inner(key)
    }

    fn raw_clear(&self) -> Result<(), StoreError> {
        self.clear_inner()
    }

    fn raw_len(&self) -> Result<usize, StoreError> {
        self.scan().map(|s| s.found.len())
    }

    fn raw_size_bytes(&self) -> Result<u64, StoreError> {
        self.scan().map(|s| s.total)
    }

    fn raw_list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        self.list_inner()
    }

    fn raw_verify(&self) -> Result<VerifyReport, StoreError> {
        self.verify_inner()
    }

    fn raw_prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        self.evict(max_bytes, max_bytes, None)
    }

    fn raw_lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        self.leases.lease(key, wait)
    }

    fn raw_flush(&self) -> Result<(), StoreError> {
        self.flush_counters()
    }

    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        if u32::try_from(key.len()).is_err() {
            return Err(StoreError::KeyTooLong { len: key.len() });
        }
        self.kept.forget(key);
        let path = self.entry_path(key);
        let cost = Self::entry_cost(key.len(), value.len());
        if cost > self.max_entry_len() {
            tracing::debug!(key = %key_to_hex(key), cost, "kcache store: entry larger than the cap, not kept");
            self.raw_remove(key)?;
            return Ok(());
        }
        let replaced = self.write_entry(key, value, &path)?;
        self.follow_entries_dir();
        if self.account(cost as i64 - replaced as i64) {
            // The entry is stored: a failed eviction is the cap's problem,
            // not this write's.
            if let Err(e) = self.evict(self.opts.max_bytes, self.low_water(), Some(&path)) {
                Counters::bump(&self.counters.errors);
                tracing::warn!(error = %e, root = %self.root.display(),
                    "kcache store: could not evict to stay under the cap");
            }
        }
        Ok(())
    }

    fn raw_remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        let io = &*self.opts.io;
        self.kept.forget(key);
        let path = self.entry_path(key);
        let size = match io.metadata(&path) {
            Ok(m) if m.is_file() => m.len(),
            Err(e) if not_found(&e) => return Ok(false),
            Err(e) if !in_the_way(&e) => return Err(StoreError::io("stat", path, e)),
            // Not an entry: removed, and no entry was there.
            _ => {
                self.remove_stray(&path);
                return Ok(false);
            }
        };
        match io.remove_file(&path) {
            Ok(()) => {
                self.account(-(size as i64));
                Ok(true)
            }
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(StoreError::io("remove", path, e)),
        }
    }

    fn raw_stats(&self) -> Result<StoreStats, StoreError> {
        let scan = self.scan()?;
        // Counters another process holds locked are not known: an error
        // rather than a wait or a wrong figure.
        self.flush_counters()?;
        let rec = self.state.read()?;
        let mut s = StoreStats {
            entries: scan.found.len() as u64,
            bytes: scan.total,
            ..StoreStats::default()
        };
        rec.counters.add_to(&mut s);
        Ok(s)
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        // A lock held past its bound was warned about; the counts are lost.
        let _ = self.flush_counters();
    }
}
