//! [`MapProgram`]: a backend that is another backend with its programs
//! mapped to another type, forwarding everything else.
//!
//! A caller that wants more (or less) of a program than the backend's own
//! type holds — the bytes beside the loaded program, or nothing at all for
//! a command that only reports outcomes — wraps the backend in a
//! `MapProgram` rather than writing its own forwarding [`Backend`] impl.
//! The wrapper must key exactly as the backend it wraps: a key decided by a
//! trait method's default rather than the inner backend's answer names the
//! wrong program, and a later lookup hits it. One adapter, whose impl
//! `clippy::missing_trait_methods` forces to spell out every method, keeps
//! that in one place instead of in each wrapper.

use super::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, Language, Launch,
};
use crate::key::Digest;
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// How [`MapProgram`] turns the inner backend's programs into its own.
pub trait ProgramMap<P>: Send + Sync {
    /// The program the adapter answers.
    type Program: Send + Sync + 'static;

    /// Whether the adapter's programs can be launched (through
    /// [`ProgramMap::inner`]); when false, [`Backend::can_run`] is false
    /// whatever the inner backend can do.
    const RUNS: bool = true;

    /// The program for `program`, which the inner backend compiled or loaded
    /// from `binary`.
    fn map(&self, program: Arc<P>, binary: &[u8]) -> Self::Program;

    /// The program for stored `binary`; `load` is the inner backend's load
    /// ([`Backend::load`] or [`Backend::load_digested`], as the caller asked).
    /// A map that needs nothing of the inner program may answer without
    /// calling it.
    fn load(
        &self,
        binary: &[u8],
        load: impl FnOnce() -> Result<Arc<P>, BackendError>,
    ) -> Result<Self::Program, BackendError> {
        Ok(self.map(load()?, binary))
    }

    /// The inner program to launch, `None` when `program` holds none.
    fn inner<'a>(&self, program: &'a Self::Program) -> Option<&'a P>;
}

/// `B` answering `M`'s programs: every method that does not take or answer
/// a program (the key's: family, identity, key version, key extras,
/// isolation, splitting; and the rest) is `B`'s own.
pub struct MapProgram<B, M> {
    inner: Arc<B>,
    map: M,
}

impl<B, M> MapProgram<B, M> {
    /// `inner`, its programs mapped by `map`.
    pub fn new(inner: Arc<B>, map: M) -> Self {
        MapProgram { inner, map }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &Arc<B> {
        &self.inner
    }
}

/// A program of another backend and the bytes it was compiled or loaded
/// from ([`KeepBinary`]'s programs), for callers that read a program's bytes
/// where the backend's own program does not keep them (a GPU program holds
/// a device handle).
pub struct WithBinary<P> {
    program: Arc<P>,
    binary: Vec<u8>,
}

impl<P> WithBinary<P> {
    /// The inner backend's program.
    pub fn program(&self) -> &Arc<P> {
        &self.program
    }

    /// The bytes, as [`Backend::load`] takes them back.
    pub fn binary(&self) -> &[u8] {
        &self.binary
    }
}

/// Maps each program to a [`WithBinary`].
#[derive(Clone, Copy, Debug, Default)]
pub struct KeepBinary;

impl<P: Send + Sync + 'static> ProgramMap<P> for KeepBinary {
    type Program = WithBinary<P>;

    fn map(&self, program: Arc<P>, binary: &[u8]) -> WithBinary<P> {
        WithBinary {
            program,
            binary: binary.to_vec(),
        }
    }

    fn inner<'a>(&self, program: &'a WithBinary<P>) -> Option<&'a P> {
        Some(&program.program)
    }
}

// Every method is written out, none left to its default (the lint refuses
// one that is): a defaulted keying method added to `Backend` must answer
// the inner backend's value here, or wrapped backends key on the default.
#[deny(clippy::missing_trait_methods)]
impl<B: Backend, M: ProgramMap<B::Program>> Backend for MapProgram<B, M> {
    type Program = M::Program;

    fn family(&self) -> &'static str {
        self.inner.family()
    }

    fn identity(&self) -> &str {
        self.inner.identity()
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<M::Program>, BackendError> {
        let c = self.inner.compile(job)?;
        Ok(Compiled {
            program: Arc::new(self.map.map(c.program, &c.binary)),
            binary: c.binary,
            uncacheable: c.uncacheable,
        })
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<M::Program>, BackendError> {
        self.map
            .load(binary, || self.inner.load(binary, symbols))
            .map(Arc::new)
    }

    fn load_digested(
        &self,
        binary: &[u8],
        digest: &Digest,
        symbols: &[&str],
    ) -> Result<Arc<M::Program>, BackendError> {
        self.map
            .load(binary, || self.inner.load_digested(binary, digest, symbols))
            .map(Arc::new)
    }

    fn key_version(&self) -> u32 {
        self.inner.key_version()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn language(&self) -> Language {
        self.inner.language()
    }

    fn device_index(&self) -> usize {
        self.inner.device_index()
    }

    fn split_capable(&self) -> bool {
        self.inner.split_capable()
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        self.inner.key_extras(kernel, options)
    }

    fn isolates_kernels(&self) -> bool {
        self.inner.isolates_kernels()
    }

    fn can_run(&self) -> bool {
        M::RUNS && self.inner.can_run()
    }

    fn launch(
        &self,
        program: &M::Program,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        match self.map.inner(program) {
            Some(p) => self.inner.launch(p, symbol, launch),
            None => Err(BackendError::Launch {
                backend: self.inner.family(),
                symbol: symbol.to_string(),
                reason: "the program was answered without being loaded".into(),
            }),
        }
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.inner.clear_cache()
    }
}
