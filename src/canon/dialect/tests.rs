use super::*;

fn raw(src: &str) -> Option<String> {
    scan(src.as_bytes(), None).raw
}

fn uncacheable(src: &str) -> Option<String> {
    scan(src.as_bytes(), None).uncacheable
}

#[test]
fn plain_c_is_clean() {
    assert!(scan(b"void k(float* a) { a[0] = 1.0f; /* ?? */ }", None).is_clean());
    assert!(scan(b"#define MAX(a, b) ((a) > (b) ? (a) : (b))\n", None).is_clean());
}

#[test]
fn trigraphs_anywhere_are_raw() {
    for t in [
        "??=", "??/", "??'", "??(", "??)", "??!", "??<", "??>", "??-",
    ] {
        assert!(raw(&format!("x /* {t} */")).is_some(), "{t}");
        assert!(raw(&format!("\"{t}\"")).is_some(), "{t}");
    }
    assert!(raw("a ?? b").is_none());
}

#[test]
fn trigraphs_are_found_at_every_offset_of_a_long_text() {
    // Whole 64-byte blocks and the tail are tested differently, and a
    // trigraph may straddle two blocks: every offset against a plain search.
    let naive = |t: &[u8]| {
        t.windows(3)
            .any(|w| w[0] == b'?' && w[1] == b'?' && b"=/'()!<>-".contains(&w[2]))
    };
    for len in [63, 64, 65, 130, 200] {
        for at in 0..len {
            for piece in [&b"??="[..], b"??", b"?", b"?x?"] {
                let mut text = vec![b'a'; len];
                let end = (at + piece.len()).min(len);
                text[at..end].copy_from_slice(&piece[..end - at]);
                assert_eq!(has_trigraph(&text), naive(&text), "{len} {at} {piece:?}");
            }
        }
    }
}

#[test]
fn raw_strings_and_digit_separators_are_raw() {
    for s in [
        r#"R"(x)""#,
        r#"LR"(x)""#,
        r#"uR"(x)""#,
        r#"UR"(x)""#,
        r#"u8R"(x)""#,
    ] {
        assert!(raw(s).is_some(), "{s}");
    }
    assert!(raw("int x = 1'000;").is_some());
    assert!(raw("int x = 1000; char c = '0';").is_none());
}

#[test]
fn lexical_errors_are_raw() {
    assert!(raw("\"open").is_some());
    assert!(raw("/* open").is_some());
    assert!(raw(r"int \u0041;").is_some());
}

#[test]
fn cpp_digraph_readings_are_raw() {
    assert!(raw("a<::b> x;").is_some());
    assert!(raw("<:<:deprecated:>:> int x;").is_some());
    assert!(raw("a<:1:> = 0;").is_none());
}

#[test]
fn position_macros_in_code_or_directives_are_raw() {
    for m in POSITION_MACROS {
        assert!(raw(&format!("int x = {m};")).is_some(), "{m}");
    }
    assert!(raw("#define W __LINE__\nint x = W;").is_some());
    assert!(raw("%:define W __COUNTER__\n").is_some());
    assert!(raw("int x = __LI\\\nNE__;").is_some());
    assert!(raw("\"__LINE__\" /* __FILE__ */").is_none());
}

#[test]
fn reported_position_macros_are_raw() {
    let mut reported = MacroNames::default();
    reported.insert(b"assert");
    assert!(scan(b"assert(x);", Some(&reported)).raw.is_some());
    assert!(scan(b"asserts(x);", Some(&reported)).raw.is_none());
}

#[test]
fn time_macros_are_uncacheable() {
    for m in TIME_MACROS {
        assert!(uncacheable(&format!("char* s = {m};")).is_some(), "{m}");
        assert!(uncacheable(&format!("#define S {m}\n")).is_some(), "{m}");
    }
    assert!(uncacheable("char* s = \"__TIME__\";").is_none());
}

