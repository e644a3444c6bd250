//! The lexer's unit tests.

use super::*;
use TokenKind::*;

/// The generated-input tests' shared generator.
#[path = "../../../tests/rng/mod.rs"]
mod rng;

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

mod phases {
    //! Translation phases 1 to 3 as GCC runs them.
    use super::super::*;
    use TokenKind::*;

    fn toks(src: &str) -> Vec<(TokenKind, &str)> {
        let tokens = lex(src.as_bytes());
        let mut at = 0;
        for t in &tokens {
            assert_eq!(t.span.start, at, "tokens tile the input");
            at = t.span.end;
        }
        assert_eq!(at, src.len());
        tokens
            .into_iter()
            .filter(|t| t.kind != Whitespace)
            .map(|t| (t.kind, &src[t.span]))
            .collect()
    }

    #[test]
    fn a_lone_cr_ends_a_line_comment_and_a_directive() {
        assert_eq!(toks("// c\rx"), [(LineComment, "// c"), (Ident, "x")]);
        assert_eq!(
            toks("#define A 1\rint x;"),
            [
                (Preprocessor, "#define A 1"),
                (Ident, "int"),
                (Ident, "x"),
                (Punct, ";")
            ]
        );
    }

    #[test]
    fn a_lone_cr_starts_a_logical_line() {
        assert_eq!(toks("x;\r#define A")[2], (Preprocessor, "#define A"));
    }

    #[test]
    fn a_lone_cr_ends_a_string_literal() {
        assert_eq!(toks("\"ab\rc")[0], (UnterminatedStr, "\"ab"));
    }

    #[test]
    fn digraphs_are_punctuators() {
        for d in ["<:", ":>", "<%", "%>", "%:%:"] {
            assert_eq!(toks(&format!("a {d} b"))[1], (Punct, d), "{d}");
        }
        assert_eq!(toks("<::")[0], (Punct, "<:"));
    }

    #[test]
    fn a_percent_colon_first_on_a_line_opens_a_directive() {
        assert_eq!(
            toks("%:include <a.h>\nx"),
            [(Preprocessor, "%:include <a.h>"), (Ident, "x")]
        );
        assert_eq!(toks("  %:define W 1\n")[0], (Preprocessor, "%:define W 1"));
        assert_eq!(toks("x %: y")[1], (Punct, "%:"));
    }

    #[test]
    fn a_pasting_operator_first_on_a_line_is_no_directive() {
        assert_eq!(toks("## x")[0], (Punct, "##"));
        assert_eq!(toks("%:%: x")[0], (Punct, "%:%:"));
    }

    #[test]
    fn a_backslash_blanks_newline_is_a_splice() {
        assert_eq!(toks("fo\\  \no"), [(Ident, "fo\\  \no")]);
        assert_eq!(&*spelling(b"fo\\ \t\r\no"), b"foo");
        assert_eq!(
            toks("// c \\ \nstill\nx"),
            [(LineComment, "// c \\ \nstill"), (Ident, "x")]
        );
        assert_eq!(
            toks("#define A \\\t\n B\nx"),
            [(Preprocessor, "#define A \\\t\n B"), (Ident, "x")]
        );
        assert_eq!(toks("\"a\\ \nb\""), [(Str, "\"a\\ \nb\"")]);
        assert_eq!(toks("a -\\ \n> b")[1], (Arrow, "-\\ \n>"));
    }

    #[test]
    fn a_backslash_lone_cr_is_a_splice() {
        assert_eq!(toks("fo\\\ro"), [(Ident, "fo\\\ro")]);
        assert_eq!(&*spelling(b"fo\\\ro"), b"foo");
    }

    #[test]
    fn a_backslash_blanks_then_code_is_no_splice() {
        let kinds: Vec<TokenKind> = toks("a \\ b").iter().map(|t| t.0).collect();
        assert_eq!(kinds, [Ident, Unknown, Ident]);
    }

    #[test]
    fn a_ucn_for_a_basic_character_is_an_error() {
        assert_eq!(toks(r"\u0041bc"), [(InvalidUcn, r"\u0041bc")]);
        assert_eq!(toks(r"x\u0030"), [(InvalidUcn, r"x\u0030")]);
        assert!(InvalidUcn.is_error());
    }

    #[test]
    fn a_ucn_for_a_surrogate_or_past_unicode_is_an_error() {
        assert_eq!(toks(r"a\uD800"), [(InvalidUcn, r"a\uD800")]);
        assert_eq!(toks(r"a\U00110000"), [(InvalidUcn, r"a\U00110000")]);
    }

    #[test]
    fn ucns_c_allows_stay_identifiers() {
        assert_eq!(toks(r"caf\u00e9"), [(Ident, r"caf\u00e9")]);
        assert_eq!(toks(r"a\u0024"), [(Ident, r"a\u0024")]);
    }
}

/// Every token of `src`, read with the fast path and without it (and the
/// nonblank ones read with it checked against the latter).
fn both_readings(src: &[u8]) -> [Vec<(TokenKind, Range<usize>, bool)>; 2] {
    let mut fast = Vec::new();
    token_loop::<true, true>(src, |k, s, e| fast.push((k, s, e)));
    let mut logos = Vec::new();
    token_loop::<true, false>(src, |k, s, e| logos.push((k, s, e)));
    // Without the blanks, which the fast path then skips in its own way.
    let mut nonblank = Vec::new();
    token_loop::<false, true>(src, |k, s, e| nonblank.push((k, s, e)));
    let mut want = logos.clone();
    want.retain(|t| t.0 != Whitespace);
    assert_eq!(nonblank, want, "{:?}", String::from_utf8_lossy(src));
    [fast, logos]
}

