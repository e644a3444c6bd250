//! What every case does, whatever the backend (see the crate docs).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use kcache::backend::{Backend, BackendError, Launch};
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::canon::Derivation;
use kcache::resolve::{Kernel, Resolver};
use kcache::store::{FileStore, Store};

use crate::backend_support::required;

/// Written into texts, options and file contents: the case's directory.
pub const DIR: &str = "@DIR@";

/// Set in a child process: what it runs of the case (`whole` or `b`).
const ROLE: &str = "KCACHE_SOUNDNESS_ROLE";
/// The case directory a parent hands its `b` child.
const CHILD_DIR: &str = "KCACHE_SOUNDNESS_DIR";
/// The store a parent hands its `b` child, A already compiled into it.
const CHILD_STORE: &str = "KCACHE_SOUNDNESS_STORE";

/// A backend as the suite drives it.
pub trait Subject: Backend + Sized + 'static {
    /// The name `KCACHE_TEST_REQUIRE` lists it under.
    const NAME: &'static str;

    /// A fresh instance (as a new process would make), with `dir` as the
    /// directory quoted includes are found in where the backend has one.
    fn open(dir: &Path, hooks: &Hooks) -> Result<Self, BackendError>;

    /// What `symbol` of `program` does on `run`'s inputs.
    fn behave(&self, program: &Self::Program, symbol: &str, run: &Run) -> Behaviour {
        let mut launch = Launch {
            buffers: run.buffers.clone(),
            scalars: run.scalars.clone(),
            global: run.global,
            local: [1, 1, 1],
        };
        match self.launch(program, symbol, &mut launch) {
            Ok(()) => Behaviour::Ran(launch.buffers),
            Err(e) => Behaviour::LaunchFailed(e.to_string()),
        }
    }
}

/// What a kernel's answer does.
#[derive(Clone)]
pub enum Behaviour {
    /// It did not compile, or kcache refused it (the message is for the
    /// report; any two failures are alike).
    Failed(String),
    /// It compiled, and its launch failed.
    LaunchFailed(String),
    /// It ran: the buffers afterwards (compared bit for bit).
    Ran(Vec<Vec<f32>>),
    /// Compile only: the kernel's code, normalized (see `cuda.rs`).
    Code(String),
}

impl Behaviour {
    fn failed(&self) -> bool {
        matches!(self, Behaviour::Failed(_))
    }
}

