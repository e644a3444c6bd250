//! The file store's shared record: the running byte total and the counters
//! of every process, in one small file updated under `flock`.
//!
//! Layout (64 bytes, little endian): magic `kcstat1\n`, then the byte total,
//! hits, misses, evictions, errors, corrupt, and a flags word whose bit 0 says
//! the byte total is known (a fresh or damaged record does not know it, and
//! the next write reconciles it with a scan).
//!
//! The lock is waited for a bounded time only (review 2026-12-02, store F4:
//! a holder stopped inside its update, by SIGSTOP or a debugger, hung every
//! process on the store, hits included). When the wait runs out the update
//! is skipped: the record holds statistics and a byte total that a scan can
//! rebuild, so what this process could not write is folded into its next
//! update that gets the lock, with the byte total marked unknown.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{nofollow, CounterValues, StoreError};

const MAGIC: &[u8; 8] = b"kcstat1\n";
const LEN: usize = 64;
const BYTES_KNOWN: u64 = 1;

/// How long an update waits, by default, for another process's lock: holders
/// keep it for two 64-byte I/Os, so only a stopped or wedged one comes close.
pub(crate) const DEFAULT_LOCK_WAIT: Duration = Duration::from_millis(500);

/// The longest sleep between two tries of a held lock.
const MAX_BACKOFF: Duration = Duration::from_millis(20);

/// One reading of the shared record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub bytes: u64,
    pub bytes_known: bool,
    pub counters: CounterValues,
}

