//! The comment words a pass met last, by spelling: most comments of a
//! generated kernel repeat a few words, each of which cost a hashing and a
//! search of [`super::pass::Pass`]'s map of words decided by spelling (or
//! of the binder's names) every time it was met.

use super::pass::Taken;

/// What asking for a word's spelling found: its decision by spelling (one
/// that never changes again), or the binder's id for it.
#[derive(Clone, Copy)]
pub(super) enum Found {
    Taken(Taken),
    Id(u32),
}

/// A word of at most eight bytes as a key: its bytes in a `u64` (zeros past
/// them) and its length, which together are the spelling.
pub(super) type Key = (u64, u8);

const SLOTS: usize = 64;

/// The last word found for each of [`SLOTS`] slots: asking for a word of
/// another slot, or another word of the same slot, finds nothing.
pub(super) struct Words {
    slots: [(Key, Option<Found>); SLOTS],
}

impl Default for Words {
    fn default() -> Self {
        Words {
            slots: [((0, 0), None); SLOTS],
        }
    }
}

impl Words {
    /// The key of the word `text[start..end]`, when it has one: it is no
    /// longer than eight bytes, and eight bytes of the text start there.
    #[inline(always)]
    pub(super) fn key(text: &[u8], start: usize, end: usize) -> Option<Key> {
        let len = end.wrapping_sub(start);
        let bytes = text.get(start..)?.first_chunk::<8>()?;
        if !(1..=8).contains(&len) {
            return None;
        }
        let word = u64::from_le_bytes(*bytes) & (u64::MAX >> (64 - 8 * len));
        Some((word, len as u8))
    }

    #[inline(always)]
    fn slot((word, len): Key) -> usize {
        (word
            .wrapping_add(len as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> 58) as usize
    }

    /// What was found for the word `key`, if it is the last one of its slot.
    #[inline(always)]
    pub(super) fn get(&self, key: Key) -> Option<Found> {
        match self.slots[Self::slot(key)] {
            (k, found) if k == key => found,
            _ => None,
        }
    }

    /// Keeps what was found for the word `key`.
    #[inline(always)]
    pub(super) fn put(&mut self, key: Key, found: Found) {
        self.slots[Self::slot(key)] = (key, Some(found));
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Words};

    #[test]
    fn a_key_is_the_spelling() {
        let text = b"ab abc a\0 abcdefgh abcdefghi x";
        let words = [(0, 2), (3, 6), (7, 9), (10, 18), (19, 28), (3, 4), (0, 1)];
        let mut keys = Vec::new();
        for &(s, e) in &words {
            let key = Words::key(text, s, e);
            assert_eq!(key.is_some(), e - s <= 8, "{s}..{e}");
            if let Some(k) = key {
                assert!(keys
                    .iter()
                    .all(|&(k2, w2): &(_, &[u8])| (k2 == k) == (w2 == &text[s..e])));
                keys.push((k, &text[s..e]));
            }
        }
        // The text's last bytes: fewer than eight follow.
        assert_eq!(Words::key(text, 29, 30), None);
        let mut w = Words::default();
        let k = Words::key(text, 0, 2).unwrap();
        assert!(w.get(k).is_none());
        w.put(k, Found::Id(7));
        assert!(matches!(w.get(k), Some(Found::Id(7))));
        // Another word of the same slot, or of another, is not found.
        for &(s, e) in &words[1..5] {
            if let Some(k2) = Words::key(text, s, e) {
                assert!(w.get(k2).is_none(), "{s}..{e}");
            }
        }
    }
}
