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

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use super::gpu::{self, Lifecycle};
use super::{Backend, BackendError, BackendInfo, CompileJob, Compiled, Language, Launch};
use crate::cache::guarded::KernelCache;
use crate::cache::hooks::{self, Hooks};

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

type NvrtcProgram = *mut c_void;
// NVRTC results are read as plain integers: a newer library may return codes
// a Rust enum does not know.
type NvrtcResult = c_int;

/// NVRTC, loaded from an explicit path; the function pointers stay valid as
/// long as `_lib` is loaded, which is as long as this value lives.
struct Nvrtc {
    path: PathBuf,
    version: (c_int, c_int),
    /// The real architectures NVRTC can compile for (`90` for `sm_90`).
    archs: Vec<c_int>,
    create: unsafe extern "C" fn(
        *mut NvrtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcResult,
    compile: unsafe extern "C" fn(NvrtcProgram, c_int, *const *const c_char) -> NvrtcResult,
    destroy: unsafe extern "C" fn(*mut NvrtcProgram) -> NvrtcResult,
    log_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    log: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    cubin_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    cubin: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    ptx_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    ptx: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    error_string: unsafe extern "C" fn(NvrtcResult) -> *const c_char,
    _lib: libloading::Library,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

impl Nvrtc {
    fn open(path: &Path) -> Result<Nvrtc, String> {
        // SAFETY: loading NVRTC runs its initializers, which have no
        // preconditions.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            // libloading's message is "dlopen failed"; dlerror's is the news.
            let cause = std::error::Error::source(&e).map_or(String::new(), |s| format!(": {s}"));
            format!("{}: {e}{cause}", path.display())
        })?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the type is the function's C signature in nvrtc.h.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: no {}: {e}", path.display(), $name))?
            };
        }
        let version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcResult =
            sym!("nvrtcVersion");
        let num_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult =
            sym!("nvrtcGetNumSupportedArchs");
        let get_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult =
            sym!("nvrtcGetSupportedArchs");
        let mut nvrtc = Nvrtc {
            path: path.to_path_buf(),
            version: (0, 0),
            archs: Vec::new(),
            create: sym!("nvrtcCreateProgram"),
            compile: sym!("nvrtcCompileProgram"),
            destroy: sym!("nvrtcDestroyProgram"),
            log_size: sym!("nvrtcGetProgramLogSize"),
            log: sym!("nvrtcGetProgramLog"),
            cubin_size: sym!("nvrtcGetCUBINSize"),
            cubin: sym!("nvrtcGetCUBIN"),
            ptx_size: sym!("nvrtcGetPTXSize"),
            ptx: sym!("nvrtcGetPTX"),
            error_string: sym!("nvrtcGetErrorString"),
            _lib: lib,
        };
        let (mut major, mut minor, mut n) = (0, 0, 0);
        // SAFETY: out-pointers to live locals; the array has `n` elements.
        unsafe {
            nvrtc.check(version(&mut major, &mut minor), "nvrtcVersion")?;
            nvrtc.check(num_archs(&mut n), "nvrtcGetNumSupportedArchs")?;
            let mut archs = vec![0; n.max(0) as usize];
            nvrtc.check(get_archs(archs.as_mut_ptr()), "nvrtcGetSupportedArchs")?;
            nvrtc.archs = archs;
        }
        nvrtc.version = (major, minor);
        Ok(nvrtc)
    }

    fn check(&self, result: NvrtcResult, call: &str) -> Result<(), String> {
        if result == 0 {
            return Ok(());
        }
        // SAFETY: nvrtcGetErrorString returns a static string (or null).
        let text = unsafe { (self.error_string)(result) };
        let text = if text.is_null() {
            format!("error {result}")
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        Err(format!("{call}: {text}"))
    }

    fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// Compiles `source` with `options`; on a compile failure, the error is
    /// NVRTC's log.
    fn compile(
        &self,
        source: &str,
        options: &[String],
        target: CudaTarget,
    ) -> Result<Vec<u8>, String> {
        let source = CString::new(source).map_err(|_| "the source contains a NUL byte")?;
        let options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| "an option contains a NUL byte")?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut program: NvrtcProgram = std::ptr::null_mut();
        // SAFETY: the strings outlive the calls; `program` is destroyed by
        // the guard below on every path.
        unsafe {
            self.check(
                (self.create)(
                    &mut program,
                    source.as_ptr(),
                    c"kcache.cu".as_ptr(),
                    0,
                    std::ptr::null(),
                    std::ptr::null(),
                ),
                "nvrtcCreateProgram",
            )?;
            let guard = ProgramGuard(self, program);
            let compiled =
                (self.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr());
            if compiled != 0 {
                let log = self.read(guard.1, self.log_size, self.log, "log")?;
                let log =
                    String::from_utf8_lossy(log.strip_suffix(&[0]).unwrap_or(&log)).into_owned();
                return Err(match self.check(compiled, "nvrtcCompileProgram") {
                    Err(call) if log.trim().is_empty() => call,
                    _ => log,
                });
            }
            match target {
                CudaTarget::Cubin => self.read(guard.1, self.cubin_size, self.cubin, "CUBIN"),
                CudaTarget::Ptx => {
                    let mut ptx = self.read(guard.1, self.ptx_size, self.ptx, "PTX")?;
                    // Stored without NUL: PTX is text; `load` adds one back.
                    if ptx.last() == Some(&0) {
                        ptx.pop();
                    }
                    Ok(ptx)
                }
            }
        }
    }

    /// Reads one of a program's outputs through its size and copy calls.
    ///
    /// # Safety
    /// `program` is a live NVRTC program.
    unsafe fn read(
        &self,
        program: NvrtcProgram,
        size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
        copy: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
        what: &str,
    ) -> Result<Vec<u8>, String> {
        let mut len = 0usize;
        // SAFETY: per the caller; the buffer holds `len` bytes.
        unsafe {
            self.check(size(program, &mut len), &format!("nvrtcGet{what}Size"))?;
            let mut bytes = vec![0u8; len];
            if len > 0 {
                self.check(
                    copy(program, bytes.as_mut_ptr().cast()),
                    &format!("nvrtcGet{what}"),
                )?;
            }
            Ok(bytes)
        }
    }
}

