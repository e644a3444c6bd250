//! A lossless lexer for C, CUDA C++ and OpenCL C kernel text.
//!
//! Tokens are a kind and a span; the spans of [`lex`]'s tokens tile the input
//! exactly, whatever the bytes. Lexical problems (an unterminated comment,
//! string or raw string, a stray byte) are token kinds, never panics.
//!
//! Lines end as GCC ends them: at LF, CR LF, or a lone CR (translation phase
//! 1). Line splices (a backslash, then any spaces or tabs, then a line end:
//! GCC and clang both splice the blank form, with a warning) are honoured
//! wherever C honours them: inside identifiers, numbers, digraphs and the
//! member operators, between the two characters of a comment opener or
//! closer, at the end of a line comment and of a preprocessor line. A splice
//! between tokens is whitespace.
//!
//! Digraphs (`<: :> <% %> %: %:%:`) are punctuators, and `%:` opens a
//! directive where `#` would. Trigraphs are not replaced (whether they are
//! depends on the compiler's options): [`super::dialect`] finds them, and a
//! kernel that holds one is keyed on its raw text. A universal character
//! name that spells a basic character, a control character or a surrogate
//! makes its identifier a lexical error ([`TokenKind::InvalidUcn`]).
//!
//! Only what the renamer needs is distinguished: identifiers, the three member
//! operators after which a name is never renamed (`.`, `->`, `::`), and the
//! opaque regions whose contents are never renamed (literals, preprocessor
//! lines, `[[...]]` attributes). Every other punctuator is [`TokenKind::Punct`].
//!
//! The common tokens (plain identifiers, numbers, blanks, comments, most
//! punctuators) are read by hand (`lexer/fast.rs`) and logos reads the rest;
//! its patterns below still define every token (a test compares the two
//! readings).
//!
//! The words of a comment's text, which the renamer renames like code, are
//! read here too ([`for_each_comment_word`]), so every reading of kernel
//! text lives in this one module.

use logos::{Lexer, Logos};
use std::ops::Range;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// Spaces, tabs, newlines, form feeds and line splices between tokens.
    Whitespace,
    /// An identifier (`$` and non-ASCII bytes included, as GCC accepts them;
    /// universal character names too); it may contain line splices.
    Ident,
    /// A preprocessing number (`1e+5`, `0x1p-3f`, `10ull`, `1'000`).
    Number,
    /// A string literal, with its prefix (`u8`, `u`, `U`, `L`).
    Str,
    /// A character literal, with its prefix.
    Char,
    /// A C++ raw string literal `R"d(...)d"`, with its prefix.
    RawStr,
    /// `//` through the end of the line, continued across line splices.
    LineComment,
    /// `/* ... */`.
    BlockComment,
    /// A preprocessor line: from a `#` (or `%:`) first on its logical line
    /// through every continuation, up to (not including) the line end that
    /// ends it.
    Preprocessor,
    /// A `[[ ... ]]` attribute block.
    Attribute,
    /// `.`
    Dot,
    /// `->`
    Arrow,
    /// `::`
    ColonColon,
    /// Any other punctuator.
    Punct,
    /// A block comment with no `*/`: runs to the end of the input.
    UnterminatedComment,
    /// A string or character literal with no closing quote on its line.
    UnterminatedStr,
    /// A raw string with no closing `)delim"`, or an invalid delimiter: runs
    /// to the end of the input.
    UnterminatedRawStr,
    /// `[[` with no matching `]]`: runs to the end of the input.
    UnterminatedAttribute,
    /// A byte no token starts with (a stray backslash, a control byte).
    Unknown,
    /// An identifier holding a universal character name C forbids: one for a
    /// basic character (`\u0041`), a control character or a surrogate, or
    /// past U+10FFFF.
    InvalidUcn,
}

