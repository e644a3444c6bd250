//! Private directories and files for the backends' compiles.
//!
//! Everything a backend writes for a compile lives under **kcache's temp
//! root**, `<base>/kcache-<uid>` (`<base>`: `TMPDIR`, or the directory a
//! backend is told): a directory of the current user's, mode 0700, checked
//! after creation (not a symlink, owned by the user, no group or other bits).
//! Inside it, each backend instance (or each compile, for a tool run per
//! compile) makes a directory `kcache-<family>-<pid>-<random>` with `mkdtemp`
//! semantics: an unpredictable name, created exclusively, mode set to 0700
//! explicitly (never the umask's), and checked the same way. Files are created
//! exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`), mode 0600 set explicitly.
//! Child processes a backend runs get umask 077, so what they write is
//! private too.
//!
//! The checks hold against other users as long as `<base>` is private or
//! sticky, as `/tmp` is: in a directory anyone may rename entries of, no
//! check made by path can be.
//!
//! When the root cannot be used (another user owns `<base>/kcache-<uid>`, or
//! it is a symlink), the directories are made in `<base>` directly, with the
//! same checks, and nothing is swept.
//!
//! The cc backend makes its directory lazily ([`LazyDir`]): at its first
//! compile, load or probe that needs a scratch file, not when it is built,
//! so a process whose every answer comes from a store without loading it
//! (`kcache compile` on a hit) creates, sweeps and removes nothing.
//!
//! # Sweeping leftovers
//!
//! A process killed with SIGKILL leaves its directories behind. Creating a
//! backend's directory first removes, from the root only, directories named
//! as above whose process is gone and whose modification time is older than
//! [`STALE_AFTER`], owned by the current user; symlinks are never followed
//! (neither the entries themselves nor anything below them). A live
//! backend's directory is never swept: its process is alive (the pid is read
//! from the name; a process in another pid namespace sharing the directory
//! would look dead, and after an hour idle lose its directory, which fails
//! its next compile, never answers wrongly).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old a leftover directory of a dead process must be to be swept.
pub const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// The prefix of every directory kcache makes in its temp root.
const PREFIX: &str = "kcache-";

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Fails unless `path` is a directory (not a symlink) of the current user
/// that no one else can enter.
fn check_private_dir(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let problem = if meta.file_type().is_symlink() {
        Some("is a symbolic link".to_string())
    } else if !meta.is_dir() {
        Some("is not a directory".to_string())
    } else if meta.uid() != euid() {
        Some(format!("is owned by uid {}, not {}", meta.uid(), euid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "has mode {:o}: other users may use it",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {p}", path.display()),
        )),
    }
}

/// kcache's temp root in `base`, created if missing (see the module docs).
pub fn temp_root(base: &Path) -> io::Result<PathBuf> {
    let root = base.join(format!("{PREFIX}{}", euid()));
    match fs::DirBuilder::new().mode(0o700).create(&root) {
        Ok(()) => fs::set_permissions(&root, fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private_dir(&root)?;
    Ok(root)
}

/// A private directory, removed (without following symlinks) when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    dir: tempfile::TempDir,
}

impl PrivateDir {
    /// Makes a directory for `family` in kcache's temp root under `base`
    /// (`TMPDIR` when `None`), sweeping the root's stale leftovers first when
    /// `sweep` is set.
    pub fn create(family: &str, base: Option<&Path>, sweep: bool) -> io::Result<PrivateDir> {
        let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let parent = match temp_root(&base) {
            Ok(root) => {
                if sweep {
                    let swept = sweep_stale(&root, STALE_AFTER);
                    if swept > 0 {
                        tracing::debug!(swept, root = %root.display(), "removed stale work directories");
                    }
                }
                root
            }
            Err(e) => {
                tracing::warn!(error = %e, "kcache's temp root is unusable; using a private directory in {}", base.display());
                base
            }
        };
        let prefix = format!("{PREFIX}{family}-{}-", std::process::id());
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)?;
        // The umask may have taken bits off (even the owner's): set them.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))?;
        check_private_dir(dir.path())?;
        Ok(PrivateDir { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A fresh private subdirectory (`mkdtemp`, mode 0700), removed when
    /// dropped.
    pub fn subdir(&self, prefix: &str) -> io::Result<tempfile::TempDir> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(self.path())?;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))?;
        Ok(dir)
    }
}

/// A [`PrivateDir`] made on first use: nothing is created, and nothing swept,
/// until [`LazyDir::path`] is first called. A failure to create it is
/// returned to that caller, and the next call tries again.
#[derive(Debug)]
pub struct LazyDir {
    family: &'static str,
    base: PathBuf,
    dir: std::sync::OnceLock<PrivateDir>,
}

