//! What keeps a hit fast once every header is digested: a file's contents are
//! read and digested once per process and trusted again while its stat
//! identity (device, inode, size, modification and change times) is
//! unchanged; a whole closure (every file a text's includes reach, and every
//! directory a lookup missed in) is re-validated by stat at most once per
//! keying batch.
//!
//! # Why a stat identity is enough, and when it is not
//!
//! Any write to a file changes its change time; a rename or replacement
//! changes its inode. A file written within [`RECENT`] of the moment it is
//! stat-ed may still be written again within the same timestamp tick (file
//! times come from a coarse clock) with an equal size: such a file is never
//! trusted from the memo, and any closure that holds one is recomputed on
//! every use (ccache's "too new" rule). A directory's times change when an
//! entry is created, removed or renamed in it, which is how a header that
//! appears earlier in the search path is noticed.
//!
//! # Batches
//!
//! [`batch`] runs a function (the resolver keys a whole batch inside one)
//! during which a closure validated after the batch began is trusted without
//! another stat: every file of a batch's keys is checked after the batch's
//! call began, once. Outside a batch, every use re-validates.
//!
//! # Change notification
//!
//! The second time a batch re-validates a validation, it is *armed* with
//! [`crate::resolve::watch`] instead (every object its paths resolve
//! through is watched, then every entry is stat-ed afresh, past the batch's
//! shared stats): from then on a batch trusts it without a stat (but see
//! below for the bound in time) until a change report may touch it (see
//! that module for the trust rule), and stats only the paths no watch
//! covers. A report re-arms it; one that was
//! armed [`MAX_ARMS`] times is re-validated by stat from then on.
//!
//! Trust in a watch is bounded in time, for the writers no watch sees (a
//! Linux AIO write before its writer closes the file, and the others that
//! module lists): once the last check that stat-ed every entry (its arming,
//! or one of these) began [`TRUST_FOR`] or longer before the batch did (on
//! a monotonic wall clock read as the batch begins), the batch stats every
//! entry again, from its shared stats as polling does. When that holds the
//! validation stays armed, trusted without a stat for another
//! [`TRUST_FOR`]; when it does not, it does not hold, as after any failed
//! check. In tests the wall clock stands still unless a test advances it
//! (`test_hooks::advance`), so no slow machine crosses the bound.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use rustc_hash::FxHashMap;

/// How old a file's times must be before its stat identity is trusted.
const RECENT: Duration = Duration::from_secs(2);

/// What tests on this thread see of the stat identities.
#[cfg(test)]
pub(crate) mod test_hooks {
    use std::cell::Cell;

    thread_local! {
        /// How many files this thread has stat-ed for an identity.
        pub(crate) static STATS: Cell<u64> = const { Cell::new(0) };
        /// Treat every file as older than the "too recent" window, so a test
        /// needs not wait it out (it must then change what it changes
        /// visibly to a stat: another size or inode).
        pub(crate) static ALL_OLD: Cell<bool> = const { Cell::new(false) };
        /// The wall clock batches begun on this thread read: frozen unless a
        /// test advances it, so no slow machine crosses [`super::TRUST_FOR`]
        /// in a test that asserts an armed batch takes no stat.
        pub(crate) static WALL: Cell<std::time::Duration> =
            const { Cell::new(std::time::Duration::ZERO) };
    }

    /// Advances this thread's wall clock by `by`.
    pub(crate) fn advance(by: std::time::Duration) {
        WALL.with(|w| w.set(w.get() + by));
    }
}

/// What identifies one version of a file or directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct StatId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    dir: bool,
}

impl StatId {
    /// `path`'s identity, or `None` when nothing is there.
    pub(crate) fn of(path: &Path) -> Option<StatId> {
        Self::with_meta(path).map(|(id, _)| id)
    }

