//! The stores under real concurrency: spawned processes, not threads.
//!
//! Each test re-executes this test binary as child processes (the ignored
//! test `child_entry`, with `KCACHE_TEST_ROLE` choosing what the child does).
//! Parent and children hand off through pipes: a child says `KCACHE:<marker>`
//! on its stdout and waits for a line on its stdin, so every interleaving a
//! test claims is forced, never hoped for (no sleeps).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use common::{check_value, files_under, tagged_value, Call, Hooked};
use kcache::store::{FileStore, FileStoreOptions, FsIo, ManualClock, RealFs, Store};

const ROLE: &str = "KCACHE_TEST_ROLE";
const KIND: &str = "KCACHE_TEST_KIND";
const DIR: &str = "KCACHE_TEST_DIR";
const CAP: &str = "KCACHE_TEST_CAP";
const ARG: &str = "KCACHE_TEST_ARG";

const KEY: &[u8] = b"the-one-key";
const BIG: u64 = 1 << 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    #[cfg(feature = "sqlite")]
    Sqlite,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => "sqlite",
        }
    }

    fn parse(s: &str) -> Kind {
        match s {
            "file" => Kind::File,
            #[cfg(feature = "sqlite")]
            "sqlite" => Kind::Sqlite,
            _ => panic!("unknown kind {s}"),
        }
    }

    fn cost(self, key_len: usize, value_len: usize) -> u64 {
        match self {
            Kind::File => FileStore::entry_cost(key_len, value_len),
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => kcache::store::SqliteStore::entry_cost(key_len, value_len),
        }
    }
}

/// What a child may inject into its store.
#[derive(Default)]
struct Inject {
    io: Option<Arc<dyn FsIo>>,
    #[cfg(feature = "sqlite")]
    hook: Option<kcache::store::sqlite::SqliteHook>,
}

fn open(kind: Kind, dir: &Path, cap: u64, inject: Inject) -> Box<dyn Store> {
    match kind {
        Kind::File => {
            let opts = FileStoreOptions {
                max_bytes: cap,
                io: inject.io.unwrap_or_else(|| Arc::new(RealFs)),
                ..FileStoreOptions::default()
            };
            Box::new(FileStore::open_with(dir, opts).unwrap())
        }
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            use kcache::store::{SqliteOptions, SqliteStore};
            let opts = SqliteOptions {
                max_bytes: cap,
                hook: inject.hook,
                // Generous: a writer may wait on a paused transaction.
                busy_timeout: Duration::from_secs(60),
                ..SqliteOptions::default()
            };
            Box::new(SqliteStore::open_with(dir, opts).unwrap())
        }
    }
}

fn file_store(dir: &Path) -> FileStore {
    FileStore::open(dir).unwrap()
}

// ---------------------------------------------------------------- children

/// The child side: runs the role named in the environment.
#[test]
#[ignore = "a child role of the multi-process tests, which run it themselves"]
fn child_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let kind = Kind::parse(&std::env::var(KIND).unwrap());
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let cap: u64 = std::env::var(CAP).unwrap().parse().unwrap();
    let arg = std::env::var(ARG).unwrap_or_default();
    match role.as_str() {
        "write-same-key" => write_same_key(kind, &dir, arg.parse().unwrap()),
        "write-distinct" => write_distinct(kind, &dir, arg.parse().unwrap()),
        "read-loop" => read_loop(kind, &dir),
        "put-paused-in-eviction" => put_paused_in_eviction(kind, &dir, cap, &arg),
        "put" => {
            let s = open(kind, &dir, cap, Inject::default());
            say("READY", "");
            s.put(arg.as_bytes(), &tagged_value(99, 300)).unwrap();
            say("DONE", "");
        }
        "remove" => {
            let s = open(kind, &dir, cap, Inject::default());
            say("READY", "");
            let removed = s.remove(arg.as_bytes()).unwrap();
            say("DONE", &removed.to_string());
        }
        "write-then-hang" => write_then_hang(kind, &dir),
        "verify" => {
            let s = open(kind, &dir, cap, Inject::default());
            let r = s.verify().unwrap();
            let miss = s.get(arg.as_bytes()).unwrap().is_none();
            say("DONE", &format!("{} {} {miss}", r.checked, r.corrupt.len()));
        }
        other => panic!("unknown role {other}"),
    }
}

fn say(marker: &str, payload: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "KCACHE:{marker} {payload}").unwrap();
    out.flush().unwrap();
}

fn hear() -> String {
    let mut line = String::new();
    let n = std::io::stdin().read_line(&mut line).unwrap();
    assert!(n > 0, "the parent went away");
    line.trim().to_string()
}

