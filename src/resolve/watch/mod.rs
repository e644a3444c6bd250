//! Change notification for what memoized keys rest on, so a long-lived
//! process keys a repeated text without re-validating its headers by `stat`
//! every batch.
//!
//! # The trust rule
//!
//! A validation (the files and directories a key was derived from, with the
//! stat identity each had) is *armed*: every object on the way to
//! each of its paths is watched first (every directory resolution walks
//! through, each symlink's directory, and the file or directory itself, all
//! without following a symlink), and only then is the validation checked by
//! `stat`, as without notification. From then on it is trusted without a
//! `stat` for as long as its flag holds (and for at most a second past its
//! last full `stat` check: see below), which it stops doing for good at
//! the first report that may touch it:
//!
//! * any change to a watched object itself (written, closed after writing,
//!   its attributes or times changed, moved, deleted, its watch dropped);
//! * in a directory resolution walks through, any change to the entry of the
//!   name walked (created, deleted, renamed from or to, written, attributes);
//! * in a directory the validation holds itself (a search directory a lookup
//!   missed in), or the directory where a path stops resolving (the first
//!   name missing), any entry created, deleted or renamed;
//! * events lost (the queue overflowed, a read failed) or the mount table
//!   changed (that of the mount namespace the watcher was made in,
//!   `/proc/thread-self/mountinfo`, polled with the queue): everything.
//!
//! The queue is drained once at the start of each keying batch, under the
//! watcher's lock, with one `poll` that returns at once when nothing is
//! queued; a report is queued by the operation that changed the file before
//! that operation returns, so a change completed before a batch began is
//! seen by it. A path the walk cannot cover (relative, on a filesystem not on
//! the allowlist of local ones, a watch refused, a symlink loop) is stat-ed
//! every batch as before; so is everything where inotify is unavailable
//! (not Linux, or `inotify_init1` fails), in a child of `fork` (which
//! shares its parent's queue: it never reads it), in a thread whose mount
//! namespace is not the one the watcher was made in (paths resolve to
//! other objects there), or after [`set_enabled`]`(false)`.
//!
//! What no watch sees: writes through a shared writable mapping (`mmap`;
//! inotify(7) does not report them); writes through Linux AIO
//! (`io_submit` queues no report of its own: the change is seen only when
//! the writer closes the file, though a `stat` would see its new times at
//! once); a process changing its own root; a thread moving to another
//! mount namespace after it first keyed (its namespace is asked once); and
//! changes made to an overlay's lower layer below it. So that each of these
//! but the mapping's writes (which a `stat` may miss too, see below) is
//! stale for about a second at most, not for the life of the process,
//! the keying batches bound the trust in time: a validation whose last full
//! `stat` check is a second old is stat-ed in full again, staying armed
//! when it holds (see `cc::includes::memo`). Names are compared
//! byte for byte, so in a case-folding directory on the way an entry
//! created under another case is seen only through the watches on the
//! objects themselves (a replaced file reports its link count, a search
//! directory any entry created) or, where a name is missing, by the report
//! of any entry created in its directory. A `stat` of a file written
//! through a mapping would see its new modification time only if its pages
//! were written back and faulted again, so polling does not promise that
//! either.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use rustc_hash::FxHashMap;

#[cfg(target_os = "linux")]
mod inotify;
#[cfg(test)]
mod tests;

/// What a change report says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The watched object itself changed (or its watch may no longer see it).
    Itself,
    /// An entry of the watched directory was created, deleted or renamed.
    Entry(OsString),
    /// An entry of the watched directory was written or its attributes set.
    Child(OsString),
    /// The watch is gone (its object deleted, its filesystem unmounted).
    Gone,
}

/// One change report: the watch it came from and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub watch: i32,
    pub change: Change,
}

/// Where change reports come from: inotify on Linux, a scripted feed in
/// tests.
pub(crate) trait Feed: Send {
    /// Starts watching the object at `path` itself (a final symlink is not
    /// followed); the number its reports will carry, or `None` when it
    /// cannot be watched.
    fn watch(&mut self, path: &Path) -> Option<i32>;

    /// Whether the filesystem holding `path` (on device `dev`) reports every
    /// change made to it through this kernel.
    fn reports_all(&mut self, path: &Path, dev: u64) -> bool;

    /// Appends the reports queued since the last call to `out`; `false` when
    /// some may have been lost.
    fn drain(&mut self, out: &mut Vec<Event>) -> bool;
}