    /// `path`'s identity and the metadata it was read from (one `stat`, for
    /// a caller that needs more of it), or `None` when nothing is there.
    pub(crate) fn with_meta(path: &Path) -> Option<(StatId, std::fs::Metadata)> {
        #[cfg(test)]
        test_hooks::STATS.with(|n| n.set(n.get() + 1));
        std::fs::metadata(path)
            .ok()
            .map(|m| (Self::from_meta(&m), m))
    }

    #[cfg(unix)]
    fn from_meta(m: &std::fs::Metadata) -> StatId {
        use std::os::unix::fs::MetadataExt;
        StatId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            dir: m.is_dir(),
        }
    }

    #[cfg(not(unix))]
    fn from_meta(m: &std::fs::Metadata) -> StatId {
        let t = |t: std::io::Result<SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos() as i64))
        };
        StatId {
            dev: 0,
            ino: 0,
            size: m.len(),
            mtime: t(m.modified()),
            ctime: t(m.created()),
            dir: m.is_dir(),
        }
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.dir
    }

    /// The identity as eight words, for a compact kept record.
    pub(crate) fn to_words(self) -> [u64; 8] {
        [
            self.dev,
            self.ino,
            self.size,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
            u64::from(self.dir),
        ]
    }

    /// The identity [`StatId::to_words`] gave (`None` for words it cannot give).
    pub(crate) fn from_words(w: [u64; 8]) -> Option<StatId> {
        Some(StatId {
            dev: w[0],
            ino: w[1],
            size: w[2],
            mtime: (w[3] as i64, w[4] as i64),
            ctime: (w[5] as i64, w[6] as i64),
            dir: match w[7] {
                0 => false,
                1 => true,
                _ => return None,
            },
        })
    }

    /// Whether the file was changed too recently for its identity to tell a
    /// later change apart.
    pub(crate) fn is_recent(&self) -> bool {
        #[cfg(test)]
        if test_hooks::ALL_OLD.with(Cell::get) {
            return false;
        }
        let newest = self.mtime.max(self.ctime);
        let Ok(now) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let newest = Duration::new(
            newest.0.max(0) as u64,
            newest.1.clamp(0, 999_999_999) as u32,
        );
        newest + RECENT > now
    }
}

/// One file's contents as the scanner uses them.
#[derive(Debug)]
pub(crate) struct FileInfo {
    pub contents: Arc<[u8]>,
    parsed: OnceLock<Vec<super::Item>>,
}

impl FileInfo {
    /// The file's directives, parsed once.
    pub(crate) fn directives(&self) -> &[super::Item] {
        self.parsed
            .get_or_init(|| super::directives(&self.contents))
    }
}

type FileMemo = Mutex<FxHashMap<PathBuf, (StatId, Arc<FileInfo>)>>;

fn files() -> &'static FileMemo {
    static FILES: OnceLock<FileMemo> = OnceLock::new();
    FILES.get_or_init(Default::default)
}

/// `path`'s contents and the identity they were read under; from the memo
/// while the identity is unchanged and old enough to be trusted.
pub(crate) fn read(path: &Path) -> std::io::Result<(Arc<FileInfo>, StatId)> {
    let before =
        StatId::of(path).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    read_as_of(path, before)
}

/// [`read`] of a file the caller stat-ed itself just before (`before` is
/// what [`StatId::of`] gave it, taken after anything the result is checked
/// against began): the same answer without a second stat ahead of the read.
pub(crate) fn read_as_of(path: &Path, before: StatId) -> std::io::Result<(Arc<FileInfo>, StatId)> {
    if let Some((id, info)) = files().lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        if *id == before && !before.is_recent() {
            return Ok((Arc::clone(info), before));
        }
    }
    let contents: Arc<[u8]> = read_sized(path, before.size)?.into();
    let after = StatId::of(path);
    let info = Arc::new(FileInfo {
        contents,
        parsed: OnceLock::new(),
    });
    // A file that changed while it was read is not remembered; its recent
    // identity makes every closure holding it recompute.
    if after == Some(before) && !before.is_recent() {
        files()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), (before, Arc::clone(&info)));
    }
    Ok((info, before))
}

