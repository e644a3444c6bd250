//! Token buffers kept from one text to the next, per thread.
//!
//! A text's lexing, its comment-free copy, the grammar's terminals and the
//! identifier list are each about 24 bytes per token: for a 16 KiB kernel
//! about 100 KiB apiece. Allocated and freed anew for every text, they leave
//! the allocator freeing its heap's top back to the system and faulting it
//! in again, call after call, depending on the order the frees come in: a
//! cost that dwarfs their use. Kept here instead, a buffer is cleared and
//! reused; one larger than [`KEEP`] is freed as before, so a thread that once
//! met a huge text does not hold its memory.

use super::lexed::Token;
use super::sink::Decl;
use super::tokens::{Ident, Tok};
use std::cell::RefCell;

/// The largest buffer kept (in bytes of capacity).
pub const KEEP: usize = 8 << 20;

/// How many spare buffers of one kind are kept (a text needs two lexings'
/// worth at once: the tokens and their comment-free copy).
const SPARES: usize = 2;

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
}

thread_local! {
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// An element type whose buffers are kept.
pub trait Kept: Sized {
    /// Where its spare buffers are.
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>>;
}

impl Kept for Token {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.lexed
    }
}

impl Kept for (usize, Token) {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.comments
    }
}

impl Kept for (u32, Tok, u32) {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.terms
    }
}

impl Kept for Ident {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.idents
    }
}

impl Kept for u32 {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.ids
    }
}

impl Kept for usize {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.indices
    }
}

impl Kept for Decl {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.decls
    }
}

impl Kept for (usize, usize) {
    fn shelf(spare: &mut Spare) -> &mut Vec<Vec<Self>> {
        &mut spare.ranges
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
            if shelf.len() < SPARES {
                shelf.push(v);
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
}
