//! The built-in autotuning search (issue 3).
