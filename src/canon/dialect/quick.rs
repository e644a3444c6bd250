//! The dialect scan fed a lexing at once, and the quick reading it allows
//! until a `(` can open a macro's arguments (see [`Scanner::tokens`]).

use super::Scanner;
use crate::canon::bind::Token;
use crate::canon::lexer::TokenKind;
use std::ops::Range;

impl Scanner<'_> {
    /// Every token of a lexing of `text` with blanks left out, in order: what
    /// [`Scanner::token`] would find given each token that
    /// [`Scanner::wants`] (and every name).
    ///
    /// Until a `(` can open a macro's arguments (with a kernel name, once a
    /// macro is known: the backend's, or one a directive defines) neither
    /// parentheses nor the name before one matter, and nor does the kernel's
    /// name in code, so most tokens cost one test of their kind or first
    /// byte ([`Scanner::quick`]).
    pub fn tokens(&mut self, text: &[u8], tokens: &[Token]) {
        let mut k = 0;
        if self.quick_ahead() {
            while let Some((kind, span, spliced)) = tokens.get(k).map(Token::parts) {
                k += 1;
                if !self.quick(text, *kind, &span, *spliced) {
                    break;
                }
            }
        }
        self.exact(text, &tokens[k..]);
    }

    /// Whether the scan may be fed by [`Scanner::quick`] (a `(` cannot yet
    /// open a macro's arguments).
    pub fn quick_ahead(&self) -> bool {
        !self.calls_possible()
    }

    /// The next token of a lexing, blanks left out, while
    /// [`Scanner::quick_ahead`] holds. Whether it still holds after it:
    /// once it does not, every later token goes to [`Scanner::exact`]. (A
    /// caller that knows the kind may call what this calls for it.)
    #[inline(always)]
    pub fn quick(
        &mut self,
        text: &[u8],
        kind: TokenKind,
        span: &Range<usize>,
        spliced: bool,
    ) -> bool {
        match kind {
            TokenKind::Ident => self.quick_name(text, span, spliced),
            TokenKind::Punct => self.quick_punct(text, span),
            TokenKind::Number => self.quick_number(text, span),
            TokenKind::Whitespace
            | TokenKind::LineComment
            | TokenKind::BlockComment
            | TokenKind::Dot
            | TokenKind::Arrow
            | TokenKind::ColonColon => {}
            _ => return self.quick_other(text, kind, span, spliced),
        }
        true
    }

    /// [`Scanner::quick`] for a name: every built-in macro it looks for
    /// starts with `_` (a UCN spelling one is a lexical error), `asm` with
    /// `a`.
    #[inline(always)]
    pub fn quick_name(&mut self, text: &[u8], span: &Range<usize>, spliced: bool) {
        if self.quick_wants_name(&text[span.start..span.start + 1]) {
            self.token_in(text, TokenKind::Ident, span.clone(), spliced, false);
        }
    }

    /// Whether [`Scanner::quick_name`] looks further at a name whose bytes
    /// (or spelling) start as `name` does: false for every name that is
    /// neither `asm`, a built-in macro nor a reported position macro.
    #[inline(always)]
    pub fn quick_wants_name(&self, name: &[u8]) -> bool {
        matches!(name.first(), Some(b'_' | b'a' | b'\\')) || self.position_macros.is_some()
    }

    /// [`Scanner::quick`] for a punctuator: only `<:` (with splices, maybe)
    /// is looked for, and a lone `<` is none.
    #[inline(always)]
    pub fn quick_punct(&mut self, text: &[u8], span: &Range<usize>) {
        if text[span.start] == b'<' && span.len() > 1 {
            self.token_in(text, TokenKind::Punct, span.clone(), false, false);
        }
    }

    /// [`Scanner::quick`] for a number: only a digit separator is looked for.
    #[inline(always)]
    pub fn quick_number(&mut self, text: &[u8], span: &Range<usize>) {
        if text[span.clone()].contains(&b'\'') {
            self.token_in(text, TokenKind::Number, span.clone(), false, false);
        }
    }

    /// [`Scanner::quick`] for any token but a blank, a name, a punctuator, a
    /// number, a well-formed comment or a member operator.
    pub fn quick_other(
        &mut self,
        text: &[u8],
        kind: TokenKind,
        span: &Range<usize>,
        spliced: bool,
    ) -> bool {
        if kind == TokenKind::Char {
            return true;
        }
        self.token_in(text, kind, span.clone(), spliced, false);
        // A directive that defines a macro leaves `last_ident` unset, and no
        // parenthesis open so far is in a call: the exact scan starts there.
        debug_assert!(self.last_ident.is_none() && self.in_call == 0);
        !self.calls_possible()
    }

    /// Tokens of a lexing, blanks left out, that follow those given to
    /// [`Scanner::quick`] (all of them, when none was): a slice, or the
    /// binder's [`crate::canon::bind::Tokens`], which keeps the comments
    /// apart from the code.
    pub fn exact<'a>(&mut self, text: &[u8], tokens: impl IntoIterator<Item = &'a Token>) {
        for t in tokens {
            let (kind, span, spliced) = (t.kind, t.range(), t.spliced);
            match kind {
                TokenKind::Ident => self.token(text, kind, span, spliced),
                TokenKind::LineComment | TokenKind::BlockComment | TokenKind::Whitespace => {}
                _ if self.wants(text, kind, &span) => self.token(text, kind, span, spliced),
                _ => {}
            }
        }
    }

    /// A directive's inside (from `base` in `text`) that holds only words
    /// of letters, digits and `_` between spaces and tabs, the first not
    /// `define` (`#pragma unroll 4`), read as [`Scanner::directive`] reads
    /// it but without lexing it: its names are all the scan can care about.
    /// Whether it was such a directive (if not, nothing was read).
    pub(super) fn plain_directive(&mut self, text: &[u8], base: usize, inner: &[u8]) -> bool {
        // The words' ends, found in one sweep before any is given on (a
        // directive with more goes the long way).
        let mut ends = [0; 8];
        let mut n = 0;
        let mut in_word = false;
        for (at, &b) in inner.iter().enumerate() {
            match WORD_BYTES[b as usize] {
                BLANK => {
                    if in_word {
                        if n == ends.len() {
                            return false;
                        }
                        ends[n] = at;
                        n += 1;
                    }
                    in_word = false;
                }
                WORD => in_word = true,
                _ => return false,
            }
        }
        if in_word {
            if n == ends.len() {
                return false;
            }
            ends[n] = inner.len();
            n += 1;
        }
        let mut start = 0;
        for (k, &end) in ends[..n].iter().enumerate() {
            while WORD_BYTES[inner[start] as usize] == BLANK {
                start += 1;
            }
            if k == 0 && inner[start..end] == *b"define" {
                return false;
            }
            // A word that starts with a digit is a number, which holds no
            // digit separator here. Of the other words only `asm`, the
            // built-in macros (all start with `_`), a backend's position
            // macro and the kernel's own name matter to `token_in`: the
            // rest (`pragma`, `unroll`) are not handed on.
            let word = &inner[start..end];
            let matters = matches!(word[0], b'_' | b'a')
                || self.position_macros.is_some()
                || self.kernel_name == Some(word);
            if !word[0].is_ascii_digit() && matters {
                self.token_in(
                    text,
                    TokenKind::Ident,
                    base + start..base + end,
                    false,
                    true,
                );
            }
            start = end;
        }
        true
    }
}

/// What each byte is to [`Scanner::plain_directive`]: a letter, digit or
/// `_` ([`WORD`]), a space or tab ([`BLANK`]), or anything else (0).
const WORD_BYTES: [u8; 256] = {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' {
            t[b] = WORD;
        } else if c == b' ' || c == b'\t' {
            t[b] = BLANK;
        }
        b += 1;
    }
    t
};
const WORD: u8 = 1;
const BLANK: u8 = 2;
