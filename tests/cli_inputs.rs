//! Bad input files and sizes through the CLI: a device, a FIFO, a directory,
//! an oversized (sparse) file, text that is not UTF-8, and sizes whose
//! products overflow. Each is refused with one line on stderr and exit 1
//! (a bad file) or 2 (a bad argument), never read whole, never hanging:
//! every run has a time limit and is killed past it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run said, or a panic when it ran past `LIMIT`.
struct Run {
    code: Option<i32>,
    stderr: String,
}

const LIMIT: Duration = Duration::from_secs(60);

fn kcache(dir: &Path, args: &[&str]) -> Run {
    kcache_with_stdin(dir, args, Stdio::null())
}

fn kcache_with_stdin(dir: &Path, args: &[&str], stdin: Stdio) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(args)
        .env("KCACHE_DIR", dir.join("store"))
        .env("TMPDIR", dir)
        .env_remove("KCACHE_STORE")
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("kcache {args:?} ran past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    Run {
        code: status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts a refusal: `code`, one line on stderr naming `expect`.
fn refused(run: &Run, code: i32, expect: &str) {
    assert_eq!(run.code, Some(code), "{}", run.stderr);
    assert!(run.stderr.contains(expect), "{}", run.stderr);
    if code == 1 {
        assert_eq!(run.stderr.trim_end().lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn compile_dev_zero_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let run = kcache(dir.path(), &["compile", "--backend", "cc", "/dev/zero"]);
    refused(&run, 1, "not a regular file (a character device)");
}

#[test]
fn compile_a_fifo_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("k.c");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let run = kcache(dir.path(), &["compile", fifo.to_str().unwrap()]);
    refused(&run, 1, "not a regular file (a FIFO)");
    let run = kcache(
        dir.path(),
        &["compile", "--manifest", fifo.to_str().unwrap()],
    );
    refused(&run, 1, "not a regular file (a FIFO)");
    let run = kcache(dir.path(), &["canon", fifo.to_str().unwrap()]);
    refused(&run, 1, "not a regular file (a FIFO)");
}

/// Review 2026-12-02, GPU F17: a header the scan meets that is a FIFO (or a
/// link to one) was taken for absent and handed to the compiler, which
/// opened it and waited for ever.
#[test]
fn a_header_or_forced_include_that_is_a_fifo_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ff.h");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink(&fifo, dir.path().join("link.h")).unwrap();
    for (name, text) in [
        ("q.c", "#include \"ff.h\"\nint k(void) { return 1; }\n"),
        ("l.c", "#include \"link.h\"\nint k(void) { return 1; }\n"),
        (
            "h.c",
            "#if __has_include(\"ff.h\")\n#endif\nint k(void) { return 1; }\n",
        ),
    ] {
        let k = dir.path().join(name);
        std::fs::write(&k, text).unwrap();
        let run = kcache(
            dir.path(),
            &["compile", "--backend", "cc", k.to_str().unwrap()],
        );
        refused(&run, 1, "is no regular file");
    }
    let k = dir.path().join("plain.c");
    std::fs::write(&k, "int k(void) { return 1; }\n").unwrap();
    let inc = format!("--option=-include{}", fifo.display());
    let run = kcache(
        dir.path(),
        &["compile", "--backend", "cc", &inc, k.to_str().unwrap()],
    );
    refused(&run, 1, "is no regular file");
}

#[test]
fn compile_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("k.c");
    std::fs::create_dir(&sub).unwrap();
    let run = kcache(dir.path(), &["compile", sub.to_str().unwrap()]);
    refused(&run, 1, "not a regular file (a directory)");
}

#[test]
fn compile_an_oversized_sparse_file_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.c");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((64 << 20) + 1).unwrap();
    let run = kcache(dir.path(), &["compile", big.to_str().unwrap()]);
    refused(&run, 1, "over the limit of 64 MiB");
    let run = kcache(dir.path(), &["canon", big.to_str().unwrap()]);
    refused(&run, 1, "over the limit of 64 MiB");
}

#[test]
fn compile_a_kernel_that_is_not_utf8_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("k.c");
    std::fs::write(&bad, b"void k(void) { \xff }").unwrap();
    let run = kcache(dir.path(), &["compile", bad.to_str().unwrap()]);
    refused(&run, 1, "not UTF-8");
}

#[test]
fn tune_size_whose_products_overflow_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for size in [
        "100000000x100000000x100000000",
        "18446744073709551615x2x1",
        "65536x65536x1",
    ] {
        let run = kcache(dir.path(), &["tune", "--compile-only", "--size", size]);
        refused(&run, 2, "too large");
    }
}

#[test]
fn tune_with_too_many_candidates_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = kcache(
        dir.path(),
        &["tune", "--compile-only", "--candidates", "1000000000000"],
    );
    refused(&run, 2, "at most");
}

#[test]
fn canon_of_endless_standard_input_stops_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let run = kcache_with_stdin(dir.path(), &["canon"], Stdio::from(zero));
    refused(&run, 1, "cannot read standard input");
    assert!(
        run.stderr.contains("over the limit of 64 MiB"),
        "{}",
        run.stderr
    );
}
