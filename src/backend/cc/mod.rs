//! The system C compiler backend: kernels compiled into a shared object with
//! `$CC`, loaded with `dlopen`, called on the host.
//!
//! # A compile
//!
//! A group of kernels becomes one translation unit: the prelude (a string
//! configured on the backend, e.g. `#include <math.h>`), then each kernel's
//! text, each introduced by a `#line 1 "<symbol>"` directive so the
//! compiler's diagnostics name the kernel they are about (and
//! [`BackendError::Compile`] lists just the kernels with errors, or the whole
//! group when the compiler's complaint names none). The command is
//!
//! ```text
//! $CC [its own arguments] -shared -fPIC <default flags> -iquote <source dir>
//!     -x c - <job options...> <link flags>
//!     -MD -MT x -MF <work>/c-XXXX/kernels.d -o <work>/c-XXXX/kernels.so
//! ```
//!
//! run in the source directory, the unit written to its stdin (`-x none`
//! follows the link flags when one of them names a file). The unit is no
//! file: for a file the compiler would look for quoted includes in the
//! work directory first, and there find the unit itself; for stdin it looks
//! in the working directory, which the include scan searches first too.
//! The **default flags** (`-O2` unless
//! [`CcBuilder::default_flags`] says otherwise) come before the job's
//! options, so a job's `-O3` or `-O0` wins (GCC and Clang take the last of
//! conflicting flags); set empty default flags to give jobs the whole say.
//! The **link flags** (`-lm` unless [`CcBuilder::link_flags`] says
//! otherwise) come last, after the job's own `-l` options. The job's options
//! follow the source file so its `-l` libraries resolve against it.
//!
//! Options that would write files, change what the compiler produces, or read
//! files kcache cannot see are refused with [`BackendError::Refused`] (see
//! `options.rs` for the list and the reasons). Each compile works in a
//! private directory of its own under the backend's work directory, with
//! fixed file names, so concurrent compiles never collide and the same group
//! compiles to the same bytes in any process (the object records the source
//! as `<stdin>`).
//!
//! # Loading
//!
//! A compiled object, or bytes handed back by a store, is written to a new
//! file of its own, `<work>/b-<digest prefix>-<random>.so` (created
//! exclusively, mode 0600: a file already there, planted or left over, is
//! never used), and opened with `RTLD_NOW | RTLD_LOCAL`, so an undefined
//! reference fails the load with its name instead of the first call. Every
//! kernel must be defined by the object itself (not by a library it links).
//! The file is removed when its program is dropped (after the library
//! closes).
//!
//! # The work directory
//!
//! The backend's work directory is private (see [`workdir`](crate::backend::workdir)): made in
//! kcache's temp root `<TMPDIR>/kcache-<uid>` (or in
//! [`CcBuilder::work_dir_in`]'s directory; it must allow mapping code: not a
//! `noexec` mount), mode 0700, owner and mode checked; every file in it is
//! created exclusively with mode 0600, and the compiler runs with umask 077.
//! It is made at the first compile, load or probe needing it (after sweeping
//! the directories of killed processes older than [`workdir::STALE_AFTER`](crate::backend::workdir::STALE_AFTER)),
//! and goes away with the backend.
//!
//! # Identity
//!
//! [`Backend::identity`] is computed once, at construction: the compiler's
//! path as found through `PATH`, that path with links resolved and the
//! executable's blake3 digest, its leading arguments, `--version`,
//! `-dumpmachine`, its own include directories (`-v`), the pinned
//! environment (`compiler.rs`), the default and link flags, and the prelude's
//! digest. Everything a kernel's compile reads is digested by contents by
//! [`Backend::key_extras`]: every header, the compiler's own included (see
//! `includes.rs`), and what every kernel under one option list shares (the
//! prelude, forced includes, files the compiler reads on its own, link
//! inputs; see `keying.rs`). The names the key must not rename (predefined,
//! defined by an option or a header) come with them (see `macros.rs`).
//!
//! # The compiler's own report
//!
//! Every compile writes a dependency report (`-MD`): a file it names that no
//! key of the group covered (a header a wrapper script adds, one found where
//! kcache did not look) makes the result [`Compiled::uncacheable`]: it
//! answers that compile, is never published or stored, and the group is
//! compiled afresh in this process from then on.
//!
//! # Handles and teardown
//!
//! Loaded programs live in a [`KernelCache`] whose one device is the host
//! (index 0), keyed by the group's symbols, its translation unit, the job's
//! options and the digests of the headers it reads (so a header edited
//! between two compiles in one process is compiled afresh), or for a load by
//! `<binary>` and the bytes. Compiling or loading the same thing twice hands
//! back the same `Arc<CcProgram>` while anyone holds it; a program only the
//! cache holds is let go when the cache grows (see
//! [`GuardedCache::sweep_unheld`]). [`CcBackend::clear_cache`] clears it inside
//! [`Hooks::around_clear`]; [`CcBackend::destroy_device`] notifies
//! `("cc", 0)` before anything is released. A program handed out stays valid
//! after either: its library closes when the last `Arc` drops.
//!
//! [`GuardedCache::sweep_unheld`]: crate::cache::guarded::GuardedCache::sweep_unheld
//! [`Hooks::around_clear`]: crate::cache::hooks::Hooks::around_clear
//! [`KernelCache`]: crate::cache::guarded::KernelCache

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::backend::shared::is_gnu_identifier as is_identifier;
use crate::backend::workdir::LazyDir;
use crate::backend::{
    Backend, BackendError, BackendInfo, BuildError, CompileJob, Compiled, KernelSource, KeyExtras,
    KeyValidity, Language, Launch,
};
use crate::cache::guarded::{GuardedError, KernelCache};
use crate::key::{Digest, PartsHasher, Source};

