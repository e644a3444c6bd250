//! The hand parse against the LR parser: wherever it takes an item, the
//! grammar must accept it and record the same things in the same order.

use super::super::tests::{corpus_texts, summary};
use super::super::{bind_with, items, kernel, lex, runs, sink::Sink, tokens};
use super::function;
use std::cell::RefCell;

/// Per item of `text`: whether the hand parse took it. Panics where it took
/// one the LR parser rejects or records otherwise.
fn compare(text: &[u8]) -> Vec<bool> {
    let a = tokens::adapt(text, lex(text), None);
    let parser = kernel::ItemParser::new();
    let mut closers = Vec::new();
    let mut took = Vec::new();
    for chunk in items(&a.toks) {
        let mut fast = Sink::new(a.glsl);
        let taken = function(chunk, &mut fast, &mut closers);
        let lr = RefCell::new(Sink::new(a.glsl));
        // Both as the LR parser reads it: collapsed and not.
        for toks in [runs::collapse(chunk.to_vec()), chunk.to_vec()] {
            *lr.borrow_mut() = Sink::new(a.glsl);
            let parsed = parser
                .parse(
                    &lr,
                    toks.iter()
                        .map(|&(l, t, r)| Ok::<_, ()>((l as usize, t, r as usize))),
                )
                .is_ok();
            if taken {
                let s = lr.borrow();
                let show = String::from_utf8_lossy(text);
                assert!(parsed, "taken but rejected: {show}");
                assert_eq!(fast.decls, s.decls, "{show}");
                assert_eq!(fast.scopes, s.scopes, "{show}");
                assert_eq!(fast.never, s.never, "{show}");
                assert_eq!(fast.functions, s.functions, "{show}");
            }
        }
        took.push(taken);
    }
    took
}

/// [`compare`], and that the whole binding is the same with and without
/// the hand parse.
fn same(text: &str) -> Vec<bool> {
    let took = compare(text.as_bytes());
    let t = text.as_bytes();
    assert_eq!(
        summary(&bind_with(t, lex(t), None, true, true)),
        summary(&bind_with(t, lex(t), None, true, false)),
        "{text}"
    );
    took
}

fn taken(text: &str) {
    assert_eq!(same(text), [true], "{text}");
}

fn left(text: &str) {
    assert!(same(text).iter().all(|&t| !t), "{text}");
}

#[test]
fn the_generated_kernels_function_is_parsed_by_hand() {
    let mut k = String::from(
        "#include <math.h>\nvoid mm(float* restrict o, const float* restrict a, const float* restrict b) {\n",
    );
    for s in 0..20 {
        k.push_str(&format!(
            "  // segment {s}\n  float n{s}_local = 0.0f;\n  #pragma unroll\n  for (int i{s} = 0; i{s} < 64; ++i{s}) {{\n    for (int j{s} = 0; j{s} < 64; ++j{s}) {{\n      float v{s}_acc = a[i{s} * 64 + j{s}] * b[j{s} * 64 + i{s}];\n      n{s}_local = fmaxf(n{s}_local, v{s}_acc + 1e-3f); /* i{s} */\n    }}\n    o[i{s}] += n{s}_local;\n  }}\n"
        ));
    }
    k.push_str("}\n");
    taken(&k);
}

#[test]
fn statements_that_look_like_declarations_and_back_parse_as_the_grammar_does() {
    // `a * b;` is a multiplication unless `a` names a type.
    taken("void f(int a, int b) { a * b; }");
    let k = "typedef int a;\nvoid f(int b) { a * b; b = 1; }";
    assert_eq!(same(k), [false, true]);
    // An implicit-int declaration by a qualifier alone.
    taken("void f(void) { const x = 1; static y; x = y; }");
    taken("void f(void) { static int x, *y[3] = {0}, z = x; extern int g; g = z; }");
    // A parenthesized or function declarator is the LR parser's.
    left("void f(void) { int (x) = 1; }");
    left("void f(void) { int g(int q); g(1); }");
    left("void f(void) { float (*p)[4]; }");
    // A tag is recorded by the grammar's `TagSpec`: not here.
    left("void f(void) { struct s { int b : 3; } v; v.b = 1; }");
    left("void f(void) { enum e x; }");
    // A functional cast where a statement starts is no statement.
    left("void f(int x) { int(x) + 1; }");
}

#[test]
fn labels_ternaries_bit_fields_and_cases_are_told_apart() {
    taken("void f(int a) { x: a = a ? 1 : 2; goto x; }");
    taken("void f(int a) { switch (a) { case 1: case a ? 2 : 3: break; default: ; } }");
    taken("void f(int a) { l: m: n: ; case (1 ? 2 : 3): a = (b ? c : d); }");
    taken("void f(int a) { a ? b : c; int d = a ? b : c, e = 1; }");
    // A label labels a statement, never a declaration.
    left("void f(void) { l: int x; }");
    left("void f(void) { default: int x; }");
    // A `case` whose colon is missing, or a label with none.
    left("void f(int a) { case 1 a; }");
    left("void f(int a) { case : ; }");
    // A bit-field outside a struct is no declarator.
    left("void f(void) { int b : 3; }");
}

