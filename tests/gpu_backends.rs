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

use std::path::Path;
use std::process::Command;

use kcache::backend::{Backend, BackendError, CompileJob, KernelSource, Launch};

fn job<'a>(kernels: &'a [KernelSource<'a>], options: &'a [String]) -> CompileJob<'a> {
    CompileJob {
        kernels,
        options,
        group: 0,
        n_groups: 1,
    }
}

fn options(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Whether `what` is required here (see the module docs).
fn required(what: &str) -> bool {
    std::env::var("KCACHE_TEST_REQUIRE")
        .is_ok_and(|list| list.split(',').any(|item| item.trim() == what))
}

/// Unwraps a backend, or says why it is skipped (`None`), or fails when the
/// backend is required.
fn available<B>(what: &str, backend: Result<B, BackendError>) -> Option<B> {
    match backend {
        Ok(backend) => Some(backend),
        Err(err) if required(what) => panic!("{what} is required here but unavailable: {err}"),
        Err(err) => {
            eprintln!("skipped: {err}");
            None
        }
    }
}

/// Runs the `#[ignore]`d test `name` of this test binary in a fresh process,
/// with `KCACHE_TEST_CHILD_BINARY` naming `binary`, and fails with its output
/// unless it passed.
fn run_in_fresh_process(name: &str, binary: &Path) {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KCACHE_TEST_CHILD_BINARY", binary)
        .output()
        .expect("spawn the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the fresh process failed:\n{text}"
    );
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

mod opencl {
    use super::*;
    use kcache::backend::opencl::{probe, OpenCl, OpenClConfig};

    const SAXPY: &str =
        "__kernel void saxpy(__global float* y, __global const float* x, int n, int a) {
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}";
    const SCALE: &str = "__kernel void scale(__global float* y, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] *= FACTOR;
}";
    const SQUARE: &str = "__kernel void square(__global float* x, int n) {
    int i = get_global_id(0);
    if (i < n) x[i] = x[i] * x[i];
}";

    fn group() -> [KernelSource<'static>; 3] {
        [
            KernelSource {
                symbol: "saxpy",
                text: SAXPY,
            },
            KernelSource {
                symbol: "scale",
                text: SCALE,
            },
            KernelSource {
                symbol: "square",
                text: SQUARE,
            },
        ]
    }

    fn backend() -> Option<OpenCl> {
        available("opencl", OpenCl::new(&OpenClConfig::default()))
    }

    #[test]
    fn probe_agrees_with_the_constructor() {
        let info = probe();
        assert_eq!(info.backend, "opencl");
        assert_eq!(
            info.available,
            OpenCl::new(&OpenClConfig::default()).is_ok()
        );
        if info.available {
            assert!(
                !info.devices.is_empty() && info.version.is_some(),
                "{info:?}"
            );
        } else {
            assert!(info.reason.is_some(), "{info:?}");
        }
    }

    #[test]
    fn a_group_compiles_into_one_program_and_each_kernel_runs() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let opts = options(&["-DFACTOR=3.0f", "-cl-mad-enable"]);
        let compiled = cl.compile(&job(&kernels, &opts)).unwrap();
        assert!(!compiled.binary.is_empty());
        run_group(&cl, &compiled.program, 3.0);
    }

    #[test]
    fn options_reach_the_compiler() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let compiled = cl
            .compile(&job(&kernels, &options(&["-DFACTOR=0.5f"])))
            .unwrap();
        run_group(&cl, &compiled.program, 0.5);
    }

    #[test]
    fn a_new_instance_loads_the_binary_and_runs_it() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let compiled = cl
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        drop(cl);
        let fresh = backend().unwrap();
        let program = fresh
            .load(&compiled.binary, &["saxpy", "scale", "square"])
            .unwrap();
        run_group(&fresh, &program, 3.0);
    }

    #[test]
    fn a_fresh_process_loads_the_binary_and_runs_it() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let compiled = cl
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("program.bin");
        std::fs::write(&path, &compiled.binary).unwrap();
        run_in_fresh_process("opencl::child_loads_and_runs", &path);
    }

    /// The fresh-process half of the test above; run only by it.
    #[test]
    #[ignore = "run in a fresh process by a_fresh_process_loads_the_binary_and_runs_it"]
    fn child_loads_and_runs() {
        let cl = OpenCl::new(&OpenClConfig::default()).unwrap();
        let program = cl
            .load(&child_binary(), &["saxpy", "scale", "square"])
            .unwrap();
        run_group(&cl, &program, 3.0);
    }

    #[test]
    fn a_compile_error_names_the_group_and_carries_the_build_log() {
        let Some(cl) = backend() else { return };
        let kernels = [
            KernelSource {
                symbol: "square",
                text: SQUARE,
            },
            KernelSource {
                symbol: "broken",
                text: "__kernel void broken(__global float* x) { x[0] = undeclared_name; }",
            },
        ];
        let err = cl.compile(&job(&kernels, &[])).unwrap_err();
        assert_compile_error(err, "opencl", &["square", "broken"], "broken");
    }

    #[test]
    fn loading_reports_missing_symbols_and_bad_bytes() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let compiled = cl
            .compile(&job(&kernels, &options(&["-DFACTOR=1.0f"])))
            .unwrap();
        let err = cl.load(&compiled.binary, &["saxpy", "nope"]).unwrap_err();
        assert!(
            matches!(err, BackendError::MissingSymbol { ref symbol, .. } if symbol == "nope"),
            "{err:?}"
        );
        let err = cl.load(b"not a program binary", &["saxpy"]).unwrap_err();
        assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
        let err = cl.load(&[], &["saxpy"]).unwrap_err();
        assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
    }

    #[test]
    fn a_launch_with_the_wrong_arguments_is_refused() {
        let Some(cl) = backend() else { return };
        let kernels = group();
        let compiled = cl
            .compile(&job(&kernels, &options(&["-DFACTOR=1.0f"])))
            .unwrap();
        let mut launch = Launch {
            buffers: vec![vec![1.0; 4]],
            scalars: vec![],
            global: [4, 1, 1],
            local: [1, 1, 1],
        };
        let err = cl
            .launch(&compiled.program, "square", &mut launch)
            .unwrap_err();
        assert!(matches!(err, BackendError::Launch { .. }), "{err:?}");
        let err = cl
            .launch(&compiled.program, "absent", &mut launch)
            .unwrap_err();
        assert!(matches!(err, BackendError::MissingSymbol { .. }), "{err:?}");
    }

    #[test]
    fn identity_names_the_device_and_driver() {
        let Some(cl) = backend() else { return };
        assert!(
            cl.identity().contains(cl.device().name()),
            "{}",
            cl.identity()
        );
        assert!(cl.identity().contains("driver="), "{}", cl.identity());
    }
}

