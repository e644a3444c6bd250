//! Failures and races, injected deterministically in one process: a full
//! disk, a read-only root, concurrent deleters and rewriters, corrupt and
//! truncated entries, dead writers' temp files.

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{errno, files_under, Call, Hooked};
use kcache::store::{
    FileStore, FileStoreOptions, FsIo, ManualClock, Store, StoreError, StoreErrorKind,
};

fn t0() -> SystemTime {
    SystemTime::now() - Duration::from_secs(100_000)
}

struct Setup {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

impl Setup {
    fn new() -> Self {
        Setup {
            dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::ticking(t0(), Duration::from_secs(1))),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn open(&self, cap: u64) -> FileStore {
        self.open_io(cap, Arc::new(kcache::store::RealFs))
    }

    fn open_io(&self, cap: u64, io: Arc<dyn FsIo>) -> FileStore {
        let opts = FileStoreOptions {
            max_bytes: cap,
            clock: self.clock.clone(),
            io,
            ..FileStoreOptions::default()
        };
        FileStore::open_with(self.root(), opts).unwrap()
    }

    fn temp_files(&self) -> Vec<PathBuf> {
        files_under(&self.root().join("v1/tmp"))
    }
}

const BIG: u64 = 1 << 40;

#[test]
fn full_disk_put_fails_cleanly() {
    let s = Setup::new();
    s.open(BIG).put(b"k", b"old").unwrap();
    let store = s.open_io(
        BIG,
        Arc::new(Hooked::new(|c| {
            matches!(c, Call::Write).then(|| errno(libc::ENOSPC))
        })),
    );
    let e = store.put(b"k", b"new value").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::NoSpace, "{e}");
    assert!(matches!(e, StoreError::Io { op: "write", .. }), "{e:?}");
    assert!(s.temp_files().is_empty(), "no half-written temp file");
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
    let e = store.put(b"other", b"x").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::NoSpace);
    assert_eq!(store.get(b"other").unwrap(), None);
    assert_eq!(store.stats().unwrap().errors, 2);
}

#[test]
fn full_disk_at_sync_or_rename_fails_cleanly() {
    for fail_at in ["sync", "rename"] {
        let s = Setup::new();
        let store = s.open_io(
            BIG,
            Arc::new(Hooked::new(move |c| match (c, fail_at) {
                (Call::Sync, "sync") => Some(errno(libc::ENOSPC)),
                (Call::Rename(..), "rename") => Some(errno(libc::ENOSPC)),
                _ => None,
            })),
        );
        let e = store.put(b"k", b"v").unwrap_err();
        assert_eq!(e.kind(), StoreErrorKind::NoSpace, "{fail_at}: {e}");
        assert!(s.temp_files().is_empty(), "{fail_at}");
        assert_eq!(store.get(b"k").unwrap(), None, "{fail_at}");
    }
}

fn read_only(c: &Call<'_>) -> Option<std::io::Error> {
    c.mutates().then(|| errno(libc::EROFS))
}

#[test]
fn read_only_root_serves_hits_and_refuses_writes_cleanly() {
    let s = Setup::new();
    s.open(BIG).put(b"k", b"v").unwrap();
    let store = s.open_io(BIG, Arc::new(Hooked::new(read_only)));
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let e = store.put(b"k2", b"v2").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::ReadOnly, "{e}");
    let e = store.remove(b"k").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::ReadOnly, "{e}");
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(s.temp_files().is_empty());
}

#[test]
fn read_only_fresh_root_fails_to_open_with_a_typed_error() {
    let s = Setup::new();
    let opts = FileStoreOptions {
        io: Arc::new(Hooked::new(read_only)),
        ..FileStoreOptions::default()
    };
    let e = FileStore::open_with(s.root(), opts).unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::ReadOnly, "{e}");
}

#[test]
fn permission_denied_is_typed() {
    let s = Setup::new();
    let store = s.open_io(
        BIG,
        Arc::new(Hooked::new(|c| {
            matches!(c, Call::CreateNew(_)).then(|| errno(libc::EACCES))
        })),
    );
    let e = store.put(b"k", b"v").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::PermissionDenied, "{e}");
}