impl LazyDir {
    /// A directory for `family` to be made in kcache's temp root under
    /// `base` (sweeping the root's stale leftovers first) when first used.
    pub fn new(family: &'static str, base: PathBuf) -> LazyDir {
        LazyDir {
            family,
            base,
            dir: std::sync::OnceLock::new(),
        }
    }

    /// The directory, made now if it was not yet. Two threads racing to make
    /// it each make one; the loser's is removed at once, both get the
    /// winner's.
    pub fn path(&self) -> io::Result<&Path> {
        if let Some(dir) = self.dir.get() {
            return Ok(dir.path());
        }
        let made = PrivateDir::create(self.family, Some(&self.base), true)?;
        // A lost race drops (removes) the directory just made.
        let _ = self.dir.set(made);
        Ok(self.dir.get().expect("set above or by the winner").path())
    }

    /// A fresh private subdirectory of the directory (made now if need be),
    /// removed when dropped.
    pub fn subdir(&self, prefix: &str) -> io::Result<tempfile::TempDir> {
        self.path()?;
        self.dir.get().expect("made above").subdir(prefix)
    }

    /// The directory if it was made, without making it.
    pub fn made(&self) -> Option<&Path> {
        self.dir.get().map(PrivateDir::path)
    }

    /// Where the directory is (or will be) made: the base it was given.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

/// Creates `path` exclusively (never an existing file, never through a
/// symlink), mode 0600 whatever the umask, and writes `bytes`.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

/// A new file in `dir` named `<prefix><random><suffix>`, created exclusively
/// with mode 0600, holding `bytes`; removed when the answer drops.
pub fn new_file_in(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    bytes: &[u8],
) -> io::Result<tempfile::TempPath> {
    let mut file = tempfile::Builder::new()
        .prefix(prefix)
        .suffix(suffix)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    file.as_file()
        .set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.flush()?;
    Ok(file.into_temp_path())
}

/// Makes a command's process create private files: umask 077 in the child.
pub fn private_umask(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: umask is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o077);
            Ok(())
        })
    }
}

/// Sweeps kcache's temp root in `TMPDIR` (for a backend whose directories
/// are made per compile, at its start).
pub fn sweep_temp_root() {
    if let Ok(root) = temp_root(&std::env::temp_dir()) {
        sweep_stale(&root, STALE_AFTER);
    }
}

/// The pid in a directory name `kcache-<family>-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let (_family, pid, _random) = (parts.next()?, parts.next()?, parts.next()?);
    pid.parse().ok().filter(|p| *p > 0)
}

/// Whether process `pid` exists (a process of another user counts).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process can be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes from `root` the leftover directories of dead processes older than
/// `max_age` (see the module docs); returns how many went.
pub fn sweep_stale(root: &Path, max_age: Duration) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let path = entry.path();
        // lstat: a symlink is skipped, never followed.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > max_age);
        if !meta.is_dir() || meta.uid() != euid() || !old || alive(pid) {
            continue;
        }
        // remove_dir_all does not follow symlinks below the directory.
        match fs::remove_dir_all(&path) {
            Ok(()) => swept += 1,
            Err(e) => tracing::debug!(error = %e, path = %path.display(), "cannot sweep"),
        }
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids_are_read_from_names() {
        assert_eq!(owner_pid("kcache-cc-123-abcd"), Some(123));
        assert_eq!(owner_pid("kcache-glslang-9-x-y"), Some(9));
        assert_eq!(owner_pid("kcache-cc-0-abcd"), None);
        assert_eq!(owner_pid("kcache-cc-abcd"), None);
        assert_eq!(owner_pid("other-cc-1-abcd"), None);
    }

    #[test]
    fn a_lazy_dir_is_made_once_on_first_use() {
        let base = tempfile::tempdir().unwrap();
        let lazy = LazyDir::new("t", base.path().to_path_buf());
        assert_eq!(lazy.made(), None);
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0);
        let first = lazy.path().unwrap().to_path_buf();
        assert_eq!(lazy.path().unwrap(), first);
        assert_eq!(lazy.made(), Some(first.as_path()));
        assert_eq!(fs::metadata(&first).unwrap().mode() & 0o7777, 0o700);
        drop(lazy);
        assert!(!first.exists(), "removed with its owner");
    }

    #[test]
    fn write_new_never_reuses_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write_new(&path, b"one").unwrap();
        let err = write_new(&path, b"two").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"one");
        let mode = fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn write_new_does_not_follow_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, b"theirs").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_new(&link, b"mine").is_err());
        assert_eq!(fs::read(&target).unwrap(), b"theirs");
    }
}
