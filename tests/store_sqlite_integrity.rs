//! The SQLite store never answers a key with another key's row (a damaged
//! index, swapped rows), `verify` finds and mends a damaged database, and the
//! database file stays under the cap.

#![cfg(feature = "sqlite")]

use std::fs;
use std::path::{Path, PathBuf};

use kcache::key::Digest;
use kcache::resolve::stored::{encode_record, kernel_entry_key, program_entry_key, program_id};
use kcache::store::{SqliteOptions, SqliteStore, Store};
use rusqlite::Connection;

fn open(dir: &Path) -> SqliteStore {
    SqliteStore::open_with(dir, SqliteOptions::default()).unwrap()
}

fn open_capped(dir: &Path, cap: u64) -> SqliteStore {
    let opts = SqliteOptions {
        max_bytes: cap,
        ..SqliteOptions::default()
    };
    SqliteStore::open_with(dir, opts).unwrap()
}

/// Swaps the stored values (and their checksums) of two keys, as a copy of
/// rows between databases or a damaged page would.
fn swap_rows(db: &Path, a: &[u8], b: &[u8]) {
    let c = Connection::open(db).unwrap();
    c.execute_batch("CREATE TEMP TABLE s AS SELECT key, value, checksum FROM entries;")
        .unwrap();
    for (x, y) in [(a, b), (b, a)] {
        c.execute(
            "UPDATE entries SET value = (SELECT value FROM s WHERE key = ?2),
                 checksum = (SELECT checksum FROM s WHERE key = ?2) WHERE key = ?1",
            [x, y],
        )
        .unwrap();
    }
}

#[test]
fn swapped_program_rows_are_never_served() {
    let t = tempfile::tempdir().unwrap();
    let s = open(t.path());
    let (pa, pb) = (b"program a bytes".to_vec(), b"program b bytes!!".to_vec());
    let (ka, kb) = (
        program_entry_key(&program_id(&pa)),
        program_entry_key(&program_id(&pb)),
    );
    s.put(&ka, &pa).unwrap();
    s.put(&kb, &pb).unwrap();
    swap_rows(s.path(), &ka, &kb);
    assert_eq!(s.get(&ka).unwrap(), None);
    assert_eq!(s.get(&kb).unwrap(), None);
    let st = s.stats().unwrap();
    assert_eq!((st.corrupt, st.hits, st.entries), (2, 0, 0), "{st:?}");
}

#[test]
fn swapped_kernel_records_are_never_served() {
    let t = tempfile::tempdir().unwrap();
    let s = open(t.path());
    let (ka, kb) = (
        kernel_entry_key(&Digest([1; 32])),
        kernel_entry_key(&Digest([2; 32])),
    );
    s.put(&ka, &encode_record(&Digest([3; 32]), "a")).unwrap();
    s.put(&kb, &encode_record(&Digest([4; 32]), "b")).unwrap();
    swap_rows(s.path(), &ka, &kb);
    let report = s.verify().unwrap();
    assert_eq!(report.checked, 2);
    assert_eq!(report.corrupt.len(), 2, "{report:?}");
    assert!(
        report.corrupt[0].reason.contains("another key"),
        "{report:?}"
    );
    assert_eq!(s.get(&ka).unwrap(), None);
    assert_eq!(s.get(&kb).unwrap(), None);
}

/// Changes the rowid `key`'s entry in the primary-key index points to, from
/// `from` to `to`: one byte of the index, so that looking `key` up finds
/// another row and the row of `key` is missing from the index.
fn misdirect_index(db: &Path, key: &[u8], from: u8, to: u8) {
    let (root, page_size): (i64, i64) = {
        let c = Connection::open(db).unwrap();
        let root = c
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_entries_1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (
            root,
            c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap(),
        )
    };
    assert!(
        !Path::new(&format!("{}-wal", db.display())).exists(),
        "checkpointed"
    );
    let mut bytes = fs::read(db).unwrap();
    let start = ((root - 1) * page_size) as usize;
    let page = &mut bytes[start..start + page_size as usize];
    let at = page
        .windows(key.len())
        .position(|w| w == key)
        .expect("the key is in its index page");
    // An index record ends with the key's bytes, then the rowid (a one-byte
    // integer from 2 on; 0 and 1 live in the record's header).
    assert_eq!(page[at + key.len()], from);
    page[at + key.len()] = to;
    fs::write(db, bytes).unwrap();
}

