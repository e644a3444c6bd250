//! Distinct spellings by id, and their ids by spelling: the binder's names
//! and the renamer's comment words.
//!
//! A map keyed by the spellings would borrow the text in its keys, so it
//! could not outlive the text; the table here holds ids alone (hashed by
//! the spelling each stands for) and is kept, emptied, for the thread's next
//! text with the list (see [`super::scratch`]): at a megabyte of text the
//! two were 1.5 MB allocated, faulted in and freed per text. The table's
//! entries are four bytes where the map's were 32 (a spelling and an id), so
//! it is also a seventh of the memory a lookup lands in.

use super::scratch;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use std::borrow::Cow;
use std::hash::BuildHasher;

/// Spellings interned in order of first sight: the `k`th is id `k`.
#[derive(Debug, Default)]
pub struct Spellings<'t> {
    list: Vec<Cow<'t, [u8]>>,
    /// Every id, hashed by its spelling.
    ids: HashTable<u32>,
}

fn hash(name: &[u8]) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(name)
}

impl<'t> Spellings<'t> {
    /// Empty, with room for about `names` spellings: the thread's kept
    /// buffers when it has them.
    pub fn take(names: usize) -> Spellings<'t> {
        Spellings {
            list: scratch::take_spellings(names),
            ids: scratch::take_table(names),
        }
    }

    /// The id of `name`, interned on first sight.
    #[inline]
    pub fn intern(&mut self, name: Cow<'t, [u8]>) -> u32 {
        let list = &mut self.list;
        // One hashing whether the name is new or not.
        let entry = self.ids.entry(
            hash(&name),
            |&id| *list[id as usize] == *name,
            |&id| hash(&list[id as usize]),
        );
        match entry {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let id = list.len() as u32;
                list.push(name);
                e.insert(id);
                id
            }
        }
    }

    /// Room for `additional` more spellings.
    pub fn reserve(&mut self, additional: usize) {
        let list = &self.list;
        self.ids.reserve(additional, |&id| hash(&list[id as usize]));
        self.list.reserve(additional);
    }

    /// The id of `name`, if it was interned.
    #[inline]
    pub fn id(&self, name: &[u8]) -> Option<u32> {
        self.ids
            .find(hash(name), |&id| *self.list[id as usize] == *name)
            .copied()
    }
}

impl<'t> std::ops::Deref for Spellings<'t> {
    type Target = [Cow<'t, [u8]>];

    /// The spellings, by id.
    fn deref(&self) -> &Self::Target {
        &self.list
    }
}

impl Drop for Spellings<'_> {
    /// Keeps the list and the table for the thread's next text.
    fn drop(&mut self) {
        scratch::give_spellings(std::mem::take(&mut self.list));
        scratch::give_table(std::mem::take(&mut self.ids));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_has_one_id_in_order_of_first_sight() {
        let text = b"b a b c a".to_vec();
        let mut s = Spellings::take(1);
        let ids: Vec<u32> = text
            .split(|&c| c == b' ')
            .map(|w| s.intern(Cow::Borrowed(w)))
            .collect();
        assert_eq!(ids, [0, 1, 0, 2, 1]);
        assert_eq!(s.intern(Cow::Owned(b"c".to_vec())), 2);
        assert_eq!((s.id(b"a"), s.id(b"d")), (Some(1), None));
        assert_eq!(&*s[2], b"c");
        // Growing rehashes by the spellings: all are found after.
        for i in 0..1000u32 {
            s.intern(Cow::Owned(i.to_string().into_bytes()));
        }
        assert_eq!(s.id(b"999"), Some(3 + 999));
        assert_eq!(s.len(), 1003);
        drop(s);
        // Kept, it comes back empty.
        let s = Spellings::take(1);
        assert_eq!((s.len(), s.id(b"a")), (0, None));
    }
}