impl PartialEq for Behaviour {
    fn eq(&self, other: &Self) -> bool {
        use Behaviour::*;
        match (self, other) {
            (Failed(_), Failed(_)) | (LaunchFailed(_), LaunchFailed(_)) => true,
            (Ran(a), Ran(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.len() == y.len()
                            && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
                    })
            }
            (Code(a), Code(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Debug for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Behaviour::Failed(e) => write!(f, "Failed({})", first_lines(e, 12)),
            Behaviour::LaunchFailed(e) => write!(f, "LaunchFailed({e})"),
            Behaviour::Ran(b) => write!(f, "Ran({b:?})"),
            Behaviour::Code(c) => write!(f, "Code(\n{c}\n)"),
        }
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// The inputs every answer of a case is launched on.
#[derive(Clone, Debug)]
pub struct Run {
    pub buffers: Vec<Vec<f32>>,
    pub scalars: Vec<i32>,
    pub global: [usize; 3],
}

impl Default for Run {
    /// One buffer `x[i] = i` of 8 floats, `n = 8`, 8 work items.
    fn default() -> Self {
        Run {
            buffers: vec![(0..8).map(|i| i as f32).collect()],
            scalars: vec![8],
            global: [8, 1, 1],
        }
    }
}

/// One kernel of a case, before `@DIR@` is replaced.
#[derive(Clone, Debug)]
pub struct Spec {
    symbol: String,
    text: String,
    options: Vec<String>,
    bound: Vec<String>,
    derivations: Vec<Derivation>,
    infer: bool,
}

/// A kernel named `symbol` with `text`, no options, nothing bound.
pub fn k(symbol: &str, text: impl Into<String>) -> Spec {
    Spec {
        symbol: symbol.into(),
        text: text.into(),
        options: Vec::new(),
        bound: Vec::new(),
        derivations: Vec::new(),
        infer: false,
    }
}

impl Spec {
    /// Sets the option list.
    pub fn opts(mut self, options: &[&str]) -> Self {
        self.options = options.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Sets the bound names.
    pub fn bound(mut self, names: &[&str]) -> Self {
        self.bound = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Appends `text` to the kernel's text (after its function).
    pub fn text_after(mut self, text: &str) -> Self {
        self.text.push_str(text);
        self
    }

    /// Renames every declared name the binder verifies (`--infer`).
    pub fn infer(mut self) -> Self {
        self.infer = true;
        self
    }

    /// Adds a derivation template (`PREFIX*SUFFIX`).
    pub fn derive(mut self, template: &str) -> Self {
        self.derivations
            .push(Derivation::parse(template).expect("a template with one `*`"));
        self
    }

    fn kernel(&self, dir: &Path) -> Kernel {
        let d = dir.to_str().expect("a UTF-8 temp path");
        let mut kernel = Kernel::new(self.symbol.clone(), self.text.replace(DIR, d))
            .options(self.options.iter().map(|o| o.replace(DIR, d)))
            .bound(self.bound.clone());
        kernel.canon.derivations = self.derivations.clone();
        kernel.canon.infer = self.infer;
        kernel
    }
}

/// A change to the case's directory.
#[derive(Clone, Debug)]
enum Edit {
    /// Writes a file (creating its directories).
    Write(String, Vec<u8>),
    /// Writes a file, then gives it back the size and modification time it
    /// had (what a stat-only check would see as unchanged).
    WriteKeepingStat(String, Vec<u8>),
    /// Sets a file's modification time (seconds after the epoch).
    Touch(String, u64),
    /// Builds a static library from C source (`cc -c`, `ar rcs`).
    Library(String, String),
    /// Makes a file a symbolic link to a target (replacing what was there).
    Symlink(String, String),
    /// Removes a file.
    Remove(String),
}

impl Edit {
    fn apply(&self, dir: &Path) {
        let path = |rel: &str| -> PathBuf {
            let p = dir.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            p
        };
        let fill = |s: &[u8]| -> Vec<u8> {
            String::from_utf8_lossy(s)
                .replace(DIR, dir.to_str().unwrap())
                .into_bytes()
        };
        match self {
            Edit::Write(rel, bytes) => std::fs::write(path(rel), fill(bytes)).unwrap(),
            Edit::WriteKeepingStat(rel, bytes) => {
                let p = path(rel);
                let before = std::fs::metadata(&p).unwrap();
                let bytes = fill(bytes);
                assert_eq!(
                    before.len(),
                    bytes.len() as u64,
                    "{rel}: an edit keeping its size"
                );
                std::fs::write(&p, bytes).unwrap();
                let f = std::fs::File::options().write(true).open(&p).unwrap();
                f.set_modified(before.modified().unwrap()).unwrap();
            }
            Edit::Touch(rel, secs) => {
                let f = std::fs::File::options()
                    .write(true)
                    .open(path(rel))
                    .unwrap();
                f.set_modified(UNIX_EPOCH + Duration::from_secs(*secs))
                    .unwrap();
            }
            Edit::Symlink(rel, target) => {
                let p = path(rel);
                let _ = std::fs::remove_file(&p);
                std::os::unix::fs::symlink(target, p).unwrap();
            }
            Edit::Remove(rel) => std::fs::remove_file(dir.join(rel)).unwrap(),
            Edit::Library(rel, source) => {
                let archive = path(rel);
                let src = archive.with_extension("c");
                let obj = archive.with_extension("o");
                std::fs::write(&src, source).unwrap();
                let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
                let ok = Command::new(cc.split_whitespace().next().unwrap())
                    .args(["-c", "-fPIC", "-O2", "-o"])
                    .arg(&obj)
                    .arg(&src)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "building {rel}");
                let _ = std::fs::remove_file(&archive);
                let ok = Command::new("ar")
                    .arg("rcs")
                    .arg(&archive)
                    .arg(&obj)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "archiving {rel}");
            }
        }
    }
}

/// Two kernels, and what they compile with (see the crate docs).
#[derive(Clone, Debug)]
pub struct Case {
    a: Spec,
    b: Spec,
    files: Vec<Edit>,
    edits: Vec<Edit>,
    env_b: Vec<(String, String)>,
    env: Vec<(String, String)>,
    in_cwd: bool,
    run: Run,
    distinct: bool,
    fresh: bool,
}

impl Case {
    /// Kernel A, then kernel B.
    pub fn new(a: Spec, b: Spec) -> Self {
        Case {
            a,
            b,
            files: Vec::new(),
            edits: Vec::new(),
            env_b: Vec::new(),
            env: Vec::new(),
            in_cwd: false,
            run: Run::default(),
            distinct: true,
            fresh: false,
        }
    }

    /// One kernel, compiled as A and again as B after [`Case::edit`]s.
    pub fn same(kernel: Spec) -> Self {
        Self::new(kernel.clone(), kernel)
    }

    /// Sets the option list of both kernels.
    pub fn opts_both(mut self, options: &[&str]) -> Self {
        self.a = self.a.opts(options);
        self.b = self.b.opts(options);
        self
    }

    /// A file in the case's directory before anything compiles.
    pub fn file(mut self, rel: &str, text: &str) -> Self {
        self.files
            .push(Edit::Write(rel.into(), text.as_bytes().to_vec()));
        self
    }

    /// A static library built before anything compiles.
    pub fn library(mut self, rel: &str, source: &str) -> Self {
        self.files.push(Edit::Library(rel.into(), source.into()));
        self
    }

    /// Rewrites a file after A compiled (B alone sees the new text).
    pub fn edit(mut self, rel: &str, text: &str) -> Self {
        self.edits
            .push(Edit::Write(rel.into(), text.as_bytes().to_vec()));
        self
    }

    /// Rewrites a file after A compiled, keeping its size and mtime.
    pub fn edit_keeping_stat(mut self, rel: &str, text: &str) -> Self {
        self.edits
            .push(Edit::WriteKeepingStat(rel.into(), text.as_bytes().to_vec()));
        self
    }

    /// Sets a file's mtime before anything compiles.
    pub fn touched(mut self, rel: &str, secs: u64) -> Self {
        self.files.push(Edit::Touch(rel.into(), secs));
        self
    }

    /// Sets a file's mtime after A compiled (its contents unchanged).
    pub fn touch(mut self, rel: &str, secs: u64) -> Self {
        self.edits.push(Edit::Touch(rel.into(), secs));
        self
    }

    /// Makes `rel` a symbolic link to `target`, before anything compiles.
    pub fn symlink(mut self, rel: &str, target: &str) -> Self {
        self.files.push(Edit::Symlink(rel.into(), target.into()));
        self
    }

    /// Points the symbolic link `rel` at `target` after A compiled.
    pub fn relink(mut self, rel: &str, target: &str) -> Self {
        self.edits.push(Edit::Symlink(rel.into(), target.into()));
        self
    }

    /// Removes a file after A compiled.
    pub fn remove(mut self, rel: &str) -> Self {
        self.edits.push(Edit::Remove(rel.into()));
        self
    }

    /// Rebuilds a static library after A compiled.
    pub fn edit_library(mut self, rel: &str, source: &str) -> Self {
        self.edits.push(Edit::Library(rel.into(), source.into()));
        self
    }

    /// B's compiles run in a fresh process with `var` set (A's in this one,
    /// without it).
    pub fn env_for_b(mut self, var: &str, value: &str) -> Self {
        self.env_b.push((var.into(), value.into()));
        self
    }

    /// The whole case runs in a fresh process with `var` set.
    pub fn env(mut self, var: &str, value: &str) -> Self {
        self.env.push((var.into(), value.into()));
        self
    }

    /// The whole case runs in a fresh process whose working directory is
    /// the case's directory.
    pub fn in_cwd(mut self) -> Self {
        self.in_cwd = true;
        self
    }

    /// A and B alone may behave alike (the case guards that B's context,
    /// not its text, decides nothing).
    pub fn alike(mut self) -> Self {
        self.distinct = false;
        self
    }

    /// B depends on when it is compiled: a second passes between A's
    /// compile and B's, and B's answer must not behave as A did.
    pub fn fresh(mut self) -> Self {
        self.fresh = true;
        self.distinct = false;
        self
    }
}

/// Runs `case` for backend `S` (see the crate docs); `test` is the test's
/// path (`module_path!()::name`), which a child process reruns.
pub fn check<S: Subject>(test: &str, case: Case) {
    let test = test.split_once("::").map_or(test, |(_, t)| t);
    match std::env::var(ROLE).ok().as_deref() {
        Some("whole") => {
            let dir = std::env::current_dir().unwrap();
            return check_here::<S>(test, &case, &dir);
        }
        Some("b") => return check_b::<S>(&case),
        _ => {}
    }
    if !available::<S>() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if case.in_cwd || !case.env.is_empty() {
        spawn(test, "whole", dir.path(), &case.env, &[]);
    } else {
        check_here::<S>(test, &case, dir.path());
    }
}

/// Whether `S` opens here; says why not (failing where it is required).
fn available<S: Subject>() -> bool {
    let dir = tempfile::tempdir().unwrap();
    match S::open(dir.path(), &Hooks::new()) {
        Ok(_) => true,
        Err(e) if required(S::NAME) => panic!("{} is required here but unavailable: {e}", S::NAME),
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn check_here<S: Subject>(test: &str, case: &Case, dir: &Path) {
    for f in &case.files {
        f.apply(dir);
    }
    let run = &case.run;
    let a_alone = alone::<S>(dir, &case.a, run);
    let mut b_alone = case.edits.is_empty().then(|| alone::<S>(dir, &case.b, run));
    if let Some(b) = &b_alone {
        if case.distinct {
            assert_ne!(
                &a_alone, b,
                "the case cannot fail: A and B alone behave alike"
            );
        }
    }

    // A, then B, in one store.
    let store = tempfile::tempdir().unwrap();
    let a_first = one::<S>(dir, store.path(), &case.a, run);
    if case.fresh {
        next_second();
    } else {
        assert_eq!(a_first, a_alone, "A into an empty store behaves as A alone");
    }
    for e in &case.edits {
        e.apply(dir);
    }
    if !case.env_b.is_empty() {
        spawn(
            test,
            "b",
            dir,
            &case.env_b,
            &[(CHILD_DIR, dir), (CHILD_STORE, store.path())],
        );
        return;
    }
    let b_alone = b_alone.get_or_insert_with(|| alone::<S>(dir, &case.b, run));
    if !case.edits.is_empty() && case.distinct {
        assert_ne!(
            &a_alone, b_alone,
            "the case cannot fail: the edit changes nothing B alone does"
        );
    }
    let b_then = one::<S>(dir, store.path(), &case.b, run);
    if case.fresh {
        assert_ne!(
            b_then, a_first,
            "B, compiled a second after A, behaves as A compiled then: a stale answer"
        );
    } else {
        assert_eq!(&b_then, b_alone, "B after A in one store");
    }
    if !case.edits.is_empty() || case.fresh {
        return;
    }

    // B, then A.
    let store = tempfile::tempdir().unwrap();
    one::<S>(dir, store.path(), &case.b, run);
    let a_then = one::<S>(dir, store.path(), &case.a, run);
    assert_eq!(a_then, a_alone, "A after B in one store");

    // A and B in one batch.
    let store = tempfile::tempdir().unwrap();
    let both = phase::<S>(dir, store.path(), &[&case.a, &case.b], run);
    if a_alone.failed() || b_alone.failed() {
        assert!(
            both.is_err(),
            "a batch of A and B succeeded though {} alone fails: {both:?}",
            if a_alone.failed() { "A" } else { "B" }
        );
    } else {
        let both =
            both.unwrap_or_else(|e| panic!("A and B each compile alone, their batch fails: {e}"));
        assert_eq!(both[0], a_alone, "A in a batch with B");
        assert_eq!(both[1], *b_alone, "B in a batch with A");
    }
    assert_eq!(
        one::<S>(dir, store.path(), &case.b, run),
        *b_alone,
        "B after a batch of A and B in one store"
    );
    assert_eq!(
        one::<S>(dir, store.path(), &case.a, run),
        a_alone,
        "A after a batch of A and B in one store"
    );
}

/// The child half of [`Case::env_for_b`]: B into the parent's store, and B
/// alone, in this process's environment.
fn check_b<S: Subject>(case: &Case) {
    let dir = PathBuf::from(std::env::var_os(CHILD_DIR).expect("set by the parent"));
    let store = PathBuf::from(std::env::var_os(CHILD_STORE).expect("set by the parent"));
    let b_alone = alone::<S>(&dir, &case.b, &case.run);
    let b_then = one::<S>(&dir, &store, &case.b, &case.run);
    assert_eq!(b_then, b_alone, "B after A (A in another environment)");
}

/// Reruns `test` of this binary in a fresh process, in `cwd`, as `role`,
/// with `env` set; fails unless it passed.
fn spawn(test: &str, role: &str, cwd: &Path, env: &[(String, String)], paths: &[(&str, &Path)]) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .current_dir(cwd)
        .env(ROLE, role);
    for (k, v) in env {
        cmd.env(k, v.replace(DIR, cwd.to_str().unwrap()));
    }
    for (k, v) in paths {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "the fresh process failed:\n{text}"
    );
}

/// `kernel` compiled alone, in a fresh store.
fn alone<S: Subject>(dir: &Path, kernel: &Spec, run: &Run) -> Behaviour {
    let store = tempfile::tempdir().unwrap();
    one::<S>(dir, store.path(), kernel, run)
}

fn one<S: Subject>(dir: &Path, store: &Path, kernel: &Spec, run: &Run) -> Behaviour {
    match phase::<S>(dir, store, &[kernel], run) {
        Ok(mut b) => b.remove(0),
        Err(e) => Behaviour::Failed(e),
    }
}

/// Resolves `batch` in a fresh backend and resolver over the `FileStore`
/// at `store`, and says what each answer does.
fn phase<S: Subject>(
    dir: &Path,
    store: &Path,
    batch: &[&Spec],
    run: &Run,
) -> Result<Vec<Behaviour>, String> {
    let hooks = Hooks::new();
    let backend = Arc::new(S::open(dir, &hooks).expect("the backend opened a moment ago"));
    let store: Arc<dyn Store> = Arc::new(FileStore::open(store).unwrap());
    let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(64 << 20), &hooks)
        .with_store(Some(store));
    let kernels: Vec<Kernel> = batch.iter().map(|s| s.kernel(dir)).collect();
    match resolver.resolve(&kernels) {
        Ok(answers) => Ok(answers
            .iter()
            .map(|a| backend.behave(&a.program, &a.symbol, run))
            .collect()),
        Err(e) => {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            Err(msg)
        }
    }
}

/// Waits for the wall clock's next second, so a compile after it sees
/// another `__TIME__` than one before: a wait for time to pass, not for
/// another thread, so it cannot race.
///
/// The second is `time(2)`'s, the clock compilers read for `__TIME__`:
/// glibc answers it from the kernel's coarse clock, which lags the precise
/// one (`std::time::SystemTime`) by up to a tick. Waiting on that let B start
/// a few milliseconds into the new second while `time` still said the old
/// one, and NVRTC then wrote A's `__TIME__` into B (2 runs in 6, with the
/// other time-macro cases running beside it). The coarse clock turning
/// over means the precise one has too.
fn next_second() {
    // SAFETY: `time` with a null pointer only returns the time.
    let now = || unsafe { libc::time(std::ptr::null_mut()) };
    let start = now();
    while now() == start {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One `#[test]` per case, named after the class it guards:
/// `cases!(Backend { name: case, ... })`.
macro_rules! cases {
    ($subject:ty { $( $(#[$meta:meta])* $name:ident: $case:expr, )* }) => {
        $(
            $(#[$meta])*
            #[test]
            fn $name() {
                $crate::harness::check::<$subject>(
                    concat!(module_path!(), "::", stringify!($name)),
                    $case,
                );
            }
        )*
    };
}
