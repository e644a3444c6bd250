//! The command line's rough edges that a newcomer hit in the first minutes
//! (issue 13), one test each, named after the edge.

mod cli_support;
use cli_support::have_cc;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `kcache ARGS` with the store at `dir` unless the arguments say otherwise,
/// and no store settings from the environment.
fn kcache_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kcache"));
    cmd.args(args)
        .env("KCACHE_DIR", dir)
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_MAX_BYTES")
        .env_remove("KCACHE_LOG")
        .env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn kcache(dir: &Path, args: &[&str]) -> Output {
    kcache_env(dir, args, &[])
}

fn stdout(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out)).unwrap()
}

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

/// A cc kernel file in `dir`, named after its function `name`.
fn kernel(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(format!("{name}.c"));
    fs::write(
        &p,
        format!("void {name}(float* n1_x, int n) {{ for (int i1 = 0; i1 < n; i1++) n1_x[i1] *= 2.0f; }}\n"),
    )
    .unwrap();
    p
}

/// A store at `<t>/store` holding one compiled kernel (compiled once, then
/// found in the store once).
fn filled_store(t: &Path) -> PathBuf {
    let store = t.join("store");
    let file = kernel(t, "scale");
    let file = file.to_str().unwrap();
    for _ in 0..2 {
        stdout(&kcache(&store, &["compile", "--backend", "cc", file]));
    }
    store
}

fn dir_arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn store_options_are_accepted_after_the_cache_subcommand() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let elsewhere = t.path().join("elsewhere");
    for args in [
        vec!["cache", "--dir", dir_arg(&store), "stats", "--json"],
        vec!["cache", "stats", "--dir", dir_arg(&store), "--json"],
        vec![
            "cache",
            "stats",
            "--json",
            "--store",
            "file",
            "--dir",
            dir_arg(&store),
        ],
    ] {
        let v = json(&kcache(&elsewhere, &args));
        assert_eq!(
            v["entries"], 1,
            "one record carrying its program: {args:?}: {v}"
        );
    }
    assert_eq!(
        kcache(&elsewhere, &["cache", "ls", "--store", "none"])
            .status
            .code(),
        Some(1),
        "--store after the subcommand is honoured"
    );
}

#[test]
fn cache_stats_prints_human_sizes_and_a_hit_rate() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let text = stdout(&kcache(&store, &["cache", "stats"]));
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .to_string()
    };
    assert_eq!(field("cap "), "2.0 GiB (from default)", "{text}");
    assert!(field("bytes ").ends_with("KiB"), "{text}");
    let v = json(&kcache(&store, &["cache", "stats", "--json"]));
    let (hits, misses) = (v["hits"].as_u64().unwrap(), v["misses"].as_u64().unwrap());
    assert!(hits > 0 && misses > 0, "{v}");
    let rate = hits as f64 / (hits + misses) as f64;
    assert_eq!(field("hit rate"), format!("{:.1}%", rate * 100.0), "{text}");
    assert_eq!(v["hit_rate"].as_f64(), Some(rate));
    assert!(!text.contains(&v["bytes"].to_string()), "raw bytes: {text}");
}

#[test]
fn cache_stats_json_store_is_an_object_not_a_sentence() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let v = json(&kcache(&store, &["cache", "stats", "--json"]));
    let s = &v["store"];
    assert_eq!(s["kind"], "file", "{v}");
    assert_eq!(
        Path::new(s["dir"].as_str().unwrap()),
        fs::canonicalize(&store).unwrap()
    );
    assert_eq!(s["max_bytes"], 2u64 << 30);
    assert_eq!(s["max_bytes_from"], "default");
}

