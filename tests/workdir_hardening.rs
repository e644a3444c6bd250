//! The compile work directory against a hostile neighbour and an unlucky
//! user: explicit modes under `umask 000` (checked over every path kcache
//! created), a plant by another user refused, a planted object under the old
//! predictable name never loaded, and leftovers of killed processes swept.
//!
//! The umask is process-wide, so the `umask 000` run happens in a child
//! process: this test binary run again on [`child_process_helpers`], which
//! does nothing unless `KCACHE_WORKDIR_CHILD` names a mode.
//!
//! Every test skips, saying why, when no C compiler runs here.

use std::ffi::CString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kcache::backend::cc::{CcBackend, CcBuilder};
use kcache::backend::{Backend, BackendError, CompileJob, KernelSource};
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::resolve::{Kernel, Outcome, Resolver};
use kcache::store::{FileStore, Store};

const SAXPY: &str = "void saxpy(float* x, float* y, int n, int a) {\n\
    for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n}\n";

const CHILD_ENV: &str = "KCACHE_WORKDIR_CHILD";
const BASE_ENV: &str = "KCACHE_WORKDIR_BASE";

fn required() -> bool {
    std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"))
}

fn backend_with(hooks: &Hooks, f: impl FnOnce(CcBuilder) -> CcBuilder) -> Option<CcBackend> {
    match f(CcBackend::builder().hooks(hooks)).build() {
        Ok(b) => Some(b),
        Err(e @ BackendError::Unavailable { .. }) if !required() => {
            eprintln!("skipping: no C compiler: {e}");
            None
        }
        Err(e) => panic!("building the backend failed: {e}"),
    }
}

macro_rules! need {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

fn job<'a>(kernels: &'a [KernelSource<'a>]) -> CompileJob<'a> {
    CompileJob {
        kernels,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh: false,
    }
}

fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

/// Sets `path`'s access and modification times `secs` seconds back, on the
/// link itself for a symlink.
fn age(path: &Path, secs: i64) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t = libc::timespec {
        tv_sec: now - secs,
        tv_nsec: 0,
    };
    let times = [t, t];
    // SAFETY: a NUL-terminated path and two timespecs.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(r, 0, "utimensat {}", path.display());
}

/// A directory like `/tmp`: everyone may create in it (sticky).
fn shared_base() -> tempfile::TempDir {
    let base = tempfile::tempdir().unwrap();
    fs::set_permissions(base.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    base
}

/// Every path below `root` (not `root`), symlinks not followed.
fn walk(root: &Path) -> Vec<(PathBuf, fs::Metadata)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path.clone());
            }
            out.push((path, meta));
        }
    }
    out
}

/// This test binary again, on [`child_process_helpers`] in `mode`.
fn child(mode: &str, base: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process_helpers",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, mode)
    .env(BASE_ENV, base)
    .env("TMPDIR", base);
    cmd
}

/// Waits for `child`, killing it (and failing) past `limit`.
fn wait_for(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("the child process ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the child runs under `umask 000`: a compile and a load through a
/// resolver with a file store (and an SQLite one), then a check of every path
/// under the base while the backend and its programs are alive, and, as
/// root, a plant attempted by another user.
fn umask_000_child(base: &Path) {
    // SAFETY: umask has no preconditions; this process runs only this.
    unsafe { libc::umask(0) };
    let hooks = Hooks::new();
    let backend = Arc::new(need!(backend_with(&hooks, |b| b.work_dir_in(base))));
    let work = backend.work_dir().unwrap().to_path_buf();
    let mut stores: Vec<Arc<dyn Store>> =
        vec![Arc::new(FileStore::open(base.join("store-file")).unwrap())];
    #[cfg(feature = "sqlite")]
    stores.push(Arc::new(
        kcache::store::sqlite::SqliteStore::open(base.join("store-sqlite")).unwrap(),
    ));
    let batch = [Kernel::new("saxpy", SAXPY)];
    let mut held = Vec::new();
    for store in stores {
        let first = Resolver::with(backend.clone(), Capacity::Fixed(0), &hooks)
            .with_store(Some(store.clone()));
        let compiled = first.resolve(&batch).unwrap();
        assert_eq!(compiled[0].outcome, Outcome::Compiled);
        let second =
            Resolver::with(backend.clone(), Capacity::Fixed(0), &hooks).with_store(Some(store));
        held.push(compiled);
        held.push(second.resolve(&batch).unwrap());
    }
    // A compile that fails leaves its files' modes to check too.
    let bad = backend.compile(&job(&[KernelSource {
        symbol: "broken",
        text: "void broken(void) { nope; }",
    }]));
    assert!(bad.is_err());

    let created = walk(base);
    let objects = created
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "so"))
        .count();
    assert!(objects >= 1, "no loaded object under {}", base.display());
    let open: Vec<String> = created
        .iter()
        .filter(|(_, m)| m.mode() & 0o022 != 0)
        .map(|(p, m)| format!("{} {:o}", p.display(), m.mode() & 0o7777))
        .collect();
    assert!(
        open.is_empty(),
        "writable by others under umask 000: {open:#?}"
    );
    for dir in [&work, work.parent().unwrap()] {
        let mode = fs::symlink_metadata(dir).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }

    if euid() == 0 {
        // Another user, as the neighbour was: the base lets anyone in
        // (like /tmp), the work directory must not.
        for dir in [&work, work.parent().unwrap()] {
            let planted = dir.join("planted.so");
            let status = Command::new("sh")
                .arg("-c")
                .arg("echo planted > \"$1\"")
                .arg("sh")
                .arg(&planted)
                .uid(65534)
                .gid(65534)
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(
                !status.success(),
                "another user planted {}",
                planted.display()
            );
            assert!(!planted.exists(), "{}", planted.display());
        }
    } else {
        eprintln!("not root: the plant by another user is checked through the modes only");
    }
    drop(held);
    println!("CHILD OK");
}

