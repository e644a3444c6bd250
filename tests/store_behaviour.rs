//! The behaviour every store shares, run against the memory, file and SQLite
//! stores (and a tiered composition), plus property tests of the invariants
//! the store docs claim.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kcache::store::{FileStore, FileStoreOptions, ManualClock, MemoryStore, Store, Tiered};
use proptest::prelude::*;

/// Opens one kind of store, again and again over the same storage.
trait Fixture {
    /// A store with this byte cap over the fixture's storage.
    fn open(&self, cap: u64) -> Arc<dyn Store>;
    /// Whether entries outlive the store object.
    fn persistent(&self) -> bool;
    /// What an entry costs against the cap.
    fn cost(&self, key_len: usize, value_len: usize) -> u64;
    /// Whether every hit reorders the LRU that eviction follows.
    fn exact_lru(&self) -> bool {
        true
    }
    /// Whether hit and miss counts outlive the store object.
    fn counters_persist(&self) -> bool {
        self.persistent()
    }
    /// How many stores `verify` checks.
    fn tiers(&self) -> u64 {
        1
    }
    /// Whether the cap bounds the total (else only each entry: the Redis
    /// tier leaves eviction to the server).
    fn capped(&self) -> bool {
        true
    }
}

fn clock() -> Arc<ManualClock> {
    // Every reading one second later: distinct, ordered access times.
    Arc::new(ManualClock::ticking(
        SystemTime::now() - Duration::from_secs(100_000),
        Duration::from_secs(1),
    ))
}

struct MemoryFx;

impl Fixture for MemoryFx {
    fn open(&self, cap: u64) -> Arc<dyn Store> {
        Arc::new(MemoryStore::with_clock(cap, clock()))
    }
    fn persistent(&self) -> bool {
        false
    }
    fn cost(&self, k: usize, v: usize) -> u64 {
        MemoryStore::entry_cost(k, v)
    }
}

struct FileFx {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

impl FileFx {
    fn new() -> Self {
        FileFx {
            dir: tempfile::tempdir().unwrap(),
            clock: clock(),
        }
    }
}

impl Fixture for FileFx {
    fn open(&self, cap: u64) -> Arc<dyn Store> {
        let opts = FileStoreOptions {
            max_bytes: cap,
            clock: self.clock.clone(),
            ..FileStoreOptions::default()
        };
        Arc::new(FileStore::open_with(self.dir.path().join("cache"), opts).unwrap())
    }
    fn persistent(&self) -> bool {
        true
    }
    fn cost(&self, k: usize, v: usize) -> u64 {
        FileStore::entry_cost(k, v)
    }
}

#[cfg(feature = "sqlite")]
struct SqliteFx {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

#[cfg(feature = "sqlite")]
impl SqliteFx {
    fn new() -> Self {
        SqliteFx {
            dir: tempfile::tempdir().unwrap(),
            clock: clock(),
        }
    }
}

#[cfg(feature = "sqlite")]
impl Fixture for SqliteFx {
    fn open(&self, cap: u64) -> Arc<dyn Store> {
        use kcache::store::{SqliteOptions, SqliteStore};
        let opts = SqliteOptions {
            max_bytes: cap,
            clock: self.clock.clone(),
            ..SqliteOptions::default()
        };
        Arc::new(SqliteStore::open_with(self.dir.path().join("cache"), opts).unwrap())
    }
    fn persistent(&self) -> bool {
        true
    }
    fn cost(&self, k: usize, v: usize) -> u64 {
        SqliteStore::entry_cost(k, v)
    }
}

#[cfg(feature = "sqlite")]
use kcache::store::SqliteStore;

/// Memory in front of a file store: behaves as one store.
struct TieredFx(FileFx);

impl Fixture for TieredFx {
    fn open(&self, cap: u64) -> Arc<dyn Store> {
        Arc::new(Tiered::new(vec![
            Arc::new(MemoryStore::new(cap)),
            self.0.open(cap),
        ]))
    }
    fn persistent(&self) -> bool {
        true
    }
    fn cost(&self, k: usize, v: usize) -> u64 {
        // The file tier's cost is the larger: it decides what survives.
        self.0.cost(k, v)
    }
    fn exact_lru(&self) -> bool {
        // A hit in the memory tier is not seen by the file tier's LRU.
        false
    }
    fn counters_persist(&self) -> bool {
        false
    }
    fn tiers(&self) -> u64 {
        2
    }
}

#[path = "store_redis_support/mod.rs"]
mod redis_support;

/// The Redis tier on a private server; the cap is its largest value.
struct RedisFx(redis_support::RedisServer);

impl RedisFx {
    fn new() -> Option<Self> {
        redis_support::RedisServer::start().map(RedisFx)
    }
}

impl Fixture for RedisFx {
    fn open(&self, cap: u64) -> Arc<dyn Store> {
        let mut o = kcache::store::RedisOptions::new(self.0.url());
        // Generous: a loaded test machine must not trip the breaker.
        o.op_timeout = Duration::from_secs(5);
        o.connect_timeout = Duration::from_secs(5);
        o.max_value = cap;
        Arc::new(kcache::store::RedisStore::open(o).unwrap())
    }
    fn persistent(&self) -> bool {
        true
    }
    fn cost(&self, k: usize, v: usize) -> u64 {
        (88 + k + v) as u64
    }
    fn exact_lru(&self) -> bool {
        false
    }
    fn capped(&self) -> bool {
        false
    }
}

/// The suite over a Redis fixture, skipped (with a reason) without
/// `redis-server`.
macro_rules! redis_suite {
    ($($check:ident),* $(,)?) => {
        mod redis {
            use super::*;
            $(#[test] fn $check() {
                let Some(fx) = RedisFx::new() else { return };
                checks::$check(&fx)
            })*
        }
    };
}

redis_suite!(
    round_trip,
    overwrite,
    delete,
    len_and_clear,
    reopen,
    oversized,
    stats_counters,
    verify_healthy,
    threads,
);

const BIG: u64 = 1 << 40;

fn value(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}

mod checks {
    use super::*;

