//! The trait a compiler implements, and one module per compiler.
//!
//! `cc/` implements [`Backend`] itself. The GPU APIs share one
//! implementation, [`GpuBackend`], over a small [`Driver`] trait: `opencl`,
//! `cuda/` and `vulkan/` are drivers (open a device, compile and load on it,
//! launch), and [`opencl::OpenCl`], [`cuda::Cuda`], [`vulkan::Vulkan`] name
//! `GpuBackend` over each. A new GPU API is one more driver.
//! A caller that needs another program type than a backend's own (its bytes
//! kept beside it, or nothing loaded at all) wraps the backend in
//! [`map::MapProgram`], which forwards everything else.
//!
//! A backend compiles a *group* of kernels (one option list) into one program,
//! hands back the program's bytes so a store can persist them, loads a program
//! from such bytes in a fresh process, and (where it can run here) launches a
//! kernel of a loaded program on host data.
//!
//! Required: [`Backend::family`], [`Backend::identity`], [`Backend::compile`],
//! [`Backend::load`]. Everything else has a default.

use std::fmt;
use std::sync::Arc;

pub mod cc;
pub mod cuda;
mod debug_info;
pub use debug_info::records_names;
mod gpu;
pub use gpu::{Driver, GpuBackend, Opened, Toolchain};

pub mod map;
pub mod opencl;
mod shared;
pub mod vulkan;
pub mod workdir;

/// Runs `f` as one keying batch: inside it, every file a key reads (a
/// header, by content) is stat-checked once, not once per kernel that
/// includes it (see `cc::includes::memo`, which the GPU drivers' keys share).
/// Every backend's [`Backend::key_extras`] may be called inside; the resolver
/// keys each batch in one.
pub(crate) fn key_batch<R>(f: impl FnOnce() -> R) -> R {
    cc::includes::memo::batch(f)
}

/// One kernel of a group, as the renderer wrote it.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource<'a> {
    /// The symbol the kernel is defined under in `text`.
    pub symbol: &'a str,
    /// The kernel's own text: self-contained top-level definitions.
    pub text: &'a str,
}

/// One compile: a group of kernels under one option list.
#[derive(Clone, Copy, Debug)]
pub struct CompileJob<'a> {
    /// The kernels; no two share a symbol.
    pub kernels: &'a [KernelSource<'a>],
    /// The option list (compiler flags), in order.
    pub options: &'a [String],
    /// This program's number among the batch's programs, in batch order.
    pub group: usize,
    /// How many programs the batch compiles.
    pub n_groups: usize,
    /// Compile anew: answer from no handle cache and keep the result in
    /// none. The resolver sets it for a group holding an uncacheable kernel
    /// (`__TIME__`), whose text is the same from compile to compile while
    /// its program is not.
    pub fresh: bool,
}

/// What a compile produced.
pub struct Compiled<P> {
    /// The loaded program.
    pub program: Arc<P>,
    /// The program's bytes, as [`Backend::load`] takes them back; its length
    /// is the weight the code cache charges for the program.
    pub binary: Vec<u8>,
    /// Set when the compile read something its key did not cover (the
    /// compiler's own report of the files it read names one the key did not
    /// digest): the program answers this compile but is never published or
    /// stored.
    pub uncacheable: Option<String>,
}

impl<P> fmt::Debug for Compiled<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("binary_len", &self.binary.len())
            .finish()
    }
}