impl Record {
    fn decode(buf: &[u8]) -> Record {
        if buf.len() < LEN || &buf[..8] != MAGIC {
            return Record::default();
        }
        let word = |i: usize| u64::from_le_bytes(buf[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        Record {
            bytes: word(0),
            counters: CounterValues {
                hits: word(1),
                misses: word(2),
                evictions: word(3),
                errors: word(4),
                corrupt: word(5),
            },
            bytes_known: word(6) & BYTES_KNOWN != 0,
        }
    }

    fn encode(&self) -> [u8; LEN] {
        let mut buf = [0u8; LEN];
        buf[..8].copy_from_slice(MAGIC);
        let c = &self.counters;
        let words = [
            self.bytes,
            c.hits,
            c.misses,
            c.evictions,
            c.errors,
            c.corrupt,
            if self.bytes_known { BYTES_KNOWN } else { 0 },
        ];
        for (i, w) in words.iter().enumerate() {
            buf[8 + 8 * i..16 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        buf
    }

    /// Adds counts taken from a process's counters.
    pub fn absorb(&mut self, c: CounterValues) {
        let s = &mut self.counters;
        s.hits = s.hits.saturating_add(c.hits);
        s.misses = s.misses.saturating_add(c.misses);
        s.evictions = s.evictions.saturating_add(c.evictions);
        s.errors = s.errors.saturating_add(c.errors);
        s.corrupt = s.corrupt.saturating_add(c.corrupt);
    }
}

/// The shared record, or (when its file cannot be opened, e.g. on a
/// read-only root) a process-local stand-in.
#[derive(Debug)]
pub(crate) struct SharedState {
    path: PathBuf,
    /// The bound on a wait for another process's lock.
    wait: Duration,
    // The mutex orders this process's threads: flock excludes other open
    // file descriptions only, not threads sharing this one.
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    file: Option<File>,
    local: Record,
    /// Counts of updates skipped while another process held the lock.
    missed: CounterValues,
    /// A skipped update changed the byte total: the next one marks it unknown.
    missed_bytes: bool,
    /// A wait ran out and no update has had the lock since: later ones try
    /// once and do not wait, so a process waits out one bound in all, not
    /// one per update.
    contended: bool,
    /// The timeout was logged (once per store).
    warned: bool,
}

impl SharedState {
    /// Opens (creating, mode 0600) the record at `path`; on failure the
    /// record is kept in memory and the failure logged.
    ///
    /// The record is opened without following a symlink and without
    /// blocking; anything but a regular file there (a symlink, a FIFO, a
    /// socket, an empty directory) is removed and a fresh record made in its
    /// place.
    /// An update waits up to `wait` for another process's lock.
    pub fn open(path: &Path, wait: Duration) -> SharedState {
        let file = match open_regular(path) {
            Err(e)
                if e.kind() == io::ErrorKind::InvalidData
                    || matches!(
                        e.raw_os_error(),
                        Some(libc::ELOOP | libc::EISDIR | libc::ENXIO)
                    ) =>
            {
                tracing::warn!(path = %path.display(), error = %e,
                    "kcache store: replacing what is not a state file");
                let removed = if e.raw_os_error() == Some(libc::EISDIR) {
                    nofollow::remove_dir(path)
                } else {
                    nofollow::remove_file(path)
                };
                removed.and_then(|()| open_regular(path))
            }
            r => r,
        };
        let file = match file {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e,
                    "kcache store: shared state unavailable; keeping it in this process");
                None
            }
        };
        SharedState {
            path: path.to_path_buf(),
            wait,
            inner: Mutex::new(Inner {
                file,
                local: Record::default(),
                missed: CounterValues::default(),
                missed_bytes: false,
                contended: false,
                warned: false,
            }),
        }
    }

    /// Reads, changes and writes the record atomically with respect to every
    /// process; returns the record as written. An error when another process
    /// held the lock past the bound: then `f` changed nothing shared (its
    /// counts wait for the next update that gets the lock).
    pub fn update(&self, f: impl Fn(&mut Record)) -> Result<Record, StoreError> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(file) = &inner.file {
            let wait = if inner.contended {
                Duration::ZERO
            } else {
                self.wait
            };
            let (missed, missed_bytes) = (inner.missed, inner.missed_bytes);
            let fold = |r: &mut Record| {
                r.absorb(missed);
                if missed_bytes {
                    r.bytes_known = false;
                }
                f(r);
            };
            match locked_update(file, wait, &fold) {
                Ok(Some(r)) => {
                    inner.missed = CounterValues::default();
                    inner.missed_bytes = false;
                    inner.contended = false;
                    return Ok(r);
                }
                Ok(None) => {
                    // What `f` would have added is kept for the next
                    // update: `f` run on a blank record gives its counts,
                    // and whether it moves the byte total (from a mid-range
                    // value, so a subtraction shows too).
                    const MID: u64 = 1 << 62;
                    let mut scratch = Record {
                        bytes: MID,
                        ..Record::default()
                    };
                    f(&mut scratch);
                    let mut missed = Record {
                        counters: inner.missed,
                        ..Record::default()
                    };
                    missed.absorb(scratch.counters);
                    inner.missed = missed.counters;
                    inner.missed_bytes |= scratch.bytes != MID || scratch.bytes_known;
                    inner.contended = true;
                    if !inner.warned {
                        inner.warned = true;
                        tracing::warn!(path = %self.path.display(), wait = ?self.wait,
                            "kcache store: another process holds the store's state lock \
                             (a stopped kcache?); going on without the shared counters \
                             and byte total");
                    }
                    return Err(StoreError::StateBusy {
                        path: self.path.clone(),
                        waited: self.wait,
                    });
                }
                Err(e) => {
                    // From now on the record lives in this process, starting
                    // with an unknown byte total so the next write scans.
                    tracing::debug!(path = %self.path.display(), error = %e,
                        "kcache store: shared state write failed; keeping it in this process");
                    inner.file = None;
                }
            }
        }
        f(&mut inner.local);
        Ok(inner.local)
    }

    /// Reads the record.
    pub fn read(&self) -> Result<Record, StoreError> {
        self.update(|_| {})
    }
}

/// Opens (creating) the regular file at `path` read-write, mode 0600;
/// `InvalidData` when something else is there.
fn open_regular(path: &Path) -> io::Result<File> {
    let fd = nofollow::open(path, libc::O_RDWR | libc::O_CREAT | libc::O_NONBLOCK, 0o600)?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    if meta.permissions().mode() & 0o7777 != 0o600 {
        nofollow::set_mode(&file, 0o600)?;
    }
    Ok(file)
}

/// The update under the lock, or `None` when another process held it for
/// all of `wait` (tried with a backoff from 1 ms up to 20 ms).
fn locked_update(
    file: &File,
    wait: Duration,
    f: &impl Fn(&mut Record),
) -> io::Result<Option<Record>> {
    let fd = file.as_raw_fd();
    let deadline = Instant::now() + wait;
    let mut backoff = Duration::from_millis(1);
    loop {
        // SAFETY: flock on an open descriptor has no memory-safety preconditions.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => {}
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        std::thread::sleep(backoff.min(deadline - now));
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    struct Unlock(i32);
    impl Drop for Unlock {
        fn drop(&mut self) {
            // SAFETY: as above; the descriptor outlives this guard.
            unsafe { libc::flock(self.0, libc::LOCK_UN) };
        }
    }
    let _unlock = Unlock(fd);
    let mut buf = [0u8; LEN];
    let n = read_full_at(file, &mut buf)?;
    let mut rec = Record::decode(&buf[..n]);
    f(&mut rec);
    file.write_all_at(&rec.encode(), 0)?;
    Ok(Some(rec))
}

fn read_full_at(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_and_damage_reads_as_unknown() {
        let r = Record {
            bytes: 12,
            bytes_known: true,
            counters: CounterValues {
                hits: 1,
                misses: 2,
                evictions: 3,
                errors: 4,
                corrupt: 5,
            },
        };
        assert_eq!(Record::decode(&r.encode()), r);
        let mut bad = r.encode();
        bad[0] ^= 1;
        assert_eq!(Record::decode(&bad), Record::default());
        assert_eq!(Record::decode(&bad[..10]), Record::default());
    }

    #[test]
    fn updates_persist_across_opens() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state");
        let a = SharedState::open(&p, DEFAULT_LOCK_WAIT);
        assert!(!a.read().unwrap().bytes_known);
        a.update(|r| {
            r.bytes = 100;
            r.bytes_known = true;
        })
        .unwrap();
        let b = SharedState::open(&p, DEFAULT_LOCK_WAIT);
        b.update(|r| r.bytes += 5).unwrap();
        assert_eq!(a.read().unwrap().bytes, 105);
        assert!(a.read().unwrap().bytes_known);
    }

    #[test]
    fn a_symlink_or_fifo_at_the_state_path_is_replaced_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = t.path().join("state");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let s = SharedState::open(&p, DEFAULT_LOCK_WAIT);
        s.update(|r| r.bytes = 3).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
        drop(s);
        std::fs::remove_file(&p).unwrap();
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let s = SharedState::open(&p, DEFAULT_LOCK_WAIT);
        s.update(|r| r.bytes = 4).unwrap();
        assert_eq!(s.read().unwrap().bytes, 4);
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
    }

