//! `kcache compile` with a store that cannot be used: one warning, a compile
//! without the store, exit 0 — never a failure or a hang. Also: a program
//! forged under a valid id is never loaded, and under `umask 000` everything
//! the store creates is private.

mod cli_support;
use cli_support::compile_command;
use cli_support::have_cc;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kcache::key::Digest;
use kcache::resolve::stored::{self, entry_key};
use kcache::store::{FileStore, Store};

const KINDS: [&str; 2] = ["file", "sqlite"];

fn kernel(dir: &Path) -> PathBuf {
    let p = dir.join("a.c");
    fs::write(
        &p,
        "void a(float* n1_x, int n) { for (int i1 = 0; i1 < n; i1++) n1_x[i1] *= 2.0f; }\n",
    )
    .unwrap();
    p
}

/// `kcache compile --json` with the store `kind` at `root`, killed (and the
/// test failed) if it runs past a minute; `umask` set in the child.
fn compile(
    root: &Path,
    kind: &str,
    file: &Path,
    env: &[(&str, &Path)],
    umask: Option<u32>,
) -> Output {
    let mut cmd = compile_command(root, kind, file);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(mask) = umask {
        // SAFETY: umask is async-signal-safe and touches nothing else.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask as libc::mode_t);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "kcache compile hung on a {kind} store at {}",
                root.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("WARN"))
        .map(str::to_string)
        .collect()
}

