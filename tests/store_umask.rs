//! Under `umask 000`, every path the stores create is private: directories
//! 0700, files 0600, the SQLite log and shared-memory files included (checked
//! while the database is open, when they exist). One test in this binary:
//! the umask is the process's.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use kcache::store::{FileStore, Store};

fn check_tree(root: &Path) -> usize {
    let mut seen = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = fs::symlink_metadata(&p).unwrap();
        let mode = m.mode() & 0o7777;
        if m.is_dir() {
            assert_eq!(mode, 0o700, "{}", p.display());
            stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        seen += 1;
    }
    seen
}

#[test]
fn under_umask_000_every_store_path_is_private_while_open() {
    // SAFETY: umask has no preconditions; this binary runs this test alone.
    unsafe { libc::umask(0) };
    let t = tempfile::tempdir().unwrap();
    // Made under the umask too (0777): a directory any user could swap the
    // store out of is refused, so the test's own is made private.
    fs::set_permissions(
        t.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let root = t.path().join("a/b/file-store");
    let s = FileStore::open(&root).unwrap();
    for i in 0..20u8 {
        s.put(&[i], &[i; 100]).unwrap();
    }
    s.get(&[1]).unwrap();
    s.remove(&[2]).unwrap();
    s.flush().unwrap();
    assert!(check_tree(&root) >= 10);
    assert!(check_tree(&t.path().join("a")) > 0, "parents created too");
    #[cfg(feature = "sqlite")]
    {
        let root = t.path().join("sqlite-store");
        let s = kcache::store::SqliteStore::open(&root).unwrap();
        for i in 0..20u8 {
            s.put(&[i], &[i; 100]).unwrap();
        }
        let wal = format!("{}-wal", s.path().display());
        let shm = format!("{}-shm", s.path().display());
        assert!(Path::new(&wal).exists() && Path::new(&shm).exists());
        assert!(check_tree(&root) >= 5);
    }
}
