//! Fuzzing the stores' entry decoders with arbitrary and mutated bytes: no
//! input panics, hangs or allocates what it does not hold, and whatever a
//! decoder serves is exactly what was encoded for the key asked for.
//!
//! Cheap enough to run on every `cargo test`: 300,000 inputs per decoder
//! (about 45 s for the file and SQLite ones in a debug build on two busy
//! cores; a million in all, `KCACHE_FUZZ_CASES=500000`, about 75 s). The
//! counts are set here, not by `PROPTEST_CASES`; `KCACHE_FUZZ_CASES` (per
//! decoder) raises or lowers them. The Redis frame also gets every single
//! mutation of valid frames tried exhaustively, on a thousandth as many
//! frames (each has about 1,500 mutations).

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

const REDIS_KEY: &[u8] = b"kcache:k1:{00ff}:v";

fn redis_mac_key() -> super::redis::frame::MacKey {
    super::redis::frame::MacKey::derive(b"fuzz secret")
}

fn redis_plain(key: &[u8], payload: &[u8]) -> Vec<u8> {
    super::redis::frame::encode(None, REDIS_KEY, key, payload)
}

fn redis_macd(key: &[u8], payload: &[u8]) -> Vec<u8> {
    super::redis::frame::encode(Some(&redis_mac_key()), REDIS_KEY, key, payload)
}

#[test]
fn redis_frame_decoder_never_panics_and_serves_only_what_was_encoded() {
    use super::redis::frame;
    let mac_key = redis_mac_key();
    let inputs = prop_oneof![mutated(redis_plain), mutated(redis_macd)];
    runner()
        .run(&inputs, |(key, bytes)| {
            let _ = frame::peek(&bytes, bytes.len() as u64);
            for secret in [None, Some(&mac_key)] {
                for want in [Some(&key[..]), None] {
                    if let Ok(d) = frame::decode(secret, REDIS_KEY, want, &bytes) {
                        if let Some(w) = want {
                            prop_assert_eq!(d.store_key, w);
                        }
                        // Accepted only as exactly what this reader's
                        // configuration writes for that key and payload.
                        prop_assert_eq!(
                            frame::encode(secret, REDIS_KEY, d.store_key, d.payload),
                            bytes.clone()
                        );
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_single_mutation_of_a_redis_frame_is_refused() {
    use super::redis::frame;
    let mac_key = redis_mac_key();
    let frames = (
        prop::collection::vec(any::<u8>(), 0..12),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 1..4),
    );
    let mut runner = TestRunner::new(Config {
        cases: (cases() / 1000).max(16),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&frames, |(key, payload, macd, extra)| {
            let secret = macd.then_some(&mac_key);
            let good = frame::encode(secret, REDIS_KEY, &key, &payload);
            // Without a wanted key (`ls`, `verify`) a frame is taken only if
            // the Redis key name is the one its store key hashes to, as
            // `verify` checks: a damaged store key names another entry.
            let refused = |b: &[u8]| {
                frame::decode(secret, REDIS_KEY, Some(&key), b).is_err()
                    && frame::decode(secret, REDIS_KEY, None, b)
                        .map_or(true, |d| d.store_key != &key[..])
            };
            prop_assert!(frame::decode(secret, REDIS_KEY, Some(&key), &good).is_ok());
            let mut b = good.clone();
            for at in 0..b.len() {
                for bit in 0..8 {
                    b[at] ^= 1 << bit;
                    prop_assert!(refused(&b), "bit {} of byte {} flipped was read", bit, at);
                    b[at] ^= 1 << bit;
                }
            }
            for n in 0..good.len() {
                prop_assert!(refused(&good[..n]), "cut to {} bytes was read", n);
            }
            let mut longer = good.clone();
            longer.extend_from_slice(&extra);
            prop_assert!(refused(&longer), "extended by {:?} was read", extra);
            Ok(())
        })
        .unwrap();
}
