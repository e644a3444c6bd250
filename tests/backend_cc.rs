//! The C-compiler backend end to end: real compiles with the system compiler,
//! loads from bytes in a fresh backend, launches checked numerically, the
//! handle cache and its teardown through private hooks, refused options, the
//! identity, and one test per input of the key extras.
//!
//! Every test skips, saying why, when no C compiler runs here.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use kcache::backend::cc::{CcBackend, CcBuilder, CcProgram, FAMILY, HOST, MAX_BUFFERS};
use kcache::backend::{Backend, BackendError, CompileJob, Compiled, KernelSource, Launch};
use kcache::cache::hooks::{HookError, Hooks};
use kcache::key::Digest;

const SAXPY: &str = "void saxpy(float* x, float* y, int n, int a) {\n\
    for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n}\n";
const MATMUL: &str = "void matmul(float* a, float* b, float* c, int n, int m, int k) {\n\
    for (int i = 0; i < n; i++)\n\
      for (int j = 0; j < m; j++) {\n\
        float s = 0.0f;\n\
        for (int p = 0; p < k; p++) s += a[i * k + p] * b[p * m + j];\n\
        c[i * m + j] = s;\n\
      }\n}\n";
const REDUCE: &str = "void reduce_sum(float* x, float* out, int n, int stride) {\n\
    float s = 0.0f;\n\
    for (int i = 0; i < n; i += stride) s += x[i];\n\
    out[0] = s;\n}\n";

/// A backend on private hooks, or `None` (with the reason printed) when no C
/// compiler runs here.
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

/// Whether CI asked for the C backend (`KCACHE_TEST_REQUIRE` names `cc`):
/// then a missing compiler fails instead of skipping.
fn required() -> bool {
    std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"))
}

fn backend() -> Option<(Hooks, CcBackend)> {
    let hooks = Hooks::new();
    let b = backend_with(&hooks, |b| b)?;
    Some((hooks, b))
}

macro_rules! need {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

fn k<'a>(symbol: &'a str, text: &'a str) -> KernelSource<'a> {
    KernelSource { symbol, text }
}

fn opts(o: &[&str]) -> Vec<String> {
    o.iter().map(|s| s.to_string()).collect()
}

fn compile(
    b: &CcBackend,
    kernels: &[KernelSource<'_>],
    options: &[String],
) -> Result<Compiled<CcProgram>, BackendError> {
    b.compile(&CompileJob {
        kernels,
        options,
        group: 0,
        n_groups: 1,
        fresh: false,
    })
}

fn run(
    b: &CcBackend,
    p: &CcProgram,
    symbol: &str,
    buffers: Vec<Vec<f32>>,
    scalars: Vec<i32>,
) -> Vec<Vec<f32>> {
    let mut l = Launch {
        buffers,
        scalars,
        global: [1, 1, 1],
        local: [1, 1, 1],
    };
    b.launch(p, symbol, &mut l).unwrap();
    l.buffers
}

/// The blamed kernels and the log of a compile error.
fn compile_error(err: BackendError) -> (Vec<String>, String) {
    match err {
        BackendError::Compile {
            backend,
            kernels,
            log,
        } => {
            assert_eq!(backend, "cc");
            (kernels, log)
        }
        other => panic!("expected a compile error, got {other}"),
    }
}

/// Runs the three kernels of the standard group and checks their results.
fn check_group(b: &CcBackend, p: &CcProgram) {
    let out = run(
        b,
        p,
        "saxpy",
        vec![vec![1.0, 2.0, 3.0], vec![10.0, 20.0, 30.0]],
        vec![3, 2],
    );
    assert_eq!(out[1], [12.0, 24.0, 36.0]);

    // [2x3] x [3x2]
    let a = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let bm = vec![7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
    let out = run(b, p, "matmul", vec![a, bm, vec![0.0; 4]], vec![2, 2, 3]);
    assert_eq!(out[2], [58.0, 64.0, 139.0, 154.0]);

    let x: Vec<f32> = (1..=10).map(|v| v as f32).collect();
    let out = run(b, p, "reduce_sum", vec![x.clone(), vec![0.0]], vec![10, 1]);
    assert_eq!(out[1], [55.0]);
    let out = run(b, p, "reduce_sum", vec![x, vec![0.0]], vec![10, 3]);
    assert_eq!(out[1], [1.0 + 4.0 + 7.0 + 10.0]);
}

fn group() -> [KernelSource<'static>; 3] {
    [
        k("saxpy", SAXPY),
        k("matmul", MATMUL),
        k("reduce_sum", REDUCE),
    ]
}

#[test]
fn compiles_a_group_and_runs_each_kernel() {
    let (_h, b) = need!(backend());
    let c = compile(&b, &group(), &[]).unwrap();
    assert_eq!(c.program.symbols(), ["saxpy", "matmul", "reduce_sum"]);
    assert_eq!(c.binary, c.program.binary());
    assert!(c.binary.starts_with(b"\x7fELF") || !cfg!(target_os = "linux"));
    for s in ["saxpy", "matmul", "reduce_sum"] {
        assert!(c.program.symbol_ptr(s).is_some(), "{s}");
    }
    check_group(&b, &c.program);
}

#[test]
fn job_options_follow_the_default_flags() {
    let (_h, b) = need!(backend());
    let kernel = [k("level", "void level(float* out) {\n#ifdef __OPTIMIZE__\n out[0] = 1;\n#else\n out[0] = 0;\n#endif\n}\n")];
    let optimized = compile(&b, &kernel, &[]).unwrap();
    assert_eq!(
        run(&b, &optimized.program, "level", vec![vec![-1.0]], vec![])[0],
        [1.0]
    );
    // `-O0` after the default `-O2` wins.
    let plain = compile(&b, &kernel, &opts(&["-O0"])).unwrap();
    assert_eq!(
        run(&b, &plain.program, "level", vec![vec![-1.0]], vec![])[0],
        [0.0]
    );
    // A define reaches the kernel.
    let scaled = [k("scaled", "void scaled(float* out) { out[0] = SCALE; }")];
    let c = compile(&b, &scaled, &opts(&["-D", "SCALE=7"])).unwrap();
    assert_eq!(
        run(&b, &c.program, "scaled", vec![vec![0.0]], vec![])[0],
        [7.0]
    );
}

#[test]
fn a_prelude_comes_first() {
    let hooks = Hooks::new();
    let b = need!(backend_with(&hooks, |b| b
        .prelude("#include <math.h>\n#define TWICE(x) (2 * (x))")));
    let kernel = [k(
        "root",
        "void root(float* x, int n) { for (int i = 0; i < n; i++) x[i] = TWICE(sqrtf(x[i])); }",
    )];
    let c = compile(&b, &kernel, &[]).unwrap();
    assert_eq!(
        run(&b, &c.program, "root", vec![vec![4.0, 9.0]], vec![2])[0],
        [4.0, 6.0]
    );
}

#[test]
fn a_compile_error_names_the_kernel_and_carries_the_compilers_stderr() {
    let (_h, b) = need!(backend());
    let bad = "void broken(float* x) {\n  x[0] = undeclared_name;\n}\n";
    let err = compile(&b, &[k("saxpy", SAXPY), k("broken", bad)], &[]).unwrap_err();
    assert!(err.to_string().contains("broken"));
    let (kernels, log) = compile_error(err);
    assert_eq!(kernels, ["broken"]);
    assert!(log.contains("undeclared_name"), "{log}");
    assert!(
        log.contains("broken:2:"),
        "the diagnostic names the kernel's line: {log}"
    );
    assert!(
        b.kernel_cache().cache().is_empty(),
        "a failed compile caches nothing"
    );
}

#[test]
fn an_error_in_a_header_is_blamed_on_the_kernel_including_it() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bad.h"), "int oops = ;\n").unwrap();
    let hooks = Hooks::new();
    let b = need!(backend_with(&hooks, |b| b.source_dir(dir.path())));
    let err = compile(
        &b,
        &[
            k("saxpy", SAXPY),
            k("uses", "#include \"bad.h\"\nvoid uses(float* x) {}\n"),
        ],
        &[],
    )
    .unwrap_err();
    let (kernels, log) = compile_error(err);
    assert_eq!(kernels, ["uses"]);
    assert!(log.contains("bad.h"), "{log}");
}

#[test]
fn an_error_naming_no_kernel_blames_the_whole_group() {
    let (_h, b) = need!(backend());
    let err = compile(
        &b,
        &[k("saxpy", SAXPY), k("matmul", MATMUL)],
        &opts(&["-lkcache_no_such_library"]),
    )
    .unwrap_err();
    let (kernels, log) = compile_error(err);
    assert_eq!(kernels, ["saxpy", "matmul"]);
    assert!(log.contains("kcache_no_such_library"), "{log}");
}

#[test]
fn an_undefined_reference_fails_the_compile_not_the_first_call() {
    let (_h, b) = need!(backend());
    let text = "void missing_helper(void);\nvoid calls(float* x) { missing_helper(); }\n";
    let (kernels, log) = compile_error(compile(&b, &[k("calls", text)], &[]).unwrap_err());
    assert_eq!(kernels, ["calls"]);
    assert!(log.contains("missing_helper"), "{log}");
}

#[test]
fn a_kernel_missing_from_the_object_is_a_missing_symbol() {
    let (_h, b) = need!(backend());
    let err = compile(&b, &[k("wanted", "void other(float* x) {}")], &[]).unwrap_err();
    assert!(
        matches!(&err, BackendError::MissingSymbol { symbol, .. } if symbol == "wanted"),
        "{err}"
    );
    // A name only a linked library defines is no kernel of the program.
    let err = compile(&b, &[k("sqrtf", "static int unused;")], &[]).unwrap_err();
    assert!(
        matches!(&err, BackendError::MissingSymbol { symbol, .. } if symbol == "sqrtf"),
        "{err}"
    );
}

#[test]
fn a_symbol_that_is_no_identifier_is_refused() {
    let (_h, b) = need!(backend());
    let err = compile(&b, &[k("bad\"name", "void x(void) {}")], &[]).unwrap_err();
    assert!(matches!(err, BackendError::Refused { .. }), "{err}");
}

#[test]
fn loads_from_bytes_in_a_fresh_backend_and_runs() {
    let (_h, first) = need!(backend());
    let binary = compile(&first, &group(), &[]).unwrap().binary;
    drop(first);

    // As another process would: a new backend, a new work directory.
    let (_h2, fresh) = need!(backend());
    let p = fresh
        .load(&binary, &["saxpy", "matmul", "reduce_sum"])
        .unwrap();
    assert_eq!(p.binary(), &binary[..]);
    assert!(p.path().starts_with(fresh.work_dir().unwrap()));
    check_group(&fresh, &p);

    // The same bytes again: the loaded program, not a second copy.
    let again = fresh.load(&binary, &["saxpy"]).unwrap();
    assert!(Arc::ptr_eq(&p, &again));
    // A symbol the bytes lack is refused even on a hit.
    let err = fresh.load(&binary, &["saxpy", "nope"]).unwrap_err();
    assert!(
        matches!(&err, BackendError::MissingSymbol { symbol, .. } if symbol == "nope"),
        "{err}"
    );
}

#[test]
fn bytes_that_are_no_shared_object_fail_to_load() {
    let (_h, b) = need!(backend());
    let err = b.load(b"not an ELF file", &["k"]).unwrap_err();
    assert!(matches!(err, BackendError::Load { .. }), "{err}");
    assert!(b.kernel_cache().cache().is_empty());
}

#[test]
fn the_same_group_compiles_to_the_same_bytes_in_two_backends() {
    let (_h, a) = need!(backend());
    let (_h2, b) = need!(backend());
    let x = compile(&a, &group(), &[]).unwrap();
    let y = compile(&b, &group(), &[]).unwrap();
    assert_eq!(
        x.binary, y.binary,
        "compiles are reproducible across work directories"
    );
}

/// Review 2026-12-02, C F14: the compiler looked for a quoted include in the
/// work directory before the source directory, where the scan does not look:
/// `__has_include("kernels.c")` found the unit itself there, and a kernel's
/// answer was not the one its key described.
#[test]
fn a_quoted_include_is_not_looked_for_in_the_work_directory() {
    let (d, b) = need!(in_dir());
    let text = "void probe(float* x) {\n\
        #if __has_include(\"kernels.c\") || __has_include(\"kernels.d\")\n  x[0] = 1.0f;\n\
        #else\n  x[0] = 2.0f;\n#endif\n}\n";
    let p = compile(&b, &[k("probe", text)], &[]).unwrap();
    assert_eq!(
        run(&b, &p.program, "probe", vec![vec![0.0]], vec![])[0],
        [2.0]
    );
    // The source directory is where it is looked for, as the scan says.
    write(d.path(), "kernels.c", "");
    let fresh = backend_with(&Hooks::new(), |c| c.source_dir(d.path())).unwrap();
    let p = compile(&fresh, &[k("probe", text)], &[]).unwrap();
    assert_eq!(
        run(&fresh, &p.program, "probe", vec![vec![0.0]], vec![])[0],
        [1.0]
    );
}

#[test]
fn the_same_group_compiled_twice_is_one_loaded_program() {
    let (_h, b) = need!(backend());
    let first = compile(&b, &group(), &[]).unwrap();
    let second = compile(&b, &group(), &[]).unwrap();
    assert!(Arc::ptr_eq(&first.program, &second.program));
    assert_eq!(first.binary, second.binary);
    let stats = b.kernel_cache().cache().stats();
    assert_eq!((stats.builds, stats.hits), (1, 1));
    // Other options, or another group, are another program.
    let other = compile(&b, &group(), &opts(&["-O1"])).unwrap();
    assert!(!Arc::ptr_eq(&first.program, &other.program));
    let reordered = compile(&b, &[k("matmul", MATMUL), k("saxpy", SAXPY)], &[]).unwrap();
    assert!(!Arc::ptr_eq(&first.program, &reordered.program));
    // Option order is part of the key: -O0 -O2 is not -O2 -O0.
    let a = compile(&b, &group(), &opts(&["-O0", "-O2"])).unwrap();
    let c = compile(&b, &group(), &opts(&["-O2", "-O0"])).unwrap();
    assert!(!Arc::ptr_eq(&a.program, &c.program));
}

#[test]
fn concurrent_compiles_of_distinct_groups_all_succeed() {
    let (_h, b) = need!(backend());
    let b = Arc::new(b);
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (b, barrier) = (b.clone(), barrier.clone());
            thread::spawn(move || {
                let sym = format!("add{t}");
                let text = format!(
                    "void {sym}(float* x, int n) {{ for (int i = 0; i < n; i++) x[i] += {t}; }}"
                );
                let kernels = [k(&sym, &text), k("saxpy", SAXPY)];
                barrier.wait();
                let c = compile(&b, &kernels, &[]).unwrap();
                let out = run(&b, &c.program, &sym, vec![vec![1.0, 2.0]], vec![2]);
                assert_eq!(out[0], [1.0 + t as f32, 2.0 + t as f32]);
                c.program
            })
        })
        .collect();
    let programs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (i, p) in programs.iter().enumerate() {
        for q in &programs[i + 1..] {
            assert!(!Arc::ptr_eq(p, q));
            assert_ne!(p.path(), q.path());
        }
    }
    assert_eq!(b.kernel_cache().cache().len(), 4);
}

