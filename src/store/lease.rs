//! Leases: one compile per key across the processes sharing a store.
//!
//! A caller about to compile what the store missed takes the key's lease
//! ([`Store::lease`](super::Store::lease)); another process after the same
//! key waits for it (bounded), then looks the store up again. The default,
//! for stores that cannot coordinate (the memory store), grants every lease at
//! once: no single-flight, and never a wait.
//!
//! The persistent stores hold one lock file per key under `<root>/v1/leases/`
//! (named by the blake3 digest of the key, created 0600, never through a
//! symlink) with `flock`. The kernel drops a `flock` when its holder dies, so
//! a crashed compile never leaves a lease behind. The holder unlinks the file
//! before unlocking, and a taker checks after locking that the path still
//! names the file it locked, so lock files do not pile up and two holders of
//! one key are impossible.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{nofollow, StoreError};

/// A held lease: released when dropped.
pub trait Lease: Send + fmt::Debug {}

/// What [`Store::lease`](super::Store::lease) answered.
#[derive(Debug)]
pub enum LeaseGrant {
    /// Nobody held the key: compile it, then drop the lease.
    Free(Box<dyn Lease>),
    /// Another holder had it and let it go within the wait: look the store
    /// up again before compiling (the holder most likely stored it).
    AfterWait(Box<dyn Lease>),
    /// Another holder kept it past the wait: compile without a lease.
    TimedOut,
}

/// The lease of a store that does not coordinate: holds nothing.
#[derive(Debug)]
pub struct NoLease;

impl Lease for NoLease {}

/// Lock files under one directory, one per key.
#[derive(Debug)]
pub(crate) struct LockDir {
    dir: PathBuf,
}

/// A key's lock file, locked.
#[derive(Debug)]
struct Held {
    /// Holds the `flock`; closing it unlocks.
    _file: File,
    path: PathBuf,
}

impl Lease for Held {}

impl Drop for Held {
    fn drop(&mut self) {
        // Unlink first, unlock second (closing): a waiter that then locks the
        // unlinked file sees the path no longer names it and starts over.
        if let Err(e) = nofollow::remove_file(&self.path) {
            tracing::debug!(path = %self.path.display(), error = %e,
                "kcache store: could not remove a lease's lock file");
        }
    }
}

/// The directory of lock files under a store's layout directory.
pub(crate) const LEASES_DIR: &str = "leases";

/// The longest sleep between two tries of a held lease.
const MAX_BACKOFF: Duration = Duration::from_millis(50);

impl LockDir {
    /// Lock files in `dir` (created 0700 on the first lease).
    pub(crate) fn new(dir: PathBuf) -> Self {
        LockDir { dir }
    }