#[test]
fn ls_sizes_add_up_to_stats_bytes() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let stats = json(&kcache(&store, &["cache", "stats", "--json"]));
    let plain: u64 = stdout(&kcache(&store, &["cache", "ls"]))
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(plain, stats["bytes"].as_u64().unwrap());
    let listed: u64 = json(&kcache(&store, &["cache", "ls", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["stored_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(listed, plain);
}

#[test]
fn ls_json_times_are_in_the_iso_form_of_the_plain_output() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let plain = stdout(&kcache(&store, &["cache", "ls"]));
    let list = json(&kcache(&store, &["cache", "ls", "--json"]));
    for (line, e) in plain.lines().zip(list.as_array().unwrap()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], e["name"]);
        assert_eq!(words[2], e["last_access"], "{line} vs {e}");
        assert!(e["last_access_unix"].as_u64().unwrap() > 0);
    }
}

#[test]
fn every_subcommand_that_prints_takes_json() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let name = json(&kcache(&store, &["cache", "ls", "--json"]))[0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let out_file = t.path().join("out.bin");
    let export = json(&kcache(
        &store,
        &["cache", "export", "--json", &name, dir_arg(&out_file)],
    ));
    assert_eq!(export["bytes"], fs::metadata(&out_file).unwrap().len());
    let to_stdout = kcache(&store, &["cache", "export", "--json", &name, "-"]);
    assert_eq!(to_stdout.status.code(), Some(2), "{}", stderr(&to_stdout));
    let prune = json(&kcache(
        &store,
        &["cache", "prune", "--max-bytes", "1G", "--json"],
    ));
    assert_eq!(prune["removed"], 0, "{prune}");
    assert!(json(&kcache(&store, &["cache", "zero", "--json"]))["zeroed_at"].is_string());
    assert_eq!(
        json(&kcache(&store, &["cache", "set-cap", "1G", "--json"]))["max_bytes"],
        1u64 << 30
    );
    assert_eq!(
        json(&kcache(&store, &["cache", "clear", "--json"]))["removed"],
        1,
        "one record, carrying its program"
    );
    let key = json(&kcache(
        &store,
        &[
            "key",
            "--json",
            "--device-id",
            "d",
            "--name",
            "k",
            dir_arg(&out_file),
        ],
    ));
    assert_eq!(key["device_id"], "d");
    let plain_key = stdout(&kcache(
        &store,
        &["key", "--device-id", "d", "--name", "k", dir_arg(&out_file)],
    ));
    assert_eq!(key["key"], plain_key.trim());
    let digest = json(&kcache(&store, &["digest", "--json", "a", "b"]));
    assert_eq!(
        digest["digest"],
        stdout(&kcache(&store, &["digest", "a", "b"])).trim()
    );
    assert_eq!(digest["parts"], 2);
}

#[test]
fn max_bytes_takes_a_fractional_size() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let out = kcache(&store, &["cache", "prune", "--max-bytes", "1.5G"]);
    assert!(stdout(&out).starts_with("removed 0 entries"));
    let bad = kcache(&store, &["cache", "prune", "--max-bytes", "1.5X"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown unit"), "{}", stderr(&bad));
    let v = json(&kcache_env(
        &store,
        &["cache", "stats", "--json"],
        &[("KCACHE_MAX_BYTES", "0.5G")],
    ));
    assert_eq!(v["store"]["max_bytes"], 1u64 << 29);
}

#[test]
fn cache_zero_zeroes_the_statistics() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let before = json(&kcache(&store, &["cache", "stats", "--json"]));
    assert!(before["hits"].as_u64().unwrap() > 0, "{before}");
    stdout(&kcache(&store, &["cache", "zero"]));
    let after = json(&kcache(&store, &["cache", "stats", "--json"]));
    assert_eq!(
        (&after["hits"], &after["misses"]),
        (&0.into(), &0.into()),
        "{after}"
    );
    assert_eq!(after["entries"], before["entries"], "entries stay");
    assert!(after["hit_rate"].is_null());
    assert!(after["zeroed_at"].is_string());
    // Zeroing one kind of store leaves another kind's counters in the
    // same directory alone.
    let sqlite = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["--store", "sqlite"]);
        kcache(&store, &a)
    };
    let file = t.path().join("scale.c");
    for _ in 0..2 {
        stdout(&sqlite(&["compile", "--backend", "cc", dir_arg(&file)]));
    }
    let other = json(&sqlite(&["cache", "stats", "--json"]));
    assert!(other["hits"].as_u64().unwrap() > 0, "{other}");
    assert!(other["zeroed_at"].is_null(), "{other}");
    // Counting goes on from zero.
    stdout(&kcache(
        &store,
        &["compile", "--backend", "cc", dir_arg(&file)],
    ));
    let later = json(&kcache(&store, &["cache", "stats", "--json"]));
    assert!(later["hits"].as_u64().unwrap() > 0, "{later}");
}

