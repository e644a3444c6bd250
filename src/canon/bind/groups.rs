//! The bracketed groups the adapter may send to the parser as one token,
//! each walked once: [`balanced_plain`] walks a group to its
//! closer, and asked at every opener of nested parentheses
//! (`f(f(f(...)))`) it walked the rest of each group again, quadratic in
//! the nesting (review 2026-12-02: 128 KB of nested calls took 25 s). One
//! walk records the answer for every group it passes through.

use rustc_hash::FxHashMap;

use super::lexed::Token;
use super::tokens::not_plain;
use crate::canon::lexer::TokenKind;

/// The answers of [`balanced_plain`], by opener.
#[derive(Default)]
pub(super) struct Groups {
    known: FxHashMap<u32, (u32, bool)>,
    /// The walk's open groups, kept between calls (one allocation a text).
    stack: Vec<Open>,
}

/// A group open during the walk: where, and whether it is plain so far.
#[derive(Default)]
struct Open {
    at: usize,
    plain: bool,
}

impl Groups {
    /// What [`balanced_plain`] gives for the group opened at
    /// `raw[open]`, every group inside it answered on the same walk.
    pub(super) fn balanced_plain(
        &mut self,
        text: &[u8],
        raw: &[Token],
        open: usize,
    ) -> (usize, bool) {
        if let Some(&(end, plain)) = self.known.get(&(open as u32)) {
            return (end as usize, plain);
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        let answer = self.walk(text, raw, open, &mut stack);
        self.stack = stack;
        answer
    }

    fn walk(
        &mut self,
        text: &[u8],
        raw: &[Token],
        open: usize,
        stack: &mut Vec<Open>,
    ) -> (usize, bool) {
        for (j, t) in raw.iter().enumerate().skip(open) {
            let (kind, span, _) = t.parts();
            match kind {
                TokenKind::Punct => match &text[span.clone()] {
                    b"(" | b"[" | b"{" => {
                        // An inner opener counts against the group around
                        // it (the outermost's own does not).
                        if let Some(outer) = stack.last_mut() {
                            outer.plain &= !not_plain(text, raw, j);
                        }
                        stack.push(Open { at: j, plain: true });
                    }
                    b")" | b"]" | b"}" => {
                        let Some(done) = stack.pop() else {
                            // Only before the first opener, which `open` is.
                            continue;
                        };
                        // The adapter asks each opener once, left to right:
                        // only groups inside the one asked may be asked
                        // later, and only they are kept.
                        match stack.last_mut() {
                            Some(outer) => {
                                outer.plain &= done.plain;
                                self.known
                                    .insert(done.at as u32, (j as u32 + 1, done.plain));
                            }
                            None => return (j + 1, done.plain),
                        }
                    }
                    _ => {}
                },
                TokenKind::Ident if span.len() <= 6 => {
                    if let Some(g) = stack.last_mut() {
                        g.plain &= !not_plain(text, raw, j);
                    }
                }
                _ => {}
            }
        }
        // Unclosed: each group still open ends with the text, its last token
        // left out as a closer would be, and is plain when no token strictly
        // between holds a brace or a tag: one backward walk answers them all.
        let end = raw.len();
        let mut any = false;
        let mut k = end.saturating_sub(1);
        for g in stack.iter().rev() {
            while k > g.at + 1 {
                k -= 1;
                any |= not_plain(text, raw, k);
            }
            let plain = end < g.at + 2 || !any;
            self.known.insert(g.at as u32, (end as u32, plain));
        }
        self.known
            .get(&(open as u32))
            .map_or((end, true), |&(e, p)| (e as usize, p))
    }
}

/// [`super::tokens::balanced`], and whether no token strictly between `raw[open]` and the
/// last token of the group (its closer, or the text's last token when
/// nothing closes it) is a brace or a tag keyword: one walk for both. The
/// adapter asks [`Groups`], which gives the same answers and
/// walks each group once; this is their definition.
#[cfg(test)]
pub(super) fn balanced_plain(text: &[u8], raw: &[Token], open: usize) -> (usize, bool) {
    let mut depth = 0usize;
    let mut plain = true;
    for (j, (kind, span, _)) in raw
        .iter()
        .enumerate()
        .skip(open)
        .map(|(j, t)| (j, t.parts()))
    {
        match kind {
            TokenKind::Punct => match &text[span.clone()] {
                b"(" | b"[" | b"{" => {
                    plain &= j == open || !not_plain(text, raw, j);
                    depth += 1;
                }
                b")" | b"]" | b"}" => {
                    depth -= 1;
                    if depth == 0 {
                        return (j + 1, plain);
                    }
                }
                _ => {}
            },
            TokenKind::Ident if span.len() <= 6 => plain &= !not_plain(text, raw, j),
            _ => {}
        }
    }
    // Unclosed: the text's last token is left out, as a closer would be.
    let end = raw.len();
    let plain = end < open + 2 || !(open + 1..end - 1).any(|k| not_plain(text, raw, k));
    (end, plain)
}
