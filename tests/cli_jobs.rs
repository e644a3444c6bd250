//! The CLI contract of `kcache tune`, `compile`, `backends` and `cache`.

use std::path::Path;

mod cli_support;
use cli_support::{have_cc, json, kcache};

#[test]
fn tune_reuses_within_a_search_and_a_second_process_compiles_nothing() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "tune",
        "--json",
        "--candidates",
        "12",
        "--reps",
        "1",
        "--size",
        "16x32x16",
    ];
    let cold = json(&kcache(dir.path(), &args));
    assert_eq!(cold["candidates"], 12);
    let requested = cold["kernels_requested"].as_u64().unwrap();
    let compiled = cold["kernels_compiled"].as_u64().unwrap();
    assert!(
        compiled > 0 && compiled < requested / 2,
        "most kernels are reused: {cold}"
    );
    assert_eq!(
        cold["kernels_reused"].as_u64().unwrap() + compiled,
        requested
    );
    assert!(cold["programs_compiled"].as_u64().unwrap() > 0);
    assert!(cold["best"]["time_seconds"].as_f64().unwrap() > 0.0);
    assert!(cold["best"]["max_error"].as_f64().unwrap() < 1e-4);

    let warm = json(&kcache(dir.path(), &args));
    assert_eq!(warm["kernels_compiled"], 0, "{warm}");
    assert_eq!(warm["kernels_stored"].as_u64().unwrap(), compiled);
}

#[test]
fn a_second_round_in_the_same_process_reuses_every_kernel() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = json(&kcache(
        dir.path(),
        &[
            "tune",
            "--json",
            "--store",
            "none",
            "--candidates",
            "8",
            "--reps",
            "1",
            "--size",
            "8x8x8",
            "--rounds",
            "2",
        ],
    ));
    let rounds = out["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    assert!(rounds[0]["kernels_compiled"].as_u64().unwrap() > 0);
    assert_eq!(rounds[1]["kernels_compiled"], 0);
    assert_eq!(rounds[1]["kernels_reused"], rounds[1]["kernels_requested"]);
}

#[test]
fn tune_prints_a_table() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = kcache(
        dir.path(),
        &[
            "tune",
            "--candidates",
            "4",
            "--reps",
            "1",
            "--size",
            "8x8x8",
            "--split",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8(out.stdout).unwrap();
    for row in ["search", "best", "kernels", "programs", "compile", "wall"] {
        assert!(
            table.lines().any(|l| l.starts_with(row)),
            "{row} missing from\n{table}"
        );
    }
}

#[test]
fn tune_rejects_bad_sizes_as_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        kcache(dir.path(), &["tune", "--size", "0x1x1"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        kcache(dir.path(), &["tune", "--backend", "nope"])
            .status
            .code(),
        Some(2)
    );
}

fn kernel_files(dir: &Path) {
    std::fs::write(
        dir.join("a.c"),
        "void a(float* n1_x, int n) { for (int i1 = 0; i1 < n; i1++) n1_x[i1] *= 2.0f; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.c"),
        "void b(float* n2_y, int n) { for (int i7 = 0; i7 < n; i7++) n2_y[i7] *= 2.0f; }\n",
    )
    .unwrap();
    // Another candidate's rendering of `b`: same name, other generated names.
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(
        dir.join("other/b.c"),
        "void b(float* n9_y, int n) { for (int i3 = 0; i3 < n; i3++) n9_y[i3] *= 2.0f; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("bad.c"),
        "void bad(float* x) { x[0] = undefined_thing; }\n",
    )
    .unwrap();
}

