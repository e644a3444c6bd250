//! `kcache compile` on foreign kernels: `--infer`, `--neutral-name`, their
//! manifest fields, and the kernel name taken from the one function a file
//! defines.

use std::path::Path;

mod cli_support;
use cli_support::{have_cc, json, kcache};

/// One kernel as a person writes it, as tinygrad renders it during a search
/// (`test`), and under its real name: the same code three times.
fn write_twins(dir: &Path) {
    std::fs::write(
        dir.join("scale.c"),
        "void scale(float* restrict out, const float* restrict in, int n) {\n  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("test.c"),
        "void test(float* restrict data0, const float* restrict data1, int n) {\n  for (int ridx0 = 0; ridx0 < n; ridx0++) data0[ridx0] = 2.0f * data1[ridx0];\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("E_4.c"),
        "void E_4(float* restrict data0, const float* restrict data1, int n) {\n  for (int ridx0 = 0; ridx0 < n; ridx0++) data0[ridx0] = 2.0f * data1[ridx0];\n}\n",
    )
    .unwrap();
}

fn outcomes(v: &serde_json::Value) -> Vec<String> {
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn infer_and_neutral_names_share_one_compile_across_names_and_styles() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_twins(dir.path());
    let f = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let files = [f("scale.c"), f("test.c"), f("E_4.c")];
    let run = |store: &str, flags: &[&str]| {
        let mut a = vec!["compile", "--json"];
        a.extend_from_slice(flags);
        a.extend(files.iter().map(String::as_str));
        json(&kcache(&dir.path().join(store), &a))
    };
    // The names are nobody's patterns: without inference every kernel compiles.
    let plain = run("s1", &[]);
    assert_eq!(plain["kernels_compiled"], 3, "{plain}");
    // Inference alone: test and E_4 are the same code under other names.
    let inferred = run("s2", &["--infer"]);
    assert_eq!(inferred["kernels_compiled"], 3, "{inferred}");
    // Inference and neutral names: one compile.
    let neutral = run("s3", &["--infer", "--neutral-name"]);
    assert_eq!(
        outcomes(&neutral),
        ["compiled", "reused", "reused"],
        "{neutral}"
    );
    let symbols: Vec<&str> = neutral["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["symbol"].as_str().unwrap())
        .collect();
    assert!(symbols[0].starts_with("kc_"), "{symbols:?}");
    assert!(symbols.iter().all(|s| *s == symbols[0]), "{symbols:?}");
}

#[test]
fn the_kernel_name_is_the_one_function_the_file_defines() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("file_stem.c"),
        "static float sq(float v);\nvoid real_name(float* a) { a[0] = a[0] * a[0]; }\n",
    )
    .unwrap();
    let out = json(&kcache(
        &dir.path().join("store"),
        &[
            "compile",
            "--json",
            dir.path().join("file_stem.c").to_str().unwrap(),
        ],
    ));
    assert_eq!(out["kernels"][0]["symbol"], "real_name", "{out}");
}

#[test]
fn manifest_fields_infer_and_neutral_name() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_twins(dir.path());
    std::fs::write(
        dir.path().join("m.json"),
        r#"[{"file": "test.c", "infer": true, "neutral_name": true},
            {"file": "E_4.c", "infer": true, "neutral_name": true},
            {"file": "scale.c", "infer": true}]"#,
    )
    .unwrap();
    let out = json(&kcache(
        &dir.path().join("store"),
        &[
            "compile",
            "--json",
            "--manifest",
            dir.path().join("m.json").to_str().unwrap(),
        ],
    ));
    assert_eq!(outcomes(&out), ["compiled", "reused", "compiled"], "{out}");
    assert_eq!(out["kernels"][2]["symbol"], "scale");
}

/// Debug information records a kernel's local names and their columns: two
/// renderings that differ only in a local's name compile to different
/// objects under `-g`, so there neither may answer the other (issue 10's
/// binding argument says a renaming changes nothing the compiler produces,
/// which holds only without it). Without `-g` they still share a compile.
#[test]
fn under_a_debug_option_renamed_twins_compile_apart() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.c");
    let b = dir.path().join("b.c");
    std::fs::write(
        &a,
        "void k(float* y) {\n  float acc = 2.0f;\n  y[0] = acc;\n}\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "void k(float* y) {\n  float t = 2.0f;\n  y[0] = t;\n}\n",
    )
    .unwrap();
    let compile = |store: &str, option: &str, file: &Path| {
        let option = format!("--option={option}");
        let args = [
            "compile",
            "--json",
            "--infer",
            &option,
            file.to_str().unwrap(),
        ];
        outcomes(&json(&kcache(&dir.path().join(store), &args)))
    };
    assert_eq!(compile("plain", "-O2", &a), ["compiled"]);
    assert_eq!(
        compile("plain", "-O2", &b),
        ["stored"],
        "twins share a compile"
    );
    for option in ["-g", "-g3", "-ggdb"] {
        assert_eq!(compile(option, option, &a), ["compiled"]);
        assert_eq!(compile(option, option, &b), ["compiled"], "{option}");
        // Each is still answered from the store under its own spelling.
        assert_eq!(compile(option, option, &b), ["stored"], "{option}");
    }
    // `-g0` turns debug information off: the twins share again.
    assert_eq!(compile("g0", "-g0", &a), ["compiled"]);
    assert_eq!(compile("g0", "-g0", &b), ["stored"]);
}
