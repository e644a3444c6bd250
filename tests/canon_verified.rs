//! Verified renaming against the adversarial cases of issue 10: each of these
//! was a wrong hit under the pattern rules alone, since the renamed name was
//! not (only) a binding of the kernel.

use kcache::canon::rename::RAW_MARKER;
use kcache::canon::{CanonOptions, Derivation, MacroNames, Renamer};
use std::sync::Arc;

fn canon(text: &str, o: &CanonOptions) -> String {
    String::from_utf8(Renamer::new(o).canonical_text(text.as_bytes())).unwrap()
}

fn kept(c: &kcache::canon::Canonical, name: &str) -> Option<String> {
    c.kept
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, r)| r.clone())
}

#[test]
fn a_macro_from_a_header_or_option_spelled_like_a_symbol_is_kept() {
    // `-Di3=...` or a header's `#define i3 ...`: the backend reports it.
    let text = "void k(float* a) { a[0] = i3; }";
    let mut macros = MacroNames::default();
    macros.insert(b"i3");
    let r = Renamer::new(&CanonOptions::default()).with_macros(Arc::new(macros));
    assert_eq!(r.canonical_text(text.as_bytes()), text.as_bytes());
    // Without the macro, `i3` is still not declared: kept too.
    let c = Renamer::new(&CanonOptions::default()).canonicalize(text.as_bytes());
    assert_eq!(c.text, text.as_bytes());
    assert!(kept(&c, "i3").unwrap().contains("no declaration"));
}

#[test]
fn a_name_a_macro_body_uses_is_kept() {
    let text = "#define STEP (i1 + 1)\nvoid k(float* a) { for (int i1 = 0; i1 < 4; i1 = STEP) a[i1] = 0; }";
    let c = Renamer::new(&CanonOptions::default()).canonicalize(text.as_bytes());
    assert_eq!(c.text, text.as_bytes());
    assert!(kept(&c, "i1").unwrap().contains("directive"));
}

#[test]
fn stringized_and_pasted_arguments_are_kept() {
    // A paste in a directive raw-keys the kernel (`canon::dialect`) before
    // the binder is consulted: nothing is renamed there either.
    for (def, raw) in [("#define S(x) #x", false), ("#define S(x) v_##x", true)] {
        let text =
            format!("{def}\nvoid k(float* a) {{ for (int i1 = 0; i1 < 4; i1++) a[i1] = S(i1); }}");
        let c = Renamer::new(&CanonOptions::default()).canonicalize(text.as_bytes());
        assert_eq!(c.raw.is_some(), raw, "{def}");
        if raw {
            assert_eq!(c.text, [RAW_MARKER, text.as_bytes()].concat(), "{def}");
            assert!(c.renamed.is_empty() && c.kept.is_empty(), "{def}");
        } else {
            assert_eq!(c.text, text.as_bytes(), "{def}");
            assert!(kept(&c, "i1").unwrap().contains("macro"), "{def}");
        }
    }
    // A macro that neither stringizes nor pastes leaves its arguments alone.
    let text = "#define TWICE(x) ((x) + (x))\nvoid k(float* a) { for (int i1 = 0; i1 < 4; i1++) a[i1] = TWICE(i1); }";
    assert_eq!(
        canon(text, &CanonOptions::default()),
        "#define TWICE(x) ((x) + (x))\nvoid k(float* a) { for (int kc1 = 0; kc1 < 4; kc1++) a[kc1] = TWICE(kc1); }"
    );
}

#[test]
fn attribute_asm_and_symbol_string_occurrences_are_kept() {
    let o = CanonOptions {
        bound: vec!["n1_a".into()],
        ..CanonOptions::default()
    };
    for text in [
        "void k(float* n1_a) { __attribute__((aligned(sizeof(n1_a)))) float t = n1_a[0]; }",
        "void k(float* n1_a) { asm volatile(\"ld %0, [n1_a]\" : \"=r\"(n1_a[0])); }",
        "void k(float* n1_a) { asm(\"\" : [n1_a] \"+r\"(n1_a)); }",
        "void n1_b(void) __attribute__((alias(\"n1_a\")));\nvoid k(float* n1_a) { n1_a[0] = 1; }",
        "void k(float* n1_a) { [[gnu::assume(n1_a != 0)]]; n1_a[0] = 1; }",
    ] {
        let c = Renamer::new(&o).canonicalize(text.as_bytes());
        assert_eq!(c.text, text.as_bytes(), "{text}");
        assert!(kept(&c, "n1_a").is_some(), "{text}");
    }
}

