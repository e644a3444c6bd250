//! Entry files kept open after a verified read, so that reading the same
//! entry again is one `statx` of its name and one `preadv`, not an
//! `openat2`, an `fstat`, a `preadv` and a `close`.
//!
//! A kept file is read only while its name still links to it: the `statx` of
//! the name beneath the held `entries/` (the last component not followed)
//! must give the device and inode of the file kept. That is exact: an inode
//! held open is never reused, so a writer's rename, an eviction or a removal
//! by any process shows as another inode or none, and the read goes the
//! usual way (open by name, and a miss if nothing is there). What a kept file
//! gives is verified like every read (magic, lengths, key, checksum), at the
//! length the `statx` just gave: a file truncated or changed in place is
//! damage, as ever, and is then handled by the usual read.
//!
//! At most [`KEEP_FILES`] files of at most [`KEEP_MAX_BYTES`] each are kept
//! (least recently used first out), so an entry evicted by another process
//! holds at most that much disk until this process reads its name again or
//! keeps another file; this process's own removals, evictions and clears
//! close what they remove.

use super::*;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

/// How many entry files a store keeps open: enough for the entries a
/// process reads again and again, few against its descriptor limit (a
/// process may open many stores).
pub(super) const KEEP_FILES: usize = 16;

/// The largest entry file kept open.
pub(super) const KEEP_MAX_BYTES: u64 = 1 << 20;

/// One kept file: the key it was read under, its name beneath `entries/`,
/// the file, the held `entries/` it was opened beneath, its device and
/// inode, and when it was last used.
#[derive(Debug)]
struct Kept {
    key: Box<[u8]>,
    rel: Arc<CStr>,
    file: Arc<File>,
    dir: Arc<File>,
    id: (u64, u64),
    used: u64,
}

/// What a kept file's read needs.
struct Found {
    rel: Arc<CStr>,
    file: Arc<File>,
    dir: Arc<File>,
    id: (u64, u64),
}

/// The entry files a store keeps open.
#[derive(Debug, Default)]
pub(super) struct KeptFiles {
    kept: Mutex<Vec<Kept>>,
    clock: AtomicU64,
}

impl KeptFiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file kept for `key`.
    fn find(&self, key: &[u8]) -> Option<Found> {
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.lock();
        let k = kept.iter_mut().find(|k| *k.key == *key)?;
        k.used = used;
        Some(Found {
            rel: Arc::clone(&k.rel),
            file: Arc::clone(&k.file),
            dir: Arc::clone(&k.dir),
            id: k.id,
        })
    }

    /// Keeps `file`, just read whole and verified under `key` at `rel`
    /// beneath `dir`, in place of the least recently used one when full.
    pub(super) fn keep(&self, key: &[u8], rel: &Path, dir: Arc<File>, file: File, meta: &Metadata) {
        if meta.len() > KEEP_MAX_BYTES {
            return;
        }
        let Ok(rel) = CString::new(rel.as_os_str().as_bytes()) else {
            return;
        };
        let rel: Arc<CStr> = rel.into();
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let k = Kept {
            key: key.into(),
            rel,
            file: Arc::new(file),
            dir,
            id: (meta.dev(), meta.ino()),
            used,
        };
        let mut kept = self.lock();
        if let Some(at) = kept.iter().position(|o| o.key == k.key) {
            kept[at] = k;
        } else if kept.len() < KEEP_FILES {
            kept.push(k);
        } else if let Some(oldest) = kept.iter_mut().min_by_key(|o| o.used) {
            *oldest = k;
        }
    }

    /// Closes the file kept for `key`, if any.
    pub(super) fn forget(&self, key: &[u8]) {
        self.lock().retain(|k| *k.key != *key);
    }

    /// Closes every kept file.
    pub(super) fn forget_all(&self) {
        self.lock().clear();
    }
}

/// What [`stat_beneath`] tells of a name.
struct NameStat {
    /// Device and inode.
    id: (u64, u64),
    len: u64,
    /// Last access, if after 1970.
    accessed: Option<SystemTime>,
    regular: bool,
}

/// The `statx` of `rel` beneath `dir`, its last component not followed.
///
/// Only compared with a file already open (never a way to open one), so a
/// symlink planted at the shard directory leads nowhere: whatever it reaches
/// is not the inode kept, unless it is that very inode, which is what is
/// then read.
fn stat_beneath(dir: &File, rel: &CStr) -> io::Result<NameStat> {
    // SAFETY: an all-zero statx is a valid buffer for the call to fill.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let mask = libc::STATX_TYPE | libc::STATX_INO | libc::STATX_SIZE | libc::STATX_ATIME;
    // SAFETY: a valid directory descriptor, a NUL-terminated relative path
    // and a buffer of the right type, all alive for the call.
    let rc = unsafe {
        libc::statx(
            dir.as_raw_fd(),
            rel.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            mask,
            &mut st,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let a = st.stx_atime;
    Ok(NameStat {
        id: (
            libc::makedev(st.stx_dev_major, st.stx_dev_minor),
            st.stx_ino,
        ),
        len: st.stx_size,
        accessed: u64::try_from(a.tv_sec)
            .ok()
            .map(|s| UNIX_EPOCH + Duration::new(s, a.tv_nsec.min(999_999_999))),
        regular: u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFREG,
    })
}

impl FileStore {
    /// Reads `key`'s entry through the file kept for it, if one is kept and
    /// still linked at its name, and it reads whole and verified; `None`
    /// sends the read the usual way (which then handles whatever is wrong).
    pub(super) fn get_kept(&self, key: &[u8]) -> Option<Vec<u8>> {
        let Found { rel, file, dir, id } = self.kept.find(key)?;
        let rel_path = Path::new(OsStr::from_bytes(rel.to_bytes()));
        let answer = match stat_beneath(&dir, &rel) {
            Ok(st) if st.regular && st.id == id && st.len <= self.max_entry_len() => {
                let named = |k: &[u8]| Self::named_for(rel_path, k);
                match Self::read_entry(&file, st.len, Some(key), &named, true) {
                    Ok(read::Outcome::Entry { payload, .. }) => Some((payload, st.accessed)),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((payload, stamped)) = answer else {
            self.kept.forget(key);
            return None;
        };
        self.stamp(&file, stamped, rel_path);
        self.counters.hit();
        Some(payload)
    }
}
