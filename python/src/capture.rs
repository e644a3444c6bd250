//! A backend wrapper that keeps each program's bytes beside the loaded
//! program, so Python gets the bytes of every answer (the GPU backends'
//! programs hold a device handle, not their bytes).

use kcache::backend::cc::CcProgram;
use kcache::backend::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, Language, Launch,
};
use kcache::key::Digest;
use std::path::Path;
use std::sync::Arc;

/// What Python reads of a program: its bytes, as the backend loads them
/// back, and the shared object's path where there is one.
pub trait ProgramBytes: Send + Sync + 'static {
    fn bytes(&self) -> &[u8];
    fn path(&self) -> Option<&Path> {
        None
    }
}

impl ProgramBytes for CcProgram {
    fn bytes(&self) -> &[u8] {
        self.binary()
    }
    fn path(&self) -> Option<&Path> {
        Some(CcProgram::path(self))
    }
}

/// A program of a wrapped backend and its bytes.
pub struct Held<P> {
    // Kept alive for as long as Python holds the answer.
    _program: Arc<P>,
    binary: Vec<u8>,
}

impl<P: Send + Sync + 'static> ProgramBytes for Held<P> {
    fn bytes(&self) -> &[u8] {
        &self.binary
    }
}

/// `B`, answering [`Held`] programs.
pub struct Capture<B>(pub B);

impl<B: Backend> Backend for Capture<B> {
    type Program = Held<B::Program>;

    fn family(&self) -> &'static str {
        self.0.family()
    }
    fn identity(&self) -> &str {
        self.0.identity()
    }
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<Self::Program>, BackendError> {
        let c = self.0.compile(job)?;
        Ok(Compiled {
            program: Arc::new(Held {
                _program: c.program,
                binary: c.binary.clone(),
            }),
            binary: c.binary,
            uncacheable: c.uncacheable,
        })
    }
    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<Self::Program>, BackendError> {
        let program = self.0.load(binary, symbols)?;
        Ok(Arc::new(Held {
            _program: program,
            binary: binary.to_vec(),
        }))
    }
    fn load_digested(
        &self,
        binary: &[u8],
        digest: &Digest,
        symbols: &[&str],
    ) -> Result<Arc<Self::Program>, BackendError> {
        let program = self.0.load_digested(binary, digest, symbols)?;
        Ok(Arc::new(Held {
            _program: program,
            binary: binary.to_vec(),
        }))
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
    fn can_run(&self) -> bool {
        self.0.can_run()
    }
    fn launch(
        &self,
        program: &Self::Program,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        self.0.launch(&program._program, symbol, launch)
    }
    fn clear_cache(&self) -> Result<(), BackendError> {
        self.0.clear_cache()
    }
}
