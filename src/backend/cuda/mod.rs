//! The CUDA backend: NVRTC compiles, the driver (`cudarc`) loads and runs.
//!
//! A group of kernels (each `extern "C" __global__`) is concatenated into one
//! translation unit and compiled by NVRTC, with the option list as NVRTC
//! options, to a cubin for one architecture or to PTX ([`CudaTarget`]). The
//! program's bytes are the cubin (an ELF image) or the PTX text.
//!
//! Compiling needs neither a GPU nor a driver: without one the backend runs
//! *compile only*, its programs hold no module, and [`Backend::can_run`] is
//! false. With a GPU, programs are loaded as modules into the device's primary
//! context and launched there. Kernels take their [`Launch`] arguments in the
//! crate's order: `float*` buffers, then `int` scalars; a kernel guards its
//! index, since the grid covers `global` rounded up to whole blocks.
//!
//! # Finding NVRTC
//!
//! NVRTC is loaded from an explicit path (never through `cudarc`'s loader,
//! which panics when the library is missing and only searches the default
//! library path), the first of:
//! 1. [`CudaConfig::nvrtc`], or the `KCACHE_NVRTC_LIB` environment variable: a
//!    library file, or a directory holding `libnvrtc.so.12` / `libnvrtc.so`;
//!    when set, it is the only place tried;
//! 2. the PyPI wheel `nvidia-cuda-nvrtc-cu12`, at
//!    `site-packages/nvidia/cuda_nvrtc/lib/` under `$VIRTUAL_ENV`,
//!    `$CONDA_PREFIX`, `~/.local/lib/python3*`, the pyenv versions
//!    (`$PYENV_ROOT` or `~/.pyenv`), `/usr/local/lib/python3*`,
//!    `/usr/lib/python3*` and `/opt/conda` (site- and dist-packages), newest
//!    Python first, as cuda-python's path finder looks at wheels first;
//! 3. the default library search (`LD_LIBRARY_PATH`, the linker cache);
//! 4. `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`, `/usr/local/cuda-*`;
//! 5. the `sys.path` of `python3` on `PATH`, asked as a last resort.
//!
//! # Ownership
//!
//! A [`CudaDevice`] holds the device's primary context and the stream kcache
//! uses. A loaded [`CudaProgram`] holds the device and its module, and every
//! `cudarc` module holds its context by `Arc`, so a context is released only
//! after the last module loaded into it.
//!
//! # Teardown
//!
//! Programs live in a per-device handle cache
//! ([`KernelCache`], see
//! [`Cuda::kernel_cache`]): compiling the same group, or loading the same
//! bytes, twice in a process answers the same program (the same module). The
//! cache listens for device destroys of `cuda` on the [`Hooks`] the backend
//! was built with ([`Cuda::with_hooks`]; [`Cuda::new`] uses the process's).
//! [`Backend::clear_cache`] clears it inside `around_clear`.
//!
//! [`Cuda::destroy_device`] notifies device-destroy listeners of
//! `("cuda", ordinal)` first (evicting this device's modules here and the
//! memo of the layers above), then lets go of the backend's stream and its
//! reference to the primary context. Where a device is present, that is a
//! real release: the stream is destroyed once no program uses it, each module
//! is unloaded when its last holder drops it, and the primary context is
//! released (`cuDevicePrimaryCtxRelease`) after the last module. Compile
//! only, there are no driver handles: the destroy notifies and evicts. Either
//! way the backend compiles and loads nothing afterwards.
//!
//! [`Backend::can_run`]: crate::backend::Backend::can_run
//! [`Backend::clear_cache`]: crate::backend::Backend::clear_cache
//! [`Hooks`]: crate::cache::hooks::Hooks
//! [`KernelCache`]: crate::cache::guarded::KernelCache

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use super::gpu::{self, Driver, GpuBackend, Opened, Toolchain};
use super::{BackendError, BackendInfo, CompileJob, Compiled, Language, Launch};

mod arch;
mod device;
mod find;
mod nvrtc;
mod symbols;

use arch::Arch;
pub use device::CudaDevice;
use device::{describe_device, device_count, guarded, open_device};
use find::{default_nvrtc, nvrtc_for};
#[cfg(test)]
use find::{open_nvrtc, subdirs};
use nvrtc::Nvrtc;

const FAMILY: &str = "cuda";

/// The architecture compiled for when none is configured and no device is
/// present to ask (compile only).
pub const DEFAULT_ARCH: &str = "sm_80";