impl<F: Feed + ?Sized> Feed for Box<F> {
    fn watch(&mut self, path: &Path) -> Option<i32> {
        (**self).watch(path)
    }

    fn reports_all(&mut self, path: &Path, dev: u64) -> bool {
        (**self).reports_all(path, dev)
    }

    fn drain(&mut self, out: &mut Vec<Event>) -> bool {
        (**self).drain(out)
    }
}

/// The flag one armed validation is trusted by.
#[derive(Debug)]
struct Flag(AtomicBool);

/// An armed validation's standing (see the module docs).
#[derive(Debug)]
pub(crate) struct Armed {
    flag: Arc<Flag>,
    /// The indices of the paths no watch covers: stat-ed every batch.
    pub poll: Vec<usize>,
}

impl Armed {
    /// Whether no report since the validation was armed may touch it.
    pub(crate) fn holds(&self) -> bool {
        self.flag.0.load(Ordering::SeqCst)
    }
}

/// What an armed validation asks of one watch.
#[derive(Default)]
struct Interest {
    /// Any report (a file the validation holds).
    any: Vec<Weak<Flag>>,
    /// Reports on the object and on any entry's creation, deletion or
    /// renaming (a directory the validation holds).
    entries: Vec<Weak<Flag>>,
    /// Reports on the object and on the named entry (a directory walked
    /// through).
    names: FxHashMap<OsString, Vec<Weak<Flag>>>,
}

/// What one walk asks of a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Want {
    Any,
    Entries,
    Name(OsString),
}

/// What the walk found at one path (within one [`Watcher::arm`]).
#[derive(Clone)]
enum Step {
    Dir(i32),
    Other(i32),
    Link(PathBuf),
    Absent,
    Uncovered,
}

/// The symlinks one walk follows at most (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The watches and who relies on them.
pub(crate) struct Watcher<F> {
    feed: F,
    interest: FxHashMap<i32, Interest>,
    events: Vec<Event>,
}

impl<F: Feed> Watcher<F> {
    pub(crate) fn new(feed: F) -> Self {
        Watcher {
            feed,
            interest: FxHashMap::default(),
            events: Vec::new(),
        }
    }

    /// Applies every report queued since the last drain.
    pub(crate) fn drain(&mut self) {
        let complete = self.feed.drain(&mut self.events);
        let events = std::mem::take(&mut self.events);
        for e in &events {
            self.apply(e);
        }
        self.events = events;
        self.events.clear();
        if !complete {
            for (_, i) in self.interest.drain() {
                i.invalidate_all();
            }
        }
    }

    fn apply(&mut self, e: &Event) {
        match &e.change {
            Change::Gone => {
                if let Some(i) = self.interest.remove(&e.watch) {
                    i.invalidate_all();
                }
            }
            Change::Itself => {
                if let Some(i) = self.interest.get_mut(&e.watch) {
                    std::mem::take(i).invalidate_all();
                }
            }
            Change::Entry(name) | Change::Child(name) => {
                let Some(i) = self.interest.get_mut(&e.watch) else {
                    return;
                };
                if let Some(v) = i.names.remove(name) {
                    invalidate(v);
                }
                if matches!(e.change, Change::Entry(_)) {
                    invalidate(std::mem::take(&mut i.entries));
                }
                // A file's watch has no entries; a report naming one is
                // still a report on what the watch is for.
                invalidate(std::mem::take(&mut i.any));
            }
        }
    }

