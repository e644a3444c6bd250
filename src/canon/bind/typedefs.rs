//! The typedef pre-pass: which names are types, found before parsing (the
//! parser never feeds back into the lexer).

use super::lexed::Token;
use crate::canon::lexer::{spelling, TokenKind};
use std::borrow::Cow;
use std::ops::Range;

/// What the typedef pre-pass found.
pub struct Typedefs<'t> {
    /// The names.
    pub names: rustc_hash::FxHashSet<Cow<'t, [u8]>>,
    /// Tags defined with a body (`struct P { ... }`): in C++ they name a type
    /// without the keyword, so they are parsed as type names (in C a name
    /// that is also a tag's then fails to parse, and is kept).
    pub tags: rustc_hash::FxHashSet<Cow<'t, [u8]>>,
    /// Where each declaring occurrence starts, in order.
    pub declaring: Vec<usize>,
}

/// Which keywords some identifier token of a text is spelled as, byte for
/// byte (a spliced one is not).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keywords {
    /// `struct`, `union`, `enum` or `class`.
    pub tags: bool,
    /// `typedef`.
    pub typedef: bool,
}

impl Keywords {
    /// Notes the identifier token `text[span]`.
    #[inline]
    pub fn note(&mut self, text: &[u8], span: &Range<usize>) {
        // Most words are ruled out by their length and first byte.
        let len = span.end - span.start;
        if (4..=7).contains(&len) && matches!(text[span.start], b's' | b'u' | b'e' | b'c' | b't') {
            self.note_word(&text[span.clone()]);
        }
    }

    #[inline(never)]
    fn note_word(&mut self, bytes: &[u8]) {
        match bytes {
            b"struct" | b"union" | b"enum" | b"class" => self.tags = true,
            b"typedef" => self.typedef = true,
            _ => {}
        }
    }
}

/// The names the text's `typedef` declarations declare, found without
/// parsing: in each `typedef ... ;`, an identifier followed by `;`, `,`,
/// `[` or `)` outside any parameter list, or the name in `(*name)`. The
/// grammar checks the guess: every typedef it parses must be in this set and
/// every name in it declared by one it parses, or nothing is renamed.
/// `words`: which of the keywords both loops look for stand in `raw` (a
/// text without them, most kernels, needs neither loop).
pub fn typedef_names<'t>(text: &'t [u8], raw: &[Token], words: Keywords) -> Typedefs<'t> {
    let mut out = Typedefs {
        names: rustc_hash::FxHashSet::default(),
        tags: rustc_hash::FxHashSet::default(),
        declaring: Vec::new(),
    };
    if words.tags {
        read_tags(text, raw, &mut out);
    }
    if words.typedef {
        read_typedefs(text, raw, &mut out);
    }
    out
}

/// Tags defined with a body (see [`Typedefs::tags`]).
fn read_tags<'t>(text: &'t [u8], raw: &[Token], out: &mut Typedefs<'t>) {
    for w in raw.windows(3) {
        if w[0].kind == TokenKind::Ident
            && matches!(
                &text[w[0].range()],
                b"struct" | b"union" | b"enum" | b"class"
            )
            && w[1].kind == TokenKind::Ident
            && &text[w[2].range()] == b"{"
        {
            let b = &text[w[1].range()];
            out.tags.insert(if w[1].spliced {
                spelling(b)
            } else {
                Cow::Borrowed(b)
            });
        }
    }
}

/// The names `typedef` declarations declare (see [`typedef_names`]).
fn read_typedefs<'t>(text: &'t [u8], raw: &[Token], out: &mut Typedefs<'t>) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i].kind == TokenKind::Ident && &text[raw[i].range()] == b"typedef" {
            let mut depth = 0i32;
            let mut j = i + 1;
            while j < raw.len() {
                let b = &text[raw[j].range()];
                if raw[j].kind == TokenKind::Punct {
                    match b {
                        b"(" | b"[" | b"{" => depth += 1,
                        b")" | b"]" | b"}" => depth -= 1,
                        b";" if depth <= 0 => break,
                        _ => {}
                    }
                } else if raw[j].kind == TokenKind::Ident {
                    let next = raw.get(j + 1).map(|t| &text[t.range()]);
                    let prev = raw.get(j.wrapping_sub(1)).map(|t| &text[t.range()]);
                    let declares = depth == 0 && matches!(next, Some(b";" | b"," | b"["))
                        || depth == 1 && prev == Some(b"*") && next == Some(b")");
                    if declares {
                        let n = if raw[j].spliced {
                            spelling(b)
                        } else {
                            Cow::Borrowed(b)
                        };
                        out.names.insert(n);
                        out.declaring.push(raw[j].start());
                    }
                }
                j += 1;
            }
            i = j;
        }
        i += 1;
    }
}