mod builder;
mod compile;
mod compiler;
mod identity_cache;
pub(crate) mod includes;
mod keying;
pub(crate) mod macros;
mod options;
mod probe_cache;
mod program;
mod render;
mod wire;

pub use builder::CcBuilder;
use compiler::Compiler;
pub use program::{CcProgram, MAX_BUFFERS, MAX_SCALARS};
use render::render;

/// The family name the backend reports and notifies under.
pub const FAMILY: &str = "cc";

/// The cc backend's key version (see [`Backend::key_version`]).
pub const KEY_VERSION: u32 = 1;

/// The host's device index: the backend's only device.
pub const HOST: usize = 0;

/// Flags every compile gets: the output is a shared object.
const MANDATORY: [&str; 2] = ["-shared", "-fPIC"];

/// Where the unit comes from: stdin, as C (see the module doc: a file's
/// directory would be searched for quoted includes).
const UNIT: [&str; 3] = ["-x", "c", "-"];

/// The handle-cache name of a program loaded from bytes.
const BINARY_NAME: &str = "<binary>";

/// The label of the prelude in diagnostics.
const PRELUDE_LABEL: &str = "<prelude>";

/// The C-compiler backend. See the [module docs](self).
pub struct CcBackend {
    // Dropped first: programs close before their files' directory goes.
    kernels: KernelCache<CcProgram>,
    identity: String,
    compiler: Compiler,
    prelude: String,
    default_flags: Vec<String>,
    link_flags: Vec<String>,
    source_dir: PathBuf,
    source_arg: String,
    /// What machine-dependent options mean here, per option list.
    native: Mutex<HashMap<Vec<String>, Digest>>,
    /// The kernel-independent part of a key, per job option list.
    bases: Mutex<HashMap<Vec<String>, Arc<keying::Base>>>,
    /// Handle-cache keys of groups whose compile read a file no key
    /// covered: compiled afresh every time.
    poisoned: Mutex<std::collections::HashSet<String>>,
    /// Set by `destroy_device`: like a GPU backend whose device went, this
    /// one builds and runs nothing more (what it handed out stays valid).
    destroyed: std::sync::atomic::AtomicBool,
    work: LazyDir,
    /// Keys only (see [`CcBuilder::keys_only`]).
    keys_only: bool,
}