/// What NVRTC produces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CudaTarget {
    /// A cubin for exactly the configured architecture.
    #[default]
    Cubin,
    /// PTX for the architecture's virtual counterpart (`compute_XX`); the
    /// driver finishes it at load, for any device at least that new.
    Ptx,
}

impl CudaTarget {
    fn name(self) -> &'static str {
        match self {
            CudaTarget::Cubin => "cubin",
            CudaTarget::Ptx => "ptx",
        }
    }
}

/// How the CUDA backend is set up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaConfig {
    /// The device ordinal (CUDA's own numbering).
    pub device: usize,
    /// The architecture, as `sm_90`, `sm_90a`, `compute_90` or `90`; `None`
    /// asks the device, or uses [`DEFAULT_ARCH`] without one.
    pub arch: Option<String>,
    /// Cubin or PTX.
    pub target: CudaTarget,
    /// Where NVRTC is (a file, or a directory holding it); `None` searches
    /// (see the module docs).
    pub nvrtc: Option<PathBuf>,
    /// Compile without touching the driver, even where a GPU is present.
    pub compile_only: bool,
}

// ---------------------------------------------------------------- NVRTC ----

/// A compiled CUDA program: its kernels, and its module where a device is
/// present (compile-only programs have none).
pub struct CudaProgram {
    // Declaration order is drop order: functions and module go before the
    // device (and the module holds the context itself besides).
    functions: HashMap<String, CudaFunction>,
    module: Option<Arc<CudaModule>>,
    device: Option<Arc<CudaDevice>>,
    symbols: Vec<String>,
}

impl CudaProgram {
    /// Whether the program is loaded into a device (and can be launched).
    pub fn is_loaded(&self) -> bool {
        self.module.is_some()
    }

    /// The kernels the program was compiled with, or (for a program loaded
    /// from bytes) first loaded with: a load of the same bytes answers the
    /// program already loaded.
    pub fn symbols(&self) -> &[String] {
        &self.symbols
    }

    /// Checks the module has every kernel of `symbols` (compile only, there
    /// is no module to ask).
    fn check_symbols(&self, symbols: &[&str]) -> Result<(), BackendError> {
        let Some(module) = &self.module else {
            return Ok(());
        };
        for symbol in symbols {
            if self.functions.contains_key(*symbol) {
                continue;
            }
            let missing = || BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: symbol.to_string(),
            };
            if !gpu::is_identifier(symbol) {
                return Err(missing());
            }
            module.load_function(symbol).map_err(|_| missing())?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for CudaProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaProgram")
            .field("device", &self.device)
            .field("loaded", &self.is_loaded())
            .field("symbols", &self.symbols)
            .finish()
    }
}

/// The CUDA backend: [`CudaDriver`] under the generic GPU backend.
pub type Cuda = GpuBackend<CudaDriver>;

/// CUDA's side of [`GpuBackend`]: NVRTC, and what it compiles for.
#[derive(Debug)]
pub struct CudaDriver {
    nvrtc: Arc<Nvrtc>,
    /// Why there is no device, when there is none.
    no_device: Option<String>,
    arch: Arch,
    target: CudaTarget,
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    gpu::unavailable(FAMILY, reason)
}

/// What `kcache backends` shows for CUDA. Never panics; needs no GPU. CUDA is
/// available when NVRTC loads; without a driver or a device it is compile
/// only, and the reason says so.
pub fn probe() -> BackendInfo {
    let mut info = gpu::info(FAMILY);
    // Devices are listed even without NVRTC: "a GPU, but no compiler" is
    // what a user needs to read.
    let devices = device_count().and_then(|count| {
        (0..count)
            .map(|i| guarded("the CUDA driver", || describe_device(i)))
            .collect::<Result<Vec<_>, _>>()
    });
    let no_device = match devices {
        Ok(devices) if !devices.is_empty() => {
            info.devices = devices;
            None
        }
        Ok(_) => Some("no CUDA device".to_string()),
        Err(reason) => Some(reason),
    };
    match default_nvrtc() {
        Ok(nvrtc) => {
            info.available = true;
            info.version = Some(format!(
                "NVRTC {} ({})",
                nvrtc.version_string(),
                nvrtc.path.display()
            ));
            info.reason = no_device.map(|why| compile_only_reason(&why));
        }
        Err(reason) => info.reason = Some(reason),
    }
    info
}

fn compile_only_reason(why: &str) -> String {
    format!("compile only: {why}; compiles for {DEFAULT_ARCH} unless an architecture is configured")
}

impl Cuda {
    /// Why the backend is compile only, when it is.
    pub fn no_device_reason(&self) -> Option<&str> {
        self.driver().no_device.as_deref()
    }

