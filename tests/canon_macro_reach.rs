//! Where a macro can reach a renamed name (or the kernel's own name) that
//! the scan or the binder must see: a macro that stringifies through a
//! digraph, through another macro's name in its body, or through the call
//! that the expansion of another macro's call opens. Each case is a pair of
//! kernels that compile differently (the name is stringified) and must not
//! share a key.

use kcache::canon::{CanonOptions, MacroNames, Renamer};
use std::sync::Arc;

fn renamer(kernel_name: Option<&str>, macros: &[&str]) -> Renamer {
    let o = CanonOptions {
        kernel_name: kernel_name.map(str::to_string),
        infer: true,
        ..CanonOptions::default()
    };
    let r = Renamer::new(&o);
    if macros.is_empty() {
        r
    } else {
        r.with_macros(Arc::new(
            macros.iter().map(|m| m.as_bytes()).collect::<MacroNames>(),
        ))
    }
}

/// The key forms of `template` with `@` spelled `a` and `b` (a parameter
/// and its uses) must differ.
fn renamed_name_keeps_keys_apart(template: &str, macros: &[&str]) {
    let r = renamer(None, macros);
    let one = template.replace('@', "qa");
    let two = template.replace('@', "qb");
    let (k1, k2) = (r.key_form(one.as_bytes()), r.key_form(two.as_bytes()));
    assert_ne!(
        (k1.text, k1.kernel_token),
        (k2.text, k2.kernel_token),
        "{template} with macros {macros:?}"
    );
}

/// The key forms of `template` with `@` the kernel's own name, for two
/// segments of one routine, must differ.
fn own_name_keeps_keys_apart(template: &str, macros: &[&str]) {
    let key = |name: &str| {
        let r = renamer(Some(name), macros);
        let k = r.key_form(template.replace('@', name).as_bytes());
        (k.text, k.kernel_token.map(<[u8]>::to_vec))
    };
    assert_ne!(
        key("f__seg0"),
        key("f__seg1"),
        "{template} with macros {macros:?}"
    );
}

#[test]
fn a_digraph_stringify_in_a_macro_body_keeps_its_arguments_names() {
    renamed_name_keeps_keys_apart(
        "#define S(x) %:x\nvoid g(int @) { const char* s = S(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "%:define S(x) %:x\nvoid g(int @) { const char* s = S(@); }",
        &[],
    );
}

#[test]
fn a_macro_whose_body_names_a_stringifying_macro_keeps_its_arguments_names() {
    renamed_name_keeps_keys_apart(
        "#define S2(x) #x\n#define S S2\nvoid g(int @) { const char* s = S(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define S2(x) #x\n#define T S2\n#define S T\nvoid g(int @) { const char* s = S(@); }",
        &[],
    );
    // The two-level stringify idiom, in either order.
    renamed_name_keeps_keys_apart(
        "#define XSTR(x) STR(x)\n#define STR(x) #x\nvoid g(int @) { const char* s = XSTR(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define STR(x) #x\n#define XSTR(x) STR(x)\nvoid g(int @) { const char* s = XSTR(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define XSTR(x) STR(x)\nvoid g(int @) { const char* s = XSTR(@); }",
        &["STR"],
    );
    // A backend's macro (from a header) may stringify.
    renamed_name_keeps_keys_apart(
        "#define S STR\nvoid g(int @) { const char* s = S(@); }",
        &["STR"],
    );
}

#[test]
fn the_call_after_a_macro_call_keeps_its_arguments_names() {
    renamed_name_keeps_keys_apart(
        "#define S2(x) #x\n#define ID(x) x\nvoid g(int @) { const char* s = ID(S2)(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define S2(x) #x\n#define G() S2\nvoid g(int @) { const char* s = G()(@); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define ID(x) x\nvoid g(int @) { const char* s = ID(STR)(@); }",
        &["STR"],
    );
    renamed_name_keeps_keys_apart(
        "void g(int @) { const char* s = ID(STR)(@); }",
        &["STR", "ID"],
    );
    renamed_name_keeps_keys_apart(
        "void g(int @) { const char* s = ID(ID)(STR)(@); }",
        &["STR", "ID"],
    );
}

#[test]
fn a_stringifying_macro_passed_to_another_keeps_the_arguments_names() {
    renamed_name_keeps_keys_apart(
        "#define APPLY(m, x) m(x)\n#define S2(x) #x\nvoid g(int @) { const char* s = APPLY(S2, @); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define APPLY(m, x) m x\n#define S2(x) #x\nvoid g(int @) { const char* s = APPLY(S2, (@)); }",
        &[],
    );
    renamed_name_keeps_keys_apart(
        "#define APPLY(m, x) m(x)\nvoid g(int @) { const char* s = APPLY(STR, @); }",
        &["STR"],
    );
    renamed_name_keeps_keys_apart(
        "#define APPLY(m, x) m(x)\n#define AP2(m, x) APPLY(m, x)\nvoid g(int @) { const char* s = AP2(STR, @); }",
        &["STR"],
    );
    // A macro whose body only uses its parameters as values still lets the
    // names be renamed, a backend's macro among its arguments or not.
    let r = renamer(None, &["STR", "i3"]);
    let c = r.canonicalize(
        b"#define AT(p, i) (p)[i]\nvoid g(int* q) { AT(q, i3) = 1; AT(q, STR) = 2; }",
    );
    assert!(c.inferred.contains(&"q".to_string()), "{}", c.text_lossy());
}

#[test]
fn the_own_name_in_the_call_after_a_macro_call_is_raw_keyed() {
    own_name_keeps_keys_apart("const char* s = ID(STR)(@);", &["STR", "ID"]);
    own_name_keeps_keys_apart("const char* s = ID(ID)(STR)(@);", &["STR", "ID"]);
    own_name_keeps_keys_apart("#define ID(x) x\nconst char* s = ID(STR)(@);", &["STR"]);
}

#[test]
fn the_own_name_in_a_call_of_a_plainly_defined_macro_is_raw_keyed() {
    // `#define N STR` is read without lexing (only plain words): it still
    // defines `N`.
    own_name_keeps_keys_apart("#define N STR\nconst char* s = N(@);", &["STR"]);
    own_name_keeps_keys_apart("#  define\tN STR\nconst char* s = N(@);", &["STR"]);
}

#[test]
fn plain_code_after_a_macro_call_is_still_renamed() {
    // The guard is no blanket refusal: a parenthesis that follows no macro
    // call, or a call's arguments not followed by a parenthesis, still lets
    // the name be renamed.
    let r = renamer(None, &["STR", "ID"]);
    let c = r.canonicalize(b"void g(int q) { int s = ID(1) + (q); }");
    assert!(!c.text_lossy().contains("(q)"), "{}", c.text_lossy());
    let r = renamer(Some("f__seg0"), &["STR", "ID"]);
    let k = r.key_form(b"void f__seg0(int q) { int s = ID(1) + (q); }");
    assert_eq!(k.kernel_token, Some(&b"f__seg"[..]));
}
