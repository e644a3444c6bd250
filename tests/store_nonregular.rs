//! What is not an entry file never blocks, fails or bloats a store: FIFOs,
//! directories, sockets and devices where a file should be, oversized
//! (sparse) entries, paths that cannot be used, a store deleted mid-run.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use kcache::store::{FileStore, FileStoreOptions, Store};

/// Runs `f` on another thread; fails the test if it does not return within
/// ten seconds (a blocking open).
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} blocked"))
}

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn mknod_null(p: &Path) -> bool {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; (1, 3) is /dev/null's device number.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
    if rc != 0 {
        eprintln!("skipped the device case: mknod refused");
    }
    rc == 0
}

fn bind_socket(p: &Path) -> std::os::unix::net::UnixListener {
    std::os::unix::net::UnixListener::bind(p).unwrap()
}

fn key_path(s: &FileStore, key: &[u8]) -> PathBuf {
    let p = s.entry_path(key);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    p
}

#[test]
fn a_fifo_at_an_entry_path_does_not_block_and_is_removed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().to_path_buf();
    let s = FileStore::open(&root).unwrap();
    let p = key_path(&s, b"k");
    mkfifo(&p);
    let got = within_deadline("get", move || {
        let s = FileStore::open(&root).unwrap();
        let got = s.get(b"k").unwrap();
        (got, s.stats().unwrap().corrupt)
    });
    assert_eq!(got, (None, 1));
    assert!(!p.exists(), "removed");
    mkfifo(&p);
    let root = t.path().to_path_buf();
    let report = within_deadline("verify", move || {
        FileStore::open(&root).unwrap().verify().unwrap()
    });
    assert_eq!(report.corrupt.len(), 1, "{report:?}");
    assert!(report.corrupt[0].reason.contains("FIFO"), "{report:?}");
    s.put(b"k", b"v").unwrap();
    assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_directory_at_an_entry_path_is_removed_once_not_warned_forever() {
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    let p = key_path(&s, b"k");
    fs::create_dir(&p).unwrap();
    fs::write(p.join("inside"), b"x").unwrap();
    assert_eq!(s.get(b"k").unwrap(), None);
    assert!(!p.exists(), "moved out of the entry's place");
    assert_eq!(s.get(b"k").unwrap(), None);
    assert_eq!(s.stats().unwrap().corrupt, 1, "found once");
    s.put(b"k", b"v").unwrap();
    assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // A put over a directory plant replaces it too.
    let q = key_path(&s, b"q");
    fs::create_dir(&q).unwrap();
    s.put(b"q", b"w").unwrap();
    assert_eq!(s.get(b"q").unwrap().as_deref(), Some(&b"w"[..]));
}

#[test]
fn a_full_directory_at_an_entry_path_is_moved_aside_and_never_swept() {
    use kcache::store::ManualClock;
    use std::sync::Arc;
    let victim = tempfile::tempdir().unwrap();
    fs::write(victim.path().join("keep"), b"precious").unwrap();
    let t = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(std::time::SystemTime::now()));
    let opts = FileStoreOptions {
        clock: clock.clone(),
        ..FileStoreOptions::default()
    };
    let s = FileStore::open_with(t.path(), opts).unwrap();
    let p = key_path(&s, b"k");
    fs::create_dir_all(p.join("deeper")).unwrap();
    fs::write(p.join("deeper/file"), b"x").unwrap();
    std::os::unix::fs::symlink(victim.path(), p.join("link")).unwrap();
    assert_eq!(s.get(b"k").unwrap(), None);
    assert!(!p.exists());
    assert_eq!(s.sweep_stale_temps().unwrap(), 0, "not stale yet");
    clock.advance(Duration::from_secs(7200));
    // kcache did not write what it holds: it is not kcache's to delete.
    assert_eq!(s.sweep_stale_temps().unwrap(), 0);
    let moved: Vec<_> = fs::read_dir(s.tmp_dir()).unwrap().collect();
    assert_eq!(moved.len(), 1);
    let moved = moved[0].as_ref().unwrap().path();
    assert!(moved
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("stray-"));
    assert_eq!(fs::read(moved.join("deeper/file")).unwrap(), b"x");
    assert_eq!(fs::read(victim.path().join("keep")).unwrap(), b"precious");
    s.put(b"k", b"v").unwrap();
    assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn verify_reports_directories_sockets_and_devices_in_the_store() {
    let t = tempfile::tempdir().unwrap();
    let s = FileStore::open(t.path()).unwrap();
    s.put(b"good", b"v").unwrap();
    fs::create_dir(key_path(&s, b"dir")).unwrap();
    let _sock = bind_socket(&key_path(&s, b"sock"));
    let dev = mknod_null(&key_path(&s, b"dev"));
    let report = s.verify().unwrap();
    let reasons: Vec<&str> = report.corrupt.iter().map(|c| c.reason.as_str()).collect();
    assert!(
        reasons.iter().any(|r| r.contains("a directory")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("a socket")),
        "{reasons:?}"
    );
    assert_eq!(
        reasons.iter().any(|r| r.contains("a device")),
        dev,
        "{reasons:?}"
    );
    assert!(s.verify().unwrap().corrupt.is_empty(), "removed");
    assert_eq!(s.get(b"good").unwrap().as_deref(), Some(&b"v"[..]));
}

