//! The local integrity checksums, xxh3 (64 and 128 bits): a file-store
//! entry's and a kept compiler probe's. They guard against damage, not
//! against a forger (see `store::entry::checksum`).
//!
//! Two implementations of the one function. Once a process has hashed
//! [`SIMD_AFTER`] bytes in all, `twox-hash`, which picks its AVX2 or SSE2
//! kernel at run time; until then `xxhash-rust`, built for the target's
//! baseline (SSE2 on x86-64), which detects nothing. Detection is the reason:
//! the first `is_x86_feature_detected!` of a process runs `cpuid` about
//! seven times, and under a hypervisor each traps (5–8 µs each measured
//! here), so it cost a whole-process CLI hit about 55 µs for two checksums
//! (a 24 KiB probe record, a 15 KiB program) that SSE2 hashes in 2 µs. AVX2
//! saves about 0.3 ns a byte, so the detection pays for itself after a few
//! hundred KiB: a process that keeps reading (a search, a benchmark) gets
//! the SIMD kernel after its first few entries. Both compute xxh3, so the
//! digest never depends on which one ran (tests below, and
//! `tests/store_entry_versions.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes a process hashes before it switches to the run-time
/// dispatching implementation.
pub(crate) const SIMD_AFTER: usize = 256 << 10;

/// The bytes hashed so far, until past [`SIMD_AFTER`] (then no longer
/// counted). Only ever compared with it, so a relaxed count is enough.
static HASHED: AtomicUsize = AtomicUsize::new(0);

/// Whether hashing `len` more bytes goes through the dispatching
/// implementation.
fn simd(len: usize) -> bool {
    let before = HASHED.load(Ordering::Relaxed);
    if before >= SIMD_AFTER {
        return true;
    }
    HASHED.fetch_add(len.min(SIMD_AFTER), Ordering::Relaxed) + len >= SIMD_AFTER
}

/// xxh3-64 of `bytes`.
pub(crate) fn xxh3_64(bytes: &[u8]) -> u64 {
    if simd(bytes.len()) {
        twox_hash::XxHash3_64::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_64(bytes)
    }
}

/// xxh3-128 of `bytes`.
pub(crate) fn xxh3_128(bytes: &[u8]) -> u128 {
    if simd(bytes.len()) {
        twox_hash::XxHash3_128::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_128(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every xxh3 size class (0, 1–3, 4–8, 9–16, 17–128, 129–240, then the
    /// striped loop with and without a partial block, up to past
    /// [`SIMD_AFTER`]): the two implementations agree, and so does the
    /// function on whichever side of the switch it stands.
    #[test]
    fn both_implementations_give_the_same_digest_at_every_size_class() {
        let data: Vec<u8> = (0..SIMD_AFTER + 77)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        let mut lens = vec![0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1025];
        lens.extend([65_535, 65_536, 65_537, SIMD_AFTER + 77]);
        for len in lens {
            let b = &data[..len];
            assert_eq!(
                twox_hash::XxHash3_64::oneshot(b),
                xxhash_rust::xxh3::xxh3_64(b),
                "{len}"
            );
            assert_eq!(
                twox_hash::XxHash3_128::oneshot(b),
                xxhash_rust::xxh3::xxh3_128(b),
                "{len}"
            );
            assert_eq!(xxh3_64(b), xxhash_rust::xxh3::xxh3_64(b), "{len}");
            assert_eq!(xxh3_128(b), twox_hash::XxHash3_128::oneshot(b), "{len}");
        }
        // Past the switch (the longest input alone crosses it).
        assert!(simd(0));
        for len in [0, 17, 241, 4096] {
            let b = &data[..len];
            assert_eq!(xxh3_64(b), xxhash_rust::xxh3::xxh3_64(b), "{len}");
            assert_eq!(xxh3_128(b), xxhash_rust::xxh3::xxh3_128(b), "{len}");
        }
    }
}