#[test]
fn set_cap_keeps_a_cap_in_the_store_under_the_flag_and_the_environment() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    let cap = |env: &[(&str, &str)]| {
        let v = json(&kcache_env(&store, &["cache", "stats", "--json"], env));
        (
            v["store"]["max_bytes"].as_u64().unwrap(),
            v["store"]["max_bytes_from"].clone(),
        )
    };
    assert_eq!(cap(&[]), (2 << 30, "default".into()));
    stdout(&kcache(&store, &["cache", "set-cap", "10G"]));
    assert_eq!(cap(&[]), (10 << 30, "set-cap".into()));
    assert_eq!(
        cap(&[("KCACHE_MAX_BYTES", "1M")]),
        (1 << 20, "KCACHE_MAX_BYTES".into())
    );
    stdout(&kcache(&store, &["cache", "set-cap", "none"]));
    assert_eq!(cap(&[]), (2 << 30, "default".into()));
    let help = stdout(&kcache(&store, &["cache", "set-cap", "--help"]));
    assert!(help.contains("KCACHE_MAX_BYTES"), "{help}");
}

#[test]
fn no_colour_escapes_unless_stderr_is_a_terminal() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // A store others can write: one warning on stderr, which is a pipe here.
    let store = t.path().join("open");
    fs::create_dir(&store).unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o777)).unwrap();
    let file = kernel(t.path(), "scale");
    let out = kcache(&store, &["compile", "--backend", "cc", dir_arg(&file)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("WARN"), "{err}");
    assert!(!err.contains('\x1b'), "colour escapes in {err:?}");
}

#[test]
fn tune_help_shows_tune_flags_and_groups_the_cuda_ones() {
    let t = tempfile::tempdir().unwrap();
    let help = stdout(&kcache(t.path(), &["tune", "--help"]));
    assert!(!help.contains("`compile`"), "{help}");
    assert!(!help.contains("kernel files"), "{help}");
    let cuda = help.find("\nCUDA:").expect("a CUDA heading");
    for flag in ["--arch", "--ptx"] {
        let at = help.find(&format!("      {flag}")).unwrap();
        assert!(at > cuda, "{flag} under the CUDA heading:\n{help}");
    }
    assert!(!help.contains("CUDA: the architecture"), "{help}");
}

#[test]
fn device_is_an_index_in_tune_and_key_takes_a_device_id() {
    let t = tempfile::tempdir().unwrap();
    let tune = kcache(t.path(), &["tune", "--device", "gpu0"]);
    assert_eq!(tune.status.code(), Some(2), "{}", stderr(&tune));
    let src = t.path().join("k.c");
    fs::write(&src, "void k(void) {}\n").unwrap();
    let key = kcache(
        t.path(),
        &["key", "--device", "gpu0", "--name", "k", dir_arg(&src)],
    );
    assert_eq!(
        key.status.code(),
        Some(2),
        "key has no --device: {}",
        stderr(&key)
    );
    assert!(stderr(&key).contains("--device-id"), "{}", stderr(&key));
    let key = stdout(&kcache(
        t.path(),
        &["key", "--device-id", "gpu0", "--name", "k", dir_arg(&src)],
    ));
    assert!(!key.trim().is_empty());
}

