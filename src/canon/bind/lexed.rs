//! A text's tokens as the binder takes them: lexed once, blanks left out,
//! the code the token adapter reads and the few comments kept apart.

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

/// A text's tokens but blanks, comments included, as
/// [`crate::canon::lexer::for_each_token_spliced`] gives them, kept as two
/// lists: the code (every token but comments), which the adapter reads, and
/// the comments, each with the index in the code it stands before. Read in
/// order through [`TokenList::tokens`], which merges the two as it goes:
/// the code is never copied to put the comments back in (at a megabyte of
/// text that copy wrote 3 MB beside the code's own 2.75, where neither fits
/// a core's cache).
#[derive(Debug, Default)]
pub struct TokenList {
    /// Every token but comments, in order (a kept buffer: see
    /// [`crate::canon::scratch`]).
    pub(super) code: Vec<Token>,
    /// Every comment, in order, with the index in [`TokenList::code`] of
    /// the token it stands before (the code's length after the last token).
    pub(super) comments: Vec<(usize, Token)>,
}

impl TokenList {
    /// Every token, comments included, in order.
    pub fn tokens(&self) -> Tokens<'_> {
        Tokens {
            code: &self.code,
            from: 0,
            comments: &self.comments,
        }
    }

    /// How many names the code holds (what the binder checks its ids
    /// against).
    pub(super) fn idents(&self) -> usize {
        self.code
            .iter()
            .filter(|t| t.kind == TokenKind::Ident)
            .count()
    }
}

impl Drop for TokenList {
    /// Keeps the buffers for the thread's next text.
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.code));
        scratch::give(std::mem::take(&mut self.comments));
    }
}

/// Tokens of a [`TokenList`] in order, comments included: all of them, or
/// those a [`TokenIter`] has yet to give ([`TokenIter::rest`]).
#[derive(Clone, Copy, Debug)]
pub struct Tokens<'a> {
    /// The whole code; those here start at `from`.
    code: &'a [Token],
    from: usize,
    /// The comments here, each with its index in the whole code (at least
    /// `from`).
    comments: &'a [(usize, Token)],
}

impl<'a> Tokens<'a> {
    /// How many tokens there are, comments included.
    pub fn len(&self) -> usize {
        self.code.len() - self.from + self.comments.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tokens that are not comments, in order.
    pub fn code(&self) -> &'a [Token] {
        &self.code[self.from..]
    }

    /// The tokens in order, comments merged in.
    pub fn iter(&self) -> TokenIter<'a> {
        let stop = self.comments.first().map_or(self.code.len(), |c| c.0);
        debug_assert!(self.from <= stop);
        TokenIter {
            run: self.code[self.from..stop].iter(),
            code: self.code,
            comments: self.comments.iter(),
        }
    }
}

impl<'a> IntoIterator for Tokens<'a> {
    type Item = &'a Token;
    type IntoIter = TokenIter<'a>;

    fn into_iter(self) -> TokenIter<'a> {
        self.iter()
    }
}

/// The tokens of [`Tokens`] one by one: the code in runs between comments,
/// so that a token costs what a slice's iterator costs, and only the end of
/// a run looks at the comments.
#[derive(Clone, Debug)]
pub struct TokenIter<'a> {
    /// The code up to the next comment (or the end).
    run: std::slice::Iter<'a, Token>,
    /// The whole code.
    code: &'a [Token],
    /// The comments not yet given, each with its index in the whole code.
    comments: std::slice::Iter<'a, (usize, Token)>,
}

impl<'a> TokenIter<'a> {
    /// Where the current run of code ends: at the next comment's place.
    #[inline(always)]
    fn stop(&self) -> usize {
        self.comments
            .as_slice()
            .first()
            .map_or(self.code.len(), |c| c.0)
    }

    /// The code up to the next comment not yet given (or the end): a walk
    /// may take it token by token before asking [`TokenIter::next`] for
    /// the comment.
    #[inline(always)]
    pub fn code_run(&mut self) -> &mut std::slice::Iter<'a, Token> {
        &mut self.run
    }

    /// The tokens not yet given.
    #[inline]
    pub fn rest(&self) -> Tokens<'a> {
        Tokens {
            code: self.code,
            from: self.stop() - self.run.len(),
            comments: self.comments.as_slice(),
        }
    }

    /// At the end of a run: the next comment, with the run of code after it
    /// set up (none at the end). Inlined, but marked unlikely: a walk whose
    /// address escaped to a call of its own kept its place in memory, a
    /// load and a store per token in the renamer's loop, and one passed to
    /// it by value cost a copy each way per comment.
    #[inline(always)]
    fn comment(&mut self) -> Option<&'a Token> {
        unlikely();
        let (at, comment) = self.comments.next()?;
        let stop = self.stop();
        self.run = self.code[*at..stop].iter();
        Some(comment)
    }
}

impl<'a> Iterator for TokenIter<'a> {
    type Item = &'a Token;

    #[inline(always)]
    fn next(&mut self) -> Option<&'a Token> {
        match self.run.next() {
            Some(t) => Some(t),
            None => self.comment(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest().len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for TokenIter<'_> {}

/// Called on a path taken rarely, so that the compiler lays it out of the
/// way of the loop around it.
#[cold]
#[inline(never)]
fn unlikely() {}

/// A lexed text (see [`lex`]): its tokens ([`Lexed::tokens`]) and what the
/// binder reads of them, found on the lexing's walk.
pub struct Lexed {
    /// Every token but blanks, the code and the comments apart.
    pub(super) list: TokenList,
    /// Which keywords the typedef pre-pass looks for stand in the code.
    pub(super) keywords: Keywords,
    /// Where the directives stand in the code (a kept buffer: see
    /// [`crate::canon::scratch`]), so reading them walks no other token.
    pub(super) directives: Vec<usize>,
    /// Whether two tokens of the code spell a digraph (see
    /// [`super::tokens::adapt`]).
    pub(super) digraphs: bool,
    /// Whether the text was longer than [`MAX_TEXT`]: then it was not
    /// lexed (every list is empty) and the binder gives it up whole.
    pub(super) too_long: bool,
}

impl Lexed {
    /// Every token but blanks, comments included, in order.
    pub fn tokens(&self) -> Tokens<'_> {
        self.list.tokens()
    }
}

impl Drop for Lexed {
    /// Keeps the buffers left here for the thread's next text.
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.directives));
    }
}

/// Lexes `text` as [`super::bind_lexed`] takes it (so a caller that also
/// scans the tokens lexes once). The code apart from the comments, the keywords the
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
            list: TokenList::default(),
            keywords: Keywords::default(),
            directives: Vec::new(),
            digraphs: false,
            too_long: true,
        };
    }
    let mut code: Vec<Token> = scratch::take(text.len() / 4 + 1);
    // Comments are few: each is kept with the index in the code it stands
    // before, and never merged into a list of its own (see `TokenList`). A
    // kept buffer: grown anew for every text, it was a handful of
    // reallocations each.
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
    Lexed {
        list: TokenList { code, comments },
        keywords,
        directives,
        digraphs,
        too_long: false,
    }
}