#[test]
fn real_read_only_directory_refuses_writes() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!(
            "skipped: root ignores directory permissions (the injected EROFS test covers this)"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new();
    s.open(BIG).put(b"k", b"v").unwrap();
    let tmp = s.root().join("v1/tmp");
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o500)).unwrap();
    let store = s.open(BIG);
    let e = store.put(b"k2", b"v").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::PermissionDenied, "{e}");
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700)).unwrap();
}

/// The over-eviction race from the seed's review: another process deletes
/// the eviction candidate between the scan and the unlink. The pass must
/// count it as gone, not go on to evict a fresh entry to make up for it.
#[test]
fn regression_over_eviction_race_concurrent_deleter_keeps_fresh_entries() {
    let s = Setup::new();
    let c = FileStore::entry_cost(3, 300);
    // Three entries exceed the cap; two fit under the low-water mark (90 %).
    let cap = 3 * c - 1;
    assert!(2 * c <= cap * 9 / 10);
    let plain = s.open(cap);
    plain.put(b"old", &[1; 300]).unwrap();
    plain.put(b"mid", &[2; 300]).unwrap();
    let old_path = plain.entry_path(b"old");
    let won = Arc::new(AtomicBool::new(false));
    let won2 = won.clone();
    let target = old_path.clone();
    let store = s.open_io(
        cap,
        Arc::new(Hooked::new(move |call| match call {
            Call::Rename(from, _) if *from == target && !won2.swap(true, Ordering::SeqCst) => {
                // The concurrent deleter wins, exactly once.
                fs::remove_file(&target).unwrap();
                Some(errno(libc::ENOENT))
            }
            _ => None,
        })),
    );
    store.put(b"new", &[3; 300]).unwrap();
    assert!(won.load(Ordering::SeqCst), "the race was exercised");
    assert_eq!(store.get(b"old").unwrap(), None);
    assert_eq!(
        store.get(b"mid").unwrap(),
        Some(vec![2; 300]),
        "not over-evicted"
    );
    assert_eq!(store.get(b"new").unwrap(), Some(vec![3; 300]));
    assert_eq!(store.stats().unwrap().evictions, 0, "the deleter did it");
}

/// The write succeeded; an eviction that then fails is logged and counted,
/// and the value stays readable.
#[test]
fn a_failed_eviction_does_not_fail_the_write() {
    let s = Setup::new();
    let c = FileStore::entry_cost(1, 100);
    let store = s.open_io(
        2 * c,
        Arc::new(Hooked::new(|call| match call {
            Call::Rename(_, to) if to.to_string_lossy().contains("/tmp/evict-") => {
                Some(errno(libc::EIO))
            }
            _ => None,
        })),
    );
    for k in [b"a", b"b", b"c"] {
        store.put(k, &[1; 100]).unwrap();
    }
    assert_eq!(store.get(b"c").unwrap(), Some(vec![1; 100]));
    let st = store.stats().unwrap();
    assert_eq!((st.entries, st.errors, st.evictions), (3, 1, 0), "{st:?}");
}

/// A writer renames a fresh entry into place after the evictor re-stated the
/// old one but before it moved it out: the fresh entry must survive.
#[test]
fn eviction_never_deletes_a_replaced_entry() {
    let s = Setup::new();
    let c = FileStore::entry_cost(3, 300);
    let cap = 2 * c;
    let plain = Arc::new(s.open(BIG));
    plain.put(b"old", &[1; 300]).unwrap();
    plain.put(b"mid", &[2; 300]).unwrap();
    let target = plain.entry_path(b"old");
    let writer = plain.clone();
    let fired = Arc::new(AtomicUsize::new(0));
    let fired2 = fired.clone();
    let store = s.open_io(
        cap,
        Arc::new(Hooked::new(move |call| {
            if let Call::Rename(from, to) = call {
                if *from == target
                    && to.to_string_lossy().contains("/tmp/evict-")
                    && fired2.fetch_add(1, Ordering::SeqCst) == 0
                {
                    writer.put(b"old", &[9; 300]).unwrap();
                }
            }
            None
        })),
    );
    store.put(b"new", &[3; 300]).unwrap();
    assert_eq!(fired.load(Ordering::SeqCst), 1, "the race was exercised");
    assert_eq!(
        store.get(b"old").unwrap(),
        Some(vec![9; 300]),
        "fresh entry kept"
    );
    assert_eq!(store.get(b"new").unwrap(), Some(vec![3; 300]));
    assert!(s.temp_files().is_empty(), "nothing left in tmp/");
}

