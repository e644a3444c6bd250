//! Canonical kernel texts: the lexer, the renamer, segment names and kernel tokens.
//!
//! [`canonical_kernel`] turns one kernel's text into the text its keys are
//! taken over: the kernel up to a renaming of the names it binds. See
//! [`rename`] for the rules and why they are sound, [`lexer`] for what the
//! lexer knows of C, CUDA and OpenCL, [`dialect`] for what makes a kernel
//! keyed on its raw text or uncacheable, and [`isolation`] for when two
//! kernels may share a translation unit; [`bind`] verifies which names a
//! kernel binds before any is renamed.

pub mod bind;
pub mod dialect;
pub mod isolation;
pub mod lexer;
pub mod rename;
mod segment;

pub use rename::{canonical_kernel, CanonOptions, Canonical, Derivation, KeyForm, Renamer};

/// Names that are macros where a kernel is compiled (spelled as the
/// compiler sees them, splices removed): never renamed, since a macro is not
/// a binding and no declaration shadows it.
pub type MacroNames = rustc_hash::FxHashSet<Box<[u8]>>;
pub use segment::{kernel_token, segment_kernel_name};
