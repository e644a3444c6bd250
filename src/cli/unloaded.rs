//! A backend adapter for commands that report programs and never run them:
//! `kcache compile` prints each kernel's outcome, so a program answered from
//! the store need not be loaded (for cc: no work directory, no object file
//! written, no `dlopen`).
//!
//! Everything that decides a key (identity, key version, key extras) and
//! every compile goes to the wrapped backend, so keys, records and stored
//! bytes are the ones the backend itself would use. The resolver still
//! checks a stored program's bytes against the id its record names before
//! handing them here ([`kcache::resolve::stored::load_program`]): bytes
//! forged under a valid id are refused and compiled afresh, as with a
//! loading backend. What is skipped is the load itself (for cc, `dlopen`
//! and the check that every symbol is defined), which only a caller running
//! the program needs.

use kcache::backend::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, Language,
};
use kcache::key::Digest;
use std::sync::Arc;

/// A program answered but not loaded: a command printing outcomes needs
/// nothing of it.
#[derive(Debug)]
pub struct Unloaded;

/// `B`, answering loads with [`Unloaded`] programs.
pub struct Reporting<B>(pub Arc<B>);

impl<B: Backend> Backend for Reporting<B> {
    type Program = Unloaded;

    fn family(&self) -> &'static str {
        self.0.family()
    }

    fn identity(&self) -> &str {
        self.0.identity()
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<Unloaded>, BackendError> {
        let c = self.0.compile(job)?;
        Ok(Compiled {
            program: Arc::new(Unloaded),
            binary: c.binary,
            uncacheable: c.uncacheable,
        })
    }

    fn load(&self, _binary: &[u8], _symbols: &[&str]) -> Result<Arc<Unloaded>, BackendError> {
        Ok(Arc::new(Unloaded))
    }

    fn load_digested(
        &self,
        _binary: &[u8],
        _digest: &Digest,
        _symbols: &[&str],
    ) -> Result<Arc<Unloaded>, BackendError> {
        Ok(Arc::new(Unloaded))
    }

    fn key_version(&self) -> u32 {
        self.0.key_version()
    }

    fn describe(&self) -> String {
        self.0.describe()
    }

    fn language(&self) -> Language {
        self.0.language()
    }

    fn device_index(&self) -> usize {
        self.0.device_index()
    }

    fn split_capable(&self) -> bool {
        self.0.split_capable()
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        self.0.key_extras(kernel, options)
    }

    fn isolates_kernels(&self) -> bool {
        self.0.isolates_kernels()
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.0.clear_cache()
    }
}