    #[test]
    fn falls_back_to_memory() {
        let s = SharedState::open(Path::new("/nonexistent/dir/state"), DEFAULT_LOCK_WAIT);
        s.update(|r| r.bytes = 7).unwrap();
        assert_eq!(s.read().unwrap().bytes, 7);
    }

    /// Review 2026-12-02, store F4: a holder stopped inside its update hung
    /// every other process on the store.
    #[test]
    fn a_state_lock_held_past_the_bound_skips_the_update_and_folds_it_in_later() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state");
        let s = std::sync::Arc::new(SharedState::open(&p, Duration::from_millis(20)));
        s.update(|r| {
            r.bytes = 100;
            r.bytes_known = true;
        })
        .unwrap();
        // flock is per open file description: this one stands for a stopped
        // holder in another process.
        let holder = File::open(&p).unwrap();
        // SAFETY: flock on an open descriptor.
        assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = std::sync::Arc::clone(&s);
        std::thread::spawn(move || {
            let first = s2.update(|r| {
                r.bytes = r.bytes.saturating_add_signed(-40);
                r.counters.hits += 2;
            });
            // Once a wait has run out, later updates do not wait again.
            let second = s2.update(|r| r.counters.misses += 1);
            tx.send((first, second)).unwrap();
        });
        let (first, second) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("an update waited on a held state lock without a bound");
        for r in [first, second] {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), super::super::StoreErrorKind::Busy, "{e}");
        }
        drop(holder);
        let rec = s.update(|r| r.counters.hits += 1).unwrap();
        assert_eq!(
            (rec.counters.hits, rec.counters.misses),
            (3, 1),
            "counts kept"
        );
        assert!(
            !rec.bytes_known,
            "a skipped byte change leaves the total unknown"
        );
    }
}