    /// Watches everything `paths` rest on (see the module docs) and returns
    /// the flag they are trusted by from now on. The caller validates them
    /// by `stat` after this returns, before trusting the flag.
    pub(crate) fn arm<'a>(&mut self, paths: impl Iterator<Item = &'a Path>) -> Armed {
        let flag = Arc::new(Flag(AtomicBool::new(true)));
        let mut steps = FxHashMap::default();
        let mut poll = Vec::new();
        let mut wants = Vec::new();
        for (i, path) in paths.enumerate() {
            wants.clear();
            if !self.walk(path, &mut steps, &mut wants) {
                poll.push(i);
                continue;
            }
            for (watch, want) in wants.drain(..) {
                self.register(watch, want, &flag);
            }
        }
        Armed { flag, poll }
    }

    fn register(&mut self, watch: i32, want: Want, flag: &Arc<Flag>) {
        let i = self.interest.entry(watch).or_default();
        let list = match want {
            Want::Any => &mut i.any,
            Want::Entries => &mut i.entries,
            Want::Name(n) => i.names.entry(n).or_default(),
        };
        // Flags of dropped or invalidated validations are pruned as a list
        // doubles, so re-arming never grows a list without bound.
        if list.len() >= 8 && list.len().is_power_of_two() {
            list.retain(|w| w.upgrade().is_some_and(|f| f.0.load(Ordering::SeqCst)));
        }
        list.push(Arc::downgrade(flag));
    }

    /// What is at `path`, watched before it is looked at; each path once
    /// per arm.
    fn step(&mut self, path: &Path, steps: &mut FxHashMap<PathBuf, Step>) -> Step {
        if let Some(s) = steps.get(path) {
            return s.clone();
        }
        let watch = self.feed.watch(path);
        let step = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Step::Absent,
            Err(_) => Step::Uncovered,
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => Step::Link(target),
                Err(_) => Step::Uncovered,
            },
            Ok(m) => match watch {
                Some(w) if self.feed.reports_all(path, dev(&m)) => {
                    if m.is_dir() {
                        Step::Dir(w)
                    } else {
                        Step::Other(w)
                    }
                }
                _ => Step::Uncovered,
            },
        };
        steps.insert(path.to_path_buf(), step.clone());
        step
    }

    /// Resolves `path` as the kernel would, one component at a time,
    /// pushing onto `wants` what each watch must report; `false` when some
    /// part of it cannot be covered.
    fn walk(
        &mut self,
        path: &Path,
        steps: &mut FxHashMap<PathBuf, Step>,
        wants: &mut Vec<(i32, Want)>,
    ) -> bool {
        if !path.is_absolute() {
            return false;
        }
        let root = PathBuf::from("/");
        let Step::Dir(root_watch) = self.step(&root, steps) else {
            return false;
        };
        // The directories resolved so far (no symlink among them), so `..`
        // is the one before.
        let mut dirs = vec![(root.clone(), root_watch)];
        let mut todo: Vec<OsString> = components(path);
        todo.reverse();
        let mut links = 0;
        while let Some(name) = todo.pop() {
            let (dir, dir_watch) = dirs.last().cloned().expect("the root stays");
            if name == ".." {
                if dirs.len() > 1 {
                    dirs.pop();
                }
                continue;
            }
            wants.push((dir_watch, Want::Name(name.clone())));
            let here = dir.join(&name);
            match self.step(&here, steps) {
                Step::Uncovered => return false,
                // Its creation shows in the directory watched above, under
                // any name: in a case-folding directory it may be made
                // under another case, and there is no object to watch.
                Step::Absent => {
                    wants.pop();
                    wants.push((dir_watch, Want::Entries));
                    return true;
                }
                Step::Link(target) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return false;
                    }
                    if target.is_absolute() {
                        dirs.truncate(1);
                    }
                    let mut more = components(&target);
                    more.reverse();
                    todo.extend(more);
                }
                Step::Other(w) => {
                    // A file, or a path that goes on through one (which
                    // fails to resolve while it is one).
                    wants.push((w, Want::Any));
                    return true;
                }
                Step::Dir(w) => {
                    if todo.is_empty() {
                        wants.push((w, Want::Entries));
                        return true;
                    }
                    dirs.push((here, w));
                }
            }
        }
        // The path ended on a directory reached through `..` or a symlink,
        // or is the root: the validation holds that directory.
        let (_, w) = dirs.last().cloned().expect("the root stays");
        wants.push((w, Want::Entries));
        true
    }
}

impl Interest {
    fn invalidate_all(self) {
        invalidate(self.any);
        invalidate(self.entries);
        for (_, v) in self.names {
            invalidate(v);
        }
    }
}

fn invalidate(flags: Vec<Weak<Flag>>) {
    for f in flags {
        if let Some(f) = f.upgrade() {
            f.0.store(false, Ordering::SeqCst);
        }
    }
}

/// `path`'s components as names, `..` kept, `.` and the root dropped.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(unix)]
fn dev(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    m.dev()
}

#[cfg(not(unix))]
fn dev(_: &std::fs::Metadata) -> u64 {
    0
}