fn same_key_len(seed: u32, round: usize) -> usize {
    // Lengths differ between writers and rounds, so a torn mix never passes
    // as a whole value.
    48 * 1024 + seed as usize * 4096 + round * 7
}

fn write_same_key(kind: Kind, dir: &Path, seed: u32) {
    let s = open(kind, dir, BIG, Inject::default());
    say("READY", "");
    assert_eq!(hear(), "go");
    for round in 0..25 {
        s.put(KEY, &tagged_value(seed, same_key_len(seed, round)))
            .unwrap();
    }
    say("DONE", "");
}

fn write_distinct(kind: Kind, dir: &Path, index: u32) {
    let s = open(kind, dir, BIG, Inject::default());
    say("READY", "");
    assert_eq!(hear(), "go");
    for j in 0..40u32 {
        let key = format!("child-{index}-key-{j}");
        s.put(
            key.as_bytes(),
            &tagged_value(index * 1000 + j, 1000 + j as usize),
        )
        .unwrap();
    }
    say("DONE", "");
}

fn read_loop(kind: Kind, dir: &Path) {
    let s = open(kind, dir, BIG, Inject::default());
    say("READY", "");
    assert_eq!(hear(), "go");
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        hear();
        stop2.store(true, Ordering::SeqCst);
    });
    let mut reads = 0u64;
    // At least a few reads, then until the writers are done.
    while reads < 20 || !stop.load(Ordering::SeqCst) {
        let v = s.get(KEY).unwrap().expect("an entry is always visible");
        assert!(check_value(&v).is_some(), "torn read of {} bytes", v.len());
        reads += 1;
    }
    drop(s);
    say("DONE", &reads.to_string());
}

/// Puts a new entry into a store at its cap; the eviction this triggers is
/// paused on the entry named `victim` (file store: just before moving it
/// out; SQLite: with the eviction written but not committed) until the
/// parent says go.
fn put_paused_in_eviction(kind: Kind, dir: &Path, cap: u64, victim: &str) {
    let mut inject = Inject::default();
    match kind {
        Kind::File => {
            let victim_path = file_store(dir).entry_path(victim.as_bytes());
            let paused = AtomicBool::new(false);
            inject.io = Some(Arc::new(Hooked::new(move |call| {
                if let Call::Rename(from, to) = call {
                    if *from == victim_path
                        && to.to_string_lossy().contains("/tmp/evict-")
                        && !paused.swap(true, Ordering::SeqCst)
                    {
                        say("PAUSED", "");
                        assert_eq!(hear(), "go");
                    }
                }
                None
            })));
        }
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            let paused = AtomicBool::new(false);
            inject.hook = Some(Arc::new(move |point| {
                if point == kcache::store::SqlitePoint::PutBeforeCommit
                    && !paused.swap(true, Ordering::SeqCst)
                {
                    say("PAUSED", "");
                    assert_eq!(hear(), "go");
                }
            }));
        }
    }
    let s = open(kind, dir, cap, inject);
    say("READY", "");
    assert_eq!(hear(), "go");
    s.put(b"new", &tagged_value(3, 300)).unwrap();
    say("DONE", "");
}

/// Writes `KEY` and stops for good between the temp write and the rename
/// (file store) or before the commit (SQLite), to be killed there.
fn write_then_hang(kind: Kind, dir: &Path) {
    let mut inject = Inject::default();
    match kind {
        Kind::File => {
            let target = file_store(dir).entry_path(KEY);
            inject.io = Some(Arc::new(Hooked::new(move |call| {
                if let Call::Rename(from, to) = call {
                    if *to == target {
                        say("HANGING", &from.display().to_string());
                        hear();
                        panic!("should have been killed");
                    }
                }
                None
            })));
        }
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            inject.hook = Some(Arc::new(|point| {
                if point == kcache::store::SqlitePoint::PutBeforeCommit {
                    say("HANGING", "");
                    hear();
                    panic!("should have been killed");
                }
            }));
        }
    }
    let s = open(kind, dir, BIG, inject);
    s.put(KEY, &tagged_value(1, 200_000)).unwrap();
}

// ----------------------------------------------------------------- parents

/// A running child.
struct Child {
    proc: std::process::Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    what: String,
}

