//! A whole-process `kcache compile` answered from a warm store (kept
//! compiler probes, a stored program) still rests on everything its key
//! does: a compiler or a header swapped under the store is compiled afresh.

use std::path::{Path, PathBuf};
use std::process::Command;

mod cli_support;
use cli_support::{have_cc, json};

/// The compiler the wrapper runs: `$CC` as a path, else `cc` on `PATH`.
fn real_cc() -> PathBuf {
    let name = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if name.contains('/') {
        return PathBuf::from(name);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .expect("cc on PATH")
}

/// A compiler wrapper passing `extra` before the compile's own arguments.
fn write_wrapper(path: &Path, extra: &str) {
    use std::os::unix::fs::PermissionsExt;
    let text = format!("#!/bin/sh\nexec '{}' {extra} \"$@\"\n", real_cc().display());
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The outcome `command` (the CLI) gives its first kernel as
/// `compile --json --dir STORE ARGS`, the store's settings its own.
fn outcome(command: &mut Command, store: &Path, args: &[std::ffi::OsString]) -> serde_json::Value {
    let out = command
        .args(["compile", "--json", "--dir"])
        .arg(store)
        .args(args)
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_MAX_BYTES")
        .env_remove("KCACHE_LOG")
        .output()
        .unwrap();
    json(&out)["kernels"][0]["outcome"].clone()
}

/// A temporary directory with a store path in it, and `src/` and `bin/`
/// made there.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let (store, src, bin) = (
        t.path().join("store"),
        t.path().join("src"),
        t.path().join("bin"),
    );
    for d in [&src, &bin] {
        std::fs::create_dir(d).unwrap();
    }
    (t, store, src, bin)
}

#[test]
fn a_compiler_or_header_swapped_under_a_warm_store_is_compiled_afresh() {
    if !have_cc() {
        return;
    }
    let (_t, store, src, bin) = dirs();
    std::fs::write(src.join("h.h"), "#define SCALE 2.0f\n").unwrap();
    std::fs::write(
        src.join("k.c"),
        "#include \"h.h\"\nvoid k(float* y, const float* x, int n) { for (int i = 0; i < n; i++) y[i] += SCALE * x[i]; }\n",
    )
    .unwrap();
    let cc = bin.join("cc");
    // The two wrappers have the same size: only their contents tell them apart.
    write_wrapper(&cc, "-DA=1");
    // Probe answers are kept only for files older than the stat window (2 s)
    // in which a change cannot be told apart: the warm hit below uses them.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let compile = || {
        outcome(
            Command::new(env!("CARGO_BIN_EXE_kcache")).env("CC", &cc),
            &store,
            &[src.join("k.c").into()],
        )
    };
    assert_eq!(compile(), "compiled");
    assert_eq!(compile(), "stored", "a warm hit");
    assert!(
        std::fs::read_dir(store.join("compilers")).unwrap().count() > 0,
        "the compiler's probes are kept"
    );

    write_wrapper(&cc, "-DB=1");
    assert_eq!(compile(), "compiled", "a swapped compiler is not a hit");
    assert_eq!(compile(), "stored");

    std::fs::write(src.join("h.h"), "#define SCALE 3.0f\n").unwrap();
    assert_eq!(compile(), "compiled", "a swapped header is not a hit");
    assert_eq!(compile(), "stored");
}

/// `build.rs` links the CLI with `-no-pie` on glibc Linux (its start-up then
/// applies no relative relocations) unless the build set `KCACHE_PIE`: the
/// ELF type says which one cargo built.
#[test]
fn the_cli_is_position_dependent_unless_the_build_asked_for_a_pie() {
    if !(cfg!(target_os = "linux") && cfg!(target_env = "gnu")) {
        return;
    }
    let elf = std::fs::read(env!("CARGO_BIN_EXE_kcache")).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    // e_type, little endian on every glibc Linux target kcache builds for.
    let e_type = u16::from_le_bytes([elf[16], elf[17]]);
    let wants_pie = option_env!("KCACHE_PIE").is_some_and(|v| !v.is_empty() && v != "0");
    let (exec, dyn_) = (2, 3);
    assert_eq!(e_type, if wants_pie { dyn_ } else { exec });
}