impl TokenKind {
    /// Whether the token is a lexical error.
    pub fn is_error(self) -> bool {
        matches!(
            self,
            TokenKind::UnterminatedComment
                | TokenKind::UnterminatedStr
                | TokenKind::UnterminatedRawStr
                | TokenKind::UnterminatedAttribute
                | TokenKind::Unknown
                | TokenKind::InvalidUcn
        )
    }

    /// Whether the token is a comment (well formed or not).
    pub fn is_comment(self) -> bool {
        matches!(
            self,
            TokenKind::LineComment | TokenKind::BlockComment | TokenKind::UnterminatedComment
        )
    }
}

/// A token: its kind and the byte range of the input it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is.
    pub span: Range<usize>,
}

/// Lexes `src` into tokens whose spans tile it exactly.
pub fn lex(src: &[u8]) -> Vec<Token> {
    let mut out = Vec::with_capacity(src.len() / 3 + 1);
    for_each_token(src, |kind, span| out.push(Token { kind, span }));
    out
}

/// Calls `f` with every token of `src` in order, without collecting them.
pub fn for_each_token(src: &[u8], mut f: impl FnMut(TokenKind, Range<usize>)) {
    for_each_token_spliced(src, |kind, span, _| f(kind, span))
}

/// Like [`for_each_token`], also telling whether an identifier is spelled
/// with a line splice or a universal character name (so only those need
/// [`spelling`]).
pub fn for_each_token_spliced(src: &[u8], f: impl FnMut(TokenKind, Range<usize>, bool)) {
    tokens::<true>(src, f)
}

/// Like [`for_each_token_spliced`], without the blanks (a reader that
/// drops them is spared a call and a test per blank).
pub fn for_each_nonblank_spliced(src: &[u8], f: impl FnMut(TokenKind, Range<usize>, bool)) {
    tokens::<false>(src, f)
}

/// The token loop; `BLANKS`: whether blanks are passed to `f`.
#[inline(always)]
fn tokens<const BLANKS: bool>(src: &[u8], f: impl FnMut(TokenKind, Range<usize>, bool)) {
    token_loop::<BLANKS, true>(src, f)
}

/// The token loop; `FAST`: whether the common tokens are read by
/// [`fast::token`] (the tests read without it too, to compare).
#[inline(always)]
fn token_loop<const BLANKS: bool, const FAST: bool>(
    src: &[u8],
    mut f: impl FnMut(TokenKind, Range<usize>, bool),
) {
    let mut lexer = Raw::lexer(src);
    // Where the next token starts, and whether a logical line starts there.
    let mut at = 0;
    let mut line_start = true;
    while at < src.len() {
        if FAST && !BLANKS {
            // Blanks are half the tokens: those not passed on are skipped
            // here, without a token's dispatch.
            at = fast::skip_blanks(src, at, &mut line_start);
            if at == src.len() {
                break;
            }
        }
        // A `#` is a directive only at the start of a logical line: comments
        // (which C turns into a space) and blanks keep the line's start, any
        // other token ends it, and a newline that is no splice begins a new
        // one.
        let fast = if FAST {
            fast::token(src, at, &mut line_start)
        } else {
            None
        };
        let (kind, span, escaped) = match fast {
            // The commonest kinds get a call of `f` each, with the kind a
            // constant there, so that what `f` does by kind is decided as
            // it is inlined, not tested per token.
            Some((TokenKind::Ident, end)) => {
                let span = at..end;
                at = end;
                line_start = false;
                f(TokenKind::Ident, span, false);
                continue;
            }
            Some((TokenKind::Punct, end)) => {
                let span = at..end;
                at = end;
                line_start = false;
                f(TokenKind::Punct, span, false);
                continue;
            }
            Some((TokenKind::Number, end)) => {
                let span = at..end;
                at = end;
                line_start = false;
                f(TokenKind::Number, span, false);
                continue;
            }
            Some((kind, end)) => {
                let span = at..end;
                at = end;
                (kind, span, false)
            }
            None => {
                // The logos lexer reads this token, from here.
                lexer.bump(at - lexer.span().end);
                lexer.extras.0 = line_start;
                let Some(raw) = lexer.next() else {
                    break;
                };
                let span = lexer.span();
                at = span.end;
                match raw {
                    Ok(Raw::LineBreak) => {
                        line_start = true;
                        (TokenKind::Whitespace, span, false)
                    }
                    Ok(Raw::EscapedIdent) => {
                        if ucns_are_valid(&src[span.clone()]) {
                            (TokenKind::Ident, span, true)
                        } else {
                            (TokenKind::InvalidUcn, span, false)
                        }
                    }
                    Ok(raw) => (raw.kind(), span, false),
                    Err(()) => (TokenKind::Unknown, span, false),
                }
            }
        };
        if kind == TokenKind::Whitespace {
            if BLANKS {
                f(kind, span, false);
            }
            continue;
        }
        if !kind.is_comment() {
            line_start = false;
        }
        f(kind, span, escaped);
    }
}

