use super::*;
use crate::canon::lexer::TokenKind;

fn verdict(text: &str, name: &str) -> Result<(), Reason> {
    bind(text.as_bytes(), None).verdict(name.as_bytes())
}

fn ok(text: &str, names: &[&str]) {
    for n in names {
        assert_eq!(verdict(text, n), Ok(()), "`{n}` in {text}");
    }
}

fn kept(text: &str, name: &str, reason: Reason) {
    assert_eq!(verdict(text, name), Err(reason), "`{name}` in {text}");
}

#[test]
fn parameters_and_locals_are_verified() {
    let k = "void f(float* a, int n) { int i = 0; for (int j = 0; j < n; j++) a[j] = i; }";
    ok(k, &["a", "n", "i", "j"]);
    kept(k, "f", Reason::Linkage);
}

#[test]
fn a_scope_starts_after_its_declarator() {
    // The first `b` is the outer (free) one.
    kept("void f() { int a = b, b = 1; }", "b", Reason::Free);
    // `int x = x;` refers to itself.
    ok("void f() { int x = x; }", &["x"]);
}

#[test]
fn a_scope_ends_with_its_block() {
    kept("void f() { { int t = 1; } t = 2; }", "t", Reason::Free);
    kept(
        "void f() { for (int i = 0; i < 2; i++) ; i = 3; }",
        "i",
        Reason::Free,
    );
    ok("void f() { int t; { int t = 1; } t = 2; }", &["t"]);
}

#[test]
fn free_names_calls_and_globals_are_kept() {
    let k = "float g; void f(float* a) { a[0] = g + sinf(a[1]); }";
    kept(k, "g", Reason::Linkage);
    kept(k, "sinf", Reason::Free);
    ok(k, &["a"]);
}

#[test]
fn members_tags_and_struct_bodies_never_bind() {
    let k = "void f(struct s* p, int x, int y) { struct s { int x; } q; p->y = x; q.x = 1; }";
    // A member is no occurrence of a binding: `y` the parameter binds.
    ok(k, &["y"]);
    kept(k, "s", Reason::Tag);
    // A member's name in a plain body is its struct's: the parameter binds.
    ok(k, &["p", "q", "x"]);
    // In any other body every name is kept.
    kept(
        "void f(int x) { struct s { int x; void g(); } q; q.x = x; }",
        "x",
        Reason::Tag,
    );
    // A tag defined with a body names a type (as in C++): a variable spelled
    // like it makes its item unparsed.
    let k = "struct s { int v; };\nvoid f(int s, int t) { s = t; }";
    let b = bind(k.as_bytes(), None);
    assert!(b.verdict(b"s").is_err());
    assert_eq!(b.verdict(b"t"), Err(Reason::Unparsed));
}

#[test]
fn opaque_regions_keep_their_names() {
    kept(
        "void f(int a) { __attribute__((aligned(a))) int b = a; }",
        "a",
        Reason::Attribute,
    );
    kept(
        "void f(int a) { [[gnu::assume(a)]]; }",
        "a",
        Reason::Attribute,
    );
    kept(
        "void f(int a) { asm volatile (\"mov %[a], 1\" : [a] \"=r\"(a)); }",
        "a",
        Reason::Asm,
    );
    kept(
        "void f(int a) { _Pragma(\"unroll a\") for (;;) a++; }",
        "a",
        Reason::Directive,
    );
    kept(
        "#pragma omp private(a)\nvoid f(int a) { a++; }",
        "a",
        Reason::Directive,
    );
}

#[test]
fn macro_names_and_their_bodies_are_kept() {
    let k = "#define N 4\n#define ADD(x) ((x) + bias)\nvoid f(int bias, int x, int N2) { x = ADD(x) + N + N2; }";
    kept(k, "N", Reason::Directive);
    kept(k, "bias", Reason::Directive);
    // A macro's parameters are its own.
    ok(k, &["x"]);
    kept(k, "ADD", Reason::Directive);
    ok(k, &["N2"]);
}

