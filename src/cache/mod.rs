//! In-memory caches: the byte-capped code cache the resolver publishes into,
//! the hooks that carry teardown notifications up from the backends, and the
//! guarded per-device cache backends keep their driver handles in.

pub mod code;
pub mod guarded;
pub mod hooks;
