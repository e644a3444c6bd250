//! The compact records kept in a compilers folder (the base's probes, the
//! include closures): every number a little-endian `u64`, every byte
//! string its length then its bytes, every list its length then its items,
//! and last the xxh3-64 of all that precedes it. A reader refuses anything
//! that does not decode exactly, so a damaged or foreign file is no record.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use super::includes::memo::StatId;
use super::includes::Body;

pub(super) struct Writer(pub(super) Vec<u8>);

impl Writer {
    pub(super) fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub(super) fn path(&mut self, p: &Path) {
        self.bytes(p.as_os_str().as_bytes());
    }

    pub(super) fn stat(&mut self, id: &StatId) {
        for word in id.to_words() {
            self.u64(word);
        }
    }

    /// A macro definition: its name, whether its body pastes (1 or 0),
    /// then its body.
    pub(super) fn define(&mut self, name: &[u8], pastes: bool, body: &Body) {
        self.bytes(name);
        self.u64(u64::from(pastes));
        self.body(body);
    }

    /// A macro body: its word count, then each word.
    pub(super) fn body(&mut self, body: &Body) {
        self.u64(body.len() as u64);
        for word in body.iter() {
            self.bytes(word);
        }
    }

    /// An identity that may be absent: 0, or 1 then the identity.
    pub(super) fn stat_or_absent(&mut self, id: &Option<StatId>) {
        match id {
            Some(id) => {
                self.u64(1);
                self.stat(id);
            }
            None => self.u64(0),
        }
    }

    pub(super) fn list<T>(&mut self, items: &[T], mut each: impl FnMut(&mut Self, &T)) {
        self.u64(items.len() as u64);
        for item in items {
            each(self, item);
        }
    }
}

pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(super) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }

    pub(super) fn path(&mut self) -> Option<PathBuf> {
        Some(PathBuf::from(OsStr::from_bytes(self.bytes()?)))
    }

    pub(super) fn stat(&mut self) -> Option<StatId> {
        let mut w = [0; 8];
        for word in &mut w {
            *word = self.u64()?;
        }
        StatId::from_words(w)
    }

    /// What [`Writer::define`] wrote: the name, whether the body pastes,
    /// the body.
    pub(super) fn define(&mut self) -> Option<(&'a [u8], bool, Body)> {
        let name = self.bytes()?;
        let pastes = match self.u64()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let words = self.count()?;
        Some((name, pastes, self.body(words)?))
    }

    /// A macro body of `words` words ([`Writer::body`] after its count).
    pub(super) fn body(&mut self, words: usize) -> Option<Body> {
        // An identifier is about 8 bytes (`__int128`, `unsigned`).
        let mut body = Body::with_capacity(words * 9);
        for _ in 0..words {
            let word = self.bytes()?;
            if word.contains(&0) {
                // No identifier holds one: no record of ours either.
                return None;
            }
            body.push(word);
        }
        Some(body)
    }

    /// What [`Writer::stat_or_absent`] wrote.
    pub(super) fn stat_or_absent(&mut self) -> Option<Option<StatId>> {
        match self.u64()? {
            0 => Some(None),
            1 => Some(Some(self.stat()?)),
            _ => None,
        }
    }

    /// A list's length: every item takes eight bytes or more, so a count
    /// beyond what is left is refused before anything is allocated for it.
    pub(super) fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.0.len() / 8).then_some(n)
    }

    /// A list, its length read by [`Reader::count`].
    pub(super) fn list<T>(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(each(self)?);
        }
        Some(out)
    }
}

/// `body` with its checksum appended: a whole record.
pub(super) fn sealed(mut body: Vec<u8>) -> Vec<u8> {
    let sum = crate::checksum::xxh3_64(&body);
    body.extend_from_slice(&sum.to_le_bytes());
    body
}

/// What `bytes` hold before their checksum, when it is theirs.
pub(super) fn unsealed(bytes: &[u8]) -> Option<&[u8]> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    (crate::checksum::xxh3_64(body) == u64::from_le_bytes(sum.try_into().ok()?)).then_some(body)
}