/// What the child runs to be killed: a backend with a loaded program, its
/// work directory printed, then blocked on stdin until killed.
fn held_child(base: &Path) {
    let hooks = Hooks::new();
    let backend = need!(backend_with(&hooks, |b| b.work_dir_in(base)));
    let program = backend
        .compile(&job(&[KernelSource {
            symbol: "saxpy",
            text: SAXPY,
        }]))
        .unwrap();
    println!("WORKDIR {}", backend.work_dir().unwrap().display());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok();
    drop(program);
}

/// Not a test by itself: the child side of the tests above, doing nothing
/// unless `KCACHE_WORKDIR_CHILD` is set.
#[test]
fn child_process_helpers() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let base = PathBuf::from(std::env::var_os(BASE_ENV).expect("the base directory"));
    match mode.as_str() {
        "umask000" => umask_000_child(&base),
        "held" => held_child(&base),
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn umask_000_every_path_created_is_private_and_a_plant_is_refused() {
    let hooks = Hooks::new();
    drop(need!(backend_with(&hooks, |b| b)));
    let base = shared_base();
    let mut run = child("umask000", base.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for(&mut run, Duration::from_secs(120));
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        status.success() && stdout.contains("CHILD OK"),
        "{status}\n{stdout}\n{stderr}"
    );
}

#[test]
fn a_planted_object_under_the_predictable_name_is_never_loaded() {
    let hooks = Hooks::new();
    let first = need!(backend_with(&hooks, |b| b));
    let binary = first
        .compile(&job(&[KernelSource {
            symbol: "saxpy",
            text: SAXPY,
        }]))
        .unwrap()
        .binary;
    drop(first);

    let fresh = need!(backend_with(&hooks, |b| b));
    let digest = blake3::hash(&binary).to_hex();
    let planted = fresh.work_dir().unwrap().join(format!("b-{digest}.so"));
    fs::write(&planted, b"planted: not the object these bytes are").unwrap();
    let program = fresh.load(&binary, &["saxpy"]).unwrap();
    assert_ne!(program.path(), planted);
    assert_eq!(fs::read(program.path()).unwrap(), binary);
    assert_eq!(
        fs::read(&planted).unwrap(),
        b"planted: not the object these bytes are"
    );
}

#[test]
fn a_loaded_object_file_is_private_and_goes_with_its_program() {
    let hooks = Hooks::new();
    let b = need!(backend_with(&hooks, |b| b));
    let program = b
        .compile(&job(&[KernelSource {
            symbol: "saxpy",
            text: SAXPY,
        }]))
        .unwrap()
        .program;
    let path = program.path().to_path_buf();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
    b.clear_cache().unwrap();
    drop(program);
    assert!(!path.exists(), "{} outlived its program", path.display());
}

/// The root all work directories live in, as a backend built in `base` uses.
fn root_in(base: &Path) -> PathBuf {
    base.join(format!("kcache-{}", euid()))
}

/// A pid no process has: above the kernel's maximum.
fn dead_pid() -> u64 {
    let max: u64 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(4_194_304);
    max + 1
}

#[test]
fn stale_work_dirs_of_dead_processes_are_swept_and_nothing_else() {
    let hooks = Hooks::new();
    let base = tempfile::tempdir().unwrap();
    let running = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
    let root = root_in(base.path());
    assert_eq!(running.work_dir().unwrap().parent(), Some(root.as_path()));
    let dead = dead_pid();
    let two_hours = 2 * 60 * 60;

    let mkdir = |name: &str, secs: i64| {
        let d = root.join(name);
        fs::create_dir_all(d.join("c-x")).unwrap();
        fs::write(d.join("c-x/kernels.c"), "void k(void) {}").unwrap();
        fs::write(d.join("b-0-x.so"), "object").unwrap();
        age(&d.join("c-x"), secs);
        age(&d, secs);
        d
    };
    let stale_cc = mkdir(&format!("kcache-cc-{dead}-aaaa"), two_hours);
    let stale_glslang = mkdir(&format!("kcache-glslang-{dead}-bbbb"), two_hours);
    let fresh_dead = mkdir(&format!("kcache-cc-{dead}-cccc"), 60);
    let stale_alive = mkdir(&format!("kcache-cc-{}-dddd", std::process::id()), two_hours);
    let unrelated = mkdir(&format!("other-cc-{dead}-eeee"), two_hours);
    // A symlink named like a leftover, to a directory of someone's: neither
    // it nor what it points to is touched.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("precious"), "keep").unwrap();
    let link = root.join(format!("kcache-cc-{dead}-ffff"));
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();
    age(&link, two_hours);
    // A leftover with a symlink inside: removed, the target kept.
    std::os::unix::fs::symlink(outside.path(), stale_cc.join("escape")).unwrap();
    age(&stale_cc, two_hours);
    let file = root.join(format!("kcache-cc-{dead}-gggg"));
    fs::write(&file, "a file, not a directory").unwrap();
    age(&file, two_hours);

    let next = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
    // The sweep runs when a backend makes its directory (its first compile
    // or load; here, asked for it).
    next.work_dir().unwrap();
    assert!(!stale_cc.exists(), "stale cc directory kept");
    assert!(!stale_glslang.exists(), "stale glslang directory kept");
    for kept in [&fresh_dead, &stale_alive, &unrelated, &file] {
        assert!(kept.exists(), "{} was swept", kept.display());
    }
    assert!(
        fs::symlink_metadata(&link).is_ok(),
        "the symlink was removed"
    );
    assert_eq!(
        fs::read_to_string(outside.path().join("precious")).unwrap(),
        "keep"
    );
    assert!(
        running.work_dir().unwrap().exists(),
        "a live backend's directory was swept"
    );
    assert!(next.work_dir().unwrap().exists());
}

#[test]
fn a_sigkilled_process_work_dir_is_swept_once_stale() {
    let hooks = Hooks::new();
    drop(need!(backend_with(&hooks, |b| b)));
    let base = tempfile::tempdir().unwrap();
    let mut held = child("held", base.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = held.stdout.take().unwrap();
    // Read on a thread, so a child that never prints fails the test in time.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The harness's "test ... " may start the line.
            if let Some((_, p)) = line.split_once("WORKDIR ") {
                tx.send(PathBuf::from(p)).ok();
                break;
            }
        }
    });
    let work = rx.recv_timeout(Duration::from_secs(120));
    if work.is_err() {
        held.kill().ok();
        held.wait().ok();
    }
    let work = work.expect("the child printed its work directory");
    held.kill().unwrap(); // SIGKILL: no destructor runs
    held.wait().unwrap();
    assert!(work.exists(), "a killed process leaves its directory");
    assert!(fs::read_dir(&work).unwrap().count() > 0);

    // A backend sweeps when it makes its own directory.
    let sweep = || {
        let b = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
        b.work_dir().unwrap();
    };
    // Fresh (within the bound): kept, the process might only be slow.
    sweep();
    assert!(work.exists(), "a fresh leftover was swept");
    age(&work, 2 * 60 * 60);
    sweep();
    assert!(
        !work.exists(),
        "a stale leftover of a killed process was kept"
    );
}