fn spawn(role: &str, kind: Kind, dir: &Path, cap: u64, arg: &str) -> Child {
    let exe = std::env::current_exe().unwrap();
    let mut proc = Command::new(exe)
        .args([
            "--exact",
            "child_entry",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(ROLE, role)
        .env(KIND, kind.name())
        .env(DIR, dir)
        .env(CAP, cap.to_string())
        .env(ARG, arg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Child {
        stdin: proc.stdin.take(),
        stdout: BufReader::new(proc.stdout.take().unwrap()),
        proc,
        what: format!("{role}({arg}) on the {} store", kind.name()),
    }
}

impl Child {
    /// Waits for the child to say `marker`; what it said after it.
    fn expect(&mut self, marker: &str) -> String {
        let tag = format!("KCACHE:{marker} ");
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "{} exited before saying {marker}", self.what);
            if let Some(at) = line.find(&tag) {
                return line[at + tag.len()..].trim().to_string();
            }
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for a successful exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        let status = self.proc.wait().unwrap();
        assert!(status.success(), "{} failed: {status}\n{rest}", self.what);
    }

    /// SIGKILL.
    fn kill(mut self) {
        self.proc.kill().unwrap();
        self.proc.wait().unwrap();
    }
}

/// Aborts the test binary if a test is still running after two minutes: a
/// deadlock fails loudly instead of hanging CI.
struct Watchdog(Option<mpsc::Sender<()>>);

fn watchdog(name: &'static str) -> Watchdog {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(120)) {
            eprintln!("{name}: still running after 120 s; aborting");
            std::process::abort();
        }
    });
    Watchdog(Some(tx))
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Waits until every child is ready, then lets them all go at once.
fn start_together<'a>(kids: impl IntoIterator<Item = &'a mut Child>) {
    let mut kids: Vec<&mut Child> = kids.into_iter().collect();
    for k in kids.iter_mut() {
        k.expect("READY");
    }
    for k in kids.iter_mut() {
        k.send("go");
    }
}

fn root() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("cache");
    (t, dir)
}

fn assert_tmp_empty(kind: Kind, dir: &Path) {
    if kind == Kind::File {
        let left = files_under(&dir.join("v1/tmp"));
        assert!(left.is_empty(), "temp files left: {left:?}");
    }
}

mod scenarios {
    use super::*;

    pub fn concurrent_writers_of_one_key_leave_one_intact_entry(kind: Kind) {
        let _w = watchdog("concurrent writers");
        let (_t, dir) = root();
        drop(open(kind, &dir, BIG, Inject::default()));
        let mut kids: Vec<Child> = (1..=4)
            .map(|seed| spawn("write-same-key", kind, &dir, BIG, &seed.to_string()))
            .collect();
        start_together(&mut kids);
        kids.into_iter().for_each(Child::finish);
        let s = open(kind, &dir, BIG, Inject::default());
        let v = s.get(KEY).unwrap().expect("the entry exists");
        let seed = check_value(&v).expect("intact");
        assert!((1..=4).contains(&seed));
        assert_eq!(s.len().unwrap(), 1);
        assert!(s.verify().unwrap().corrupt.is_empty());
        assert_eq!(s.size_bytes().unwrap(), kind.cost(KEY.len(), v.len()));
        assert_tmp_empty(kind, &dir);
    }

    pub fn writers_of_distinct_keys_all_survive(kind: Kind) {
        let _w = watchdog("distinct writers");
        let (_t, dir) = root();
        drop(open(kind, &dir, BIG, Inject::default()));
        let mut kids: Vec<Child> = (0..4)
            .map(|i| spawn("write-distinct", kind, &dir, BIG, &i.to_string()))
            .collect();
        start_together(&mut kids);
        kids.into_iter().for_each(Child::finish);
        let s = open(kind, &dir, BIG, Inject::default());
        for i in 0..4u32 {
            for j in 0..40u32 {
                let key = format!("child-{i}-key-{j}");
                let v = s.get(key.as_bytes()).unwrap().expect(&key);
                assert_eq!(check_value(&v), Some(i * 1000 + j), "{key}");
            }
        }
        assert_eq!(s.len().unwrap(), 160);
        let st = s.stats().unwrap();
        let expected: u64 = (0..4u32)
            .flat_map(|i| (0..40u32).map(move |j| (i, j)))
            .map(|(i, j)| {
                let key = format!("child-{i}-key-{j}");
                kind.cost(key.len(), tagged_value(0, 1000 + j as usize).len())
            })
            .sum();
        assert_eq!(st.bytes, expected, "{st:?}");
        assert_tmp_empty(kind, &dir);
    }

