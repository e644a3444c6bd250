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
mod macro_names;
pub mod pastes;
pub mod rename;
mod scratch;
mod segment;
mod spellings;

pub use rename::{canonical_kernel, CanonOptions, Canonical, Derivation, KeyForm, Renamer};

pub use macro_names::MacroNames;
pub use segment::{kernel_token, segment_kernel_name};
