//! Canonical kernel texts: the lexer, the renamer, segment names and kernel tokens.
//!
//! [`canonical_kernel`] turns one kernel's text into the text its keys are
//! taken over: the kernel up to a renaming of the names it binds. See
//! [`rename`] for the rules and why they are sound, [`lexer`] for what the
//! lexer knows of C, CUDA and OpenCL.

pub mod lexer;
pub mod rename;
mod segment;

pub use rename::{canonical_kernel, CanonOptions, Canonical, Derivation, Renamer};
pub use segment::{kernel_token, segment_kernel_name};