#[test]
fn compile_reports_each_kernels_outcome() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    kernel_files(dir.path());
    let f = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let store = dir.path().join("store");
    let args = |files: &[String]| {
        let mut a = vec![
            "compile".to_string(),
            "--json".into(),
            "--bound".into(),
            "n1_x,n2_y,n9_y".into(),
        ];
        a.extend(files.iter().cloned());
        a
    };
    let run = |files: &[String]| {
        let a = args(files);
        json(&kcache(
            &store,
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    };
    let first = run(&[f("a.c"), f("b.c"), f("other/b.c")]);
    let outcomes: Vec<&str> = first["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["compiled", "compiled", "reused"],
        "other/b.c is b up to renaming: {first}"
    );
    assert_eq!(first["kernels_compiled"], 2);
    assert_eq!(first["programs_compiled"], 1);
    assert_eq!(first["kernels"][2]["symbol"], "b");
    let second = run(&[f("other/b.c")]);
    assert_eq!(second["kernels"][0]["outcome"], "stored");
    assert_eq!(second["kernels_stored"], 1);
}

#[test]
fn a_manifest_names_files_relative_to_itself() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    kernel_files(dir.path());
    std::fs::write(
        dir.path().join("m.json"),
        r#"[{"file": "a.c", "bound": ["n1_x"]}, {"file": "b.c", "kernel_name": "b", "bound": ["n2_y"], "options": ["-O3"]}]"#,
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
    assert_eq!(out["kernels"][0]["file"], "a.c");
    assert_eq!(
        out["programs_compiled"], 2,
        "two option lists, two programs"
    );
    let bad = kcache(
        dir.path(),
        &[
            "compile",
            "--manifest",
            dir.path().join("a.c").to_str().unwrap(),
        ],
    );
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn a_kernel_that_fails_to_compile_exits_1_naming_it_and_the_compilers_error() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    kernel_files(dir.path());
    let out = kcache(
        &dir.path().join("store"),
        &["compile", dir.path().join("bad.c").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad") && err.contains("undefined_thing"),
        "{err}"
    );
}

#[test]
fn backends_lists_all_four_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&kcache(dir.path(), &["backends", "--json"]));
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cc", "opencl", "cuda", "vulkan"]);
    for b in v.as_array().unwrap() {
        for field in ["available", "version", "devices", "reason"] {
            assert!(b.get(field).is_some(), "{field} missing in {b}");
        }
        if b["available"] == false {
            assert!(
                b["reason"].is_string(),
                "an unavailable backend says why: {b}"
            );
        }
    }
}

#[test]
fn cache_subcommands_work_on_what_compile_stored() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    kernel_files(dir.path());
    let store = dir.path().join("store");
    json(&kcache(
        &store,
        &[
            "compile",
            "--json",
            dir.path().join("a.c").to_str().unwrap(),
        ],
    ));
    let stats = json(&kcache(&store, &["cache", "stats", "--json"]));
    assert_eq!(
        stats["entries"], 1,
        "one kernel record, carrying its small program: {stats}"
    );
    let ls = json(&kcache(&store, &["cache", "ls", "--json"]));
    let kernel = ls
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str().unwrap().starts_with("kernel/"))
        .unwrap();
    let exported = dir.path().join("a.so");
    let out = kcache(
        &store,
        &[
            "cache",
            "export",
            kernel["name"].as_str().unwrap(),
            exported.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read(&exported).unwrap().starts_with(b"\x7fELF"),
        "the raw shared object"
    );
    assert_eq!(kcache(&store, &["cache", "verify"]).status.code(), Some(0));
    // Damage the record carrying the program: verify finds it, removes it,
    // exits 1.
    let entries = store.join("v1").join("entries");
    for shard in std::fs::read_dir(&entries).unwrap() {
        for e in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let p = e.unwrap().path();
            let mut bytes = std::fs::read(&p).unwrap();
            if bytes.len() > 1000 {
                let last = bytes.len() - 1;
                bytes[last] ^= 0xff;
                std::fs::write(&p, bytes).unwrap();
            }
        }
    }
    let verify = kcache(&store, &["cache", "verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["corrupt"].as_array().unwrap().len(), 1);
    assert_eq!(kcache(&store, &["cache", "clear"]).status.code(), Some(0));
    assert_eq!(
        json(&kcache(&store, &["cache", "stats", "--json"]))["entries"],
        0
    );
}

/// Whether CI asked for `backend` (then a missing library fails the test).
fn required(backend: &str) -> bool {
    std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == backend))
}

/// Whether `kcache backends` says `backend` is available here.
fn available(dir: &Path, backend: &str) -> bool {
    let all = json(&kcache(dir, &["backends", "--json"]));
    let info = all
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == backend)
        .unwrap()
        .clone();
    let ok = info["available"] == true;
    assert!(
        ok || !required(backend),
        "{backend} is required here: {info}"
    );
    if !ok {
        eprintln!("skipped: {backend}: {}", info["reason"]);
    }
    ok
}

#[test]
fn tune_runs_on_every_backend_available_here() {
    let dir = tempfile::tempdir().unwrap();
    for backend in ["opencl", "vulkan", "cuda"] {
        if !available(dir.path(), backend) {
            continue;
        }
        let store = dir.path().join(backend);
        let mut args = vec![
            "tune",
            "--json",
            "--backend",
            backend,
            "--candidates",
            "4",
            "--reps",
            "1",
            "--size",
            "8x16x8",
        ];
        // Without a GPU, CUDA compiles every candidate and runs none.
        let compile_only = backend == "cuda" && !gpu_present();
        if compile_only {
            args.push("--compile-only");
        }
        let out = json(&kcache(&store, &args));
        assert!(
            out["kernels_compiled"].as_u64().unwrap() > 0,
            "{backend}: {out}"
        );
        if compile_only {
            assert!(out["best"].is_null(), "{backend}: nothing ran: {out}");
        } else {
            assert!(
                out["best"]["max_error"].as_f64().unwrap() < 1e-4,
                "{backend}: {out}"
            );
        }
        let warm = json(&kcache(&store, &args));
        assert_eq!(
            warm["kernels_compiled"], 0,
            "{backend}: the store answers a new process: {warm}"
        );
    }
}

