//! The GPU backends against real drivers: each compiles a group of kernels
//! under an option list, runs them on real data (where it can run here),
//! reloads the program from its bytes in a new backend instance and in a
//! fresh process, and reports compile failures with the compiler's log.
//!
//! A backend whose library is missing prints why and skips, unless its name
//! is listed in `KCACHE_TEST_REQUIRE` (comma-separated: `opencl`, `cuda`,
//! `vulkan`), which CI sets so that a missing library fails instead of
//! silently skipping. CUDA launches skip cleanly without a GPU whatever the
//! setting (`cuda-launch` in the list makes them required too, for
//! `scripts/gpu-check`).

mod backend_support;

use std::path::Path;

use backend_support::{available, required};
use kcache::backend::{
    Backend, BackendError, BackendInfo, CompileJob, Compiled, KernelSource, Launch,
};

fn job<'a>(kernels: &'a [KernelSource<'a>], options: &'a [String]) -> CompileJob<'a> {
    CompileJob {
        kernels,
        options,
        group: 0,
        n_groups: 1,
        fresh: false,
    }
}

fn options(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Runs the `#[ignore]`d test `name` of this test binary in a fresh process,
/// with `KCACHE_TEST_CHILD_BINARY` naming `binary`, and fails with its output
/// unless it passed.
fn run_in_fresh_process(name: &str, binary: &Path) {
    backend_support::run_in_fresh_process(name, "KCACHE_TEST_CHILD_BINARY", binary);
}

/// The binary a parent test handed to this process (see
/// [`run_in_fresh_process`]).
fn child_binary() -> Vec<u8> {
    let path = std::env::var_os("KCACHE_TEST_CHILD_BINARY")
        .expect("run by run_in_fresh_process, which sets KCACHE_TEST_CHILD_BINARY");
    std::fs::read(path).expect("read the parent's binary")
}

fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Inputs shared by every backend's kernels: `x[i] = i`, `y[i] = 2i + 1`.
fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n).map(|i| i as f32).collect();
    let y = (0..n).map(|i| 2.0 * i as f32 + 1.0).collect();
    (x, y)
}

/// `saxpy(y, x, n, a)`: `y = a*x + y` for `i < n`.
fn want_saxpy(x: &[f32], y: &[f32], n: usize, a: i32) -> Vec<f32> {
    y.iter()
        .enumerate()
        .map(|(i, &yi)| if i < n { a as f32 * x[i] + yi } else { yi })
        .collect()
}

/// `scale(y, n)`: `y *= FACTOR` for `i < n`, FACTOR from the options.
fn want_scale(y: &[f32], n: usize, factor: f32) -> Vec<f32> {
    y.iter()
        .enumerate()
        .map(|(i, &yi)| if i < n { yi * factor } else { yi })
        .collect()
}

/// `square(x, n)`: `x = x*x` for `i < n`.
fn want_square(x: &[f32], n: usize) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &xi)| if i < n { xi * xi } else { xi })
        .collect()
}

/// Runs the three kernels of the shared group (`saxpy`, `scale`, `square`,
/// each backend writing them in its language) and checks their results.
/// `n` is smaller than the buffers, so the bound each kernel guards is
/// checked too.
fn run_group<B: Backend>(backend: &B, program: &B::Program, factor: f32) {
    let (x, y) = inputs(1000);
    let n = 997;

    let mut launch = Launch {
        buffers: vec![y.clone(), x.clone()],
        scalars: vec![n as i32, 3],
        global: [n, 1, 1],
        local: [1, 1, 1],
    };
    backend.launch(program, "saxpy", &mut launch).unwrap();
    assert_close(&launch.buffers[0], &want_saxpy(&x, &y, n, 3));
    assert_close(&launch.buffers[1], &x);

    let mut launch = Launch {
        buffers: vec![y.clone()],
        scalars: vec![n as i32],
        global: [n, 0, 0],
        local: [64, 1, 1],
    };
    backend.launch(program, "scale", &mut launch).unwrap();
    assert_close(&launch.buffers[0], &want_scale(&y, n, factor));

    let mut launch = Launch {
        buffers: vec![x.clone()],
        scalars: vec![n as i32],
        global: [n, 1, 1],
        local: [1, 1, 1],
    };
    backend.launch(program, "square", &mut launch).unwrap();
    assert_close(&launch.buffers[0], &want_square(&x, n));
}