mod cuda {
    use super::*;
    use kcache::backend::cuda::{probe, Cuda, CudaConfig, CudaTarget};

    const SAXPY: &str = r#"extern "C" __global__ void saxpy(float* y, const float* x, int n, int a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#;
    const SCALE: &str = r#"extern "C" __global__ void scale(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= FACTOR;
}"#;
    const SQUARE: &str = r#"extern "C" __global__ void square(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i];
}"#;

    fn group() -> [KernelSource<'static>; 3] {
        [
            KernelSource {
                symbol: "saxpy",
                text: SAXPY,
            },
            KernelSource {
                symbol: "scale",
                text: SCALE,
            },
            KernelSource {
                symbol: "square",
                text: SQUARE,
            },
        ]
    }

    fn backend(config: &CudaConfig) -> Option<Cuda> {
        available("cuda", Cuda::new(config))
    }

    /// A backend that can launch, or `None` after saying why not (failing
    /// where `cuda-launch` is required).
    fn runner() -> Option<Cuda> {
        let cuda = backend(&CudaConfig::default())?;
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
        let Some(cuda) = backend(&CudaConfig::default()) else {
            return;
        };
        let kernels = group();
        let opts = options(&["-DFACTOR=3.0f", "--use_fast_math"]);
        let compiled = cuda.compile(&job(&kernels, &opts)).unwrap();
        assert!(compiled.binary.starts_with(b"\x7fELF"), "not a cubin");
        assert_eq!(compiled.program.symbols(), ["saxpy", "scale", "square"]);
        assert_eq!(compiled.program.is_loaded(), cuda.can_run());
        // Every kernel of the group is in the one image.
        for symbol in ["saxpy", "scale", "square"] {
            let found = compiled
                .binary
                .windows(symbol.len())
                .any(|w| w == symbol.as_bytes());
            assert!(found, "no `{symbol}` in the cubin");
        }
    }

    #[test]
    fn ptx_is_text_for_the_virtual_architecture() {
        let config = CudaConfig {
            arch: Some("sm_80".into()),
            target: CudaTarget::Ptx,
            ..CudaConfig::default()
        };
        let Some(cuda) = backend(&config) else { return };
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        let ptx = std::str::from_utf8(&compiled.binary).unwrap();
        assert!(ptx.contains(".target sm_80"), "{ptx}");
        assert!(ptx.contains(".entry saxpy") && ptx.contains(".entry square"));
        assert!(!ptx.contains('\0'));
        let program = cuda.load(&compiled.binary, &["saxpy"]).unwrap();
        assert_eq!(program.symbols(), ["saxpy"]);
    }

    #[test]
    fn the_architecture_and_target_are_in_the_identity_and_decide_the_bytes() {
        let at = |arch: &str, target| CudaConfig {
            arch: Some(arch.into()),
            target,
            compile_only: true,
            ..CudaConfig::default()
        };
        let Some(sm80) = backend(&at("sm_80", CudaTarget::Cubin)) else {
            return;
        };
        let sm90 = backend(&at("sm_90", CudaTarget::Cubin)).unwrap();
        let ptx80 = backend(&at("sm_80", CudaTarget::Ptx)).unwrap();
        assert!(sm80.identity().contains("sm_80"), "{}", sm80.identity());
        assert!(sm80.identity().contains(&sm80.nvrtc_version()));
        assert_ne!(sm80.identity(), sm90.identity());
        assert_ne!(sm80.identity(), ptx80.identity());
        assert_eq!(
            sm80.identity(),
            backend(&at("80", CudaTarget::Cubin)).unwrap().identity()
        );

        let kernels = group();
        let opts = options(&["-DFACTOR=3.0f"]);
        let a = sm80.compile(&job(&kernels, &opts)).unwrap().binary;
        let b = sm90.compile(&job(&kernels, &opts)).unwrap().binary;
        assert_ne!(a, b, "sm_80 and sm_90 compiled to the same cubin");
        // Same inputs, same bytes: what makes a persisted binary reusable.
        assert_eq!(a, sm80.compile(&job(&kernels, &opts)).unwrap().binary);
    }

    #[test]
    fn a_compile_error_names_the_group_and_carries_nvrtcs_log() {
        let Some(cuda) = backend(&CudaConfig::default()) else {
            return;
        };
        let kernels = [
            KernelSource {
                symbol: "square",
                text: SQUARE,
            },
            KernelSource {
                symbol: "broken",
                text: r#"extern "C" __global__ void broken(float* x) { x[0] = undeclared_name; }"#,
            },
        ];
        let err = cuda.compile(&job(&kernels, &[])).unwrap_err();
        assert_compile_error(err, "cuda", &["square", "broken"], "broken");
    }

    #[test]
    fn architecture_options_and_unknown_architectures_are_refused() {
        let Some(cuda) = backend(&CudaConfig::default()) else {
            return;
        };
        let kernels = group();
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
        let Some(cuda) = backend(&CudaConfig::default()) else {
            return;
        };
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        drop(cuda);
        let fresh = backend(&CudaConfig::default()).unwrap();
        let program = fresh
            .load(&compiled.binary, &["saxpy", "scale", "square"])
            .unwrap();
        assert_eq!(program.is_loaded(), fresh.can_run());

        let err = fresh.load(b"\x7fELF but not a cubin", &["saxpy"]);
        if fresh.can_run() {
            assert!(matches!(err, Err(BackendError::Load { .. })), "{err:?}");
        }
        let err = fresh
            .load(b"// PTX\n.version 8.0\n", &["saxpy"])
            .unwrap_err();
        assert!(matches!(err, BackendError::Load { .. }), "{err:?}");
    }

    #[test]
    fn an_explicit_nvrtc_location_is_the_only_one_tried() {
        let Some(cuda) = backend(&CudaConfig::default()) else {
            return;
        };
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
    fn without_a_device_a_launch_is_refused_not_panicking() {
        let config = CudaConfig {
            compile_only: true,
            ..CudaConfig::default()
        };
        let Some(cuda) = backend(&config) else { return };
        assert!(!cuda.can_run());
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
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
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        run_group(&cuda, &compiled.program, 3.0);
    }

    #[test]
    fn launch_from_a_binary_loaded_by_a_new_instance() {
        let Some(cuda) = runner() else { return };
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=0.5f"])))
            .unwrap();
        drop(cuda);
        let fresh = runner().unwrap();
        let program = fresh
            .load(&compiled.binary, &["saxpy", "scale", "square"])
            .unwrap();
        run_group(&fresh, &program, 0.5);
        let err = fresh.load(&compiled.binary, &["nope"]).unwrap_err();
        assert!(matches!(err, BackendError::MissingSymbol { .. }), "{err:?}");
    }

    #[test]
    fn launch_ptx_loaded_by_the_driver() {
        let Some(device) = runner() else { return };
        let config = CudaConfig {
            target: CudaTarget::Ptx,
            ..CudaConfig::default()
        };
        let cuda = backend(&config).unwrap();
        let kernels = group();
        let compiled = cuda
            .compile(&job(&kernels, &options(&["-DFACTOR=3.0f"])))
            .unwrap();
        drop(device);
        run_group(&cuda, &compiled.program, 3.0);
    }
}
