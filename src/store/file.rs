//! The file store: one file per entry, safe across processes.
//!
//! The on-disk format and the concurrency guarantees are described in the
//! [`crate::store`] module docs.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::entry::{self, Damage, Header, HEADER_LEN};
use super::fsio::{FsIo, RealFs};
use super::root::prepare_root;
use super::state::SharedState;
use super::{
    key_to_hex, Clock, CorruptEntry, Counters, EntryInfo, PruneReport, Store, StoreError,
    StoreStats, SystemClock, VerifyReport, DEFAULT_MAX_BYTES,
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
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            low_water_percent: 90,
            stale_temp_age: Duration::from_secs(3600),
            io: Arc::new(RealFs),
            clock: Arc::new(SystemClock),
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
    tmp: PathBuf,
    opts: FileStoreOptions,
    counters: Counters,
    state: SharedState,
    /// One eviction scan at a time in this process.
    evicting: Mutex<()>,
    seq: AtomicU64,
}

/// What identifies one version of an entry file: a writer's rename replaces
/// the inode and almost always the size and mtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Snapshot {
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

/// What a guarded removal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Removal {
    /// The snapshotted file was removed.
    Removed,
    /// Someone else removed it first.
    AlreadyGone,
    /// A writer replaced it; the fresh file (of this size) was kept.
    Replaced(u64),
}

/// What a scan of the entries found.
#[derive(Debug, Default)]
struct Scan {
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
struct Found {
    path: PathBuf,
    snap: Snapshot,
    atime: (i64, i64),
}

/// The outcome of reading an entry file.
enum Outcome {
    Entry {
        key: Vec<u8>,
        payload: Vec<u8>,
    },
    /// A well-formed entry of another key whose name collides with ours.
    OtherKey,
    Damaged(Damage),
}

fn not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Whether an error says something other than an entry file (or a shard
/// directory) is in the way: a symlink (never followed), a directory, a
/// socket, a file where the shard directory should be.
fn in_the_way(e: &io::Error) -> bool {
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
    /// with [`StoreError::UnsafeRoot`]. Stale temp files are swept.
    pub fn open_with(
        root: impl AsRef<Path>,
        mut opts: FileStoreOptions,
    ) -> Result<FileStore, StoreError> {
        opts.low_water_percent = opts.low_water_percent.clamp(1, 100);
        let root = prepare_root(root.as_ref())?;
        let v1 = root.join(LAYOUT_DIR);
        let entries = v1.join("entries");
        let tmp = v1.join("tmp");
        for dir in [&v1, &entries, &tmp] {
            ensure_dir(&*opts.io, dir)?;
        }
        let state = SharedState::open(&v1.join("state"));
        let store = FileStore {
            root,
            v1,
            entries,
            tmp,
            opts,
            counters: Counters::default(),
            state,
            evicting: Mutex::new(()),
            seq: AtomicU64::new(0),
        };
        if let Err(e) = store.sweep_stale_temps() {
            tracing::debug!(error = %e, "kcache store: sweeping stale temp files failed");
        }
        Ok(store)
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
        let hex = entry::name_digest(key).to_hex();
        let mut p = self.entries.join(&hex[..2]);
        p.push(&hex[2..]);
        p
    }

    /// The directory of temp files.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp
    }

    /// Removes temp files older than the stale age (a dead writer's); how
    /// many. Runs on open and before every eviction.
    pub fn sweep_stale_temps(&self) -> Result<usize, StoreError> {
        let io = &*self.opts.io;
        let names = match io.read_dir(&self.tmp) {
            Ok(n) => n,
            Err(e) if not_found(&e) => return Ok(0),
            Err(e) => return Err(StoreError::io("list", &self.tmp, e)),
        };
        let now = self.opts.clock.now();
        let mut swept = 0;
        for name in names {
            let p = self.tmp.join(&name);
            let Ok(m) = io.metadata(&p) else { continue };
            let stale = m
                .modified()
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > self.opts.stale_temp_age);
            if !stale {
                continue;
            }
            // A directory here was moved out of an entry's place; it goes
            // once empty (nothing below the root is removed recursively).
            let removed = if m.is_dir() {
                io.remove_dir(&p)
            } else {
                io.remove_file(&p)
            };
            match removed {
                Ok(()) => swept += 1,
                Err(e) if not_found(&e) => {}
                Err(_) if m.is_dir() => {}
                Err(e) => return Err(StoreError::io("remove stale temp file", p, e)),
            }
        }
        if swept > 0 {
            tracing::debug!(swept, dir = %self.tmp.display(), "kcache store: swept stale temp files");
        }
        Ok(swept)
    }

