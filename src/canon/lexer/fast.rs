//! The token loop's fast path: the common tokens read by hand, a table
//! lookup per byte, without the logos state machine's dispatch per token.
//!
//! Plain identifiers, numbers, blanks, comments, directives and the
//! punctuators that are one byte or an obvious two (`->`, `::`, `--`,
//! digraphs) are most of a kernel's tokens. Wherever a longer or a
//! different token than the one read here could start (a backslash, which
//! may splice or start a UCN; a quote right after a word, which may be a
//! prefixed literal; `##`, `%:`, `[[`, strings and every other byte),
//! [`token`] gives up and the logos lexer reads the token, so every token is
//! the one logos reads (the tests compare both readings on generated text).

use super::{block_comment_end, directive_end, line_end, TokenKind};

/// A byte's class: what a token starting with it may be.
const OTHER: u8 = 0;
const BLANK: u8 = 1;
const NEWLINE: u8 = 2;
const WORD: u8 = 3;
const DIGIT: u8 = 4;
/// A punctuator that is its byte alone, whatever follows.
const ONE: u8 = 5;
const MINUS: u8 = 6;
const COLON: u8 = 7;
const LESS: u8 = 8;
const PERCENT: u8 = 9;
const BRACKET: u8 = 10;
const DOT: u8 = 11;
const SLASH: u8 = 12;
const HASH: u8 = 13;

const CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b' ' | b'\t' | 0x0b | 0x0c => BLANK,
            b'\n' | b'\r' => NEWLINE,
            b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'$' | 0x80..=0xff => WORD,
            b'0'..=b'9' => DIGIT,
            b'!' | b'&' | b'*' | b'+' | b',' | b';' | b'=' | b'>' | b'?' | b'^' | b'|' | b'~'
            | b'(' | b')' | b'{' | b'}' | b']' | b'@' | b'`' => ONE,
            b'-' => MINUS,
            b':' => COLON,
            b'<' => LESS,
            b'%' => PERCENT,
            b'[' => BRACKET,
            b'.' => DOT,
            b'/' => SLASH,
            b'#' => HASH,
            _ => OTHER,
        };
        b += 1;
    }
    t
};

/// Whether a byte continues an identifier, and whether it continues a
/// number (bit 0 and bit 1).
const CONTINUES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let word = matches!(c, b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'$' | b'0'..=b'9' | 0x80..=0xff);
        t[b] = word as u8 | ((word || c == b'.') as u8) << 1;
        b += 1;
    }
    t
};