struct ProgramGuard<'a>(&'a Nvrtc, NvrtcProgram);

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by this NVRTC and is destroyed once.
        unsafe { (self.0.destroy)(&mut self.1) };
    }
}

/// The places NVRTC is looked for, in order, when nothing names it (see the
/// module docs). Candidates are files that exist, except the bare names that
/// stand for the default library search.
fn nvrtc_candidates() -> Vec<PathBuf> {
    const NAMES: [&str; 2] = ["libnvrtc.so.12", "libnvrtc.so"];
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");

    let mut python_roots: Vec<PathBuf> = Vec::new();
    python_roots.extend(env("VIRTUAL_ENV"));
    python_roots.extend(env("CONDA_PREFIX"));
    if let Some(home) = &home {
        python_roots.push(home.join(".local"));
    }
    let pyenv = env("PYENV_ROOT").or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    if let Some(pyenv) = pyenv {
        python_roots.extend(subdirs(&pyenv.join("versions"), ""));
    }
    python_roots.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));

    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in &python_roots {
        for python in subdirs(&root.join("lib"), "python3") {
            for packages in ["site-packages", "dist-packages"] {
                dirs.push(python.join(packages).join("nvidia/cuda_nvrtc/lib"));
            }
        }
    }
    let mut candidates: Vec<PathBuf> = in_dirs(&dirs, &NAMES);
    candidates.extend(NAMES.map(PathBuf::from));

    let mut toolkits: Vec<PathBuf> = Vec::new();
    toolkits.extend(env("CUDA_HOME"));
    toolkits.extend(env("CUDA_PATH"));
    toolkits.push(PathBuf::from("/usr/local/cuda"));
    toolkits.extend(subdirs(Path::new("/usr/local"), "cuda-"));
    let toolkit_dirs: Vec<PathBuf> = toolkits
        .iter()
        .flat_map(|t| [t.join("lib64"), t.join("lib")])
        .collect();
    candidates.extend(in_dirs(&toolkit_dirs, &NAMES));
    candidates
}