/// The CLI defines the few C math functions it calls (`src/main.rs`), so
/// the loader maps no `libm.so.6` for it: the loader itself lists what the
/// binary needs (`LD_TRACE_LOADED_OBJECTS`, what `ldd` asks). A dependency
/// that starts calling another libm function brings libm back and fails
/// this: give that function a definition beside the others.
#[test]
fn the_cli_loads_no_libm() {
    if !(cfg!(target_os = "linux") && cfg!(target_env = "gnu")) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("libc.so"), "the loader listed: {listed}");
    assert!(!listed.contains("libm.so"), "the loader listed: {listed}");
}

/// A kernel the CLI compiles and loads binds its math functions to the libm
/// it was linked against, never to the `exp`, `log` and `pow` the binary
/// defines for itself (`src/main.rs`): exported, they came first in the
/// loader's search, so the kernel ran other code than the user's libm. The
/// loader's own account of each binding (`LD_DEBUG=bindings`) says where
/// every symbol of the loaded program went.
#[test]
fn a_kernel_loaded_by_the_cli_binds_nothing_to_the_cli() {
    if !(cfg!(target_os = "linux") && cfg!(target_env = "gnu") && have_cc()) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let k = t.path().join("k.c");
    std::fs::write(
        &k,
        "#include <math.h>\ndouble k(double x) { return exp(x) + log(x) + pow(x, 1.5); }\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(["compile", "--json", "--dir"])
        .arg(t.path().join("store"))
        .arg(&k)
        .env("LD_DEBUG", "bindings")
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let cli = std::fs::canonicalize(env!("CARGO_BIN_EXE_kcache")).unwrap();
    let program: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("binding file") && l.contains(".so") && !l.contains("binding file /lib")
        })
        .filter(|l| l.contains("`exp'") || l.contains("`log'") || l.contains("`pow'"))
        .collect();
    assert!(
        !program.is_empty(),
        "the loader reported no binding of the kernel's math functions: the kernel was not loaded? {log}"
    );
    for line in program {
        assert!(
            !line.contains(&format!("to {} ", cli.display())) && !line.contains("kcache [0]"),
            "a kernel's symbol bound to the CLI: {line}"
        );
        assert!(line.contains("libm.so"), "not bound to libm: {line}");
    }
}

