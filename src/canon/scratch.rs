//! Buffers kept from one text to the next, per thread: the binder's and the
//! renamer's.
//!
//! A text's code tokens, the grammar's terminals and the identifier list
//! are each 12 bytes per token: for a 16 KiB kernel some 40 KiB apiece. Allocated and freed anew for every text, they leave
//! the allocator freeing its heap's top back to the system and faulting it
//! in again, call after call, depending on the order the frees come in: a
//! cost that dwarfs their use. The per-name and per-declaration lists (the
//! spellings and the table of their ids, the renamer's decisions, the
//! binder's orderings) did the same at a megabyte of text: about 3.5 MB
//! trimmed and faulted back per text, 880 page faults. Kept here instead, a
//! buffer is cleared and reused; one larger than [`KEEP`] is freed as
//! before, so a thread that once met a huge text does not hold its memory.

use super::bind::sink::Decl;
use super::bind::tokens::{Ident, Tok, Word};
use super::bind::{Reason, Token};
use super::rename::Taken;
use hashbrown::HashTable;
use std::borrow::Cow;
use std::cell::RefCell;

/// The largest buffer kept (in bytes of capacity).
pub const KEEP: usize = 8 << 20;

/// How many spare buffers of one kind are kept unless the kind says (two: a
/// text once held two lexings' worth at once, the code and a copy with the
/// comments merged in, and a second spare costs nothing while no text needs
/// it).
const SPARES: usize = 2;

/// The fewest slots a kept table may be sized for: see [`give_table`].
const TABLE_FLOOR: usize = 64;

/// Spare buffers, empty, by kind.
#[derive(Default)]
pub struct Spare {
    lexed: Vec<Vec<Token>>,
    comments: Vec<Vec<(usize, Token)>>,
    terms: Vec<Vec<(u32, Tok, u32)>>,
    idents: Vec<Vec<Ident>>,
    ids: Vec<Vec<u32>>,
    indices: Vec<Vec<usize>>,
    decls: Vec<Vec<Decl>>,
    ranges: Vec<Vec<(usize, usize)>>,
    bytes: Vec<Vec<u8>>,
    flags: Vec<Vec<bool>>,
    keys: Vec<Vec<u64>>,
    pairs: Vec<Vec<(u32, u32)>>,
    words: Vec<Vec<Option<Word>>>,
    verdicts: Vec<Vec<Option<Result<(), Reason>>>>,
    bound: Vec<Vec<(u32, usize, usize, bool)>>,
    spellings: Vec<Vec<Cow<'static, [u8]>>>,
    by_id: Vec<Vec<Option<Taken>>>,
    decisions: Vec<Vec<Taken>>,
    tables: Vec<HashTable<u32>>,
}

thread_local! {
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// An element type whose buffers are kept.
pub trait Kept: Sized {
    /// How many spare buffers of it are kept.
    const SPARES: usize = SPARES;
    /// Where its spare buffers are.
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>>;
}

/// `Kept` for each element type, on the shelf named.
macro_rules! kept {
    ($($t:ty => $shelf:ident),* $(,)?) => {
        $(impl Kept for $t {
            fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
                &mut spare.$shelf
            }
        })*
    };
}

kept! {
    Token => lexed,
    (usize, Token) => comments,
    (u32, Tok, u32) => terms,
    Ident => idents,
    u32 => ids,
    usize => indices,
    Decl => decls,
    (usize, usize) => ranges,
    u8 => bytes,
    bool => flags,
    u64 => keys,
    (u32, u32) => pairs,
    Option<Word> => words,
    Option<Result<(), Reason>> => verdicts,
    (u32, usize, usize, bool) => bound,
    Option<Taken> => by_id,
    Taken => decisions,
}

/// Spellings: a text's names, the names it declares, and the renamer's
/// comment words are lists of them at once.
impl Kept for Cow<'static, [u8]> {
    const SPARES: usize = 3;
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.spellings
    }
}

/// An empty buffer with room for `capacity` elements: a spare one when the
/// thread has one.
pub fn take<T: Kept>(capacity: usize) -> Vec<T> {
    let spare = SPARE
        .try_with(|s| {
            s.try_borrow_mut()
                .ok()
                .and_then(|mut s| T::shelf(&mut s).pop())
        })
        .ok()
        .flatten();
    let mut v = spare.unwrap_or_default();
    v.reserve(capacity);
    v
}