/// `dir`'s subdirectories whose names start with `prefix`, newest version
/// first (descending by name, numbers compared as numbers).
fn subdirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(version_key(p.file_name().unwrap_or_default())));
    found
}

/// Sorts `python3.9` before `python3.11` and `cuda-12.9` before `cuda-12.10`.
fn version_key(name: &OsStr) -> Vec<(u64, String)> {
    let name = name.to_string_lossy();
    let mut key = Vec::new();
    let mut rest = name.as_ref();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            key.push((0, rest[..text].to_string()));
            rest = &rest[text..];
        }
    }
    key
}

fn in_dirs(dirs: &[PathBuf], names: &[&str]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .filter(|p| p.is_file())
        .collect()
}

/// The `nvidia/cuda_nvrtc/lib` directories under `python3`'s `sys.path`.
fn nvrtc_dirs_from_python() -> Vec<PathBuf> {
    let Some(python) = gpu::find_on_path("python3") else {
        return Vec::new();
    };
    let output = std::process::Command::new(python)
        .args(["-I", "-c", "import sys\nfor p in sys.path: print(p)"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| Path::new(l).join("nvidia/cuda_nvrtc/lib"))
        .collect()
}

/// Loads NVRTC from `explicit` (a file or a directory), or else from the
/// first candidate that loads. The error says where it looked.
fn open_nvrtc(explicit: Option<&Path>) -> Result<Nvrtc, String> {
    if let Some(path) = explicit {
        let file = if path.is_dir() {
            ["libnvrtc.so.12", "libnvrtc.so"]
                .iter()
                .map(|n| path.join(n))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!("{}: no libnvrtc.so.12 or libnvrtc.so in it", path.display())
                })?
        } else {
            path.to_path_buf()
        };
        return Nvrtc::open(&file);
    }
    let mut failed = Vec::new();
    let python = || {
        in_dirs(
            &nvrtc_dirs_from_python(),
            &["libnvrtc.so.12", "libnvrtc.so"],
        )
    };
    for candidate in nvrtc_candidates().into_iter().chain(
        std::iter::from_fn({
            let mut python = Some(python);
            move || python.take().map(|p| p())
        })
        .flatten(),
    ) {
        match Nvrtc::open(&candidate) {
            Ok(nvrtc) => return Ok(nvrtc),
            // A bare name that does not load is only "not on the default
            // library path"; a file that exists but does not load is news.
            Err(e) if candidate.is_absolute() => failed.push(e),
            Err(_) => {}
        }
    }
    Err(format!(
        "NVRTC (libnvrtc.so.12) not found in the pip wheel's place under any Python \
         site-packages, on the default library path, or under CUDA_HOME, CUDA_PATH or \
         /usr/local/cuda*: `pip install nvidia-cuda-nvrtc-cu12`, install the CUDA toolkit, \
         or set KCACHE_NVRTC_LIB to the library or its directory{}",
        if failed.is_empty() {
            String::new()
        } else {
            format!(" (found but not loadable: {})", failed.join("; "))
        }
    ))
}

/// NVRTC as found by the search (or `KCACHE_NVRTC_LIB`), loaded once per
/// process.
fn default_nvrtc() -> Result<Arc<Nvrtc>, String> {
    static NVRTC: OnceLock<Result<Arc<Nvrtc>, String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            let explicit = std::env::var_os("KCACHE_NVRTC_LIB")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from);
            open_nvrtc(explicit.as_deref())
                .map(Arc::new)
                .map_err(|e| match explicit {
                    Some(_) => format!("KCACHE_NVRTC_LIB: {e}"),
                    None => e,
                })
        })
        .clone()
}