#[test]
fn option_macros_using_position_macros_are_position_macros() {
    let (pos, why) = option_macros(&["-O2", "-DL=__LINE__", "-D", "M=L+1", "-DN=2"]);
    assert!(pos.contains(b"L".as_slice()) && pos.contains(b"M".as_slice()));
    assert!(!pos.contains(b"N".as_slice()) && why.is_none());
    assert!(scan(b"int x = M;", Some(&pos)).raw.is_some());
    assert!(scan(b"int x = N;", Some(&pos)).raw.is_none());
}

#[test]
fn option_macros_using_time_macros_make_kernels_uncacheable() {
    assert!(option_macros(&["-DSTAMP=__TIME__"]).1.is_some());
    assert!(option_macros(&["-DC(a,b)=a##b"]).1.is_some());
    assert!(option_macros(&["-DX=1", "-I/usr/include"]).1.is_none());
}

#[test]
fn pasting_in_a_directive_is_uncacheable() {
    assert!(uncacheable("#define C(a, b) a ## b\nchar* s = C(__TI, ME__);").is_some());
    assert!(uncacheable("%:define C(a, b) a %:%: b\n").is_some());
    assert!(uncacheable("#define S(a) #a\n").is_none());
}

fn named(src: &str, name: &str) -> Findings {
    named_with(src, name, &MacroNames::default())
}

fn named_with(src: &str, name: &str, macros: &MacroNames) -> Findings {
    let found = by_token(src, Some(name), Some(macros));
    assert_eq!(found, by_tokens(src, Some(name), Some(macros)), "{src}");
    found
}

/// The scan fed token by token, each that it wants.
fn by_token(src: &str, name: Option<&str>, macros: Option<&MacroNames>) -> Findings {
    let mut scanner = Scanner::new(None)
        .with_kernel_name(name.map(str::as_bytes))
        .with_macros(macros);
    let text = src.as_bytes();
    for_each_token_spliced(text, |kind, span, spliced| {
        if scanner.wants(text, kind, &span) {
            scanner.token(text, kind, span, spliced)
        }
    });
    scanner.finish(text)
}

/// The scan fed a lexing at once, as the renamer feeds it.
fn by_tokens(src: &str, name: Option<&str>, macros: Option<&MacroNames>) -> Findings {
    let mut scanner = Scanner::new(None)
        .with_kernel_name(name.map(str::as_bytes))
        .with_macros(macros);
    let text = src.as_bytes();
    let mut tokens = Vec::new();
    for_each_token_spliced(text, |kind, span, spliced| {
        if kind != TokenKind::Whitespace {
            tokens.push(crate::canon::bind::Token::new(kind, span, spliced));
        }
    });
    scanner.tokens(text, &tokens);
    scanner.finish(text)
}

#[test]
fn a_lexing_fed_at_once_finds_what_tokens_fed_one_by_one_find() {
    let mut m = MacroNames::default();
    m.insert(b"M");
    // Parentheses open before a macro is defined, closed after; names
    // before and inside calls; the kernel's name in and out of them.
    for src in [
        "g((f__seg0)); M(f__seg0);",
        "g(( \n#define N(a) a\n N(f__seg0) )) f__seg0;",
        "g( \n#define N(a) a\n ) N f__seg0 ( f__seg0 );",
        "g(\n#define N(a) a\n N(x)) ) f__seg0; N((y) f__seg0);",
        "a < b; x <<= 1; y <: 1 :>; z <::q; 1'0; asm(\"nop\"); __LINE__; f__x;",
        "/* ( */ f__seg0 // (\n 'c' . -> :: [[a(f__seg0)]] \"s(\" f__seg0",
        "#define S(a) #a\n S(f__seg0) __TIME__ R\"(x)\"",
        "\\u0066__seg0 ( f\\\n__seg0 ) M(f\\\n__seg0)",
    ] {
        for name in [None, Some("f__seg0")] {
            for macros in [None, Some(&m)] {
                assert_eq!(
                    by_token(src, name, macros),
                    by_tokens(src, name, macros),
                    "{src} {name:?} {macros:?}"
                );
            }
        }
    }
    // The parenthesis a later macro's call opens still counts.
    let late = "g(( \n#define N(a) a\n N(f__seg0) ));";
    assert!(by_tokens(late, Some("f__seg0"), None).raw.is_some());
}

