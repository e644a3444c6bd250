//! The CLI contract of `kcache canon`, `key` and `digest`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn kcache(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

const KERNEL: &[u8] =
    b"void mm__seg3(float* n1_a) { for (int i4 = 0; i4 < 8; i4++) n1_a[i4] = 0; } // n1_a\n";

#[test]
fn canon_prints_exactly_the_canonical_text() {
    let out = kcache(
        &["canon", "--kernel-name", "mm__seg3", "--bound", "n1_a"],
        KERNEL,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        out.stdout,
        b"void mm__seg(float* kc1) { for (int kc2 = 0; kc2 < 8; kc2++) kc1[kc2] = 0; } // kc1\n"
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn canon_reads_a_file_or_dash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.c");
    std::fs::write(&path, KERNEL).unwrap();
    let from_file = kcache(&["canon", "--bound", "n1_a", path.to_str().unwrap()], b"");
    let from_dash = kcache(&["canon", "--bound", "n1_a", "-"], KERNEL);
    assert_eq!(from_file.status.code(), Some(0));
    assert_eq!(from_file.stdout, from_dash.stdout);
}

#[test]
fn canon_name_lists_are_comma_separated_and_repeatable() {
    let a = kcache(
        &["canon", "--bound", "x,y", "--bound", "z"],
        b"void k(int x, int y, int z) { w = x + y + z; }",
    );
    assert_eq!(
        a.stdout,
        b"void k(int kc1, int kc2, int kc3) { w = kc1 + kc2 + kc3; }"
    );
    let d = kcache(
        &[
            "canon",
            "--bound",
            "x",
            "--derivation",
            "*_l",
            "--derivation",
            "t*",
        ],
        b"void k(int x, int x_l, int t5) { y_l = x_l + t5 + x; }",
    );
    assert_eq!(
        d.stdout,
        b"void k(int kc1, int kc2, int kc3) { y_l = kc2 + kc3 + kc1; }"
    );
    let off = kcache(&["canon", "--no-symbols", "--no-scope-locals"], b"i1 v2_x");
    assert_eq!(off.stdout, b"i1 v2_x");
}

#[test]
fn canon_json_is_one_object() {
    let out = kcache(
        &["canon", "--json", "--bound", "a", "--free", "a"],
        b"void k(int a, int i1) { a = i1 + i2; }",
    );
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["canonical"], "void k(int a, int kc1) { a = kc1 + i2; }");
    assert_eq!(v["renamed"], serde_json::json!({"i1": "kc1"}));
    assert_eq!(v["bound_renamed"], false);
    assert_eq!(v["reason"], "bound name `a` is also free");
    // `i2` matches the symbol pattern but the kernel does not declare it.
    assert_eq!(
        v["kept"],
        serde_json::json!({"i2": "has an occurrence that refers to no declaration in the kernel"})
    );
    assert!(v.get("inferred").is_none());
}

