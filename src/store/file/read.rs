//! Reading entries: lookups, `verify` and `ls`.

use super::*;

/// The outcome of reading an entry file.
pub(crate) enum Outcome {
    Entry {
        key: Vec<u8>,
        payload: Vec<u8>,
    },
    /// A well-formed entry of another key whose name collides with ours.
    OtherKey,
    Damaged(Damage),
}

impl FileStore {
    /// Reads an open entry file. `expect` is the key looked up (its file is
    /// named after it); `None` reads whatever key the file holds and checks
    /// it against `name`.
    pub(crate) fn read_entry(
        file: &File,
        len: u64,
        expect: Option<&[u8]>,
        name: &dyn Fn(&[u8]) -> bool,
        want_payload: bool,
    ) -> io::Result<Outcome> {
        if len < HEADER_LEN as u64 {
            return Ok(Outcome::Damaged(Damage::Truncated { len }));
        }
        // The header, the key we expect and the payload in one read: a hit
        // is one `preadv`, into a buffer of the size the file promises.
        let guess = expect
            .map_or(0, <[u8]>::len)
            .min((len - HEADER_LEN as u64) as usize);
        let mut head = vec![0u8; HEADER_LEN + guess];
        let rest = if want_payload {
            (len - head.len() as u64) as usize
        } else {
            0
        };
        let mut payload = Vec::new();
        payload
            .try_reserve_exact(rest)
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let got = read_at(file, 0, &mut head, &mut payload, rest)?;
        if got < head.len() {
            // The file shrank under us: someone truncated it in place.
            return Ok(Outcome::Damaged(Damage::LengthMismatch {
                expected: len,
                actual: got as u64,
            }));
        }
        let h: Header = match entry::parse_header(&head, len) {
            Ok(h) => h,
            Err(d) => return Ok(Outcome::Damaged(d)),
        };
        let key = if h.key_len == guess {
            head.split_off(HEADER_LEN)
        } else {
            // Not the key we expected: what followed the guess is not the
            // payload either.
            payload.clear();
            let mut key = vec![0u8; h.key_len];
            let got = read_at(file, HEADER_LEN as u64, &mut key, &mut Vec::new(), 0)?;
            if got < key.len() {
                return Ok(Outcome::Damaged(Damage::LengthMismatch {
                    expected: h.file_len(),
                    actual: (HEADER_LEN + got) as u64,
                }));
            }
            key
        };
        if expect != Some(&key[..]) {
            if !name(&key) {
                return Ok(Outcome::Damaged(Damage::KeyMismatch));
            }
            if expect.is_some() {
                return Ok(Outcome::OtherKey);
            }
        }
        if !want_payload {
            return Ok(Outcome::Entry {
                key,
                payload: Vec::new(),
            });
        }
        if h.key_len != guess {
            payload
                .try_reserve_exact(h.payload_len as usize)
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            let at = (HEADER_LEN + h.key_len) as u64;
            read_at(file, at, &mut [], &mut payload, h.payload_len as usize)?;
        }
        if payload.len() as u64 != h.payload_len {
            // The file shrank under us: someone truncated it in place.
            return Ok(Outcome::Damaged(Damage::LengthMismatch {
                expected: h.file_len(),
                actual: HEADER_LEN as u64 + h.key_len as u64 + payload.len() as u64,
            }));
        }
        if !h.verifies(&payload) {
            return Ok(Outcome::Damaged(Damage::ChecksumMismatch));
        }
        Ok(Outcome::Entry { key, payload })
    }

    /// Whether `path` is the file name `key` hashes to.
    pub(super) fn named_for(path: &Path, key: &[u8]) -> bool {
        let hex = entry::name_digest(key).to_hex();
        let file = path.file_name().and_then(OsStr::to_str);
        let shard = path
            .parent()
            .and_then(Path::file_name)
            .and_then(OsStr::to_str);
        file == Some(&hex[2..]) && shard == Some(&hex[..2])
    }