/// Two rewrites race the evictor: the one in the evictor's window is moved
/// out, the newer one takes the name, and the newest value is what remains.
#[test]
fn eviction_keeps_the_newest_of_two_racing_rewrites() {
    let s = Setup::new();
    let c = FileStore::entry_cost(3, 300);
    let plain = Arc::new(s.open(BIG));
    plain.put(b"old", &[1; 300]).unwrap();
    plain.put(b"mid", &[2; 300]).unwrap();
    let target = plain.entry_path(b"old");
    let writer = plain.clone();
    let store = s.open_io(
        2 * c,
        Arc::new(Hooked::new(move |call| {
            match call {
                Call::Rename(from, to)
                    if *from == target && to.to_string_lossy().contains("/tmp/evict-") =>
                {
                    writer.put(b"old", &[8; 300]).unwrap();
                }
                Call::HardLink(_, to) if *to == target => {
                    writer.put(b"old", &[9; 300]).unwrap();
                }
                _ => {}
            }
            None
        })),
    );
    store.put(b"new", &[3; 300]).unwrap();
    assert_eq!(store.get(b"old").unwrap(), Some(vec![9; 300]));
    assert!(s.temp_files().is_empty());
}

/// `clear` must not delete an entry written while it runs.
#[test]
fn clear_keeps_an_entry_written_during_it() {
    let s = Setup::new();
    let plain = Arc::new(s.open(BIG));
    plain.put(b"a", b"1").unwrap();
    plain.put(b"b", b"2").unwrap();
    let target = plain.entry_path(b"a");
    let writer = plain.clone();
    let once = AtomicBool::new(false);
    let store = s.open_io(
        BIG,
        Arc::new(Hooked::new(move |call| {
            if let Call::Rename(from, _) = call {
                if *from == target && !once.swap(true, Ordering::SeqCst) {
                    writer.put(b"a", b"fresh").unwrap();
                }
            }
            None
        })),
    );
    store.clear().unwrap();
    assert_eq!(store.get(b"a").unwrap().as_deref(), Some(&b"fresh"[..]));
    assert_eq!(store.get(b"b").unwrap(), None);
    assert_eq!(store.len().unwrap(), 1);
}