#[test]
fn a_derivation_base_of_digits_does_not_reach_free_functions() {
    // `log*` with a digit base also matches `log2` and `log10`, which are the
    // math library's, not the kernel's.
    let o = CanonOptions {
        derivations: vec![Derivation::parse("log*").unwrap()],
        ..CanonOptions::default()
    };
    let text = "void k(float* a) { float log1 = log2(a[0]) + log10(a[1]); a[0] = log1; }";
    assert_eq!(
        canon(text, &o),
        "void k(float* a) { float kc1 = log2(a[0]) + log10(a[1]); a[0] = kc1; }"
    );
}

#[test]
fn a_bound_name_used_outside_its_declaration_is_kept() {
    // `n1_a` is declared in an inner block only; the outer use is a global's.
    let o = CanonOptions {
        bound: vec!["n1_a".into()],
        ..CanonOptions::default()
    };
    let text = "void k(float* out) { { float n1_a = 1; out[0] = n1_a; } out[1] = n1_a; }";
    assert_eq!(canon(text, &o), text);
}

#[test]
fn renamings_that_agree_on_bindings_share_a_canonical_text() {
    let o = CanonOptions {
        infer: true,
        kernel_name: Some("k".into()),
        ..CanonOptions::default()
    };
    let a = "__kernel void k(__global float* restrict x, const int n) { int gid = get_global_id(0); if (gid < n) x[gid] *= 2.0f; }";
    let b = "__kernel void k(__global float* restrict data0, const int len) { int alu0 = get_global_id(0); if (alu0 < len) data0[alu0] *= 2.0f; }";
    assert_eq!(canon(a, &o), canon(b, &o));
    // Another free function is another kernel.
    let c = b.replace("get_global_id", "get_local_id");
    assert_ne!(canon(a, &o), canon(&c, &o));
}

fn inferred(kernel: &str) -> CanonOptions {
    CanonOptions {
        infer: true,
        kernel_name: Some(kernel.into()),
        ..CanonOptions::default()
    }
}

#[test]
fn a_local_spelled_like_a_struct_member_is_renamed_and_the_member_kept() {
    let o = inferred("norm");
    let a = "struct pt { float x, y; };\nvoid norm(struct pt *ps, float *out) { float x = ps[0].x, y = ps[0].y; out[0] = x * x + y * y; }";
    let b = "struct pt { float x, y; };\nvoid norm(struct pt *ps, float *out) { float u = ps[0].x, v = ps[0].y; out[0] = u * u + v * v; }";
    assert_eq!(canon(a, &o), canon(b, &o));
    assert!(canon(a, &o).contains("{ float x, y; }"), "{}", canon(a, &o));
    // Other members are another kernel, whatever the locals are called.
    let c = "struct pt { float y, x; };\nvoid norm(struct pt *ps, float *out) { float x = ps[0].y, y = ps[0].x; out[0] = x * x + y * y; }";
    assert_ne!(canon(a, &o), canon(c, &o));
    let d = "struct pt { float p, q; };\nvoid norm(struct pt *ps, float *out) { float x = ps[0].p, y = ps[0].q; out[0] = x * x + y * y; }";
    assert_ne!(canon(a, &o), canon(d, &o));
}

#[test]
fn a_member_named_without_a_member_operator_keeps_the_local() {
    let o = inferred("k");
    // A GNU designator `x:` names the member: renaming the local with it
    // would designate a member that does not exist.
    let a = "struct pt { float x; };\nvoid k(float a, float *o) { float x = a; struct pt q = { x: 1 }; o[0] = x + q.x; }";
    let b = "struct pt { float x; };\nvoid k(float a, float *o) { float w = a; struct pt q = { w: 1 }; o[0] = w + q.x; }";
    assert_ne!(canon(a, &o), canon(b, &o));
    // A struct body's array bound names the local `x` in one, a global in
    // the other.
    let a = "double x;\nvoid k(float *o) { float x = 1; struct s { char b[sizeof(x)]; } q; o[0] = x + sizeof(q); }";
    let b = "double x;\nvoid k(float *o) { float w = 1; struct s { char b[sizeof(x)]; } q; o[0] = w + sizeof(q); }";
    assert_ne!(canon(a, &o), canon(b, &o));
    // A body that is not plain (an unknown type word: a macro could make
    // the member an expression) keeps a local spelled like its member.
    let a = "struct pt { T x; };\nvoid k(struct pt *p, float *o) { float x = p->x; o[0] = x; }";
    let b = "struct pt { T x; };\nvoid k(struct pt *p, float *o) { float w = p->x; o[0] = w; }";
    assert_ne!(canon(a, &o), canon(b, &o));
}

