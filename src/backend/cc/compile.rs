//! The cc backend's compile and install steps: a group's translation unit
//! compiled into a shared object, checked against the compiler's own report
//! of what it read, and loaded from a private file.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::render::blamed;
use super::{compiler, keying, program, CcBackend, CcProgram, FAMILY, HOST, MANDATORY, UNIT};
use crate::backend::workdir;
use crate::backend::{BackendError, CompileJob};
use crate::cache::guarded::KernelCache;
use crate::key::{Digest, PartsHasher, Source};

impl CcBackend {
    /// Writes `binary` to a new file of its own in the work directory
    /// (created exclusively under an unpredictable name: a file found there
    /// is never used) and loads it, requiring `symbols`; `open_failed` says
    /// what a failure to load means for the caller. The file goes when the
    /// program does.
    pub(super) fn install(
        &self,
        binary: Vec<u8>,
        digest: Digest,
        symbols: &[&str],
        open_failed: impl FnOnce(String) -> BackendError,
    ) -> Result<CcProgram, BackendError> {
        let prefix = format!("b-{}-", &digest.to_hex()[..16]);
        let work = self.work_dir()?;
        let file =
            workdir::new_file_in(work, &prefix, ".so", &binary).map_err(self.io_error(work))?;
        CcProgram::open(file, binary, digest, symbols).map_err(|e| match e {
            program::OpenError::Dl(reason) => open_failed(reason),
            program::OpenError::Missing(symbol) => BackendError::MissingSymbol {
                backend: FAMILY,
                symbol,
            },
        })
    }

    /// Compiles `tu` (the group's translation unit) and loads the result.
    /// `read` receives the files the compiler reported reading (`None`
    /// when it wrote no report).
    pub(super) fn build(
        &self,
        job: &CompileJob<'_>,
        tu: &str,
        symbols: &[&str],
        read: &mut Option<Vec<PathBuf>>,
    ) -> Result<CcProgram, BackendError> {
        let dir = self
            .work
            .subdir("c-")
            .map_err(self.io_error(self.work.base()))?;
        let out = dir.path().join("kernels.so");
        let deps = dir.path().join("kernels.d");
        // The unit goes in on stdin, not as a file: the compiler looks for a
        // quoted include in the including file's directory first, and for a
        // file in the work directory that would find the unit itself
        // (`#include "kernels.c"` hands a kernel its group's other kernels)
        // and reach `/tmp` through `../..` (review 2026-12-02, C F14). For
        // stdin it looks in the working directory, the source directory the
        // scan already searches first (`-iquote` below), and `__FILE__`
        // says `<stdin>` whatever the work directory is called.
        let mut command = self.compiler.command();
        workdir::private_umask(&mut command)
            .args(MANDATORY)
            .args(&self.default_flags)
            .arg("-iquote")
            .arg(&self.source_dir)
            .args(UNIT)
            .args(job.options)
            .args(&self.link_flags)
            .args(["-MD", "-MT", "x", "-MF"])
            .arg(&deps)
            .arg("-o")
            .arg(&out)
            .current_dir(&self.source_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A link flag naming a file (an object, an archive) is no C: `-x
        // none` ends the language `-x c` set. Only then, since Clang warns
        // about a `-x none` no input follows (an error under `-Werror`).
        if self.link_flags.iter().any(|f| !f.starts_with('-')) {
            command.args(["-x", "none"]);
        }
        let output =
            compiler::feed(&mut command, tu).map_err(self.io_error(&self.compiler.path))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            let mut kernels = blamed(&stderr, symbols);
            if kernels.is_empty() {
                kernels = symbols.iter().map(|s| s.to_string()).collect();
            }
            let log = if stderr.trim().is_empty() {
                format!(
                    "the compiler exited with {} and said nothing",
                    output.status
                )
            } else {
                stderr.into_owned()
            };
            return Err(BackendError::Compile {
                backend: FAMILY,
                kernels,
                log,
            });
        }
        if !stderr.trim().is_empty() {
            tracing::debug!(kernels = ?symbols, diagnostics = %stderr, "cc compiled with diagnostics");
        }
        let binary = std::fs::read(&out).map_err(self.io_error(&out))?;
        // The compiler's own account of what it read; no report at all
        // counts as a read no key covered.
        *read = match std::fs::read_to_string(&deps) {
            Ok(text) => Some(
                compiler::parse_deps(&text)
                    .into_iter()
                    .filter(|p| p != Path::new("-") && p != Path::new("<stdin>"))
                    .map(|p| self.source_dir.join(p))
                    .collect(),
            ),
            Err(_) => None,
        };
        let digest = Digest(*blake3::hash(&binary).as_bytes());
        self.install(binary, digest, symbols, |reason| BackendError::Compile {
            backend: FAMILY,
            kernels: symbols.iter().map(|s| s.to_string()).collect(),
            log: format!("the compiled shared object does not load: {reason}"),
        })
    }

    /// The handle-cache key of a group, over what it reads.
    pub(super) fn group_key(
        &self,
        job: &CompileJob<'_>,
        extras: &keying::GroupExtras,
        tu: &str,
        symbols: &[&str],
    ) -> String {
        let mut h = PartsHasher::new();
        for d in &extras.digests {
            h.part(d.as_bytes());
        }
        // make_key sorts options: number them so their order still counts.
        let mut opts: Vec<(String, String)> = job
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| (format!("{i:08}"), o.clone()))
            .collect();
        opts.push(("extras".into(), h.finish().to_hex()));
        let source = Source::from(tu);
        KernelCache::<CcProgram>::key(HOST, &symbols.join(","), &source, &opts)
    }
}
