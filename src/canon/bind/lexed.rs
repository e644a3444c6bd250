//! A text's tokens as the binder takes them: lexed once, blanks left out,
//! and the comment-free copy the token adapter reads made on the same walk.

use super::spelled::spells_digraph;
use super::typedefs::Keywords;
use crate::canon::lexer::{for_each_nonblank_spliced, TokenKind};
use crate::canon::scratch;
use std::ops::Range;

/// The longest text the binder takes: its token positions are `u32` (a
/// token half the size of one of `usize` spans, which at a megabyte of text
/// is what bounds the speed: the token lists outgrow the caches). A longer
/// text is given up whole before any position is formed (see [`lex`] and
/// [`crate::canon::rename::Renamer::canonicalize`]).
pub const MAX_TEXT: usize = u32::MAX as usize;

/// One token: its kind, its span, and whether it is an identifier spelled
/// with a line splice or a universal character name. Twelve bytes, `Copy`:
/// only formed for a text of at most [`MAX_TEXT`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    lo: u32,
    hi: u32,
    /// What the token is.
    pub kind: TokenKind,
    /// Whether the token is an identifier spelled with a line splice or a
    /// universal character name.
    pub spliced: bool,
}

impl Token {
    /// The token of `kind` over `span`; the span must end at most at
    /// [`MAX_TEXT`] (checked in debug builds: [`lex`] forms none beyond).
    #[inline(always)]
    pub fn new(kind: TokenKind, span: Range<usize>, spliced: bool) -> Token {
        debug_assert!(span.end <= MAX_TEXT);
        Token {
            lo: span.start as u32,
            hi: span.end as u32,
            kind,
            spliced,
        }
    }

    /// Where the token starts.
    #[inline(always)]
    pub fn start(&self) -> usize {
        self.lo as usize
    }

    /// Where the token ends (exclusive).
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.hi as usize
    }

    /// The token's byte range.
    #[inline(always)]
    pub fn range(&self) -> Range<usize> {
        self.start()..self.end()
    }

    /// The kind, range and splice flag, as the tuple this type replaced
    /// gave them to a pattern (kind and flag by reference).
    #[inline(always)]
    pub fn parts(&self) -> (&TokenKind, Range<usize>, &bool) {
        (&self.kind, self.range(), &self.spliced)
    }
}

/// A lexed text (see [`lex`]): it reads as every token but blanks,
/// comments included, as [`crate::canon::lexer::for_each_token_spliced`]
/// gives them.
pub struct Lexed {
    /// Every token but blanks, comments included; left empty when the text
    /// has no comment, as it is then [`Lexed::code`].
    pub(super) all: Vec<Token>,
    /// The same without comments: what the adapter reads.
    pub(super) code: Vec<Token>,
    /// Which keywords the typedef pre-pass looks for stand in the code.
    pub(super) keywords: Keywords,
    /// Where the directives stand in [`Lexed::code`] (a kept buffer: see
    /// [`crate::canon::scratch`]), so reading them walks no other token.
    pub(super) directives: Vec<usize>,
    /// Whether two tokens of the code spell a digraph (see
    /// [`super::tokens::adapt`]).
    pub(super) digraphs: bool,
    /// Whether the text was longer than [`MAX_TEXT`]: then it was not
    /// lexed (every list is empty) and the binder gives it up whole.
    pub(super) too_long: bool,
}

impl std::ops::Deref for Lexed {
    type Target = [Token];

    fn deref(&self) -> &[Token] {
        if self.all.is_empty() {
            &self.code
        } else {
            &self.all
        }
    }
}

impl Drop for Lexed {
    /// Keeps the buffers left here for the thread's next text.
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.all));
        scratch::give(std::mem::take(&mut self.code));
        scratch::give(std::mem::take(&mut self.directives));
    }
}

/// Lexes `text` as [`super::bind_lexed`] takes it (so a caller that also
/// scans the tokens lexes once). The comment-free copy, the keywords the
/// typedef pre-pass looks for and the digraph check are made on the
/// lexing's own walk: each was a walk of its own over the tokens.
///
/// A text longer than [`MAX_TEXT`] is not lexed: its [`Lexed`] holds no
/// token, and the binding made of it gives the text up whole.
pub fn lex(text: &[u8]) -> Lexed {
    lex_within(text, MAX_TEXT)
}

/// [`lex`], taking texts of at most `limit` bytes (lower than [`MAX_TEXT`]
/// only in tests of a longer text's path).
pub(super) fn lex_within(text: &[u8], limit: usize) -> Lexed {
    if text.len() > limit.min(MAX_TEXT) {
        return Lexed {
            all: Vec::new(),
            code: Vec::new(),
            keywords: Keywords::default(),
            directives: Vec::new(),
            digraphs: false,
            too_long: true,
        };
    }
    let mut code: Vec<Token> = scratch::take(text.len() / 4 + 1);
    // Comments are few: each is kept with the index in the code it stands
    // before, and the full list is put together once, copying the code
    // between them in runs (one push per token, not two). A kept buffer:
    // grown anew for every text, it was a handful of reallocations each.
    let mut comments: Vec<(usize, Token)> = scratch::take(0);
    let mut directives: Vec<usize> = scratch::take(0);
    let mut keywords = Keywords::default();
    let mut digraphs = false;
    // Whether the last token of the code may start a digraph (a punctuator
    // starting with `<`, `%` or `:`): only then is the pair looked at.
    let mut may_start = false;
    // Inlined at each of the token loop's calls, where the kind is often a
    // constant: the tests by kind below are decided there.
    for_each_nonblank_spliced(
        text,
        #[inline(always)]
        |kind, span, spliced| {
            if !kind.is_comment() {
                if may_start && !digraphs {
                    if let Some(prev) = code.last() {
                        digraphs =
                            spells_digraph(text, prev, &Token::new(kind, span.clone(), spliced));
                    }
                }
                may_start =
                    kind == TokenKind::Punct && matches!(text[span.start], b'<' | b'%' | b':');
                if kind == TokenKind::Ident {
                    keywords.note(text, &span);
                } else if kind == TokenKind::Preprocessor {
                    directives.push(code.len());
                }
                code.push(Token::new(kind, span, spliced));
            } else {
                comments.push((code.len(), Token::new(kind, span, spliced)));
            }
        },
    );
    let mut all: Vec<Token> = Vec::new();
    if !comments.is_empty() {
        all = scratch::take(code.len() + comments.len());
        let mut copied = 0;
        for (at, comment) in comments.drain(..) {
            all.extend_from_slice(&code[copied..at]);
            all.push(comment);
            copied = at;
        }
        all.extend_from_slice(&code[copied..]);
    }
    scratch::give(comments);
    Lexed {
        all,
        code,
        keywords,
        directives,
        digraphs,
        too_long: false,
    }
}
