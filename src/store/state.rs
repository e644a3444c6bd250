//! The file store's shared record: the running byte total and the counters
//! of every process, in one small file updated under `flock`.
//!
//! Layout (64 bytes, little endian): magic `kcstat1\n`, then the byte total,
//! hits, misses, evictions, errors, corrupt, and a flags word whose bit 0 says
//! the byte total is known (a fresh or damaged record does not know it, and
//! the next write reconciles it with a scan).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{nofollow, CounterValues};

const MAGIC: &[u8; 8] = b"kcstat1\n";
const LEN: usize = 64;
const BYTES_KNOWN: u64 = 1;

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
    // The mutex orders this process's threads: flock excludes other open
    // file descriptions only, not threads sharing this one.
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    file: Option<File>,
    local: Record,
}

impl SharedState {
    /// Opens (creating, mode 0600) the record at `path`; on failure the
    /// record is kept in memory and the failure logged.
    ///
    /// The record is opened without following a symlink and without
    /// blocking; anything but a regular file there (a symlink, a FIFO, a
    /// socket, an empty directory) is removed and a fresh record made in its
    /// place.
    pub fn open(path: &Path) -> SharedState {
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
            inner: Mutex::new(Inner {
                file,
                local: Record::default(),
            }),
        }
    }

    /// Reads, changes and writes the record atomically with respect to every
    /// process; returns the record as written.
    pub fn update(&self, f: impl Fn(&mut Record)) -> Record {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(file) = &inner.file {
            match locked_update(file, &f) {
                Ok(r) => return r,
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
        inner.local
    }

    /// Reads the record.
    pub fn read(&self) -> Record {
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

fn locked_update(file: &File, f: &impl Fn(&mut Record)) -> io::Result<Record> {
    let fd = file.as_raw_fd();
    // SAFETY: flock on an open descriptor has no memory-safety preconditions.
    if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
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
    Ok(rec)
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
        let a = SharedState::open(&p);
        assert!(!a.read().bytes_known);
        a.update(|r| {
            r.bytes = 100;
            r.bytes_known = true;
        });
        let b = SharedState::open(&p);
        b.update(|r| r.bytes += 5);
        assert_eq!(a.read().bytes, 105);
        assert!(a.read().bytes_known);
    }

    #[test]
    fn a_symlink_or_fifo_at_the_state_path_is_replaced_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = t.path().join("state");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let s = SharedState::open(&p);
        s.update(|r| r.bytes = 3);
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
        drop(s);
        std::fs::remove_file(&p).unwrap();
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let s = SharedState::open(&p);
        s.update(|r| r.bytes = 4);
        assert_eq!(s.read().bytes, 4);
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
    }

    #[test]
    fn falls_back_to_memory() {
        let s = SharedState::open(Path::new("/nonexistent/dir/state"));
        s.update(|r| r.bytes = 7);
        assert_eq!(s.read().bytes, 7);
    }
}
