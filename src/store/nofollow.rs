//! Filesystem calls that never follow a symlink, in any component of the
//! path.
//!
//! The stores' paths are built from the root as [`super::root`] resolved it
//! (a real directory, reached without symlinks), so a symlink anywhere in
//! them was planted below the root: following it could read, write or delete
//! someone else's files. Paths are resolved with
//! `openat2(RESOLVE_NO_SYMLINKS)`; where the kernel is too old or a sandbox
//! refuses `openat2`, each directory is opened in turn with `O_NOFOLLOW`.
//! (Linux only: `O_PATH` and `openat2` are Linux's.) Calls that name a file (unlink, rename, mkdir)
//! act through a handle on its directory, so only the last component is
//! looked up by name, and that lookup never follows a symlink either.

use std::ffi::{CStr, CString, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful open and is owned by
    // nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Cleared when the system refuses `openat2` (an old kernel, a sandbox).
#[cfg(target_os = "linux")]
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// Opens `path` with `flags` (and `mode` when creating), refusing a symlink
/// in any component, the last one included (`ELOOP`), except that
/// `O_PATH | O_NOFOLLOW` opens a symlink itself.
pub(crate) fn open(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    #[cfg(target_os = "linux")]
    if let Some(r) = openat2(libc::AT_FDCWD, path, flags, mode, libc::RESOLVE_NO_SYMLINKS) {
        return r;
    }
    walk(path, flags, mode)
}

/// Opens `rel` beneath the directory `dir` (a descriptor held open, so no
/// path walk from `/`): `rel` is plain names only, and no component, the last
/// one included, may be a symlink (`ELOOP`, or `ENOTDIR` where a directory
/// was wanted); nothing outside `dir` is ever reached.
pub(crate) fn open_beneath(
    dir: &impl AsRawFd,
    rel: &Path,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a path beneath a store directory is plain names",
        ));
    }
    let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    #[cfg(target_os = "linux")]
    if let Some(r) = openat2(
        dir.as_raw_fd(),
        rel,
        flags,
        0,
        libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    ) {
        return r;
    }
    walk_beneath(dir, rel, flags)
}

/// [`open_beneath`] one name at a time from `dir`, as [`walk`] does from `/`.
fn walk_beneath(dir: &impl AsRawFd, rel: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let (parent, name) = split(rel)?;
    let mut at: Option<OwnedFd> = None;
    for comp in parent.iter().flat_map(|p| p.components()) {
        let c = cstring(comp.as_os_str().as_bytes())?;
        let at_fd = at.as_ref().map_or(dir.as_raw_fd(), AsRawFd::as_raw_fd);
        // SAFETY: as in `walk`.
        let fd = unsafe {
            libc::openat(
                at_fd,
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        at = Some(check(fd).map(owned)?);
    }
    let at_fd = at.as_ref().map_or(dir.as_raw_fd(), AsRawFd::as_raw_fd);
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    check(unsafe { libc::openat(at_fd, name.as_ptr(), flags) }).map(owned)
}

/// `openat2(at, path)` with `resolve`; `None` (and `openat2` off for the
/// rest of the process) where the system refuses the call.
#[cfg(target_os = "linux")]
fn openat2(
    at: libc::c_int,
    path: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
    resolve: u64,
) -> Option<io::Result<OwnedFd>> {
    if !OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let c = match cstring(path.as_os_str().as_bytes()) {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: an all-zero open_how is valid (no flags, no resolve bits).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 {
        u64::from(mode)
    } else {
        0
    };
    how.resolve = resolve;
    // SAFETY: `c` is a NUL-terminated path and `how` a valid open_how of the
    // size passed, both alive for the call; `at` is a directory descriptor
    // or AT_FDCWD.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if rc >= 0 {
        return Some(Ok(owned(rc as libc::c_int)));
    }
    let e = io::Error::last_os_error();
    // A sandbox refuses an unknown call with ENOSYS or EPERM; EPERM is also
    // what O_NOATIME on another user's file gets, which the caller handles.
    let refused = match e.raw_os_error() {
        Some(libc::ENOSYS | libc::E2BIG) => true,
        Some(libc::EPERM) => flags & libc::O_NOATIME == 0,
        _ => false,
    };
    if !refused {
        return Some(Err(e));
    }
    OPENAT2.store(false, Ordering::Relaxed);
    None
}

/// [`open`] one directory at a time.
fn walk(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let (dir, name) = split(path)?;
    let at = match dir {
        Some(dir) => Some(walk_dirs(dir)?),
        None => None,
    };
    let at_fd = at.as_ref().map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: a valid directory descriptor (or AT_FDCWD) and a
    // NUL-terminated name.
    let fd = unsafe { libc::openat(at_fd, name.as_ptr(), flags, libc::c_uint::from(mode)) };
    check(fd).map(owned)
}

fn walk_dirs(dir: &Path) -> io::Result<OwnedFd> {
    let mut at: Option<OwnedFd> = None;
    for comp in dir.components() {
        let name: &[u8] = match comp {
            Component::RootDir => b"/",
            Component::CurDir => continue,
            Component::Normal(n) => n.as_bytes(),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "store paths have no `..`",
                ))
            }
        };
        let c = cstring(name)?;
        let at_fd = at.as_ref().map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
        // SAFETY: as in `walk`.
        let fd = unsafe {
            libc::openat(
                at_fd,
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        at = Some(check(fd).map(owned)?);
    }
    match at {
        Some(fd) => Ok(fd),
        None => open_cwd(),
    }
}

fn open_cwd() -> io::Result<OwnedFd> {
    // SAFETY: a constant NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c".".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    check(fd).map(owned)
}

/// The directory part (if any) and the last component of `path`.
fn split(path: &Path) -> io::Result<(Option<&Path>, CString)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a store path names no file"))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    Ok((dir, cstring(name.as_bytes())?))
}