/// An entry file whose header promises `len` bytes in all, made sparse.
fn plant_sparse_entry(s: &FileStore, key: &[u8], len: u64) -> PathBuf {
    let p = key_path(s, key);
    let payload_len = len - 56 - key.len() as u64;
    let mut head = Vec::new();
    head.extend_from_slice(b"kcache\x01\n");
    head.extend_from_slice(&(key.len() as u32).to_le_bytes());
    head.extend_from_slice(&[0; 4]);
    head.extend_from_slice(&payload_len.to_le_bytes());
    head.extend_from_slice(&[0; 32]);
    head.extend_from_slice(key);
    fs::write(&p, &head).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len)
        .unwrap();
    p
}

/// This process's peak resident set, in bytes.
fn peak_rss() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn a_sparse_oversized_entry_is_rejected_before_it_is_read() {
    let t = tempfile::tempdir().unwrap();
    let opts = FileStoreOptions {
        max_bytes: 8 << 30,
        ..FileStoreOptions::default()
    };
    let s = FileStore::open_with(t.path(), opts).unwrap();
    let before = peak_rss();
    for (key, len) in [(&b"one-gib"[..], 1u64 << 30), (&b"four-gib"[..], 4 << 30)] {
        let p = plant_sparse_entry(&s, key, len);
        assert_eq!(s.get(key).unwrap(), None);
        assert!(!p.exists(), "removed");
        plant_sparse_entry(&s, key, len);
    }
    let report = s.verify().unwrap();
    assert_eq!(report.corrupt.len(), 2, "{report:?}");
    assert!(report.corrupt[0].reason.contains("not read"), "{report:?}");
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 256 << 20, "peak RSS grew by {grew} bytes");
}

#[test]
fn unusable_file_store_paths_are_errors_not_panics() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("file");
    fs::write(&file, b"x").unwrap();
    let v1_file = t.path().join("v1-is-a-file");
    fs::create_dir(&v1_file).unwrap();
    fs::write(v1_file.join("v1"), b"x").unwrap();
    let long = t.path().join("d".repeat(5000));
    for root in [
        file.clone(),
        file.join("below"),
        v1_file,
        long,
        PathBuf::from("/proc/kcache-uncreatable/store"),
    ] {
        assert!(FileStore::open(&root).is_err(), "{}", root.display());
    }
}

#[test]
fn a_file_store_deleted_mid_run_fails_calls_cleanly() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("store");
    let s = FileStore::open(&root).unwrap();
    s.put(b"a", b"1").unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(s.get(b"a").unwrap(), None);
    assert!(s.put(b"b", b"2").is_err());
    assert!(s.verify().unwrap().corrupt.is_empty());
    let _ = s.clear();
    let _ = s.prune(0);
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use kcache::store::SqliteStore;

    fn db_path(root: &Path) -> PathBuf {
        fs::create_dir_all(root.join("v1")).unwrap();
        root.join("v1/store.sqlite3")
    }

    fn refused(root: PathBuf, what: &str) {
        let r = within_deadline(what, move || SqliteStore::open(&root).map(drop));
        let e = r.expect_err(what);
        assert!(e.to_string().contains("not a regular file"), "{what}: {e}");
    }

    #[test]
    fn a_fifo_at_the_database_path_does_not_block() {
        for suffix in ["", "-wal", "-shm"] {
            let t = tempfile::tempdir().unwrap();
            let db = db_path(t.path());
            mkfifo(Path::new(&format!("{}{suffix}", db.display())));
            refused(
                t.path().to_path_buf(),
                &format!("a FIFO at store.sqlite3{suffix}"),
            );
        }
    }

    #[test]
    fn a_directory_socket_or_device_at_the_database_path_refuses_the_store() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(db_path(t.path())).unwrap();
        refused(t.path().to_path_buf(), "a directory");
        let t = tempfile::tempdir().unwrap();
        let _sock = bind_socket(&db_path(t.path()));
        refused(t.path().to_path_buf(), "a socket");
        let t = tempfile::tempdir().unwrap();
        if mknod_null(&db_path(t.path())) {
            refused(t.path().to_path_buf(), "a device");
        }
    }

    #[test]
    fn unusable_sqlite_store_paths_are_errors_not_panics() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("file");
        fs::write(&file, b"x").unwrap();
        for root in [
            file.clone(),
            file.join("below"),
            t.path().join("d".repeat(5000)),
            PathBuf::from("/proc/kcache-uncreatable/store"),
        ] {
            assert!(SqliteStore::open(&root).is_err(), "{}", root.display());
        }
    }

    #[test]
    fn a_sqlite_store_deleted_mid_run_goes_on() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("store");
        let s = SqliteStore::open(&root).unwrap();
        s.put(b"a", b"1").unwrap();
        fs::remove_dir_all(&root).unwrap();
        let _ = s.get(b"a");
        let _ = s.put(b"b", b"2");
        let _ = s.verify();
        let _ = s.clear();
    }
}