#[test]
fn arguments_of_stringizing_or_unseen_macros_are_kept() {
    let k = "#define S(e) #e\nvoid f(int a, int b) { S(a); b++; }";
    kept(k, "a", Reason::MacroArgument);
    ok(k, &["b"]);
    let mut macros = crate::canon::MacroNames::default();
    macros.insert(b"isnan");
    let k = "void f(float a, float b) { b = isnan(a); }";
    assert_eq!(
        bind(k.as_bytes(), Some(&macros)).verdict(b"a"),
        Err(Reason::MacroArgument)
    );
    assert_eq!(bind(k.as_bytes(), Some(&macros)).verdict(b"b"), Ok(()));
    ok(k, &["a", "b"]);
}

#[test]
fn declarations_between_conditional_directives_are_kept() {
    let k = "void f() {\n#ifdef A\n int y;\n#endif\n y = 1; }";
    kept(k, "y", Reason::Conditional);
}

#[test]
fn an_unparsed_item_keeps_its_names_and_the_others_bind() {
    let k = "template <class T> void g(T t) { t++; }\nvoid f(int t) { t++; }";
    kept(k, "t", Reason::Unparsed);
    ok(
        "template <class T> void g(T u) { u++; }\nvoid f(int t) { t++; }",
        &["t"],
    );
}

#[test]
fn labels_bind_over_the_whole_function() {
    ok("void f() { goto done; done: ; }", &["done"]);
}

#[test]
fn block_extern_and_prototypes_have_linkage() {
    kept(
        "void f() { extern __shared__ float s[]; s[0] = 1; }",
        "s",
        Reason::Linkage,
    );
    kept("void f() { float h(float); h(1); }", "h", Reason::Linkage);
    // A prototype's parameter names bind over the prototype only.
    ok("float h(float z); void f(float z) { z++; }", &["z"]);
}

#[test]
fn function_pointers_are_objects() {
    ok("void f() { void (*cb)(int q) = 0; cb(1); }", &["cb", "q"]);
}

#[test]
fn typedef_names_are_types_and_never_renamed() {
    let k = "typedef float real; void f(real* a) { real t = a[0]; }";
    kept(k, "real", Reason::Typedef);
    ok(k, &["a", "t"]);
    // A typedef at block scope gives up the text.
    assert!(bind(b"void f() { typedef int T; T x; }", None)
        .whole
        .is_some());
}

#[test]
fn ternaries_are_not_labels() {
    ok(
        "void f(int a, int b) { a = a ? b : a; b = (a ? a : b); }",
        &["a", "b"],
    );
}

#[test]
fn glsl_anonymous_block_members_bind() {
    let k = "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B0 { float y[]; };\nlayout(push_constant) uniform P { int n; } pc;\nvoid main() { int i = int(gl_GlobalInvocationID.x); if (i < pc.n) y[i] = 0.0; }";
    ok(k, &["y", "i"]);
    kept(k, "B0", Reason::Tag);
    kept(k, "pc", Reason::Linkage);
    kept(k, "n", Reason::Linkage);
}

#[test]
fn lexical_errors_give_up_the_text() {
    assert!(bind(b"void f(int a) { a = \"x; }", None).whole.is_some());
}

#[test]
fn unbalanced_macros_give_up_the_text() {
    assert!(bind(
        b"#define OPEN {\nvoid f(int a) { OPEN; int b; } b = a; }",
        None
    )
    .whole
    .is_some());
}

#[test]
fn the_tune_renderings_verify_their_names() {
    use crate::backend::Language;
    use crate::tune::render::{render, search_space, Problem};
    let p = Problem { m: 4, k: 8, n: 4 };
    for lang in [
        Language::C,
        Language::OpenCl,
        Language::Cuda,
        Language::Glsl,
    ] {
        for config in [search_space()[0], search_space()[30]] {
            for k in render(config, p, lang).kernels {
                let b = bind(k.text.as_bytes(), None);
                assert_eq!(b.whole, None, "{lang:?}");
                for name in &k.canon.bound {
                    assert_eq!(b.verdict(name.as_bytes()), Ok(()), "{name} in {}", k.text);
                }
                for d in b.declared() {
                    let d = std::str::from_utf8(d).unwrap();
                    if d.starts_with('i') || d.starts_with('v') {
                        assert_eq!(b.verdict(d.as_bytes()), Ok(()), "{d} in {}", k.text);
                    }
                }
            }
        }
    }
}