    pub fn round_trip(fx: &dyn Fixture) {
        let s = fx.open(BIG);
        assert_eq!(s.get(b"missing").unwrap(), None);
        s.put(b"k", b"v").unwrap();
        assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        // Keys are arbitrary bytes: empty, NUL, slashes, long.
        let odd_keys: [&[u8]; 5] = [b"", b"\0", b"../../etc/passwd", b"a/b", &[0xff; 300]];
        for (i, k) in odd_keys.iter().enumerate() {
            s.put(k, &value(i as u8, 10 + i)).unwrap();
        }
        for (i, k) in odd_keys.iter().enumerate() {
            assert_eq!(s.get(k).unwrap(), Some(value(i as u8, 10 + i)), "{k:?}");
        }
        s.put(b"empty", b"").unwrap();
        assert_eq!(s.get(b"empty").unwrap(), Some(Vec::new()));
        let big = value(7, 1 << 20);
        s.put(b"big", &big).unwrap();
        assert_eq!(s.get(b"big").unwrap(), Some(big));
    }

    pub fn overwrite(fx: &dyn Fixture) {
        let s = fx.open(BIG);
        s.put(b"k", &value(1, 100)).unwrap();
        s.put(b"k", &value(2, 7)).unwrap();
        assert_eq!(s.get(b"k").unwrap(), Some(value(2, 7)));
        assert_eq!(s.len().unwrap(), 1);
        assert_eq!(s.size_bytes().unwrap(), fx.cost(1, 7));
    }

    pub fn delete(fx: &dyn Fixture) {
        let s = fx.open(BIG);
        s.put(b"k", b"v").unwrap();
        s.put(b"other", b"v").unwrap();
        assert!(s.remove(b"k").unwrap());
        assert_eq!(s.get(b"k").unwrap(), None);
        assert!(!s.remove(b"k").unwrap());
        assert_eq!(s.len().unwrap(), 1);
        assert_eq!(s.get(b"other").unwrap().as_deref(), Some(&b"v"[..]));
    }

    pub fn len_and_clear(fx: &dyn Fixture) {
        let s = fx.open(BIG);
        assert!(s.is_empty().unwrap());
        for i in 0..10u8 {
            s.put(&[i], &value(i, 5)).unwrap();
        }
        assert_eq!(s.len().unwrap(), 10);
        assert_eq!(s.size_bytes().unwrap(), 10 * fx.cost(1, 5));
        s.clear().unwrap();
        assert_eq!(s.len().unwrap(), 0);
        assert_eq!(s.size_bytes().unwrap(), 0);
        assert_eq!(s.get(&[3]).unwrap(), None);
        s.put(b"after", b"clear").unwrap();
        assert_eq!(s.get(b"after").unwrap().as_deref(), Some(&b"clear"[..]));
    }