#[test]
fn an_asm_operand_expression_is_code_and_the_rest_of_asm_is_not() {
    let o = inferred("k");
    // The operand `(lane)` is C: the local is renamed with its uses.
    let a = "__global__ void k(unsigned* out) { unsigned lane; asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane)); out[0] = lane; }";
    let b = a
        .replace("lane;", "q;")
        .replace("(lane)", "(q)")
        .replace("= lane", "= q");
    assert_eq!(canon(a, &o), canon(&b, &o));
    // Another template, constraint or free operand is another kernel.
    for other in [
        a.replace("%%laneid", "%%warpid"),
        a.replace("\"=r\"", "\"=l\""),
        a.replace("unsigned lane;", "unsigned w;")
            .replace("= lane", "= w"),
    ] {
        assert_ne!(canon(a, &o), canon(&other, &o), "{other}");
    }
    // A template word, a symbolic name, or a call in an operand spelled like
    // the local keeps it as written.
    for kept_text in [
        "void k(float* o) { float v = 1; asm(\"ld %0, v\" : \"=r\"(v)); o[0] = v; }",
        "void k(float* o) { float v = 1; asm(\"mov %[v], 1\" : [v] \"=r\"(v)); o[0] = v; }",
        "void k(float* o) { float v = 1; asm(\"mov %0, 1\" : \"=r\"(o[f(v)])); o[0] = v; }",
    ] {
        let c = Renamer::new(&o).canonicalize(kept_text.as_bytes());
        assert!(kept(&c, "v").is_some(), "{kept_text}");
    }
}

#[test]
fn a_block_opened_by_a_spliced_digraph_keeps_a_global_after_it_apart() {
    // Regression: `<\⏎%` ... `%\⏎>` is a block; the `y[0] = ...` after it
    // reads the header's global, not the block's local. Read as operators,
    // both kernels renamed the local and the global alike and shared one
    // canonical text, though they compute 3 and 4
    // (`g.h`: `static const float v1_a = 3.0f, v2_b = 4.0f;`).
    let text = |n: &str| {
        format!(
            "#include \"g.h\"\nvoid k(float* y) {{\n  <\\\n% y[1] = 0.0f; float {n} = 1.0f; y[2] = {n}; %\\\n>\n  y[0] = {n};\n}}\n"
        )
    };
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let (a, b) = (text("v1_a"), text("v2_b"));
    assert_ne!(canon(&a, &o), canon(&b, &o));
    assert_ne!(
        canon(&a, &CanonOptions::default()),
        canon(&b, &CanonOptions::default())
    );
    let c = Renamer::new(&o).canonicalize(a.as_bytes());
    assert!(
        c.text.windows(4).any(|w| w == b"v1_a"),
        "{}",
        String::from_utf8_lossy(&c.text)
    );
}

#[test]
fn an_attribute_with_its_brackets_apart_keeps_its_names() {
    // Regression: `[ [gnu::mode(QI)] ]` is an attribute (gcc takes it with
    // the space, or a splice, between the brackets); its `QI` names a mode,
    // not the local. Renamed with the local, the `QI` kernel (300 stored in
    // 8 bits: 44) and the `SI` one (300) shared one canonical text.
    let text = |m: &str| {
        format!(
            "void k(int* y) {{ int {m} = 0; int v [ [gnu::mode({m})] ] = 300; y[0] = v + {m}; }}"
        )
    };
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    assert_ne!(canon(&text("QI"), &o), canon(&text("SI"), &o));
    let spliced = |m: &str| text(m).replace("[ [", "[\\\n[");
    assert_ne!(canon(&spliced("QI"), &o), canon(&spliced("SI"), &o));
}

#[test]
fn a_label_binds_only_gotos_not_a_like_named_object() {
    // Regression: labels are a namespace of their own. In `x: x = 1; goto x;`
    // the assigned `x` is a global from a header, not the label; renamed with
    // the label, the kernel writing `x` and the one writing `y` shared one
    // canonical text.
    let text = |n: &str| format!("void k(void) {{ {n}: {n} = 1; goto {n}; }}");
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    assert_ne!(canon(&text("x"), &o), canon(&text("y"), &o));
    let scoped = |n: &str| format!("void k(void) {{ v_{n}: v_{n} = 1; goto v_{n}; }}");
    assert_ne!(
        canon(&scoped("a"), &CanonOptions::default()),
        canon(&scoped("b"), &CanonOptions::default())
    );
    // A label with only `goto`s, and a local beside a label of its name,
    // are still renamed.
    let c = Renamer::new(&o).canonicalize(b"void k(void) { goto done; done: ; }");
    assert_eq!(c.text, b"void k(void) { goto kc1; kc1: ; }");
    let c = Renamer::new(&o).canonicalize(b"void k(void) { int x; x: x = 1; goto x; }");
    assert_eq!(c.text, b"void k(void) { int kc1; kc1: kc1 = 1; goto kc1; }");
}