/// The token at `at` (`at < src.len()`) and where it ends, when the fast
/// path reads it; `None` leaves it to logos. Blanks holding a newline set
/// `line_start` (a logical line starts after them).
#[inline(always)]
pub(super) fn token(src: &[u8], at: usize, line_start: &mut bool) -> Option<(TokenKind, usize)> {
    let next = |i: usize| src.get(i).copied().unwrap_or(0);
    match CLASS[src[at] as usize] {
        WORD => {
            let i = match src[at + 1..]
                .iter()
                .position(|&b| CONTINUES[b as usize] & 1 == 0)
            {
                Some(n) => at + 1 + n,
                None => src.len(),
            };
            // A splice or a UCN may continue the word, a quote may make it
            // a literal's prefix.
            match next(i) {
                b'\\' | b'"' | b'\'' => None,
                _ => Some((TokenKind::Ident, i)),
            }
        }
        BLANK | NEWLINE => {
            let mut newline = false;
            let i = skip_blanks(src, at, &mut newline);
            if next(i) == b'\\' {
                return None;
            }
            *line_start |= newline;
            Some((TokenKind::Whitespace, i))
        }
        DIGIT => number(src, at + 1),
        ONE => Some((TokenKind::Punct, at + 1)),
        MINUS => match next(at + 1) {
            b'>' => Some((TokenKind::Arrow, at + 2)),
            b'-' => Some((TokenKind::Punct, at + 2)),
            b'\\' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        COLON => match next(at + 1) {
            b':' => Some((TokenKind::ColonColon, at + 2)),
            b'>' => Some((TokenKind::Punct, at + 2)),
            b'\\' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        LESS => match next(at + 1) {
            b':' | b'%' => Some((TokenKind::Punct, at + 2)),
            b'\\' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        // `%:` may open a directive.
        PERCENT => match next(at + 1) {
            b'>' => Some((TokenKind::Punct, at + 2)),
            b':' | b'\\' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        BRACKET => match next(at + 1) {
            b'[' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        DOT => match next(at + 1) {
            b'0'..=b'9' => number(src, at + 2),
            b'.' if next(at + 2) == b'.' => Some((TokenKind::Punct, at + 3)),
            _ => Some((TokenKind::Dot, at + 1)),
        },
        SLASH => match next(at + 1) {
            b'/' => Some((TokenKind::LineComment, line_end(src, at + 2))),
            b'*' => Some(match block_comment_end(src, at + 2) {
                Some(end) => (TokenKind::BlockComment, end),
                None => (TokenKind::UnterminatedComment, src.len()),
            }),
            b'\\' => None,
            _ => Some((TokenKind::Punct, at + 1)),
        },
        // `##` (and `#`, a splice, `#`) is no directive even first on a line.
        HASH => match next(at + 1) {
            b'#' | b'\\' => None,
            _ if *line_start => Some((TokenKind::Preprocessor, directive_end(src, at + 1))),
            _ => Some((TokenKind::Punct, at + 1)),
        },
        _ => None,
    }
}

/// The token of a comment's text at `at` (`at < src.len()`), as
/// `super::Word` reads it, when read here: where it ends, and whether it is
/// an identifier. `None` leaves it to logos: a backslash (a UCN may start a
/// word, a splice continue one) and a number continued by a splice.
#[inline(always)]
pub(super) fn comment_word(src: &[u8], at: usize) -> Option<(usize, bool)> {
    let next = |i: usize| src.get(i).copied().unwrap_or(0);
    match CLASS[src[at] as usize] {
        WORD => {
            let mut i = at + 1;
            while i < src.len() && CONTINUES[src[i] as usize] & 1 != 0 {
                i += 1;
            }
            (next(i) != b'\\').then_some((i, true))
        }
        DIGIT => number(src, at + 1).map(|(_, end)| (end, false)),
        DOT if next(at + 1).is_ascii_digit() => number(src, at + 2).map(|(_, end)| (end, false)),
        // A `.` that starts no number is a byte of its own; any other run of
        // bytes that start nothing is one token, which names nothing.
        DOT => Some((at + 1, false)),
        _ if src[at] == b'\\' => None,
        _ => {
            let mut i = at + 1;
            while i < src.len() && CONTINUES[src[i] as usize] & 2 == 0 && src[i] != b'\\' {
                i += 1;
            }
            Some((i, false))
        }
    }
}

/// Where the blanks at `at` end; `line_start` is set when they hold a
/// newline. For a reader that drops blanks: a run of them read in pieces
/// (here, then by logos from a backslash) reads as one run would.
#[inline(always)]
pub(super) fn skip_blanks(src: &[u8], mut at: usize, line_start: &mut bool) -> usize {
    while let Some(&b) = src.get(at) {
        // Most blanks are spaces: those cost no table lookup.
        if b != b' ' {
            match CLASS[b as usize] {
                BLANK => {}
                NEWLINE => *line_start = true,
                _ => break,
            }
        }
        at += 1;
    }
    at
}

/// A number whose digit ends at `i`: the rest of its characters, an
/// exponent's sign and a digit separator's next character included.
#[inline(always)]
fn number(src: &[u8], mut i: usize) -> Option<(TokenKind, usize)> {
    loop {
        let b = src.get(i).copied().unwrap_or(0);
        let after = src.get(i + 1).copied().unwrap_or(0);
        if matches!(b, b'e' | b'E' | b'p' | b'P') && matches!(after, b'+' | b'-') {
            i += 2;
        } else if CONTINUES[b as usize] & 2 != 0 {
            // (Past the end `b` is a 0, which continues nothing.)
            i += 1;
        } else if b == b'\'' && CONTINUES[after as usize] & 1 != 0 && after < 0x80 && after != b'$'
        {
            i += 2;
        } else if b == b'\\' {
            // A splice may continue the number.
            return None;
        } else {
            return Some((TokenKind::Number, i));
        }
    }
}