#[test]
fn a_symlinked_temp_root_is_not_followed() {
    let hooks = Hooks::new();
    let base = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root_in(base.path())).unwrap();
    let b = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
    // Made in the base itself, as private as ever; nothing went through the link.
    assert_eq!(b.work_dir().unwrap().parent(), Some(base.path()));
    assert_eq!(
        fs::symlink_metadata(b.work_dir().unwrap()).unwrap().mode() & 0o7777,
        0o700
    );
    assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    b.compile(&job(&[KernelSource {
        symbol: "saxpy",
        text: SAXPY,
    }]))
    .unwrap();
}

#[test]
fn a_temp_root_of_another_user_is_not_used() {
    if euid() != 0 {
        eprintln!("skipping: only root can give a directory to another user");
        return;
    }
    let hooks = Hooks::new();
    let base = shared_base();
    let root = root_in(base.path());
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
    let c = CString::new(root.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let b = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
    assert_eq!(b.work_dir().unwrap().parent(), Some(base.path()));
    assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
}

#[test]
fn a_backend_makes_its_work_dir_only_when_it_compiles_or_loads() {
    let hooks = Hooks::new();
    let base = tempfile::tempdir().unwrap();
    let b = need!(backend_with(&hooks, |b| b.work_dir_in(base.path())));
    assert_eq!(
        fs::read_dir(base.path()).unwrap().count(),
        0,
        "a backend built made a directory"
    );
    let program = b
        .compile(&job(&[KernelSource {
            symbol: "saxpy",
            text: SAXPY,
        }]))
        .unwrap()
        .program;
    assert!(program.path().starts_with(root_in(base.path())));
    assert_eq!(
        b.work_dir().unwrap().parent(),
        Some(root_in(base.path()).as_path())
    );
}