    pub fn reopen(fx: &dyn Fixture) {
        if !fx.persistent() {
            return;
        }
        {
            let s = fx.open(BIG);
            s.put(b"k", b"persisted").unwrap();
            assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"persisted"[..]));
            assert_eq!(s.get(b"nope").unwrap(), None);
        }
        let s = fx.open(BIG);
        assert_eq!(s.get(b"k").unwrap().as_deref(), Some(&b"persisted"[..]));
        assert_eq!(s.len().unwrap(), 1);
        if fx.counters_persist() {
            let st = s.stats().unwrap();
            assert_eq!((st.hits, st.misses), (2, 1), "{st:?}");
        }
    }

    pub fn lru_order(fx: &dyn Fixture) {
        if !fx.exact_lru() {
            return;
        }
        let c = fx.cost(1, 100);
        let s = fx.open(3 * c + c / 2);
        for k in [b"a", b"b", b"c"] {
            s.put(k, &value(k[0], 100)).unwrap();
        }
        assert!(s.get(b"a").unwrap().is_some());
        s.put(b"d", &value(b'd', 100)).unwrap();
        assert_eq!(s.get(b"b").unwrap(), None, "least recently used goes first");
        assert_eq!(s.get(b"a").unwrap(), Some(value(b'a', 100)), "a was read");
        assert_eq!(s.get(b"d").unwrap(), Some(value(b'd', 100)), "newest stays");
        assert!(s.size_bytes().unwrap() <= 3 * c + c / 2);
    }

    pub fn cap(fx: &dyn Fixture) {
        let c = fx.cost(2, 50);
        let cap = 10 * c;
        let s = fx.open(cap);
        for i in 0..30u16 {
            s.put(&i.to_be_bytes(), &value(i as u8, 50)).unwrap();
            assert!(s.size_bytes().unwrap() <= cap, "after put {i}");
        }
        let present: Vec<bool> = (0..30u16)
            .map(|i| s.get(&i.to_be_bytes()).unwrap().is_some())
            .collect();
        assert!(present[29], "the newest entry survives");
        assert!(!present[0], "the oldest entry was evicted");
        // Without reads, survivors are exactly the newest entries.
        let first = present.iter().position(|&p| p).unwrap();
        assert!(present[first..].iter().all(|&p| p), "{present:?}");
        assert!(s.stats().unwrap().evictions >= 20 - 1);
    }

    pub fn oversized(fx: &dyn Fixture) {
        let c = fx.cost(1, 100);
        let s = fx.open(2 * c);
        s.put(b"s", &value(1, 100)).unwrap();
        s.put(b"k", &value(1, 100)).unwrap();
        s.put(b"k", &value(2, 1000)).unwrap();
        assert_eq!(
            s.get(b"k").unwrap(),
            None,
            "neither the big value nor the old one"
        );
        assert_eq!(
            s.get(b"s").unwrap(),
            Some(value(1, 100)),
            "others untouched"
        );
        s.put(b"x", &value(3, 10_000)).unwrap();
        assert_eq!(s.get(b"x").unwrap(), None);
        assert!(s.size_bytes().unwrap() <= 2 * c);
    }

    pub fn stats_counters(fx: &dyn Fixture) {
        let c = fx.cost(1, 10);
        let s = fx.open(2 * c);
        assert_eq!(s.get(b"a").unwrap(), None);
        s.put(b"a", &value(0, 10)).unwrap();
        assert!(s.get(b"a").unwrap().is_some());
        assert!(s.get(b"a").unwrap().is_some());
        let st = s.stats().unwrap();
        assert_eq!((st.entries, st.bytes), (1, c));
        assert_eq!((st.hits, st.misses, st.evictions), (2, 1, 0), "{st:?}");
        assert_eq!((st.errors, st.corrupt), (0, 0));
        if !fx.capped() {
            return;
        }
        for k in [b"b", b"c", b"d"] {
            s.put(k, &value(0, 10)).unwrap();
        }
        let st = s.stats().unwrap();
        assert!(st.evictions >= 2, "{st:?}");
        assert!(st.bytes <= 2 * c);
    }

    pub fn verify_healthy(fx: &dyn Fixture) {
        let s = fx.open(BIG);
        for i in 0..5u8 {
            s.put(&[i], &value(i, 64)).unwrap();
        }
        let r = s.verify().unwrap();
        assert_eq!(r.checked, 5 * fx.tiers());
        assert!(r.corrupt.is_empty(), "{r:?}");
        assert_eq!(s.len().unwrap(), 5);
    }

    pub fn list_and_prune(fx: &dyn Fixture) {
        if !fx.exact_lru() {
            return;
        }
        let c = fx.cost(1, 20);
        let s = fx.open(BIG);
        for k in [b"a", b"b", b"c", b"d"] {
            s.put(k, &value(k[0], 20)).unwrap();
        }
        assert!(s.get(b"a").unwrap().is_some());
        let mut listed = s.list().unwrap();
        listed.sort_by_key(|e| e.last_access);
        let keys: Vec<&[u8]> = listed.iter().map(|e| &e.key[..]).collect();
        assert_eq!(keys, [&b"b"[..], b"c", b"d", b"a"], "oldest access first");
        assert!(listed.iter().all(|e| e.size == 20 && e.stored_bytes == c));
        let r = s.prune(2 * c).unwrap();
        assert_eq!(r.removed, 2);
        assert_eq!(r.freed_bytes, 2 * c);
        assert_eq!(r.remaining_bytes, 2 * c);
        assert_eq!(s.get(b"b").unwrap(), None);
        assert_eq!(s.get(b"c").unwrap(), None);
        assert!(s.get(b"d").unwrap().is_some());
        assert!(s.get(b"a").unwrap().is_some());
        assert_eq!(s.prune(0).unwrap().remaining_bytes, 0);
        assert!(s.is_empty().unwrap());
    }

    pub fn threads(fx: &dyn Fixture) {
        let c = fx.cost(1, 200);
        let s = fx.open(20 * c);
        std::thread::scope(|scope| {
            for t in 0..4u8 {
                let s = s.clone();
                scope.spawn(move || {
                    for i in 0..60u8 {
                        let k = [(i.wrapping_mul(7).wrapping_add(t)) % 32];
                        if (i + t) % 3 == 0 {
                            s.put(&k, &value(k[0], 200)).unwrap();
                        } else if let Some(v) = s.get(&k).unwrap() {
                            assert_eq!(v, value(k[0], 200), "intact");
                        }
                    }
                });
            }
        });
        if fx.capped() {
            assert!(s.size_bytes().unwrap() <= 20 * c);
        }
        assert!(s.verify().unwrap().corrupt.is_empty());
    }
}

