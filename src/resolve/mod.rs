//! The batch resolver (issue 3).
