//! Fuzzing the stores' entry decoders with arbitrary and mutated bytes: no
//! input panics, hangs or allocates what it does not hold, and whatever a
//! decoder serves is exactly what was encoded for the key asked for.
//!
//! Cheap enough to run on every `cargo test`: 300,000 inputs per decoder
//! (about 45 s for both in a debug build on two busy cores; a million in all,
//! `KCACHE_FUZZ_CASES=500000`, about 75 s). The counts are set here, not by
//! `PROPTEST_CASES`; `KCACHE_FUZZ_CASES` (per decoder) raises or lowers them.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::entry;
use super::file::read::Outcome;
use super::FileStore;

/// Inputs per decoder.
fn cases() -> u32 {
    std::env::var("KCACHE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    })
}

/// Bytes near a valid encoding: flipped bytes, a cut or extended tail, or
/// pure garbage.
fn mutated(encode: fn(&[u8], &[u8]) -> Vec<u8>) -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let key = prop::collection::vec(any::<u8>(), 0..12);
    let payload = prop::collection::vec(any::<u8>(), 0..64);
    let flips = prop::collection::vec((any::<usize>(), any::<u8>()), 0..4);
    let tail = prop_oneof![
        Just(None),
        (0usize..8).prop_map(|n| Some(Err(n))),
        prop::collection::vec(any::<u8>(), 1..8).prop_map(|b| Some(Ok(b))),
    ];
    prop_oneof![
        1 => (key.clone(), prop::collection::vec(any::<u8>(), 0..160)),
        4 => (key, payload, flips, tail).prop_map(move |(k, p, flips, tail)| {
            let mut b = encode(&k, &p);
            for (at, x) in flips {
                if !b.is_empty() {
                    let n = b.len();
                    b[at % n] ^= x;
                }
            }
            match tail {
                Some(Err(n)) => b.truncate(b.len().saturating_sub(n)),
                Some(Ok(more)) => b.extend(more),
                None => {}
            }
            (k, b)
        }),
    ]
}

fn file_entry(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut b = entry::encode_head(key, payload);
    b.extend_from_slice(payload);
    b
}

fn memfd() -> File {
    // SAFETY: a constant NUL-terminated name; the descriptor is owned below.
    let fd = unsafe { libc::memfd_create(c"kcache-fuzz".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor nothing else owns.
    unsafe { File::from_raw_fd(fd) }
}

#[test]
fn file_store_entry_decoder_never_panics_and_serves_only_what_was_encoded() {
    let file = memfd();
    runner()
        .run(&mutated(file_entry), |(key, bytes)| {
            file.set_len(0).unwrap();
            file.write_all_at(&bytes, 0).unwrap();
            for expect in [Some(&key[..]), None] {
                (&file).seek(SeekFrom::Start(0)).unwrap();
                let named = |k: &[u8]| k == &key[..];
                let read = FileStore::read_entry(&file, bytes.len() as u64, expect, &named, true);
                if let Ok(Outcome::Entry { key: k, payload }) = read {
                    prop_assert_eq!(&k, &key);
                    prop_assert_eq!(file_entry(&k, &payload), bytes.clone());
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn sqlite_value_decoder_never_panics_and_serves_only_what_was_encoded() {
    use super::sqlite::frame;
    let sums =
        prop_oneof![4 => Just(None), 1 => prop::array::uniform32(any::<u8>()).prop_map(Some)];
    runner()
        .run(&(mutated(frame::encode), sums), |((key, bytes), sum)| {
            let sum = sum.unwrap_or_else(|| frame::checksum(&bytes));
            let _ = frame::parse(&bytes);
            if let Ok(payload) = frame::decode(&key, &bytes, &sum) {
                prop_assert_eq!(frame::encode(&key, payload), bytes.clone());
                prop_assert_eq!(sum, frame::checksum(&bytes));
            }
            Ok(())
        })
        .unwrap();
}
