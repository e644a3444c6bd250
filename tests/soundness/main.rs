//! The adversarial soundness suite (issue 9, "Sound keys"): a hit must
//! answer exactly what compiling that kernel alone would.
//!
//! Every case names two kernels, A and B, and the files, options and
//! environment they compile with. For each backend this machine can load,
//! [`harness::check`] asserts behavioural equality, never an outcome:
//!
//! * **A, then B, in one store**, each in a fresh backend and resolver (as two
//!   processes would): B's answer behaves as B compiled alone in a fresh
//!   store (launched on the same inputs, the outputs compared bit for bit; or
//!   both fail). Files a case edits between the two compiles are edited
//!   there, and B alone sees the edited files.
//! * **B, then A**: the same for A's answer.
//! * **A and B in one batch** (so the resolver may group them into one
//!   compile): when both compile alone, the batch succeeds and each answer
//!   behaves as its kernel alone; when either fails alone, the batch fails.
//!   Then a fresh resolver over that store answers each alone-equivalently.
//!
//! A case first checks it can fail: A alone and B alone behave differently
//! (unless it says otherwise), so a wrong hit between them is visible.
//! CUDA runs compile only: its "behaviour" is the kernel's PTX, with the
//! kernel's own name and the names of the module-level data it reads
//! normalized away. A backend whose library is missing is skipped with a
//! reason unless `KCACHE_TEST_REQUIRE` lists it.
//!
//! Cases that need another working directory or environment (a header in
//! the process's working directory, `CPATH`, `LIBRARY_PATH`) rerun their own
//! test in a fresh process with those set.
//!
//! One module per backend; each test is named after the class it guards.

#[path = "../backend_support/mod.rs"]
mod backend_support;

#[macro_use]
mod harness;

mod cc;
mod cuda;
mod opencl;
mod vulkan;
