//! The file store keeps an entry file open after a verified read, and reads
//! it again only while the entry's name still links to it: whatever another
//! process (or someone with the user's rights) does to the entry in between
//! is seen by the next read, which is then a miss or the entry now there,
//! never the file let go.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{symlink, FileExt};
use std::path::Path;

use kcache::store::{FileStore, Store};

fn store(root: &Path) -> FileStore {
    FileStore::open(root).unwrap()
}

fn got(s: &FileStore, key: &[u8]) -> Option<Vec<u8>> {
    s.get(key).unwrap()
}

/// A store over `root` holding `value` under `key`, read once, so its entry
/// file is kept open.
fn kept(root: &Path, key: &[u8], value: &[u8]) -> FileStore {
    let s = store(root);
    s.put(key, value).unwrap();
    assert_eq!(got(&s, key).as_deref(), Some(value));
    s
}

#[test]
fn a_kept_entry_replaced_or_removed_by_another_process_is_read_afresh() {
    let t = tempfile::tempdir().unwrap();
    let (s, other) = (store(t.path()), store(t.path()));
    s.put(b"k", b"first").unwrap();
    for _ in 0..2 {
        assert_eq!(got(&s, b"k").as_deref(), Some(&b"first"[..]));
    }
    other.put(b"k", b"second").unwrap();
    assert_eq!(got(&s, b"k").as_deref(), Some(&b"second"[..]));
    assert!(other.remove(b"k").unwrap());
    assert_eq!(got(&s, b"k"), None);
    other.put(b"k", b"third").unwrap();
    for _ in 0..2 {
        assert_eq!(got(&s, b"k").as_deref(), Some(&b"third"[..]));
    }
    other.clear().unwrap();
    assert_eq!(got(&s, b"k"), None);
}

#[test]
fn a_kept_entry_truncated_or_flipped_in_place_is_a_miss() {
    let t = tempfile::tempdir().unwrap();
    let s = store(t.path());
    let value = vec![7u8; 5000];
    let damages: [fn(&fs::File, u64); 3] = [
        |f, len| f.set_len(len - 1).unwrap(),
        |f, len| f.write_all_at(&[0], len - 1).unwrap(),
        |f, _| f.set_len(10).unwrap(),
    ];
    for (n, damage) in damages.into_iter().enumerate() {
        s.put(b"k", &value).unwrap();
        assert_eq!(got(&s, b"k").as_ref(), Some(&value), "{n}");
        let path = s.entry_path(b"k");
        let len = fs::metadata(&path).unwrap().len();
        // The same inode, changed where it lies: not a rename.
        damage(&OpenOptions::new().write(true).open(&path).unwrap(), len);
        assert_eq!(got(&s, b"k"), None, "damage {n}");
        assert!(!path.exists(), "damage {n}: the corrupt entry is removed");
    }
}

#[test]
fn a_kept_entry_moved_away_is_not_read_until_it_is_linked_back() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"value");
    let path = s.entry_path(b"k");
    let away = t.path().join("away");
    // As eviction does: out of its place first.
    fs::rename(&path, &away).unwrap();
    assert_eq!(got(&s, b"k"), None);
    fs::hard_link(&away, &path).unwrap();
    assert_eq!(got(&s, b"k").as_deref(), Some(&b"value"[..]));
}

#[test]
fn a_symlink_put_at_a_kept_entrys_name_is_a_miss_and_removed() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"value");
    let path = s.entry_path(b"k");
    let away = t.path().join("away");
    fs::rename(&path, &away).unwrap();
    // The very file kept, but reached through a symlink: never followed.
    symlink(&away, &path).unwrap();
    assert_eq!(got(&s, b"k"), None);
    assert!(
        fs::symlink_metadata(&path).is_err(),
        "the symlink is removed"
    );
}

#[test]
fn a_symlinked_shard_of_a_kept_entry_never_serves_what_it_leads_to() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"genuine");
    // A decoy: the same key's entry, valid, written by a store of its own
    // (another inode), in a directory outside; the shard a symlink to it.
    let decoy = t.path().join("decoy");
    let d = store(&decoy);
    d.put(b"k", b"decoy").unwrap();
    let path = s.entry_path(b"k");
    let shard = path.parent().unwrap();
    let decoy_shard = d.entry_path(b"k").parent().unwrap().to_path_buf();
    fs::rename(shard, t.path().join("moved-shard")).unwrap();
    symlink(&decoy_shard, shard).unwrap();
    assert_eq!(got(&s, b"k"), None);
    assert_eq!(
        got(&d, b"k").as_deref(),
        Some(&b"decoy"[..]),
        "the decoy is untouched"
    );
}

#[test]
fn entries_past_the_kept_count_are_all_still_read() {
    let t = tempfile::tempdir().unwrap();
    let s = store(t.path());
    let keys: Vec<Vec<u8>> = (0..100u32).map(|i| i.to_le_bytes().to_vec()).collect();
    for k in &keys {
        s.put(k, k).unwrap();
    }
    for _ in 0..2 {
        for k in &keys {
            assert_eq!(got(&s, k).as_ref(), Some(k));
        }
    }
}