#[test]
fn concurrent_compiles_of_one_group_resolve_to_one_program() {
    let (_h, b) = need!(backend());
    let b = Arc::new(b);
    let barrier = Arc::new(Barrier::new(4));
    let programs: Vec<_> = (0..4)
        .map(|_| {
            let (b, barrier) = (b.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                compile(&b, &group(), &[]).unwrap().program
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert!(programs.iter().all(|p| Arc::ptr_eq(p, &programs[0])));
    check_group(&b, &programs[0]);
}

#[test]
fn clear_cache_notifies_twice_and_a_held_program_still_runs() {
    let (hooks, b) = need!(backend());
    let clears = Arc::new(AtomicUsize::new(0));
    let c = clears.clone();
    let _listener = hooks.on_clear_all(move || {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let held = compile(&b, &group(), &[]).unwrap().program;
    assert_eq!(b.kernel_cache().cache().len(), 1);

    b.clear_cache().unwrap();
    assert_eq!(
        clears.load(Ordering::SeqCst),
        2,
        "before and after the clear"
    );
    assert!(b.kernel_cache().cache().is_empty());
    check_group(&b, &held);

    // Compiling again builds a new program; the held one is still good.
    let fresh = compile(&b, &group(), &[]).unwrap().program;
    assert!(!Arc::ptr_eq(&held, &fresh));
    check_group(&b, &fresh);
    check_group(&b, &held);
}

#[test]
fn a_failing_clear_listener_is_reported_after_the_clear() {
    let (hooks, b) = need!(backend());
    let _listener = hooks.on_clear_all(|| Err(HookError::listener("layer above failed")));
    compile(&b, &group(), &[]).unwrap();
    let err = b.clear_cache().unwrap_err();
    assert!(matches!(err, BackendError::Teardown { .. }), "{err}");
    assert!(
        err.to_string().contains("layer above failed")
            || format!("{:?}", err).contains("layer above failed")
    );
    assert!(b.kernel_cache().cache().is_empty(), "the clear completed");
}

#[test]
fn destroy_device_notifies_cc_0_and_a_held_program_still_runs() {
    let (hooks, b) = need!(backend());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let _listener = hooks.on_device_destroy(move |backend, index| {
        s.lock().unwrap().push((backend.to_string(), index));
        Ok(())
    });
    let held = compile(&b, &group(), &[]).unwrap().program;

    // A foreign backend's notification evicts nothing.
    hooks.notify_device_destroy("cuda", 0).unwrap();
    hooks.notify_device_destroy("ccx", 0).unwrap();
    assert_eq!(b.kernel_cache().cache().len(), 1);

    b.destroy_device().unwrap();
    assert_eq!(
        seen.lock().unwrap().last().cloned(),
        Some((FAMILY.to_string(), HOST))
    );
    assert!(b.kernel_cache().cache().is_empty());
    check_group(&b, &held);

    // Like a GPU backend whose device went, it builds nothing more.
    match compile(&b, &group(), &[]) {
        Err(BackendError::Unavailable { .. }) => {}
        other => panic!("expected the destroyed host to refuse, got {other:?}"),
    }
    assert!(!b.can_run());
}

#[test]
fn destroy_device_completes_when_a_listener_fails_then_reports_it() {
    let (hooks, b) = need!(backend());
    let _listener = hooks.on_device_destroy(|_, _| Err(HookError::listener("code cache refused")));
    compile(&b, &group(), &[]).unwrap();
    let err = b.destroy_device().unwrap_err();
    assert!(matches!(err, BackendError::Teardown { .. }), "{err}");
    assert!(
        b.kernel_cache().cache().is_empty(),
        "the teardown completed first"
    );
}

#[test]
fn a_notification_for_the_cc_family_evicts_the_host() {
    let (hooks, b) = need!(backend());
    compile(&b, &group(), &[]).unwrap();
    hooks.notify_device_destroy("cc/host", 1).unwrap();
    assert_eq!(
        b.kernel_cache().cache().len(),
        1,
        "another index of the family"
    );
    hooks.notify_device_destroy("cc/host", 0).unwrap();
    assert!(b.kernel_cache().cache().is_empty());
}

/// A backend whose compiler, on a compile (not a probe), says `started`
/// through a FIFO and waits for `go` through another before compiling, so a
/// test can tear down while a build is in flight, without sleeping.
#[cfg(unix)]
struct Gated {
    _dir: tempfile::TempDir,
    started: std::path::PathBuf,
    go: std::path::PathBuf,
    hooks: Hooks,
    backend: Arc<CcBackend>,
}

#[cfg(unix)]
fn gated() -> Option<Gated> {
    let (_h, plain) = backend()?;
    let dir = tempfile::tempdir().unwrap();
    let (started, go) = (dir.path().join("started"), dir.path().join("go"));
    for fifo in [&started, &go] {
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }
    let script = format!(
        "case \" $* \" in *kernels.so*) echo started > '{}'; read x < '{}';; esac\nexec {} \"$@\"",
        started.display(),
        go.display(),
        plain.compiler_path().display()
    );
    let w = wrapper(dir.path(), "gated-cc", &script);
    let hooks = Hooks::new();
    let backend = Arc::new(backend_with(&hooks, |b| b.compiler(&w))?);
    Some(Gated {
        _dir: dir,
        started,
        go,
        hooks,
        backend,
    })
}

#[cfg(unix)]
impl Gated {
    /// Starts compiling the standard group on another thread and returns once
    /// the compiler is running.
    fn start(&self) -> thread::JoinHandle<Result<Compiled<CcProgram>, BackendError>> {
        let b = self.backend.clone();
        let h = thread::spawn(move || compile(&b, &group(), &[]));
        assert_eq!(fs::read_to_string(&self.started).unwrap(), "started\n");
        h
    }

    fn release(&self) {
        fs::write(&self.go, "go\n").unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_compile_spanning_destroy_device_is_not_installed() {
    let g = need!(gated());
    let building = g.start();
    g.backend.destroy_device().unwrap();
    g.release();
    let err = building.join().unwrap().unwrap_err();
    assert!(matches!(err, BackendError::Invalidated { .. }), "{err}");
    assert!(g.backend.kernel_cache().cache().is_empty());
    assert_eq!(
        g.backend
            .kernel_cache()
            .cache()
            .stats()
            .evicted_during_build,
        1
    );
}

#[cfg(unix)]
#[test]
fn a_compile_spanning_clear_cache_is_installed_since_programs_own_their_library() {
    let g = need!(gated());
    let clears = Arc::new(AtomicUsize::new(0));
    let c = clears.clone();
    let _l = g.hooks.on_clear_all(move || {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let building = g.start();
    g.backend.clear_cache().unwrap();
    g.release();
    let program = building.join().unwrap().unwrap().program;
    assert_eq!(clears.load(Ordering::SeqCst), 2);
    assert_eq!(g.backend.kernel_cache().cache().len(), 1);
    check_group(&g.backend, &program);
}

#[test]
fn launch_refuses_arities_beyond_the_dispatch_table() {
    let (_h, b) = need!(backend());
    let c = compile(&b, &group(), &[]).unwrap();
    let mut l = Launch {
        buffers: vec![vec![0.0]; MAX_BUFFERS + 1],
        scalars: vec![],
        global: [1, 1, 1],
        local: [1, 1, 1],
    };
    let err = b.launch(&c.program, "saxpy", &mut l).unwrap_err();
    assert!(matches!(err, BackendError::Launch { .. }), "{err}");
    l.buffers.truncate(1);
    l.scalars = vec![0; 5];
    assert!(matches!(
        b.launch(&c.program, "saxpy", &mut l),
        Err(BackendError::Launch { .. })
    ));
    let err = b.launch(&c.program, "nope", &mut l).unwrap_err();
    assert!(matches!(err, BackendError::MissingSymbol { .. }), "{err}");
}

#[test]
fn every_arity_up_to_the_maxima_passes_its_arguments_in_order() {
    let (_h, b) = need!(backend());
    // k_B_S(float* b0..bB-1, int s0..sS-1): b_i[0] = i + 1 + sum of scalars * 10.
    let mut texts = Vec::new();
    for nb in 1..=MAX_BUFFERS {
        for ns in 0..=kcache::backend::cc::MAX_SCALARS {
            let params: Vec<String> = (0..nb)
                .map(|i| format!("float* b{i}"))
                .chain((0..ns).map(|i| format!("int s{i}")))
                .collect();
            let sum: String = (0..ns)
                .map(|i| format!(" + s{i} * {}", 10i32.pow(i as u32)))
                .collect();
            let body: String = (0..nb)
                .map(|i| format!("b{i}[0] = {} + 0{sum};", i + 1))
                .collect();
            texts.push((
                format!("k_{nb}_{ns}"),
                format!("void k_{nb}_{ns}({}) {{ {body} }}\n", params.join(", ")),
                nb,
                ns,
            ));
        }
    }
    let kernels: Vec<_> = texts.iter().map(|(s, t, _, _)| k(s, t)).collect();
    let c = compile(&b, &kernels, &[]).unwrap();
    for (sym, _, nb, ns) in &texts {
        let scalars: Vec<i32> = (1..=*ns as i32).collect();
        let expected_sum: i32 = scalars
            .iter()
            .enumerate()
            .map(|(i, s)| s * 10i32.pow(i as u32))
            .sum();
        let out = run(&b, &c.program, sym, vec![vec![0.0]; *nb], scalars);
        for (i, buf) in out.iter().enumerate() {
            assert_eq!(
                buf[0],
                (i as i32 + 1 + expected_sum) as f32,
                "{sym} buffer {i}"
            );
        }
    }
}

// ---------------------------------------------------------------- refusals

#[test]
fn options_with_side_effects_or_unseen_inputs_are_refused() {
    let (_h, b) = need!(backend());
    let kernel = k("saxpy", SAXPY);
    for bad in [
        &["-o", "elsewhere.so"][..],
        &["-MD"],
        &["-MF", "deps.d"],
        &["-save-temps"],
        &["-fdump-tree-all"],
        &["-fprofile-use=profile.gcda"],
        &["@options.rsp"],
        &["-Wl,-Map=map.txt"],
        &["-c"],
        &["other.c"],
    ] {
        let options = opts(bad);
        let err = compile(&b, &[kernel], &options).unwrap_err();
        assert!(
            matches!(err, BackendError::Refused { .. }),
            "{bad:?}: {err}"
        );
        assert!(err.to_string().contains(bad[0]), "{bad:?}: {err}");
        let err = b.key_extras(&kernel, &options).unwrap_err();
        assert!(
            matches!(err, BackendError::Refused { .. }),
            "{bad:?}: {err}"
        );
    }
    assert!(b.kernel_cache().cache().is_empty());
}

#[test]
fn forced_includes_kcache_cannot_find_are_refused() {
    let (_h, b) = need!(backend());
    let kernel = k("saxpy", SAXPY);
    for option in ["-include", "-imacros"] {
        let options = opts(&[option, "kcache_no_such_header.h"]);
        let err = b.key_extras(&kernel, &options).unwrap_err();
        assert!(matches!(err, BackendError::Refused { .. }), "{err}");
        assert!(err.to_string().contains("kcache_no_such_header.h"), "{err}");
        // The compiler, asked anyway, fails on it too.
        let err = compile(&b, &[kernel], &options).unwrap_err();
        assert!(err.to_string().contains("kcache_no_such_header.h"), "{err}");
    }
}

#[test]
fn refused_default_flags_fail_construction() {
    let hooks = Hooks::new();
    let r = CcBackend::builder()
        .hooks(&hooks)
        .default_flags(["-O2", "-save-temps"])
        .build();
    match r {
        Err(BackendError::Refused { input, .. }) => assert_eq!(input, "-save-temps"),
        Err(BackendError::Unavailable { reason, .. }) => {
            eprintln!("skipping: no C compiler: {reason}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---------------------------------------------------------------- identity

#[cfg(unix)]
fn wrapper(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn identity_changes_with_the_compiler() {
    let (_h, b) = need!(backend());
    let dir = tempfile::tempdir().unwrap();
    let real = b.compiler_path().display().to_string();
    let w = wrapper(
        dir.path(),
        "kcache-cc-wrapper",
        &format!("exec {real} \"$@\""),
    );
    let hooks = Hooks::new();
    let wrapped = need!(backend_with(&hooks, |c| c.compiler(&w)));
    assert_eq!(wrapped.compiler_path(), w);
    assert_ne!(b.identity(), wrapped.identity());
    // It still compiles and runs.
    let c = compile(&wrapped, &group(), &[]).unwrap();
    check_group(&wrapped, &c.program);

    // Editing the wrapper in place (same path, same version) changes it too.
    let before = wrapped.identity().to_string();
    wrapper(
        dir.path(),
        "kcache-cc-wrapper",
        &format!("exec {real} -DEDITED \"$@\""),
    );
    let edited = need!(backend_with(&hooks, |c| c.compiler(&w)));
    assert_ne!(before, edited.identity());

    // A different version string changes it.
    let liar = wrapper(
        dir.path(),
        "kcache-cc-liar",
        &format!(
            "if [ \"$1\" = --version ]; then echo 'cc 0.0-liar'; exit 0; fi\nexec {real} \"$@\""
        ),
    );
    let lying = need!(backend_with(&hooks, |c| c.compiler_path(&liar)));
    assert_eq!(lying.version(), "cc 0.0-liar");
    assert!(lying.identity().contains("cc 0.0-liar"));
}

/// Set in a child test process: the wrapper `CC` points at.
const CC_CHILD: &str = "KCACHE_TEST_CC_CHILD";

#[cfg(unix)]
#[test]
fn the_compiler_comes_from_cc() {
    if let Some(expected) = std::env::var_os(CC_CHILD) {
        // The child: `CC` is set for its whole process, so nothing races.
        let b = CcBackend::new().unwrap();
        assert_eq!(b.compiler_path(), Path::new(&expected));
        assert_eq!(CcBackend::probe(), b.info());
        println!("IDENTITY<<{}>>IDENTITY", b.identity());
        return;
    }
    let (_h, b) = need!(backend());
    let dir = tempfile::tempdir().unwrap();
    let real = b.compiler_path().display().to_string();
    let w = wrapper(dir.path(), "kcache-cc-env", &format!("exec {real} \"$@\""));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "the_compiler_comes_from_cc",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CC", &w)
        .env(CC_CHILD, &w)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child_identity = stdout
        .split_once("IDENTITY<<")
        .and_then(|(_, rest)| rest.split_once(">>IDENTITY"))
        .map(|(id, _)| id.to_string())
        .expect("the child printed its identity");
    let hooks = Hooks::new();
    let wrapped = need!(backend_with(&hooks, |c| c.compiler(&w)));
    assert_eq!(child_identity, wrapped.identity());
    assert_ne!(child_identity, b.identity());
}

#[test]
fn identity_is_stable_and_sees_the_configuration() {
    let (_h, a) = need!(backend());
    let (_h2, again) = need!(backend());
    assert_eq!(
        a.identity(),
        again.identity(),
        "same compiler, same configuration"
    );
    assert!(a
        .identity()
        .contains(&a.compiler_path().display().to_string()));
    assert!(a.identity().contains(a.target()));
    assert!(a.identity().contains(a.version()));
    let hooks = Hooks::new();
    let prelude = need!(backend_with(&hooks, |b| b.prelude("#include <math.h>")));
    assert_ne!(a.identity(), prelude.identity());
    let flags = need!(backend_with(&hooks, |b| b.default_flags(["-O3"])));
    assert_ne!(a.identity(), flags.identity());
    let link = need!(backend_with(&hooks, |b| b.link_flags(Vec::<String>::new())));
    assert_ne!(a.identity(), link.identity());
}

/// A flag added to the compile command but left out of the identity would
/// serve binaries built by the old command under the new one: every flag the
/// compiler is actually run with must be named by the identity (or, for a
/// job's own options, by the key).
#[cfg(unix)]
#[test]
fn every_flag_of_the_compile_command_is_in_the_identity() {
    let (_h, b) = need!(backend());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("argv");
    let real = b.compiler_path().display().to_string();
    // One line per invocation, the arguments separated by US (0x1f).
    let w = wrapper(
        dir.path(),
        "kcache-cc-recorder",
        &format!(
            "printf '%s\\037' \"$@\" >> '{}'\necho >> '{}'\nexec {real} \"$@\"",
            log.display(),
            log.display()
        ),
    );
    let hooks = Hooks::new();
    let recorded = need!(backend_with(&hooks, |c| c.compiler(&w)));
    let job_option = "-DKCACHE_JOB_OPTION=1";
    compile(&recorded, &group(), &opts(&[job_option])).unwrap();
    let text = fs::read_to_string(&log).unwrap();
    let command: Vec<&str> = text
        .lines()
        .map(|l| {
            l.split('\u{1f}')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
        })
        .find(|args| args.iter().any(|a| a.ends_with("kernels.so")))
        .expect("the compile ran through the recorder");
    let source_dir = recorded.source_dir().display().to_string();
    let mut checked = 0;
    let mut args = command.iter().peekable();
    while let Some(arg) = args.next() {
        // The source directory's search is keyed by the extras (see
        // `extras_depend_on_the_source_directory`).
        if *arg == "-iquote" && args.peek() == Some(&&source_dir.as_str()) {
            args.next();
            continue;
        }
        let is_compile_file = ["kernels.so", "kernels.d"].iter().any(|f| arg.ends_with(f));
        // The dependency report (`-MD -MT x -MF <file>`) writes the report
        // only; the object is the same without it.
        let is_report = ["-MD", "-MT", "x", "-MF", "-o"].contains(arg);
        if is_compile_file || is_report || *arg == job_option {
            continue;
        }
        assert!(
            recorded.identity().contains(&format!("{arg:?}")),
            "`{arg}` is passed to the compiler but the identity does not name it:\n{}",
            recorded.identity()
        );
        checked += 1;
    }
    // -shared -fPIC, -O2, -lm at least.
    assert!(checked >= 4, "checked only {checked} of {command:?}");
}

#[test]
fn probe_reports_the_host() {
    let info = CcBackend::probe();
    assert_eq!(info.backend, "cc");
    if !info.available {
        assert!(!required(), "cc is required here: {:?}", info.reason);
        eprintln!("skipping: {:?}", info.reason);
        return;
    }
    let (_h, b) = need!(backend());
    assert_eq!(info, b.info());
    assert_eq!(info.version.as_deref(), Some(b.version()));
    assert_eq!(info.devices, [format!("host ({})", b.target())]);
}

#[cfg(unix)]
#[test]
fn a_missing_compiler_is_unavailable() {
    let hooks = Hooks::new();
    let err = CcBackend::builder()
        .hooks(&hooks)
        .compiler("kcache-no-such-compiler-anywhere")
        .build()
        .unwrap_err();
    assert!(matches!(err, BackendError::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("kcache-no-such-compiler-anywhere"));
}

// ---------------------------------------------------------------- key extras

/// A backend whose source directory is a fresh temporary directory.
fn in_dir() -> Option<(tempfile::TempDir, CcBackend)> {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let b = backend_with(&hooks, |b| b.source_dir(dir.path()))?;
    Some((dir, b))
}

fn write(dir: &Path, name: &str, text: &str) {
    let p = dir.join(name);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn extras(b: &CcBackend, text: &str, options: &[&str]) -> Vec<Digest> {
    b.key_extras(&k("kern", text), &opts(options))
        .unwrap()
        .digests
}

fn refusal(b: &CcBackend, text: &str, options: &[&str]) -> String {
    match b.key_extras(&k("kern", text), &opts(options)) {
        Err(e @ BackendError::Refused { .. }) => e.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_kernel_without_includes_adds_nothing_of_its_own() {
    let (_d, b) = need!(in_dir());
    let other = "void other(float* x) { x[0] = 1; }\n";
    assert_eq!(extras(&b, SAXPY, &[]), extras(&b, other, &[]));
    assert_eq!(
        extras(&b, SAXPY, &["-O3", "-DN=4"]),
        extras(&b, other, &["-O3", "-DN=4"])
    );
}

#[test]
fn extras_see_the_headers_contents() {
    let (d, b) = need!(in_dir());
    let text = "#include \"v.h\"\nvoid kern(float* x) { x[0] = V; }\n";
    write(d.path(), "v.h", "#define V 1\n");
    let one = extras(&b, text, &[]);
    assert_eq!(one, extras(&b, text, &[]), "deterministic");
    write(d.path(), "v.h", "#define V 2\n");
    assert_ne!(one, extras(&b, text, &[]));
}

#[test]
fn extras_see_a_nested_header() {
    let (d, b) = need!(in_dir());
    let text = "#include \"outer.h\"\n";
    write(d.path(), "outer.h", "#include \"sub/inner.h\"\n");
    write(d.path(), "sub/inner.h", "#include \"leaf.h\"\n");
    write(d.path(), "sub/leaf.h", "#define LEAF 1\n");
    let before = extras(&b, text, &[]);
    write(d.path(), "sub/leaf.h", "#define LEAF 2\n");
    assert_ne!(before, extras(&b, text, &[]));
}

#[test]
fn extras_see_the_include_path_order() {
    let (d, b) = need!(in_dir());
    write(d.path(), "a/h.h", "#define H 1\n");
    write(d.path(), "b/h.h", "#define H 1\n");
    let text = "#include <h.h>\n";
    let ab = extras(&b, text, &["-Ia", "-Ib"]);
    let ba = extras(&b, text, &["-Ib", "-Ia"]);
    assert_ne!(ab, ba, "same contents, another file");
    // Relative -I paths resolve against the source directory, as for the compiler.
    let abs = extras(&b, text, &["-I", &d.path().join("a").display().to_string()]);
    assert_eq!(abs[1], ab[1], "the same header found either way");
}

#[test]
fn the_source_directory_comes_before_iquote_and_i() {
    let (d, b) = need!(in_dir());
    write(d.path(), "q/h.h", "#define H 2\n");
    let text = "#include \"h.h\"\n";
    let from_iquote = extras(&b, text, &["-iquote", "q"]);
    let from_i = extras(&b, text, &["-Iq"]);
    assert_eq!(from_iquote, from_i, "the same file either way");
    write(d.path(), "h.h", "#define H 2\n");
    assert_ne!(
        from_iquote,
        extras(&b, text, &["-iquote", "q"]),
        "now shadowed by the source directory"
    );
    // A bracketed include never looks in the source directory.
    assert_eq!(extras(&b, "#include <h.h>\n", &["-Iq"]), from_i);
}

#[test]
fn extras_depend_on_the_source_directory() {
    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    write(dir1.path(), "v.h", "#define V 1\n");
    write(dir2.path(), "v.h", "#define V 1\n");
    let hooks = Hooks::new();
    let b1 = need!(backend_with(&hooks, |b| b.source_dir(dir1.path())));
    let b2 = need!(backend_with(&hooks, |b| b.source_dir(dir2.path())));
    let text = "#include \"v.h\"\n";
    assert_ne!(extras(&b1, text, &[]), extras(&b2, text, &[]));
    assert_eq!(
        b1.identity(),
        b2.identity(),
        "the identity does not depend on it"
    );
}

#[test]
fn include_cycles_end() {
    let (d, b) = need!(in_dir());
    write(d.path(), "a.h", "#pragma once\n#include \"b.h\"\n");
    write(
        d.path(),
        "b.h",
        "#pragma once\n#include \"a.h\"\n#include \"./a.h\"\n",
    );
    let e = extras(&b, "#include \"a.h\"\n#include \"b.h\"\n", &[]);
    assert_eq!(e, extras(&b, "#include \"a.h\"\n#include \"b.h\"\n", &[]));
}

#[test]
fn commented_out_includes_do_not_count() {
    let (_d, b) = need!(in_dir());
    let text = "// #include \"missing.h\"\n/* #include \"missing.h\" */\n\
                const char* s = \"#include \\\"missing.h\\\"\";\nvoid kern(float* x) {}\n";
    assert_eq!(extras(&b, text, &[]), extras(&b, SAXPY, &[]));
}

#[test]
fn computed_and_unresolvable_includes_are_refused() {
    let (_d, b) = need!(in_dir());
    let e = refusal(&b, "#define H \"v.h\"\n#include H\n", &[]);
    assert!(
        e.contains("#include H") && e.contains("computed") && e.contains("kernel `kern`"),
        "{e}"
    );
    let e = refusal(&b, "#include \"kcache_no_such_header.h\"\n", &[]);
    assert!(
        e.contains("kcache_no_such_header.h") && e.contains("cannot find"),
        "{e}"
    );
    let e = refusal(&b, "#include <kcache_no_such_header.h>\n", &[]);
    assert!(e.contains("cannot find"), "{e}");
    let e = refusal(&b, "#if __has_include(NAME)\n#endif\n", &[]);
    assert!(e.contains("computed"), "{e}");
}

#[test]
fn a_missing_include_under_a_conditional_is_digested_as_absent() {
    let (d, b) = need!(in_dir());
    let text = "#ifdef USE_OPT\n#include \"opt.h\"\n#endif\n#include \"v.h\"\n";
    write(d.path(), "v.h", "#define V 1\n");
    let absent = extras(&b, text, &[]);
    write(d.path(), "opt.h", "#define OPT 1\n");
    assert_ne!(absent, extras(&b, text, &[]));
    // Outside the group, the same missing file is refused.
    fs::remove_file(d.path().join("opt.h")).unwrap();
    refusal(&b, "#ifdef USE_OPT\n#endif\n#include \"opt.h\"\n", &[]);
    // A header read only under a conditional passes that on.
    write(d.path(), "maybe.h", "#include \"opt.h\"\n");
    extras(&b, "#if USE_OPT\n#include \"maybe.h\"\n#endif\n", &[]);
    refusal(&b, "#include \"maybe.h\"\n", &[]);
}

#[test]
fn a_refusal_inside_a_header_names_the_header() {
    let (d, b) = need!(in_dir());
    write(d.path(), "h.h", "#include MACRO_H\n");
    let e = refusal(&b, "#include \"h.h\"\n", &[]);
    assert!(e.contains("h.h") && e.contains("MACRO_H"), "{e}");
}

#[test]
fn compiler_headers_are_digested_and_can_be_shadowed() {
    let (d, b) = need!(in_dir());
    let text = "#include <stddef.h>\n";
    let system = extras(&b, text, &[]);
    // The same name under an -I directory is the user's: digested, and its
    // contents count.
    write(d.path(), "inc/stddef.h", "typedef int my_size;\n");
    let shadowed = extras(&b, text, &["-Iinc"]);
    assert_ne!(system, shadowed);
    write(d.path(), "inc/stddef.h", "typedef long my_size;\n");
    assert_ne!(shadowed, extras(&b, text, &["-Iinc"]));
}

#[test]
fn forced_includes_are_digested() {
    let (d, b) = need!(in_dir());
    write(d.path(), "force.h", "#define F 1\n");
    let one = extras(&b, SAXPY, &["-include", "force.h"]);
    write(d.path(), "force.h", "#define F 2\n");
    assert_ne!(one, extras(&b, SAXPY, &["-include", "force.h"]));
    let imacros = b
        .key_extras(&k("kern", SAXPY), &opts(&["-imacros", "force.h"]))
        .unwrap();
    assert!(imacros.macros.contains(&b"F"[..]), "its names are macros");
    // Found in the quoted chain when not in the source directory.
    write(d.path(), "q/qforce.h", "#define Q 1\n");
    let q = opts(&["-iquote", "q", "-include", "qforce.h"]);
    let before = b.key_extras(&k("kern", SAXPY), &q).unwrap().digests;
    write(d.path(), "q/qforce.h", "#define Q 22\n");
    assert_ne!(before, b.key_extras(&k("kern", SAXPY), &q).unwrap().digests);
}

/// Review 2026-12-02, C F16: `/proc/self/cwd/h.h` was digested as kcache's
/// working directory's file and read by the compiler as the source
/// directory's; `/dev/stdin` is the unit's own pipe to the compiler.
#[test]
fn a_header_read_through_proc_or_dev_is_refused() {
    let (d, b) = need!(in_dir());
    write(d.path(), "h.h", "#define V 1\n");
    std::os::unix::fs::symlink("/proc/self/cwd/h.h", d.path().join("via.h")).unwrap();
    std::os::unix::fs::symlink("via.h", d.path().join("twice.h")).unwrap();
    for (text, options) in [
        ("#include \"/proc/self/cwd/h.h\"\n", &[][..]),
        ("#include \"/tmp/../proc/self/cwd/h.h\"\n", &[][..]),
        ("#if __has_include(\"/dev/stdin\")\n#endif\n", &[][..]),
        ("#include <h.h>\n", &["-I/proc/self/cwd"][..]),
        ("#include \"via.h\"\n", &[][..]),
        ("#include \"twice.h\"\n", &[][..]),
        ("\n", &["-include", "/dev/fd/0"][..]),
    ] {
        let e = refusal(&b, text, options);
        assert!(
            e.contains("/proc, /dev or /sys"),
            "{text:?} {options:?}: {e}"
        );
    }
    // The same header by its own path is keyed as usual.
    extras(&b, "#include \"h.h\"\n", &[]);
}

#[test]
fn has_include_answers_are_digested() {
    let (d, b) = need!(in_dir());
    let text = "#if __has_include(\"opt.h\")\n#include \"opt.h\"\n#endif\n";
    let absent = extras(&b, text, &[]);
    write(d.path(), "opt.h", "#define OPT 1\n");
    let present = extras(&b, text, &[]);
    assert_ne!(absent, present);
}

#[test]
fn the_prelude_is_scanned_too() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "common.h", "#define C 1\n");
    let hooks = Hooks::new();
    let b = need!(backend_with(&hooks, |b| b
        .source_dir(dir.path())
        .prelude("#include \"common.h\"")));
    let before = extras(&b, SAXPY, &[]);
    write(dir.path(), "common.h", "#define C 2\n");
    assert_ne!(before, extras(&b, SAXPY, &[]));
}

#[test]
fn include_next_continues_after_the_current_directory() {
    let (d, b) = need!(in_dir());
    write(d.path(), "a/h.h", "#include_next <h.h>\n");
    write(d.path(), "b/h.h", "#define H 1\n");
    let before = extras(&b, "#include <h.h>\n", &["-Ia", "-Ib"]);
    write(d.path(), "b/h.h", "#define H 2\n");
    assert_ne!(before, extras(&b, "#include <h.h>\n", &["-Ia", "-Ib"]));
}

#[test]
fn embedded_data_is_digested() {
    let (d, b) = need!(in_dir());
    write(d.path(), "table.bin", "abc");
    let text = "const unsigned char t[] = {\n#embed \"table.bin\"\n};\n";
    let before = extras(&b, text, &[]);
    write(d.path(), "table.bin", "abd");
    assert_ne!(before, extras(&b, text, &[]));
}

#[test]
fn machine_dependent_options_add_what_they_mean_here() {
    let (_d, b) = need!(in_dir());
    match b.key_extras(&k("kern", SAXPY), &opts(&["-march=native"])) {
        Ok(e) => {
            assert_ne!(e.digests, extras(&b, SAXPY, &["-mtune=native"]));
        }
        // A compiler that cannot expand it (not x86/arm GCC or Clang) refuses.
        Err(e @ BackendError::Refused { .. }) => eprintln!("-march=native unsupported here: {e}"),
        Err(e) => panic!("{e}"),
    }
}

// ------------------------------------------- extras and compiles agree

#[test]
fn compiles_find_quoted_includes_where_the_extras_do() {
    let (d, b) = need!(in_dir());
    write(d.path(), "v.h", "#define V 1\n");
    write(d.path(), "inc/w.h", "#define W 10\n");
    let text = "#include \"v.h\"\n#include <w.h>\nvoid getv(float* out) { out[0] = V + W; }\n";
    let kernel = [k("getv", text)];
    let options = opts(&["-Iinc"]);
    b.key_extras(&kernel[0], &options).unwrap();
    let c = compile(&b, &kernel, &options).unwrap();
    assert_eq!(
        run(&b, &c.program, "getv", vec![vec![0.0]], vec![])[0],
        [11.0]
    );
}

#[test]
fn an_edited_header_is_compiled_afresh_not_served_from_the_handle_cache() {
    let (d, b) = need!(in_dir());
    let text = "#include \"v.h\"\nvoid getv(float* out) { out[0] = V; }\n";
    let kernel = [k("getv", text)];
    write(d.path(), "v.h", "#define V 1\n");
    let one = compile(&b, &kernel, &[]).unwrap();
    assert_eq!(
        run(&b, &one.program, "getv", vec![vec![0.0]], vec![])[0],
        [1.0]
    );
    write(d.path(), "v.h", "#define V 2\n");
    let two = compile(&b, &kernel, &[]).unwrap();
    assert!(!Arc::ptr_eq(&one.program, &two.program));
    assert_eq!(
        run(&b, &two.program, "getv", vec![vec![0.0]], vec![])[0],
        [2.0]
    );
}

#[test]
fn a_group_its_cache_cannot_key_still_compiles_uncached() {
    let (_d, b) = need!(in_dir());
    let text = "#define H <stddef.h>\n#include H\nvoid kern(float* x) { x[0] = sizeof(size_t); }\n";
    let kernel = [k("kern", text)];
    assert!(b.key_extras(&kernel[0], &[]).is_err());
    let c = compile(&b, &kernel, &[]).unwrap();
    assert!(c.uncacheable.is_some(), "never published either");
    assert_eq!(
        run(&b, &c.program, "kern", vec![vec![0.0]], vec![])[0],
        [std::mem::size_of::<usize>() as f32]
    );
    assert!(
        b.kernel_cache().cache().is_empty(),
        "not cached under a key that cannot see the header"
    );
}

// ------------------------------------------- sound keys: classes 2 and 3

/// A backend for a wrapper around the real compiler that adds `extra`
/// (shell words) to every run, in a fresh source directory.
#[cfg(unix)]
fn wrapped(dir: &Path, extra: &str) -> Option<CcBackend> {
    let hooks = Hooks::new();
    let (_h, real) = backend()?;
    let real = real.compiler_path().display().to_string();
    let w = wrapper(
        dir,
        "kcache-cc-wrap",
        &format!("exec {real} {extra} \"$@\""),
    );
    let src = dir.join("src");
    fs::create_dir_all(&src).unwrap();
    backend_with(&hooks, |c| c.compiler(&w).source_dir(&src))
}

#[cfg(unix)]
#[test]
fn class2_a_system_header_edit_changes_the_key() {
    let d = tempfile::tempdir().unwrap();
    let (sys, next) = (d.path().join("sys"), d.path().join("next"));
    // The compiler lists only directories that exist.
    fs::create_dir_all(&sys).unwrap();
    fs::create_dir_all(&next).unwrap();
    let b = need!(wrapped(
        d.path(),
        &format!("-isystem {} -isystem {}", sys.display(), next.display())
    ));
    // The wrapper's directories are the compiler's own: `-v` lists them.
    write(
        &sys,
        "kc_sys.h",
        "#include_next <kc_sys.h>\n#define KC_A 1\n",
    );
    write(&next, "kc_sys.h", "#define KC_B 1\n");
    let text = "#include <kc_sys.h>\nvoid kern(float* x) { x[0] = KC_A + KC_B; }\n";
    let before = extras(&b, text, &[]);
    assert_eq!(before, extras(&b, text, &[]), "deterministic");
    write(&next, "kc_sys.h", "#define KC_B 22\n");
    let after_next = extras(&b, text, &[]);
    assert_ne!(before, after_next, "the end of the include_next chain");
    write(
        &sys,
        "kc_sys.h",
        "#include_next <kc_sys.h>\n#define KC_A 33\n",
    );
    assert_ne!(after_next, extras(&b, text, &[]), "the first of the chain");
    // Its macro names are never renamed.
    let e = b.key_extras(&k("kern", text), &[]).unwrap();
    assert!(e.macros.contains(&b"KC_A"[..]) && e.macros.contains(&b"KC_B"[..]));
}

#[cfg(unix)]
#[test]
fn class2_a_header_appearing_earlier_in_the_search_path_changes_the_key() {
    let d = tempfile::tempdir().unwrap();
    let (first, second) = (d.path().join("first"), d.path().join("second"));
    fs::create_dir_all(&first).unwrap();
    fs::create_dir_all(&second).unwrap();
    let b = need!(wrapped(
        d.path(),
        &format!("-isystem {} -isystem {}", first.display(), second.display())
    ));
    write(&second, "kc_shadow.h", "#define KC_S 1\n");
    let text = "#include <kc_shadow.h>\n";
    let before = extras(&b, text, &[]);
    write(&first, "kc_shadow.h", "#define KC_S 1\n");
    assert_ne!(before, extras(&b, text, &[]), "now found in the first");
}

#[test]
fn class2_a_header_using_the_time_is_uncacheable() {
    let (d, b) = need!(in_dir());
    write(
        d.path(),
        "stamp.h",
        "static const char* built = __TIME__;\n",
    );
    let e = b
        .key_extras(&k("kern", "#include \"stamp.h\"\n"), &[])
        .unwrap();
    assert!(e.uncacheable.unwrap().contains("__TIME__"));
    let plain = b.key_extras(&k("kern", SAXPY), &[]).unwrap();
    assert_eq!(plain.uncacheable, None);
}

#[test]
fn class2_position_macros_are_found_through_system_headers() {
    let (_d, b) = need!(in_dir());
    let e = b
        .key_extras(&k("kern", "#include <assert.h>\n"), &[])
        .unwrap();
    assert!(e.macros.contains(&b"assert"[..]));
    assert!(
        e.position_macros.contains(&b"assert"[..]),
        "through __ASSERT_FUNCTION"
    );
    assert!(!e.position_macros.contains(&b"NDEBUG"[..]));
}

#[cfg(unix)]
#[test]
fn class2_the_md_report_marks_a_compile_that_read_an_unkeyed_file_uncacheable() {
    let d = tempfile::tempdir().unwrap();
    let hidden = d.path().join("hidden.h");
    write(d.path(), "hidden.h", "#define HIDDEN 5\n");
    // Only the compile proper (the one writing kernels.so) reads the file:
    // no scan can see it, and only the compiler's own report names it.
    let (_h, real) = need!(backend());
    let real = real.compiler_path().display().to_string();
    let w = wrapper(
        d.path(),
        "kcache-cc-sneaky",
        &format!(
            "case \"$*\" in *kernels.so*) exec {real} -include {} \"$@\";; esac\nexec {real} \"$@\"",
            hidden.display()
        ),
    );
    let hooks = Hooks::new();
    let b = need!(backend_with(&hooks, |c| c.compiler(&w)));
    let kernel = [k("getv", "void getv(float* out) { out[0] = HIDDEN; }\n")];
    let c = compile(&b, &kernel, &[]).unwrap();
    let why = c
        .uncacheable
        .expect("the report names a file no key covered");
    assert!(why.contains("hidden.h"), "{why}");
    // Compiled afresh next time, so an edit is seen.
    write(d.path(), "hidden.h", "#define HIDDEN 6\n");
    let again = compile(&b, &kernel, &[]).unwrap();
    assert_eq!(
        run(&b, &again.program, "getv", vec![vec![0.0]], vec![])[0],
        [6.0]
    );
    // An ordinary compile is cacheable.
    let (_h2, plain) = need!(backend());
    assert_eq!(
        compile(&plain, &[k("saxpy", SAXPY)], &[])
            .unwrap()
            .uncacheable,
        None
    );
}

#[cfg(unix)]
#[test]
fn class3_a_link_input_edit_changes_the_key_or_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let lib = d.path().join("lib");
    fs::create_dir_all(&lib).unwrap();
    let b = need!(wrapped(d.path(), &format!("-L{}", lib.display())));
    write(&lib, "libkcfake.a", "!<arch>\n");
    let before = extras(&b, SAXPY, &["-lkcfake"]);
    assert_ne!(before, extras(&b, SAXPY, &[]), "the library is an input");
    write(&lib, "libkcfake.a", "!<arch>\nedited");
    assert_ne!(
        before,
        extras(&b, SAXPY, &["-lkcfake"]),
        "its contents count"
    );
    let e = refusal(&b, SAXPY, &["-lkcache_no_such_library"]);
    assert!(e.contains("-lkcache_no_such_library"), "{e}");
}

fn kernel(symbol: &str, text: &str, bound: &[&str], options: &[&str]) -> kcache::resolve::Kernel {
    kcache::resolve::Kernel::new(symbol, text)
        .bound(bound.iter().map(|s| s.to_string()))
        .options(options.iter().map(|s| s.to_string()))
}

/// Resolves `a` then `b` through one resolver; `b`'s answer must be what `b`
/// alone computes: `expected`.
fn resolve_pair(
    b_end: &CcBackend,
    a: kcache::resolve::Kernel,
    b: kcache::resolve::Kernel,
    expected: f32,
) {
    let _ = b_end;
    let hooks = Hooks::new();
    let backend = Arc::new(need!(
        backend_with(&hooks, |c| c.source_dir(b_end.source_dir()))
    ));
    let resolver = kcache::resolve::Resolver::with(
        Arc::clone(&backend),
        kcache::cache::code::Capacity::Fixed(1 << 24),
        &hooks,
    );
    assert_ne!(resolver.key(&a).unwrap(), resolver.key(&b).unwrap());
    resolver.resolve(std::slice::from_ref(&a)).unwrap();
    let got = resolver.resolve(std::slice::from_ref(&b)).unwrap();
    let r = &got[0];
    assert_eq!(
        run(&backend, &r.program, &r.symbol, vec![vec![0.0]], vec![])[0],
        [expected]
    );
}

#[test]
fn class3_option_header_and_predefined_macro_names_stay_unrenamed_through_the_resolver() {
    let (d, b) = need!(in_dir());
    // Renaming works where no macro is involved: the same key.
    let hooks = Hooks::new();
    let r = kcache::resolve::Resolver::with(
        Arc::new(need!(backend_with(&hooks, |c| c.source_dir(d.path())))),
        kcache::cache::code::Capacity::Fixed(1 << 20),
        &hooks,
    );
    let plain = |v: &str| {
        kernel(
            "kv",
            &format!("void kv(float* n1_x) {{ float {v} = 2.0f; n1_x[0] = {v}; }}\n"),
            &["n1_x", v],
            &[],
        )
    };
    assert_eq!(
        r.key(&plain("v1_x")).unwrap(),
        r.key(&plain("v9_x")).unwrap()
    );

    let uses = |v: &str, options: &[&str]| {
        kernel(
            "kv",
            &format!("void kv(float* n1_x) {{ n1_x[0] = {v}; }}\n"),
            &["n1_x", v],
            options,
        )
    };
    // A name an option defines.
    let opts = ["-Dv1_x=2.0f", "-Dv2_x=3.0f"];
    resolve_pair(&b, uses("v1_x", &opts), uses("v2_x", &opts), 3.0);
    // A name a header defines.
    write(d.path(), "defs.h", "#define v3_z 4.0f\n#define v4_z 5.0f\n");
    let from_header = |v: &str| {
        kernel(
            "kv",
            &format!("#include \"defs.h\"\nvoid kv(float* n1_x) {{ n1_x[0] = {v}; }}\n"),
            &["n1_x", v],
            &[],
        )
    };
    resolve_pair(&b, from_header("v3_z"), from_header("v4_z"), 5.0);
    // A name the compiler predefines (`linux`, like `i386` on 32-bit): the
    // kernel declaring it does not compile alone, so it must not be answered
    // by the one declaring an ordinary name.
    if b.target().contains("linux") {
        let declares = |v: &str| {
            kernel(
                "kv",
                &format!(
                    "static const float {v} = 9.0f;\nvoid kv(float* n1_x) {{ n1_x[0] = {v}; }}\n"
                ),
                &["n1_x", v],
                &[],
            )
        };
        let hooks = Hooks::new();
        let backend = Arc::new(need!(backend_with(&hooks, |c| c.source_dir(d.path()))));
        let r = kcache::resolve::Resolver::with(
            backend,
            kcache::cache::code::Capacity::Fixed(1 << 20),
            &hooks,
        );
        let (ordinary, predefined) = (declares("v7_r"), declares("linux"));
        assert_ne!(r.key(&ordinary).unwrap(), r.key(&predefined).unwrap());
        r.resolve(std::slice::from_ref(&ordinary)).unwrap();
        assert!(r.resolve(std::slice::from_ref(&predefined)).is_err());
    }
}

#[cfg(unix)]
#[test]
fn class2_a_computed_include_in_a_system_header_is_uncacheable_not_refused() {
    let d = tempfile::tempdir().unwrap();
    let sys = d.path().join("sys");
    fs::create_dir_all(&sys).unwrap();
    let b = need!(wrapped(d.path(), &format!("-isystem {}", sys.display())));
    write(
        &sys,
        "kc_computed.h",
        "#define KC_H <stddef.h>\n#include KC_H\n",
    );
    let e = b
        .key_extras(&k("kern", "#include <kc_computed.h>\n"), &[])
        .unwrap();
    let why = e.uncacheable.expect("kcache cannot follow it");
    assert!(why.contains("KC_H"), "{why}");
    // The same directive in the user's own header is refused, as before.
    let (ud, ub) = need!(in_dir());
    write(
        ud.path(),
        "mine.h",
        "#define KC_H <stddef.h>\n#include KC_H\n",
    );
    refusal(&ub, "#include \"mine.h\"\n", &[]);
}

#[test]
fn class3_an_option_using_the_time_is_uncacheable() {
    let (_d, b) = need!(in_dir());
    let e = b
        .key_extras(&k("kern", SAXPY), &opts(&["-DSTAMP=__DATE__"]))
        .unwrap();
    assert!(e.uncacheable.unwrap().contains("__DATE__"));
}

#[cfg(unix)]
#[test]
fn class2_a_system_header_edited_between_two_resolves_is_compiled_afresh() {
    let d = tempfile::tempdir().unwrap();
    let sys = d.path().join("sys");
    fs::create_dir_all(&sys).unwrap();
    let b = need!(wrapped(d.path(), &format!("-isystem {}", sys.display())));
    let hooks = Hooks::new();
    let r = kcache::resolve::Resolver::with(
        Arc::new(b),
        kcache::cache::code::Capacity::Fixed(1 << 20),
        &hooks,
    );
    let kv = kernel(
        "kv",
        "#include <kc_value.h>\nvoid kv(float* n1_x) { n1_x[0] = KC_V; }\n",
        &["n1_x"],
        &[],
    );
    let value = |r: &kcache::resolve::Resolver<CcBackend>| {
        let got = r.resolve(std::slice::from_ref(&kv)).unwrap();
        run(
            r.backend(),
            &got[0].program,
            &got[0].symbol,
            vec![vec![0.0]],
            vec![],
        )[0][0]
    };
    write(&sys, "kc_value.h", "#define KC_V 1.0f\n");
    assert_eq!(value(&r), 1.0);
    assert_eq!(value(&r), 1.0, "a hit");
    // Same size, same second: only the contents differ.
    write(&sys, "kc_value.h", "#define KC_V 2.0f\n");
    assert_eq!(value(&r), 2.0);
}

/// An uncacheable group (`__TIME__`) must be compiled anew every time: the
/// handle cache would otherwise answer the second compile with the first's
/// program, whose time is stale.
#[test]
fn a_fresh_job_is_never_answered_from_the_handle_cache() {
    let (_d, b) = need!(in_dir());
    let kernels = [k("saxpy", SAXPY)];
    let job = |fresh| CompileJob {
        kernels: &kernels,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh,
    };
    let cached = b.compile(&job(false)).unwrap();
    let again = b.compile(&job(false)).unwrap();
    assert!(
        Arc::ptr_eq(&cached.program, &again.program),
        "the handle cache answers a repeat"
    );
    let fresh = b.compile(&job(true)).unwrap();
    assert!(
        !Arc::ptr_eq(&cached.program, &fresh.program),
        "a fresh job is compiled anew"
    );
    let fresh_again = b.compile(&job(true)).unwrap();
    assert!(
        !Arc::ptr_eq(&fresh.program, &fresh_again.program),
        "and kept nowhere"
    );
}

// ------------------------------------------------------ identity cache

/// A wrapper around the real compiler that logs each run's arguments, a
/// cache directory for its identity, and the log.
#[cfg(unix)]
struct Logged {
    dir: tempfile::TempDir,
    compiler: std::path::PathBuf,
    cache: std::path::PathBuf,
    log: std::path::PathBuf,
}

#[cfg(unix)]
impl Logged {
    fn new() -> Option<Logged> {
        let (_h, b) = backend()?;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs.log");
        let real = b.compiler_path().display().to_string();
        let compiler = wrapper(
            dir.path(),
            "logged-cc",
            &format!("echo \"$*\" >> '{}'\nexec {real} \"$@\"", log.display()),
        );
        let cache = dir.path().join("compilers");
        Some(Logged {
            dir,
            compiler,
            cache,
            log,
        })
    }

    fn build(&self) -> CcBackend {
        let hooks = Hooks::new();
        backend_with(&hooks, |c| {
            c.compiler_path(&self.compiler).identity_cache(&self.cache)
        })
        .expect("the real compiler ran a moment ago")
    }

    /// How many runs so far were `--version` probes.
    fn version_probes(&self) -> usize {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.trim() == "--version")
            .count()
    }

    /// The kept identity files (not the executable's digest, kept beside
    /// them once the executable is old enough to be trusted by its stat).
    fn identity_files(&self) -> Vec<std::path::PathBuf> {
        fs::read_dir(&self.cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("exe-"))
            .collect()
    }

    fn runs(&self) -> usize {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .count()
    }
}

#[cfg(unix)]
#[test]
fn a_second_backend_with_the_same_compiler_runs_no_probe() {
    let l = need!(Logged::new());
    let first = l.build();
    assert_eq!(l.version_probes(), 1);
    let runs = l.runs();
    assert!(runs >= 3, "the first construction probes: {runs} runs");
    let second = l.build();
    assert_eq!(l.runs(), runs, "the second construction ran the compiler");
    assert_eq!(first.identity(), second.identity());
    assert_eq!(first.version(), second.version());
    // The cached identity still compiles and runs.
    let c = compile(&second, &group(), &[]).unwrap();
    check_group(&second, &c.program);
}

#[cfg(unix)]
#[test]
fn the_identity_cache_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let l = need!(Logged::new());
    l.build();
    let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&l.cache), 0o700);
    let files: Vec<_> = fs::read_dir(&l.cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The identity, and the executable's digest once it is old enough to
    // be kept by its stat.
    assert_eq!(l.identity_files().len(), 1, "{files:?}");
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
}

#[cfg(unix)]
#[test]
fn touching_the_compiler_probes_again() {
    let l = need!(Logged::new());
    l.build();
    assert_eq!(l.version_probes(), 1);
    let later =
        fs::metadata(&l.compiler).unwrap().modified().unwrap() + std::time::Duration::from_secs(10);
    fs::File::options()
        .write(true)
        .open(&l.compiler)
        .unwrap()
        .set_modified(later)
        .unwrap();
    l.build();
    assert_eq!(l.version_probes(), 2, "a touched compiler was not probed");
    l.build();
    assert_eq!(l.version_probes(), 2, "and the new probe is kept");
}

#[cfg(unix)]
#[test]
fn a_damaged_identity_cache_file_is_ignored() {
    let l = need!(Logged::new());
    let first = l.build();
    let files = l.identity_files();
    assert_eq!(files.len(), 1);
    for damage in [&b"{not json"[..], b"", b"{\"format\":999}"] {
        fs::write(&files[0], damage).unwrap();
        let again = l.build();
        assert_eq!(again.identity(), first.identity());
    }
    assert_eq!(l.version_probes(), 4, "each damaged file meant a probe");
    // A file replaced by a symbolic link is not followed.
    let elsewhere = l.dir.path().join("elsewhere");
    fs::copy(&files[0], &elsewhere).unwrap();
    fs::remove_file(&files[0]).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &files[0]).unwrap();
    l.build();
    assert_eq!(l.version_probes(), 5, "a linked cache file was followed");
}

#[cfg(unix)]
#[test]
fn an_include_directory_changed_since_the_probe_probes_again() {
    let l = need!(Logged::new());
    l.build();
    let file = l.identity_files().remove(0);
    // Point the cached search list at a directory that then changes.
    let text = fs::read_to_string(&file).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let fake = l.dir.path().join("inc");
    fs::create_dir(&fake).unwrap();
    let stat = {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(&fake).unwrap();
        serde_json::json!([
            m.dev() as i64,
            m.ino() as i64,
            m.size() as i64,
            m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            m.ctime() * 1_000_000_000 + m.ctime_nsec(),
            m.mode() as i64
        ])
    };
    v["probed"]["include_dirs"] = serde_json::json!([fake]);
    v["dir_stats"] = serde_json::json!([stat]);
    fs::write(&file, v.to_string()).unwrap();
    let b = l.build();
    assert_eq!(l.version_probes(), 1, "an unchanged directory is trusted");
    drop(b);
    fs::write(fake.join("new.h"), "").unwrap();
    l.build();
    assert_eq!(l.version_probes(), 2, "a changed directory was not noticed");
}

/// Runs `kcache compile` of one kernel with `cc` as the compiler, the
/// store (and its `compilers` folder) in `store`, plus `env`.
#[cfg(unix)]
fn cli_compile(cc: &Path, store: &Path, env: &[(&str, &str)]) {
    let dir = store.parent().unwrap();
    let k = dir.join("k.c");
    fs::write(&k, SAXPY).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kcache"))
        .arg("compile")
        .arg(&k)
        .arg("--dir")
        .arg(store)
        .env("CC", cc)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn the_cli_keeps_the_identity_and_a_pinned_variable_probes_again() {
    let l = need!(Logged::new());
    let store = l.dir.path().join("store");
    cli_compile(&l.compiler, &store, &[]);
    assert_eq!(l.version_probes(), 1);
    assert!(store.join("compilers").is_dir());
    cli_compile(&l.compiler, &store, &[]);
    assert_eq!(l.version_probes(), 1, "a second process probed again");
    cli_compile(&l.compiler, &store, &[("SOURCE_DATE_EPOCH", "1")]);
    assert_eq!(
        l.version_probes(),
        2,
        "a changed pinned variable was not seen"
    );
    cli_compile(&l.compiler, &store, &[("SOURCE_DATE_EPOCH", "1")]);
    assert_eq!(l.version_probes(), 2);
}

#[test]
fn a_keys_only_backend_keys_with_an_identity_of_its_own_and_refuses_to_compile() {
    let hooks = Hooks::new();
    let full = need!(backend_with(&hooks, |b| b));
    let keys = need!(backend_with(&hooks, |b| b.keys_only()));
    assert_ne!(keys.identity(), full.identity());
    let extras = keys.key_extras(&k("saxpy", SAXPY), &[]).unwrap();
    assert!(extras.uncacheable.is_none());
    let err = compile(&keys, &[k("saxpy", SAXPY)], &[]).err().unwrap();
    assert!(matches!(err, BackendError::Refused { .. }), "{err}");
}

#[test]
fn a_debug_flag_among_the_default_flags_records_names_as_an_option_does() {
    let hooks = Hooks::new();
    let Some(plain) = backend_with(&hooks, |b| b) else {
        return;
    };
    let Some(debug) = backend_with(&hooks, |b| b.default_flags(["-O2", "-g"])) else {
        return;
    };
    let kernel = k("k", "void k(float* y) { float acc = 1; y[0] = acc; }");
    let extras = |b: &CcBackend, o: &[&str]| b.key_extras(&kernel, &opts(o)).unwrap();
    assert_eq!(extras(&plain, &[]).records_names, None);
    assert!(extras(&plain, &["-ggdb"]).records_names.is_some());
    assert!(extras(&debug, &[]).records_names.is_some());
}