/// Keeps `v` (emptied) for the thread's next text, unless it is too large
/// or enough are kept.
pub fn give<T: Kept>(mut v: Vec<T>) {
    if v.capacity() == 0 || v.capacity().saturating_mul(std::mem::size_of::<T>()) > KEEP {
        return;
    }
    v.clear();
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            let shelf = T::shelf(&mut s);
            if shelf.len() < T::SPARES {
                shelf.push(v);
            }
        }
    });
}

/// [`take`] for a list of spellings borrowed from a text: a kept list holds
/// none, so its `'static` type is the text's (a subtype).
pub fn take_spellings<'t>(capacity: usize) -> Vec<Cow<'t, [u8]>> {
    take::<Cow<'static, [u8]>>(capacity)
}

/// [`give`] for a list of spellings borrowed from a text.
pub fn give_spellings(v: Vec<Cow<'_, [u8]>>) {
    if v.capacity() != 0 {
        give::<Cow<'static, [u8]>>(emptied(v));
    }
}

/// `v` emptied, as a list of another element type, keeping its room when the
/// two have one layout: the standard library collects a mapped
/// `vec::IntoIter` into its own allocation then (as the tests check). An
/// empty list holds no borrow, and this forgets its lifetime without
/// `unsafe`; should the library ever copy instead, the room is lost and the
/// next text allocates anew (slower, not wrong).
fn emptied<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter()
        .map(|_| -> U { unreachable!("the list was emptied") })
        .collect()
}

/// An empty table with room for `capacity` entries: a spare one when the
/// thread has one.
pub fn take_table(capacity: usize) -> HashTable<u32> {
    let spare = SPARE
        .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.tables.pop()))
        .ok()
        .flatten();
    let mut t = spare.unwrap_or_default();
    // An empty table moves no entry while it grows: nothing is hashed.
    t.reserve(capacity, |_| unreachable!("the table is empty"));
    t
}

/// Keeps `t` (emptied) for the thread's next text, unless it is too large,
/// enough are kept, or it has far more room than its text used: emptying a
/// table clears its whole control array, which for a table sized by a huge
/// text would cost every small text after it more than allocating its own.
pub fn give_table(mut t: HashTable<u32>) {
    if t.capacity() == 0
        || t.allocation_size() > KEEP
        || t.capacity() > 8 * t.len().max(TABLE_FLOOR)
    {
        return;
    }
    t.clear();
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.tables.len() < SPARES {
                s.tables.push(t);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_empty_with_its_room() {
        let mut v: Vec<u32> = take(1000);
        v.extend(0..1000);
        let cap = v.capacity();
        give(v);
        let w: Vec<u32> = take(10);
        assert!(w.is_empty());
        assert_eq!(w.capacity(), cap);
    }

    #[test]
    fn a_buffer_over_the_limit_is_not_kept() {
        let v: Vec<u32> = Vec::with_capacity(KEEP / 4 + 1);
        give(v);
        let w: Vec<u32> = take(0);
        assert!(w.capacity() <= KEEP / 4);
    }

    #[test]
    fn a_list_of_borrowed_spellings_is_kept_with_its_room() {
        let text = b"alpha beta".to_vec();
        let mut v = take_spellings(100);
        v.push(Cow::Borrowed(&text[..5]));
        v.push(Cow::Owned(b"gamma".to_vec()));
        let (cap, at) = (v.capacity(), v.as_ptr() as usize);
        give_spellings(v);
        drop(text);
        let w = take_spellings(10);
        assert!(w.is_empty());
        // The same allocation: the lifetime went, the room stayed.
        assert_eq!((w.capacity(), w.as_ptr() as usize), (cap, at));
    }

    #[test]
    fn a_table_comes_back_empty_unless_far_larger_than_its_use() {
        let mut t = take_table(1000);
        for i in 0..1000u32 {
            t.insert_unique(i as u64, i, |&x| x as u64);
        }
        let cap = t.capacity();
        give_table(t);
        let mut t = take_table(10);
        assert!(t.is_empty());
        assert_eq!(t.capacity(), cap);
        // Used by a few entries only, it is not kept.
        t.insert_unique(1, 1, |&x| x as u64);
        give_table(t);
        assert!(take_table(0).capacity() < cap);
    }
}