/// Whether validations are armed at all (see [`set_enabled`]).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns change notification on or off for this process (on by default). Off,
/// every memoized key is re-validated by `stat` once per keying batch, as
/// before; on, a validation is armed the second time a batch re-validates it
/// (a process that keys in one or two batches never pays for a watch), and
/// trusted without a `stat` (but one full check a second, for writers no
/// watch sees) until a report may touch it. Turning it off drops
/// no watch, but no armed validation is trusted in a keying batch begun from
/// then on (one already under way keeps trusting what it drained).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Whether change notification is on: [`set_enabled`] did not turn it off,
/// and `KCACHE_WATCH` (read once per process) is not `0`, `off`, `false` or
/// `no`.
pub fn enabled() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    ENABLED.load(Ordering::SeqCst)
        && *ENV.get_or_init(|| env_allows(std::env::var_os("KCACHE_WATCH").as_deref()))
}

/// Whether a `KCACHE_WATCH` of `value` leaves notification on: only the
/// spellings of "off" turn it off, so a typo keeps the default rather than
/// silently changing what a process trusts.
fn env_allows(value: Option<&std::ffi::OsStr>) -> bool {
    let off = value
        .and_then(|v| v.to_str())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| matches!(v.as_str(), "0" | "off" | "false" | "no"));
    !off
}

type Global = Mutex<Watcher<Box<dyn Feed>>>;

static GLOBAL: OnceLock<Option<Global>> = OnceLock::new();

/// The mount namespace the process's watcher was made in.
#[cfg(target_os = "linux")]
static MADE_IN: OnceLock<(u64, u64)> = OnceLock::new();

fn global() -> Option<&'static Global> {
    GLOBAL
        .get_or_init(|| {
            #[cfg(target_os = "linux")]
            let feed: Option<Box<dyn Feed>> = inotify::Inotify::new().map(|f| {
                let _ = MADE_IN.set(f.ns);
                Box::new(f) as Box<dyn Feed>
            });
            #[cfg(not(target_os = "linux"))]
            let feed: Option<Box<dyn Feed>> = None;
            feed.map(|f| Mutex::new(Watcher::new(f)))
        })
        .as_ref()
}

/// Whether this process may use the watcher: not when notification is off,
/// nor in a child of `fork`, which shares the parent's queue.
fn usable() -> bool {
    #[cfg(target_os = "linux")]
    if inotify::forked_since() {
        return false;
    }
    enabled()
}

/// Whether the calling thread resolves paths in the mount namespace the
/// process's watcher was made in (whose mount table it polls, whose
/// objects it watches). Asked once per thread: only a thread itself moves
/// to another namespace (`unshare`, `setns`), which the module docs list
/// among what no watch sees once it has keyed.
fn in_watchers_namespace() -> bool {
    #[cfg(target_os = "linux")]
    {
        thread_local! {
            static SAME: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        }
        let Some(made) = MADE_IN.get() else {
            return false;
        };
        SAME.with(|s| match s.get() {
            Some(same) => same,
            None => {
                let same = inotify::mount_ns().as_ref() == Some(made);
                s.set(Some(same));
                same
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    true
}

#[cfg(test)]
thread_local! {
    /// The watcher this thread's batches drain and arm with instead of the
    /// process's, in tests: a scripted feed reports only what the test
    /// queues, as a writer the kernel does not report would.
    pub(crate) static SCRIPTED: std::cell::RefCell<Option<Watcher<Box<dyn Feed>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` on this thread's scripted watcher; `None` when there is none.
#[cfg(test)]
fn on_scripted<R>(f: impl FnOnce(&mut Watcher<Box<dyn Feed>>) -> R) -> Option<R> {
    SCRIPTED.with(|s| s.borrow_mut().as_mut().map(f))
}

/// Drains the process's watcher, when one was started; whether validations
/// armed before this call may be trusted on their [`Armed`] flags now.
pub(crate) fn drain() -> bool {
    #[cfg(test)]
    if on_scripted(Watcher::drain).is_some() {
        return true;
    }
    if !usable() {
        return false;
    }
    let Some(w) = GLOBAL.get().and_then(Option::as_ref) else {
        return false;
    };
    if !in_watchers_namespace() {
        return false;
    }
    w.lock().unwrap_or_else(PoisonError::into_inner).drain();
    true
}

/// Arms a validation over `paths` with the process's watcher (started on
/// first use); `None` when notification is off or unavailable.
pub(crate) fn arm<'a>(paths: impl Iterator<Item = &'a Path>) -> Option<Armed> {
    #[cfg(test)]
    if SCRIPTED.with(|s| s.borrow().is_some()) {
        return on_scripted(|w| w.arm(paths));
    }
    if !usable() {
        return None;
    }
    let w = global()?;
    if !in_watchers_namespace() {
        return None;
    }
    Some(w.lock().unwrap_or_else(PoisonError::into_inner).arm(paths))
}
