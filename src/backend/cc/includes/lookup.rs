//! How one scan finds files: every reference resolved the way the compiler
//! resolves it, with each answer kept for the rest of the scan.
//!
//! A system header is referred to many times (glibc's `math.h` includes
//! `bits/mathcalls.h` a dozen times), and each lookup walks the search chain,
//! missing in several directories before it finds the file. Resolved afresh
//! every time, a warm hit on a kernel that includes `math.h` took some 800
//! `statx` and 370 `readlink` calls. Within one scan the answers cannot
//! differ in a way the result would notice: every file read and every
//! directory a lookup missed in is recorded with the identity it had, and
//! the closure is used only while all of them keep it (see `memo.rs`).
//! So a scan resolves each distinct reference once, probes each candidate
//! path once (one `lstat` when nothing is there), stats the directory a
//! missed path rests on once per parent, and canonicalizes each directory
//! once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::memo::{self, StatId};
use super::{path_from_bytes, Reference, Search};

/// A reference resolved to a file.
#[derive(Clone, Debug)]
pub(super) struct Found {
    pub path: PathBuf,
    pub pos: Option<usize>,
    pub compiler: bool,
}

/// What a resolution depends on besides the search: the name, how it is
/// spelled, where the chain search starts, and for a quoted name the
/// including file's directory (and whether that is the compiler's).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    name: Vec<u8>,
    angled: bool,
    after: Option<usize>,
    dir: Option<(PathBuf, bool)>,
}

/// One scan's lookups, and what they rest on.
#[derive(Default)]
pub(super) struct Lookup {
    resolved: FxHashMap<Key, Option<Found>>,
    /// What a missed path whose own entry is absent rests on, by its parent:
    /// then it does not depend on the name (see [`memo::watch_dir`]).
    parents: FxHashMap<PathBuf, Option<(PathBuf, Option<StatId>)>>,
    /// Directories, canonicalized.
    canonical_dirs: FxHashMap<PathBuf, PathBuf>,
    /// Files not symbolic links, as their probe found them.
    plain: HashSet<PathBuf>,
    /// Every file read and every directory a lookup missed in, with the
    /// identity it had (`None`: absent), in the order first met.
    pub watch: Vec<(PathBuf, Option<StatId>)>,
    watched: HashSet<PathBuf>,
    /// The first candidate met that the compiler would not read as kcache
    /// does, and why: the scan refuses the text.
    pub irregular: Option<Irregular>,
}

/// A candidate path the scan refuses.
#[derive(Debug)]
pub(super) struct Irregular {
    pub path: PathBuf,
    pub why: &'static str,
}

impl std::fmt::Display for Irregular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.path.display(), self.why)
    }
}

/// Neither a regular file nor a directory (a FIFO, a socket, a device): a
/// compiler opens it and waits, or reads what another process writes
/// (review 2026-12-02, GPU F17).
const NOT_REGULAR: &str = "is no regular file (a FIFO, a socket or a device): the compiler \
    would wait on it, or read what another process writes";

/// Under `/proc`, `/dev` or `/sys` (review 2026-12-02, C F16):
/// `/proc/self/cwd/h.h` is kcache's working directory's file to kcache and
/// the source directory's to the compiler, `/dev/stdin` is the unit's pipe,
/// and a pseudo-file's contents change with no edit to see.
const PER_PROCESS: &str = "is read through /proc, /dev or /sys, whose files differ between \
    kcache's process and the compiler's (working directory, descriptors) or change by \
    themselves";

/// Whether `path`, its `.` and `..` taken lexically, lies in a pseudo-file
/// system (see [`PER_PROCESS`]).
fn per_process(path: &Path) -> bool {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => parts.clear(),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(p) => parts.push(p),
        }
    }
    path.has_root()
        && parts
            .first()
            .is_some_and(|top| *top == "proc" || *top == "dev" || *top == "sys")
}

/// Whether `link`, a symbolic link, leads through a pseudo-file system,
/// hop by hop (the compiler follows the same links in its own process).
fn links_per_process(link: &Path) -> bool {
    let mut at = link.to_path_buf();
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&at) else {
            return false;
        };
        at = at.parent().unwrap_or(Path::new("/")).join(target);
        if per_process(&at) {
            return true;
        }
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return false;
        }
    }
    false
}

impl Lookup {
    /// Records `path` (a file read, or what a miss rests on) once.
    pub(super) fn watch(&mut self, path: &Path, id: Option<StatId>) {
        if self.watched.insert(path.to_path_buf()) {
            self.watch.push((path.to_path_buf(), id));
        }
    }

