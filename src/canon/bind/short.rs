//! Ids of short identifiers by their bytes read as integers: the adapter's
//! fast path in front of [`super::tokens::Adapted::intern`].
//!
//! Most identifiers in kernels are at most 16 bytes long. Such a spelling is
//! determined by its length and two 8-byte words (its first and its last
//! eight bytes, zero-padded when shorter), so a table keyed on those three
//! integers finds its id without hashing or comparing bytes. A miss falls
//! back to the interner, whose ids this only remembers: the ids are the
//! interner's, in the same order.

/// An open-addressing table from a short spelling to its id.
pub struct ShortIds {
    /// `(head, tail, len << 32 | id)`; `len` 0 marks an empty slot.
    slots: Vec<(u64, u64, u64)>,
    /// How many slots are taken.
    taken: usize,
    /// Which slots are taken, so that emptying the table for the thread's
    /// next text clears those alone (see [`ShortIds::take`]).
    used: Vec<u32>,
}

thread_local! {
    /// The table the thread's last text used, emptied.
    static KEPT: std::cell::Cell<Option<ShortIds>> = const { std::cell::Cell::new(None) };
}

/// The longest spelling the table holds.
pub const SHORT: usize = 16;

impl ShortIds {
    /// An empty table sized for about `names` spellings.
    pub fn with_capacity(names: usize) -> ShortIds {
        let n = Self::slots_for(names);
        ShortIds {
            slots: vec![(0, 0, 0); n],
            taken: 0,
            used: Vec::with_capacity(names),
        }
    }

    fn slots_for(names: usize) -> usize {
        (names * 2).next_power_of_two().max(64)
    }

    /// An empty table for about `names` spellings: the thread's kept one
    /// when it is large enough. A fresh table is zeroed whole (for a 16 KiB
    /// kernel 24 KiB, about as many instructions as the binder spends on a
    /// kilobyte of text); a kept one was emptied slot by slot.
    pub fn take(names: usize) -> ShortIds {
        let kept = KEPT.try_with(|k| k.take()).ok().flatten();
        match kept {
            Some(t) if t.slots.len() >= Self::slots_for(names) => t,
            _ => Self::with_capacity(names),
        }
    }

    /// Empties the table and keeps it for the thread's next text, unless it
    /// is larger than [`crate::canon::scratch::KEEP`].
    pub fn give(mut self) {
        if self.slots.len() * std::mem::size_of::<(u64, u64, u64)>() > crate::canon::scratch::KEEP {
            return;
        }
        for &i in &self.used {
            self.slots[i as usize] = (0, 0, 0);
        }
        self.used.clear();
        self.taken = 0;
        let _ = KEPT.try_with(|k| k.set(Some(self)));
    }

    /// The key of `text[start..end]` (`end - start` in `1..=SHORT`).
    #[inline(always)]
    fn key(text: &[u8], start: usize, end: usize) -> (u64, u64) {
        let n = end - start;
        let word = |at: usize| -> u64 {
            match text.get(at..at + 8) {
                Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
                None => {
                    let mut buf = [0u8; 8];
                    let rest = &text[at..];
                    buf[..rest.len()].copy_from_slice(rest);
                    u64::from_le_bytes(buf)
                }
            }
        };
        if n >= 8 {
            (word(start), word(end - 8))
        } else {
            // Only the spelling's own bytes: the rest of the word is masked.
            (word(start) & ((1u64 << (8 * n)) - 1), 0)
        }
    }

    #[inline(always)]
    fn slot(&self, head: u64, tail: u64, n: usize) -> usize {
        let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (self.slots.len() - 1)
    }

    /// The id of `text[start..end]`, when it was inserted.
    #[inline(always)]
    pub fn get(&self, text: &[u8], start: usize, end: usize) -> Option<u32> {
        let n = end - start;
        let (head, tail) = Self::key(text, start, end);
        let mask = self.slots.len() - 1;
        let mut i = self.slot(head, tail, n);
        loop {
            let (h, t, v) = self.slots[i];
            let len = (v >> 32) as usize;
            if len == 0 {
                return None;
            }
            if len == n && h == head && t == tail {
                return Some(v as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers that `text[start..end]` has id `id`.
    pub fn insert(&mut self, text: &[u8], start: usize, end: usize, id: u32) {
        if (self.taken + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let n = end - start;
        let (head, tail) = Self::key(text, start, end);
        self.put(head, tail, (n as u64) << 32 | id as u64);
    }

    fn put(&mut self, head: u64, tail: u64, v: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.slot(head, tail, (v >> 32) as usize);
        while self.slots[i].2 >> 32 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (head, tail, v);
        self.used.push(i as u32);
        self.taken += 1;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.slots, vec![(0, 0, 0); 0]);
        self.slots = vec![(0, 0, 0); old.len() * 2];
        self.taken = 0;
        self.used.clear();
        for (h, t, v) in old {
            if v >> 32 != 0 {
                self.put(h, t, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_spellings_find_their_own_id_and_no_other() {
        // Every spelling of 1 to 16 bytes over a small alphabet, some ending
        // at the text's end (where no 8-byte word can be read past them).
        let words: Vec<Vec<u8>> = (1..=SHORT)
            .flat_map(|n| {
                (0..6u8).map(move |k| (0..n).map(|i| b"ab_"[(i + k as usize) % 3]).collect())
            })
            .collect();
        let mut text = Vec::new();
        let mut spans = Vec::new();
        for w in &words {
            text.push(b' ');
            spans.push((text.len(), text.len() + w.len()));
            text.extend_from_slice(w);
        }
        let mut ids = ShortIds::with_capacity(1);
        let mut seen: Vec<&[u8]> = Vec::new();
        for &(s, e) in &spans {
            let w = &text[s..e];
            let want = seen.iter().position(|x| *x == w);
            assert_eq!(ids.get(&text, s, e), want.map(|i| i as u32), "{w:?}");
            if want.is_none() {
                ids.insert(&text, s, e, seen.len() as u32);
                seen.push(w);
            }
        }
        // A kept table is empty, and finds again what it is given.
        ids.give();
        let mut kept = ShortIds::take(1);
        for &(s, e) in &spans {
            assert_eq!(kept.get(&text, s, e), None);
        }
        kept.insert(&text, spans[0].0, spans[0].1, 7);
        assert_eq!(kept.get(&text, spans[0].0, spans[0].1), Some(7));
        let mut ids = ShortIds::with_capacity(1);
        for (i, w) in seen.iter().enumerate() {
            let at = text.windows(w.len()).position(|x| x == *w).unwrap();
            ids.insert(&text, at, at + w.len(), i as u32);
        }
        // Each word again, the last one at the very end of its own text.
        for (i, w) in seen.iter().enumerate() {
            let own = w.to_vec();
            assert_eq!(ids.get(&own, 0, own.len()), Some(i as u32), "{w:?}");
        }
    }
}
