use super::*;

fn iso(src: &str) -> Isolation {
    Isolation::of(src.as_bytes(), None)
}

fn alone(src: &str) -> bool {
    !iso(src).groupable()
}

/// Review 2026-12-02, C F17: gcc calls `nearbyintf` for a narrowed
/// `nearbyint`, which no list of implicit callees had.
#[test]
fn a_kernel_defining_an_external_function_besides_its_symbol_is_alone() {
    let with = |src: &str| Isolation::of(src.as_bytes(), None).with_symbol(b"k");
    let a = with("float nearbyintf(float x) { return 42.0f; } int k(int n) { return n; }");
    assert!(
        a.alone
            .as_deref()
            .is_some_and(|w| w.contains("`nearbyintf`")),
        "{:?}",
        a.alone
    );
    for ok in [
        "static float h(float x) { return x; } int k(int n) { return h(n); }",
        "static inline float h(float x) { return x; } int k(int n) { return h(n); }",
        "float h(float x); static int s; int k(int n) { return n; }",
        "int k(int n) { return n; }",
    ] {
        assert_eq!(with(ok).alone, None, "{ok}");
    }
    // `static` ends with its declaration.
    let b = with("static int s; float h(float x) { return x; } int k(int n) { return n; }");
    assert!(b.alone.is_some());
    let c = with("static float g(float x) { return x; } float h(float x) { return x; } int k(int n) { return n; }");
    assert!(
        c.alone.as_deref().is_some_and(|w| w.contains("`h`")),
        "{:?}",
        c.alone
    );
}

#[test]
fn a_plain_function_is_groupable_and_declares_its_name() {
    let k = iso("void k(float* restrict a, int n) { for (int i = 0; i < n; i++) a[i] = 0; }");
    assert_eq!(k.alone, None);
    assert_eq!(k.declared(), ["k"]);
}

#[test]
fn the_renderers_prefix_is_allowed_and_compared() {
    let p = "#include <math.h>\n#define max(a, b) fmaxf(a, b)\n";
    let a = iso(&format!(
        "{p}void a(float* y) {{ y[0] = max(y[0], 0.0f); }}\n"
    ));
    let b = iso(&format!("{p}void b(float* y) {{ y[0] = 1.0f; }}\n"));
    let c = iso("void c(float* y) { y[0] = 1.0f; }\n");
    assert!(a.groupable() && a.prefix_len == p.len() - 1);
    assert!(a.isolated_from(&b) && b.isolated_from(&a));
    assert!(!a.isolated_from(&c), "another prefix");
}

#[test]
fn macro_parameters_are_no_names() {
    let a = iso("#define sq(x) ((x) * (x))\nint x;");
    assert!(a.groupable());
    let b = iso("#define sq(x) ((x) * (x))\nvoid b(int* y) { *y = sq(2); }");
    assert!(a.isolated_from(&b));
}

#[test]
fn a_prefix_macro_body_counts_as_a_use() {
    let p = "#define max(a, b) helper(a, b)\n";
    let a = iso(&format!(
        "{p}void a(float* y) {{ y[0] = max(y[0], 0.0f); }}"
    ));
    let b = iso(&format!(
        "{p}float helper(float x, float y) {{ return x; }}"
    ));
    assert!(!a.isolated_from(&b));
}

#[test]
fn a_macro_defined_by_one_and_used_by_another_is_not_isolated() {
    let a = iso("#define N 4\nvoid a(float* y) { y[0] = N; }");
    let b = iso("void b(float* y) { y[0] = N; }");
    assert!(!a.isolated_from(&b));
}

#[test]
fn a_helper_called_by_another_is_not_isolated() {
    let a = iso("static float h(float x) { return x; } void a(float* y) { y[0] = h(1); }");
    let b = iso("void b(float* y) { y[0] = h(2); }");
    assert!(a.groupable() && b.groupable());
    assert!(!a.isolated_from(&b) && !b.isolated_from(&a));
}

#[test]
fn duplicate_statics_typedefs_tags_and_enum_constants_are_not_isolated() {
    for (x, y) in [
        ("static int s;", "static float s;"),
        ("typedef int T;", "void b(T* t) { }"),
        ("struct S { int a; };", "void b(void) { struct S s; }"),
        ("enum { RED };", "void b(int* y) { *y = RED; }"),
        ("int g = 1;", "void b(int* y) { int g2 = g; *y = g2; }"),
    ] {
        assert!(!iso(x).isolated_from(&iso(y)), "{x} / {y}");
    }
}

#[test]
fn disjoint_kernels_are_isolated() {
    let a = iso("static float ha(float x) { return x; } void a(float* y) { y[0] = ha(1); }");
    let b = iso("static float hb(float x) { return x; } void b(float* y) { y[0] = hb(1); }");
    assert!(a.isolated_from(&b));
}

#[test]
fn parameters_of_a_body_are_not_declared_but_prototype_ones_are() {
    assert_eq!(iso("void f(int n) { }").declared(), ["f"]);
    assert_eq!(iso("void f(int n);").declared(), ["f", "n"]);
}