macro_rules! suite {
    ($($name:ident => $fx:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test] fn round_trip() { checks::round_trip(&$fx) }
            #[test] fn overwrite() { checks::overwrite(&$fx) }
            #[test] fn delete() { checks::delete(&$fx) }
            #[test] fn len_and_clear() { checks::len_and_clear(&$fx) }
            #[test] fn reopen() { checks::reopen(&$fx) }
            #[test] fn lru_order() { checks::lru_order(&$fx) }
            #[test] fn cap() { checks::cap(&$fx) }
            #[test] fn oversized_entry_is_not_retained() { checks::oversized(&$fx) }
            #[test] fn stats_counters() { checks::stats_counters(&$fx) }
            #[test] fn verify_healthy() { checks::verify_healthy(&$fx) }
            #[test] fn list_and_prune() { checks::list_and_prune(&$fx) }
            #[test] fn threads() { checks::threads(&$fx) }
        }
    )*};
}

suite! {
    memory => MemoryFx;
    file => FileFx::new();
    tiered_memory_file => TieredFx(FileFx::new());
}

#[cfg(feature = "sqlite")]
suite! {
    sqlite => SqliteFx::new();
}

/// One step of a property test.
#[derive(Clone, Debug)]
enum Op {
    Put(u8, usize),
    Get(u8),
    Remove(u8),
    Clear,
}

fn ops(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0u8..8, 0..max_len).prop_map(|(k, n)| Op::Put(k, n)),
        4 => (0u8..8).prop_map(Op::Get),
        2 => (0u8..8).prop_map(Op::Remove),
        1 => Just(Op::Clear),
    ];
    prop::collection::vec(op, 1..40)
}

