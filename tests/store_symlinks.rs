//! A symlink planted anywhere below the store root is never followed: reads,
//! writes, `verify`, `clear` and `prune` leave everything outside the root as
//! it was.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use kcache::store::{FileStore, Store};

/// A user's directory outside the store, with files worth keeping.
struct Victim {
    _t: tempfile::TempDir,
    dir: PathBuf,
}

impl Victim {
    fn new() -> Victim {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("precious");
        fs::create_dir(&dir).unwrap();
        for (name, body) in [("a", "alpha"), ("b", "beta")] {
            fs::write(dir.join(name), body).unwrap();
        }
        Victim { _t: t, dir }
    }

    /// Every file under the directory and its contents.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for e in fs::read_dir(&self.dir).unwrap() {
            let p = e.unwrap().path();
            out.insert(p.clone(), fs::read(&p).unwrap_or_default());
        }
        out
    }

    fn file(&self) -> PathBuf {
        self.dir.join("a")
    }
}

fn fill(s: &FileStore) -> Vec<Vec<u8>> {
    let keys: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i; 8]).collect();
    for k in &keys {
        s.put(k, &[k[0]; 100]).unwrap();
    }
    keys
}

/// Runs every operation that walks or writes the store.
fn exercise(s: &FileStore, keys: &[Vec<u8>]) {
    for k in keys {
        let _ = s.get(k);
        let _ = s.put(k, b"rewritten");
    }
    let _ = s.list();
    let _ = s.stats();
    let _ = s.verify();
    let _ = s.prune(0);
    let _ = s.clear();
    for k in keys {
        let _ = s.put(k, b"again");
        let _ = s.remove(k);
    }
}

#[test]
fn a_symlinked_shard_is_never_followed() {
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    let keys = fill(&s);
    let shard = s.entry_path(&keys[0]).parent().unwrap().to_path_buf();
    fs::remove_dir_all(&shard).unwrap();
    symlink(&v.dir, &shard).unwrap();
    let before = v.snapshot();
    let report = s.verify().unwrap();
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.reason.contains("symlink") && c.location == shard.display().to_string()),
        "{report:?}"
    );
    assert!(
        !fs::symlink_metadata(&shard).is_ok_and(|m| m.file_type().is_symlink()),
        "the plant is removed"
    );
    symlink(&v.dir, &shard).unwrap();
    exercise(&s, &keys);
    assert_eq!(v.snapshot(), before);
}

#[test]
fn a_symlinked_entry_is_never_followed() {
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    let keys = fill(&s);
    let before = v.snapshot();
    for k in &keys[..4] {
        let p = s.entry_path(k);
        fs::remove_file(&p).unwrap();
        symlink(v.file(), &p).unwrap();
    }
    assert_eq!(s.get(&keys[0]).unwrap(), None);
    assert!(!s.entry_path(&keys[0]).exists(), "the plant is removed");
    let report = s.verify().unwrap();
    assert_eq!(report.corrupt.len(), 3, "{report:?}");
    for k in &keys[..4] {
        symlink(v.file(), s.entry_path(k)).unwrap();
    }
    exercise(&s, &keys);
    assert_eq!(v.snapshot(), before);
}

#[test]
fn a_symlinked_tmp_or_entries_directory_refuses_the_store() {
    for name in ["tmp", "entries"] {
        let v = Victim::new();
        let t = tempfile::tempdir().unwrap();
        let s = FileStore::open(t.path()).unwrap();
        let keys = fill(&s);
        let dir = t.path().join("v1").join(name);
        fs::rename(&dir, t.path().join("moved")).unwrap();
        symlink(&v.dir, &dir).unwrap();
        let before = v.snapshot();
        exercise(&s, &keys);
        assert!(
            FileStore::open(t.path()).is_err(),
            "{name}: refused on open"
        );
        assert_eq!(v.snapshot(), before, "{name}");
        fs::remove_dir_all(t.path().join("moved")).unwrap();
    }
}