fn gpu_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn cuda_without_a_gpu_needs_compile_only() {
    let dir = tempfile::tempdir().unwrap();
    if gpu_present() || !available(dir.path(), "cuda") {
        return;
    }
    let out = kcache(
        dir.path(),
        &["tune", "--backend", "cuda", "--candidates", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--compile-only"));
}

#[test]
fn compile_works_with_the_opencl_backend() {
    let dir = tempfile::tempdir().unwrap();
    if !available(dir.path(), "opencl") {
        return;
    }
    let file = dir.path().join("scale.cl");
    std::fs::write(&file, "__kernel void scale(__global float* n1_x, int n) { int i1 = get_global_id(0); if (i1 < n) n1_x[i1] *= 2.0f; }\n").unwrap();
    let out = json(&kcache(
        &dir.path().join("store"),
        &[
            "compile",
            "--json",
            "--backend",
            "opencl",
            "--bound",
            "n1_x",
            file.to_str().unwrap(),
        ],
    ));
    assert_eq!(out["kernels"][0]["outcome"], "compiled");
    assert_eq!(out["kernels"][0]["symbol"], "scale");
}

/// The C compiler `cc` names on `PATH` (or `$CC`), as an absolute path.
fn real_cc() -> std::path::PathBuf {
    let name = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if name.contains('/') {
        return name.into();
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .expect("a C compiler on PATH")
}

/// Every path under `dir`.
fn tree(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(tree(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn a_warm_compile_hit_makes_no_work_directory_and_runs_no_compiler() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (store, tmp, src, bin) = (
        t.path().join("store"),
        t.path().join("tmp"),
        t.path().join("src"),
        t.path().join("bin"),
    );
    for d in [&tmp, &src, &bin] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(
        src.join("k.c"),
        "void k(float* y, const float* x, int n) { for (int i = 0; i < n; i++) y[i] += 2.0f * x[i]; }\n",
    )
    .unwrap();
    // The compiler, through a wrapper that counts its runs.
    let log = t.path().join("runs.log");
    let cc = bin.join("cc");
    std::fs::write(
        &cc,
        format!(
            "#!/bin/sh\necho run >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real_cc().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Probe answers are kept only for files older than the stat window (2 s)
    // in which a change cannot be told apart.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let runs = || std::fs::read_to_string(&log).map_or(0, |s| s.lines().count());
    let compile = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kcache"))
            .args(["compile", "--json", "--backend", "cc", "--dir"])
            .arg(&store)
            .arg(src.join("k.c"))
            .env("CC", &cc)
            .env("TMPDIR", &tmp)
            .env_remove("KCACHE_STORE")
            .env_remove("KCACHE_MAX_BYTES")
            .env_remove("KCACHE_LOG")
            .output()
            .unwrap();
        json(&out)
    };
    let export = || {
        let ls = json(&kcache(&store, &["cache", "ls", "--json"]));
        let program = ls
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            // The kernel's record, which carries its program or names it.
            .find(|n| n.starts_with("kernel/"))
            .expect("a stored kernel");
        let to = t.path().join("exported.so");
        let out = kcache(&store, &["cache", "export", &program, to.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0));
        std::fs::read(to).unwrap()
    };
    let cold = compile();
    assert_eq!(cold["kernels"][0]["outcome"], "compiled", "{cold}");
    assert!(runs() > 0, "the wrapper counts the compiler's runs");
    let compiled = export();
    assert!(compiled.starts_with(b"\x7fELF"));
    // Kept probes and a stored program: the next process needs neither the
    // compiler nor a directory to write an object in.
    compile();
    for e in std::fs::read_dir(&tmp).unwrap() {
        std::fs::remove_dir_all(e.unwrap().path()).unwrap();
    }
    let before = runs();
    let warm = compile();
    assert_eq!(warm["kernels"][0]["outcome"], "stored", "{warm}");
    assert_eq!(warm["kernels"][0]["symbol"], cold["kernels"][0]["symbol"]);
    assert_eq!(warm["kernels_compiled"], 0);
    assert_eq!(runs(), before, "a warm hit ran the compiler");
    assert_eq!(
        tree(&tmp),
        Vec::<std::path::PathBuf>::new(),
        "a warm hit wrote under TMPDIR"
    );
    assert_eq!(export(), compiled, "the stored program's bytes changed");
}