#[test]
fn a_damaged_index_answers_a_miss_and_verify_rebuilds_it() {
    let t = tempfile::tempdir().unwrap();
    let k00 = kernel_entry_key(&Digest([0xa0; 32]));
    let k01 = kernel_entry_key(&Digest([0xa1; 32]));
    let db: PathBuf;
    {
        let s = open(t.path());
        s.put(&k00, b"record of k00").unwrap();
        s.put(&k01, b"record of k01").unwrap();
        db = s.path().to_path_buf();
    }
    // Rowids 1 and 2: k01's index entry now leads to k00's row.
    misdirect_index(&db, &k01, 2, 1);
    let s = open(t.path());
    assert_eq!(s.get(&k01).unwrap(), None, "never k00's record");
    assert_eq!(s.get(&k00).unwrap().as_deref(), Some(&b"record of k00"[..]));
    assert!(s.stats().unwrap().corrupt >= 1);
    let report = s.verify().unwrap();
    let db_damage: Vec<_> = report.corrupt.iter().filter(|c| c.key.is_none()).collect();
    assert_eq!(db_damage.len(), 1, "{report:?}");
    assert!(
        db_damage[0].reason.contains("damaged database")
            && db_damage[0].reason.contains("indexes rebuilt"),
        "{report:?}"
    );
    assert_eq!(s.get(&k01).unwrap().as_deref(), Some(&b"record of k01"[..]));
    assert!(s.verify().unwrap().corrupt.is_empty(), "mended");
}

#[test]
fn a_garbage_database_is_recreated_and_verify_says_so() {
    let t = tempfile::tempdir().unwrap();
    let db = open(t.path()).path().to_path_buf();
    fs::write(&db, vec![0x5a; 10_000]).unwrap();
    let s = open(t.path());
    s.put(b"k", b"v").unwrap();
    assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let report = s.verify().unwrap();
    assert_eq!(report.corrupt.len(), 1, "{report:?}");
    assert!(
        report.corrupt[0].reason.contains("damaged database")
            && report.corrupt[0].reason.contains("recreated empty"),
        "{report:?}"
    );
    assert!(s.verify().unwrap().corrupt.is_empty(), "said once");
}

#[test]
fn a_truncated_database_is_reported_and_mended_by_verify() {
    let t = tempfile::tempdir().unwrap();
    let db: PathBuf;
    {
        let s = open(t.path());
        for i in 0..200u32 {
            s.put(&i.to_le_bytes(), &[i as u8; 3000]).unwrap();
        }
        db = s.path().to_path_buf();
    }
    let len = fs::metadata(&db).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    let s = open(t.path());
    let report = s.verify().unwrap();
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.key.is_none() && c.reason.contains("damaged database")),
        "{report:?}"
    );
    assert!(s.verify().unwrap().corrupt.is_empty(), "mended");
    s.put(b"fresh", b"v").unwrap();
    assert_eq!(s.get(b"fresh").unwrap().as_deref(), Some(&b"v"[..]));
}

fn disk_bytes(db: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|sfx| fs::metadata(format!("{}{sfx}", db.display())).map_or(0, |m| m.len()))
        .sum()
}

#[test]
fn the_database_file_stays_under_its_cap() {
    let t = tempfile::tempdir().unwrap();
    let cap = 200_000;
    let db: PathBuf;
    {
        let s = open_capped(t.path(), cap);
        db = s.path().to_path_buf();
        for i in 0..400u32 {
            let v: Vec<u8> = (0..1500u32).map(|j| (i * 7 + j) as u8).collect();
            s.put(&i.to_le_bytes(), &v).unwrap();
            let file = fs::metadata(&db).unwrap().len();
            assert!(file <= cap, "after put {i}: database file {file} > {cap}");
        }
        assert!(s.len().unwrap() > 50, "still holds a useful share");
    }
    let after = disk_bytes(&db);
    assert!(
        after <= cap,
        "{after} bytes on disk after closing, cap {cap}"
    );
}

#[test]
fn an_oversized_value_is_rejected_without_being_read() {
    let t = tempfile::tempdir().unwrap();
    let s = open_capped(t.path(), 10_000);
    s.put(b"k", b"small").unwrap();
    let c = Connection::open(s.path()).unwrap();
    c.execute(
        "UPDATE entries SET value = zeroblob(50000) WHERE key = ?1",
        [&b"k"[..]],
    )
    .unwrap();
    assert_eq!(s.get(b"k").unwrap(), None);
    assert_eq!(s.stats().unwrap().corrupt, 1);
    assert_eq!(s.len().unwrap(), 0, "removed");
}
