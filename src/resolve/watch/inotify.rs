//! The Linux feed: one inotify instance, and the mount table polled with it.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Seek};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustc_hash::FxHashMap;

use super::{Change, Event, Feed};

/// Everything that can change what a path resolves to or what it holds.
const MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DONT_FOLLOW;

/// Reports that change a directory's entries.
const ENTRY: u32 = libc::IN_CREATE | libc::IN_DELETE | libc::IN_MOVED_FROM | libc::IN_MOVED_TO;

/// Filesystems whose every change goes through this kernel, so inotify
/// reports it (network and FUSE filesystems can change underneath).
const LOCAL: [u32; 6] = [
    0xef53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683e, // btrfs
    0x0102_1994, // tmpfs
    0x794c_7630, // overlayfs
    0x8584_58f6, // ramfs
];

/// The size of one report's fixed part.
const HEADER: usize = 16;

pub(super) struct Inotify {
    fd: OwnedFd,
    /// The mount table of the namespace of the thread that made it:
    /// `poll` flags it when the table changes, which moves what paths
    /// resolve to without any inotify report.
    mounts: File,
    /// That namespace (see [`mount_ns`]).
    pub(super) ns: (u64, u64),
    buf: Vec<u8>,
    local: FxHashMap<u64, bool>,
}

/// Set in a child of `fork`: it shares the parent's inotify description, so
/// a report it read would be one the parent never sees. A child never
/// reads it (it re-validates by stat).
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked() {
    FORKED.store(true, Ordering::SeqCst);
}

/// Whether this process is a child of the one that made the instance.
pub(super) fn forked_since() -> bool {
    FORKED.load(Ordering::SeqCst)
}

/// The calling thread's mount namespace. A thread may have its own
/// (`unshare(CLONE_NEWNS)`, `setns`), and `/proc/self` shows the main
/// thread's, so both this and the table come from `/proc/thread-self`.
pub(super) fn mount_ns() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/thread-self/ns/mnt").ok()?;
    Some((m.dev(), m.ino()))
}

impl Inotify {
    pub(super) fn new() -> Option<Inotify> {
        // SAFETY: `forked` is an `extern "C"` function that only stores to
        // an atomic, which is async-signal-safe, as a child handler must be.
        if unsafe { libc::pthread_atfork(None, None, Some(forked)) } != 0 {
            return None;
        }
        // SAFETY: no pointer is passed; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just returned open by `inotify_init1` and is owned
        // by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ns = mount_ns()?;
        let mounts = File::open("/proc/thread-self/mountinfo").ok()?;
        // Opened in the namespace it was asked for, or not used.
        if mount_ns() != Some(ns) {
            return None;
        }
        Some(Inotify {
            fd,
            mounts,
            ns,
            buf: vec![0; 64 * 1024],
            local: FxHashMap::default(),
        })
    }

    /// Reads the mount table through, which clears its `poll` flag.
    fn reread_mounts(&mut self) {
        let mut sink = Vec::new();
        if self.mounts.rewind().is_ok() {
            let _ = self.mounts.read_to_end(&mut sink);
        }
    }

    /// Reads every queued report; `false` when one was lost or unreadable.
    fn read_all(&mut self, out: &mut Vec<Event>) -> bool {
        loop {
            // SAFETY: `buf` is valid for writes of its length for the call.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n < 0 {
                return std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock;
            }
            if n == 0 || !parse(&self.buf[..n as usize], out) {
                return false;
            }
        }
    }
}

/// Appends the reports in `bytes` to `out`; `false` when one says reports
/// were lost, or the bytes do not parse.
pub(super) fn parse(mut bytes: &[u8], out: &mut Vec<Event>) -> bool {
    let word = |b: &[u8], at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    while !bytes.is_empty() {
        if bytes.len() < HEADER {
            return false;
        }
        let watch = word(bytes, 0) as i32;
        let mask = word(bytes, 4);
        let len = word(bytes, 12) as usize;
        let Some(name) = bytes.get(HEADER..HEADER + len) else {
            return false;
        };
        bytes = &bytes[HEADER + len..];
        if mask & libc::IN_Q_OVERFLOW != 0 {
            return false;
        }
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        let change = if mask & libc::IN_IGNORED != 0 {
            Change::Gone
        } else if name.is_empty() {
            Change::Itself
        } else {
            let name = std::ffi::OsStr::from_bytes(name).to_os_string();
            if mask & ENTRY != 0 {
                Change::Entry(name)
            } else {
                Change::Child(name)
            }
        };
        out.push(Event { watch, change });
    }
    true
}

impl Feed for Inotify {
    fn watch(&mut self, path: &Path) -> Option<i32> {
        let path = CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: `path` is a NUL-terminated string alive for the call.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), MASK) };
        (wd >= 0).then_some(wd)
    }

    fn reports_all(&mut self, path: &Path, dev: u64) -> bool {
        if let Some(&ok) = self.local.get(&dev) {
            return ok;
        }
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: all-zero bytes are a valid `statfs` (integers only).
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is NUL-terminated and `st` is valid for writes.
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return false;
        }
        // The magic numbers fit in 32 bits; `f_type`'s width varies.
        let ok = LOCAL.contains(&(st.f_type as u32));
        self.local.insert(dev, ok);
        ok
    }

    fn drain(&mut self, out: &mut Vec<Event>) -> bool {
        let mut fds = [
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.mounts.as_raw_fd(),
                events: libc::POLLPRI,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is valid for reads and writes of its 2 entries.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 0) };
        if n == 0 {
            return true;
        }
        if n < 0 {
            return false;
        }
        let mut complete = true;
        if fds[1].revents != 0 {
            // Whatever it reads, nothing armed before holds; one that cannot
            // be read stays flagged, so nothing armed is trusted again.
            complete = false;
            self.local.clear();
            self.reread_mounts();
        }
        if fds[0].revents != 0 {
            complete &= self.read_all(out);
        }
        complete
    }
}