    /// Records the first path the scan must refuse.
    fn refuse(&mut self, path: &Path, why: &'static str) {
        if self.irregular.is_none() {
            self.irregular = Some(Irregular {
                path: path.to_path_buf(),
                why,
            });
        }
    }

    /// Whether `path` is a file (following symbolic links, as the compiler
    /// opens it); a miss records what the path's appearance would change.
    pub(super) fn probe(&mut self, path: &Path) -> bool {
        if per_process(path) {
            self.refuse(path, PER_PROCESS);
            return false;
        }
        let Ok(m) = std::fs::symlink_metadata(path) else {
            // No entry at all (or no way to it): what it rests on is its
            // parent's, whatever its name.
            let parent = path.parent().unwrap_or(Path::new("")).to_path_buf();
            let at = match self.parents.get(&parent) {
                Some(at) => at.clone(),
                None => {
                    let at = memo::watch_dir(path);
                    self.parents.insert(parent, at.clone());
                    at
                }
            };
            if let Some((dir, id)) = at {
                self.watch(&dir, id);
            }
            return false;
        };
        // What the compiler opens: the link's target (none when dangling).
        let target = if m.file_type().is_symlink() {
            std::fs::metadata(path).ok()
        } else {
            Some(m.clone())
        };
        if m.file_type().is_symlink() && links_per_process(path) {
            self.refuse(path, PER_PROCESS);
            return false;
        }
        let found = target.as_ref().is_some_and(|t| t.is_file());
        if target.is_some_and(|t| !t.is_file() && !t.is_dir()) {
            self.refuse(path, NOT_REGULAR);
        }
        if found && !m.file_type().is_symlink() {
            self.plain.insert(path.to_path_buf());
        }
        if !found {
            if let Some((dir, id)) = memo::watch_dir(path) {
                self.watch(&dir, id);
            }
        }
        found
    }

    /// Where `r`, referred to from a file in `dir` (`compiler`: one of the
    /// compiler's own directories) found at chain position `pos`, resolves.
    pub(super) fn resolve(
        &mut self,
        search: &Search,
        r: &Reference,
        dir: Option<&Path>,
        pos: Option<usize>,
        compiler: bool,
    ) -> Option<Found> {
        let after = if r.kind.is_next() {
            pos.map(|p| p + 1)
        } else {
            None
        };
        let quoted_here = !r.angled && after.is_none();
        let key = Key {
            name: r.name.clone(),
            angled: r.angled,
            after,
            dir: quoted_here
                .then(|| dir.map(|d| (d.to_path_buf(), compiler)))
                .flatten(),
        };
        if let Some(found) = self.resolved.get(&key) {
            return found.clone();
        }
        let found = self.resolve_afresh(search, r, key.dir.as_ref(), after);
        self.resolved.insert(key, found.clone());
        found
    }

    fn resolve_afresh(
        &mut self,
        search: &Search,
        r: &Reference,
        here: Option<&(PathBuf, bool)>,
        after: Option<usize>,
    ) -> Option<Found> {
        let name = path_from_bytes(&r.name);
        if name.is_absolute() {
            return self.probe(&name).then_some(Found {
                path: name,
                pos: None,
                compiler: false,
            });
        }
        if let Some((dir, compiler)) = here {
            let path = dir.join(&name);
            if self.probe(&path) {
                return Some(Found {
                    path,
                    pos: None,
                    compiler: *compiler,
                });
            }
        }
        let start = after.unwrap_or(if r.angled { search.bracket } else { 0 });
        for (i, d) in search.chain.iter().enumerate().skip(start) {
            let path = d.path.join(&name);
            if self.probe(&path) {
                return Some(Found {
                    path,
                    pos: Some(i),
                    compiler: d.compiler,
                });
            }
        }
        None
    }

    /// `path` canonical: a file its probe found to be no symbolic link is
    /// its canonical directory joined with its name.
    pub(super) fn canonical(&mut self, path: &Path) -> PathBuf {
        let whole = || std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return whole();
        };
        if !self.plain.contains(path) || parent.as_os_str().is_empty() {
            return whole();
        }
        if let Some(dir) = self.canonical_dirs.get(parent) {
            return dir.join(name);
        }
        match std::fs::canonicalize(parent) {
            Ok(dir) => {
                let c = dir.join(name);
                self.canonical_dirs.insert(parent.to_path_buf(), dir);
                c
            }
            Err(_) => whole(),
        }
    }
}
