//! Punctuators as the compiler spells them: digraphs (line splices
//! removed) and attribute brackets standing apart. Either, missed, gives the
//! adapter a block structure or an attribute the compiler does not see, so
//! the text is given up where they stand (see [`super::tokens::adapt`]).

use super::lexed::Token;
use crate::canon::lexer::{spelling, TokenKind};

/// Whether the code token after a `[` (`next`: its index in `raw`; a
/// directive between does not count) is another `[`. Two `[` tokens only
/// ever open an attribute (C23, C++11), also with blanks, comments or a line
/// splice between, where the lexer's `[[` does not see one: its names would
/// be read as code (`[ [gnu::mode(QI)] ]` renamed with a local `QI`).
pub(super) fn brackets_apart(text: &[u8], raw: &[Token], next: usize) -> bool {
    raw[next.min(raw.len())..]
        .iter()
        .find(|t| t.kind != TokenKind::Preprocessor)
        .is_some_and(|t| t.kind == TokenKind::Punct && text[t.range()] == *b"[")
}

/// Whether a punctuator, spelled with its line splices removed, is a
/// digraph.
pub(super) fn is_digraph(b: &[u8]) -> bool {
    matches!(b, b"<%" | b"%>" | b"<:" | b":>" | b"%:" | b"%:%:")
}

/// Whether the token `one`, followed by `next`, spells a digraph: whole, or
/// split over the two (the last token is checked on its own). Tokens are
/// read as spelled, without their line splices: `<\⏎%` is `{` to the
/// compiler, and a brace the adapter took for an operator would give a
/// declaration in that block the scope of the one around it.
pub(super) fn spells_digraph(text: &[u8], one: &Token, next: &Token) -> bool {
    if one.kind != TokenKind::Punct {
        return false;
    }
    let first = &text[one.range()];
    // Every digraph, whole or split over two tokens, starts with one of these.
    if !matches!(first.first(), Some(b'<' | b'%' | b':')) {
        return false;
    }
    let first = spelling(first);
    if is_digraph(&first) {
        return true;
    }
    let two = spelling(&text[next.range()]);
    let mut both = [0u8; 4];
    next.kind == TokenKind::Punct
        && one.end() == next.start()
        && first.len() + two.len() <= both.len()
        && {
            both[..first.len()].copy_from_slice(&first);
            both[first.len()..first.len() + two.len()].copy_from_slice(&two);
            is_digraph(&both[..first.len() + two.len()])
        }
}
