//! The byte-capped code cache (issue 3).