#[test]
fn asm_reading_a_file_is_uncacheable() {
    for src in [
        r#"__asm__(".incbin \"blob.bin\"");"#,
        r#"asm(".include \"x.s\"");"#,
        r#"void f(void) { __asm volatile(".inc" "bin \"b\"" ::: "memory"); }"#,
        r#"__asm__("\x2eincbin \"b\"");"#,
        r#"__asm__("\056include \"b\"");"#,
        r#"__asm__(". INCBIN \"b\"");"#,
        "__asm__(\".inc\\\nbin \\\"b\\\"\");",
        "#define A __asm__\nA(\".incbin \\\"b\\\"\");",
        "#define T \"nop\"\n__asm__(T);",
    ] {
        assert!(uncacheable(src).is_some(), "{src}");
    }
    assert!(uncacheable(r#"__asm__("nop"); char* s = "x";"#).is_none());
    assert!(uncacheable(r#"char* s = ".incbin";"#).is_none(), "no asm");
}

#[test]
fn the_kernel_name_in_a_directive_or_parentheses_or_a_stringifying_kernel_is_raw() {
    for src in [
        "void f__seg0(void) { }\n#ifdef f__seg0\n#endif\n",
        "#if defined(f__seg0)\n#endif\nvoid f__seg0(void) { }",
        "#define S(a) #a\nvoid f__seg0(char* x) { x[0] = S(f__seg0)[6]; }",
        "#define S(a) %:a\nvoid f__seg0(void) { }",
        "#define N(a) a\nvoid f__seg0(int* x) { x[0] = g(N((f__seg0))); }",
        "#define OPEN g(\nvoid f__seg0(int* x) { x[0] = OPEN 1); }",
    ] {
        assert!(named(src, "f__seg0").raw.is_some(), "{src}");
        assert!(
            scan(src.as_bytes(), None).raw.is_none(),
            "{src}: no name given"
        );
    }
    assert!(named("void f__seg0(float* x) { x[0] = (1.0f); }", "f__seg0").is_clean());
    let called = "void f__seg0(char* x) { x[0] = NAME_OF(f__seg0)[6]; }";
    assert!(named(called, "f__seg0").is_clean(), "not a macro");
    let mut macros = MacroNames::default();
    macros.insert(b"NAME_OF");
    assert!(
        named_with(called, "f__seg0", &macros).raw.is_some(),
        "a header's macro"
    );
    assert!(named(
        "#define N(a) (a)\nvoid f__seg0(int* x) { x[0] = N(1); }",
        "f__seg0"
    )
    .is_clean());
    assert!(named(
        "void f__seg0(void) { }\n#ifdef f__seg1\n#endif\n",
        "f__seg0"
    )
    .is_clean());
}

// Raw keying as the renamer applies it.

use crate::canon::rename::RAW_MARKER;
use crate::canon::{canonical_kernel, CanonOptions, Canonical, Renamer};

fn canon_with(text: &str, f: impl FnOnce(&mut CanonOptions)) -> Canonical {
    let mut o = CanonOptions::default();
    f(&mut o);
    canonical_kernel(text.as_bytes(), &o)
}

fn canon(text: &str, f: impl FnOnce(&mut CanonOptions)) -> String {
    String::from_utf8(canon_with(text, f).text).unwrap()
}

#[test]
fn a_kernel_the_lexer_may_misread_is_raw_keyed() {
    for src in [
        "i1 = R\"(x)\";",
        "i1 = 1'000;",
        "i1 = '?'; /* ??/ */",
        "i1 = \"open",
    ] {
        let c = canon_with(src, |o| o.kernel_name = Some("k__seg3".into()));
        assert_eq!(c.text, [RAW_MARKER, src.as_bytes()].concat(), "{src}");
        assert_eq!(c.kernel_token.as_deref(), Some("k__seg3"), "{src}");
        assert!(c.raw.is_some() && c.renamed.is_empty() && !c.bound_renamed);
    }
}

#[test]
fn a_position_macro_keeps_the_full_name_in_the_key() {
    let c = canon_with("void k__seg3(void) { puts(__func__); i1; }", |o| {
        o.kernel_name = Some("k__seg3".into())
    });
    assert!(c.text.starts_with(RAW_MARKER));
    assert_eq!(c.kernel_token.as_deref(), Some("k__seg3"));
    let r = Renamer::new(&CanonOptions {
        kernel_name: Some("k__seg3".into()),
        ..CanonOptions::default()
    });
    assert_eq!(r.key_form(b"__LINE__;").kernel_token, Some(&b"k__seg3"[..]));
    assert_eq!(r.key_form(b"i1;").kernel_token, Some(&b"k__seg"[..]));
}

#[test]
fn a_reported_position_macro_is_raw_keyed() {
    let mut m = crate::canon::MacroNames::default();
    m.insert(b"assert");
    let r = Renamer::new(&CanonOptions::default()).with_position_macros(m.into());
    assert!(r.canonicalize(b"assert(i1);").raw.is_some());
    assert!(r.canonicalize(b"check(i1);").raw.is_none());
}

#[test]
fn a_time_macro_is_uncacheable() {
    let r = Renamer::new(&CanonOptions::default());
    let c = r.canonicalize(b"char* s = __DATE__; i1;");
    assert!(c.uncacheable.is_some() && c.raw.is_some());
    assert!(r.key_form(b"#define T __TIME__\n").uncacheable.is_some());
    assert!(r.key_form(b"i1;").uncacheable.is_none());
}

#[test]
fn a_kernel_whose_name_the_compile_can_see_keeps_its_index_in_the_key() {
    let key = |name: &str, text: &str| {
        let r = Renamer::new(&CanonOptions {
            kernel_name: Some(name.into()),
            ..CanonOptions::default()
        });
        let k = r.key_form(text.as_bytes());
        (k.text, k.kernel_token.map(<[u8]>::to_vec))
    };
    let s = |i: usize| {
        format!("#define S(a) #a\nvoid f__seg{i}(char* x) {{ x[0] = S(f__seg{i})[6]; }}")
    };
    let a = key("f__seg0", &s(0));
    assert!(a.0.starts_with(RAW_MARKER));
    assert_ne!(a, key("f__seg1", &s(1)), "the index stays in the key");
    let ifdef = |i: usize| format!("void f__seg{i}(void) {{ }}\n#ifdef f__seg0\n#endif\n");
    assert_ne!(key("f__seg0", &ifdef(0)), key("f__seg1", &ifdef(1)));
    // Without such a use the index is dropped, as before.
    let plain = |i: usize| format!("void f__seg{i}(float* x) {{ x[0] = 1.0f; }}");
    assert_eq!(key("f__seg0", &plain(0)), key("f__seg1", &plain(1)));
}

#[test]
fn an_asm_include_makes_the_renamer_report_uncacheable() {
    let r = Renamer::new(&CanonOptions::default());
    let c = r.canonicalize(br#"__asm__(".incbin \"b.bin\""); int i1;"#);
    assert!(c.uncacheable.is_some() && c.raw.is_some());
    assert!(r
        .key_form(br#"__asm__("nop"); int i1;"#)
        .uncacheable
        .is_none());
}

#[test]
fn a_raw_text_never_equals_a_renamed_one() {
    // The renamed twin of the raw marker is marked, so it cannot match.
    let raw = canon("/*kc0 raw*/i1 = R\"(x)\";", |_| {});
    let renamed = canon("/*kc0 raw*/i1 = 1;", |_| {});
    assert!(raw.starts_with("/*kc0 raw*/"));
    assert!(renamed.starts_with("/*kc0 kc_"), "{renamed}");
}

/// Review 2026-12-02: GCC's and Clang's position builtins read the segment's
/// own name, the line and the column, which renaming moves: such a kernel is
/// raw-keyed as one using `__func__` or `__LINE__` is.
#[test]
fn builtins_that_spell_the_function_line_or_column_are_raw() {
    assert!(raw("int k__seg1(int n) { return __builtin_FUNCTION()[6] + n; }").is_some());
    assert!(raw("int k(int n) { int v1_a = 1; return __builtin_COLUMN() + v1_a; }").is_some());
    assert!(raw("int k(int n) { return __builtin_LINE() + n; }").is_some());
}