/// A failed compile names every kernel of the group and carries the
/// compiler's log, which names the kernel at fault.
fn assert_compile_error(err: BackendError, family: &str, kernels: &[&str], culprit: &str) {
    match err {
        BackendError::Compile {
            backend,
            kernels: names,
            log,
        } => {
            assert_eq!(backend, family);
            assert_eq!(names, kernels);
            assert!(
                log.contains(culprit),
                "the log does not name `{culprit}`:\n{log}"
            );
            assert!(
                log.to_lowercase().contains("error"),
                "the log carries no diagnostic:\n{log}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// The kernels of the shared group, in order.
const SYMBOLS: [&str; 3] = ["saxpy", "scale", "square"];

/// The shared group from one backend's texts of `saxpy`, `scale`, `square`.
fn group(texts: [&'static str; 3]) -> [KernelSource<'static>; 3] {
    [0, 1, 2].map(|i| KernelSource {
        symbol: SYMBOLS[i],
        text: texts[i],
    })
}

/// Compiles the shared group with `FACTOR` defined as `factor` (a float
/// literal every language reads, e.g. `3.0f`).
fn compile_group<B: Backend>(
    backend: &B,
    texts: [&'static str; 3],
    factor: &str,
) -> Compiled<B::Program> {
    let kernels = group(texts);
    let opts = options(&[&format!("-DFACTOR={factor}")]);
    backend.compile(&job(&kernels, &opts)).unwrap()
}

/// The probe names the backend and is available exactly when the
/// constructor succeeds; available, it lists devices and a version;
/// unavailable, it says why.
fn check_probe(info: BackendInfo, family: &str, constructed: bool) {
    assert_eq!(info.backend, family);
    assert_eq!(info.available, constructed, "{info:?}");
    if info.available {
        assert!(
            !info.devices.is_empty() && info.version.is_some(),
            "{info:?}"
        );
    } else {
        assert!(info.reason.is_some(), "{info:?}");
    }
}

/// Compiles, drops the backend, and runs the program a new instance loads.
fn check_new_instance_runs<B: Backend>(make: impl Fn() -> Option<B>, texts: [&'static str; 3]) {
    let Some(backend) = make() else { return };
    let compiled = compile_group(&backend, texts, "3.0f");
    drop(backend);
    let fresh = make().expect("available a moment ago");
    let program = fresh.load(&compiled.binary, &SYMBOLS).unwrap();
    run_group(&fresh, &program, 3.0);
}

/// Compiles, and has a fresh process load the binary and run it (the
/// `child` test of the backend's module).
fn check_fresh_process_runs<B: Backend>(backend: Option<B>, texts: [&'static str; 3], child: &str) {
    let Some(backend) = backend else { return };
    let compiled = compile_group(&backend, texts, "3.0f");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("program.bin");
    std::fs::write(&path, &compiled.binary).unwrap();
    run_in_fresh_process(child, &path);
}

/// The child half of [`check_fresh_process_runs`].
fn child_runs<B: Backend>(backend: B) {
    let program = backend.load(&child_binary(), &SYMBOLS).unwrap();
    run_group(&backend, &program, 3.0);
}

/// A load asking for an absent kernel names it; bytes that are not a
/// program, or are cut short, are a load error, never a panic.
fn check_bad_loads<B: Backend>(
    backend: Option<B>,
    texts: [&'static str; 3],
) -> Option<(B, Vec<u8>)> {
    let backend = backend?;
    let binary = compile_group(&backend, texts, "1.0f").binary;
    let Err(err) = backend.load(&binary, &["saxpy", "nope"]) else {
        panic!("loaded a program without its kernel `nope`");
    };
    assert!(
        matches!(err, BackendError::MissingSymbol { ref symbol, .. } if symbol == "nope"),
        "{err:?}"
    );
    for bad in [
        &b"not a program binary"[..],
        &[],
        &binary[..binary.len() / 2],
    ] {
        let Err(err) = backend.load(bad, &["saxpy"]) else {
            panic!("loaded {} bytes that are not a program", bad.len());
        };
        assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
    }
    Some((backend, binary))
}

/// Groups compiled from several threads at once (as the resolver compiles a
/// split batch) each get their own program: where the backend runs here,
/// each program and the program loaded from its bytes give their own
/// results; where it cannot, the bytes are those a sequential compile gives.
/// (PoCL's program binaries are not reproducible byte for byte: they carry
/// what its own cache had already built.)
fn check_concurrent_compiles<B: Backend>(backend: Option<B>, texts: [&'static str; 3]) {
    let Some(backend) = backend else { return };
    let factors = ["1.0f", "2.0f", "3.0f", "4.0f"];
    let binaries: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let handles: Vec<_> = factors
            .iter()
            .enumerate()
            .map(|(i, factor)| {
                let backend = &backend;
                scope.spawn(move || {
                    let compiled = compile_group(backend, texts, factor);
                    if backend.can_run() {
                        run_group(backend, &compiled.program, (i + 1) as f32);
                    }
                    compiled.binary
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Compile afresh below, not from the backend's handle cache.
    backend.clear_cache().unwrap();
    for (i, (factor, binary)) in factors.iter().zip(&binaries).enumerate() {
        if backend.can_run() {
            let program = backend.load(binary, &SYMBOLS).unwrap();
            run_group(&backend, &program, (i + 1) as f32);
        } else {
            let sequential = compile_group(&backend, texts, factor).binary;
            assert!(
                binary == &sequential,
                "FACTOR={factor}: the concurrent compile gave other bytes"
            );
        }
    }
}

/// A program's bytes with any one byte flipped, or the last one dropped, are
/// refused as a load error before a driver parses them (PoCL aborts the
/// process on a truncated binary).
fn check_damage_is_refused<B: Backend>(backend: &B, binary: &[u8]) {
    let step = (binary.len() / 64).max(1);
    for at in (0..binary.len()).step_by(step).chain([binary.len() - 1]) {
        let mut damaged = binary.to_vec();
        damaged[at] ^= 0x40;
        let Err(err) = backend.load(&damaged, &["saxpy"]) else {
            panic!("loaded bytes damaged at {at}");
        };
        assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
    }
    let Err(err) = backend.load(&binary[..binary.len() - 1], &["saxpy"]) else {
        panic!("loaded a truncated program");
    };
    assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
}

/// A launch whose arguments do not match the kernel, or of an absent
/// kernel, is refused.
fn check_bad_launches<B: Backend>(backend: Option<B>, texts: [&'static str; 3]) {
    let Some(backend) = backend else { return };
    let compiled = compile_group(&backend, texts, "1.0f");
    let mut launch = Launch {
        buffers: vec![vec![1.0; 4]],
        scalars: vec![],
        global: [4, 1, 1],
        local: [1, 1, 1],
    };
    let err = backend
        .launch(&compiled.program, "square", &mut launch)
        .unwrap_err();
    assert!(matches!(err, BackendError::Launch { .. }), "{err:?}");
    let err = backend
        .launch(&compiled.program, "absent", &mut launch)
        .unwrap_err();
    assert!(matches!(err, BackendError::MissingSymbol { .. }), "{err:?}");
}

/// A group with a broken kernel fails as a whole: the error names every
/// kernel of the group, and the log names the broken one.
fn check_compile_error<B: Backend>(
    backend: Option<B>,
    square: &'static str,
    broken: &'static str,
) -> Option<String> {
    let backend = backend?;
    let kernels = [
        KernelSource {
            symbol: "square",
            text: square,
        },
        KernelSource {
            symbol: "broken",
            text: broken,
        },
    ];
    let err = backend.compile(&job(&kernels, &[])).unwrap_err();
    let log = match &err {
        BackendError::Compile { log, .. } => log.clone(),
        _ => String::new(),
    };
    assert_compile_error(err, backend.family(), &["square", "broken"], "broken");
    Some(log)
}

/// A header in the process's working directory, where PoCL and NVRTC look
/// for a kernel's quoted includes first; removed on drop.
struct CwdHeader(std::path::PathBuf);

impl CwdHeader {
    fn new(tag: &str, text: &str) -> CwdHeader {
        let name = format!("kcache_cwd_{tag}_{}.h", std::process::id());
        let h = CwdHeader(std::env::current_dir().unwrap().join(name));
        h.write(text);
        h
    }

    fn name(&self) -> String {
        self.0.file_name().unwrap().to_string_lossy().into_owned()
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).unwrap();
    }
}

impl Drop for CwdHeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `class2`: a header in the driver's working directory is keyed by its
/// contents, and the compile reads that very file. Returns the program
/// compiled from the first version.
fn check_a_cwd_header_changes_the_key<B: Backend>(
    backend: &B,
    header: &CwdHeader,
    symbol: &str,
    text: &str,
) -> Compiled<B::Program> {
    let kernel = KernelSource { symbol, text };
    let before = backend.key_extras(&kernel, &[]).unwrap();
    assert_eq!(before, backend.key_extras(&kernel, &[]).unwrap());
    assert!(
        before.macros.contains(&b"FACTOR"[..]),
        "the header's macro is never renamed"
    );
    let compiled = backend
        .compile(&job(std::slice::from_ref(&kernel), &[]))
        .expect("the driver finds the header in its working directory");
    header.write("#define FACTOR 7.0f\n");
    let after = backend.key_extras(&kernel, &[]).unwrap();
    assert_ne!(before.digests, after.digests, "its contents are keyed");
    compiled
}

mod opencl {
    use super::*;
    use kcache::backend::opencl::{probe, OpenCl, OpenClConfig};

    const TEXTS: [&str; 3] = [
        "__kernel void saxpy(__global float* y, __global const float* x, int n, int a) {
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}",
        "__kernel void scale(__global float* y, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] *= FACTOR;
}",
        "__kernel void square(__global float* x, int n) {
    int i = get_global_id(0);
    if (i < n) x[i] = x[i] * x[i];
}",
    ];

    fn backend() -> Option<OpenCl> {
        available("opencl", OpenCl::new(&OpenClConfig::default()))
    }

    #[test]
    fn probe_agrees_with_the_constructor() {
        check_probe(
            probe(),
            "opencl",
            OpenCl::new(&OpenClConfig::default()).is_ok(),
        );
    }

    #[test]
    fn a_group_compiles_into_one_program_and_each_kernel_runs() {
        let Some(cl) = backend() else { return };
        let kernels = group(TEXTS);
        let opts = options(&["-DFACTOR=3.0f", "-cl-mad-enable"]);
        let compiled = cl.compile(&job(&kernels, &opts)).unwrap();
        assert!(!compiled.binary.is_empty());
        run_group(&cl, &compiled.program, 3.0);
    }

    #[test]
    fn options_reach_the_compiler() {
        let Some(cl) = backend() else { return };
        let compiled = compile_group(&cl, TEXTS, "0.5f");
        run_group(&cl, &compiled.program, 0.5);
    }

    #[test]
    fn a_new_instance_loads_the_binary_and_runs_it() {
        check_new_instance_runs(backend, TEXTS);
    }

    #[test]
    fn groups_compile_concurrently() {
        check_concurrent_compiles(backend(), TEXTS);
    }

    #[test]
    fn a_fresh_process_loads_the_binary_and_runs_it() {
        check_fresh_process_runs(backend(), TEXTS, "opencl::child");
    }

    /// The fresh-process half of the test above; run only by it.
    #[test]
    #[ignore = "run in a fresh process by a_fresh_process_loads_the_binary_and_runs_it"]
    fn child() {
        child_runs(OpenCl::new(&OpenClConfig::default()).unwrap());
    }

    /// The GPU backends share this handle cache (`gpu::Lifecycle`): a program
    /// neither a caller nor a `Compiled` holds is let go as the cache grows,
    /// and one a caller holds stays the cached one.
    #[test]
    fn the_handle_cache_lets_go_of_programs_no_one_holds() {
        use kcache::cache::guarded::SWEEP_MIN;
        let Some(cl) = backend() else { return };
        let text = |i: usize| format!("__kernel void k(__global float* y) {{ y[0] = {i}.0f; }}");
        let compile = |text: &str| {
            let kernels = [KernelSource { symbol: "k", text }];
            cl.compile(&job(&kernels, &[])).unwrap().program
        };
        let first = compile(&text(0));
        let n = 2 * SWEEP_MIN + 8;
        for i in 1..n {
            drop(compile(&text(i)));
        }
        let cached = cl.kernel_cache().cache().len();
        assert!(
            cached <= 2 * SWEEP_MIN + 1,
            "{cached} of {n} programs cached"
        );
        assert!(std::sync::Arc::ptr_eq(&first, &compile(&text(0))));
    }

    /// The GPU backends' shared lifecycle compiles a fresh job (a group
    /// holding an uncacheable kernel) anew, and keeps it nowhere.
    #[test]
    fn a_fresh_job_is_never_answered_from_the_handle_cache() {
        let Some(cl) = backend() else { return };
        let kernels = [KernelSource {
            symbol: "saxpy",
            text: TEXTS[0],
        }];
        let fresh = CompileJob {
            fresh: true,
            ..job(&kernels, &[])
        };
        let cached = cl.compile(&job(&kernels, &[])).unwrap().program;
        assert!(std::sync::Arc::ptr_eq(
            &cached,
            &cl.compile(&job(&kernels, &[])).unwrap().program
        ));
        let first = cl.compile(&fresh).unwrap().program;
        assert!(
            !std::sync::Arc::ptr_eq(&cached, &first),
            "a fresh job is compiled anew"
        );
        let second = cl.compile(&fresh).unwrap().program;
        assert!(!std::sync::Arc::ptr_eq(&first, &second), "and kept nowhere");
    }

    #[test]
    fn a_compile_error_names_the_group_and_carries_the_build_log() {
        let broken = "__kernel void broken(__global float* x) { x[0] = undeclared_name; }";
        check_compile_error(backend(), TEXTS[2], broken);
    }

    #[test]
    fn loading_reports_missing_symbols_and_bad_bytes() {
        if let Some((cl, binary)) = check_bad_loads(backend(), TEXTS) {
            check_damage_is_refused(&cl, &binary);
        }
    }

    #[test]
    fn a_launch_with_the_wrong_arguments_is_refused() {
        check_bad_launches(backend(), TEXTS);
    }

    #[test]
    fn class2_a_header_in_the_drivers_cwd_changes_the_key() {
        let Some(cl) = backend() else { return };
        let h = CwdHeader::new("cl", "#define FACTOR 3.0f\n");
        let text = format!(
            "#include \"{}\"\n__kernel void scale(__global float* y, int n) {{\n\
             int i = get_global_id(0);\n if (i < n) y[i] *= FACTOR;\n}}",
            h.name()
        );
        let compiled = check_a_cwd_header_changes_the_key(&cl, &h, "scale", &text);
        let mut launch = Launch {
            buffers: vec![vec![2.0]],
            scalars: vec![1],
            global: [1, 1, 1],
            local: [1, 1, 1],
        };
        cl.launch(&compiled.program, "scale", &mut launch).unwrap();
        assert_close(&launch.buffers[0], &[6.0]);
    }

    #[test]
    fn identity_names_the_device_and_driver() {
        let Some(cl) = backend() else { return };
        assert!(
            cl.identity().contains(cl.device().unwrap().name()),
            "{}",
            cl.identity()
        );
        assert!(cl.identity().contains("driver="), "{}", cl.identity());
    }
}

mod cuda {
    use super::*;
    use kcache::backend::cuda::{probe, Cuda, CudaConfig, CudaTarget};

    const TEXTS: [&str; 3] = [
        r#"extern "C" __global__ void saxpy(float* y, const float* x, int n, int a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#,
        r#"extern "C" __global__ void scale(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= FACTOR;
}"#,
        r#"extern "C" __global__ void square(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i];
}"#,
    ];

    fn backend(config: &CudaConfig) -> Option<Cuda> {
        available("cuda", Cuda::new(config))
    }

    fn default() -> Option<Cuda> {
        backend(&CudaConfig::default())
    }

    /// A backend that can launch, or `None` after saying why not (failing
    /// where `cuda-launch` is required).
    fn runner() -> Option<Cuda> {
        let cuda = default()?;
        if cuda.can_run() {
            return Some(cuda);
        }
        let reason = cuda.no_device_reason().unwrap_or("no device").to_string();
        assert!(
            !required("cuda-launch"),
            "CUDA launches are required here: {reason}"
        );
        eprintln!("skipped: CUDA launch: {reason}");
        None
    }

    fn compile_only(arch: &str, target: CudaTarget) -> Option<Cuda> {
        backend(&CudaConfig {
            arch: Some(arch.into()),
            target,
            compile_only: true,
            ..CudaConfig::default()
        })
    }

    #[test]
    fn probe_agrees_with_the_constructor() {
        let info = probe();
        assert_eq!(info.backend, "cuda");
        let cuda = Cuda::new(&CudaConfig::default());
        assert_eq!(info.available, cuda.is_ok(), "{info:?}");
        match cuda {
            Ok(cuda) => {
                let version = info.version.clone().unwrap();
                assert!(version.contains(&cuda.nvrtc_version()), "{info:?}");
                // Compile only exactly when the probe gives a reason.
                assert_eq!(cuda.can_run(), info.reason.is_none(), "{info:?}");
                assert_eq!(cuda.can_run(), !info.devices.is_empty(), "{info:?}");
            }
            Err(_) => assert!(info.reason.is_some(), "{info:?}"),
        }
    }

    #[test]
    fn a_group_compiles_to_one_cubin() {
        let Some(cuda) = default() else { return };
        let kernels = group(TEXTS);
        let opts = options(&["-DFACTOR=3.0f", "--use_fast_math"]);
        let compiled = cuda.compile(&job(&kernels, &opts)).unwrap();
        assert!(compiled.binary.starts_with(b"\x7fELF"), "not a cubin");
        assert_eq!(compiled.program.symbols(), SYMBOLS);
        assert_eq!(compiled.program.is_loaded(), cuda.can_run());
        // Every kernel of the group is in the one image.
        for symbol in SYMBOLS {
            let found = compiled
                .binary
                .windows(symbol.len())
                .any(|w| w == symbol.as_bytes());
            assert!(found, "no `{symbol}` in the cubin");
        }
    }

    #[test]
    fn ptx_is_text_for_the_virtual_architecture() {
        let Some(cuda) = compile_only("sm_80", CudaTarget::Ptx) else {
            return;
        };
        let compiled = compile_group(&cuda, TEXTS, "3.0f");
        let ptx = std::str::from_utf8(&compiled.binary).unwrap();
        assert!(ptx.contains(".target sm_80"), "{ptx}");
        assert!(ptx.contains(".entry saxpy") && ptx.contains(".entry square"));
        assert!(!ptx.contains('\0'));
        let program = cuda.load(&compiled.binary, &["saxpy"]).unwrap();
        assert_eq!(program.symbols(), ["saxpy"]);
    }

    #[test]
    fn the_architecture_and_target_are_in_the_identity_and_decide_the_bytes() {
        let Some(sm80) = compile_only("sm_80", CudaTarget::Cubin) else {
            return;
        };
        let sm90 = compile_only("sm_90", CudaTarget::Cubin).unwrap();
        let ptx80 = compile_only("sm_80", CudaTarget::Ptx).unwrap();
        assert!(sm80.identity().contains("sm_80"), "{}", sm80.identity());
        assert!(sm80.identity().contains(&sm80.nvrtc_version()));
        assert_ne!(sm80.identity(), sm90.identity());
        assert_ne!(sm80.identity(), ptx80.identity());
        let spelled = compile_only("80", CudaTarget::Cubin).unwrap();
        assert_eq!(sm80.identity(), spelled.identity());

        let a = compile_group(&sm80, TEXTS, "3.0f").binary;
        let b = compile_group(&sm90, TEXTS, "3.0f").binary;
        assert_ne!(a, b, "sm_80 and sm_90 compiled to the same cubin");
        // Same inputs, same bytes: what makes a persisted binary reusable
        // (compiled again, not answered from the handle cache).
        sm80.clear_cache().unwrap();
        assert_eq!(a, compile_group(&sm80, TEXTS, "3.0f").binary);
    }

    #[test]
    fn a_program_without_the_kernel_asked_for_is_refused_even_compile_only() {
        for target in [CudaTarget::Cubin, CudaTarget::Ptx] {
            let Some(cuda) = compile_only("sm_80", target) else {
                return;
            };
            let kernels = [KernelSource {
                symbol: "nonexistent",
                text: TEXTS[2],
            }];
            let err = cuda.compile(&job(&kernels, &[])).unwrap_err();
            assert!(
                matches!(&err, BackendError::Compile { log, .. } if log.contains("nonexistent")),
                "{target:?}: {err}"
            );
            let compiled = compile_group(&cuda, TEXTS, "3.0f");
            let err = cuda.load(&compiled.binary, &["nonexistent"]).unwrap_err();
            assert!(
                matches!(&err, BackendError::MissingSymbol { symbol, .. } if symbol == "nonexistent"),
                "{target:?}: {err}"
            );
            assert!(
                cuda.load(&compiled.binary, &["square"]).is_ok(),
                "{target:?}"
            );
        }
    }

    #[test]
    fn groups_compile_concurrently() {
        check_concurrent_compiles(default(), TEXTS);
    }

    #[test]
    fn a_compile_error_names_the_group_and_carries_nvrtcs_log() {
        let broken = r#"extern "C" __global__ void broken(float* x) { x[0] = undeclared_name; }"#;
        check_compile_error(default(), TEXTS[2], broken);
    }

    #[test]
    fn architecture_options_and_unknown_architectures_are_refused() {
        let Some(cuda) = default() else { return };
        let kernels = group(TEXTS);
        let err = cuda
            .compile(&job(&kernels, &options(&["-arch=sm_70"])))
            .unwrap_err();
        assert!(
            matches!(err, BackendError::Compile { ref log, .. } if log.contains("CudaConfig::arch")),
            "{err:?}"
        );
        for arch in ["sm_10", "not_an_arch"] {
            let config = CudaConfig {
                arch: Some(arch.into()),
                ..CudaConfig::default()
            };
            let err = Cuda::new(&config).unwrap_err();
            assert!(
                matches!(err, BackendError::Unavailable { ref reason, .. } if reason.contains(arch)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn a_new_instance_loads_the_binary() {
        let Some(cuda) = default() else { return };
        let compiled = compile_group(&cuda, TEXTS, "3.0f");
        drop(cuda);
        let fresh = default().unwrap();
        let program = fresh.load(&compiled.binary, &SYMBOLS).unwrap();
        assert_eq!(program.is_loaded(), fresh.can_run());
        assert_eq!(program.symbols(), SYMBOLS);

        if fresh.can_run() {
            let err = fresh.load(b"\x7fELF but not a cubin", &["saxpy"]);
            assert!(matches!(err, Err(BackendError::Load { .. })), "{err:?}");
        }
        for bad in [&b"// PTX\n.version 8.0\n"[..], &[], b"not a cubin"] {
            let err = fresh.load(bad, &["saxpy"]).unwrap_err();
            assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
        }
    }

    #[test]
    fn an_explicit_nvrtc_location_is_the_only_one_tried() {
        let Some(cuda) = default() else { return };
        // The directory the search found works when named explicitly...
        let dir = cuda.nvrtc_path().parent().unwrap().to_path_buf();
        let explicit = CudaConfig {
            nvrtc: Some(dir),
            ..CudaConfig::default()
        };
        assert_eq!(
            Cuda::new(&explicit).unwrap().nvrtc_version(),
            cuda.nvrtc_version()
        );
        // ...and a wrong one is an error naming it, not a fallback.
        let empty = tempfile::tempdir().unwrap();
        let wrong = CudaConfig {
            nvrtc: Some(empty.path().to_path_buf()),
            ..CudaConfig::default()
        };
        let err = Cuda::new(&wrong).unwrap_err();
        assert!(
            matches!(err, BackendError::Unavailable { ref reason, .. }
                if reason.contains(&empty.path().display().to_string())),
            "{err:?}"
        );
    }

    #[test]
    fn class2_a_header_in_the_drivers_cwd_changes_the_key() {
        let Some(cuda) = compile_only("sm_80", CudaTarget::Cubin) else {
            return;
        };
        let h = CwdHeader::new("cuda", "#define FACTOR 3.0f\n");
        let text = format!(
            "#include \"{}\"\nextern \"C\" __global__ void scale(float* y, int n) {{\n\
             int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i < n) y[i] *= FACTOR;\n}}",
            h.name()
        );
        let first = check_a_cwd_header_changes_the_key(&cuda, &h, "scale", &text);
        // The edited header is what NVRTC compiles now: other bytes.
        let kernel = KernelSource {
            symbol: "scale",
            text: &text,
        };
        let second = cuda
            .compile(&job(std::slice::from_ref(&kernel), &[]))
            .unwrap();
        assert_ne!(first.binary, second.binary);
    }

    #[test]
    fn without_a_device_a_launch_is_refused_not_panicking() {
        let Some(cuda) = compile_only("sm_80", CudaTarget::Cubin) else {
            return;
        };
        assert!(!cuda.can_run());
        let compiled = compile_group(&cuda, TEXTS, "3.0f");
        let mut launch = Launch {
            buffers: vec![vec![1.0; 4]],
            scalars: vec![4],
            global: [4, 1, 1],
            local: [1, 1, 1],
        };
        let err = cuda
            .launch(&compiled.program, "square", &mut launch)
            .unwrap_err();
        assert!(
            matches!(err, BackendError::Launch { ref reason, .. } if reason.contains("compile only")),
            "{err:?}"
        );
    }

    #[test]
    fn launch_each_kernel_of_a_group() {
        let Some(cuda) = runner() else { return };
        let compiled = compile_group(&cuda, TEXTS, "3.0f");
        run_group(&cuda, &compiled.program, 3.0);
    }

    #[test]
    fn launch_from_a_binary_loaded_by_a_new_instance() {
        if runner().is_some() {
            check_new_instance_runs(runner, TEXTS);
        }
    }

    #[test]
    fn launch_from_a_binary_loaded_by_a_fresh_process() {
        check_fresh_process_runs(runner(), TEXTS, "cuda::child");
    }

    /// The fresh-process half of the test above; run only by it.
    #[test]
    #[ignore = "run in a fresh process by launch_from_a_binary_loaded_by_a_fresh_process"]
    fn child() {
        child_runs(Cuda::new(&CudaConfig::default()).unwrap());
    }

    #[test]
    fn launch_ptx_finished_by_the_driver() {
        if runner().is_none() {
            return;
        }
        let config = CudaConfig {
            target: CudaTarget::Ptx,
            ..CudaConfig::default()
        };
        let cuda = backend(&config).unwrap();
        let compiled = compile_group(&cuda, TEXTS, "3.0f");
        run_group(&cuda, &compiled.program, 3.0);
    }

    #[test]
    fn launch_loads_report_missing_symbols_and_bad_bytes() {
        check_bad_loads(runner(), TEXTS);
    }

    #[test]
    fn launch_with_the_wrong_kernel_is_refused() {
        let Some(cuda) = runner() else { return };
        let compiled = compile_group(&cuda, TEXTS, "1.0f");
        let mut launch = Launch {
            buffers: vec![vec![1.0; 4]],
            scalars: vec![4],
            global: [4, 1, 1],
            local: [1, 1, 1],
        };
        let err = cuda
            .launch(&compiled.program, "absent", &mut launch)
            .unwrap_err();
        assert!(matches!(err, BackendError::MissingSymbol { .. }), "{err:?}");
    }
}

mod vulkan {
    use super::*;
    use kcache::backend::vulkan::{probe, Vulkan, VulkanConfig};

    const TEXTS: [&str; 3] = [
        "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) buffer X { float x[]; };
layout(push_constant) uniform Scalars { int n; int a; };
void saxpy() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(n)) y[i] = float(a) * x[i] + y[i];
}
",
        "#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(push_constant) uniform Scalars { int n; };
void scale() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(n)) y[i] *= FACTOR;
}
",
        "#version 450
layout(local_size_x = 128) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Scalars { int n; };
void square() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(n)) x[i] = x[i] * x[i];
}
",
    ];

    fn backend() -> Option<Vulkan> {
        available("vulkan", Vulkan::new(&VulkanConfig::default()))
    }

    #[test]
    fn probe_agrees_with_the_constructor() {
        check_probe(
            probe(),
            "vulkan",
            Vulkan::new(&VulkanConfig::default()).is_ok(),
        );
    }

    #[test]
    fn a_group_compiles_into_one_program_and_each_kernel_runs() {
        let Some(vk) = backend() else { return };
        let kernels = group(TEXTS);
        let compiled = vk
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f", "-Os"])))
            .unwrap();
        assert_eq!(compiled.program.symbols(), SYMBOLS);
        run_group(&vk, &compiled.program, 3.0);
    }

    #[test]
    fn options_reach_the_compiler() {
        let Some(vk) = backend() else { return };
        let compiled = compile_group(&vk, TEXTS, "0.5f");
        run_group(&vk, &compiled.program, 0.5);
        let kernels = group(TEXTS);
        let newer = options(&["--target-env", "vulkan1.1", "-DFACTOR=2.0f"]);
        let compiled = vk.compile(&job(&kernels, &newer)).unwrap();
        run_group(&vk, &compiled.program, 2.0);
    }

    #[test]
    fn a_new_instance_loads_the_binary_and_runs_it() {
        check_new_instance_runs(backend, TEXTS);
    }

    #[test]
    fn groups_compile_concurrently() {
        check_concurrent_compiles(backend(), TEXTS);
    }

    #[test]
    fn a_fresh_process_loads_the_binary_and_runs_it() {
        check_fresh_process_runs(backend(), TEXTS, "vulkan::child");
    }

    /// The fresh-process half of the test above; run only by it.
    #[test]
    #[ignore = "run in a fresh process by a_fresh_process_loads_the_binary_and_runs_it"]
    fn child() {
        child_runs(Vulkan::new(&VulkanConfig::default()).unwrap());
    }

    #[test]
    fn compiling_again_gives_the_same_bytes() {
        let Some(vk) = backend() else { return };
        let a = compile_group(&vk, TEXTS, "3.0f").binary;
        vk.clear_cache().unwrap(); // compile again, not from the handle cache
        let b = compile_group(&vk, TEXTS, "3.0f").binary;
        assert_eq!(a, b);
        let c = compile_group(&vk, TEXTS, "2.0f").binary;
        assert_ne!(a, c, "the option did not change the SPIR-V");
    }

    #[test]
    fn a_compile_error_names_the_group_and_carries_glslangs_log() {
        let broken =
            "#version 450\nlayout(local_size_x = 1) in;\nvoid broken() {\n    undeclared_name = 1;\n}\n";
        if let Some(log) = check_compile_error(backend(), TEXTS[2], broken) {
            // The #line directive keeps the kernel's own line numbers.
            assert!(log.contains("broken.comp:4"), "{log}");
        }
    }

    #[test]
    fn shaders_outside_the_calling_convention_are_refused() {
        let Some(vk) = backend() else { return };
        let uniform = "#version 450
layout(local_size_x = 1) in;
layout(std140, binding = 0) uniform U { float u; };
layout(std430, binding = 1) buffer B { float b[]; };
void uses_uniform() { b[0] = u; }
";
        let gap = "#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 1) buffer B { float b[]; };
void binding_gap() { b[0] = 1.0; }
";
        let no_version = "layout(local_size_x = 1) in;\nvoid no_version() {}\n";
        for (symbol, text, why) in [
            ("uses_uniform", uniform, "not a storage buffer"),
            ("binding_gap", gap, "bindings 0.."),
            ("no_version", no_version, "#version"),
        ] {
            let kernels = [KernelSource { symbol, text }];
            let err = vk.compile(&job(&kernels, &[])).unwrap_err();
            assert!(
                matches!(err, BackendError::Compile { ref log, .. } if log.contains(why)),
                "{symbol}: {err:?}"
            );
        }
    }

    #[test]
    fn options_that_redirect_glslang_are_refused() {
        let Some(vk) = backend() else { return };
        let kernels = group(TEXTS);
        for bad in [
            &["-o", "/tmp/x.spv"][..],
            &["--stdin"],
            &["-e", "main"],
            &["--target-env"],
        ] {
            let err = vk.compile(&job(&kernels, &options(bad))).unwrap_err();
            assert!(
                matches!(err, BackendError::Compile { ref log, .. } if log.contains(bad[0])),
                "{bad:?}: {err:?}"
            );
        }
    }

    #[test]
    fn loading_reports_missing_symbols_and_bad_bytes() {
        if let Some((vk, binary)) = check_bad_loads(backend(), TEXTS) {
            check_damage_is_refused(&vk, &binary);
        }
    }

    #[test]
    fn a_launch_that_does_not_match_the_shader_is_refused() {
        check_bad_launches(backend(), TEXTS);
    }

    #[test]
    fn identity_names_glslang_and_the_driver() {
        let Some(vk) = backend() else { return };
        let identity = vk.identity();
        assert!(identity.contains("glslang"), "{identity}");
        assert!(
            identity.contains(vk.device().unwrap().driver()),
            "{identity}"
        );
    }
}
