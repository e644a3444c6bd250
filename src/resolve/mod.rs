//! The batch resolver (issue 3).

pub mod census;
pub mod split;
