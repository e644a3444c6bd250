//! A long search under a tiny code-cache cap, no store: the process's
//! resident memory after 2,000 compiled programs is within 2 MB of what it
//! was after 200, and the work directory holds only what is still loaded.
//!
//! Run in a child process (this test binary again, on [`child_process`]),
//! so `/proc/self/statm` measures the search and nothing else.
//!
//! What a compile costs here: each of the 2,000 programs goes through the
//! whole cc backend (translation unit written, compiler process run, output
//! read, installed as a file of its own, `dlopen`ed, handle-cached, published
//! to the code cache and evicted from it), but the compiler is a stand-in: a
//! shell script that answers the identity and link-line (`-###`) probes with
//! the real `cc` and "compiles" by copying an object `cc` built once (and
//! writing the empty `-MF` report such a compile would: it reads no
//! header). That keeps 2,000 compiles
//! at a few seconds (a real `cc` takes 20-40 ms each here) while exercising
//! every per-program cost kcache itself has (the growth measured in the
//! issue was kcache's: handles, loaded objects and their bytes, never the
//! compiler's).

mod cli_support;
use cli_support::have_cc;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use kcache::backend::cc::CcBackend;
use kcache::backend::BackendError;
use kcache::cache::code::Capacity;
use kcache::cache::guarded::SWEEP_MIN;
use kcache::cache::hooks::Hooks;
use kcache::resolve::{Kernel, Outcome, Resolver};

const CHILD_ENV: &str = "KCACHE_LONG_SEARCH_CHILD";

fn required() -> bool {
    std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"))
}

/// Resident bytes now.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

/// The stand-in compiler in `dir` (see the module docs).
fn stand_in_compiler(dir: &Path) -> std::path::PathBuf {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let template = dir.join("template.so");
    let src = dir.join("template.c");
    std::fs::write(&src, "void k(float* x) { x[0] = 1.0f; }\n").unwrap();
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O0"])
        .arg(&src)
        .arg("-o")
        .arg(&template)
        .status()
        .unwrap();
    assert!(built.success());
    let script = dir.join("copy-cc");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nout=\nprev=\nfor a in \"$@\"; do\n  \
             [ \"$a\" = '-###' ] && exec {cc} \"$@\"\n  \
             [ \"$prev\" = -o ] && out=$a\n  [ \"$prev\" = -MF ] && mf=$a\n  prev=$a\ndone\n\
             [ -n \"$mf\" ] && echo 'x:' > \"$mf\"\n\
             if [ -n \"$out\" ]; then exec cp '{}' \"$out\"; fi\nexec {cc} \"$@\"\n",
            template.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn search(dir: &Path) {
    let hooks = Hooks::new();
    let backend = match CcBackend::builder()
        .hooks(&hooks)
        .compiler_path(stand_in_compiler(dir))
        .work_dir_in(dir)
        .build()
    {
        Ok(b) => Arc::new(b),
        Err(e @ BackendError::Unavailable { .. }) if !required() => {
            eprintln!("skipping: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    // Room for about four programs' bytes: a cap far below the search.
    let resolver = Resolver::with(backend.clone(), Capacity::Fixed(64 << 10), &hooks);
    let compile = |i: u32| {
        let kernel = Kernel::new("k", format!("void k(float* x) {{ x[0] = {i}.0f; }}\n"));
        let r = resolver.resolve(&[kernel]).unwrap();
        assert_eq!(r[0].outcome, Outcome::Compiled);
    };
    for i in 0..200 {
        compile(i);
    }
    let after_200 = rss();
    for i in 200..2000 {
        compile(i);
    }
    let after_2000 = rss();
    let handles = backend.kernel_cache().cache().len();
    let files = std::fs::read_dir(backend.work_dir().unwrap())
        .unwrap()
        .count();
    println!(
        "rss after 200 compiles: {after_200} bytes; after 2000: {after_2000} bytes; \
         {handles} handles cached, {files} files in the work directory"
    );
    assert!(
        after_2000 <= after_200 + (2 << 20),
        "resident memory grew from {after_200} to {after_2000} bytes"
    );
    assert!(handles <= 2 * SWEEP_MIN + 1, "{handles} handles cached");
    assert!(
        files <= 2 * SWEEP_MIN + 1,
        "{files} files left in the work directory"
    );
    println!("CHILD OK");
}

/// Not a test by itself: the child side, doing nothing unless
/// `KCACHE_LONG_SEARCH_CHILD` names the directory to work in.
#[test]
fn child_process() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        search(Path::new(&dir));
    }
}

#[test]
fn long_search_under_a_tiny_code_cache_cap_keeps_memory_flat() {
    if !have_cc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("CHILD OK"),
        "{}\n{stdout}\n{stderr}",
        out.status
    );
}
