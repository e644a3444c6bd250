//! A loaded shared object and the C calling convention kcache's kernels use.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::backend::BackendError;
use crate::key::Digest;

/// The most `float*` buffers a kernel launched through [`CcProgram::call`]
/// takes.
pub const MAX_BUFFERS: usize = 8;
/// The most `int` scalars a kernel launched through [`CcProgram::call`] takes.
pub const MAX_SCALARS: usize = 4;

/// A symbol's address in a loaded object. Valid while the object stays
/// loaded, which the [`CcProgram`] holding it guarantees.
#[derive(Clone, Copy)]
struct SymbolPtr(*const ());

// SAFETY: the address of code in a loaded object is not tied to a thread;
// the owning `CcProgram` keeps the object loaded while the address is used.
unsafe impl Send for SymbolPtr {}
// SAFETY: as above; the address is only read.
unsafe impl Sync for SymbolPtr {}

/// A compiled group of C kernels, loaded into the process.
///
/// The shared object stays loaded while any `Arc<CcProgram>` does: dropping
/// the last one (after the backend's cache let go of it in a clear or a
/// device destroy, say) closes the library, never before.
pub struct CcProgram {
    symbols: Vec<String>,
    resolved: HashMap<String, SymbolPtr>,
    path: PathBuf,
    file_id: Option<(u64, u64)>,
    binary: Vec<u8>,
    digest: Digest,
    // Dropped (closed) after everything that points into it.
    library: libloading::Library,
    // Removed once the library is closed.
    _file: tempfile::TempPath,
}

impl fmt::Debug for CcProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CcProgram")
            .field("symbols", &self.symbols)
            .field("path", &self.path)
            .field("binary_len", &self.binary.len())
            .finish()
    }
}

/// Why an object could not be used as a program.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// `dlopen` failed (not a shared object, an undefined reference, ...).
    Dl(String),
    /// A required symbol is not defined by the object itself.
    Missing(String),
}

#[cfg(unix)]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &Path) -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
fn dlopen(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // RTLD_NOW: an undefined reference fails here, with the name, rather than
    // killing the process at the first call. RTLD_LOCAL: kernels of different
    // programs may share names.
    // SAFETY: loading runs the object's initialisers; kcache's objects are
    // compiled from kernel text the caller supplied (or bytes a verified store
    // returned for such text), which the caller trusts like any code it runs.
    unsafe {
        libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL)
            .map(Into::into)
    }
}

#[cfg(not(unix))]
fn dlopen(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: as above.
    unsafe { libloading::Library::new(path) }
}