#[test]
fn digraphs_and_trigraphs_give_up_the_text() {
    // `<%` `%>` is a block: the inner `y` is out of scope at `y = 2`.
    for k in [
        "void f(int a) { <% int y = 1; %> y = 2; }",
        "void f(int a) { ??< int y = 1; ??> y = 2; }",
        "void f(int a) { int v<:2:>; v<:0:> = a; }",
    ] {
        assert!(bind(k.as_bytes(), None).whole.is_some(), "{k}");
    }
    // A `<` then `%` apart is no digraph.
    ok("void f(int a, int b) { a = a < b % 2; }", &["a", "b"]);
}

#[test]
fn a_digraph_spelled_across_a_line_splice_gives_up_the_text() {
    // `<\⏎%` is `<%` to the compiler: read as an operator, the block was
    // missed and `y` declared there seemed in scope at `y = 2`.
    for k in [
        "void f(int a) { <\\\n% a = 0; int y = 1; %\\\n> y = 2; }",
        "void f(int a) { <\\\r\n% a = 0; int y = 1; %> y = 2; }",
        "void f(int a) { int v<\\\n:2:\\\n>; v<:0:> = a; }",
        "void f(int a) { a = 0; %\\\n:%\\\n: }",
        "void f(int a) { a = 0; } <\\\n%",
    ] {
        assert!(bind(k.as_bytes(), None).whole.is_some(), "{k:?}");
    }
    // A splice inside another punctuator is no digraph.
    ok("void f(int a, int b) { a = a <\\\n= b; }", &["a", "b"]);
}

#[test]
fn an_attribute_whose_brackets_stand_apart_gives_up_the_text() {
    // `[ [gnu::mode(QI)] ]` is an attribute: renaming a local `QI` with its
    // use there would make a kernel of `mode(SI)` share its canonical text.
    for k in [
        "void f(int* y) { int QI = 0; int v [ [gnu::mode(QI)] ] = 300; y[0] = v + QI; }",
        "void f(int* y) { int QI = 0; int v [\\\n[gnu::mode(QI)]] = 300; y[0] = v + QI; }",
        "void f(int* y) { int QI = 0; int v [/* */[gnu::mode(QI)]] = 300; y[0] = v + QI; }",
        "void f(int* y) { int QI = 0; int v [\n#if 1\n[gnu::mode(QI)]]\n#endif\n = 300; }",
    ] {
        assert!(bind(k.as_bytes(), None).whole.is_some(), "{k:?}");
    }
    // A subscript holding a subscript has something between the brackets.
    ok("void f(int* a, int* b) { a[b[0]] = 1; }", &["a", "b"]);
}

#[test]
fn a_directive_ending_in_a_backslash_terminates() {
    // Found by the fuzz driver: a word scan that stood still on a last `\`.
    let k = b"#define X\x051'00001'0000b1[\xc3\xa9x_grad[x_grad\x7freturnX\tint\\";
    assert!(bind(k, None).verdict(b"X").is_err());
}

/// Everything a binding tells, for comparing two.
pub(super) fn summary(b: &Binding<'_>) -> String {
    let mut names: Vec<_> = b.names.iter().collect();
    names.sort();
    let verdicts: Vec<_> = names
        .iter()
        .map(|n| (String::from_utf8_lossy(n), b.verdict(n)))
        .collect();
    format!(
        "{:?}\n{verdicts:?}\n{:?}\n{:?}\n{:?}",
        b.whole,
        b.unparsed(),
        b.functions(),
        b.declared()
    )
}

/// Every file of `tests/corpus/` (all folders), in no set order.
pub(super) fn corpus_texts() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut texts: Vec<Vec<u8>> = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                texts.push(std::fs::read(p).unwrap());
            }
        }
    }
    texts
}