#[test]
fn a_failed_compile_names_the_kernel_and_backend_then_the_log() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.c");
    fs::write(&bad, "void bad(float* a) { a[0] += ; }\n").unwrap();
    let out = kcache(
        t.path(),
        &[
            "compile",
            "--backend",
            "cc",
            "--store",
            "none",
            dir_arg(&bad),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let mut lines = err.lines();
    assert_eq!(
        lines.next(),
        Some("kcache: compile of `bad` failed (cc):"),
        "{err}"
    );
    assert!(
        lines.any(|l| l.contains("error")),
        "the compiler's log: {err}"
    );
    assert!(!err.contains("program 0 of 1"), "{err}");
}

#[test]
fn one_candidate_is_singular() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let out = stdout(&kcache(
        t.path(),
        &[
            "tune",
            "--backend",
            "cc",
            "--candidates",
            "1",
            "--reps",
            "1",
            "--size",
            "8x8x8",
            "--store",
            "none",
        ],
    ));
    assert!(out.contains("search      1 candidate on"), "{out}");
    assert!(!out.contains("1 candidates"), "{out}");
}

#[test]
fn an_option_setting_the_cuda_architecture_is_a_usage_error_pointing_at_arch() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("k.cu");
    fs::write(
        &src,
        "extern \"C\" __global__ void k(float* a) { a[0] = 1; }\n",
    )
    .unwrap();
    for option in ["--option=--gpu-architecture=sm_80", "--option=-arch=sm_80"] {
        let out = kcache(
            t.path(),
            &[
                "compile",
                "--backend",
                "cuda",
                "--compile-only",
                option,
                dir_arg(&src),
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{option}: {err}");
        assert!(err.contains("--arch"), "{option}: {err}");
    }
}

#[test]
fn cuda_refuses_a_kernel_name_the_program_does_not_define() {
    let t = tempfile::tempdir().unwrap();
    if !available(t.path(), "cuda") {
        return;
    }
    let src = t.path().join("k.cu");
    fs::write(
        &src,
        "extern \"C\" __device__ __noinline__ float helper(float x) { return 2 * x; }\n\
         extern \"C\" __global__ void k(float* a) { a[0] = helper(a[0]); }\n",
    )
    .unwrap();
    let store = t.path().join("store");
    for target in [None, Some("--ptx")] {
        let run = |name: &str| {
            let mut args = vec![
                "compile",
                "--backend",
                "cuda",
                "--compile-only",
                "--kernel-name",
                name,
            ];
            args.extend(target);
            args.push(dir_arg(&src));
            kcache(&store, &args)
        };
        stdout(&run("k"));
        for missing in ["nonexistent", "helper"] {
            let out = run(missing);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{target:?} {missing}: {err}");
            assert!(err.contains(&format!("no kernel `{missing}`")), "{err}");
        }
    }
    // Nothing was stored for the refused names: one record per target, each
    // carrying its (small) program.
    assert_eq!(
        json(&kcache(&store, &["cache", "stats", "--json"]))["entries"],
        2
    );
}

#[test]
fn tune_with_an_unusable_store_warns_once_and_exits_0() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let open = t.path().join("mode-777");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let file = t.path().join("a-file");
    fs::write(&file, b"not a directory").unwrap();
    // Read-only for anyone but root (who writes anyway, and so gets a store).
    let read_only = t.path().join("read-only");
    fs::create_dir(&read_only).unwrap();
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o500)).unwrap();
    let cases = [
        (open.clone(), 1),
        (file.clone(), 1),
        (PathBuf::from("/proc/kcache-uncreatable/store"), 1),
        (read_only.clone(), usize::from(!is_root())),
    ];
    for (dir, warnings) in &cases {
        for kind in ["file", "sqlite"] {
            let out = kcache(
                dir,
                &[
                    "tune",
                    "--backend",
                    "cc",
                    "--candidates",
                    "1",
                    "--reps",
                    "1",
                    "--size",
                    "8x8x8",
                    "--store",
                    kind,
                ],
            );
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{kind} at {}: {err}",
                dir.display()
            );
            assert_eq!(
                err.lines().filter(|l| l.contains("WARN")).count(),
                *warnings,
                "{kind} at {}: {err}",
                dir.display()
            );
        }
    }
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o700)).unwrap();
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn compile_shows_no_progress_when_stderr_is_not_a_terminal() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // A compiler slower than the second after which a terminal gets progress.
    let slow = t.path().join("slow-cc");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    fs::write(&slow, format!("#!/bin/sh\nsleep 1.2\nexec {cc} \"$@\"\n")).unwrap();
    fs::set_permissions(&slow, fs::Permissions::from_mode(0o755)).unwrap();
    let file = kernel(t.path(), "scale");
    let out = kcache_env(
        t.path(),
        &[
            "compile",
            "--backend",
            "cc",
            "--store",
            "none",
            dir_arg(&file),
        ],
        &[("CC", slow.to_str().unwrap())],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err, "", "nothing on a pipe");
}

