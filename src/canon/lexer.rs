//! A lossless lexer for C, CUDA C++ and OpenCL C kernel text.
//!
//! Tokens are a kind and a span; the spans of [`lex`]'s tokens tile the input
//! exactly, whatever the bytes. Lexical problems (an unterminated comment,
//! string or raw string, a stray byte) are token kinds, never panics.
//!
//! Line splices (backslash-newline, LF or CRLF) are honoured wherever C honours
//! them: inside identifiers, numbers and the member operators, between the two
//! characters of a comment opener or closer, at the end of a line comment and
//! of a preprocessor line. A splice between tokens is whitespace.
//!
//! Only what the renamer needs is distinguished: identifiers, the three member
//! operators after which a name is never renamed (`.`, `->`, `::`), and the
//! opaque regions whose contents are never renamed (literals, preprocessor
//! lines, `[[...]]` attributes). Every other punctuator is [`TokenKind::Punct`].

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
    /// A preprocessor line: from a `#` first on its line through every
    /// continuation, up to (not including) the newline that ends it.
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
pub fn for_each_token_spliced(src: &[u8], mut f: impl FnMut(TokenKind, Range<usize>, bool)) {
    let mut lexer = Raw::lexer(src);
    while let Some(raw) = lexer.next() {
        let span = lexer.span();
        // A `#` is a directive only at the start of a logical line: comments
        // (which C turns into a space) and blanks keep the line's start, any
        // other token ends it, and a newline that is no splice begins a new one.
        let (kind, escaped) = match raw {
            Ok(Raw::LineBreak) => {
                lexer.extras.0 = true;
                (TokenKind::Whitespace, false)
            }
            Ok(Raw::Whitespace) => (TokenKind::Whitespace, false),
            Ok(Raw::EscapedIdent) => {
                lexer.extras.0 = false;
                (TokenKind::Ident, true)
            }
            Ok(raw) => {
                let kind = raw.kind();
                if !kind.is_comment() {
                    lexer.extras.0 = false;
                }
                (kind, false)
            }
            Err(()) => {
                lexer.extras.0 = false;
                (TokenKind::Unknown, false)
            }
        };
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

/// The length of the line splice starting at `i` (`\` LF or `\` CR LF), or 0.
fn splice_len(src: &[u8], i: usize) -> usize {
    if src.get(i) != Some(&b'\\') {
        return 0;
    }
    match (src.get(i + 1), src.get(i + 2)) {
        (Some(b'\n'), _) => 2,
        (Some(b'\r'), Some(b'\n')) => 3,
        _ => 0,
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

/// Whether the newline at `nl` ends a line splice (is preceded by a backslash,
/// possibly with a CR between).
fn newline_is_spliced(src: &[u8], nl: usize) -> bool {
    match nl.checked_sub(1).map(|i| src[i]) {
        Some(b'\\') => true,
        Some(b'\r') => nl >= 2 && src[nl - 2] == b'\\',
        _ => false,
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
/// first newline that is not part of a line splice (not included).
fn line_end(src: &[u8], mut i: usize) -> usize {
    loop {
        match src[i..].iter().position(|&b| b == b'\n') {
            None => return src.len(),
            Some(off) => {
                let nl = i + off;
                if !newline_is_spliced(src, nl) {
                    // A CR before the newline belongs to the line ending, not the token.
                    return if nl > i && src[nl - 1] == b'\r' {
                        nl - 1
                    } else {
                        nl
                    };
                }
                i = nl + 1;
            }
        }
    }
}

/// What a `/` starts, looking past line splices for a `/` or `*`.
fn slash(lex: &mut Lexer<'_, Raw>) -> TokenKind {
    let src = lex.source();
    let at = skip_splices(src, lex.span().end);
    match src.get(at) {
        Some(b'/') => {
            let end = line_end(src, at + 1);
            lex.bump(end - lex.span().end);
            TokenKind::LineComment
        }
        Some(b'*') => match block_comment_end(src, at + 1) {
            Some(end) => {
                lex.bump(end - lex.span().end);
                TokenKind::BlockComment
            }
            None => {
                lex.bump(src.len() - lex.span().end);
                TokenKind::UnterminatedComment
            }
        },
        _ => TokenKind::Punct,
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
            b'\n' => return j,
            b if b == quote => return j + 1,
            _ => j += 1,
        }
    }
    src.len()
}

/// A `#`: a preprocessor line when first on its logical line (only blanks,
/// comments and line splices before it), else a punctuator.
///
/// The line runs through its splices; a block comment inside it may carry it
/// across newlines, and a quote or `//` inside it is honoured, as the
/// preprocessor does.
fn hash(lex: &mut Lexer<'_, Raw>) -> TokenKind {
    let src = lex.source();
    if !lex.extras.0 {
        return TokenKind::Punct;
    }
    let mut i = lex.span().end;
    let end = loop {
        if i >= src.len() {
            break src.len();
        }
        match src[i] {
            b'\n' if !newline_is_spliced(src, i) => {
                break if src[i - 1] == b'\r' { i - 1 } else { i };
            }
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
    };
    lex.bump(end - lex.span().end);
    TokenKind::Preprocessor
}

/// A `[[`: an attribute through its matching `]]`; brackets nest and string
/// literals are skipped. Without a match, an error to the end of the input.
fn attribute(lex: &mut Lexer<'_, Raw>) -> TokenKind {
    let src = lex.source();
    let mut depth = 0usize;
    let mut i = lex.span().end;
    while i < src.len() {
        match src[i] {
            b'[' => depth += 1,
            b']' if depth > 0 => depth -= 1,
            b']' if src.get(i + 1) == Some(&b']') => {
                lex.bump(i + 2 - lex.span().end);
                return TokenKind::Attribute;
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
    TokenKind::UnterminatedAttribute
}

/// A raw string after its `R"`: the delimiter (at most 16 bytes, none of
/// space, parentheses, backslash or control characters), `(`, the body, and
/// `)delimiter"`. Otherwise an error to the end of the input.
fn raw_string(lex: &mut Lexer<'_, Raw>) -> TokenKind {
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
                return TokenKind::RawStr;
            }
            i = close;
        }
    }
    lex.bump(src.len() - lex.span().end);
    TokenKind::UnterminatedRawStr
}

#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(utf8 = false)]
#[logos(subpattern sp = r"\\\r?\n")]
#[logos(subpattern ucn = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}")]
#[logos(subpattern ids = r"(?-u:[A-Za-z_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern idc = r"(?-u:[A-Za-z0-9_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern id0 = r"(?-u:[A-Za-z_$\x80-\xFF])")]
#[logos(subpattern id1 = r"(?-u:[A-Za-z0-9_$\x80-\xFF])")]
#[logos(subpattern esc = r"(?-u:\\(\r\n|[\x00-\xFF]))")]
#[logos(subpattern pfx = r"u8|u|U|L")]
#[logos(extras = LineStart)]
enum Raw {
    // Blanks that hold a newline (one that is no splice) are told apart by
    // the lexer itself, so tracking the start of a line costs no scan.
    #[regex(r"([ \t\r\x0B\x0C]|(?&sp))+")]
    Whitespace,
    #[regex(r"([ \t\r\x0B\x0C]|(?&sp))*\n([ \t\n\r\x0B\x0C]|(?&sp))*")]
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
    #[token(b"[[", attribute)]
    Decided(TokenKind),
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
    Punct,
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
            Raw::Decided(kind) => kind,
            Raw::Dot => TokenKind::Dot,
            Raw::Arrow => TokenKind::Arrow,
            Raw::ColonColon => TokenKind::ColonColon,
            Raw::Punct => TokenKind::Punct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind::*;

    /// The non-whitespace tokens of `src`, with their text.
    fn toks(src: &str) -> Vec<(TokenKind, &str)> {
        let tokens = lex(src.as_bytes());
        assert_tiles(src.as_bytes(), &tokens);
        tokens
            .into_iter()
            .filter(|t| t.kind != Whitespace)
            .map(|t| (t.kind, &src[t.span]))
            .collect()
    }

    fn assert_tiles(src: &[u8], tokens: &[Token]) {
        let mut at = 0;
        for t in tokens {
            assert_eq!(t.span.start, at, "gap or overlap before {t:?}");
            assert!(t.span.end > t.span.start, "empty token {t:?}");
            at = t.span.end;
        }
        assert_eq!(at, src.len());
    }

    #[test]
    fn identifiers_include_dollar_non_ascii_and_ucns() {
        assert_eq!(toks("a$b"), [(Ident, "a$b")]);
        assert_eq!(toks("café x"), [(Ident, "café"), (Ident, "x")]);
        assert_eq!(toks(r"caf\u00e9"), [(Ident, r"caf\u00e9")]);
        assert_eq!(toks(r"\U0001F600x"), [(Ident, r"\U0001F600x")]);
    }

    #[test]
    fn splices_join_identifiers() {
        let src = "fo\\\no bar";
        assert_eq!(toks(src), [(Ident, "fo\\\no"), (Ident, "bar")]);
        assert_eq!(&*spelling(b"fo\\\r\no"), b"foo");
        assert_eq!(&*spelling(b"a\\\n\\\nb"), b"ab");
    }

    #[test]
    fn pp_numbers() {
        for n in [
            "1e+5",
            "0x1p-3f",
            "10ull",
            ".5f",
            "1'000",
            "1.0e-3",
            "0xABCp+1L",
        ] {
            assert_eq!(toks(n), [(Number, n)], "{n}");
        }
        assert_eq!(toks("a+1"), [(Ident, "a"), (Punct, "+"), (Number, "1")]);
    }

    #[test]
    fn string_and_char_literals_with_prefixes_and_escapes() {
        for s in [r#""a\"b""#, r#"u8"x""#, r#"u"x""#, r#"U"x""#, r#"L"x""#] {
            assert_eq!(toks(s), [(Str, s)], "{s}");
        }
        for c in [r"'a'", r"'\''", r"u8'a'", r"L'\n'", r"U'\x41'"] {
            assert_eq!(toks(c), [(Char, c)], "{c}");
        }
        assert_eq!(toks("\"a\\\nb\""), [(Str, "\"a\\\nb\"")]);
    }

    #[test]
    fn unterminated_strings_stop_at_the_line_end() {
        assert_eq!(toks("\"abc\nx"), [(UnterminatedStr, "\"abc"), (Ident, "x")]);
        assert_eq!(toks("'a"), [(UnterminatedStr, "'a")]);
        assert_eq!(toks("\"a\\"), [(UnterminatedStr, "\"a"), (Unknown, "\\")]);
    }

    #[test]
    fn raw_strings() {
        let s = r#"R"d(a)" )x" b)d""#;
        assert_eq!(toks(s), [(RawStr, s)]);
        assert_eq!(toks(r#"u8R"(x)""#), [(RawStr, r#"u8R"(x)""#)]);
        assert_eq!(toks("R\"(\n\")\""), [(RawStr, "R\"(\n\")\"")]);
        assert_eq!(toks(r#"R"d(abc"#), [(UnterminatedRawStr, r#"R"d(abc"#)]);
        assert_eq!(toks(r#"R"a b(x)a b""#).len(), 1);
        assert_eq!(toks(r#"R"a b(x)a b""#)[0].0, UnterminatedRawStr);
    }

    #[test]
    fn comments() {
        assert_eq!(toks("// a 'b\nc"), [(LineComment, "// a 'b"), (Ident, "c")]);
        assert_eq!(
            toks("// a \\\n b\nc"),
            [(LineComment, "// a \\\n b"), (Ident, "c")]
        );
        assert_eq!(toks("// a\r\nc"), [(LineComment, "// a"), (Ident, "c")]);
        assert_eq!(
            toks("/* \" */x"),
            [(BlockComment, "/* \" */"), (Ident, "x")]
        );
        assert_eq!(
            toks("/\\\n* a *\\\n/x"),
            [(BlockComment, "/\\\n* a *\\\n/"), (Ident, "x")]
        );
        assert_eq!(toks("/* a"), [(UnterminatedComment, "/* a")]);
        assert_eq!(toks("a/b"), [(Ident, "a"), (Punct, "/"), (Ident, "b")]);
    }

    #[test]
    fn preprocessor_lines() {
        assert_eq!(
            toks("#define A \\\n  B\nx"),
            [(Preprocessor, "#define A \\\n  B"), (Ident, "x")]
        );
        assert_eq!(
            toks("  # include \"a\"\r\nx"),
            [(Preprocessor, "# include \"a\""), (Ident, "x")]
        );
        assert_eq!(
            toks("#define A /* multi\nline */ B\nx"),
            [
                (Preprocessor, "#define A /* multi\nline */ B"),
                (Ident, "x")
            ]
        );
        assert_eq!(
            toks("#define Q '\"' // c\nx"),
            [(Preprocessor, "#define Q '\"' // c"), (Ident, "x")]
        );
        // Not first on its line: a punctuator.
        assert_eq!(toks("a # b"), [(Ident, "a"), (Punct, "#"), (Ident, "b")]);
        // A splice joins the # to a non-blank line.
        assert_eq!(toks("a \\\n#b")[1], (Punct, "#"));
        assert_eq!(toks("\\\n#b")[0], (Preprocessor, "#b"));
    }

    #[test]
    fn attributes_are_not_nested_subscripts() {
        assert_eq!(
            toks("[[gnu::noinline, x(a[1])]] void"),
            [(Attribute, "[[gnu::noinline, x(a[1])]]"), (Ident, "void")]
        );
        let t = toks("a[b[i]]");
        assert!(t.iter().all(|(k, _)| *k != Attribute));
        assert_eq!(t.iter().filter(|(k, _)| *k == Ident).count(), 3);
        assert_eq!(toks("[[x"), [(UnterminatedAttribute, "[[x")]);
        assert_eq!(toks("[[d(\"]]\")]]"), [(Attribute, "[[d(\"]]\")]]")]);
    }

    #[test]
    fn member_operators() {
        assert_eq!(
            toks("a.b->c::d...e"),
            [
                (Ident, "a"),
                (Dot, "."),
                (Ident, "b"),
                (Arrow, "->"),
                (Ident, "c"),
                (ColonColon, "::"),
                (Ident, "d"),
                (Punct, "..."),
                (Ident, "e")
            ]
        );
        assert_eq!(toks("a-\\\n>b")[1], (Arrow, "-\\\n>"));
    }

    #[test]
    fn stray_bytes_are_unknown_tokens() {
        let src = b"a\x00\\b\xff";
        let tokens = lex(src);
        assert_tiles(src, &tokens);
        assert_eq!(tokens[1].kind, Unknown);
        assert_eq!(tokens[2].kind, Unknown);
    }
}