/// A handle on `path`'s directory and its last component's name.
fn parent(path: &Path) -> io::Result<(OwnedFd, CString)> {
    let (dir, name) = split(path)?;
    let fd = match dir {
        Some(dir) => open(dir, libc::O_PATH | libc::O_DIRECTORY, 0)?,
        None => open_cwd()?,
    };
    Ok((fd, name))
}

/// The metadata of `path` itself (a symlink's own, if it is one).
pub(crate) fn metadata(path: &Path) -> io::Result<Metadata> {
    File::from(open(path, libc::O_PATH, 0)?).metadata()
}

/// Unlinks a file (or a symlink, FIFO, socket: never what one points to).
pub(crate) fn remove_file(path: &Path) -> io::Result<()> {
    let (dir, name) = parent(path)?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) }).map(drop)
}

/// Removes an empty directory.
pub(crate) fn remove_dir(path: &Path) -> io::Result<()> {
    let (dir, name) = parent(path)?;
    // SAFETY: as in `remove_file`.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) }).map(drop)
}

/// Renames `from` to `to`, replacing `to` atomically.
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    let (fd, fname) = parent(from)?;
    let (td, tname) = parent(to)?;
    // SAFETY: valid directory descriptors and NUL-terminated names.
    check(unsafe {
        libc::renameat(
            fd.as_raw_fd(),
            fname.as_ptr(),
            td.as_raw_fd(),
            tname.as_ptr(),
        )
    })
    .map(drop)
}

/// Links `to` to the file at `from` (never through a symlink), failing if
/// `to` exists.
pub(crate) fn hard_link(from: &Path, to: &Path) -> io::Result<()> {
    let (fd, fname) = parent(from)?;
    let (td, tname) = parent(to)?;
    // SAFETY: as in `rename`; flags 0: a symlink at `from` is linked itself.
    check(unsafe {
        libc::linkat(
            fd.as_raw_fd(),
            fname.as_ptr(),
            td.as_raw_fd(),
            tname.as_ptr(),
            0,
        )
    })
    .map(drop)
}

/// Creates one directory with exactly `mode` (not narrowed by the umask).
pub(crate) fn create_dir(path: &Path, mode: libc::mode_t) -> io::Result<()> {
    let (dir, name) = parent(path)?;
    // SAFETY: as in `remove_file`.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) })?;
    let made = open_at(&dir, &name, libc::O_RDONLY | libc::O_DIRECTORY)?;
    set_mode(&made, mode)
}

fn open_at(dir: &OwnedFd, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    check(fd).map(owned)
}

/// Sets `fd`'s permission bits to exactly `mode`.
pub(crate) fn set_mode(fd: &impl AsRawFd, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: fchmod on an open descriptor has no memory-safety conditions.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
}