fn nvrtc_for(config: &CudaConfig) -> Result<Arc<Nvrtc>, String> {
    match &config.nvrtc {
        Some(path) => open_nvrtc(Some(path)).map(Arc::new),
        None => default_nvrtc(),
    }
}

// --------------------------------------------------------------- driver ----

/// One CUDA device: its primary context and the stream kcache uses on it.
pub struct CudaDevice {
    stream: Arc<CudaStream>,
    context: Arc<CudaContext>,
    index: usize,
    name: String,
    capability: (i32, i32),
}

impl CudaDevice {
    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The compute capability, e.g. `(9, 0)`.
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The device's primary context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("capability", &self.capability)
            .finish()
    }
}

/// Runs a driver call, turning a `cudarc` panic (a missing library or
/// symbol) into an error: the backend must never panic on a machine without
/// CUDA.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            Err(format!("{what}: {message}"))
        }
    }
}

/// Whether the driver library is present, and how many devices it has.
fn device_count() -> Result<usize, String> {
    // SAFETY: only tries to dlopen the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so.1 not found)".into());
    }
    guarded("the CUDA driver", || {
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| format!("no CUDA device (cuInit: {e})"))
    })
}

/// `NVIDIA H200 (sm_90)`, without creating a context.
fn describe_device(index: usize) -> Result<String, String> {
    use cudarc::driver::result::device;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let fail = |e: cudarc::driver::DriverError| format!("device {index}: {e}");
    let dev = device::get(index as c_int).map_err(fail)?;
    let name = device::get_name(dev).map_err(fail)?;
    // SAFETY: `dev` is a valid device handle from cuDeviceGet.
    let (major, minor) = unsafe {
        (
            device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(fail)?,
            device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(fail)?,
        )
    };
    Ok(format!("{name} (sm_{major}{minor})"))
}

fn open_device(index: usize) -> Result<CudaDevice, String> {
    let count = device_count()?;
    if index >= count {
        return Err(format!("no CUDA device {index} (there are {count})"));
    }
    guarded("the CUDA driver", || {
        let context = CudaContext::new(index).map_err(|e| format!("device {index}: {e}"))?;
        let name = context.name().map_err(|e| format!("device {index}: {e}"))?;
        let capability = context
            .compute_capability()
            .map_err(|e| format!("device {index}: {e}"))?;
        let stream = context
            .new_stream()
            .map_err(|e| format!("device {index}: cannot create a stream: {e}"))?;
        Ok(CudaDevice {
            stream,
            context,
            index,
            name,
            capability,
        })
    })
}

// ---------------------------------------------------------- architecture ---

/// An architecture: `90` and an optional feature suffix (`a` or `f`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Arch {
    number: c_int,
    suffix: String,
}

impl Arch {
    fn parse(text: &str) -> Option<Arch> {
        let text = text.trim();
        let rest = text
            .strip_prefix("sm_")
            .or_else(|| text.strip_prefix("compute_"))
            .unwrap_or(text);
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let suffix = &rest[digits..];
        if digits == 0 || !matches!(suffix, "" | "a" | "f") {
            return None;
        }
        Some(Arch {
            number: rest[..digits].parse().ok()?,
            suffix: suffix.to_string(),
        })
    }

    fn real(&self) -> String {
        format!("sm_{}{}", self.number, self.suffix)
    }

    fn virtual_(&self) -> String {
        format!("compute_{}{}", self.number, self.suffix)
    }
}

// -------------------------------------------------------------- backend ----

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

/// The CUDA backend: NVRTC for one architecture and target, and the device
/// to load into where one is present.
#[derive(Debug)]
pub struct Cuda {
    nvrtc: Arc<Nvrtc>,
    lifecycle: Lifecycle<CudaDevice, CudaProgram>,
    /// Why there is no device, when there is none.
    no_device: Option<String>,
    arch: Arch,
    target: CudaTarget,
    identity: String,
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
    /// Loads NVRTC and, unless compile-only, opens the device. Without NVRTC
    /// this is [`BackendError::Unavailable`]; without a driver or a device
    /// the backend is compile only (see [`Cuda::no_device_reason`]). A
    /// configured architecture NVRTC cannot compile for is refused. The
    /// handle cache listens to the process's hooks ([`hooks::global`]).
    pub fn new(config: &CudaConfig) -> Result<Self, BackendError> {
        Self::with_hooks(config, hooks::global())
    }