    pub(super) fn get_inner(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(payload) = self.get_kept(key) {
            return Ok(Some(payload));
        }
        let rel = entry_rel(&entry::name_digest(key));
        let path = self.entries.join(&rel);
        let (held, file) = self.open_entry(&rel, &path);
        let file = match file {
            Ok(f) => f,
            Err(e) if not_found(&e) => {
                self.counters.miss();
                return Ok(None);
            }
            Err(e) if in_the_way(&e) => {
                self.counters.miss();
                self.remove_stray(&path);
                return Ok(None);
            }
            Err(e) => return Err(StoreError::io("open", path, e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?;
        if !meta.file_type().is_file() {
            drop(file);
            self.counters.miss();
            self.remove_stray(&path);
            return Ok(None);
        }
        if meta.len() > self.max_entry_len() {
            drop(file);
            self.counters.miss();
            // Past this process's cap only, it may be another process's
            // sound entry: a miss, not damage (review 2026-12-02, store F9.1).
            if meta.len() > entry::MAX_ENTRY_BYTES {
                let d = Damage::TooLarge {
                    len: meta.len(),
                    max: entry::MAX_ENTRY_BYTES,
                };
                self.drop_corrupt(&path, &Snapshot::of(&meta), &d);
            }
            return Ok(None);
        }
        let named = |k: &[u8]| Self::named_for(&path, k);
        let read = Self::read_entry(&file, meta.len(), Some(key), &named, true)
            .map_err(|e| StoreError::io("read", &path, e))?;
        match read {
            Outcome::Entry { payload, .. } => {
                self.stamp(&file, meta.accessed().ok(), &path);
                self.counters.hit();
                if let Some(dir) = held {
                    self.kept.keep(key, &rel, dir, file, &meta);
                }
                Ok(Some(payload))
            }
            Outcome::OtherKey => {
                self.counters.miss();
                Ok(None)
            }
            Outcome::Damaged(d) => {
                drop(file);
                self.counters.miss();
                self.drop_corrupt(&path, &Snapshot::of(&meta), &d);
                Ok(None)
            }
        }
    }

    /// Stamps the access time of `file` (just read) through its descriptor:
    /// only the file read is ever stamped; and not again within
    /// ATIME_GRAIN of its `last` stamp.
    pub(super) fn stamp(&self, file: &File, last: Option<SystemTime>, path: &Path) {
        let now = self.opts.clock.now();
        let recent = now
            .checked_sub(ATIME_GRAIN)
            .zip(last)
            .is_some_and(|(since, last)| last >= since);
        if !recent {
            if let Err(e) = self.opts.io.set_atime(file, now) {
                tracing::debug!(path = %path.display(), error = %e,
                    "kcache store: could not stamp access time");
            }
        }
    }

    pub(super) fn verify_inner(&self) -> Result<VerifyReport, StoreError> {
        let io = &*self.opts.io;
        let Scan { found, strays, .. } = self.scan()?;
        let mut report = VerifyReport::default();
        for stray in &strays {
            report.checked += 1;
            if let Some(what) = self.remove_stray(stray) {
                report.corrupt.push(CorruptEntry {
                    location: stray.display().to_string(),
                    key: None,
                    reason: format!("{what} where an entry file should be (removed)"),
                });
            }
        }
        for f in &found {
            let file = match io.open_read(&f.path) {
                Ok(file) => file,
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(StoreError::io("open", &f.path, e)),
            };
            let meta = file
                .metadata()
                .map_err(|e| StoreError::io("stat", &f.path, e))?;
            let read = if !meta.file_type().is_file() {
                // Replaced since the scan: the next verify looks at it.
                continue;
            } else if meta.len() > entry::MAX_ENTRY_BYTES {
                // Not this process's cap: a sound entry past it is no damage.
                Outcome::Damaged(Damage::TooLarge {
                    len: meta.len(),
                    max: entry::MAX_ENTRY_BYTES,
                })
            } else {
                let named = |k: &[u8]| Self::named_for(&f.path, k);
                Self::read_entry(&file, meta.len(), None, &named, true)
                    .map_err(|e| StoreError::io("read", &f.path, e))?
            };
            report.checked += 1;
            if let Outcome::Damaged(d) = read {
                let key = Self::stored_key(&file, meta.len());
                drop(file);
                self.drop_corrupt(&f.path, &Snapshot::of(&meta), &d);
                report.corrupt.push(CorruptEntry {
                    location: f.path.display().to_string(),
                    key,
                    reason: d.to_string(),
                });
            }
        }
        // The report stands without the shared counters.
        self.state_skipped(self.flush_counters());
        Ok(report)
    }

    /// The key bytes of a damaged entry, when its header still gives them.
    pub(super) fn stored_key(file: &File, len: u64) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0).ok()?;
        let key_len = u32::from_le_bytes(head[8..12].try_into().ok()?) as u64;
        if !entry::is_magic(&head[..8]) || HEADER_LEN as u64 + key_len > len {
            return None;
        }
        let mut key = vec![0u8; key_len as usize];
        file.read_exact_at(&mut key, HEADER_LEN as u64).ok()?;
        Some(key)
    }

    pub(super) fn list_inner(&self) -> Result<Vec<EntryInfo>, StoreError> {
        let io = &*self.opts.io;
        let found = self.scan()?.found;
        let mut out = Vec::with_capacity(found.len());
        for f in &found {
            let file = match io.open_read(&f.path) {
                Ok(file) => file,
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(StoreError::io("open", &f.path, e)),
            };
            let meta = file
                .metadata()
                .map_err(|e| StoreError::io("stat", &f.path, e))?;
            if !meta.file_type().is_file() || meta.len() > self.max_entry_len() {
                continue;
            }
            let named = |k: &[u8]| Self::named_for(&f.path, k);
            match Self::read_entry(&file, meta.len(), None, &named, false) {
                Ok(Outcome::Entry { key, .. }) => out.push(EntryInfo {
                    size: meta.len() - (HEADER_LEN + key.len()) as u64,
                    key,
                    stored_bytes: meta.len(),
                    last_access: UNIX_EPOCH
                        + Duration::new(meta.atime().max(0) as u64, meta.atime_nsec() as u32),
                }),
                // Damaged entries are for `verify` to report.
                Ok(_) => {}
                Err(e) => return Err(StoreError::io("read", &f.path, e)),
            }
        }
        Ok(out)
    }
}

/// How close to a hit an entry's last stamp may be for the hit to leave it:
/// hits that close together are one use as far as the LRU can tell (file
/// times are that coarse anyway), and a hot entry costs no `futimens` each.
const ATIME_GRAIN: Duration = Duration::from_millis(100);

/// Reads `file` from offset `at`: first `head` in full, then up to `want`
/// bytes appended to `tail` (which has room for them), with as few
/// `preadv` calls as the kernel allows; stops early only at end of file.
/// Answers how many bytes of `head` were filled.
fn read_at(
    file: &File,
    at: u64,
    head: &mut [u8],
    tail: &mut Vec<u8>,
    want: usize,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    assert!(tail.capacity() - tail.len() >= want, "room for the tail");
    let start = tail.len();
    let mut filled = 0;
    loop {
        let tail_room = want - (tail.len() - start);
        if filled == head.len() && tail_room == 0 {
            return Ok(filled);
        }
        let spare = tail.spare_capacity_mut();
        let iov = [
            libc::iovec {
                iov_base: head[filled..].as_mut_ptr().cast(),
                iov_len: head.len() - filled,
            },
            libc::iovec {
                iov_base: spare.as_mut_ptr().cast(),
                iov_len: tail_room,
            },
        ];
        let offset = at + (filled + tail.len() - start) as u64;
        // SAFETY: both buffers are valid for writes of their lengths (the
        // tail's is spare capacity of `tail`), and the kernel writes at most
        // that many bytes, filling them in order.
        let n = unsafe { libc::preadv(file.as_raw_fd(), iov.as_ptr(), 2, offset as libc::off_t) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(filled);
        }
        let n = n as usize;
        let into_head = n.min(head.len() - filled);
        filled += into_head;
        // SAFETY: the kernel initialised the first `n - into_head` bytes of
        // the tail's spare capacity (the head's iovec is filled first).
        unsafe { tail.set_len(tail.len() + n - into_head) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_at_fills_the_head_then_the_tail_and_stops_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..200u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let f = File::open(&p).unwrap();
        let mut head = [0u8; 10];
        let mut tail = Vec::with_capacity(300);
        assert_eq!(read_at(&f, 5, &mut head, &mut tail, 300).unwrap(), 10);
        assert_eq!(&head[..], &bytes[5..15]);
        assert_eq!(tail, &bytes[15..]);
        let mut head = [0u8; 10];
        let mut tail = Vec::with_capacity(4);
        assert_eq!(read_at(&f, 195, &mut head, &mut tail, 4).unwrap(), 5);
        assert!(tail.is_empty());
    }
}