/// The words of a comment's text, read with the fast path and without it.
fn both_word_readings(src: &[u8]) -> [Vec<(Range<usize>, bool)>; 2] {
    let mut fast = Vec::new();
    comment_words::<true>(src, |s, e| fast.push((s, e)));
    let mut logos = Vec::new();
    comment_words::<false>(src, |s, e| logos.push((s, e)));
    [fast, logos]
}

#[test]
fn comment_words_read_as_logos_reads_them() {
    for text in [
        &b"segment 12: n22_w5 = a @ b"[..],
        b"i1003 */",
        b"caf\\u00e9 x\\\ny 1e+5x .5y a.b 2x ..a $q \xff\x80z",
        b"ab\\",
        b"1\\\n2 3'a x'y",
    ] {
        let [fast, logos] = both_word_readings(text);
        assert_eq!(fast, logos, "{:?}", String::from_utf8_lossy(text));
    }
}

#[test]
fn the_fast_path_reads_every_token_as_logos_does() {
    // Pieces that start, end or continue tokens the fast path reads, and
    // the ones it must leave to logos, glued at random (a fixed seed).
    let pieces: &[&[u8]] = &[
        b"a",
        b"x1",
        b"_$",
        b"\xc3\xa9",
        b"u8",
        b"L",
        b"R",
        b"u",
        b"0",
        b"1e",
        b"0x1p",
        b".5",
        b"1'0",
        b"'",
        b"\"",
        b"e",
        b"+",
        b"-",
        b">",
        b":",
        b"<",
        b"%",
        b"#",
        b"[",
        b"]",
        b".",
        b"..",
        b"/",
        b"*",
        b"\\",
        b"\\\n",
        b"\\ \r\n",
        b"\\\r",
        b" ",
        b"\t",
        b"\x0b",
        b"\n",
        b"\r",
        b"\r\n",
        b"(",
        b")",
        b"{",
        b";",
        b"?",
        b"@",
        b"`",
        b"\0",
        b"\x7f",
        b"\x80",
        b"\xff",
        b"\x0c",
        b"0x",
        b"R\"x(",
        b")x\"",
        b"??/",
        b"\\u00e9",
        b"\\u0041",
        b"\\U0001F600",
        b"//",
        b"/*",
        b"*/",
        b"%:",
        b"%>",
        b"<%",
        b"[[",
        b"]]",
    ];
    let mut rng = rng::Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let len = 1 + rng.below(12);
        let src: Vec<u8> = (0..len)
            .flat_map(|_| rng.pick(pieces).iter().copied())
            .collect();
        let [fast, logos] = both_readings(&src);
        assert_eq!(fast, logos, "{:?}", String::from_utf8_lossy(&src));
    }
    // And whole kernels: the corpus.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    for entry in std::fs::read_dir(dir).expect("the corpus") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e != "json" && e != "md") {
            let src = std::fs::read(&path).expect("a corpus file");
            let [fast, logos] = both_readings(&src);
            assert_eq!(fast, logos, "{}", path.display());
            let [fast, logos] = both_word_readings(&src);
            assert_eq!(fast, logos, "{}", path.display());
        }
    }
}

mod fast_path_props {
    use super::*;
    use proptest::prelude::*;

    /// Bytes a C lexer treats specially, so that random texts are dense in
    /// token boundaries the fast path must leave to logos or read as it does.
    const SPECIAL: &[u8] =
        b" \t\x0b\x0c\r\n\\/*'\"#%:<>.-+e0x1pPuUL8R?[](){};_a$\x80\xc3\xa9\xff\0";

    fn c_ish() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                3 => proptest::sample::select(SPECIAL),
                1 => any::<u8>(),
            ],
            0..48,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        /// Any bytes at all: the fast path reads every token as logos does,
        /// with blanks passed on and without.
        #[test]
        fn arbitrary_bytes_read_as_logos_reads_them(src in proptest::collection::vec(any::<u8>(), 0..64)) {
            let [fast, logos] = both_readings(&src);
            prop_assert_eq!(fast, logos);
        }

        /// Texts made of the bytes that start, end or continue tokens.
        #[test]
        fn c_like_bytes_read_as_logos_reads_them(src in c_ish()) {
            let [fast, logos] = both_readings(&src);
            prop_assert_eq!(fast, logos);
        }

        /// A comment's words, in any bytes and in C-like ones.
        #[test]
        fn comment_words_read_as_logos_reads_them(
            src in proptest::collection::vec(any::<u8>(), 0..64),
            c in c_ish(),
        ) {
            let [fast, logos] = both_word_readings(&src);
            prop_assert_eq!(fast, logos);
            let [fast, logos] = both_word_readings(&c);
            prop_assert_eq!(fast, logos);
        }
    }
}

#[test]
fn the_bytes_line_scans_stop_at_are_found_eight_bytes_at_a_time() {
    // Every byte, and the ones looked for with their high bit set, which are
    // none of them.
    let mut text: Vec<u8> = (0..=255u8).collect();
    text.extend_from_slice(b"\x8a\x8d\xdc\xa2\xa7\xafab\x0b\x0c\\\x00\x01\x09\x0e\n\r\"'/");
    text.extend(std::iter::repeat_n(b'x', 19));
    for i in 0..=text.len() {
        let want = (i..text.len()).find(|&j| matches!(text[j], b'\n' | b'\r' | b'\\'));
        assert_eq!(next_break_or_backslash(&text, i), want, "from {i}");
        let want = (i..text.len())
            .find(|&j| matches!(text[j], b'\n' | b'\r' | b'\\' | b'"' | b'\'' | b'/'));
        assert_eq!(next_in_directive(&text, i), want, "from {i}");
    }
}