    /// [`Cuda::new`], with the handle cache's device-destroy listener
    /// registered on `hooks` (and teardown notifications sent there).
    pub fn with_hooks(config: &CudaConfig, hooks: &Hooks) -> Result<Self, BackendError> {
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
        Ok(Cuda {
            nvrtc,
            lifecycle: Lifecycle::new(FAMILY, config.device, device, hooks),
            no_device,
            arch,
            target: config.target,
            identity,
        })
    }

    /// The device programs are loaded into, where one is present (and until
    /// [`Cuda::destroy_device`]).
    pub fn device(&self) -> Option<Arc<CudaDevice>> {
        self.lifecycle.current()
    }

    /// The per-device handle cache of loaded programs (for inspection; the
    /// backend fills and empties it). A compiled group's entry holds its
    /// bytes; a loaded program's holds none.
    pub fn kernel_cache(&self) -> &KernelCache<Compiled<CudaProgram>> {
        self.lifecycle.kernels()
    }

    /// Tears the device down as the teardown contract asks: notifies
    /// device-destroy listeners of `("cuda", ordinal)` first (this backend's
    /// cache evicts the device's programs, the layers above forget theirs),
    /// then lets go of the stream and the primary context, and only then
    /// reports a listener failure ([`BackendError::Teardown`]). Programs
    /// handed out stay usable and keep their module and context alive until
    /// the last is dropped (see the module docs); the backend compiles and
    /// loads nothing afterwards. Calling it again only notifies again.
    pub fn destroy_device(&self) -> Result<(), BackendError> {
        self.lifecycle.destroy_device()
    }

    /// Why the backend is compile only, when it is.
    pub fn no_device_reason(&self) -> Option<&str> {
        self.no_device.as_deref()
    }

