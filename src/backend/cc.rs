//! The system C compiler backend (issue 3).
