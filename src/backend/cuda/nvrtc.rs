//! A hand-written NVRTC binding: the few entry points kcache calls, loaded
//! from an explicit path (never through `cudarc`'s loader, which panics when
//! the library is missing).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use super::CudaTarget;

pub(super) type NvrtcProgram = *mut c_void;
// NVRTC results are read as plain integers: a newer library may return codes
// a Rust enum does not know.
pub(super) type NvrtcResult = c_int;

/// NVRTC, loaded from an explicit path; the function pointers stay valid as
/// long as `_lib` is loaded, which is as long as this value lives.
pub(super) struct Nvrtc {
    pub(super) path: PathBuf,
    pub(super) version: (c_int, c_int),
    /// The real architectures NVRTC can compile for (`90` for `sm_90`).
    pub(super) archs: Vec<c_int>,
    pub(super) create: unsafe extern "C" fn(
        *mut NvrtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcResult,
    pub(super) compile:
        unsafe extern "C" fn(NvrtcProgram, c_int, *const *const c_char) -> NvrtcResult,
    pub(super) destroy: unsafe extern "C" fn(*mut NvrtcProgram) -> NvrtcResult,
    pub(super) log_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    pub(super) log: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    pub(super) cubin_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    pub(super) cubin: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    pub(super) ptx_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    pub(super) ptx: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    pub(super) error_string: unsafe extern "C" fn(NvrtcResult) -> *const c_char,
    pub(super) _lib: libloading::Library,
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
    pub(super) fn open(path: &Path) -> Result<Nvrtc, String> {
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

    pub(super) fn check(&self, result: NvrtcResult, call: &str) -> Result<(), String> {
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

    pub(super) fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// Compiles `source` with `options`; on a compile failure, the error is
    /// NVRTC's log.
    pub(super) fn compile(
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
    pub(super) unsafe fn read(
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

pub(super) struct ProgramGuard<'a>(&'a Nvrtc, NvrtcProgram);

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by this NVRTC and is destroyed once.
        unsafe { (self.0.destroy)(&mut self.1) };
    }
}