    /// The architecture compiled for, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        self.arch.real()
    }

    /// The NVRTC version, e.g. `12.9`.
    pub fn nvrtc_version(&self) -> String {
        self.nvrtc.version_string()
    }

    /// Where NVRTC was loaded from.
    pub fn nvrtc_path(&self) -> &Path {
        &self.nvrtc.path
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
            // No module to ask: the image itself must define every kernel.
            if let Some(symbol) = symbols.iter().find(|s| !image_has_entry(&image, s)) {
                return Err(BackendError::MissingSymbol {
                    backend: FAMILY,
                    symbol: symbol.clone(),
                });
            }
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

/// Whether a module image defines kernel `symbol`, for when no device can
/// be asked: PTX declares a kernel with `.entry`, and a cubin's symbol table
/// marks it `STO_CUDA_ENTRY`.
fn image_has_entry(image: &[u8], symbol: &str) -> bool {
    if image.starts_with(b"\x7fELF") {
        return cubin_has_entry(image, symbol).unwrap_or(false);
    }
    String::from_utf8_lossy(image)
        .split(".entry")
        .skip(1)
        .any(|rest| {
            rest.trim_start()
                .strip_prefix(symbol)
                .is_some_and(|after| after.starts_with(|c: char| c == '(' || c.is_whitespace()))
        })
}

/// [`image_has_entry`] for a 64-bit little-endian ELF (what NVRTC writes);
/// `None` when the image is not one or is truncated.
fn cubin_has_entry(elf: &[u8], symbol: &str) -> Option<bool> {
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    const STO_CUDA_ENTRY: u8 = 0x10;
    let bytes = |o: usize, n: usize| elf.get(o..o.checked_add(n)?);
    let u16_at = |o| Some(u16::from_le_bytes(bytes(o, 2)?.try_into().ok()?) as usize);
    let u32_at = |o| Some(u32::from_le_bytes(bytes(o, 4)?.try_into().ok()?) as usize);
    let u64_at = |o| usize::try_from(u64::from_le_bytes(bytes(o, 8)?.try_into().ok()?)).ok();
    if bytes(4, 2)? != [2, 1] {
        return None;
    }
    let (shoff, shentsize, shnum) = (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?);
    let header = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
    for i in 0..shnum {
        let sh = header(i)?;
        if u32_at(sh + 4)? != SHT_SYMTAB as usize {
            continue;
        }
        let (off, size, entsize) = (u64_at(sh + 0x18)?, u64_at(sh + 0x20)?, u64_at(sh + 0x38)?);
        let strtab_header = header(u32_at(sh + 0x28)?)?;
        let strtab = bytes(u64_at(strtab_header + 0x18)?, u64_at(strtab_header + 0x20)?)?;
        if entsize < 24 {
            return None;
        }
        for sym in (0..size / entsize).map(|j| off + j * entsize) {
            let (info, other) = (*elf.get(sym + 4)?, *elf.get(sym + 5)?);
            if info & 0xf != STT_FUNC || other & STO_CUDA_ENTRY == 0 {
                continue;
            }
            let name = strtab.get(u32_at(sym)?..)?;
            let end = name.iter().position(|&b| b == 0)?;
            if &name[..end] == symbol.as_bytes() {
                return Some(true);
            }
        }
    }
    Some(false)
}

impl Backend for Cuda {
    fn key_extras(
        &self,
        kernel: &super::KernelSource<'_>,
        options: &[String],
    ) -> Result<super::KeyExtras, BackendError> {
        super::gpu_keys::key_extras(FAMILY, super::gpu_keys::Driver::Cuda, kernel, options)
    }

    type Program = CudaProgram;

    fn family(&self) -> &'static str {
        FAMILY
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<CudaProgram>, BackendError> {
        gpu::check_job(FAMILY, job)?;
        let fail = gpu::compile_error(FAMILY, job);
        if let Some(option) = job.options.iter().find(|o| sets_arch(o)) {
            return Err(fail(format!(
                "`{option}`: the architecture is the backend's configuration (CudaConfig::arch), not an option"
            )));
        }
        let arch = match self.target {
            CudaTarget::Cubin => self.arch.real(),
            CudaTarget::Ptx => self.arch.virtual_(),
        };
        let mut options = vec![format!("--gpu-architecture={arch}")];
        options.extend(job.options.iter().cloned());
        let source = gpu::concatenate(job);
        let (extras, uncacheable) =
            super::gpu_keys::group_key_part(FAMILY, super::gpu_keys::Driver::Cuda, job);
        let keyed = format!("{source}{extras}");
        let mut compiled = self.lifecycle.compile(job, &keyed, |device| {
            let binary = self
                .nvrtc
                .compile(&source, &options, self.target)
                .map_err(fail)?;
            let image = self.image(&binary)?;
            let program = self.program(device, image, gpu::kernel_names(job))?;
            Ok(Compiled {
                program: Arc::new(program),
                binary,
                uncacheable: None,
            })
        })?;
        compiled.uncacheable = uncacheable;
        Ok(compiled)
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<CudaProgram>, BackendError> {
        let image = self.image(binary)?;
        let program = self.lifecycle.load(binary, |device| {
            let symbols = symbols.iter().map(|s| s.to_string()).collect();
            Ok(Arc::new(self.program(device, image, symbols)?))
        })?;
        // A cached program was loaded for other symbols, perhaps.
        program.check_symbols(symbols)?;
        Ok(program)
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.lifecycle.clear()
    }

    fn language(&self) -> Language {
        Language::Cuda
    }

    fn device_index(&self) -> usize {
        self.lifecycle.index()
    }

    fn can_run(&self) -> bool {
        self.device().is_some()
    }

    fn launch(
        &self,
        program: &CudaProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let fail = |reason: String| BackendError::Launch {
            backend: FAMILY,
            symbol: symbol.to_string(),
            reason,
        };
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
