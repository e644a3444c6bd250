//! Entry files across the checksum change: an entry the previous version
//! wrote (magic `kcache\x01\n`, blake3 checksum) is still a verified hit, and
//! a damaged one of either version is a miss, never an error.

use kcache::store::{FileStore, Store};
use std::fs;

/// Rewrites the entry of `key` as the previous version framed it.
fn rewrite_as_version_1(s: &FileStore, key: &[u8], payload: &[u8]) {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"kcache\x01\n");
    bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(blake3::hash(payload).as_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(payload);
    fs::write(s.entry_path(key), bytes).unwrap();
}

fn flip_last_byte(s: &FileStore, key: &[u8]) {
    let path = s.entry_path(key);
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    fs::write(&path, bytes).unwrap();
}

#[test]
fn a_version_1_entry_is_still_a_verified_hit() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStore::open(dir.path()).unwrap();
    s.put(b"k", b"placeholder").unwrap();
    rewrite_as_version_1(&s, b"k", b"written by version 1");
    assert_eq!(
        s.get(b"k").unwrap().as_deref(),
        Some(&b"written by version 1"[..])
    );
    assert!(s.verify().unwrap().corrupt.is_empty());
    // A rewrite frames it as this version does.
    s.put(b"k", b"fresh").unwrap();
    assert_eq!(&fs::read(s.entry_path(b"k")).unwrap()[..8], b"kcache\x02\n");
    assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"fresh"[..]));
}

#[test]
fn a_damaged_entry_of_either_version_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStore::open(dir.path()).unwrap();
    s.put(b"new", b"payload of version 2").unwrap();
    flip_last_byte(&s, b"new");
    assert_eq!(s.get(b"new").unwrap(), None);
    assert!(!s.entry_path(b"new").exists(), "removed as corrupt");
    s.put(b"old", b"placeholder").unwrap();
    rewrite_as_version_1(&s, b"old", b"payload of version 1");
    flip_last_byte(&s, b"old");
    assert_eq!(s.get(b"old").unwrap(), None);
    assert!(!s.entry_path(b"old").exists(), "removed as corrupt");
}

#[test]
fn an_entry_whose_key_is_not_the_one_expected_is_read_whole() {
    // A key of another length under the expected name: the one read that
    // guessed the key's length must not serve its bytes as the payload.
    let dir = tempfile::tempdir().unwrap();
    let s = FileStore::open(dir.path()).unwrap();
    s.put(b"a-long-key", b"value").unwrap();
    let other = dir.path().join("other");
    let t = FileStore::open(&other).unwrap();
    t.put(b"ab", b"value").unwrap();
    fs::copy(t.entry_path(b"ab"), s.entry_path(b"a-long-key")).unwrap();
    // Its stored key does not hash to the file's name: damage, a miss.
    assert_eq!(s.get(b"a-long-key").unwrap(), None);
    assert_eq!(t.get(b"ab").unwrap().as_deref(), Some(&b"value"[..]));
}

/// Frames `payload` under `key` as version 2 is specified (magic
/// `kcache\x02\n`, xxh3-128 little endian, 16 zero bytes), with the checksum
/// computed by xxhash-rust. The store hashes with it for a process's first
/// 256 KiB and with twox-hash after (`src/checksum.rs`, whose unit test
/// holds the two to each other at every size class).
fn frame_as_version_2_elsewhere(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"kcache\x02\n");
    bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes());
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(payload);
    bytes
}

/// Pseudo-random bytes (a fixed LCG), so every xxh3 size class is covered
/// by content that is not all zeros.
fn bytes_of_len(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

#[test]
fn the_version_2_checksum_is_xxh3_128_whichever_implementation_wrote_it() {
    // The checksum's crate may change (for speed); its digests may not, or
    // every entry written before the change would read as damage. Each xxh3
    // size class (0, 1-3, 4-8, 9-16, 17-128, 129-240, long, several stripes
    // and blocks) is written by this store and framed elsewhere: the bytes
    // must be equal.
    let dir = tempfile::tempdir().unwrap();
    let s = FileStore::open(dir.path()).unwrap();
    for (i, len) in [
        0usize, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 4096, 65_536, 100_003,
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("k{len}");
        let payload = bytes_of_len(len, i as u64 + 1);
        s.put(key.as_bytes(), &payload).unwrap();
        let written = fs::read(s.entry_path(key.as_bytes())).unwrap();
        assert_eq!(
            written,
            frame_as_version_2_elsewhere(key.as_bytes(), &payload),
            "payload of {len} bytes"
        );
        // And an entry framed elsewhere is a verified hit.
        fs::write(s.entry_path(key.as_bytes()), &written).unwrap();
        assert_eq!(s.get(key.as_bytes()).unwrap(), Some(payload));
    }
}
