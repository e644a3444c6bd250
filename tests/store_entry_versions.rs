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
