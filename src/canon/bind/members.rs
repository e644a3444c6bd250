//! Struct and union member declarators: names in their own namespace.
//!
//! A member's name in its struct body (`struct pt { float x; }`) is no
//! occurrence of a block-scope or file-scope binding: members live in their
//! struct's namespace and are reached only after `.`, `->` or `::`. So a
//! local spelled like a member may be renamed while the member keeps its
//! name, at its declarator and at every access (the renamer keeps both).
//!
//! Only bodies of the plainest form are read so: member declarations of
//! specifiers the text itself spells as types (builtin type keywords,
//! qualifiers, typedef names the pre-pass found, `struct tag` without a
//! body), each followed by declarators: `*`s, a name, array bounds and an
//! optional literal bit-field width. A body with anything else (an unknown
//! word as a type, which a macro could make anything; a nested body, which
//! is read on its own; a method; `static`) keeps every name in it from
//! binding, as before. The names in array bounds are never exempt: a bound
//! may name a local (`char b[sizeof(x)]`). And a member name that anywhere
//! stands before a label colon (a GNU designator `{ x: 1 }`, a `case x:`)
//! is not exempt at all, since there it is spelled without a member
//! operator.

use super::tokens::{Adapted, Tok};
use super::Reason;

/// One plain struct or union body.
pub struct Body {
    /// Where each member declarator's name starts.
    pub names: Vec<usize>,
    /// Where each specifier word starts (its spelling must be no macro).
    pub specs: Vec<usize>,
}

/// The plain bodies in `toks` (see the module docs).
pub fn bodies(toks: &[(u32, Tok, u32)]) -> Vec<Body> {
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if toks[i].1 != Tok::Struct {
            continue;
        }
        let mut j = i + 1;
        if toks.get(j).is_some_and(|t| t.1 == Tok::Ident) {
            j += 1;
        }
        if toks.get(j).is_some_and(|t| t.1 == Tok::LBrace) {
            if let Some(body) = body(toks, j + 1) {
                out.push(body);
            }
        }
    }
    out
}

/// The body starting at `toks[i]` (just after its `{`), if it is plain.
fn body(toks: &[(u32, Tok, u32)], mut i: usize) -> Option<Body> {
    let mut b = Body {
        names: Vec::new(),
        specs: Vec::new(),
    };
    let at = |i: usize| toks.get(i).map(|t| t.1);
    loop {
        if at(i)? == Tok::RBrace {
            return Some(b);
        }
        let mut specs = 0;
        loop {
            match at(i)? {
                Tok::TypeName | Tok::Qual => {
                    b.specs.push(toks[i].0 as usize);
                    i += 1;
                }
                Tok::Struct if at(i + 1)? == Tok::Ident && at(i + 2)? != Tok::LBrace => {
                    i += 2;
                }
                _ => break,
            }
            specs += 1;
        }
        if specs == 0 {
            return None;
        }
        loop {
            while matches!(at(i)?, Tok::Star | Tok::Qual) {
                if at(i)? == Tok::Qual {
                    b.specs.push(toks[i].0 as usize);
                }
                i += 1;
            }
            if at(i)? != Tok::Ident {
                return None;
            }
            b.names.push(toks[i].0 as usize);
            i += 1;
            while at(i)? == Tok::Group {
                i += 1;
            }
            if at(i)? == Tok::Colon {
                if at(i + 1)? != Tok::Lit {
                    return None;
                }
                i += 2;
            }
            match at(i)? {
                Tok::Comma => i += 1,
                Tok::Semi => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
}

/// Marks the member declarators of plain struct bodies as members (see
/// the module docs) and returns where they stand. Not exempt: a body whose
/// specifier words are macros or stand in a directive, and a name that
/// stands before a label colon anywhere but as a bit-field's declarator.
pub(super) fn exempt(a: &mut Adapted<'_>, macros: Option<&crate::canon::MacroNames>) -> Vec<usize> {
    if !a.struct_words {
        return Vec::new();
    }
    let bodies = bodies(&a.toks);
    if bodies.is_empty() {
        return Vec::new();
    }
    let idents = &a.idents;
    let at = |p: usize| idents.binary_search_by_key(&p, |i| i.at as usize).ok();
    let mut declarators: Vec<usize> = bodies
        .iter()
        .flat_map(|b| b.names.iter().copied())
        .collect();
    declarators.sort_unstable();
    let mut colon: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
    for w in a.toks.windows(2) {
        if w[0].1 == Tok::Ident
            && w[1].1 == Tok::Colon
            && declarators.binary_search(&(w[0].0 as usize)).is_err()
        {
            if let Some(k) = at(w[0].0 as usize) {
                colon.insert(idents[k].id);
            }
        }
    }
    let directive: rustc_hash::FxHashSet<&[u8]> =
        a.opaque.iter().map(|(n, _)| n.as_ref()).collect();
    let mut exempt = Vec::new();
    for b in &bodies {
        let plain = b.specs.iter().all(|&p| {
            at(p).is_some_and(|k| {
                let name = a.names[idents[k].id as usize].as_ref();
                !directive.contains(name) && !macros.is_some_and(|m| m.contains(name))
            })
        });
        if !plain {
            continue;
        }
        for &p in &b.names {
            if let Some(k) = at(p) {
                if idents[k].never.is_none() && !colon.contains(&idents[k].id) {
                    exempt.push(k);
                }
            }
        }
    }
    exempt.sort_unstable();
    exempt.dedup();
    for &k in &exempt {
        a.idents[k].never = Some(Reason::Member);
    }
    exempt.iter().map(|&k| a.idents[k].at as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(ts: &[Tok]) -> Vec<(u32, Tok, u32)> {
        ts.iter()
            .enumerate()
            .map(|(i, &t)| (i as u32, t, i as u32 + 1))
            .collect()
    }

    #[test]
    fn plain_bodies_give_their_declarator_names() {
        use Tok::*;
        // struct pt { float x, *y[..]; unsigned int f : 3; };
        let t = toks(&[
            Struct, Ident, LBrace, TypeName, Ident, Comma, Star, Ident, Group, Semi, Qual,
            TypeName, Ident, Colon, Lit, Semi, RBrace, Semi,
        ]);
        let b = bodies(&t);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].names, [4, 7, 12]);
        assert_eq!(b[0].specs, [3, 10, 11]);
    }

    #[test]
    fn other_bodies_give_nothing() {
        use Tok::*;
        for ts in [
            // an unknown word as a type
            vec![Struct, LBrace, Ident, Ident, Semi, RBrace],
            // a method
            vec![
                Struct, LBrace, TypeName, Ident, LParen, RParen, LBrace, RBrace, RBrace,
            ],
            // `static`, or a width that is no literal
            vec![Struct, LBrace, Storage, TypeName, Ident, Semi, RBrace],
            vec![Struct, LBrace, TypeName, Ident, Colon, Ident, Semi, RBrace],
            // unterminated
            vec![Struct, LBrace, TypeName, Ident, Semi],
        ] {
            assert!(bodies(&toks(&ts)).is_empty(), "{ts:?}");
        }
        // A nested body: only the inner one is plain.
        let t = toks(&[
            Struct, LBrace, Struct, LBrace, TypeName, Ident, Semi, RBrace, Ident, Semi, RBrace,
        ]);
        let b = bodies(&t);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].names, [5]);
    }
}