/// Creates a new file for writing, failing if anything exists at `path`;
/// mode exactly `mode`.
pub(crate) fn create_new(path: &Path, mode: libc::mode_t) -> io::Result<File> {
    let f = File::from(open(
        path,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        mode,
    )?);
    set_mode(&f, mode)?;
    Ok(f)
}

/// The names in the directory at `path` (never one reached by a symlink).
pub(crate) fn read_dir(path: &Path) -> io::Result<Vec<OsString>> {
    let fd = open(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    // SAFETY: fdopendir takes ownership of a valid directory descriptor.
    let dir = unsafe { libc::fdopendir(fd.as_raw_fd()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(fd);
    struct Close(*mut libc::DIR);
    impl Drop for Close {
        fn drop(&mut self) {
            // SAFETY: the stream is open and closed exactly once.
            unsafe { libc::closedir(self.0) };
        }
    }
    let dir = Close(dir);
    let mut names = Vec::new();
    loop {
        // readdir reports an error only through errno.
        // SAFETY: errno is thread-local.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: the stream is open; the entry is read before the next call.
        let ent = unsafe { libc::readdir(dir.0) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(0) | None => Ok(names),
                _ => Err(e),
            };
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name.to_vec()));
        }
    }
}

/// Opens the directory at `path` to fsync it.
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    File::from(open(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?).sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt};

    #[test]
    fn no_component_is_followed() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("f"), b"x").unwrap();
        let link = t.path().join("link");
        symlink(&real, &link).unwrap();
        // ELOOP, or ENOTDIR where a directory was asked for and a symlink
        // found.
        let loops = |r: io::Result<()>| {
            let e = r.unwrap_err().raw_os_error();
            assert!(matches!(e, Some(libc::ELOOP | libc::ENOTDIR)), "{e:?}");
        };
        loops(remove_file(&link.join("f")));
        loops(read_dir(&link).map(drop));
        loops(create_new(&link.join("g"), 0o600).map(drop));
        loops(rename(&real.join("f"), &link.join("h")));
        assert!(real.join("f").exists());
        // The symlink itself can be examined and removed.
        assert!(metadata(&link).unwrap().file_type().is_symlink());
        remove_file(&link).unwrap();
        assert!(real.is_dir());
        assert_eq!(read_dir(&real).unwrap(), vec![OsString::from("f")]);
    }

    #[test]
    fn the_walk_refuses_symlinks_too() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("f"), b"x").unwrap();
        let link = t.path().join("link");
        symlink(&real, &link).unwrap();
        let e = walk(&link.join("f"), libc::O_RDONLY | libc::O_NOFOLLOW, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        let e = walk(&link, libc::O_RDONLY | libc::O_NOFOLLOW, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        walk(&real.join("f"), libc::O_RDONLY | libc::O_NOFOLLOW, 0).unwrap();
    }

    #[test]
    fn nothing_beneath_a_held_directory_is_followed_or_left() {
        let t = tempfile::tempdir().unwrap();
        let held = t.path().join("held");
        fs::create_dir_all(held.join("aa")).unwrap();
        fs::write(held.join("aa/f"), b"x").unwrap();
        fs::write(t.path().join("outside"), b"y").unwrap();
        symlink(t.path().join("outside"), held.join("aa/link")).unwrap();
        symlink(held.join("aa"), held.join("bb")).unwrap();
        let dir = open(&held, libc::O_PATH | libc::O_DIRECTORY, 0).unwrap();
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        for walked in [false, true] {
            let at = |rel: &str| {
                let rel = Path::new(rel);
                if walked {
                    walk_beneath(&dir, rel, flags)
                } else {
                    open_beneath(&dir, rel, flags)
                }
            };
            at("aa/f").unwrap();
            let errno = |rel: &str| at(rel).unwrap_err().raw_os_error();
            assert_eq!(errno("aa/link"), Some(libc::ELOOP), "walked: {walked}");
            assert!(
                matches!(errno("bb/f"), Some(libc::ELOOP | libc::ENOTDIR)),
                "walked: {walked}"
            );
        }
        for rel in ["../outside", "aa/../../outside", "/etc/passwd"] {
            let e = open_beneath(&dir, Path::new(rel), flags).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{rel}");
        }
    }

    #[test]
    fn modes_are_exact_whatever_the_umask() {
        // Modes the usual umask (022) would narrow: only the explicit chmod
        // gives them.
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        create_dir(&d, 0o777).unwrap();
        let f = d.join("f");
        create_new(&f, 0o666).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o7777, 0o777);
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o666);
    }
}
