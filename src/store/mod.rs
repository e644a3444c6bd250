//! Persistent program stores (issue 4).