/// What a kernel's compile reads besides its text, for its key: everything
/// [`Backend::key_extras`] found that can change what the compile produces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyExtras {
    /// Digests of the files the compile reads (headers, forced includes,
    /// link inputs), each over its path and contents, in a deterministic order.
    pub digests: Vec<crate::key::Digest>,
    /// Names that are macros where the kernel is compiled: predefined by the
    /// compiler, defined by an option (`-D`, `-imacros`, a forced include) or
    /// by a header the compile reads. They are never renamed.
    pub macros: Arc<crate::canon::MacroNames>,
    /// Macro names whose expansion depends on where, or in which function,
    /// they are expanded (their bodies use `__LINE__`, `__FILE__`,
    /// `__func__`, ...; `assert` is one): a kernel that uses one is keyed on
    /// its raw text and its full name.
    pub position_macros: Arc<crate::canon::MacroNames>,
    /// Macro names from outside the kernel whose body pastes tokens, or
    /// names a macro that does (`#define CAT(a, b) a##b`: `CAT(q, 1)` reads
    /// a local `q1` that no token spells): in a kernel that names one, every
    /// name a paste may spell is kept as written (see
    /// [`crate::canon::pastes`]), and the kernel is grouped with no kernel
    /// declaring such a name.
    pub pasting: Arc<crate::canon::MacroNames>,
    /// Words the bodies of those macros name (a header's `#define GET
    /// v1_a`): a local spelled like one is read by the expansion, so it is
    /// never renamed. (The kernel's own macros the binder reads itself.)
    pub reached: Arc<crate::canon::MacroNames>,
    /// Set when the compile's result cannot be keyed at all (a header uses
    /// `__TIME__`): the kernel is compiled every time and never published.
    pub uncacheable: Option<String>,
    /// Set when the options make the compile record the kernel's own
    /// spellings, which a renaming would change (debug information names
    /// locals and parameters and gives their lines and columns: `-g`, `-G`,
    /// `-lineinfo`; OpenCL's `-cl-kernel-arg-info` keeps parameter names
    /// for `clGetKernelArgInfo`): the kernel is keyed on its raw text and
    /// full name, and compiled alone (in a group, its lines would be the
    /// group's). See [`records_names`].
    pub records_names: Option<String>,
    /// Tells, later, whether [`Backend::key_extras`] would still answer these
    /// extras for the same kernel and options; `None` when the backend cannot
    /// tell cheaply (the resolver then asks it again on every keying).
    pub validity: Option<KeyValidity>,
}

/// Whether a [`KeyExtras`] still holds: a check cheaper than deriving the
/// extras again (the cc backend's re-stats, once per keying batch, the files
/// and directories the extras were computed from, or trusts change reports
/// on them: see [`crate::resolve::watch`]). The resolver trusts a
/// memoized key only while it holds, so it must answer `false` whenever
/// anything the extras depend on may have changed.
#[derive(Clone)]
pub struct KeyValidity(Arc<dyn Fn() -> bool + Send + Sync>);

impl KeyValidity {
    /// A validity that asks `holds`.
    pub fn new(holds: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        KeyValidity(Arc::new(holds))
    }

    /// Whether the extras still hold.
    pub fn holds(&self) -> bool {
        (self.0)()
    }
}

impl fmt::Debug for KeyValidity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyValidity")
    }
}

/// Two validities are equal only when they are the same check.
impl PartialEq for KeyValidity {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for KeyValidity {}

/// The language a backend compiles, so a renderer knows what to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// C99 for the system C compiler.
    C,
    /// OpenCL C.
    OpenCl,
    /// CUDA C++ (NVRTC).
    Cuda,
    /// GLSL compute shaders (Vulkan).
    Glsl,
}

/// Host data for one kernel launch. Buffers are copied to the device before
/// the launch and back after it.
///
/// The calling convention every backend follows: buffers are bound in order
/// (C/CUDA/OpenCL parameters `float*` first, GLSL storage buffers at bindings
/// 0..), then the `i32` scalars (C/CUDA/OpenCL parameters after the buffers,
/// GLSL push constants in order).
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// `f32` buffers, read and written by the kernel.
    pub buffers: Vec<Vec<f32>>,
    /// `i32` scalar arguments.
    pub scalars: Vec<i32>,
    /// Global work size (threads in each dimension); the C backend calls the
    /// kernel once, and the kernel loops itself.
    pub global: [usize; 3],
    /// Work-group (block) size; `[1, 1, 1]` lets the backend pick.
    pub local: [usize; 3],
}

