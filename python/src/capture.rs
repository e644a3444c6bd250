//! The backend wrapper that keeps each program's bytes beside the loaded
//! program, so Python gets the bytes of every answer (the GPU backends'
//! programs hold a device handle, not their bytes): the crate's
//! [`MapProgram`] adapter, which keys exactly as the backend it wraps.

use kcache::backend::cc::CcProgram;
use kcache::backend::map::{KeepBinary, MapProgram, WithBinary};
use kcache::backend::Backend;
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

impl<P: Send + Sync + 'static> ProgramBytes for WithBinary<P> {
    fn bytes(&self) -> &[u8] {
        self.binary()
    }
}

/// `B`, answering programs that keep their bytes.
pub type Capture<B> = MapProgram<B, KeepBinary>;

/// `backend`, its programs keeping their bytes.
pub fn capture<B: Backend>(backend: B) -> Capture<B> {
    MapProgram::new(Arc::new(backend), KeepBinary)
}