impl std::fmt::Debug for CcBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CcBackend")
            .field("compiler", &self.compiler.path)
            .field("target", &self.compiler.target)
            .field("source_dir", &self.source_dir)
            .field("work_dir", &self.work.made())
            .field("handles", &self.kernels.cache().len())
            .finish()
    }
}

fn refused(r: options::Refusal) -> BackendError {
    BackendError::Refused {
        backend: FAMILY,
        input: r.input,
        reason: r.reason,
    }
}

pub(crate) fn scan_error(e: includes::ScanError) -> BackendError {
    scan_error_for(FAMILY, e)
}

/// A scan's refusal or read failure, as `backend`'s error.
pub(crate) fn scan_error_for(backend: &'static str, e: includes::ScanError) -> BackendError {
    match e {
        includes::ScanError::Refused { input, reason } => BackendError::Refused {
            backend,
            input,
            reason,
        },
        includes::ScanError::Io { path, source } => BackendError::Io {
            backend,
            path,
            source,
        },
    }
}

impl CcBackend {
    /// A backend for `$CC` (default `cc`) with the default configuration.
    pub fn new() -> Result<CcBackend, BackendError> {
        Self::builder().build()
    }

    /// A builder for `$CC` (default `cc`): `-O2`, `-lm`, no prelude, the
    /// current directory as source directory, the global hooks.
    pub fn builder() -> CcBuilder {
        let b = CcBuilder {
            program: OsString::from("cc"),
            args: Vec::new(),
            spec_error: None,
            prelude: String::new(),
            default_flags: vec!["-O2".into()],
            link_flags: vec!["-lm".into()],
            source_dir: None,
            work_root: None,
            hooks: None,
            identity_cache: None,
            keys_only: false,
        };
        b.compiler(compiler::spec_from_env(std::env::var_os("CC")))
    }

    /// What `kcache backends` shows for `$CC`: available iff the compiler
    /// runs, its version's first line, the host with its target triple.
    pub fn probe() -> BackendInfo {
        let spec = compiler::spec_from_env(std::env::var_os("CC"));
        let detected = compiler::split_spec(&spec)
            .map_err(|reason| BackendError::Unavailable {
                backend: FAMILY,
                reason,
            })
            .and_then(|(program, args)| Compiler::detect(OsStr::new(&program), args, None));
        match detected {
            Ok(c) => info(&c),
            Err(e) => BackendInfo {
                backend: FAMILY.into(),
                available: false,
                version: None,
                devices: Vec::new(),
                reason: Some(e.to_string()),
            },
        }
    }

    /// What `kcache backends` shows for this backend's compiler.
    pub fn info(&self) -> BackendInfo {
        info(&self.compiler)
    }

    /// The compiler's absolute path, as found through `PATH`.
    pub fn compiler_path(&self) -> &Path {
        &self.compiler.path
    }

    /// The first line of the compiler's `--version`.
    pub fn version(&self) -> &str {
        self.compiler.version_line()
    }

    /// The compiler's target triple (`-dumpmachine`).
    pub fn target(&self) -> &str {
        &self.compiler.target
    }

    /// The directory quoted includes and relative paths resolve against.
    pub fn source_dir(&self) -> &Path {
        &self.source_dir
    }

    /// The private directory compiles and loaded objects live in (made now if need be).
    pub fn work_dir(&self) -> Result<&Path, BackendError> {
        self.work.path().map_err(self.io_error(self.work.base()))
    }

    /// The prelude put before every group's kernels.
    pub fn prelude(&self) -> &str {
        &self.prelude
    }

    /// The handle cache, for introspection (length, stats).
    pub fn kernel_cache(&self) -> &KernelCache<CcProgram> {
        &self.kernels
    }