/// Runs `ops` against `store` and a HashMap; they must agree at every step.
fn matches_model(store: &dyn Store, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model: HashMap<u8, Vec<u8>> = HashMap::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Put(k, n) => {
                let v = value(k.wrapping_add(step as u8), n);
                store.put(&[k], &v).unwrap();
                model.insert(k, v);
            }
            Op::Get(k) => prop_assert_eq!(store.get(&[k]).unwrap(), model.get(&k).cloned()),
            Op::Remove(k) => {
                prop_assert_eq!(store.remove(&[k]).unwrap(), model.remove(&k).is_some())
            }
            Op::Clear => {
                store.clear().unwrap();
                model.clear();
            }
        }
        prop_assert_eq!(store.len().unwrap(), model.len());
    }
    for k in 0..8u8 {
        prop_assert_eq!(store.get(&[k]).unwrap(), model.get(&k).cloned());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Uncapped, the memory store is a HashMap.
    #[test]
    fn memory_store_matches_a_map(ops in ops(64)) {
        matches_model(&MemoryStore::new(BIG), &ops)?;
    }

    /// The memory store never holds more than its cap, its byte count is the
    /// sum of its entries' costs, and it evicts exactly in LRU order.
    #[test]
    fn memory_store_is_an_exact_lru(ops in ops(64), cap in 0u64..300) {
        let s = MemoryStore::new(cap);
        // Model: keys from least to most recently used.
        let mut lru: Vec<(u8, u64)> = Vec::new();
        for op in &ops {
            match *op {
                Op::Put(k, n) => {
                    s.put(&[k], &value(k, n)).unwrap();
                    lru.retain(|e| e.0 != k);
                    let c = MemoryStore::entry_cost(1, n);
                    if c <= cap {
                        lru.push((k, c));
                        while lru.iter().map(|e| e.1).sum::<u64>() > cap {
                            lru.remove(0);
                        }
                    }
                }
                Op::Get(k) => {
                    let hit = s.get(&[k]).unwrap().is_some();
                    let pos = lru.iter().position(|e| e.0 == k);
                    prop_assert_eq!(hit, pos.is_some());
                    if let Some(p) = pos {
                        let e = lru.remove(p);
                        lru.push(e);
                    }
                }
                Op::Remove(k) => {
                    s.remove(&[k]).unwrap();
                    lru.retain(|e| e.0 != k);
                }
                Op::Clear => {
                    s.clear().unwrap();
                    lru.clear();
                }
            }
            let bytes = s.size_bytes().unwrap();
            prop_assert!(bytes <= cap);
            let listed: u64 = s.list().unwrap().iter().map(|e| e.stored_bytes).sum();
            prop_assert_eq!(bytes, listed);
            let mut keys: Vec<u8> = s.list().unwrap().iter().map(|e| e.key[0]).collect();
            keys.reverse();
            let model: Vec<u8> = lru.iter().map(|e| e.0).collect();
            prop_assert_eq!(keys, model);
        }
    }
}

proptest! {
    // Every put fsyncs: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Uncapped, the file store is a HashMap.
    #[test]
    fn file_store_matches_a_map(ops in ops(300)) {
        let fx = FileFx::new();
        matches_model(&*fx.open(BIG), &ops)?;
    }

    /// The file store's byte total after any sequence of writes stays within
    /// its soft cap once the writes are done (one process).
    #[test]
    fn file_store_stays_under_its_cap(sizes in prop::collection::vec((0u8..16, 0usize..400), 1..30)) {
        let fx = FileFx::new();
        let cap = 1500;
        let s = fx.open(cap);
        for (k, n) in &sizes {
            s.put(&[*k], &value(*k, *n)).unwrap();
            prop_assert!(s.size_bytes().unwrap() <= cap);
        }
        prop_assert!(s.verify().unwrap().corrupt.is_empty());
    }
}

#[cfg(feature = "sqlite")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Uncapped, the SQLite store is a HashMap.
    #[test]
    fn sqlite_store_matches_a_map(ops in ops(300)) {
        let fx = SqliteFx::new();
        matches_model(&*fx.open(BIG), &ops)?;
    }

    /// The SQLite store's byte total never exceeds its cap, and equals the
    /// sum of what it lists.
    #[test]
    fn sqlite_store_never_exceeds_its_cap(sizes in prop::collection::vec((0u8..16, 0usize..400), 1..30)) {
        let fx = SqliteFx::new();
        let cap = 1500;
        let s = fx.open(cap);
        for (k, n) in &sizes {
            s.put(&[*k], &value(*k, *n)).unwrap();
            let bytes = s.size_bytes().unwrap();
            prop_assert!(bytes <= cap);
            let listed: u64 = s.list().unwrap().iter().map(|e| e.stored_bytes).sum();
            prop_assert_eq!(bytes, listed);
        }
    }
}