#[test]
fn nested_blocks_and_dangling_elses_record_scopes_as_the_grammar_does() {
    taken("void f(int a) { { int t = 1; { int t = 2; } t = 3; } { } }");
    taken("void f(int a, int b) { if (a) if (b) a = 1; else a = 2; else a = 3; }");
    taken("void f(int a) { while (a) do a--; while (a > 1); if (a) { } else if (a) ; else { int z; } }");
    taken("void f(int a) { do { int q = a; } while (a); return; return a, a; }");
    left("void f(int a) { else a = 1; }");
    left("void f(int a) { if (a) else a = 1; }");
    left("void f(int a) { do { } while (a) }");
    left("void f(int a) { while a; }");
}

#[test]
fn for_heads_parse_as_the_grammar_does() {
    taken("void f(int n) { for (;;) ; for (int i = 0, j = 1; i < j; ) { } }");
    taken("void f(int n) { for (n = 0; n < 3; n++) for (int i; ; ) ; }");
    taken("void f(int n) { for (int i = 0; i < n; i++) { int i = 2; } }");
    taken("void f(int n) { for (int; n; ) ; for ((n); n; n) ; }");
    left("void f(int n) { for (n = 0; n < 3; n++; ) ; }");
    left("void f(int n) { for (n = 0; n < 3) ; }");
    left("void f(int n) { for (int i = 0 i < n; i++) ; }");
    left("void f(int n) { for (; ; ) }");
}

#[test]
fn initializers_and_runs_take_only_what_the_grammar_does() {
    taken("void f(void) { int x = { 1, { 2; } }, y = (int){ 3 } ; int z = sizeof(struct s *); }");
    taken("void f(void) { int a[2] = {1, 2}, b = a[0] + (a[1] ? 3 : 4); a[0] = ({ int t = 1; t; }); }");
    taken("void f(void) { float v = float(1) + 2; }");
    left("void f(void) { int x = 1, 2; }");
    left("void f(void) { int x = {1} + 2; }");
    left("void f(void) { int x = ; }");
    left("void f(void) { x = a({1]); }");
    left("void f(void) { x = (1 ; 2); }");
    left("void f(void) { x = a : b; }");
    left("void f(void) { return return; }");
    left("void f(void) { x = typedef; }");
}

#[test]
fn heads_other_than_a_plain_function_are_the_lr_parsers() {
    taken("void f(void) { }");
    taken("extern \"C\" static inline float* f(int, float, int* restrict p, ...) { return p; }");
    taken("typedef void f(int a) { a = 1; }");
    // K&R parameters, abstract declarators, a lone ellipsis, nested lists.
    left("int f(a) int a; { return a; }");
    left("void f(int *) { }");
    left("void f(...) { }");
    left("void (*f(int a))(int b) { }");
    left("void f(int a)[2] { }");
    left("struct s f(int a) { }");
    left("int x = 1;");
    left("void f(int a);");
}

#[test]
fn unbalanced_input_and_the_end_mid_statement_are_left_alone() {
    for k in [
        "void f(int a) { if (a)",
        "void f(int a) { a = 1;",
        "void f(int a) { a = (1; }",
        "void f(int a) { a = 1 }",
        "void f(int a) { { a = 1; }",
        "void f(int a) { a = [1); }",
        "void f(int a) }",
        "void f(int a { }",
        "void f(",
        "void",
        "}",
        "{ }",
    ] {
        left(k);
    }
}

#[test]
fn nesting_past_the_depth_limit_is_left_to_the_lr_parser() {
    let deep = |n: usize| {
        format!(
            "void f(int a) {{ {} a = 1; {} }}",
            "{".repeat(n),
            "}".repeat(n)
        )
    };
    taken(&deep(super::DEPTH / 4));
    left(&deep(super::DEPTH + 10));
    let ifs = |n: usize| format!("void f(int a) {{ {} a = 1; }}", "if (a) ".repeat(n));
    taken(&ifs(super::DEPTH / 4));
    left(&ifs(super::DEPTH + 10));
}

#[test]
fn the_hand_parse_records_as_the_lr_parser_on_the_corpus_and_its_mutations() {
    let mut texts = corpus_texts();
    texts.sort();
    let bits: &[&[u8]] = &[
        b"{",
        b"}",
        b"(",
        b")",
        b";",
        b"[",
        b"]",
        b",",
        b"=",
        b"*",
        b":",
        b"?",
        b"int ",
        b"typedef ",
        b"struct ",
        b"if (x) ",
        b"else ",
        b"for (;;) ",
        b"do ",
        b"while (0) ",
        b"lbl: ",
        b"case 1: ",
        b"default: ",
        b"return ",
        b"goto l;",
        b"...",
        b"extern ",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    let mut mutants = Vec::new();
    for t in &texts {
        for _ in 0..6 {
            let mut m = t.clone();
            for _ in 0..1 + next(3) {
                let at = next(m.len() + 1);
                if next(2) == 0 {
                    let len = next(6).min(m.len() - at);
                    m.drain(at..at + len);
                } else {
                    let b = bits[next(bits.len())];
                    m.splice(at..at, b.iter().copied());
                }
            }
            mutants.push(m);
        }
    }
    let (mut items, mut taken) = (0, 0);
    for t in texts.iter().chain(&mutants) {
        let took = compare(t);
        items += took.len();
        taken += took.iter().filter(|&&t| t).count();
        assert_eq!(
            summary(&bind_with(t, lex(t), None, true, true)),
            summary(&bind_with(t, lex(t), None, true, false)),
            "{}",
            String::from_utf8_lossy(t)
        );
    }
    // The comparison means something only where the hand parse takes items.
    assert!(taken * 5 > items, "{taken} of {items}");
}