#[test]
fn non_body_braces_declare_everything_inside() {
    assert_eq!(
        iso("struct S { int a; float b; };").declared(),
        ["S", "a", "b"]
    );
    assert!(alone("struct S { int a; }"), "ends in no body");
}

#[test]
fn what_reaches_across_a_unit_is_refused() {
    for src in [
        "#pragma GCC optimize(\"O0\")\nvoid a(void) { }",
        "#include \"local.h\"\nvoid a(void) { }",
        "#undef X\nvoid a(void) { }",
        "void a(void) { }\n#define X 1\n",
        "_Pragma(\"once\") void a(void) { }",
        "__attribute__((constructor)) void a(void) { }",
        "void a(void) __attribute__((alias(\"b\")));",
        "[[gnu::constructor]] void a(void) { }",
        "__declspec(dllexport) void a(void) { }",
        "asm(\".globl x\");",
        "void a(void) { asm(\"nop\"); }",
        "void a(void) { extern int x; x = 1; }",
        "int c = __COUNTER__;",
        "void a(void) { int l = __LINE__; }",
        "char* t = __TIME__;",
        "void a(void) { }}",
        "void a(void) { ",
        "(void)0;",
        "int x = 1",
        "char* s = \"x\";",
        "using namespace std;",
        "template <class T> T id(T x) { return x; }",
        "struct V { int x; }; V operator+(V a, V b) { return a; }",
        "void *memcpy(void *d, const void *s, unsigned long n) { return d; }",
        "int __stack_chk_guard;",
        "int x = 1'000;",
        "??=define X\nvoid a(void) { }",
    ] {
        assert!(alone(src), "{src}");
    }
}

#[test]
fn a_kernel_declaring_anothers_symbol_is_not_isolated_from_it() {
    let a = iso("void ka(float* x) { x[0] = 1; } static void kb(float* x) { x[0] = 5; }")
        .with_symbol(b"ka");
    let b = iso("void kb_other(float* x) { x[0] = 2; }").with_symbol(b"kb");
    assert!(a.groupable());
    assert!(!b.groupable(), "it does not declare its own symbol");
    let c = iso("void kc(float* x) { x[0] = 2; }").with_symbol(b"kc");
    assert!(c.groupable() && a.isolated_from(&c));
    // Declared but its symbol is also declared by the other kernel.
    let d = iso("void kb(float* x) { x[0] = 2; }").with_symbol(b"kb");
    assert!(!a.isolated_from(&d) && !d.isolated_from(&a));
    let e = iso("void ke(float* x) { x[0] = 2; }").with_symbol(b"ke");
    let f = iso("void kf(float* x) { x[0] = 2; } int ke;").with_symbol(b"kf");
    assert!(!e.isolated_from(&f), "f declares e's symbol");
}

#[test]
fn extern_c_linkage_is_allowed() {
    assert!(!alone(
        "extern \"C\" __global__ void k(float* y) { y[0] = 0; }"
    ));
}

#[test]
fn digraph_brackets_count() {
    assert!(!alone("void a(int* y) <% y<:0:> = 1; %>"));
    assert!(
        !alone("void a(int* y) <% y<:0] = 1; }"),
        "a digraph is its bracket"
    );
    assert!(alone("void a(int* y) <% y<:0) = 1; %>"));
}

#[test]
fn option_bodies_are_names_and_forced_includes_refuse() {
    let names = option_names(&["-O2", "-DN=helper"]).unwrap();
    assert!(names.contains(b"helper".as_slice()));
    assert!(!iso("int helper(void) { return 0; }").declares_none_of(&names));
    assert!(option_names(&["-include", "x.h"]).is_none());
    assert!(option_names(&["-imacros=x.h"]).is_none());
}

#[test]
fn a_name_a_paste_may_spell_is_not_isolated_from_the_kernel_pasting_it() {
    // Review 2026-12-02, GPU F19b: `CAT(v1_a, 1)` is `v1_a1`, which
    // another kernel of the group may declare.
    let p = "#include <cat.h>\n";
    let a = iso(&format!(
        "{p}float v1_a1 = 7.0f;\nvoid a(float* y) {{ y[0] = v1_a1; }}"
    ));
    let b = || iso(&format!("{p}void b(float* y) {{ y[0] = CAT(v1_a, 1); }}"));
    let pasting: MacroNames = ["CAT"].into_iter().collect();
    let reached = std::sync::Arc::new(MacroNames::default());
    assert!(a.isolated_from(&b()), "without the macro known to paste");
    let b = b().with_pasting(&pasting, &reached);
    assert!(!a.isolated_from(&b) && !b.isolated_from(&a));
    // A kernel whose names start with no piece a paste may join stays
    // isolated.
    let c = iso(&format!(
        "{p}float r1 = 7.0f;\nvoid c(float* y) {{ y[0] = r1; }}"
    ));
    assert!(c.isolated_from(&b) && b.isolated_from(&c));
}