/// Writes `bytes` over the file at `path` where it lies: the same inode, no
/// truncation, no rename (what a kept descriptor sees at once).
fn overwrite_in_place(path: &Path, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, 0).unwrap();
}

#[test]
fn a_kept_entry_overwritten_in_place_with_another_keys_entry_is_never_that_keys_value() {
    let t = tempfile::tempdir().unwrap();
    let s = store(t.path());
    // Keys and values of one length: the two entry files are the same size.
    s.put(b"k1", b"value of k1").unwrap();
    s.put(b"k2", b"value of k2").unwrap();
    assert_eq!(got(&s, b"k1").as_deref(), Some(&b"value of k1"[..]));
    let (p1, p2) = (s.entry_path(b"k1"), s.entry_path(b"k2"));
    let k2_file = fs::read(&p2).unwrap();
    assert_eq!(k2_file.len() as u64, fs::metadata(&p1).unwrap().len());
    // k2's whole valid entry (magic, key, checksum) written into k1's kept
    // file.
    overwrite_in_place(&p1, &k2_file);
    assert_eq!(got(&s, b"k1"), None, "not k2's value");
    assert_eq!(got(&s, b"k2").as_deref(), Some(&b"value of k2"[..]));
}

#[test]
fn a_kept_entry_rewritten_in_place_is_verified_again_at_every_read() {
    let t = tempfile::tempdir().unwrap();
    let s = store(t.path());
    s.put(b"k", b"first value").unwrap();
    assert_eq!(got(&s, b"k").as_deref(), Some(&b"first value"[..]));
    // The same key's valid entry of the same length, from another store.
    let other = tempfile::tempdir().unwrap();
    let o = store(other.path());
    o.put(b"k", b"other value").unwrap();
    let valid = fs::read(o.entry_path(b"k")).unwrap();
    let path = s.entry_path(b"k");
    overwrite_in_place(&path, &valid);
    // A valid entry of the key: what it now holds, read and verified anew.
    for _ in 0..2 {
        assert_eq!(got(&s, b"k").as_deref(), Some(&b"other value"[..]));
    }
    // Each byte of the payload flipped in turn, in place: every read sees it.
    let at = valid.len() - b"other value".len();
    for i in at..valid.len() {
        let mut bad = valid.clone();
        bad[i] ^= 0x20;
        s.put(b"k", b"other value").unwrap();
        assert!(got(&s, b"k").is_some(), "kept again");
        overwrite_in_place(&s.entry_path(b"k"), &bad);
        assert_eq!(got(&s, b"k"), None, "byte {i} flipped");
    }
}

#[test]
fn a_kept_entry_grown_in_place_past_its_length_is_a_miss() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"value");
    let path = s.entry_path(b"k");
    let len = fs::metadata(&path).unwrap().len();
    // Bytes appended to the kept file: the length read is what statx gives,
    // which no longer matches the header.
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(b"tail", len).unwrap();
    assert_eq!(got(&s, b"k"), None);
}

#[test]
fn a_kept_entry_evicted_by_another_store_over_the_directory_is_a_miss() {
    let t = tempfile::tempdir().unwrap();
    let (s, other) = (store(t.path()), store(t.path()));
    s.put(b"k", b"value").unwrap();
    for _ in 0..2 {
        assert!(got(&s, b"k").is_some());
    }
    other.prune(0).unwrap();
    assert_eq!(got(&s, b"k"), None);
}

#[test]
fn a_key_kept_from_an_entries_directory_swapped_away_is_a_miss_after_a_write() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"old directory's");
    let entries = s
        .entry_path(b"k")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    fs::rename(&entries, t.path().join("entries-away")).unwrap();
    fs::create_dir(&entries).unwrap();
    // A write goes to the directory now at the path, and the store follows
    // it: what it kept beneath the old one is let go.
    s.put(b"other", b"new directory's").unwrap();
    assert_eq!(got(&s, b"k"), None);
    assert_eq!(got(&s, b"other").as_deref(), Some(&b"new directory's"[..]));
}

#[test]
fn another_keys_entry_renamed_over_a_kept_entry_is_a_miss() {
    let t = tempfile::tempdir().unwrap();
    let s = store(t.path());
    s.put(b"k1", b"value of k1").unwrap();
    s.put(b"k2", b"value of k2").unwrap();
    for _ in 0..2 {
        assert!(got(&s, b"k1").is_some());
    }
    // k2's valid entry file put in k1's place, atomically, as a writer's
    // rename would: another inode, and another key inside.
    fs::rename(s.entry_path(b"k2"), s.entry_path(b"k1")).unwrap();
    assert_eq!(got(&s, b"k1"), None, "not k2's value");
    assert!(
        !s.entry_path(b"k1").exists(),
        "the misplaced entry is removed"
    );
}

#[test]
fn a_fifo_put_at_a_kept_entrys_name_is_a_miss_and_removed() {
    let t = tempfile::tempdir().unwrap();
    let s = kept(t.path(), b"k", b"value");
    let path = s.entry_path(b"k");
    fs::remove_file(&path).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path alive for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert_eq!(got(&s, b"k"), None);
    assert!(fs::symlink_metadata(&path).is_err(), "the fifo is removed");
}
