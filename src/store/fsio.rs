//! The filesystem calls the file store makes, behind a trait so tests can
//! inject failures (a full disk, a read-only root, a concurrent deleter) and
//! pauses (a writer stopped between its temp write and its rename).
//!
//! Every method has the real behaviour as its default: [`RealFs`] is the empty
//! implementation, and a test's layer overrides only the calls it disturbs,
//! delegating the rest to the defaults.

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::nofollow;

/// The filesystem calls of the file store. Paths are absolute.
pub trait FsIo: Send + Sync + fmt::Debug {
    /// Opens an entry for reading without following a symlink in any
    /// component, without blocking (a FIFO planted at an entry path opens at
    /// once; the store then sees it is not a regular file) and, where the
    /// system allows, without updating its access time (the store stamps
    /// access times itself, and `verify` or `ls` must not reorder the LRU).
    fn open_read(&self, path: &Path) -> io::Result<File> {
        open_read_noatime(|flags| nofollow::open(path, flags, 0))
    }

    /// Opens an entry for reading as [`FsIo::open_read`] does, by its name
    /// `rel` beneath the directory `dir` the store holds open (its
    /// `entries/`): nothing outside `dir` is reached and no symlink is
    /// followed. `path` is the same entry's absolute path; a layer that
    /// disturbs [`FsIo::open_read`] can open that instead.
    fn open_read_beneath(&self, dir: &File, rel: &Path, path: &Path) -> io::Result<File> {
        let _ = path;
        open_read_noatime(|flags| nofollow::open_beneath(dir, rel, flags))
    }

    /// Sets `file`'s access time, leaving its modification time alone.
    fn set_atime(&self, file: &File, atime: SystemTime) -> io::Result<()> {
        futimens_atime(file, atime)
    }

    /// Creates a new file at `path` for writing, failing if anything exists
    /// there; mode exactly 0600, whatever the umask.
    fn create_new(&self, path: &Path) -> io::Result<File> {
        nofollow::create_new(path, 0o600)
    }

    /// Writes all of `buf` to `file`.
    fn write_all(&self, file: &mut File, buf: &[u8]) -> io::Result<()> {
        file.write_all(buf)
    }

    /// Flushes `file`'s data to stable storage.
    fn sync_file(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    /// Renames `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        nofollow::rename(from, to)
    }

    /// Links `to` to the file at `from`, failing if `to` exists.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        nofollow::hard_link(from, to)
    }

    /// Unlinks a file (a symlink itself, never what it points to).
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        nofollow::remove_file(path)
    }

    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        nofollow::remove_dir(path)
    }

    /// The metadata of `path` itself (symlinks are not followed, in any
    /// component).
    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        nofollow::metadata(path)
    }

    /// The names in a directory (never one reached through a symlink).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        nofollow::read_dir(path)
    }

    /// Creates one directory, mode exactly 0700.
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        nofollow::create_dir(path, 0o700)
    }

    /// Flushes a directory's entries (a rename into it) to stable storage.
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        nofollow::sync_dir(path)
    }
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl FsIo for RealFs {}

/// Cleared the first time `O_NOATIME` is refused (a file we do not own).
static NOATIME_ALLOWED: AtomicBool = AtomicBool::new(true);

/// `O_NOATIME`, where the system has it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NOATIME: i32 = libc::O_NOATIME;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NOATIME: i32 = 0;

/// Opens with `open` (given the flags), without blocking and, where
/// allowed, without updating the access time.
fn open_read_noatime(open: impl Fn(libc::c_int) -> io::Result<OwnedFd>) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NONBLOCK;
    if O_NOATIME != 0 && NOATIME_ALLOWED.load(Ordering::Relaxed) {
        match open(flags | O_NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                NOATIME_ALLOWED.store(false, Ordering::Relaxed);
            }
            r => return r.map(File::from),
        }
    }
    open(flags).map(File::from)
}

fn futimens_atime(file: &File, atime: SystemTime) -> io::Result<()> {
    let since = atime
        .duration_since(UNIX_EPOCH)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "access time before 1970"))?;
    let times = [
        libc::timespec {
            tv_sec: since.as_secs() as libc::time_t,
            tv_nsec: since.subsec_nanos() as _,
        },
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
    ];
    // SAFETY: the descriptor is open for the duration of the call and `times`
    // points to two initialised timespecs, as futimens requires.
    let rc = unsafe { libc::futimens(file.as_raw_fd(), times.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

    #[test]
    fn set_atime_leaves_mtime_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = RealFs.create_new(&p).unwrap();
        RealFs.write_all(&mut f, b"x").unwrap();
        let before = fs::metadata(&p).unwrap();
        let t = UNIX_EPOCH + Duration::from_secs(1_000_000);
        RealFs.set_atime(&f, t).unwrap();
        let after = fs::metadata(&p).unwrap();
        assert_eq!(after.atime(), 1_000_000);
        assert_eq!(after.mtime(), before.mtime());
        assert_eq!(after.mtime_nsec(), before.mtime_nsec());
        assert_eq!(after.mode() & 0o777, 0o600);
    }

    #[test]
    fn open_read_refuses_symlinks_and_does_not_stamp_atime() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, b"x").unwrap();
        let f = File::open(&p).unwrap();
        RealFs
            .set_atime(&f, UNIX_EPOCH + Duration::from_secs(5))
            .unwrap();
        let mut r = RealFs.open_read(&p).unwrap();
        io::Read::read_to_end(&mut r, &mut Vec::new()).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().atime(), 5);
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(
            RealFs.open_read(&link).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
    }
}