impl CcProgram {
    /// Loads the object at `file` (holding `binary`, whose digest is
    /// `digest`) and resolves `symbols`, each of which it must define itself.
    /// The file is removed when the program drops, or now on a failure.
    pub(crate) fn open(
        file: tempfile::TempPath,
        binary: Vec<u8>,
        digest: Digest,
        symbols: &[&str],
    ) -> Result<CcProgram, OpenError> {
        let path = file.to_path_buf();
        let library = dlopen(&path).map_err(|e| {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg = format!("{msg}: {s}");
                source = s.source();
            }
            OpenError::Dl(msg)
        })?;
        let mut program = CcProgram {
            symbols: symbols.iter().map(|s| s.to_string()).collect(),
            resolved: HashMap::with_capacity(symbols.len()),
            file_id: file_id(&path),
            path,
            binary,
            digest,
            library,
            _file: file,
        };
        for s in symbols {
            let p = program
                .lookup(s)
                .ok_or_else(|| OpenError::Missing(s.to_string()))?;
            program.resolved.insert(s.to_string(), SymbolPtr(p));
        }
        Ok(program)
    }

    /// `dlsym`, accepting only a definition in this object: a handle's lookup
    /// also searches its dependencies (libc, libm), whose `abs` is no kernel.
    fn lookup(&self, name: &str) -> Option<*const ()> {
        if name.contains('\0') {
            return None;
        }
        // SAFETY: the symbol is only used as an address here.
        let sym = unsafe { self.library.get::<*const ()>(name) }.ok()?;
        let p: *const () = *sym;
        if p.is_null() || !self.defines(p) {
            return None;
        }
        Some(p)
    }

    #[cfg(unix)]
    fn defines(&self, p: *const ()) -> bool {
        // SAFETY: dladdr only reads the loader's tables; `info` is plain data.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        if unsafe { libc::dladdr(p as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
            return false;
        }
        // SAFETY: dladdr returned a NUL-terminated name owned by the loader.
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        let name = Path::new(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()),
        );
        name == self.path || (self.file_id.is_some() && file_id(name) == self.file_id)
    }

    #[cfg(not(unix))]
    fn defines(&self, _: *const ()) -> bool {
        true
    }

    /// The kernels the program was compiled (or first loaded) for, in order.
    pub fn symbols(&self) -> &[String] {
        &self.symbols
    }

    /// The address of `name` when this object defines it (resolved at load
    /// for [`CcProgram::symbols`], looked up for any other name).
    pub fn symbol_ptr(&self, name: &str) -> Option<*const ()> {
        match self.resolved.get(name) {
            Some(p) => Some(p.0),
            None => self.lookup(name),
        }
    }

    /// Whether the object defines `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.symbol_ptr(name).is_some()
    }

    /// The shared object's bytes, as [`Backend::load`](crate::backend::Backend::load)
    /// takes them back.
    pub fn binary(&self) -> &[u8] {
        &self.binary
    }

    /// The blake3 digest of [`CcProgram::binary`] (the loaded file's name
    /// starts with it).
    pub fn binary_digest(&self) -> Digest {
        self.digest
    }

    /// The file the object was loaded from, in the backend's work directory:
    /// this program's own, removed when the program drops.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls kernel `symbol` as `void symbol(float* b0, ..., int s0, ...)`
    /// with `buffers` (passed in place, no copy) and `scalars`.
    ///
    /// # Errors
    ///
    /// [`BackendError::MissingSymbol`] when the object does not define
    /// `symbol`; [`BackendError::Launch`] for more than [`MAX_BUFFERS`]
    /// buffers or [`MAX_SCALARS`] scalars.
    ///
    /// # Safety
    ///
    /// The kernel must have exactly that signature and stay within the
    /// buffers' lengths: it is C code, and nothing checks what it does.
    pub unsafe fn call(
        &self,
        symbol: &str,
        buffers: &mut [&mut [f32]],
        scalars: &[i32],
    ) -> Result<(), BackendError> {
        let f = self
            .symbol_ptr(symbol)
            .ok_or_else(|| BackendError::MissingSymbol {
                backend: "cc",
                symbol: symbol.to_string(),
            })?;
        let (nb, ns) = (buffers.len(), scalars.len());
        if nb > MAX_BUFFERS || ns > MAX_SCALARS {
            return Err(BackendError::Launch {
                backend: "cc",
                symbol: symbol.to_string(),
                reason: format!(
                    "{nb} buffers and {ns} scalars: the C backend calls kernels with at most \
                     {MAX_BUFFERS} buffers and {MAX_SCALARS} scalars"
                ),
            });
        }
        let mut b = [std::ptr::null_mut::<f32>(); MAX_BUFFERS];
        for (slot, buf) in b.iter_mut().zip(buffers.iter_mut()) {
            *slot = buf.as_mut_ptr();
        }
        let mut s = [0i32; MAX_SCALARS];
        s[..ns].copy_from_slice(scalars);
        // SAFETY: the caller guarantees the kernel's signature matches
        // (nb pointers, then ns ints) and its accesses stay in bounds; `f` is
        // a function this object defines, loaded while `self` lives.
        unsafe { dispatch(f, &b, &s, nb, ns) };
        Ok(())
    }
}

/// Calls `f` with the first `B` of `b` and `S` of `s`, for one arity.
macro_rules! call_with {
    ($f:expr, $b:expr, $s:expr, [$($bi:literal)*], [$($si:literal)*]) => {{
        let f = std::mem::transmute::<
            *const (),
            unsafe extern "C" fn($(call_with!(@buffer $bi),)* $(call_with!(@scalar $si),)*),
        >($f);
        f($($b[$bi],)* $($s[$si],)*)
    }};
    (@buffer $i:literal) => { *mut f32 };
    (@scalar $i:literal) => { i32 };
}

/// Picks the scalar count for a fixed list of buffers.
macro_rules! by_scalars {
    ($f:expr, $b:expr, $s:expr, $ns:expr, [$($bi:literal)*]) => {
        match $ns {
            0 => call_with!($f, $b, $s, [$($bi)*], []),
            1 => call_with!($f, $b, $s, [$($bi)*], [0]),
            2 => call_with!($f, $b, $s, [$($bi)*], [0 1]),
            3 => call_with!($f, $b, $s, [$($bi)*], [0 1 2]),
            4 => call_with!($f, $b, $s, [$($bi)*], [0 1 2 3]),
            _ => unreachable!("arity checked by the caller"),
        }
    };
}

/// Calls `f` with `nb` buffers and `ns` scalars (both within the maxima).
///
/// # Safety
///
/// `f` must be a C function of exactly that signature.
unsafe fn dispatch(
    f: *const (),
    b: &[*mut f32; MAX_BUFFERS],
    s: &[i32; MAX_SCALARS],
    nb: usize,
    ns: usize,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        match nb {
            0 => by_scalars!(f, b, s, ns, []),
            1 => by_scalars!(f, b, s, ns, [0]),
            2 => by_scalars!(f, b, s, ns, [0 1]),
            3 => by_scalars!(f, b, s, ns, [0 1 2]),
            4 => by_scalars!(f, b, s, ns, [0 1 2 3]),
            5 => by_scalars!(f, b, s, ns, [0 1 2 3 4]),
            6 => by_scalars!(f, b, s, ns, [0 1 2 3 4 5]),
            7 => by_scalars!(f, b, s, ns, [0 1 2 3 4 5 6]),
            8 => by_scalars!(f, b, s, ns, [0 1 2 3 4 5 6 7]),
            _ => unreachable!("arity checked by the caller"),
        }
    }
}
