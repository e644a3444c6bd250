//! [`CcBuilder`]: how a [`CcBackend`] is configured before it opens.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::compiler::{self, Compiler};
use super::{CcBackend, CcProgram, FAMILY};
use crate::backend::workdir::LazyDir;
use crate::backend::BackendError;
use crate::cache::guarded::{GuardedCache, Handles, KernelCache};
use crate::cache::hooks::{self, Hooks};

/// Configures a [`CcBackend`]; start from [`CcBackend::builder`].
#[derive(Clone, Debug)]
pub struct CcBuilder {
    pub(super) program: OsString,
    pub(super) args: Vec<String>,
    pub(super) spec_error: Option<String>,
    pub(super) prelude: String,
    pub(super) default_flags: Vec<String>,
    pub(super) link_flags: Vec<String>,
    pub(super) source_dir: Option<PathBuf>,
    pub(super) work_root: Option<PathBuf>,
    pub(super) hooks: Option<Hooks>,
    pub(super) identity_cache: Option<PathBuf>,
    pub(super) keys_only: bool,
}

impl CcBuilder {
    /// The compiler command: a program name (searched in `PATH`) or path,
    /// optionally followed by arguments, split on whitespace (`gcc -m64`).
    pub fn compiler(mut self, command: impl AsRef<OsStr>) -> Self {
        match compiler::split_spec(command.as_ref()) {
            Ok((program, args)) => {
                self.program = program.into();
                self.args = args;
                self.spec_error = None;
            }
            Err(e) => self.spec_error = Some(e),
        }
        self
    }

    /// The compiler's program, taken as is (a path may contain spaces), with
    /// no leading arguments.
    pub fn compiler_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.program = path.into().into_os_string();
        self.args.clear();
        self.spec_error = None;
        self
    }

    /// Text put before the kernels of every translation unit (default: none).
    pub fn prelude(mut self, prelude: impl Into<String>) -> Self {
        self.prelude = prelude.into();
        self
    }

    /// Flags before every job's options (default `-O2`); a job's options
    /// come after them, so they override.
    pub fn default_flags<I, S>(mut self, flags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.default_flags = flags.into_iter().map(Into::into).collect();
        self
    }

    /// Flags after every job's options (default `-lm`).
    pub fn link_flags<I, S>(mut self, flags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.link_flags = flags.into_iter().map(Into::into).collect();
        self
    }

    /// The directory kernels' quoted includes, relative `-I` paths and
    /// `-include` files resolve against; the compiler runs in it. Default:
    /// the current directory at construction.
    pub fn source_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.source_dir = Some(dir.into());
        self
    }

    /// Where to create the private work directory (default: the system's
    /// temporary directory, `TMPDIR`).
    pub fn work_dir_in(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_root = Some(dir.into());
        self
    }

    /// The hooks registry the backend's handle cache listens on and notifies
    /// (default: [`hooks::global()`]).
    pub fn hooks(mut self, hooks: &Hooks) -> Self {
        self.hooks = Some(hooks.clone());
        self
    }

    /// Keeps what the compiler said about itself (`--version`,
    /// `-dumpmachine`, its include search list), the executable's digest
    /// and, per option list, the answers a key's base asks it (`-dM`, the
    /// `-###` link line) in `dir`, so a later backend with the same
    /// compiler, arguments and environment runs no probe before keying.
    /// The identity entry is keyed by the executable's path, contents and
    /// stat and the pinned environment, each include directory re-checked
    /// by stat; the digest is re-read when the executable's stat changes;
    /// the base's answers are re-checked against the stat of every
    /// directory and file the driver searches or reads (see
    /// `probe_cache.rs`). A missing, stale or damaged entry means probing
    /// again.
    pub fn identity_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.identity_cache = Some(dir.into());
        self
    }

    /// A backend that only keys: for a caller that compiles objects itself
    /// (`-c`, never linked, as tinygrad does) and keys them here. The link
    /// line is not probed nor its inputs keyed (a bare-metal `--target`
    /// links through another driver kcache cannot read), the identity says
    /// so (its keys never meet a linking backend's), and [`Backend::compile`]
    /// refuses.
    ///
    /// [`Backend::compile`]: crate::backend::Backend::compile
    pub fn keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    /// Finds and identifies the compiler and checks the configured flags
    /// (the work directory is made at the first compile or load).
    pub fn build(self) -> Result<CcBackend, BackendError> {
        if let Some(e) = self.spec_error {
            return Err(BackendError::Unavailable {
                backend: FAMILY,
                reason: e,
            });
        }
        let compiler = Compiler::detect(&self.program, self.args, self.identity_cache.as_deref())?;
        let cwd = std::env::current_dir().map_err(|source| BackendError::Io {
            backend: FAMILY,
            path: PathBuf::from("."),
            source,
        })?;
        let source_dir = match self.source_dir {
            Some(dir) => cwd.join(dir),
            None => cwd,
        };
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BackendError::Io {
                backend: FAMILY,
                path,
                source,
            }
        };
        if !std::fs::metadata(&source_dir)
            .map_err(io(&source_dir))?
            .is_dir()
        {
            return Err(BackendError::Io {
                backend: FAMILY,
                path: source_dir,
                source: std::io::Error::other("the source directory is not a directory"),
            });
        }
        let source_arg = source_dir
            .to_str()
            .ok_or_else(|| BackendError::Refused {
                backend: FAMILY,
                input: source_dir.display().to_string(),
                reason: "the source directory must be valid UTF-8 to pass to the compiler".into(),
            })?
            .to_string();
        let work_base = self.work_root.clone().unwrap_or_else(std::env::temp_dir);
        let work = LazyDir::new(FAMILY, work_base);
        let hooks = self.hooks.unwrap_or_else(|| hooks::global().clone());
        let kernels = KernelCache::new(
            FAMILY,
            &hooks,
            // Programs own their library; the cache's reference is all it
            // drops, and the library closes with the last `Arc`.
            GuardedCache::with_destroy(Handles::Owned, |program: Arc<CcProgram>| {
                tracing::trace!(
                    path = %program.path().display(),
                    still_held = Arc::strong_count(&program) > 1,
                    "cc handle cache let go of a program"
                );
                Ok(())
            })
            // A program only the cache holds (the code cache above evicted
            // it, no caller has it) is let go: its library closes and its
            // file goes, so a long search stays within the caps.
            .sweep_unheld(|program| Arc::strong_count(program) > 1),
        );
        let mut backend = CcBackend {
            kernels,
            identity: String::new(),
            compiler,
            prelude: self.prelude,
            default_flags: self.default_flags,
            link_flags: self.link_flags,
            source_dir,
            source_arg,
            native: Mutex::new(HashMap::new()),
            bases: Mutex::new(HashMap::new()),
            poisoned: Mutex::new(Default::default()),
            destroyed: std::sync::atomic::AtomicBool::new(false),
            work,
            keys_only: self.keys_only,
        };
        // The configured flags must pass the same checks as a job's.
        backend.parse_flags(&[])?;
        backend.identity = backend.compute_identity();
        Ok(backend)
    }
}
