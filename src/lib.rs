//! kcache: compile a GPU/CPU kernel once per search.
//!
//! Autotuning loops render thousands of candidate kernels whose text differs
//! only in generated names. kcache keys every compile on a *canonical text* (the
//! kernel up to a renaming of the names it binds), so an unchanged kernel is
//! compiled once, and a changed one is never served someone else's binary.
//!
//! # Data flow
//!
//! ```text
//! kernel text ──► canon ──────► key ─────────► resolve ──► cache::CodeCache (in memory)
//!  (C, CUDA,      lexer          digest_parts     │              │ miss
//!   OpenCL,       renamer        make_key         │              ▼
//!   GLSL)         kernel_token   program keys     │          store (memory / file / SQLite)
//!                                                 │              │ miss
//!                                                 ▼              ▼
//!                                   backend (cc, OpenCL, CUDA, Vulkan) ──► program + symbol
//!                                                 ▲
//!                          cache::hooks + cache::guarded (per-device handles, teardown)
//! ```
//!
//! * [`canon`] lexes kernel text losslessly and renames the names a kernel binds
//!   (loop symbols, scope locals, bound tensor names and names derived from them)
//!   to canonical names numbered by first occurrence.
//! * [`key`] digests length-prefixed parts with blake3 and builds every key in
//!   one place: [`key::make_key`] for per-device handle caches, and the program
//!   key the resolver and the stores share.
//! * [`cache`] holds the byte-capped code cache, the hooks that carry teardown
//!   notifications up from the backends, and the guarded per-device cache.
//! * [`store`] persists compiled programs across processes.
//! * [`resolve`] answers a batch of kernels with a loaded program and a symbol
//!   each, compiling one representative per distinct key.
//! * [`backend`] is the trait a compiler implements, one file per compiler.
//! * [`tune`] is the built-in autotuning search that drives all of the above.
//! * [`bytes`] reads byte sizes (`2G`, `512MiB`) for every size setting.
//!
//! A minimal use, with the system C compiler:
//!
//! ```
//! use std::sync::Arc;
//! use kcache::backend::cc::CcBackend;
//! use kcache::resolve::{Kernel, Resolver};
//!
//! // Every setting at its default: no store, a 256 MiB code cache, no split.
//! let resolver = Resolver::builder(Arc::new(CcBackend::new()?)).build();
//! let kernel = Kernel::new("scale__seg0", "void scale__seg0(float* n1_x, int n) {\n  for (int i7 = 0; i7 < n; i7++) n1_x[i7] *= 2.0f;\n}\n")
//!     .bound(["n1_x"]);
//! let answer = &resolver.resolve(&[kernel])?[0];
//! // Another candidate's rendering (other counters, another segment index) hits.
//! let again = Kernel::new("scale__seg3", "void scale__seg3(float* n4_x, int n) {\n  for (int i2 = 0; i2 < n; i2++) n4_x[i2] *= 2.0f;\n}\n")
//!     .bound(["n4_x"]);
//! let batch = resolver.resolve_counted(&[again])?;
//! assert_eq!(batch.census.kernels_reused, 1);
//! let hit = &batch.answers[0];
//! assert!(Arc::ptr_eq(&answer.program, &hit.program));
//! assert_eq!(&*hit.symbol, "scale__seg0"); // the symbol it was compiled under
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod bytes;
pub mod cache;
pub mod canon;
mod checksum;
pub mod key;
pub mod resolve;
pub mod store;
pub mod tune;