#[test]
fn an_entries_directory_swapped_for_a_symlink_after_open_is_never_read_through() {
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    s.put(b"kept", b"from the directory held").unwrap();
    let entries = t.path().join("v1/entries");
    fs::rename(&entries, t.path().join("moved")).unwrap();
    // Valid entries, written by a store of their own, in a directory outside
    // this one, and a symlink to it where `entries/` was.
    let decoy = t.path().join("decoy");
    FileStore::open(&decoy)
        .unwrap()
        .put(b"planted", b"decoy")
        .unwrap();
    symlink(decoy.join("v1/entries"), &entries).unwrap();
    // Reads stay in the directory held, whose entries are verified as ever.
    assert_eq!(
        s.get(b"kept").unwrap().as_deref(),
        Some(&b"from the directory held"[..])
    );
    assert_eq!(s.get(b"planted").unwrap(), None);
    // A write through the symlink is refused, and the symlink never held.
    assert!(s.put(b"new", b"x").is_err());
    assert_eq!(s.get(b"planted").unwrap(), None);
    assert_eq!(s.get(b"new").unwrap(), None);
}

#[test]
fn a_store_whose_entries_directory_was_replaced_reads_what_it_writes() {
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    s.put(b"a", b"1").unwrap();
    let entries = t.path().join("v1/entries");
    fs::rename(&entries, t.path().join("gone")).unwrap();
    // Another process makes the directory again, and writes to it.
    FileStore::open(t.path()).unwrap().put(b"b", b"2").unwrap();
    // Until this store writes, it reads the directory it holds.
    assert_eq!(s.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(s.get(b"b").unwrap(), None);
    // Its write lands in the new directory, and its reads follow.
    s.put(b"c", b"3").unwrap();
    assert_eq!(s.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(s.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(s.get(b"a").unwrap(), None);
}

#[test]
fn a_symlinked_layout_directory_refuses_the_store() {
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    symlink(&v.dir, t.path().join("v1")).unwrap();
    let before = v.snapshot();
    assert!(FileStore::open(t.path()).is_err());
    assert_eq!(v.snapshot(), before);
}

#[test]
fn a_symlinked_state_file_is_never_written_through() {
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    fs::create_dir_all(t.path().join("v1")).unwrap();
    symlink(v.file(), t.path().join("v1/state")).unwrap();
    let before = v.snapshot();
    let s = FileStore::open(t.path()).unwrap();
    let keys = fill(&s);
    exercise(&s, &keys);
    drop(s);
    assert_eq!(v.snapshot(), before);
}

#[cfg(feature = "sqlite")]
#[test]
fn symlinks_at_the_sqlite_database_and_its_side_files_refuse_the_store() {
    use kcache::store::SqliteStore;
    for suffix in ["", "-wal", "-shm"] {
        let v = Victim::new();
        let t = tempfile::tempdir().unwrap();
        let db = SqliteStore::open(t.path()).unwrap().path().to_path_buf();
        let plant = PathBuf::from(format!("{}{suffix}", db.display()));
        let _ = fs::remove_file(&plant);
        symlink(v.file(), &plant).unwrap();
        let before = v.snapshot();
        let e = SqliteStore::open(t.path()).unwrap_err();
        assert!(
            e.to_string().contains("not a regular file"),
            "{suffix}: {e}"
        );
        assert_eq!(v.snapshot(), before, "{suffix}");
    }
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    symlink(&v.dir, t.path().join("v1")).unwrap();
    let before = v.snapshot();
    assert!(SqliteStore::open(t.path()).is_err());
    assert_eq!(v.snapshot(), before, "a symlinked v1/");
}

fn kcache_cache(root: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kcache"))
        .arg("cache")
        .args(["--store", "file", "--dir"])
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cache_verify_clear_and_prune_never_touch_files_outside_the_root() {
    let v = Victim::new();
    let t = tempfile::tempdir().unwrap();
    let keys = fill(&FileStore::open(t.path()).unwrap());
    let s = FileStore::open(t.path()).unwrap();
    let shard = s.entry_path(&keys[0]).parent().unwrap().to_path_buf();
    let entry = s.entry_path(&keys[9]);
    drop(s);
    let before = v.snapshot();
    for args in [
        &["verify"][..],
        &["prune", "--max-bytes", "0"][..],
        &["clear"][..],
    ] {
        fs::remove_dir_all(&shard).ok();
        let _ = fs::remove_file(&shard);
        symlink(&v.dir, &shard).unwrap();
        if entry.parent().unwrap().is_dir() {
            let _ = fs::remove_file(&entry);
            symlink(v.file(), &entry).unwrap();
        }
        let out = kcache_cache(t.path(), args);
        assert!(
            out.status.code().is_some(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(v.snapshot(), before, "{args:?}");
    }
}