/// The headers a kernel includes are kept across processes as one closure
/// (`includes/kept.rs`), checked by stat: a warm hit reads none of them, yet
/// a header that appears earlier in the search path, one edited in place and
/// a damaged record each give the answer a fresh scan gives.
#[test]
fn a_kept_header_closure_rests_on_every_header_and_missed_directory() {
    if !have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (store, src, early, late) = (
        t.path().join("store"),
        t.path().join("src"),
        t.path().join("i1"),
        t.path().join("i2"),
    );
    for d in [&src, &early, &late] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(
        late.join("h.h"),
        "#include \"deep.h\"\n#define SCALE DEEP\n",
    )
    .unwrap();
    std::fs::write(late.join("deep.h"), "#define DEEP 2.0f\n").unwrap();
    std::fs::write(
        src.join("k.c"),
        "#include <math.h>\n#include <h.h>\nvoid k(float* y, int n) { for (int i = 0; i < n; i++) y[i] = sqrtf(y[i]) * SCALE; }\n",
    )
    .unwrap();
    // Closures are kept only when every file is older than the stat window.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let args: Vec<std::ffi::OsString> = vec![
        format!("--option=-I{}", early.display()).into(),
        format!("--option=-I{}", late.display()).into(),
        src.join("k.c").into(),
    ];
    let compile = || {
        outcome(
            &mut Command::new(env!("CARGO_BIN_EXE_kcache")),
            &store,
            &args,
        )
    };
    let closures = || {
        std::fs::read_dir(store.join("compilers"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("closure-"))
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert_eq!(compile(), "compiled");
    assert_eq!(compile(), "stored", "a warm hit");
    assert!(!closures().is_empty(), "the header closure is kept");

    // A header appearing earlier in the search path is read instead.
    std::fs::write(early.join("h.h"), "#define SCALE 3.0f\n").unwrap();
    assert_eq!(compile(), "compiled", "a shadowing header is not a hit");
    std::fs::remove_file(early.join("h.h")).unwrap();
    assert_eq!(compile(), "stored", "the first answer again");

    // A header edited in place, to the same size.
    std::fs::write(late.join("deep.h"), "#define DEEP 4.0f\n").unwrap();
    assert_eq!(compile(), "compiled", "an edited header is not a hit");
    assert_eq!(compile(), "stored");

    // Damaged records are no records.
    for p in closures() {
        let mut b = std::fs::read(&p).unwrap();
        let mid = b.len() / 2;
        b[mid] ^= 1;
        std::fs::write(&p, b).unwrap();
    }
    assert_eq!(compile(), "stored", "a damaged record only means a scan");
}

/// Review 2026-12-02: a header edited while the compiler runs (here by the
/// compiler's own wrapper, just before it compiles) was stored under the key
/// of the contents kcache had digested, and served once the header was
/// back. Now a compile whose digested files changed while it ran is not kept.
#[test]
fn a_header_edited_while_the_compiler_runs_is_not_stored_under_its_old_key() {
    if !have_cc() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let (_t, store, src, bin) = dirs();
    let header = src.join("h.h");
    let flag = src.join("edit-now");
    std::fs::write(&header, "#define VAL 1.0f\n").unwrap();
    std::fs::write(
        src.join("k.c"),
        "#include \"h.h\"\nvoid k(float* y, int n) { for (int i = 0; i < n; i++) y[i] = VAL; }\n",
    )
    .unwrap();
    // Edits the header when asked, and only for the compile itself (not for
    // the probes, which run the same flags on another file).
    let cc = bin.join("cc");
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in *kernels.so*) if [ -f '{flag}' ]; then rm -f '{flag}'; printf '#define VAL 2.0f\\n' > '{header}'; fi;; esac\nexec '{real}' \"$@\"\n",
        flag = flag.display(),
        header = header.display(),
        real = real_cc().display()
    );
    std::fs::write(&cc, script).unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let compile = || {
        outcome(
            Command::new(env!("CARGO_BIN_EXE_kcache")).env("CC", &cc),
            &store,
            &[src.join("k.c").into()],
        )
    };
    std::fs::write(&flag, "").unwrap();
    assert_eq!(
        compile(),
        "uncacheable",
        "the header changed while it compiled: not kept"
    );
    assert!(!flag.exists(), "the wrapper edited the header");
    std::fs::write(&header, "#define VAL 1.0f\n").unwrap();
    // Old enough to be trusted: a kept program of the edited header would
    // be served now.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(
        compile(),
        "compiled",
        "no program of the edited header is served"
    );
}

/// Review 2026-12-02, C F4: the driver runs `as` and `ld` through `PATH`;
/// another assembler earlier in `PATH` (a conda environment's binutils)
/// built its program under the key of the system's. An `as` wrapper put
/// first in `PATH`, then edited in place, is compiled afresh each time.
#[test]
fn an_assembler_found_earlier_in_path_is_not_a_hit() {
    use std::os::unix::fs::PermissionsExt;
    if !have_cc()
        || Command::new("cc")
            .arg("-print-prog-name=as")
            .output()
            .is_err()
    {
        return;
    }
    let real_as = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("as"))
        .find(|p| p.is_file());
    let Some(real_as) = real_as else { return };
    let (_t, store, src, bin) = dirs();
    std::fs::write(src.join("k.c"), "int k(int n) { return n + 1; }\n").unwrap();
    let wrapper = |extra: &str| {
        let p = bin.join("as");
        let text = format!(
            "#!/bin/sh\n# {extra}\nexec '{}' \"$@\"\n",
            real_as.display()
        );
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let compile = |path: &std::ffi::OsStr| {
        outcome(
            Command::new(env!("CARGO_BIN_EXE_kcache")).env("PATH", path),
            &store,
            &[src.join("k.c").into()],
        )
    };
    let plain = std::env::var_os("PATH").unwrap();
    assert_eq!(compile(&plain), "compiled");
    assert_eq!(compile(&plain), "stored");
    wrapper("one");
    assert_eq!(
        compile(&path),
        "compiled",
        "another assembler first in PATH"
    );
    assert_eq!(compile(&path), "stored");
    wrapper("two");
    assert_eq!(compile(&path), "compiled", "that assembler edited in place");
}
