//! The generation-guarded per-device cache (issue 5).