/// A hit stamps the file it read; a fresh file renamed over it in between
/// keeps its own times.
#[test]
fn a_hit_never_restamps_a_replaced_file() {
    let s = Setup::new();
    let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let open_at = |secs, io: Arc<dyn FsIo>| {
        FileStore::open_with(
            s.root(),
            FileStoreOptions {
                clock: Arc::new(ManualClock::new(at(secs))),
                io,
                ..FileStoreOptions::default()
            },
        )
        .unwrap()
    };
    let writer = Arc::new(open_at(1_000_000_000, Arc::new(kcache::store::RealFs)));
    writer.put(b"k", b"old").unwrap();
    let path = writer.entry_path(b"k");
    let w = writer.clone();
    let once = AtomicBool::new(false);
    let reader = open_at(
        2_000_000_000,
        Arc::new(Hooked::new(move |call| {
            if matches!(call, Call::SetAtime) && !once.swap(true, Ordering::SeqCst) {
                w.put(b"k", b"fresh").unwrap();
            }
            None
        })),
    );
    assert_eq!(reader.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
    let m = fs::metadata(&path).unwrap();
    assert_eq!(
        m.atime(),
        1_000_000_000,
        "the fresh file keeps the writer's stamp"
    );
    // The next hit stamps the fresh file, through its own descriptor.
    assert_eq!(reader.get(b"k").unwrap().as_deref(), Some(&b"fresh"[..]));
    let m2 = fs::metadata(&path).unwrap();
    assert_eq!(m2.atime(), 2_000_000_000);
    assert_eq!(
        (m2.mtime(), m2.mtime_nsec()),
        (m.mtime(), m.mtime_nsec()),
        "mtime untouched"
    );
}

#[test]
fn stale_temp_files_are_swept_by_the_first_write_and_on_eviction() {
    let s = Setup::new();
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let open = |cap| {
        FileStore::open_with(
            s.root(),
            FileStoreOptions {
                max_bytes: cap,
                clock: clock.clone(),
                ..FileStoreOptions::default()
            },
        )
        .unwrap()
    };
    let store = open(BIG);
    let tmp = s.root().join("v1/tmp");
    let dead = tmp.join("put-1-1-dead");
    fs::write(&dead, b"half").unwrap();
    open(BIG).put(b"w", b"v").unwrap();
    assert!(dead.exists(), "a fresh temp file may be a live writer's");
    clock.advance(Duration::from_secs(3601));
    // A store only read leaves temp files be (a warm hit lists no
    // directory); its first write sweeps them, once.
    let reader = open(BIG);
    assert_eq!(reader.get(b"w").unwrap().as_deref(), Some(&b"v"[..]));
    drop(reader);
    assert!(dead.exists(), "opening and reading sweep nothing");
    let writer = open(BIG);
    writer.put(b"x", b"v").unwrap();
    assert!(
        !writer.tmp_dir().join("put-1-1-dead").exists(),
        "swept by the first write once stale"
    );
    fs::write(&dead, b"half").unwrap();
    clock.advance(Duration::from_secs(3601));
    writer.put(b"y", b"v").unwrap();
    assert!(dead.exists(), "a store sweeps before its first write only");
    drop(writer);
    open(BIG).clear().unwrap();
    assert!(!dead.exists(), "swept by clear");

    // On eviction: a store that is already open and has written (its
    // first write's sweep is behind it).
    let c = FileStore::entry_cost(1, 100);
    let store2 = open(2 * c);
    drop(store);
    store2.put(b"a", &[0; 100]).unwrap();
    fs::write(&dead, b"half").unwrap();
    clock.advance(Duration::from_secs(3601));
    store2.put(b"b", &[0; 100]).unwrap();
    assert!(dead.exists(), "no eviction yet, no sweep");
    store2.put(b"c", &[0; 100]).unwrap();
    assert!(!dead.exists(), "swept before eviction");
}

/// Review 2026-12-02, store F5: the sweep removed everything old in
/// `v1/tmp/`, directories and files kcache never wrote included.
#[test]
fn the_temp_sweep_removes_only_kcache_temp_files_never_directories_or_symlinks() {
    let s = Setup::new();
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let store = FileStore::open_with(
        s.root(),
        FileStoreOptions {
            clock: clock.clone(),
            ..FileStoreOptions::default()
        },
    )
    .unwrap();
    let tmp = s.root().join("v1/tmp");
    let outside = s.dir.path().join("outside");
    fs::write(&outside, b"precious").unwrap();
    let ours = ["put-1-1-dead", "evict-12-3-0badf00d"];
    for n in ours {
        fs::write(tmp.join(n), b"half").unwrap();
    }
    fs::write(tmp.join("notes.txt"), b"mine").unwrap();
    fs::write(tmp.join("put-1-x-dead"), b"mine").unwrap();
    fs::create_dir_all(tmp.join("build")).unwrap();
    fs::write(tmp.join("build/a.o"), b"mine").unwrap();
    fs::create_dir(tmp.join("put-9-9-beef")).unwrap();
    std::os::unix::fs::symlink(&outside, tmp.join("evict-7-7-aaaa")).unwrap();
    clock.advance(Duration::from_secs(7200));
    assert_eq!(store.sweep_stale_temps().unwrap(), ours.len());
    let mut left: Vec<_> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "build",
            "evict-7-7-aaaa",
            "notes.txt",
            "put-1-x-dead",
            "put-9-9-beef"
        ]
    );
    assert_eq!(fs::read(tmp.join("build/a.o")).unwrap(), b"mine");
    assert_eq!(fs::read(&outside).unwrap(), b"precious");
}

#[test]
fn deleted_tmp_and_shard_directories_are_recreated() {
    let s = Setup::new();
    let store = s.open(BIG);
    store.put(b"k", b"v").unwrap();
    fs::remove_dir_all(s.root().join("v1/tmp")).unwrap();
    fs::remove_dir_all(store.entry_path(b"k").parent().unwrap()).unwrap();
    store.put(b"k", b"v2").unwrap();
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v2"[..]));
    assert!(s.root().join("v1/tmp").is_dir());
}

#[test]
fn files_and_directories_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new();
    let store = s.open(BIG);
    store.put(b"k", b"v").unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.root()), 0o700);
    for d in ["v1", "v1/entries", "v1/tmp"] {
        assert_eq!(mode(&s.root().join(d)), 0o700, "{d}");
    }
    assert_eq!(mode(store.entry_path(b"k").parent().unwrap()), 0o700);
    assert_eq!(mode(&store.entry_path(b"k")), 0o600);
    assert_eq!(mode(&s.root().join("v1/state")), 0o600);
}