    /// Tears the host "device" down: notifies `("cc", 0)` to every
    /// device-destroy listener (this backend's handle cache evicts its
    /// programs; the layers above forget theirs) before anything is released,
    /// and reports a listener's failure only after the teardown completed.
    /// Programs handed out stay valid until their last `Arc` drops; the
    /// backend stays usable and compiles or loads afresh.
    pub fn destroy_device(&self) -> Result<(), BackendError> {
        // The host has no context to destroy: the eviction the notification
        // performs lets go of every handle, and the backend builds nothing
        // more, as a GPU backend whose device went.
        self.kernels
            .destroy_device(HOST, || {
                self.destroyed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<(), GuardedError>(())
            })
            .map_err(|source| BackendError::Teardown {
                backend: FAMILY,
                source,
            })
    }

    fn check_alive(&self) -> Result<(), BackendError> {
        if self.destroyed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(BackendError::Unavailable {
                backend: FAMILY,
                reason: "the host device was destroyed (destroy_device)".into(),
            });
        }
        Ok(())
    }

    fn compute_identity(&self) -> String {
        let c = &self.compiler;
        let env: Vec<String> = c
            .env
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={}", v.to_string_lossy()),
                None => format!("{k} unset"),
            })
            .collect();
        let prelude = PartsHasher::new().part(&self.prelude).finish();
        let mut identity = format!(
            "cc\npath: {}\nreal path: {}\nexecutable blake3: {}\narguments: {:?}\n\
             target: {}\nversion:\n{}\ninclude dirs: {:?}\nenvironment: {:?}\n\
             mandatory flags: {:?}\ndefault flags: {:?}\nlink flags: {:?}\nprelude blake3: {}\n\
             tools: {:?}\nunit: {:?}\n",
            c.path.display(),
            c.real.display(),
            c.exe_digest,
            c.args,
            c.target,
            c.version,
            c.include_dirs,
            env,
            MANDATORY,
            self.default_flags,
            self.link_flags,
            prelude,
            c.tools
                .iter()
                .map(|(p, d)| format!("{} {d}", p.display()))
                .collect::<Vec<_>>(),
            UNIT,
        );
        if self.keys_only {
            identity.push_str("keys only: no link\n");
        }
        identity
    }

    /// Every flag of a compile with `options` (but the files), in the order
    /// the compiler sees them where order matters.
    fn flag_list(&self, options: &[String]) -> Vec<String> {
        let c = &self.compiler;
        let mut all = Vec::with_capacity(
            c.args.len() + 4 + self.default_flags.len() + options.len() + self.link_flags.len(),
        );
        all.extend(c.args.iter().cloned());
        all.extend(MANDATORY.map(String::from));
        all.extend(self.default_flags.iter().cloned());
        all.push("-iquote".into());
        all.push(self.source_arg.clone());
        all.extend(options.iter().cloned());
        all.extend(self.link_flags.iter().cloned());
        all
    }

    fn parse_flags(&self, options: &[String]) -> Result<options::Flags, BackendError> {
        options::parse(&self.flag_list(options), &self.source_dir).map_err(refused)
    }

    /// The kernel-independent part of the key of a compile with `options`
    /// (see `keying.rs`), memoized and re-validated.
    fn base(&self, options: &[String]) -> Result<Arc<keying::Base>, BackendError> {
        if let Some(b) = self
            .bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(options)
            .cloned()
        {
            if b.holds() {
                return Ok(b);
            }
        }
        let flags = self.parse_flags(options)?;
        let native = if flags.native.is_empty() {
            None
        } else {
            Some(self.native_digest(&flags.native)?)
        };
        let base = Arc::new(keying::base(keying::Inputs {
            compiler: &self.compiler,
            flag_list: self.flag_list(options),
            flags,
            source_dir: &self.source_dir,
            prelude: &self.prelude,
            prelude_label: PRELUDE_LABEL,
            scratch: &self.work,
            native,
            link: !self.keys_only,
        })?);
        self.bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(options.to_vec(), Arc::clone(&base));
        Ok(base)
    }

    /// What a group's compile reads: the base's and each kernel's digests,
    /// every file covered, and why it cannot be cached, if so.
    fn group_extras(&self, job: &CompileJob<'_>) -> Result<keying::GroupExtras, BackendError> {
        let base = self.base(job.options)?;
        let mut g = keying::GroupExtras {
            digests: vec![base.digest],
            files: base.files.iter().cloned().collect(),
            uncacheable: base.uncacheable.clone(),
            rests_on: None,
        };
        let mut closures = Vec::with_capacity(job.kernels.len());
        for k in job.kernels {
            let label = format!("kernel `{}`", k.symbol);
            let scanned = includes::scan_text(&base.search, &label, k.text.as_bytes(), false)
                .map_err(scan_error)?;
            g.digests.push(scanned.closure.digest);
            g.files.extend(scanned.closure.files.iter().cloned());
            if g.uncacheable.is_none() {
                g.uncacheable = scanned.closure.uncacheable.clone();
            }
            closures.push(scanned.closure);
        }
        g.rests_on = Some((base, closures));
        Ok(g)
    }

    fn native_digest(&self, native: &[String]) -> Result<Digest, BackendError> {
        let mut cache = self.native.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = cache.get(native) {
            return Ok(*d);
        }
        let expansion = self.compiler.expand_native(native)?;
        let d = PartsHasher::new()
            .part("kcache-cc")
            .part("native")
            .part(native.join("\n"))
            .part(expansion)
            .finish();
        cache.insert(native.to_vec(), d);
        Ok(d)
    }

    fn io_error(&self, path: &Path) -> impl FnOnce(std::io::Error) -> BackendError {
        let path = path.to_path_buf();
        move |source| BackendError::Io {
            backend: FAMILY,
            path,
            source,
        }
    }
}