    /// Takes `key`'s lease, waiting up to `wait` for another holder (trying
    /// again with a backoff from 1 ms up to 50 ms).
    pub(crate) fn lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        let path = self.dir.join(blake3::hash(key).to_hex().as_str());
        let deadline = Instant::now() + wait;
        let mut backoff = Duration::from_millis(1);
        let mut waited = false;
        loop {
            if let Some(file) = self.try_lock(&path)? {
                let held = Box::new(Held { _file: file, path });
                return Ok(if waited {
                    LeaseGrant::AfterWait(held)
                } else {
                    LeaseGrant::Free(held)
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(LeaseGrant::TimedOut);
            }
            if !waited {
                tracing::debug!(lease = %path.display(),
                    "kcache store: waiting for another process's compile lease");
            }
            waited = true;
            std::thread::sleep(backoff.min(deadline - now));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// The locked lock file, or `None` while another holder has it.
    fn try_lock(&self, path: &Path) -> Result<Option<File>, StoreError> {
        loop {
            let file = self.open(path)?;
            let meta = file
                .metadata()
                .map_err(|e| StoreError::io("stat lease", path, e))?;
            if !meta.is_file() {
                // Not ours: never lock (or block on) a FIFO or a device.
                let _ = nofollow::remove_file(path);
                return Err(StoreError::io(
                    "lease",
                    path,
                    io::Error::new(io::ErrorKind::InvalidData, "not a regular file"),
                ));
            }
            // SAFETY: flock on an open descriptor has no memory-safety
            // conditions.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Ok(None);
                }
                return Err(StoreError::io("lock lease", path, e));
            }
            // The holder we waited for unlinked the file before unlocking:
            // only the file the path names now is the lease.
            match nofollow::metadata(path) {
                Ok(now) if now.dev() == meta.dev() && now.ino() == meta.ino() => {
                    return Ok(Some(file))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("stat lease", path, e)),
            }
        }
    }

    fn open(&self, path: &Path) -> Result<File, StoreError> {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_NONBLOCK;
        let opened = match nofollow::open(path, flags, 0o600) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match nofollow::create_dir(&self.dir, 0o700) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(StoreError::io("create lease directory", &self.dir, e)),
                }
                nofollow::open(path, flags, 0o600)
            }
            r => r,
        };
        let file = File::from(opened.map_err(|e| StoreError::io("open lease", path, e))?);
        // The umask never decides; a file of another user's is left as is.
        let _ = nofollow::set_mode(&file, 0o600);
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(g: LeaseGrant) -> Box<dyn Lease> {
        match g {
            LeaseGrant::Free(l) | LeaseGrant::AfterWait(l) => l,
            LeaseGrant::TimedOut => panic!("timed out"),
        }
    }

    #[test]
    fn a_held_lease_times_out_others_and_its_release_frees_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = LockDir::new(tmp.path().join("leases"));
        let first = dir.lease(b"k", Duration::ZERO).unwrap();
        assert!(matches!(first, LeaseGrant::Free(_)));
        // flock is per open file: a second open in this process contends
        // like another process would.
        assert!(matches!(
            dir.lease(b"k", Duration::from_millis(5)).unwrap(),
            LeaseGrant::TimedOut
        ));
        assert!(matches!(
            dir.lease(b"other", Duration::ZERO).unwrap(),
            LeaseGrant::Free(_)
        ));
        drop(held(first));
        assert!(matches!(
            dir.lease(b"k", Duration::ZERO).unwrap(),
            LeaseGrant::Free(_)
        ));
    }

    #[test]
    fn a_waiter_gets_the_lease_once_the_holder_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::sync::Arc::new(LockDir::new(tmp.path().join("leases")));
        let first = held(dir.lease(b"k", Duration::ZERO).unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let dir = std::sync::Arc::clone(&dir);
            std::thread::spawn(move || {
                tx.send(()).unwrap();
                dir.lease(b"k", Duration::from_secs(600)).unwrap()
            })
        };
        rx.recv().unwrap();
        drop(first);
        // Whether the waiter tried before the release or not, it holds the
        // lease now; only then is another taker refused.
        let second = held(waiter.join().unwrap());
        assert!(matches!(
            dir.lease(b"k", Duration::ZERO).unwrap(),
            LeaseGrant::TimedOut
        ));
        drop(second);
    }

    #[test]
    fn lock_files_are_private_and_removed_on_release() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let leases = tmp.path().join("leases");
        let dir = LockDir::new(leases.clone());
        let l = held(dir.lease(b"k", Duration::ZERO).unwrap());
        let names: Vec<_> = std::fs::read_dir(&leases).unwrap().collect();
        assert_eq!(names.len(), 1);
        let meta = names[0].as_ref().unwrap().metadata().unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dmeta = std::fs::metadata(&leases).unwrap();
        assert_eq!(dmeta.permissions().mode() & 0o777, 0o700);
        drop(l);
        assert_eq!(std::fs::read_dir(&leases).unwrap().count(), 0);
    }

    #[test]
    fn a_symlink_or_fifo_in_a_locks_place_is_an_error_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let leases = tmp.path().join("leases");
        std::fs::create_dir(&leases).unwrap();
        let name = blake3::hash(b"k").to_hex();
        let target = tmp.path().join("target");
        std::os::unix::fs::symlink(&target, leases.join(name.as_str())).unwrap();
        let dir = LockDir::new(leases.clone());
        assert!(dir.lease(b"k", Duration::ZERO).is_err());
        assert!(!target.exists(), "the symlink was not followed");
        let fifo = std::ffi::CString::new(
            leases
                .join(blake3::hash(b"f").to_hex().as_str())
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(dir.lease(b"f", Duration::ZERO).is_err());
    }

    #[test]
    fn a_lease_directory_that_cannot_be_made_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("leases");
        std::fs::write(&blocker, b"").unwrap();
        let dir = LockDir::new(blocker);
        assert!(dir.lease(b"k", Duration::ZERO).is_err());
    }
}