/// Damages an entry file in place.
fn damage(path: &Path, how: &str) {
    let mut bytes = fs::read(path).unwrap();
    match how {
        "flip payload byte" => *bytes.last_mut().unwrap() ^= 0x40,
        "flip key byte" => bytes[56] ^= 1,
        "flip magic" => bytes[0] ^= 1,
        "truncate" => bytes.truncate(bytes.len() - 10),
        "truncate header" => bytes.truncate(20),
        "empty" => bytes.clear(),
        "append" => bytes.extend_from_slice(b"junk"),
        "grow length field" => bytes[16] = bytes[16].wrapping_add(1),
        _ => unreachable!(),
    }
    // Rewritten in place, as a disk error or a careless tool would.
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    f.write_all(&bytes).unwrap();
}

const DAMAGES: [&str; 8] = [
    "flip payload byte",
    "flip key byte",
    "flip magic",
    "truncate",
    "truncate header",
    "empty",
    "append",
    "grow length field",
];

#[test]
fn corrupt_and_truncated_entries_are_misses_and_removed_on_read() {
    for how in DAMAGES {
        let s = Setup::new();
        let store = s.open(BIG);
        store.put(b"key", &[7; 1000]).unwrap();
        store.put(b"other", &[8; 10]).unwrap();
        let path = store.entry_path(b"key");
        damage(&path, how);
        assert_eq!(store.get(b"key").unwrap(), None, "{how}");
        assert!(!path.exists(), "{how}: removed");
        let st = store.stats().unwrap();
        assert_eq!((st.corrupt, st.misses, st.hits), (1, 1, 0), "{how}: {st:?}");
        assert_eq!(st.entries, 1);
        assert_eq!(store.get(b"other").unwrap(), Some(vec![8; 10]), "{how}");
        // The slot is usable again.
        store.put(b"key", b"again").unwrap();
        assert_eq!(store.get(b"key").unwrap().as_deref(), Some(&b"again"[..]));
    }
}

#[test]
fn verify_reports_and_removes_corrupt_entries() {
    let s = Setup::new();
    let store = s.open(BIG);
    for i in 0..DAMAGES.len() as u8 + 3 {
        store.put(&[i], &[i; 100]).unwrap();
    }
    for (i, how) in DAMAGES.iter().enumerate() {
        damage(&store.entry_path(&[i as u8]), how);
    }
    // A stray file that is no entry at all.
    let stray_dir = s.root().join("v1/entries/zz");
    fs::create_dir(&stray_dir).unwrap();
    fs::write(stray_dir.join("stray"), b"not an entry").unwrap();
    let r = store.verify().unwrap();
    assert_eq!(r.checked as usize, DAMAGES.len() + 3 + 1);
    assert_eq!(r.corrupt.len(), DAMAGES.len() + 1, "{r:#?}");
    for c in &r.corrupt {
        assert!(!Path::new(&c.location).exists(), "{} removed", c.location);
        assert!(!c.reason.is_empty());
    }
    let flipped = r
        .corrupt
        .iter()
        .find(|c| c.reason.contains("checksum"))
        .expect("a checksum mismatch is reported");
    assert_eq!(flipped.key.as_deref(), Some(&[0u8][..]), "with its key");
    assert_eq!(store.len().unwrap(), 3);
    assert_eq!(store.stats().unwrap().corrupt as usize, DAMAGES.len() + 1);
    let again = store.verify().unwrap();
    assert_eq!((again.checked, again.corrupt.len()), (3, 0));
}

/// An entry file holding another key (as a hash collision would) is never
/// served for this key.
#[test]
fn an_entry_for_another_key_is_never_served() {
    let s = Setup::new();
    let store = s.open(BIG);
    store.put(b"a", b"secret of a").unwrap();
    let b_path = store.entry_path(b"b");
    fs::create_dir_all(b_path.parent().unwrap()).unwrap();
    fs::copy(store.entry_path(b"a"), &b_path).unwrap();
    assert_eq!(store.get(b"b").unwrap(), None);
    assert_eq!(
        store.get(b"a").unwrap().as_deref(),
        Some(&b"secret of a"[..])
    );
}