/// What a backend reports about itself, for `kcache backends`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BackendInfo {
    /// `cc`, `opencl`, `cuda` or `vulkan`.
    pub backend: String,
    /// Whether it can compile here.
    pub available: bool,
    /// The compiler or runtime version, when available.
    pub version: Option<String>,
    /// The devices it found.
    pub devices: Vec<String>,
    /// Why it is unavailable, or what it cannot do here (e.g. compile only).
    pub reason: Option<String>,
}

/// Errors at the backend boundary.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend's library or device is missing.
    #[error("{backend}: unavailable: {reason}")]
    Unavailable {
        /// Backend family.
        backend: &'static str,
        /// Why.
        reason: String,
    },
    /// The compiler rejected a group.
    #[error("{backend}: compile of {} failed:\n{log}", kernels.join(", "))]
    Compile {
        /// Backend family.
        backend: &'static str,
        /// The kernels of the failed group.
        kernels: Vec<String>,
        /// The compiler's diagnostics.
        log: String,
    },
    /// A program could not be loaded from its bytes.
    #[error("{backend}: load failed: {reason}")]
    Load {
        /// Backend family.
        backend: &'static str,
        /// Why.
        reason: String,
    },
    /// A symbol is not in the program.
    #[error("{backend}: no kernel `{symbol}` in the program")]
    MissingSymbol {
        /// Backend family.
        backend: &'static str,
        /// The symbol asked for.
        symbol: String,
    },
    /// A launch failed, or the backend cannot run kernels here.
    #[error("{backend}: launch of `{symbol}` failed: {reason}")]
    Launch {
        /// Backend family.
        backend: &'static str,
        /// The kernel.
        symbol: String,
        /// Why.
        reason: String,
    },
    /// A file the backend needed could not be read or written.
    #[error("{backend}: {path}: {source}")]
    Io {
        /// Backend family.
        backend: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// kcache will not compile or key this: an option with side effects, or
    /// an input the program key cannot see (a computed `#include`, a file it
    /// cannot resolve).
    #[error("{backend}: refused `{input}`: {reason}")]
    Refused {
        /// Backend family.
        backend: &'static str,
        /// The option or directive, as written.
        input: String,
        /// Why.
        reason: String,
    },
    /// A teardown (cache clear, device destroy) completed, but releasing a
    /// handle or telling a layer above failed; reported once the teardown
    /// was done.
    #[error("{backend}: teardown completed, but {source}")]
    Teardown {
        /// Backend family.
        backend: &'static str,
        /// What failed.
        #[source]
        source: crate::cache::guarded::GuardedError,
    },
    /// The backend's device was destroyed or its cache cleared while the
    /// program was being built.
    #[error("{backend}: {reason}")]
    Invalidated {
        /// Backend family.
        backend: &'static str,
        /// Which teardown intervened.
        reason: String,
    },
}

/// How a build through a backend's handle cache can fail: the backend's own
/// error, or the guarded cache turning the value away because a teardown
/// intervened. Shared by every backend, so they report teardowns alike.
pub(crate) enum BuildError {
    Backend(BackendError),
    Guarded(crate::cache::guarded::GuardedError),
}

impl From<crate::cache::guarded::GuardedError> for BuildError {
    fn from(e: crate::cache::guarded::GuardedError) -> Self {
        BuildError::Guarded(e)
    }
}

impl From<BackendError> for BuildError {
    fn from(e: BackendError) -> Self {
        BuildError::Backend(e)
    }
}

impl BuildError {
    /// As `family`'s error: a build a device destroy or a clear overtook is
    /// [`BackendError::Invalidated`]; any other guarded-cache failure (a
    /// destroy hook or a listener) is [`BackendError::Teardown`].
    pub(crate) fn into_backend(self, family: &'static str) -> BackendError {
        use crate::cache::guarded::GuardedError;
        match self {
            BuildError::Backend(e) => e,
            BuildError::Guarded(
                e @ (GuardedError::DeviceDestroyedDuringBuild { .. }
                | GuardedError::ClearedDuringBuild { .. }),
            ) => BackendError::Invalidated {
                backend: family,
                reason: e.to_string(),
            },
            BuildError::Guarded(source) => BackendError::Teardown {
                backend: family,
                source,
            },
        }
    }
}