#[test]
fn collapsing_expression_runs_changes_no_binding() {
    let mut texts = corpus_texts();
    // Runs next to what a collapse must not swallow.
    for k in [
        "void f(int a) { struct s { int x; } q[2] = { 0 }; a = q[0].x + 1, a++; }",
        "void f(int a) { x: a = a ? 1 : 2; goto x; }",
        "void f(int a) { int b = (int){ 1 } + a, c = sizeof(struct t *) * b; c = (b); }",
        "void f(int a) { for (int i = a * 2; i < a + 1; i += 2) { a = i; } a = 0; }",
        "void f(int a) { if (a) a = 1; else { a = 2; } a = a ( ]; }",
        "#version 450\nbuffer B { float y[]; } inst[2];\nvoid main() { inst[0].y[0] = 1.0; }",
        "int g = 1 + 2, h = g * 3; void f(int a) { a = g, h; }",
        "void f(int a) { return a = a + 1; }",
    ] {
        texts.push(k.as_bytes().to_vec());
    }
    assert!(texts.len() > 40);
    for text in &texts {
        let on = bind_with(text, lex(text), None, true, false);
        let off = bind_with(text, lex(text), None, false, false);
        assert_eq!(
            summary(&on),
            summary(&off),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn a_local_spelled_like_a_member_of_a_plain_struct_binds() {
    let k = "struct pt { float x, y; };\nvoid f(struct pt *p) { float x = p->x; p->y = x; }";
    ok(k, &["x", "p"]);
    assert_eq!(bind(k.as_bytes(), None).member_declarators(), [18, 21]);
    // The member is its struct's: an unknown word as a type keeps it.
    kept(
        "struct pt { T x; };\nvoid f(struct pt *p) { float x = p->x; }",
        "x",
        Reason::Tag,
    );
    // A name in an array bound is an occurrence, not a member.
    kept(
        "void f(int n) { float x; struct s { char b[sizeof(x)]; } q; x = q.b[0]; }",
        "x",
        Reason::Tag,
    );
    // A GNU designator names the member without a member operator.
    kept(
        "struct pt { float x; };\nvoid f(float a) { float x = a; struct pt q = { x: 1 }; }",
        "x",
        Reason::Tag,
    );
    // A specifier that is a macro, or a word of a directive, keeps it.
    let macros: crate::canon::MacroNames =
        [b"uint".to_vec().into_boxed_slice()].into_iter().collect();
    assert_eq!(
        bind(
            b"struct pt { uint x; };\nvoid f(struct pt *p) { int x = p->x; }",
            Some(&macros)
        )
        .verdict(b"x"),
        Err(Reason::Tag)
    );
    kept(
        "#define float double\nstruct pt { float x; };\nvoid f(struct pt *p) { int x = p->x; }",
        "x",
        Reason::Tag,
    );
}

#[test]
fn scopes_sort_outermost_first_as_pairs_do() {
    let by_pairs = |v: &[(usize, usize)]| {
        let mut v = v.to_vec();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        v
    };
    let small = [(5, 9), (0, 20), (5, 12), (3, 4), (0, 20), (12, 12), (0, 1)];
    assert_eq!(super::outermost_first(&small), by_pairs(&small));
    // Offsets past 32 bits (where usize has them) take the pairwise sort.
    let m = usize::MAX;
    let large = [(m - 4, m), (7, m), (7, 8), (m - 4, m - 3), (7, m)];
    assert_eq!(super::outermost_first(&large), by_pairs(&large));
}

#[test]
fn one_walk_finds_a_groups_end_and_plainness_as_two_did() {
    // Every sequence of up to 6 tokens after an opener, over brackets, a
    // brace, a tag keyword and a plain name: the fused walk must agree with
    // `balanced` and a second walk over the tokens between.
    let alphabet: [&[u8]; 8] = [b"(", b")", b"[", b"]", b"{", b"}", b"x", b"struct"];
    for opener in [b"(".as_slice(), b"["] {
        for len in 0..=6u32 {
            for code in 0..8usize.pow(len) {
                let (mut text, mut raw) = (Vec::new(), Vec::new());
                let mut c = code;
                for k in 0..=len {
                    let t = if k == 0 { opener } else { alphabet[c % 8] };
                    if k > 0 {
                        c /= 8;
                    }
                    let kind = if t[0].is_ascii_alphabetic() {
                        TokenKind::Ident
                    } else {
                        TokenKind::Punct
                    };
                    raw.push(Token::new(kind, text.len()..text.len() + t.len(), false));
                    text.extend_from_slice(t);
                    text.push(b' ');
                }
                let (end, plain) = groups::balanced_plain(&text, &raw, 0);
                assert_eq!(end, tokens::balanced(&text, &raw, 0));
                if end > 1 {
                    let two = (1..end - 1).all(|k| !tokens::not_plain(&text, &raw, k));
                    assert_eq!(plain, two, "{}", String::from_utf8_lossy(&text));
                }
            }
        }
    }
}

#[test]
fn a_repeated_directive_still_keeps_its_words() {
    // The second `#pragma unroll n` adds no words (the first kept them);
    // a name in it is kept either way, and so is one of a different line.
    let k = "void f(int n, int m) {\n#pragma unroll n\n  n = 1;\n#pragma unroll n\n  n = 2;\n#pragma unroll m\n  m = n;\n}";
    kept(k, "n", Reason::Directive);
    kept(k, "m", Reason::Directive);
    let k = "void f(int n, int m) {\n#pragma unroll\n  n = 1;\n#pragma unroll\n  n = 2;\n#pragma unroll m\n  m = n;\n}";
    ok(k, &["n"]);
    kept(k, "m", Reason::Directive);
}

/// A text longer than the binder takes (`u32` positions) is given up whole
/// before any token is formed; one at the limit is bound. Tried at a low
/// limit: the path is the one a text over 4 GiB takes.
#[test]
fn a_text_over_the_limit_is_given_up_whole() {
    let text = b"void f(int a) { int b = a; }";
    let at = bind_lexed(text, lexed::lex_within(text, text.len()), None);
    assert!(at.whole.is_none());
    assert_eq!(at.verdict(b"b"), Ok(()));
    assert!(!at.tokens().is_empty());
    let over = bind_lexed(text, lexed::lex_within(text, text.len() - 1), None);
    assert!(over.whole.as_deref().unwrap().contains("bytes long"));
    assert_eq!(over.verdict(b"b"), Err(Reason::Whole));
    assert!(over.tokens().is_empty());
    assert_eq!(std::mem::size_of::<Token>(), 12);
    assert_eq!(std::mem::size_of::<tokens::Ident>(), 12);
    assert_eq!(std::mem::size_of::<(u32, Tok, u32)>(), 12);
}

/// The binder's token list reads as the lexer's tokens with blanks left out,
/// comments merged into the code where they stand (at the start, in a row,
/// at the end, unterminated), and what a walk has yet to give is the tail
/// of that list at every point: the renamer's walk and the dialect scan it
/// feeds read nothing else.
#[test]
fn the_token_list_reads_as_the_lexing() {
    let texts: [&[u8]; 6] = [
        b"/*a*/ int /*b*/ /*c*/ x; // d\n y.z /* e",
        b"int x; a->b;",
        b"",
        b"// only",
        b"/*1*//*2*/",
        b"a /*b*/\n#define c /*d*/ e\n",
    ];
    for text in texts {
        let mut want = Vec::new();
        crate::canon::lexer::for_each_token_spliced(text, |kind, span, spliced| {
            if kind != TokenKind::Whitespace {
                want.push(Token::new(kind, span, spliced));
            }
        });
        let lexed = lexed::lex(text);
        let all = lexed.tokens();
        assert_eq!(all.len(), want.len());
        assert_eq!(all.is_empty(), want.is_empty());
        let mut walk = all.iter();
        for k in 0..=want.len() {
            let rest = walk.rest();
            assert_eq!(walk.len(), want.len() - k);
            assert_eq!(rest.len(), want.len() - k);
            assert_eq!(rest.iter().copied().collect::<Vec<_>>(), want[k..]);
            let code: Vec<_> = want[k..]
                .iter()
                .filter(|t| !t.kind.is_comment())
                .copied()
                .collect();
            assert_eq!(rest.code(), code);
            assert_eq!(walk.next(), want.get(k));
        }
        assert_eq!(walk.next(), None);
        let bound = bind_lexed(text, lexed, None);
        assert_eq!(bound.tokens().iter().copied().collect::<Vec<_>>(), want);
    }
}

/// Review 2026-12-02: the text of a file included inside a block is never
/// read, and may name the block's locals. The functions are still found.
#[test]
fn a_file_included_inside_a_block_gives_the_names_up() {
    for directive in [
        "#include \"body.h\"",
        "# include <b.h>",
        "%:include \"b.h\"",
        "#embed \"d\"",
    ] {
        let k = format!("void f(int n) {{ int v1_a = n;\n{directive}\n }}");
        let b = bind(k.as_bytes(), None);
        assert!(
            b.whole
                .as_deref()
                .is_some_and(|w| w.contains("inside a block")),
            "{directive}"
        );
        assert_eq!(b.functions(), [&b"f"[..]], "{directive}");
    }
    // At file scope, between functions, it reaches no local.
    ok(
        "#include \"h.h\"\nvoid f(int n) { int v1_a = n; }",
        &["v1_a", "n"],
    );
}

/// Review 2026-12-02: the memo of groups answers as the walk that defines
/// them, for every opener of nested, unbalanced and unclosed groups, asked
/// in the adapter's order (left to right) or any other.
#[test]
fn the_groups_memo_answers_as_the_walk_that_defines_it() {
    let alphabet: [&[u8]; 9] = [b"(", b")", b"[", b"]", b"{", b"}", b"x", b"struct", b"y"];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for case in 0..3000 {
        let len = 1 + (next() % 40) as usize;
        let mut text = Vec::new();
        let mut raw = Vec::new();
        for _ in 0..len {
            let t = alphabet[(next() % alphabet.len() as u64) as usize];
            let kind = if t[0].is_ascii_alphabetic() {
                TokenKind::Ident
            } else {
                TokenKind::Punct
            };
            raw.push(lexed::Token::new(
                kind,
                text.len()..text.len() + t.len(),
                false,
            ));
            text.extend_from_slice(t);
            text.push(b' ');
        }
        let openers: Vec<usize> = (0..raw.len())
            .filter(|&k| matches!(&text[raw[k].range()], b"(" | b"[" | b"{"))
            .collect();
        let mut orders = vec![openers.clone(), openers.iter().rev().copied().collect()];
        let mut shuffled = openers.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        orders.push(shuffled);
        for order in orders {
            let mut g = groups::Groups::default();
            for &o in &order {
                assert_eq!(
                    g.balanced_plain(&text, &raw, o),
                    groups::balanced_plain(&text, &raw, o),
                    "case {case}, opener {o}: {}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }
}

#[test]
fn a_name_before_scope_resolution_is_kept_everywhere() {
    // Review 2026-12-02, GPU F11: C++ looks `cfg` up in `cfg::s` among
    // namespaces and types only, so the local `cfg` is not what it names;
    // renamed with the local, `cfg::s` would read another namespace's `s`.
    let k = "__global__ void f(float* x) { float cfg = 1.0f; x[0] = cfg::s * cfg; }";
    kept(k, "cfg", Reason::Scope);
    // A class or an enum before `::`, the local declared after the use,
    // with a comment or a directive line between the name and `::`.
    kept(
        "void f(int* x) { x[0] = P::value; int P = 2; x[1] = P; }",
        "P",
        Reason::Scope,
    );
    kept(
        "void f(int Color) { int c = Color /* c */ :: Red + Color; }",
        "Color",
        Reason::Scope,
    );
    kept(
        "void f(int cfg) { int c = cfg\n#pragma unroll\n::s + cfg; }",
        "cfg",
        Reason::Scope,
    );
    // The name after `::` is still a member: a local spelled like it binds,
    // and so does one spelled like a member between two `::`.
    ok(
        "void f(int s, int b) { int c = a::b::s + s + b; }",
        &["s", "b"],
    );
}

#[test]
fn a_gnu_designator_in_an_initializer_is_kept_everywhere() {
    // Review 2026-12-02, GPU F14: `{ a: a }` is `{ .a = a }` to gcc and
    // clang; the first `a` names a member of a struct a header may define,
    // not the local.
    let k = "void f(float* x) { float a = x[0]; P p = { a: a }; x[0] = p.a; }";
    kept(k, "a", Reason::Designator);
    // In a compound literal, a nested initializer, a file-scope one.
    kept(
        "void f(float b) { float y = ((P){ b: b }).b; }",
        "b",
        Reason::Designator,
    );
    kept(
        "void f(int q) { Q s = { 1, { 2, q: q } }; }",
        "q",
        Reason::Designator,
    );
    assert_eq!(
        verdict("struct s d = { quot: 1 };\nvoid f(int quot) { }", "quot"),
        Err(Reason::Designator)
    );
    // Labels and `case`s in blocks, a ternary in an initializer, a
    // bit-field's width in a struct body still bind.
    ok(
        "void f(int n, int a, int b) { again: switch (n) { case 1: n--; } \
         if (n) goto again; int v[2] = { n ? a : b, 0 }; }",
        &["again", "n", "a", "b"],
    );
    ok(
        "void f(int a) { struct s { int a : 3; } v; v.a = a; }",
        &["a"],
    );
}