#[test]
fn a_damaged_state_file_is_rebuilt_by_a_scan() {
    let s = Setup::new();
    let c = FileStore::entry_cost(1, 100);
    let store = s.open(3 * c);
    for k in [b"a", b"b"] {
        store.put(k, &[0; 100]).unwrap();
    }
    drop(store);
    fs::write(s.root().join("v1/state"), b"garbage").unwrap();
    let store = s.open(3 * c);
    store.put(b"c", &[0; 100]).unwrap();
    store.put(b"d", &[0; 100]).unwrap();
    assert!(store.size_bytes().unwrap() <= 3 * c);
    assert_eq!(store.get(b"a").unwrap(), None, "the oldest was evicted");
}

#[test]
fn the_shared_total_is_shared_between_stores() {
    // Two store objects stand in for two processes: each sees the other's
    // writes through the shared running total, without scanning.
    let s = Setup::new();
    let c = FileStore::entry_cost(1, 100);
    let a = s.open(4 * c);
    let b = s.open(4 * c);
    a.put(b"1", &[0; 100]).unwrap();
    b.put(b"2", &[0; 100]).unwrap();
    a.put(b"3", &[0; 100]).unwrap();
    b.put(b"4", &[0; 100]).unwrap();
    assert_eq!(a.size_bytes().unwrap(), 4 * c);
    b.put(b"5", &[0; 100]).unwrap();
    assert!(a.size_bytes().unwrap() <= 4 * c, "b saw a's bytes");
    assert_eq!(a.get(b"1").unwrap(), None);
}

#[test]
fn counters_are_shared_across_store_objects() {
    let s = Setup::new();
    let a = s.open(BIG);
    a.put(b"k", b"v").unwrap();
    a.get(b"k").unwrap();
    a.get(b"x").unwrap();
    drop(a);
    let b = s.open(BIG);
    b.get(b"k").unwrap();
    let st = b.stats().unwrap();
    assert_eq!((st.hits, st.misses), (2, 1), "{st:?}");
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use kcache::store::{SqliteOptions, SqliteStore};
    use rusqlite::Connection;

    fn open(dir: &Path, pragmas: &[(&str, &str)]) -> SqliteStore {
        let opts = SqliteOptions {
            pragmas: pragmas
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            ..SqliteOptions::default()
        };
        SqliteStore::open_with(dir, opts).unwrap()
    }

    fn raw(store: &SqliteStore) -> Connection {
        Connection::open(store.path()).unwrap()
    }

    #[test]
    fn corrupt_and_truncated_entries_are_detected_on_read() {
        let t = tempfile::tempdir().unwrap();
        let store = open(t.path(), &[]);
        store.put(b"flip", &[1; 500]).unwrap();
        store.put(b"trunc", &[2; 500]).unwrap();
        store.put(b"ok", &[3; 500]).unwrap();
        let c = raw(&store);
        c.execute(
            "UPDATE entries SET value = zeroblob(500) WHERE key = ?1",
            [&b"flip"[..]],
        )
        .unwrap();
        c.execute(
            "UPDATE entries SET value = substr(value, 1, 100) WHERE key = ?1",
            [&b"trunc"[..]],
        )
        .unwrap();
        assert_eq!(store.get(b"flip").unwrap(), None);
        assert_eq!(store.get(b"trunc").unwrap(), None);
        assert_eq!(store.get(b"ok").unwrap(), Some(vec![3; 500]));
        let st = store.stats().unwrap();
        assert_eq!((st.corrupt, st.entries), (2, 1), "{st:?}");
        assert_eq!(st.bytes, SqliteStore::entry_cost(2, 500));
    }

    #[test]
    fn verify_reports_and_removes_corrupt_entries() {
        let t = tempfile::tempdir().unwrap();
        let store = open(t.path(), &[]);
        for i in 0..5u8 {
            store.put(&[i], &[i; 100]).unwrap();
        }
        let c = raw(&store);
        c.execute(
            "UPDATE entries SET value = zeroblob(100) WHERE key = x'01'",
            [],
        )
        .unwrap();
        c.execute("UPDATE entries SET value = x'00' WHERE key = x'03'", [])
            .unwrap();
        let r = store.verify().unwrap();
        assert_eq!(r.checked, 5);
        let mut keys: Vec<Vec<u8>> = r.corrupt.iter().map(|c| c.key.clone().unwrap()).collect();
        keys.sort();
        assert_eq!(keys, [vec![1], vec![3]]);
        assert_eq!(store.len().unwrap(), 3);
        assert_eq!(store.verify().unwrap().corrupt.len(), 0);
    }

    #[test]
    fn full_database_fails_cleanly() {
        let t = tempfile::tempdir().unwrap();
        // Built once to learn its size in pages, then capped just above it.
        let pages: i64 = {
            let s = open(t.path(), &[]);
            s.put(b"small", b"kept").unwrap();
            raw(&s)
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .unwrap()
        };
        let store = open(t.path(), &[("max_page_count", &(pages + 2).to_string())]);
        let e = store.put(b"big", &vec![5; 200_000]).unwrap_err();
        assert_eq!(e.kind(), StoreErrorKind::NoSpace, "{e}");
        assert_eq!(store.get(b"big").unwrap(), None, "nothing half-written");
        assert_eq!(store.get(b"small").unwrap().as_deref(), Some(&b"kept"[..]));
        assert!(store.verify().unwrap().corrupt.is_empty());
    }

    #[test]
    fn read_only_database_serves_hits_and_refuses_writes() {
        let t = tempfile::tempdir().unwrap();
        open(t.path(), &[]).put(b"k", b"v").unwrap();
        let store = open(t.path(), &[("query_only", "1")]);
        for _ in 0..100 {
            // Enough hits to try writing their access times back.
            assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        }
        let e = store.put(b"k2", b"v").unwrap_err();
        assert_eq!(e.kind(), StoreErrorKind::ReadOnly, "{e}");
        assert_eq!(store.get(b"k2").unwrap(), None);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let path = open(t.path(), &[]).path().to_path_buf();
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99")
            .unwrap();
        let e = SqliteStore::open(t.path()).unwrap_err();
        assert!(
            matches!(e, StoreError::Incompatible { found: 99, .. }),
            "{e}"
        );
    }

    #[test]
    fn database_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let store = open(t.path(), &[]);
        store.put(b"k", b"v").unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let p = format!("{}{suffix}", store.path().display());
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{p}");
        }
    }
}