fn info(c: &Compiler) -> BackendInfo {
    BackendInfo {
        backend: FAMILY.into(),
        available: true,
        version: Some(c.version_line().to_string()),
        devices: vec![format!("host ({})", c.target)],
        reason: None,
    }
}

impl Backend for CcBackend {
    type Program = CcProgram;

    fn family(&self) -> &'static str {
        FAMILY
    }

    fn key_version(&self) -> u32 {
        KEY_VERSION
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<CcProgram>, BackendError> {
        self.check_alive()?;
        if self.keys_only {
            return Err(BackendError::Refused {
                backend: FAMILY,
                input: job.options.join(" "),
                reason:
                    "this backend only keys (CcBuilder::keys_only): its keys do not cover a link"
                        .into(),
            });
        }
        let symbols: Vec<&str> = job.kernels.iter().map(|k| k.symbol).collect();
        if let Some(bad) = symbols.iter().find(|s| !is_identifier(s)) {
            return Err(BackendError::Refused {
                backend: FAMILY,
                input: bad.to_string(),
                reason: "is not a C identifier; kernels are looked up by symbol".into(),
            });
        }
        self.parse_flags(job.options)?;
        // A group its key cannot see through still compiles, uncached.
        let extras = self
            .group_extras(job)
            .unwrap_or_else(|e| keying::GroupExtras {
                digests: Vec::new(),
                files: Default::default(),
                uncacheable: Some(e.to_string()),
                rests_on: None,
            });
        let tu = render(&self.prelude, job.kernels);
        let key = self.group_key(job, &extras, &tu, &symbols);
        let poisoned = job.fresh
            || extras.uncacheable.is_some()
            || self
                .poisoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&key);
        let read = Mutex::new(None);
        let build = || {
            let mut r = None;
            let p = self.build(job, &tu, &symbols, &mut r);
            *read.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            p.map_err(BuildError::from)
        };
        let program = if poisoned {
            Arc::new(build().map_err(|e| e.into_backend(FAMILY))?)
        } else {
            self.kernels
                .find_or_build(key.clone(), HOST, build)
                .map_err(|e| e.into_backend(FAMILY))?
        };
        let mut uncacheable = extras.uncacheable.clone();
        if uncacheable.is_none() {
            // Built now (not found in the handle cache): check the report.
            if let Some(report) = read.into_inner().unwrap_or_else(|e| e.into_inner()) {
                uncacheable = keying::unkeyed_read(report.as_deref(), &extras.files)
                    .or_else(|| extras.changed());
                if uncacheable.is_some() {
                    self.poisoned
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key);
                }
            }
        }
        Ok(Compiled {
            binary: program.binary().to_vec(),
            program,
            uncacheable,
        })
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<CcProgram>, BackendError> {
        self.load_digested(binary, &Digest(*blake3::hash(binary).as_bytes()), symbols)
    }

    fn load_digested(
        &self,
        binary: &[u8],
        digest: &Digest,
        symbols: &[&str],
    ) -> Result<Arc<CcProgram>, BackendError> {
        self.check_alive()?;
        // Keyed by the bytes' digest: the bytes themselves need no second pass.
        let key = KernelCache::<CcProgram>::key(
            HOST,
            BINARY_NAME,
            &Source::from(digest.as_bytes().to_vec()),
            &[] as &[(&str, &str)],
        );
        let program = self
            .kernels
            .find_or_build(key, HOST, || {
                self.install(binary.to_vec(), *digest, symbols, |reason| {
                    BackendError::Load {
                        backend: FAMILY,
                        reason,
                    }
                })
                .map_err(BuildError::Backend)
            })
            .map_err(|e| e.into_backend(FAMILY))?;
        // A cached program was loaded for other symbols, maybe.
        if let Some(missing) = symbols.iter().find(|s| !program.contains(s)) {
            return Err(BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: missing.to_string(),
            });
        }
        Ok(program)
    }

    fn language(&self) -> Language {
        Language::C
    }

    fn describe(&self) -> String {
        let version = self.version().lines().next().unwrap_or_default();
        format!("{version} at {}", self.compiler_path().display())
    }

    fn device_index(&self) -> usize {
        HOST
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        let base = self.base(options)?;
        let label = format!("kernel `{}`", kernel.symbol);
        let scanned = includes::scan_text(&base.search, &label, kernel.text.as_bytes(), false)
            .map_err(scan_error)?;
        let merged = macros::merge(&base.defines, &scanned.closure, &scanned.defines);
        let uncacheable = base
            .uncacheable
            .clone()
            .or_else(|| scanned.closure.uncacheable.clone());
        // The extras are a function of the base and the closure (and the
        // text): they hold while both do, re-stat-ed once per keying batch.
        let digests = vec![base.digest, scanned.closure.digest];
        let records_names = base.records_names.clone();
        let closure = Arc::clone(&scanned.closure);
        let validity = KeyValidity::new(move || base.holds() && closure.holds());
        Ok(KeyExtras {
            digests,
            macros: merged.macros,
            position_macros: merged.positional,
            pasting: merged.pasting,
            reached: merged.reached,
            uncacheable,
            records_names,
            validity: Some(validity),
        })
    }

    fn can_run(&self) -> bool {
        !self.destroyed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Calls `symbol` as `void symbol(float* b0, ..., int s0, ...)` on the
    /// launch's buffers, in place; `global` and `local` are not used (a C
    /// kernel loops itself). The kernel is trusted: it is code the caller
    /// wrote, and must match that signature and stay within the buffers.
    fn launch(
        &self,
        program: &CcProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let mut buffers: Vec<&mut [f32]> =
            launch.buffers.iter_mut().map(Vec::as_mut_slice).collect();
        // SAFETY: the calling convention is the backend's documented
        // contract with kernel authors (see `Launch`).
        unsafe { program.call(symbol, &mut buffers, &launch.scalars) }
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.kernels
            .clear()
            .map(drop)
            .map_err(|source| BackendError::Teardown {
                backend: FAMILY,
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        for ok in ["k", "_k1", "saxpy_f32", "a$b"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "1k", "a b", "a\"b", "k\n", "a-b", "é"] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }
}