/// A compiler kcache can drive.
///
/// Adding a method: forward it in [`map::MapProgram`] (its impl spells out
/// every method; clippy's `missing_trait_methods` refuses one left to its
/// default) and answer it distinctively in the probe of `map`'s tests.
/// Wrappers that change only the program type go through that adapter, so a
/// defaulted keying method it did not forward would key every wrapped
/// backend on the default instead of the backend's own answer: wrong keys,
/// and a wrong cache hit.
pub trait Backend: Send + Sync {
    /// A loaded program: what a kernel is looked up in and launched from.
    type Program: Send + Sync + 'static;

    /// The family name: `cc`, `opencl`, `cuda` or `vulkan`.
    fn family(&self) -> &'static str;

    /// Everything outside a kernel's text that decides the compiled bytes:
    /// the resolved compiler, its version, the target. It goes into every
    /// program key, so a change of compiler never hits an old entry.
    fn identity(&self) -> &str;

    /// Compiles a group into one program. Called concurrently from several
    /// threads when a batch is split.
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<Self::Program>, BackendError>;

    /// Loads a program from bytes [`Backend::compile`] produced (in this
    /// process or another); `symbols` are the kernels it must hold.
    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<Self::Program>, BackendError>;

    /// [`Backend::load`] for bytes whose blake3 digest the caller already
    /// knows (the resolver read them from a verified store entry named by
    /// it), so the backend need not hash them again. The caller vouches that
    /// `digest` is the digest of `binary`.
    fn load_digested(
        &self,
        binary: &[u8],
        _digest: &crate::key::Digest,
        symbols: &[&str],
    ) -> Result<Arc<Self::Program>, BackendError> {
        self.load(binary, symbols)
    }

    /// The version of this backend's keys, which goes into every program key
    /// beside [`crate::key::KEY_VERSION`]: bump it when what the backend
    /// reports for a key ([`Backend::key_extras`], [`Backend::identity`])
    /// changes meaning, and only this backend's stored entries miss.
    fn key_version(&self) -> u32 {
        0
    }

    /// A short line naming the compiler for people (the identity can be long).
    fn describe(&self) -> String {
        self.identity()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// The language kernels are written in.
    fn language(&self) -> Language {
        Language::C
    }

    /// The backend's own index of the device it compiles for.
    fn device_index(&self) -> usize {
        0
    }

    /// Whether the resolver may split a batch into several programs and
    /// compile them at once.
    fn split_capable(&self) -> bool {
        true
    }

    /// What a kernel's compile reads besides its text, as its key needs it
    /// (see [`KeyExtras`]); an error refuses to key it.
    fn key_extras(
        &self,
        _kernel: &KernelSource<'_>,
        _options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        Ok(KeyExtras::default())
    }

    /// Whether [`Backend::compile`] compiles each kernel of a group on its
    /// own (its own translation unit, nothing shared but the options), so
    /// that no kernel of a group can change what another compiles to. When
    /// false, the resolver groups only kernels a lexical check proves
    /// isolated from each other, and compiles the rest alone.
    fn isolates_kernels(&self) -> bool {
        false
    }

    /// Whether [`Backend::launch`] can run kernels on this machine.
    fn can_run(&self) -> bool {
        false
    }

    /// Runs `symbol` from `program` on `launch`'s data, copying buffers back.
    fn launch(
        &self,
        _program: &Self::Program,
        symbol: &str,
        _launch: &mut Launch,
    ) -> Result<(), BackendError> {
        Err(BackendError::Launch {
            backend: self.family(),
            symbol: symbol.to_string(),
            reason: "this backend cannot run kernels here".into(),
        })
    }

    /// Releases every handle the backend caches, telling the layers above
    /// first and last (see [`crate::cache::hooks::around_clear`]).
    fn clear_cache(&self) -> Result<(), BackendError> {
        Ok(())
    }
}
