//! A backend adapter for commands that report programs and never run them:
//! `kcache compile` prints each kernel's outcome, so a program answered from
//! the store need not be loaded (for cc: no work directory, no object file
//! written, no `dlopen`).
//!
//! The adapter is [`MapProgram`]: everything that decides a key (identity,
//! key version, key extras) and every compile goes to the wrapped backend,
//! so keys, records and stored bytes are the ones the backend itself would
//! use. The resolver still checks a stored program's bytes against the id
//! its record names before handing them here
//! ([`kcache::resolve::stored::load_program`]): bytes forged under a valid
//! id are refused and compiled afresh, as with a loading backend. What is
//! skipped is the load itself (for cc, `dlopen` and the check that every
//! symbol is defined), which only a caller running the program needs.

use kcache::backend::map::{MapProgram, ProgramMap};
use kcache::backend::{Backend, BackendError};
use std::sync::Arc;

/// A program answered but not loaded: a command printing outcomes needs
/// nothing of it.
#[derive(Debug)]
pub struct Unloaded;

/// Maps every program to [`Unloaded`], and answers loads without loading.
pub struct Unload;

impl<P> ProgramMap<P> for Unload {
    type Program = Unloaded;
    const RUNS: bool = false;

    fn map(&self, _program: Arc<P>, _binary: &[u8]) -> Unloaded {
        Unloaded
    }

    fn load(
        &self,
        _binary: &[u8],
        _load: impl FnOnce() -> Result<Arc<P>, BackendError>,
    ) -> Result<Unloaded, BackendError> {
        Ok(Unloaded)
    }

    fn inner<'a>(&self, _program: &'a Unloaded) -> Option<&'a P> {
        None
    }
}

/// `backend`, answering [`Unloaded`] programs.
pub fn reporting<B: Backend>(backend: Arc<B>) -> MapProgram<B, Unload> {
    MapProgram::new(backend, Unload)
}