    pub fn a_reader_never_sees_a_torn_entry(kind: Kind) {
        let _w = watchdog("torn reads");
        let (_t, dir) = root();
        let s = open(kind, &dir, BIG, Inject::default());
        s.put(KEY, &tagged_value(0, same_key_len(0, 0))).unwrap();
        let hits_before = s.stats().unwrap().hits;
        let mut writers: Vec<Child> = (1..=2)
            .map(|seed| spawn("write-same-key", kind, &dir, BIG, &seed.to_string()))
            .collect();
        let mut readers: Vec<Child> = (0..2)
            .map(|_| spawn("read-loop", kind, &dir, BIG, ""))
            .collect();
        start_together(writers.iter_mut().chain(readers.iter_mut()));
        for mut k in writers {
            k.expect("DONE");
            k.finish();
        }
        let mut reads = 0;
        for mut k in readers {
            k.send("stop");
            reads += k.expect("DONE").parse::<u64>().unwrap();
            k.finish();
        }
        assert!(reads >= 40);
        let st = s.stats().unwrap();
        assert_eq!(st.hits - hits_before, reads, "every child's hits counted");
        assert!(check_value(&s.get(KEY).unwrap().unwrap()).is_some());
        assert_tmp_empty(kind, &dir);
    }

    /// Fills a store with `old` then `mid` (older access first).
    fn old_and_mid(s: &dyn Store) {
        s.put(b"old", &tagged_value(1, 300)).unwrap();
        s.put(b"mid", &tagged_value(2, 300)).unwrap();
    }

    pub fn eviction_never_deletes_a_replaced_entry(kind: Kind) {
        let _w = watchdog("replaced during eviction");
        let (_t, dir) = root();
        let c = kind.cost(3, 312);
        let cap = 2 * c;
        let s = open(kind, &dir, BIG, Inject::default());
        old_and_mid(&*s);
        let mut evictor = spawn("put-paused-in-eviction", kind, &dir, cap, "old");
        evictor.expect("READY");
        evictor.send("go");
        match kind {
            Kind::File => {
                evictor.expect("PAUSED");
                // The rewrite lands after the evictor re-stated `old`.
                s.put(b"old", &tagged_value(9, 300)).unwrap();
                evictor.send("go");
                evictor.expect("DONE");
                evictor.finish();
            }
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => {
                evictor.expect("PAUSED");
                // The rewriter waits on the evictor's open transaction.
                let mut writer = spawn("put", kind, &dir, cap, "old");
                writer.expect("READY");
                evictor.send("go");
                evictor.expect("DONE");
                evictor.finish();
                writer.expect("DONE");
                writer.finish();
            }
        }
        let fresh = s.get(b"old").unwrap().expect("the fresh entry survives");
        let expected = if kind == Kind::File { 9 } else { 99 };
        assert_eq!(check_value(&fresh), Some(expected));
        assert_eq!(
            check_value(&s.get(b"new").unwrap().unwrap()),
            Some(3),
            "the evictor's own entry"
        );
        assert!(s.verify().unwrap().corrupt.is_empty());
        assert_tmp_empty(kind, &dir);
    }

    /// The over-eviction race from the seed's review, across processes.
    pub fn regression_over_eviction_race_fresh_entry_survives_a_concurrent_deleter(kind: Kind) {
        let _w = watchdog("concurrent deleter");
        let (_t, dir) = root();
        let c = kind.cost(3, 312);
        // Three entries exceed the cap; two fit under the low-water mark.
        let cap = 3 * c - 1;
        let s = open(kind, &dir, BIG, Inject::default());
        old_and_mid(&*s);
        let mut evictor = spawn("put-paused-in-eviction", kind, &dir, cap, "old");
        evictor.expect("READY");
        evictor.send("go");
        evictor.expect("PAUSED");
        match kind {
            Kind::File => {
                // This process deletes the candidate first.
                assert!(s.remove(b"old").unwrap());
                evictor.send("go");
            }
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => {
                let mut deleter = spawn("remove", kind, &dir, cap, "old");
                deleter.expect("READY");
                evictor.send("go");
                assert_eq!(
                    deleter.expect("DONE"),
                    "false",
                    "the evictor got there first"
                );
                deleter.finish();
            }
        }
        evictor.expect("DONE");
        evictor.finish();
        assert_eq!(s.get(b"old").unwrap(), None);
        let mid = s.get(b"mid").unwrap().expect("mid is not over-evicted");
        assert_eq!(check_value(&mid), Some(2));
        assert_eq!(check_value(&s.get(b"new").unwrap().unwrap()), Some(3));
        let st = s.stats().unwrap();
        assert_eq!((st.entries, st.bytes), (2, 2 * c), "{st:?}");
        assert_tmp_empty(kind, &dir);
    }