fn outcome(out: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["kernels"][0]["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// One way to spoil a store before a compile: what it does to `root`.
type Spoil = fn(&Path, &str);

fn spoils() -> Vec<(&'static str, Spoil)> {
    fn entry_path(root: &Path, kind: &str) -> PathBuf {
        let name = if kind == "sqlite" {
            "store.sqlite3"
        } else {
            "state"
        };
        fs::create_dir_all(root.join("v1")).unwrap();
        root.join("v1").join(name)
    }
    vec![
        ("a FIFO at the database or state path", |r, k| {
            mkfifo(&entry_path(r, k))
        }),
        ("a directory at the database or state path", |r, k| {
            fs::create_dir(entry_path(r, k)).unwrap()
        }),
        ("a socket at the database or state path", |r, k| {
            std::mem::forget(std::os::unix::net::UnixListener::bind(entry_path(r, k)).unwrap())
        }),
        ("garbage at the database or state path", |r, k| {
            fs::write(entry_path(r, k), vec![0x5a; 5000]).unwrap()
        }),
        ("a file where the store directory should be", |r, _| {
            fs::write(r, b"not a directory").unwrap()
        }),
        ("a file where v1/ should be", |r, _| {
            fs::create_dir_all(r).unwrap();
            fs::write(r.join("v1"), b"x").unwrap();
        }),
        ("a directory others can write", |r, _| {
            fs::create_dir_all(r).unwrap();
            fs::set_permissions(r, fs::Permissions::from_mode(0o777)).unwrap();
        }),
    ]
}

#[test]
fn a_bad_store_is_one_warning_and_the_compile_exits_0() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let file = kernel(t.path());
    let mut roots: Vec<(String, PathBuf, &str)> = Vec::new();
    for kind in KINDS {
        for (i, (what, spoil)) in spoils().into_iter().enumerate() {
            let root = t.path().join(format!("{kind}-{i}"));
            if what != "a file where the store directory should be" {
                fs::create_dir_all(&root).unwrap();
                fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
            }
            spoil(&root, kind);
            roots.push((what.to_string(), root, kind));
        }
        roots.push((
            "a path too long".into(),
            t.path().join("d".repeat(5000)),
            kind,
        ));
        roots.push((
            "an uncreatable path".into(),
            PathBuf::from("/proc/kcache-uncreatable/store"),
            kind,
        ));
    }
    for (what, root, kind) in roots {
        let out = compile(&root, kind, &file, &[], None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind} store, {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(outcome(&out), "compiled", "{kind} store, {what}");
        let w = warnings(&out);
        // Garbage in the file store's state file is no damage: it is rebuilt.
        let expected = usize::from(!(kind == "file" && what.starts_with("garbage")));
        assert_eq!(w.len(), expected, "{kind} store, {what}: {w:#?}");
    }
}

/// `kcache cache` on a store, its output.
fn cache(root: &Path, kind: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(["cache", "--store", kind, "--dir"])
        .arg(root)
        .args(args)
        .env_remove("KCACHE_STORE")
        .output()
        .unwrap()
}

#[test]
fn cache_verify_on_a_garbage_sqlite_database_says_it_is_damaged_and_what_it_did() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("s");
    fs::create_dir_all(root.join("v1")).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(root.join("v1/store.sqlite3"), vec![0x5a; 5000]).unwrap();
    let out = cache(&root, "sqlite", &["verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("damaged database") && text.contains("recreated empty"),
        "{text}"
    );
}

/// A C file whose shared object, once loaded, writes `$KCACHE_TEST_MARK`.
const EVIL: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
    const char* p = getenv("KCACHE_TEST_MARK");
    if (p) { FILE* f = fopen(p, "w"); if (f) { fputs("ran", f); fclose(f); } }
}
void a(float* n1_x, int n) { for (int i1 = 0; i1 < n; i1++) n1_x[i1] *= 3.0f; }
"#;

/// The names `kcache cache ls` gives the entries of the store at `root`
/// whose names start with `prefix`.
fn names(root: &Path, kind: &str, prefix: &str) -> Vec<String> {
    let out = cache(root, kind, &["ls", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// The name `kcache cache ls` gives the one kernel record in the store at
/// `root` (which carries its program, or names it).
fn kernel_name(root: &Path, kind: &str) -> String {
    let names = names(root, kind, "kernel/");
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

fn open_store(root: &Path, kind: &str) -> Box<dyn Store> {
    match kind {
        #[cfg(feature = "sqlite")]
        "sqlite" => Box::new(kcache::store::SqliteStore::open(root).unwrap()),
        _ => Box::new(FileStore::open(root).unwrap()),
    }
}

#[test]
fn a_program_forged_under_a_valid_id_is_not_loaded() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        if kind == "sqlite" && !cfg!(feature = "sqlite") {
            continue;
        }
        let t = tempfile::tempdir().unwrap();
        let (good, evil_root) = (t.path().join("good"), t.path().join("evil"));
        let file = kernel(t.path());
        let evil = t.path().join("evil/a.c");
        fs::create_dir_all(evil.parent().unwrap()).unwrap();
        fs::write(&evil, EVIL).unwrap();
        assert_eq!(
            compile(&good, kind, &file, &[], None).status.code(),
            Some(0)
        );
        assert_eq!(
            compile(&evil_root, kind, &evil, &[], None).status.code(),
            Some(0)
        );
        let exported = t.path().join("evil.so");
        let name = kernel_name(&evil_root, kind);
        let out = cache(
            &evil_root,
            kind,
            &["export", &name, exported.to_str().unwrap()],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The evil bytes under the good program's id, through the store's own
        // put: its framing and checksum are valid. In the good kernel's
        // record where it carries its program, else in the program's entry.
        let evil_bytes = fs::read(&exported).unwrap();
        let store = open_store(&good, kind);
        let record_key = entry_key(&kernel_name(&good, kind)).unwrap();
        let key = Digest(record_key[b"kcache/kernel/".len()..].try_into().unwrap());
        let record = stored::read_record(&key, store.get(&record_key).unwrap().unwrap()).unwrap();
        if record.inline().is_some() {
            let forged =
                stored::encode_inline_record(&key, &record.program, &record.symbol, &evil_bytes);
            store.put(&record_key, &forged).unwrap();
        } else {
            let programs = names(&good, kind, "program/");
            assert_eq!(programs.len(), 1, "{programs:?}");
            let target = entry_key(&programs[0]).unwrap();
            store.put(&target, &evil_bytes).unwrap();
        }
        drop(store);
        let marker = t.path().join("marker");
        let out = compile(&good, kind, &file, &[("KCACHE_TEST_MARK", &marker)], None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !marker.exists(),
            "{kind}: the forged program's constructor ran"
        );
        assert_eq!(outcome(&out), "compiled", "{kind}");
        assert_eq!(warnings(&out).len(), 1, "{kind}: {:?}", warnings(&out));
        // Removed, and replaced by the fresh compile: the next run is a hit.
        let again = compile(&good, kind, &file, &[("KCACHE_TEST_MARK", &marker)], None);
        assert_eq!(outcome(&again), "stored", "{kind}");
        assert!(warnings(&again).is_empty(), "{kind}");
        assert!(!marker.exists());
    }
}

#[test]
fn under_umask_000_everything_the_store_creates_is_private() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("store");
        let file = kernel(t.path());
        let out = compile(&root, kind, &file, &[], Some(0));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A second run reads (and stamps) what the first wrote.
        compile(&root, kind, &file, &[], Some(0));
        let mut seen = 0;
        let mut stack = vec![root.clone()];
        while let Some(p) = stack.pop() {
            let m = fs::symlink_metadata(&p).unwrap();
            let mode = m.mode() & 0o7777;
            if m.is_dir() {
                assert_eq!(mode, 0o700, "{kind}: {}", p.display());
                stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                assert_eq!(mode, 0o600, "{kind}: {}", p.display());
            }
            seen += 1;
        }
        assert!(seen >= 3, "{kind}: only {seen} paths");
    }
}

#[test]
fn tune_with_a_fifo_for_its_database_is_one_warning_and_exits_0() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("s");
    fs::create_dir_all(root.join("v1")).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    mkfifo(&root.join("v1/store.sqlite3"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args([
            "tune",
            "--backend",
            "cc",
            "--candidates",
            "2",
            "--reps",
            "1",
        ])
        .args(["--size", "8x8x8", "--store", "sqlite", "--dir"])
        .arg(&root)
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kcache tune hung on a FIFO database");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("WARN")).count(),
        1,
        "{err}"
    );
}

/// Review 2026-12-02, store F8: a refused store directory still got the cc
/// backend's probe records (and a FIFO planted there hung the compile).
#[test]
fn a_refused_store_directory_gets_no_compilers_folder() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let file = kernel(t.path());
    for kind in KINDS {
        // The root open to others (with a `compilers/` someone made), and a
        // root below a directory open to others.
        let open = t.path().join(format!("open-{kind}"));
        fs::create_dir_all(open.join("compilers")).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        for root in [open.clone(), open.join("kc")] {
            let out = compile(&root, kind, &file, &[], None);
            assert_eq!(out.status.code(), Some(0), "{kind}");
            assert_eq!(outcome(&out), "compiled", "{kind}");
        }
        assert_eq!(
            fs::read_dir(open.join("compilers")).unwrap().count(),
            0,
            "{kind}: nothing kept in the refused root"
        );
        assert!(!open.join("kc/compilers").exists(), "{kind}");
        // An accepted directory keeps them, so the above says something.
        let mine = t.path().join(format!("mine-{kind}"));
        let out = compile(&mine, kind, &file, &[], None);
        assert_eq!(out.status.code(), Some(0), "{kind}");
        assert!(
            fs::read_dir(mine.join("compilers")).unwrap().count() > 0,
            "{kind}"
        );
    }
}

/// Review 2026-12-02, store F9.13: with no `HOME` (a systemd unit, `env -i`)
/// and nothing configured, the compile failed instead of running without
/// the store.
#[test]
fn no_cache_directory_to_be_found_is_one_warning_and_a_compile() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let file = kernel(t.path());
    let out = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(["compile", "--json", "--backend", "cc"])
        .arg(&file)
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("KCACHE_DIR")
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_LOG")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(outcome(&out), "compiled");
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("no cache directory"), "{w:?}");
}