/// Review 2026-12-02, store F4: a process stopped while holding `v1/state`'s
/// lock hung every other process on the store, a plain hit included.
#[test]
fn a_held_state_lock_delays_a_store_by_its_bound_and_nothing_else() {
    use std::os::fd::AsRawFd;
    let s = Setup::new();
    s.open(BIG).put(b"old", b"v").unwrap();
    // flock is per open file description: this one stands for a stopped
    // holder in another process.
    let holder = fs::File::open(s.root().join("v1/state")).unwrap();
    // SAFETY: flock on an open descriptor.
    assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
    let opts = FileStoreOptions {
        max_bytes: BIG,
        state_lock_wait: Duration::from_millis(20),
        ..FileStoreOptions::default()
    };
    let root = s.root();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let store = FileStore::open_with(&root, opts).unwrap();
        let hit = store.get(b"old").unwrap();
        let put = store.put(b"new", b"w");
        let got = store.get(b"new").unwrap();
        let stats = store.stats();
        drop(store);
        tx.send((hit, put, got, stats)).unwrap();
    });
    let (hit, put, got, stats) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the store waited on a held state lock without a bound");
    // What needs no lock works: hits, writes and reads of what was written.
    assert_eq!(hit.as_deref(), Some(&b"v"[..]));
    put.unwrap();
    assert_eq!(got.as_deref(), Some(&b"w"[..]));
    // What does (the shared counters) is an error, not a wait.
    assert_eq!(stats.unwrap_err().kind(), StoreErrorKind::Busy);
    drop(holder);
    let after = s.open(BIG).stats().unwrap();
    assert_eq!(after.entries, 2);
}

/// Review 2026-12-02, store F9.1: a process with a smaller cap removed
/// other processes' sound entries and counted them corrupt.
#[test]
fn an_entry_past_a_smaller_cap_is_a_miss_not_corrupt() {
    let s = Setup::new();
    s.open(BIG).put(b"k", &[7; 100]).unwrap();
    let small = s.open(50);
    assert_eq!(small.get(b"k").unwrap(), None);
    assert!(small.verify().unwrap().corrupt.is_empty());
    assert_eq!(small.stats().unwrap().corrupt, 0);
    drop(small);
    assert_eq!(
        s.open(BIG).get(b"k").unwrap().as_deref(),
        Some(&[7; 100][..])
    );
}