    pub fn a_writer_killed_mid_write_leaves_nothing_visible(kind: Kind) {
        let _w = watchdog("killed writer");
        let (_t, dir) = root();
        drop(open(kind, &dir, BIG, Inject::default()));
        let mut writer = spawn("write-then-hang", kind, &dir, BIG, "");
        let temp = writer.expect("HANGING");
        writer.kill();
        let s = open(kind, &dir, BIG, Inject::default());
        assert_eq!(s.get(KEY).unwrap(), None, "nothing visible");
        assert_eq!(s.len().unwrap(), 0);
        assert!(s.verify().unwrap().corrupt.is_empty());
        match kind {
            Kind::File => {
                let left = files_under(&dir.join("v1/tmp"));
                assert_eq!(left, [PathBuf::from(&temp)], "only the temp file");
                // A fresh temp file may be a live writer's: kept...
                drop(open(kind, &dir, BIG, Inject::default()));
                assert!(Path::new(&temp).exists());
                // ...until it is stale.
                let later = SystemTime::now() + Duration::from_secs(2 * 3600);
                let opts = FileStoreOptions {
                    clock: Arc::new(ManualClock::new(later)),
                    ..FileStoreOptions::default()
                };
                let sweeper = FileStore::open_with(&dir, opts).unwrap();
                assert!(Path::new(&temp).exists(), "opening sweeps nothing");
                sweeper.put(b"sweeper", b"x").unwrap();
                assert!(!Path::new(&temp).exists(), "swept by the first write");
                sweeper.remove(b"sweeper").unwrap();
            }
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => {
                let db = dir.join("v1/store.sqlite3");
                let c = rusqlite::Connection::open(&db).unwrap();
                let ok: String = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok");
            }
        }
        // The store is usable: no lock or slot was left held.
        s.put(KEY, b"after").unwrap();
        assert_eq!(s.get(KEY).unwrap().as_deref(), Some(&b"after"[..]));
    }

    pub fn corrupt_and_truncated_entries_are_found_by_another_process(kind: Kind) {
        let _w = watchdog("corruption");
        let (_t, dir) = root();
        let s = open(kind, &dir, BIG, Inject::default());
        for k in [&b"a"[..], b"b", b"c"] {
            s.put(k, &tagged_value(k[0] as u32, 500)).unwrap();
        }
        match kind {
            Kind::File => {
                let fs_store = file_store(&dir);
                let p = fs_store.entry_path(b"a");
                let mut bytes = std::fs::read(&p).unwrap();
                *bytes.last_mut().unwrap() ^= 1;
                std::fs::write(&p, &bytes).unwrap();
                let p = fs_store.entry_path(b"b");
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
            }
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => {
                let c = rusqlite::Connection::open(dir.join("v1/store.sqlite3")).unwrap();
                c.execute_batch(
                    "UPDATE entries SET value = zeroblob(512) WHERE key = x'61';
                     UPDATE entries SET value = substr(value, 1, 10) WHERE key = x'62';",
                )
                .unwrap();
            }
        }
        let mut verifier = spawn("verify", kind, &dir, BIG, "a");
        assert_eq!(verifier.expect("DONE"), "3 2 true");
        verifier.finish();
        assert_eq!(s.get(b"a").unwrap(), None);
        assert_eq!(s.get(b"b").unwrap(), None);
        assert_eq!(
            check_value(&s.get(b"c").unwrap().unwrap()),
            Some(b'c' as u32)
        );
        assert_eq!(s.stats().unwrap().corrupt, 2);
    }
}

macro_rules! for_kinds {
    ($($kind:ident: $variant:expr;)*) => {$(
        mod $kind {
            use super::*;
            for_kinds!(@tests $variant;
                concurrent_writers_of_one_key_leave_one_intact_entry,
                writers_of_distinct_keys_all_survive,
                a_reader_never_sees_a_torn_entry,
                eviction_never_deletes_a_replaced_entry,
                regression_over_eviction_race_fresh_entry_survives_a_concurrent_deleter,
                a_writer_killed_mid_write_leaves_nothing_visible,
                corrupt_and_truncated_entries_are_found_by_another_process,
            );
        }
    )*};
    (@tests $variant:expr; $($name:ident,)*) => {$(
        #[test]
        fn $name() {
            scenarios::$name($variant)
        }
    )*};
}

for_kinds! {
    file: Kind::File;
}

#[cfg(feature = "sqlite")]
for_kinds! {
    sqlite: Kind::Sqlite;
}