    /// The architecture compiled for, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        self.driver().arch.real()
    }

    /// The NVRTC version, e.g. `12.9`.
    pub fn nvrtc_version(&self) -> String {
        self.driver().nvrtc.version_string()
    }

    /// Where NVRTC was loaded from.
    pub fn nvrtc_path(&self) -> &Path {
        &self.driver().nvrtc.path
    }
}

impl CudaDriver {
    /// Checks `image` defines the kernel `symbol`, read from the image (a
    /// compile-only backend has no module to ask).
    fn check_defines(&self, image: &[u8], symbol: &str) -> Result<(), BackendError> {
        match symbols::defines(image, self.target, symbol) {
            Some(true) => Ok(()),
            Some(false) => Err(BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: symbol.to_string(),
            }),
            None => Err(BackendError::Load {
                backend: FAMILY,
                reason: format!(
                    "cannot read which kernels the {} defines",
                    self.target.name()
                ),
            }),
        }
    }

    /// Checks `binary` is what this backend's target produces, as a module
    /// image (PTX with its NUL).
    fn image(&self, binary: &[u8]) -> Result<Vec<u8>, BackendError> {
        let fail = |reason: String| BackendError::Load {
            backend: FAMILY,
            reason,
        };
        Ok(match self.target {
            CudaTarget::Cubin => {
                if !binary.starts_with(b"\x7fELF") {
                    return Err(fail("not a cubin (no ELF header)".into()));
                }
                binary.to_vec()
            }
            CudaTarget::Ptx => {
                let text = std::str::from_utf8(binary)
                    .map_err(|_| fail("not PTX (not UTF-8 text)".into()))?;
                if !text.contains(".version") || !text.contains(".target") || text.contains('\0') {
                    return Err(fail("not PTX (no .version and .target directives)".into()));
                }
                let mut image = binary.to_vec();
                image.push(0);
                image
            }
        })
    }

    /// Loads a checked `image` into `device` where one is present.
    fn program(
        &self,
        device: Option<Arc<CudaDevice>>,
        image: Vec<u8>,
        symbols: Vec<String>,
    ) -> Result<CudaProgram, BackendError> {
        let fail = |reason: String| BackendError::Load {
            backend: FAMILY,
            reason,
        };
        let Some(device) = device else {
            return Ok(CudaProgram {
                functions: HashMap::new(),
                module: None,
                device: None,
                symbols,
            });
        };
        let module = guarded("cuModuleLoadData", || {
            device
                .context
                .load_module(Ptx::from_binary(image))
                .map_err(|e| format!("cuModuleLoadData on {}: {e}", device.name))
        })
        .map_err(fail)?;
        let mut functions = HashMap::new();
        for symbol in &symbols {
            let missing = || BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: symbol.clone(),
            };
            if !gpu::is_identifier(symbol) {
                return Err(missing());
            }
            let function = module.load_function(symbol).map_err(|_| missing())?;
            functions.insert(symbol.clone(), function);
        }
        Ok(CudaProgram {
            functions,
            module: Some(module),
            device: Some(device),
            symbols,
        })
    }
}

/// Options that set the architecture: the backend sets it from its
/// configuration, which its identity (and so every key) records.
fn sets_arch(option: &str) -> bool {
    ["-arch", "--gpu-architecture"]
        .iter()
        .any(|flag| option == *flag || option.starts_with(&format!("{flag}=")))
}

/// NVRTC options that make it read a file the key cannot see (a header
/// included before the kernel, a precompiled header) or write one (review
/// 2026-12-02, GPU F6: `--pre-include=h` served the old `h`'s program).
fn touches_files(option: &str) -> bool {
    [
        "--pre-include",
        "-include",
        "--pch",
        "-pch",
        "--create-pch",
        "-create-pch",
        "--use-pch",
        "-use-pch",
        "--pch-dir",
        "-pch-dir",
        "--time",
        "-time",
        "--fdevice-time-trace",
        "-fdevice-time-trace",
    ]
    .iter()
    .any(|flag| option == *flag || option.starts_with(&format!("{flag}=")))
}

impl Driver for CudaDriver {
    type Config = CudaConfig;
    type Device = CudaDevice;
    type Program = CudaProgram;
    type Image<'a> = Vec<u8>;

    const FAMILY: &'static str = FAMILY;
    const LANGUAGE: Language = Language::Cuda;
    const TOOLCHAIN: Toolchain = Toolchain::Cuda;
    const KEY_VERSION: u32 = 1;