/// The whole of the file at `path`, whose stat said `size` bytes: read into
/// a buffer of that size and one byte more, so the read needs no `fstat`
/// of its own (`std::fs::read` takes one) and a file that grew since is
/// still read whole.
fn read_sized(path: &Path, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    // A size is only a hint: a huge one reserves no more than 64 MiB ahead.
    let mut buf = vec![0; usize::try_from(size.min(64 << 20)).unwrap_or(0) + 1];
    let mut filled = 0;
    loop {
        match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == buf.len() {
                    buf.resize(2 * buf.len(), 0);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// The clock batches and validations are ordered by.
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// This thread's keying batch: when it began (on the batch clock and the
/// wall clock), and whether the change reports were drained after it began.
#[derive(Clone, Copy)]
struct Batch {
    start: u64,
    wall: Duration,
    drained: bool,
}

/// How long an armed validation is trusted past its last full stat check
/// (see the module docs).
const TRUST_FOR: Duration = Duration::from_secs(1);

/// Wall-clock time since the process first asked, monotonic.
#[cfg(not(test))]
fn wall() -> Duration {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    BASE.get_or_init(std::time::Instant::now).elapsed()
}

#[cfg(test)]
fn wall() -> Duration {
    test_hooks::WALL.with(Cell::get)
}

thread_local! {
    static BATCH: Cell<Option<Batch>> = const { Cell::new(None) };
}

/// How many times one validation is armed at most (see the module docs).
const MAX_ARMS: u8 = 8;

/// Runs `f` as one keying batch (see the module docs).
pub(crate) fn batch<R>(f: impl FnOnce() -> R) -> R {
    let start = CLOCK.fetch_add(1, Ordering::SeqCst) + 1;
    let wall = wall();
    // After the clock: a validation armed before this drain was armed
    // before the batch began, and any report on it is applied now.
    let drained = crate::resolve::watch::drain();
    let outer = BATCH.with(|b| {
        b.replace(Some(Batch {
            start,
            wall,
            drained,
        }))
    });
    struct Restore(Option<Batch>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BATCH.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(outer);
    f()
}

/// What a memoized result was computed from, and when it was last checked.
#[derive(Debug, Default)]
pub(crate) struct Validation {
    /// Every file read and every directory a lookup missed in, with the
    /// identity it had (`None`: absent).
    pub entries: Vec<(PathBuf, Option<StatId>)>,
    /// Some entry was too recent to be trusted: recompute on every use.
    pub volatile: bool,
    /// The clock as of which the last check knew every entry: when it
    /// began, for fresh stats; when its batch began, for a check from the
    /// batch's shared stats or its drain.
    checked: AtomicU64,
    /// How it is kept between batches (see the module docs).
    watch: Mutex<Kept>,
}

/// How a validation is kept between batches.
#[derive(Debug, Default)]
struct Kept {
    /// Re-validated by stat in some batch since it was computed.
    revalidated: bool,
    /// Armed: trusted on its flag, its uncovered paths stat-ed.
    armed: Option<crate::resolve::watch::Armed>,
    arms: u8,
    /// The wall clock at the start of the batch whose stats last checked
    /// every entry of an armed validation.
    stat_at: Duration,
}

impl Validation {
    /// A validation over `entries`, checked as of `clock` (read with
    /// [`now`] before the first of them was stat-ed).
    pub(crate) fn new(entries: Vec<(PathBuf, Option<StatId>)>, clock: u64) -> Validation {
        let volatile = entries
            .iter()
            .any(|(_, id)| id.is_some_and(|id| id.is_recent()));
        Validation {
            entries,
            volatile,
            checked: AtomicU64::new(clock),
            watch: Mutex::default(),
        }
    }

    /// A validation over `entries` read from a kept record, when every one
    /// is as it was and none too recent (stat-ed now, or earlier in this
    /// batch: after `clock` was read either way).
    pub(crate) fn loaded(
        entries: Vec<(PathBuf, Option<StatId>)>,
        clock: u64,
    ) -> Option<Validation> {
        let start = BATCH.with(Cell::get).map(|b| b.start);
        let holds = entries
            .iter()
            .all(|(p, id)| stat_in_batch(start, p) == *id && !id.is_some_and(|i| i.is_recent()));
        holds.then(|| Validation::new(entries, clock))
    }

    /// Whether every file read is as it was by a stat taken now (no batch's
    /// shared stat, no watch): for a check after a compile, which a file
    /// written while it ran must fail. Directories are left out: a store, a
    /// work directory or another process's files appearing beside the
    /// kernel's sources change theirs, and what matters is what was read.
    pub(crate) fn files_hold_now(&self) -> bool {
        self.entries
            .iter()
            .filter(|(_, id)| id.is_some_and(|i| !i.is_dir()))
            .all(|(p, id)| StatId::of(p) == *id)
    }

    /// Whether everything the result was computed from is still as it was.
    pub(crate) fn holds(&self) -> bool {
        // Checked (or computed) since the batch began: every stat it rests
        // on came after the batch's call, which is all a batch promises,
        // even for an entry too recent to be trusted across batches.
        let batch = BATCH.with(Cell::get);
        if batch.is_some_and(|b| self.checked.load(Ordering::SeqCst) >= b.start) {
            return true;
        }
        if self.volatile {
            return false;
        }
        let clock = now();
        let start = batch.map(|b| b.start);
        let Some(b) = batch else {
            return self.checked_by_stat(start, clock);
        };
        // What a check from the batch's shared stats or its drain knows is
        // as old as the batch: marked checked then, not now, or another
        // thread's batch begun since would trust it past a change made
        // before that batch began.
        let known = b.start;
        let mut kept = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(armed) = kept.armed.as_ref().filter(|a| b.drained && a.holds()) {
            // What no watch reports (an AIO write, say) is stale for at most
            // about this long: the whole validation is stat-ed, and stays
            // armed when it holds.
            if b.wall.saturating_sub(kept.stat_at) >= TRUST_FOR {
                let ok = self.checked_by_stat(start, known);
                if ok {
                    kept.stat_at = b.wall;
                }
                return ok;
            }
            let ok = armed.poll.iter().all(|&i| self.entry_holds(start, i));
            if ok {
                self.checked.fetch_max(known, Ordering::SeqCst);
            }
            return ok;
        }
        kept.armed = None;
        if kept.revalidated && kept.arms < MAX_ARMS {
            let paths = self.entries.iter().map(|(p, _)| p.as_path());
            if let Some(armed) = crate::resolve::watch::arm(paths) {
                kept.arms += 1;
                // Watched first, then stat-ed afresh: a stat shared earlier
                // in the batch may predate the watch.
                let ok = (0..self.entries.len()).all(|i| self.entry_holds(None, i));
                if ok {
                    kept.armed = Some(armed);
                    kept.stat_at = b.wall;
                    self.checked.fetch_max(clock, Ordering::SeqCst);
                }
                return ok;
            }
        }
        kept.revalidated = true;
        drop(kept);
        self.checked_by_stat(start, known)
    }

    /// Whether entry `i` is as it was, stat-ed once per batch `start`.
    fn entry_holds(&self, start: Option<u64>, i: usize) -> bool {
        let (path, id) = &self.entries[i];
        stat_in_batch(start, path) == *id && !id.is_some_and(|i| i.is_recent())
    }

    fn checked_by_stat(&self, start: Option<u64>, clock: u64) -> bool {
        let ok = (0..self.entries.len()).all(|i| self.entry_holds(start, i));
        if ok {
            self.checked.fetch_max(clock, Ordering::SeqCst);
        }
        ok
    }
}

/// Stats by path, hashed as bytes (`Path`'s own hash walks components).
type BatchStats = FxHashMap<std::ffi::OsString, Option<StatId>>;

thread_local! {
    /// The stats taken in this thread's current batch, by path: validations
    /// sharing a file or directory (every closure and the base share the
    /// search directories) stat it once per batch.
    static BATCH_STATS: std::cell::RefCell<(u64, BatchStats)> =
        std::cell::RefCell::new((0, FxHashMap::default()));
}

/// `path`'s identity, taken at most once per batch (every time outside one):
/// a stat taken earlier in the batch came after the batch began, which is all
/// a batch promises (see [`Validation::holds`]).
fn stat_in_batch(batch: Option<u64>, path: &Path) -> Option<StatId> {
    let Some(b) = batch else {
        return StatId::of(path);
    };
    BATCH_STATS.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.0 != b {
            cell.0 = b;
            cell.1.clear();
        }
        if let Some(id) = cell.1.get(path.as_os_str()) {
            return *id;
        }
        let id = StatId::of(path);
        cell.1.insert(path.as_os_str().to_owned(), id);
        id
    })
}

/// The clock, read before a computation's first stat.
pub(crate) fn now() -> u64 {
    CLOCK.load(Ordering::SeqCst)
}

/// What a lookup of `path` that missed rests on: the nearest existing
/// directory at or above `path`'s parent, where the creation of `path` (or
/// of a directory leading to it) shows, with two exceptions that directory
/// would not show. A file on the way (`path` cannot resolve through it) is
/// recorded itself: its replacement by a directory changes its identity.
/// The first name below that directory that is there but does not resolve
/// (a dangling symlink, whose target's creation changes nothing in the
/// directory), or `path` itself when it is there but is no file, is
/// recorded with the identity it resolves to now.
pub(crate) fn watch_dir(path: &Path) -> Option<(PathBuf, Option<StatId>)> {
    let mut below = path;
    while let Some(d) = below.parent() {
        // A relative path's last parent is empty: the working directory.
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        if d == below {
            // `.` above `.`: the working directory is gone.
            return None;
        }
        if let Some(id) = StatId::of(d) {
            if !id.is_dir() {
                return Some((d.to_path_buf(), Some(id)));
            }
            if std::fs::symlink_metadata(below).is_ok() {
                return Some((below.to_path_buf(), StatId::of(below)));
            }
            return Some((d.to_path_buf(), Some(id)));
        }
        below = d;
    }
    None
}

type DigestMemo = Mutex<FxHashMap<PathBuf, (StatId, crate::key::Digest)>>;

/// `path`'s contents digest (blake3) and the identity it was taken under,
/// from the memo while the identity holds; for large inputs (libraries)
/// whose contents need not stay in memory.
pub(crate) fn digest(path: &Path) -> std::io::Result<(crate::key::Digest, StatId)> {
    static DIGESTS: OnceLock<DigestMemo> = OnceLock::new();
    let memo = DIGESTS.get_or_init(Default::default);
    let before =
        StatId::of(path).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    if let Some((id, d)) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        if *id == before && !before.is_recent() {
            return Ok((*d, before));
        }
    }
    let d = hash_file(path)?;
    if StatId::of(path) == Some(before) && !before.is_recent() {
        memo.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), (before, d));
    }
    Ok((d, before))
}

/// `path`'s blake3, read through blake3's 64 KiB stack buffer: never
/// inlined, so only a caller that reads a file probes that much stack
/// (inlined into the key's base, every hit touched 16 more stack pages).
#[inline(never)]
fn hash_file(path: &Path) -> std::io::Result<crate::key::Digest> {
    let mut h = blake3::Hasher::new();
    h.update_reader(std::fs::File::open(path)?)?;
    Ok(crate::key::Digest(*h.finalize().as_bytes()))
}
