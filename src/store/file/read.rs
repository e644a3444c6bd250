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
        let mut r = file;
        if len < HEADER_LEN as u64 {
            return Ok(Outcome::Damaged(Damage::Truncated { len }));
        }
        // The header and the key we expect in one read: hits are syscalls.
        let guess = expect
            .map_or(0, <[u8]>::len)
            .min((len - HEADER_LEN as u64) as usize);
        let mut head = vec![0u8; HEADER_LEN + guess];
        r.read_exact(&mut head)?;
        let h: Header = match entry::parse_header(&head, len) {
            Ok(h) => h,
            Err(d) => return Ok(Outcome::Damaged(d)),
        };
        let key = if h.key_len == guess {
            head.split_off(HEADER_LEN)
        } else {
            let mut key = vec![0u8; h.key_len];
            r.seek(SeekFrom::Start(HEADER_LEN as u64))?;
            r.read_exact(&mut key)?;
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
        let mut payload = Vec::new();
        payload
            .try_reserve_exact(h.payload_len as usize)
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        r.take(h.payload_len).read_to_end(&mut payload)?;
        if payload.len() as u64 != h.payload_len {
            // The file shrank under us: someone truncated it in place.
            return Ok(Outcome::Damaged(Damage::LengthMismatch {
                expected: h.file_len(),
                actual: HEADER_LEN as u64 + h.key_len as u64 + payload.len() as u64,
            }));
        }
        if entry::checksum(&payload) != h.checksum {
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
        let io = &*self.opts.io;
        let path = self.entry_path(key);
        let file = match io.open_read(&path) {
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
            let d = Damage::TooLarge {
                len: meta.len(),
                max: self.max_entry_len(),
            };
            self.drop_corrupt(&path, &Snapshot::of(&meta), &d);
            return Ok(None);
        }
        let named = |k: &[u8]| Self::named_for(&path, k);
        let read = Self::read_entry(&file, meta.len(), Some(key), &named, true)
            .map_err(|e| StoreError::io("read", &path, e))?;
        match read {
            Outcome::Entry { payload, .. } => {
                // Stamped through the descriptor: only the file just read.
                if let Err(e) = io.set_atime(&file, self.opts.clock.now()) {
                    tracing::debug!(path = %path.display(), error = %e,
                        "kcache store: could not stamp access time");
                }
                self.counters.hit();
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
            } else if meta.len() > self.max_entry_len() {
                Outcome::Damaged(Damage::TooLarge {
                    len: meta.len(),
                    max: self.max_entry_len(),
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
        self.flush_counters();
        Ok(report)
    }

    /// The key bytes of a damaged entry, when its header still gives them.
    pub(super) fn stored_key(file: &File, len: u64) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0).ok()?;
        let key_len = u32::from_le_bytes(head[8..12].try_into().ok()?) as u64;
        if &head[..8] != entry::MAGIC || HEADER_LEN as u64 + key_len > len {
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
