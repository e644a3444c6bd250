//! The local integrity checksums, xxh3 (64 and 128 bits): a file-store
//! entry's and a kept compiler probe's. They guard against damage, not
//! against a forger (see `store::entry::checksum`).
//!
//! Two implementations of the one function, chosen by length. From
//! [`SIMD_FROM`] bytes up, `twox-hash`, which picks its AVX2 or SSE2 kernel
//! at run time; below it, `xxhash-rust` built for the target's baseline
//! (SSE2 on x86-64), which detects nothing. Detection is the reason: the
//! first `is_x86_feature_detected!` of a process runs `cpuid` about seven
//! times, and under a hypervisor each traps (5–8 µs each measured here), so
//! it cost a whole-process CLI hit about 55 µs for two checksums of 15 and
//! 24 KiB that SSE2 hashes in 2 µs. Large entries, where AVX2 pays, are
//! hashed by the detecting one. Both compute xxh3, so the digest never
//! depends on the length's side of the line (tests below, and
//! `tests/store_entry_versions.rs`).

/// The length from which the run-time dispatching implementation is used.
pub(crate) const SIMD_FROM: usize = 64 << 10;

/// xxh3-64 of `bytes`.
pub(crate) fn xxh3_64(bytes: &[u8]) -> u64 {
    if bytes.len() >= SIMD_FROM {
        twox_hash::XxHash3_64::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_64(bytes)
    }
}

/// xxh3-128 of `bytes`.
pub(crate) fn xxh3_128(bytes: &[u8]) -> u128 {
    if bytes.len() >= SIMD_FROM {
        twox_hash::XxHash3_128::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_128(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every xxh3 size class (0, 1–3, 4–8, 9–16, 17–128, 129–240, then the
    /// striped loop with and without a partial block) on both sides of
    /// [`SIMD_FROM`]: the two implementations agree.
    #[test]
    fn both_implementations_give_the_same_digest_at_every_size_class() {
        let data: Vec<u8> = (0..SIMD_FROM * 2 + 77)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        let mut lens = vec![0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1025];
        lens.extend([SIMD_FROM - 1, SIMD_FROM, SIMD_FROM + 1, SIMD_FROM * 2 + 77]);
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
    }
}