#[test]
fn canon_infer_renames_what_the_kernel_declares_and_says_why_it_kept_the_rest() {
    let out = kcache(
        &["canon", "--infer", "--json", "--kernel-name", "k"],
        b"#define W 4\nvoid k(float* p, int n, int W2) { for (int j = 0; j < n; j++) p[j] = g * W * W2; { float u = p.x; } }",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["canonical"],
        "#define W 4\nvoid k(float* kc1, int kc2, int kc3) { for (int kc4 = 0; kc4 < kc2; kc4++) kc1[kc4] = g * W * kc3; { float kc5 = kc1.x; } }"
    );
    assert_eq!(v["inferred"], serde_json::json!(["p", "n", "W2", "j", "u"]));
    assert_eq!(v["kept"], serde_json::json!({}));
    let member = kcache(
        &["canon", "--infer", "--json"],
        b"void k(float* p, int x) { p[0] = p->x + x; }",
    );
    let v: serde_json::Value = serde_json::from_slice(&member.stdout).unwrap();
    // The member `x` is not the parameter: the parameter is renamed, the member not.
    assert_eq!(
        v["canonical"],
        "void k(float* kc1, int kc2) { kc1[0] = kc1->x + kc2; }"
    );
    assert_eq!(v["kept"], serde_json::json!({}));
    // A member the kernel declares in a plain body keeps its name there and
    // at its accesses; the parameter spelled like it is renamed.
    let declared = kcache(
        &["canon", "--infer", "--json"],
        b"struct S { int x; };\nvoid k(struct S* p, int x) { p->x = x; }",
    );
    let v: serde_json::Value = serde_json::from_slice(&declared.stdout).unwrap();
    assert_eq!(
        v["canonical"],
        "struct S { int x; };\nvoid k(struct S* kc1, int kc2) { kc1->x = kc2; }"
    );
    assert_eq!(v["kept"], serde_json::json!({}));
    // In a body the binder does not read (an unknown type word), every name
    // keeps its spelling.
    let unread = kcache(
        &["canon", "--infer", "--json"],
        b"struct S { T x; };\nvoid k(struct S* p, int x) { p->x = x; }",
    );
    let v: serde_json::Value = serde_json::from_slice(&unread.stdout).unwrap();
    assert_eq!(
        v["canonical"],
        "struct S { T x; };\nvoid k(struct S* kc1, int x) { kc1->x = x; }"
    );
    assert_eq!(
        v["kept"],
        serde_json::json!({"x": "is a tag or stands in a struct, union or enum body"})
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        kcache(&["canon", "--derivation", "nostar"], b"")
            .status
            .code(),
        Some(2)
    );
    assert_eq!(kcache(&["canon", "--bogus"], b"").status.code(), Some(2));
    assert_eq!(
        kcache(&["key", "--device-id", "0"], b"").status.code(),
        Some(2)
    );
    assert_eq!(
        kcache(
            &["key", "--device-id", "0", "--name", "k", "--option", "noeq"],
            b""
        )
        .status
        .code(),
        Some(2)
    );
    assert_eq!(kcache(&[], b"").status.code(), Some(2));
}

#[test]
fn other_errors_exit_1_with_one_line() {
    let out = kcache(&["canon", "/nonexistent/kernel.c"], b"");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("kcache: cannot read /nonexistent/kernel.c"));
}

#[test]
fn key_prints_one_line_of_four_fields() {
    let out = kcache(
        &[
            "key",
            "--device-id",
            "0",
            "--name",
            "k",
            "--option",
            "O=3",
            "--option",
            "a=b=c",
        ],
        b"src",
    );
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.ends_with('\n') && line.lines().count() == 1);
    let lib = kcache::key::make_key("0", "k", &"src".into(), &[("O", "3"), ("a", "b=c")]);
    assert_eq!(line.trim_end(), lib);
    let swapped = kcache(
        &[
            "key",
            "--device-id",
            "0",
            "--name",
            "k",
            "--option",
            "a=b=c",
            "--option",
            "O=3",
        ],
        b"src",
    );
    assert_eq!(swapped.stdout, line.as_bytes());
}

#[test]
fn digest_prints_the_digest_of_the_parts() {
    let out = kcache(&["digest", "ab", "c"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\n", kcache::key::digest_parts(["ab", "c"]))
    );
    assert_ne!(
        kcache(&["digest", "a", "bc"], b"").stdout,
        kcache(&["digest", "ab", "c"], b"").stdout
    );
}

#[test]
fn garbage_input_does_not_panic() {
    let garbage: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let out = kcache(
        &["canon", "--json", "--kernel-name", "x", "--bound", "__x"],
        &garbage,
    );
    assert_eq!(out.status.code(), Some(0));
    let out = kcache(&["canon"], b"/* unterminated \" R\"x( [[");
    assert_eq!(out.status.code(), Some(0));
    // A lexical error: keyed on the raw text, behind the marker.
    assert_eq!(out.stdout, b"/*kc0 raw*//* unterminated \" R\"x( [[");
}

#[test]
fn canon_json_says_why_a_kernel_is_raw_keyed_or_uncacheable() {
    let out = kcache(&["canon", "--json"], b"int x = __LINE__;");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["raw"].as_str().unwrap().contains("__LINE__"));
    assert!(v["uncacheable"].is_null());
    let out = kcache(&["canon", "--json"], b"char* t = __TIME__;");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["uncacheable"].as_str().unwrap().contains("__TIME__"));
    let out = kcache(&["canon", "--json"], b"int i1;");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["raw"].is_null());
}