#[test]
fn inference_keeps_reserved_names_and_cxx_keywords() {
    // Regression: `__int128`, `_Float16`, `__auto_type` are gcc keywords and
    // `xor`, `bitand`, `export`, `consteval` C++ ones, so a kernel declaring
    // one as a local does not compile where one spelled `v` does; inference
    // renamed both to `kc1`, one canonical text.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let text = |n: &str| format!("void k(void) {{ int {n} = 1; {n} = 2; }}");
    for n in [
        "__int128",
        "_Float16",
        "__auto_type",
        "xor",
        "bitand",
        "compl",
        "not_eq",
        "export",
        "consteval",
        "constinit",
    ] {
        assert_ne!(canon(&text(n), &o), canon(&text("x"), &o), "{n}");
    }
    assert_eq!(
        canon(&text("x"), &o),
        "void k(void) { int kc1 = 1; kc1 = 2; }"
    );
}

#[test]
fn a_glsl_local_spelled_like_a_glsl_keyword_is_kept() {
    // Regression: glslang refuses a local named `sample`, `input`,
    // `sampler2D`, `mat2x3`, `gl_x` or `café` (reserved words, built-in types,
    // the `gl_` prefix, non-ASCII spellings), but inference renamed each to
    // `kc1`, the canonical text of the shader declaring `x`, which compiles.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let text = |n: &str| format!("#version 450\nvoid main() {{ int {n} = 1; {n} = 2; }}\n");
    for n in [
        "sample",
        "input",
        "filter",
        "precision",
        "sampler2D",
        "usampler2DArray",
        "image2D",
        "texture2D",
        "mat2x3",
        "dmat4",
        "u8vec2",
        "float64_t",
        "gl_x",
        "caf\u{e9}",
        "a$b",
        "rayQueryEXT",
    ] {
        assert_ne!(canon(&text(n), &o), canon(&text("x"), &o), "{n}");
    }
    assert!(canon(&text("x"), &o).contains("int kc1 = 1"));
    // The same words are names in C.
    let c = "void k(void) { int sample = 1; sample = 2; }";
    assert_eq!(canon(c, &o), "void k(void) { int kc1 = 1; kc1 = 2; }");
}

#[test]
fn a_name_spelled_with_dollar_or_beyond_ascii_is_kept_in_every_language() {
    // Regression: NVRTC refuses `a$b` and `café` as names (gcc takes them),
    // but inference renamed each to `kc1`, the canonical text of the kernel
    // declaring `x`, which compiles: the failing kernel was answered with
    // the other's program (tests/soundness/cuda.rs proves it through NVRTC).
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let text = |n: &str| format!("void k(float* y) {{ float {n} = 1; y[0] = {n}; }}");
    for n in ["a$b", "$", "caf\u{e9}", "caf\\u00e9", "n\u{4e2d}"] {
        let got = canon(&text(n), &o);
        assert_ne!(got, canon(&text("x"), &o), "{n}");
        assert!(got.contains(&format!("float {n} = 1")), "{n}: {got}");
    }
    assert_eq!(
        canon(&text("x"), &o),
        "void k(float* kc1) { float kc2 = 1; kc1[0] = kc2; }"
    );
}

#[test]
fn a_name_glued_to_a_literal_is_a_ud_suffix_and_kept() {
    // Regression: in C++ `"abc"_s` and `'a'_s` are one token each, calling
    // `operator""_s`; the local `_s` does not bind the suffix. Renamed with
    // the local, the kernel calling `operator""_s` and the one calling
    // `operator""_t` shared one canonical text (g++ compiles both).
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    for (open, close) in [("\"abc\"", ""), ("'a'", ""), ("\"abc\"\\\n", "")] {
        let text =
            |n: &str| format!("void k(int* y) {{ int {n} = 1; y[0] = {open}{n}{close} + {n}; }}");
        assert_ne!(canon(&text("_s"), &o), canon(&text("_t"), &o), "{open}");
        let d = CanonOptions::default();
        assert_ne!(canon(&text("v1_a"), &d), canon(&text("v2_b"), &d), "{open}");
    }
    // Not glued, the name is the local's.
    let c = "void k(int* y) { int v1_a = 1; y[0] = \"abc\"[v1_a]; }";
    assert!(canon(c, &CanonOptions::default()).contains("\"abc\"[kc"));
}