    /// Loads NVRTC and, unless compile-only, opens the device. Without NVRTC
    /// this is [`BackendError::Unavailable`]; without a driver or a device
    /// the backend is compile only (see [`Cuda::no_device_reason`]). A
    /// configured architecture NVRTC cannot compile for is refused.
    fn open(config: &CudaConfig) -> Result<Opened<Self>, BackendError> {
        let nvrtc = nvrtc_for(config).map_err(unavailable)?;
        let (device, no_device) = if config.compile_only {
            (None, Some("configured compile only".to_string()))
        } else {
            match open_device(config.device) {
                Ok(device) => (Some(Arc::new(device)), None),
                Err(reason) => (None, Some(reason)),
            }
        };
        let arch = match (&config.arch, &device) {
            (Some(text), _) => Arch::parse(text).ok_or_else(|| {
                unavailable(format!(
                    "`{text}` is not a CUDA architecture (expected e.g. sm_90, sm_90a, compute_90 or 90)"
                ))
            })?,
            (None, Some(device)) => Arch {
                number: device.capability.0 * 10 + device.capability.1,
                suffix: String::new(),
            },
            (None, None) => Arch::parse(DEFAULT_ARCH).expect("DEFAULT_ARCH parses"),
        };
        if !nvrtc.archs.is_empty() && !nvrtc.archs.contains(&arch.number) {
            return Err(unavailable(format!(
                "NVRTC {} cannot compile for {} (it supports {})",
                nvrtc.version_string(),
                arch.real(),
                nvrtc
                    .archs
                    .iter()
                    .map(|a| format!("sm_{a}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let identity = format!(
            "cuda;nvrtc={};arch={};target={}",
            nvrtc.version_string(),
            arch.real(),
            config.target.name()
        );
        Ok(Opened {
            driver: CudaDriver {
                nvrtc,
                no_device,
                arch,
                target: config.target,
            },
            device,
            index: config.device,
            identity,
        })
    }

    fn check_options(&self, job: &CompileJob<'_>) -> Result<(), BackendError> {
        if let Some(option) = job.options.iter().find(|o| sets_arch(o)) {
            return Err(gpu::compile_error(FAMILY, job)(format!(
                "`{option}`: the architecture is the backend's configuration (CudaConfig::arch), not an option"
            )));
        }
        match job.options.iter().find(|o| touches_files(o)) {
            Some(option) => Err(gpu::compile_error(FAMILY, job)(format!(
                "`{option}` makes NVRTC read or write a file kcache does not key on; \
                 include the header from the kernel instead"
            ))),
            None => Ok(()),
        }
    }

    fn compile(
        &self,
        device: Option<Arc<CudaDevice>>,
        job: &CompileJob<'_>,
        source: &str,
    ) -> Result<Compiled<CudaProgram>, BackendError> {
        let fail = gpu::compile_error(FAMILY, job);
        let arch = match self.target {
            CudaTarget::Cubin => self.arch.real(),
            CudaTarget::Ptx => self.arch.virtual_(),
        };
        let mut options = vec![format!("--gpu-architecture={arch}")];
        options.extend(job.options.iter().cloned());
        let binary = self
            .nvrtc
            .compile(source, &options, self.target)
            .map_err(fail)?;
        let image = self.image(&binary)?;
        for kernel in job.kernels {
            self.check_defines(&image, kernel.symbol)
                .map_err(|e| fail(format!("the program compiled, but {e}")))?;
        }
        let program = self.program(device, image, gpu::kernel_names(job))?;
        Ok(Compiled {
            program: Arc::new(program),
            binary,
            uncacheable: None,
        })
    }

    fn check_binary(&self, binary: &[u8], symbols: &[&str]) -> Result<Vec<u8>, BackendError> {
        let image = self.image(binary)?;
        for symbol in symbols {
            self.check_defines(&image, symbol)?;
        }
        Ok(image)
    }

    fn load(
        &self,
        device: Option<Arc<CudaDevice>>,
        image: Vec<u8>,
        symbols: &[&str],
    ) -> Result<Arc<CudaProgram>, BackendError> {
        let symbols = symbols.iter().map(|s| s.to_string()).collect();
        Ok(Arc::new(self.program(device, image, symbols)?))
    }

    fn check_symbols(&self, program: &CudaProgram, symbols: &[&str]) -> Result<(), BackendError> {
        program.check_symbols(symbols)
    }

    fn launch(
        &self,
        program: &CudaProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let fail = gpu::launch_error(FAMILY, symbol);
        let Some(device) = &program.device else {
            return Err(fail(format!(
                "compile only: {}",
                self.no_device.as_deref().unwrap_or("no device")
            )));
        };
        let function = match program.functions.get(symbol) {
            Some(function) => function.clone(),
            None => {
                let module = program
                    .module
                    .as_ref()
                    .expect("a program with a device has a module");
                if !gpu::is_identifier(symbol) {
                    return Err(BackendError::MissingSymbol {
                        backend: FAMILY,
                        symbol: symbol.to_string(),
                    });
                }
                module
                    .load_function(symbol)
                    .map_err(|_| BackendError::MissingSymbol {
                        backend: FAMILY,
                        symbol: symbol.to_string(),
                    })?
            }
        };
        let global = gpu::global_size(launch);
        let block = gpu::local_size(launch).unwrap_or(if global[1] == 1 && global[2] == 1 {
            [global[0].min(256), 1, 1]
        } else {
            [global[0].min(16), global[1].min(16), 1]
        });
        let grid = gpu::group_count(global, block);
        let to_u32 = |v: [usize; 3], what: &str| -> Result<(u32, u32, u32), BackendError> {
            let c =
                |x: usize| u32::try_from(x).map_err(|_| fail(format!("{what} {x} is too large")));
            Ok((c(v[0])?, c(v[1])?, c(v[2])?))
        };
        let config = LaunchConfig {
            grid_dim: to_u32(grid, "grid size")?,
            block_dim: to_u32(block, "block size")?,
            shared_mem_bytes: 0,
        };
        let stream = &device.stream;
        let driver = |e: cudarc::driver::DriverError| fail(e.to_string());
        let run = || -> Result<(), BackendError> {
            // The driver refuses zero-sized allocations: an empty buffer is
            // backed by one element that is never read back.
            let mut slices = Vec::with_capacity(launch.buffers.len());
            for data in &launch.buffers {
                let host: &[f32] = if data.is_empty() { &[0.0] } else { data };
                slices.push(stream.clone_htod(host).map_err(driver)?);
            }
            let mut args = stream.launch_builder(&function);
            for slice in &mut slices {
                args.arg(slice);
            }
            for scalar in &launch.scalars {
                args.arg(scalar);
            }
            // SAFETY: the arguments follow the calling convention the kernel
            // is written to; the driver checks the launch configuration.
            unsafe { args.launch(config) }.map_err(driver)?;
            for (slice, data) in slices.iter().zip(launch.buffers.iter_mut()) {
                if !data.is_empty() {
                    stream
                        .memcpy_dtoh(slice, data.as_mut_slice())
                        .map_err(driver)?;
                }
            }
            stream.synchronize().map_err(driver)
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(result) => result,
            Err(_) => Err(fail("the CUDA driver call panicked".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_parse_in_every_spelling() {
        for text in ["sm_90", "compute_90", "90", " sm_90 "] {
            assert_eq!(Arch::parse(text).unwrap().real(), "sm_90", "{text}");
        }
        assert_eq!(Arch::parse("sm_90a").unwrap().virtual_(), "compute_90a");
        for bad in ["", "sm_", "sm_9x", "ninety", "sm_90b"] {
            assert!(Arch::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn newer_versions_sort_first() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["python3.9", "python3.11", "python3.10", "other"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let names: Vec<String> = subdirs(dir.path(), "python3")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["python3.11", "python3.10", "python3.9"]);
    }

    #[test]
    fn architecture_options_are_refused() {
        assert!(sets_arch("-arch=sm_80"));
        assert!(sets_arch("--gpu-architecture=compute_80"));
        assert!(sets_arch("-arch"));
        assert!(!sets_arch("-architecture-independent"));
        assert!(!sets_arch("--use_fast_math"));
    }

    #[test]
    fn options_that_read_or_write_files_are_refused() {
        for o in [
            "--pre-include=h.h",
            "-include=h.h",
            "-include",
            "--use-pch=p.pch",
            "--create-pch=p.pch",
            "-pch",
            "--pch-dir=d",
            "--time=t.csv",
        ] {
            assert!(touches_files(o), "{o}");
        }
        for o in [
            "--include-path=inc",
            "-I",
            "--pre-included",
            "-use_fast_math",
        ] {
            assert!(!touches_files(o), "{o}");
        }
    }

    #[test]
    fn an_explicit_nvrtc_path_that_does_not_load_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_nvrtc(Some(dir.path())).unwrap_err();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        let file = dir.path().join("libnvrtc.so.12");
        std::fs::write(&file, b"not a library").unwrap();
        let err = open_nvrtc(Some(dir.path())).unwrap_err();
        assert!(err.contains("libnvrtc.so.12"), "{err}");
    }
}
