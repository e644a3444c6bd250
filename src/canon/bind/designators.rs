//! GNU's old-style designators: `{ a: 1 }` is `{ .a = 1 }` to gcc and clang.
//!
//! Inside braces the parse read as a balanced run (an initializer, a
//! compound literal; a statement expression's or a lambda's body too), a
//! name right before a `:` that closes no `?` (the adapter made those
//! operators) may be a member's name spelled without `.`: `P p = { a: a };`
//! sets the member `a` to the local `a`. The local is not what the first `a`
//! names, so renaming both would point the designator at another member
//! (review 2026-12-02, GPU F14). Which it is would take the struct's type,
//! which a header may hold, and the same `:` in a run's own block may be a
//! label's or a `case`'s: every such name is kept as written everywhere
//! instead ([`super::Reason::Designator`]), which costs only reuse. Braces
//! the parse took for a block (a scope it recorded starts at them) hold
//! labels and `case`s, which bind as before; a struct body's names are tags
//! or members already, and an unparsed item's are kept.

use super::tokens::Tok;

/// Where each name right before a `:` stands whose innermost enclosing
/// brace opens no scope in `scopes` (what the parse recorded), in order.
pub(super) fn positions(toks: &[(u32, Tok, u32)], scopes: &[(usize, usize)]) -> Vec<usize> {
    let mut out = Vec::new();
    // Where each open brace starts, innermost last.
    let mut open: Vec<u32> = Vec::new();
    // The scopes' starts, sorted: only sorted when a candidate is met.
    let mut blocks: Option<Vec<usize>> = None;
    for (i, &(at, t, _)) in toks.iter().enumerate() {
        match t {
            Tok::LBrace => open.push(at),
            Tok::RBrace => {
                open.pop();
            }
            Tok::Colon if i > 0 && toks[i - 1].1 == Tok::Ident => {
                let Some(&brace) = open.last() else {
                    continue;
                };
                let blocks = blocks.get_or_insert_with(|| {
                    let mut starts: Vec<usize> = scopes.iter().map(|s| s.0).collect();
                    starts.sort_unstable();
                    starts
                });
                if blocks.binary_search(&(brace as usize)).is_err() {
                    out.push(toks[i - 1].0 as usize);
                }
            }
            _ => {}
        }
    }
    out
}