#[test]
fn cache_stats_counts_hits_and_misses_per_kernel() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // One kernel compiled (a miss), then answered from the store (a hit,
    // though that reads its record and its program).
    let store = filled_store(t.path());
    let v = json(&kcache(&store, &["cache", "stats", "--json"]));
    assert_eq!((&v["hits"], &v["misses"]), (&1.into(), &1.into()), "{v}");
    let help = stdout(&kcache(&store, &["cache", "stats", "--help"]));
    assert!(help.contains("per kernel"), "{help}");
}

/// A store filled by one compile, its kernel's record rewritten through the
/// store itself (framing and checksum valid), its program one byte off the
/// id it names: the record's name and the forged bytes.
fn forge_an_inline_record(store: &Path) -> (String, Vec<u8>) {
    use kcache::resolve::stored;
    use kcache::store::{FileStore, Store};
    let list = json(&kcache(store, &["cache", "ls", "--json"]));
    let name = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .find(|n| n.starts_with("kernel/"))
        .expect("a kernel's record");
    let key = stored::entry_key(&name).unwrap();
    let digest = kcache::key::Digest(key[key.len() - 32..].try_into().unwrap());
    let s = FileStore::open(store).unwrap();
    let record = stored::read_record(&digest, s.get(&key).unwrap().unwrap()).unwrap();
    let mut forged = record.inline().expect("a small program, inline").to_vec();
    *forged.last_mut().unwrap() ^= 1;
    let bytes = stored::encode_inline_record(&digest, &record.program, &record.symbol, &forged);
    s.put(&key, &bytes).unwrap();
    (name, forged)
}

#[test]
fn cache_export_never_writes_a_program_that_is_not_its_records_id() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let (name, forged) = forge_an_inline_record(&store);
    let out_file = t.path().join("out.bin");
    let out = kcache(&store, &["cache", "export", &name, dir_arg(&out_file)]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        fs::read(&out_file).map_or(true, |b| b != forged),
        "the forged bytes are never written out"
    );
}

/// `cache verify` checks programs against their ids, not only the store's
/// framing: the forged record passes the store's checksum, yet is found,
/// reported and removed (exit 1), and a second verify finds nothing.
#[test]
fn cache_verify_removes_a_record_whose_program_is_not_its_id() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let store = filled_store(t.path());
    let (name, _) = forge_an_inline_record(&store);
    let out = kcache(&store, &["cache", "verify", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let corrupt = report["corrupt"].as_array().unwrap();
    assert_eq!(corrupt.len(), 1, "{report}");
    assert_eq!(corrupt[0]["name"], name.as_str());
    let list = json(&kcache(&store, &["cache", "ls", "--json"]));
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != name.as_str()),
        "the forged record is removed: {list}"
    );
    let again = kcache(&store, &["cache", "verify"]);
    assert!(again.status.success(), "{}", stdout(&again));
}