/// Whether the lexer stands at the start of a logical line (set by the token
/// loop, read by the `#` callback).
#[derive(Clone, Copy, Debug)]
struct LineStart(bool);

impl Default for LineStart {
    fn default() -> Self {
        LineStart(true)
    }
}

/// The spelling of an identifier as C sees it: line splices removed and
/// universal character names (`\u00e9`) written as the UTF-8 they name, so
/// `caf\u00e9` and `café` are one name.
pub fn spelling(ident: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !ident.contains(&b'\\') {
        return std::borrow::Cow::Borrowed(ident);
    }
    let mut out = Vec::with_capacity(ident.len());
    let mut i = 0;
    while i < ident.len() {
        if let n @ 1.. = splice_len(ident, i) {
            i += n;
            continue;
        }
        if let Some((c, n)) = ucn(ident, i) {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            i += n;
            continue;
        }
        out.push(ident[i]);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// The character a universal character name at `i` names, and its length.
/// A code point that is no character (a surrogate) is left as written.
fn ucn(src: &[u8], i: usize) -> Option<(char, usize)> {
    let digits = match (src.get(i), src.get(i + 1)) {
        (Some(b'\\'), Some(b'u')) => 4,
        (Some(b'\\'), Some(b'U')) => 8,
        _ => return None,
    };
    let hex = std::str::from_utf8(src.get(i + 2..i + 2 + digits)?).ok()?;
    let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
    Some((c, 2 + digits))
}

/// Whether every universal character name in an identifier is one C
/// allows there: not a basic or control character (below U+00A0, but `$`,
/// `@` and `` ` ``), not a surrogate, not past U+10FFFF.
fn ucns_are_valid(ident: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = ident[i..].iter().position(|&b| b == b'\\') {
        i += off;
        let digits = match ident.get(i + 1) {
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => {
                i += 1;
                continue;
            }
        };
        let Some(code) = ident
            .get(i + 2..i + 2 + digits)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
        else {
            return false;
        };
        let basic = code < 0xA0 && !matches!(code, 0x24 | 0x40 | 0x60);
        if basic || (0xD800..=0xDFFF).contains(&code) || code > 0x10FFFF {
            return false;
        }
        i += 2 + digits;
    }
    true
}

/// The length of a line end at `i` (LF, CR LF or a lone CR), or 0.
fn line_break_len(src: &[u8], i: usize) -> usize {
    match (src.get(i), src.get(i + 1)) {
        (Some(b'\r'), Some(b'\n')) => 2,
        (Some(b'\r' | b'\n'), _) => 1,
        _ => 0,
    }
}

/// The length of the line splice starting at `i` (a backslash, any spaces or
/// tabs, a line end), or 0.
fn splice_len(src: &[u8], i: usize) -> usize {
    if src.get(i) != Some(&b'\\') {
        return 0;
    }
    let blanks = src[i + 1..]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    match line_break_len(src, i + 1 + blanks) {
        0 => 0,
        n => 1 + blanks + n,
    }
}

/// The index of the first byte at or after `i` that is not a line splice.
fn skip_splices(src: &[u8], mut i: usize) -> usize {
    loop {
        match splice_len(src, i) {
            0 => return i,
            n => i += n,
        }
    }
}

/// Where the block comment whose body starts at `i` ends (just past its `*/`,
/// which may be split by line splices), or `None` if it never does.
fn block_comment_end(src: &[u8], mut i: usize) -> Option<usize> {
    while let Some(off) = memchr_star(&src[i..]) {
        let after = skip_splices(src, i + off + 1);
        if src.get(after) == Some(&b'/') {
            return Some(after + 1);
        }
        i += off + 1;
    }
    None
}

fn memchr_star(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'*')
}

/// Where the line comment (or preprocessor line) starting at `i` ends: at the
/// first line end that is not part of a line splice (not included).
fn line_end(src: &[u8], mut i: usize) -> usize {
    while let Some(at) = next_break_or_backslash(src, i) {
        if src[at] != b'\\' {
            return at;
        }
        i = at + splice_len(src, at).max(1);
    }
    src.len()
}

/// `b` in every byte of a word.
const fn splat(b: u8) -> u64 {
    b as u64 * 0x0101_0101_0101_0101
}

/// The high bit of each byte of `v` that is zero (exactly: no borrow
/// between bytes).
#[inline(always)]
fn zero_bytes(v: u64) -> u64 {
    const LOW7: u64 = splat(0x7f);
    !(((v & LOW7) + LOW7) | v | LOW7)
}

/// The first line end byte or backslash at or after `i`: eight bytes at a
/// time (a comment's or a directive's text is long runs of neither).
fn next_break_or_backslash(src: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = src.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let hit = zero_bytes(x ^ splat(b'\n'))
            | zero_bytes(x ^ splat(b'\r'))
            | zero_bytes(x ^ splat(b'\\'));
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    src.get(i..)?
        .iter()
        .position(|&b| matches!(b, b'\n' | b'\r' | b'\\'))
        .map(|off| i + off)
}

/// What a `/` starts, looking past line splices for a `/` or `*`.
fn slash(lex: &mut Lexer<'_, Raw>) -> Raw {
    let src = lex.source();
    let at = skip_splices(src, lex.span().end);
    match src.get(at) {
        Some(b'/') => {
            let end = line_end(src, at + 1);
            lex.bump(end - lex.span().end);
            Raw::LineComment
        }
        Some(b'*') => match block_comment_end(src, at + 1) {
            Some(end) => {
                lex.bump(end - lex.span().end);
                Raw::BlockComment
            }
            None => {
                lex.bump(src.len() - lex.span().end);
                Raw::UnterminatedComment
            }
        },
        _ => Raw::Punct,
    }
}

/// Skips a string or character literal whose opening quote is at `i`, within
/// one logical line; returns the index after its closing quote, or the line's
/// end when unterminated.
fn skip_quoted(src: &[u8], i: usize) -> usize {
    let quote = src[i];
    let mut j = i + 1;
    while j < src.len() {
        match src[j] {
            b'\\' => {
                j += if splice_len(src, j) > 0 {
                    splice_len(src, j)
                } else {
                    2
                }
            }
            b'\n' | b'\r' => return j,
            b if b == quote => return j + 1,
            _ => j += 1,
        }
    }
    src.len()
}

/// A `#` (or `%:`): a preprocessor line when first on its logical line (only
/// blanks, comments and line splices before it), else a punctuator.
///
/// The line runs through its splices; a block comment inside it may carry it
/// across newlines, and a quote or `//` inside it is honoured, as the
/// preprocessor does.
fn hash(lex: &mut Lexer<'_, Raw>) -> Raw {
    let src = lex.source();
    if !lex.extras.0 {
        return Raw::Punct;
    }
    let end = directive_end(src, lex.span().end);
    lex.bump(end - lex.span().end);
    Raw::Preprocessor
}

/// Where the preprocessor line whose text starts at `i` ends (see [`hash`]).
fn directive_end(src: &[u8], mut i: usize) -> usize {
    loop {
        // Only these bytes end the line or begin what it must read past.
        let Some(at) = next_in_directive(src, i) else {
            break src.len();
        };
        i = at;
        match src[i] {
            b'\n' | b'\r' => break i,
            b'\\' => i += splice_len(src, i).max(1),
            b'"' | b'\'' => i = skip_quoted(src, i),
            b'/' => {
                let at = skip_splices(src, i + 1);
                match src.get(at) {
                    Some(b'/') => break line_end(src, at + 1),
                    Some(b'*') => match block_comment_end(src, at + 1) {
                        Some(e) => i = e,
                        None => break src.len(),
                    },
                    _ => i += 1,
                }
            }
            _ => i += 1,
        }
    }
}

/// The first byte at or after `i` that [`directive_end`] acts on: eight
/// bytes at a time. A twin of [`next_break_or_backslash`] with three more
/// bytes, not one search generic over its byte set: that version changed
/// how the renamer's pass was inlined and cost it 0.7M instructions at
/// 1 MiB.
fn next_in_directive(src: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = src.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let hit = zero_bytes(x ^ splat(b'\n'))
            | zero_bytes(x ^ splat(b'\r'))
            | zero_bytes(x ^ splat(b'\\'))
            | zero_bytes(x ^ splat(b'"'))
            | zero_bytes(x ^ splat(b'\''))
            | zero_bytes(x ^ splat(b'/'));
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    src.get(i..)?
        .iter()
        .position(|&b| matches!(b, b'\n' | b'\r' | b'\\' | b'"' | b'\'' | b'/'))
        .map(|off| i + off)
}

/// A `[[`: an attribute through its matching `]]`; brackets nest and string
/// literals are skipped. Without a match, an error to the end of the input.
fn attribute(lex: &mut Lexer<'_, Raw>) -> Raw {
    let src = lex.source();
    let mut depth = 0usize;
    let mut i = lex.span().end;
    while i < src.len() {
        match src[i] {
            b'[' => depth += 1,
            b']' if depth > 0 => depth -= 1,
            b']' if src.get(i + 1) == Some(&b']') => {
                lex.bump(i + 2 - lex.span().end);
                return Raw::Attribute;
            }
            b'"' | b'\'' => {
                i = skip_quoted(src, i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    lex.bump(src.len() - lex.span().end);
    Raw::UnterminatedAttribute
}

/// A raw string after its `R"`: the delimiter (at most 16 bytes, none of
/// space, parentheses, backslash or control characters), `(`, the body, and
/// `)delimiter"`. Otherwise an error to the end of the input.
fn raw_string(lex: &mut Lexer<'_, Raw>) -> Raw {
    let src = lex.source();
    let open = lex.span().end;
    let delim_len = src[open..]
        .iter()
        .take(17)
        .position(|&b| b == b'(')
        .filter(|&n| {
            n <= 16
                && src[open..open + n].iter().all(|&b| {
                    !matches!(b, b' ' | b')' | b'\\' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
                })
        });
    if let Some(n) = delim_len {
        let delim = &src[open..open + n];
        let body = open + n + 1;
        let mut i = body;
        while let Some(off) = src[i..].iter().position(|&b| b == b')') {
            let close = i + off + 1;
            if src[close..].starts_with(delim) && src.get(close + n) == Some(&b'"') {
                lex.bump(close + n + 1 - lex.span().end);
                return Raw::DelimitedStr;
            }
            i = close;
        }
    }
    lex.bump(src.len() - lex.span().end);
    Raw::UnterminatedDelimitedStr
}

#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(utf8 = false)]
#[logos(subpattern sp = r"\\[ \t]*(\r\n|\r|\n)")]
#[logos(subpattern ucn = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}")]
#[logos(subpattern ids = r"(?-u:[A-Za-z_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern idc = r"(?-u:[A-Za-z0-9_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern id0 = r"(?-u:[A-Za-z_$\x80-\xFF])")]
#[logos(subpattern id1 = r"(?-u:[A-Za-z0-9_$\x80-\xFF])")]
#[logos(subpattern esc = r"(?-u:\\([ \t]*(\r\n|\r|\n)|[\x00-\xFF]))")]
#[logos(subpattern pfx = r"u8|u|U|L")]
#[logos(extras = LineStart)]
enum Raw {
    // Blanks that hold a newline (one that is no splice) are told apart by
    // the lexer itself, so tracking the start of a line costs no scan.
    // A backslash, CR, LF is one splice (CR LF is one line end), not a
    // splice ended by CR and then a newline.
    #[regex(r"([ \t\x0B\x0C]|(?&sp))+", priority = 3)]
    Whitespace,
    #[regex(r"([ \t\x0B\x0C]|(?&sp))*[\r\n]([ \t\n\r\x0B\x0C]|(?&sp))*")]
    LineBreak,
    // Identifiers spelled plainly (nearly all) are told apart by the lexer,
    // so only the rare one with a splice or a universal character name is
    // ever re-spelled.
    #[regex(r"(?&id0)(?&id1)*", priority = 10)]
    Ident,
    #[regex(r"(?&ids)((?&sp)*(?&idc))*")]
    EscapedIdent,
    #[regex(r"\.?[0-9]((?&sp)*((?-u:[0-9A-Za-z_$.\x80-\xFF])|[eEpP][+-]|'[0-9A-Za-z_]))*")]
    Number,
    #[regex(r#"(?&pfx)?"((?-u:[^"\\\r\n])|(?&esc))*""#)]
    Str,
    #[regex(r#"(?&pfx)?"((?-u:[^"\\\r\n])|(?&esc))*"#, priority = 1)]
    #[regex(r#"(?&pfx)?'((?-u:[^'\\\r\n])|(?&esc))*"#, priority = 1)]
    UnterminatedStr,
    #[regex(r#"(?&pfx)?'((?-u:[^'\\\r\n])|(?&esc))*'"#)]
    Char,
    // Tokens a callback finishes, and whose kind it decides.
    #[regex(r#"(?&pfx)?R""#, raw_string)]
    #[token(b"/", slash)]
    #[token(b"#", hash)]
    #[regex(r"%(?&sp)*:", hash)]
    #[token(b"[[", attribute)]
    Decided,
    #[token(b".")]
    Dot,
    #[regex(r"-(?&sp)*>")]
    Arrow,
    #[regex(r":(?&sp)*:")]
    ColonColon,
    // `--` is one token, so `a-->b` is `a -- > b`, not `a - -> b`.
    #[regex(r"-(?&sp)*-")]
    Decrement,
    #[token(b"...")]
    #[regex(r"[!%&*+,\-:;<=>?^|~(){}\[\]@`]")]
    // Digraphs, and the two pasting operators: `##` is no directive even
    // first on a line.
    #[regex(r"<(?&sp)*:|:(?&sp)*>|<(?&sp)*%|%(?&sp)*>")]
    #[regex(r"%(?&sp)*:(?&sp)*%(?&sp)*:|#(?&sp)*#")]
    Punct,
    // What the callbacks decide (no pattern of their own): with no payload
    // the kind is one table lookup. (`DelimitedStr`: a raw string.)
    DelimitedStr,
    UnterminatedDelimitedStr,
    LineComment,
    BlockComment,
    UnterminatedComment,
    Preprocessor,
    Attribute,
    UnterminatedAttribute,
}

impl Raw {
    fn kind(self) -> TokenKind {
        match self {
            Raw::Whitespace | Raw::LineBreak => TokenKind::Whitespace,
            Raw::Ident | Raw::EscapedIdent => TokenKind::Ident,
            Raw::Decrement => TokenKind::Punct,
            Raw::Number => TokenKind::Number,
            Raw::Str => TokenKind::Str,
            Raw::Char => TokenKind::Char,
            Raw::UnterminatedStr => TokenKind::UnterminatedStr,
            // Never emitted: its callbacks give the token they decide.
            Raw::Decided => TokenKind::Unknown,
            Raw::DelimitedStr => TokenKind::RawStr,
            Raw::UnterminatedDelimitedStr => TokenKind::UnterminatedRawStr,
            Raw::LineComment => TokenKind::LineComment,
            Raw::BlockComment => TokenKind::BlockComment,
            Raw::UnterminatedComment => TokenKind::UnterminatedComment,
            Raw::Preprocessor => TokenKind::Preprocessor,
            Raw::Attribute => TokenKind::Attribute,
            Raw::UnterminatedAttribute => TokenKind::UnterminatedAttribute,
            Raw::Dot => TokenKind::Dot,
            Raw::Arrow => TokenKind::Arrow,
            Raw::ColonColon => TokenKind::ColonColon,
            Raw::Punct => TokenKind::Punct,
        }
    }
}

/// Calls `f` with the span of every identifier among the words of a
/// comment's text (`spliced`: it holds a line splice or a UCN, so its
/// spelling differs from its bytes). Inside a comment nothing else means
/// anything (quotes included), so this is not the code lexer's reading:
/// numbers are skipped whole (`2x` holds no name), every other byte is
/// passed over.
pub fn for_each_comment_word(comment: &[u8], f: impl FnMut(Range<usize>, bool)) {
    comment_words::<true>(comment, f)
}

/// [`for_each_comment_word`]; `FAST`: whether plain words, numbers and the
/// bytes between them are read by [`fast::comment_word`] (the tests read
/// without it too, to compare).
#[inline(always)]
fn comment_words<const FAST: bool>(comment: &[u8], mut f: impl FnMut(Range<usize>, bool)) {
    let mut words = Word::lexer(comment);
    let mut at = 0;
    while at < comment.len() {
        if FAST {
            if let Some((end, word)) = fast::comment_word(comment, at) {
                if word {
                    f(at..end, false);
                }
                at = end;
                continue;
            }
        }
        // Logos reads this token, from here.
        words.bump(at - words.span().end);
        let Some(word) = words.next() else {
            break;
        };
        at = words.span().end;
        if let Ok(Word::Ident | Word::EscapedIdent) = word {
            f(words.span(), word == Ok(Word::EscapedIdent));
        }
    }
}

/// Words inside a comment: identifiers (as the code lexer spells them),
/// numbers (so `2x` holds no name), and everything else.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(utf8 = false)]
#[logos(subpattern sp = r"\\[ \t]*(\r\n|\r|\n)")]
#[logos(subpattern ucn = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}")]
#[logos(subpattern ids = r"(?-u:[A-Za-z_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern idc = r"(?-u:[A-Za-z0-9_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern id0 = r"(?-u:[A-Za-z_$\x80-\xFF])")]
#[logos(subpattern id1 = r"(?-u:[A-Za-z0-9_$\x80-\xFF])")]
enum Word {
    #[regex(r"(?&id0)(?&id1)*", priority = 10)]
    Ident,
    #[regex(r"(?&ids)((?&sp)*(?&idc))*")]
    EscapedIdent,
    #[regex(r"\.?[0-9]((?&sp)*((?-u:[0-9A-Za-z_$.\x80-\xFF])|[eEpP][+-]|'[0-9A-Za-z_]))*")]
    Number,
    #[regex(r"(?-u:[^A-Za-z0-9_$.\\\x80-\xFF])+")]
    #[regex(r"(?-u:[\x00-\xFF])", priority = 0)]
    Other,
}

mod fast;

#[cfg(test)]
mod tests;