    fn temp_path(&self, prefix: &str) -> PathBuf {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        self.tmp
            .join(format!("{prefix}-{}-{seq}-{nanos:08x}", std::process::id()))
    }

    /// Creates a fresh temp file, recreating `tmp/` if someone deleted it.
    fn create_temp(&self) -> Result<(PathBuf, File), StoreError> {
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

    fn write_entry(&self, key: &[u8], value: &[u8], path: &Path) -> Result<u64, StoreError> {
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
    /// process's counters in; whether a scan is due.
    fn account(&self, delta: i64) -> bool {
        let counts = self.counters.take();
        let rec = self.state.update(|r| {
            r.bytes = r.bytes.saturating_add_signed(delta);
            r.absorb(counts);
        });
        !rec.bytes_known || rec.bytes > self.opts.max_bytes
    }

    /// Moves this process's counters into the shared record.
    fn flush_counters(&self) {
        let counts = self.counters.take();
        if !counts.is_zero() {
            self.state.update(|r| r.absorb(counts));
        }
    }

    /// Every entry file, their total size, and what else is there.
    fn scan(&self) -> Result<Scan, StoreError> {
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

    /// Removes what is in the way at an entry's path or its shard's: a
    /// symlink (itself, never what it points to), a FIFO, a socket, a device,
    /// a file where the shard directory should be, an empty directory (one
    /// that is not empty is moved into `tmp/`, and swept once emptied).
    /// Counted as corrupt and warned about once: it is gone afterwards.
    /// Returns what it was.
    fn remove_stray(&self, path: &Path) -> Option<&'static str> {
        let io = &*self.opts.io;
        let shard = path.parent()?;
        let target =
            if shard != self.entries.as_path() && io.metadata(shard).is_ok_and(|m| !m.is_dir()) {
                shard
            } else {
                path
            };
        let m = io.metadata(target).ok()?;
        let ft = m.file_type();
        if ft.is_file() && target == path {
            return None;
        }
        let what = stray_kind(&m);
        let r = if ft.is_dir() {
            io.remove_dir(target)
                .or_else(|_| io.rename(target, &self.temp_path("stray")))
        } else {
            io.remove_file(target)
        };
        Counters::bump(&self.counters.corrupt);
        match r {
            Ok(()) => tracing::warn!(path = %target.display(), what,
                "kcache store: removed what is not an entry file"),
            Err(e) => {
                Counters::bump(&self.counters.errors);
                tracing::warn!(path = %target.display(), what, error = %e,
                    "kcache store: could not remove what is not an entry file");
            }
        }
        Some(what)
    }

    /// The largest entry file this store reads.
    fn max_entry_len(&self) -> u64 {
        self.opts.max_bytes.min(entry::MAX_ENTRY_BYTES)
    }

    /// Removes the file at `path` only if it is still the one `snap`
    /// describes. The re-stat catches most replacements; the rename into
    /// `tmp/` and the check of what was moved catch a writer that renames in
    /// between, whose fresh file is then linked back.
    fn guarded_remove(&self, path: &Path, snap: &Snapshot) -> Result<Removal, StoreError> {
        let io = &*self.opts.io;
        match io.metadata(path) {
            Ok(m) if Snapshot::of(&m) != *snap => return Ok(Removal::Replaced(m.len())),
            Ok(_) => {}
            Err(e) if not_found(&e) => return Ok(Removal::AlreadyGone),
            Err(e) => return Err(StoreError::io("stat", path, e)),
        }
        let grave = self.temp_path("evict");
        let mut recreated = false;
        loop {
            match io.rename(path, &grave) {
                Ok(()) => break,
                Err(e) if not_found(&e) => {
                    // The entry is gone, unless it was `tmp/` that was.
                    if recreated || io.metadata(&self.tmp).is_ok() {
                        return Ok(Removal::AlreadyGone);
                    }
                    recreated = true;
                    ensure_dir(io, &self.tmp)?;
                }
                Err(e) => return Err(StoreError::io("move out for removal", path, e)),
            }
        }
        let moved = match io.metadata(&grave) {
            Ok(m) => m,
            // Swept as stale by another process: it was old, and it is gone.
            Err(e) if not_found(&e) => return Ok(Removal::AlreadyGone),
            Err(e) => return Err(StoreError::io("stat", grave, e)),
        };
        if Snapshot::of(&moved) == *snap {
            return match io.remove_file(&grave) {
                Ok(()) => Ok(Removal::Removed),
                Err(e) if not_found(&e) => Ok(Removal::AlreadyGone),
                Err(e) => Err(StoreError::io("remove", grave, e)),
            };
        }
        // We moved a writer's fresh entry: put it back, unless an even newer
        // one has already taken its place.
        let kept = match io.hard_link(&grave, path) {
            Ok(()) => Removal::Replaced(moved.len()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Removal::Replaced(io.metadata(path).map(|m| m.len()).unwrap_or(0))
            }
            Err(_) => match io.rename(&grave, path) {
                Ok(()) => return Ok(Removal::Replaced(moved.len())),
                Err(e) => {
                    let _ = io.remove_file(&grave);
                    return Err(StoreError::io("restore replaced entry", path, e));
                }
            },
        };
        let _ = io.remove_file(&grave);
        Ok(kept)
    }

    /// Evicts least recently used entries until the total is at most
    /// `target`, never touching `protect` (the entry just written).
    fn evict(
        &self,
        max_bytes: u64,
        target: u64,
        protect: Option<&Path>,
    ) -> Result<PruneReport, StoreError> {
        let _one = self.evicting.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.sweep_stale_temps() {
            tracing::debug!(error = %e, "kcache store: sweeping stale temp files failed");
        }
        let before = self.state.read();
        let Scan {
            mut found,
            mut total,
            ..
        } = self.scan()?;
        let mut report = PruneReport::default();
        if total > max_bytes {
            found.sort_by(|a, b| a.atime.cmp(&b.atime).then_with(|| a.path.cmp(&b.path)));
            for f in &found {
                if total <= target {
                    break;
                }
                if Some(f.path.as_path()) == protect {
                    continue;
                }
                match self.guarded_remove(&f.path, &f.snap)? {
                    Removal::Removed => {
                        total -= f.snap.size;
                        report.removed += 1;
                        report.freed_bytes += f.snap.size;
                    }
                    // Gone either way: counting it keeps a lost race from
                    // making this pass evict fresh entries to make up for it.
                    Removal::AlreadyGone => total -= f.snap.size,
                    Removal::Replaced(size) => total = total - f.snap.size + size,
                }
            }
        }
        Counters::add(&self.counters.evictions, report.removed);
        report.remaining_bytes = total;
        // The scan's total is the truth as of the scan; writes other
        // processes accounted while it ran are kept on top of it.
        self.state.update(|r| {
            let since = if before.bytes_known {
                r.bytes.saturating_sub(before.bytes)
            } else {
                0
            };
            r.bytes = total + since;
            r.bytes_known = true;
        });
        Ok(report)
    }

    fn low_water(&self) -> u64 {
        (self.opts.max_bytes as u128 * self.opts.low_water_percent as u128 / 100) as u64
    }

    /// Reads an open entry file. `expect` is the key looked up (its file is
    /// named after it); `None` reads whatever key the file holds and checks
    /// it against `name`.
    fn read_entry(
        file: &File,
        len: u64,
        expect: Option<&[u8]>,
        name: &dyn Fn(&[u8]) -> bool,
        want_payload: bool,
    ) -> io::Result<Outcome> {
        let mut r = file;
        if len < HEADER_LEN as u64 {
            return Ok(Outcome::Damaged(Damage::Truncated { len }));
        }
        // The header and the key we expect in one read: hits are syscalls.
        let guess = expect
            .map_or(0, <[u8]>::len)
            .min((len - HEADER_LEN as u64) as usize);
        let mut head = vec![0u8; HEADER_LEN + guess];
        r.read_exact(&mut head)?;
        let h: Header = match entry::parse_header(&head, len) {
            Ok(h) => h,
            Err(d) => return Ok(Outcome::Damaged(d)),
        };
        let key = if h.key_len == guess {
            head.split_off(HEADER_LEN)
        } else {
            let mut key = vec![0u8; h.key_len];
            r.seek(SeekFrom::Start(HEADER_LEN as u64))?;
            r.read_exact(&mut key)?;
            key
        };
        if expect != Some(&key[..]) {
            if !name(&key) {
                return Ok(Outcome::Damaged(Damage::KeyMismatch));
            }
            if expect.is_some() {
                return Ok(Outcome::OtherKey);
            }
        }
        if !want_payload {
            return Ok(Outcome::Entry {
                key,
                payload: Vec::new(),
            });
        }
        let mut payload = Vec::new();
        payload
            .try_reserve_exact(h.payload_len as usize)
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        r.take(h.payload_len).read_to_end(&mut payload)?;
        if payload.len() as u64 != h.payload_len {
            // The file shrank under us: someone truncated it in place.
            return Ok(Outcome::Damaged(Damage::LengthMismatch {
                expected: h.file_len(),
                actual: HEADER_LEN as u64 + h.key_len as u64 + payload.len() as u64,
            }));
        }
        if entry::checksum(&payload) != h.checksum {
            return Ok(Outcome::Damaged(Damage::ChecksumMismatch));
        }
        Ok(Outcome::Entry { key, payload })
    }

    /// Removes a corrupt entry (unless a writer replaced it since it was
    /// read) and counts it.
    fn drop_corrupt(&self, path: &Path, snap: &Snapshot, damage: &Damage) {
        Counters::bump(&self.counters.corrupt);
        tracing::warn!(path = %path.display(), %damage, "kcache store: removing corrupt entry");
        match self.guarded_remove(path, snap) {
            Ok(Removal::Removed) => {
                let size = snap.size as i64;
                self.account(-size);
            }
            Ok(_) => {}
            Err(e) => {
                Counters::bump(&self.counters.errors);
                tracing::warn!(error = %e, "kcache store: could not remove corrupt entry");
            }
        }
    }

    /// Whether `path` is the file name `key` hashes to.
    fn named_for(path: &Path, key: &[u8]) -> bool {
        let hex = entry::name_digest(key).to_hex();
        let file = path.file_name().and_then(OsStr::to_str);
        let shard = path
            .parent()
            .and_then(Path::file_name)
            .and_then(OsStr::to_str);
        file == Some(&hex[2..]) && shard == Some(&hex[..2])
    }

    fn get_inner(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let io = &*self.opts.io;
        let path = self.entry_path(key);
        let file = match io.open_read(&path) {
            Ok(f) => f,
            Err(e) if not_found(&e) => {
                Counters::bump(&self.counters.misses);
                return Ok(None);
            }
            Err(e) if in_the_way(&e) => {
                Counters::bump(&self.counters.misses);
                self.remove_stray(&path);
                return Ok(None);
            }
            Err(e) => return Err(StoreError::io("open", path, e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?;
        if !meta.file_type().is_file() {
            drop(file);
            Counters::bump(&self.counters.misses);
            self.remove_stray(&path);
            return Ok(None);
        }
        if meta.len() > self.max_entry_len() {
            drop(file);
            Counters::bump(&self.counters.misses);
            let d = Damage::TooLarge {
                len: meta.len(),
                max: self.max_entry_len(),
            };
            self.drop_corrupt(&path, &Snapshot::of(&meta), &d);
            return Ok(None);
        }
        let named = |k: &[u8]| Self::named_for(&path, k);
        let read = Self::read_entry(&file, meta.len(), Some(key), &named, true)
            .map_err(|e| StoreError::io("read", &path, e))?;
        match read {
            Outcome::Entry { payload, .. } => {
                // Stamped through the descriptor: only the file just read.
                if let Err(e) = io.set_atime(&file, self.opts.clock.now()) {
                    tracing::debug!(path = %path.display(), error = %e,
                        "kcache store: could not stamp access time");
                }
                Counters::bump(&self.counters.hits);
                Ok(Some(payload))
            }
            Outcome::OtherKey => {
                Counters::bump(&self.counters.misses);
                Ok(None)
            }
            Outcome::Damaged(d) => {
                drop(file);
                Counters::bump(&self.counters.misses);
                self.drop_corrupt(&path, &Snapshot::of(&meta), &d);
                Ok(None)
            }
        }
    }

    fn put_inner(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        if u32::try_from(key.len()).is_err() {
            return Err(StoreError::KeyTooLong { len: key.len() });
        }
        let path = self.entry_path(key);
        let cost = Self::entry_cost(key.len(), value.len());
        if cost > self.max_entry_len() {
            tracing::debug!(key = %key_to_hex(key), cost, "kcache store: entry larger than the cap, not kept");
            self.remove_inner(key)?;
            return Ok(());
        }
        let replaced = self.write_entry(key, value, &path)?;
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

    fn remove_inner(&self, key: &[u8]) -> Result<bool, StoreError> {
        let io = &*self.opts.io;
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

    fn clear_inner(&self) -> Result<(), StoreError> {
        let _one = self.evicting.lock().unwrap_or_else(|p| p.into_inner());
        let Scan { found, strays, .. } = self.scan()?;
        for stray in &strays {
            self.remove_stray(stray);
        }
        let mut kept = 0;
        for f in &found {
            if let Removal::Replaced(size) = self.guarded_remove(&f.path, &f.snap)? {
                kept += size;
            }
        }
        self.state.update(|r| {
            r.bytes = kept;
            r.bytes_known = true;
        });
        Ok(())
    }

    fn verify_inner(&self) -> Result<VerifyReport, StoreError> {
        let io = &*self.opts.io;
        let Scan { found, strays, .. } = self.scan()?;
        let mut report = VerifyReport::default();
        for stray in &strays {
            report.checked += 1;
            if let Some(what) = self.remove_stray(stray) {
                report.corrupt.push(CorruptEntry {
                    location: stray.display().to_string(),
                    key: None,
                    reason: format!("{what} where an entry file should be (removed)"),
                });
            }
        }
        for f in &found {
            let file = match io.open_read(&f.path) {
                Ok(file) => file,
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(StoreError::io("open", &f.path, e)),
            };
            let meta = file
                .metadata()
                .map_err(|e| StoreError::io("stat", &f.path, e))?;
            let read = if !meta.file_type().is_file() {
                // Replaced since the scan: the next verify looks at it.
                continue;
            } else if meta.len() > self.max_entry_len() {
                Outcome::Damaged(Damage::TooLarge {
                    len: meta.len(),
                    max: self.max_entry_len(),
                })
            } else {
                let named = |k: &[u8]| Self::named_for(&f.path, k);
                Self::read_entry(&file, meta.len(), None, &named, true)
                    .map_err(|e| StoreError::io("read", &f.path, e))?
            };
            report.checked += 1;
            if let Outcome::Damaged(d) = read {
                let key = Self::stored_key(&file, meta.len());
                drop(file);
                self.drop_corrupt(&f.path, &Snapshot::of(&meta), &d);
                report.corrupt.push(CorruptEntry {
                    location: f.path.display().to_string(),
                    key,
                    reason: d.to_string(),
                });
            }
        }
        self.flush_counters();
        Ok(report)
    }

    /// The key bytes of a damaged entry, when its header still gives them.
    fn stored_key(file: &File, len: u64) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0).ok()?;
        let key_len = u32::from_le_bytes(head[8..12].try_into().ok()?) as u64;
        if &head[..8] != entry::MAGIC || HEADER_LEN as u64 + key_len > len {
            return None;
        }
        let mut key = vec![0u8; key_len as usize];
        file.read_exact_at(&mut key, HEADER_LEN as u64).ok()?;
        Some(key)
    }

    fn list_inner(&self) -> Result<Vec<EntryInfo>, StoreError> {
        let io = &*self.opts.io;
        let found = self.scan()?.found;
        let mut out = Vec::with_capacity(found.len());
        for f in &found {
            let file = match io.open_read(&f.path) {
                Ok(file) => file,
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(StoreError::io("open", &f.path, e)),
            };
            let meta = file
                .metadata()
                .map_err(|e| StoreError::io("stat", &f.path, e))?;
            if !meta.file_type().is_file() || meta.len() > self.max_entry_len() {
                continue;
            }
            let named = |k: &[u8]| Self::named_for(&f.path, k);
            match Self::read_entry(&file, meta.len(), None, &named, false) {
                Ok(Outcome::Entry { key, .. }) => out.push(EntryInfo {
                    size: meta.len() - (HEADER_LEN + key.len()) as u64,
                    key,
                    stored_bytes: meta.len(),
                    last_access: UNIX_EPOCH
                        + Duration::new(meta.atime().max(0) as u64, meta.atime_nsec() as u32),
                }),
                // Damaged entries are for `verify` to report.
                Ok(_) => {}
                Err(e) => return Err(StoreError::io("read", &f.path, e)),
            }
        }
        Ok(out)
    }

    fn stats_inner(&self) -> Result<StoreStats, StoreError> {
        let scan = self.scan()?;
        self.flush_counters();
        let rec = self.state.read();
        let mut s = StoreStats {
            entries: scan.found.len() as u64,
            bytes: scan.total,
            ..StoreStats::default()
        };
        rec.counters.add_to(&mut s);
        Ok(s)
    }
}

/// What a non-entry file is, for warnings and `verify`.
fn stray_kind(m: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = m.file_type();
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "a file"
    }
}

fn ensure_dir(io: &dyn FsIo, dir: &Path) -> Result<(), StoreError> {
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

impl Store for FileStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.counters.count(self.get_inner(key))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.counters.count(self.put_inner(key, value))
    }

    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        self.counters.count(self.remove_inner(key))
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.counters.count(self.clear_inner())
    }

    fn len(&self) -> Result<usize, StoreError> {
        self.counters.count(self.scan().map(|s| s.found.len()))
    }

    fn describe(&self) -> String {
        format!(
            "file store at {} (cap {} bytes)",
            self.root.display(),
            self.opts.max_bytes
        )
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.counters.count(self.stats_inner())
    }

    fn size_bytes(&self) -> Result<u64, StoreError> {
        self.counters.count(self.scan().map(|s| s.total))
    }

    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        self.counters.count(self.list_inner())
    }

    fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.counters.count(self.verify_inner())
    }

    fn prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        self.counters.count(self.evict(max_bytes, max_bytes, None))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.flush_counters();
        Ok(())
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        self.flush_counters();
    }
}
