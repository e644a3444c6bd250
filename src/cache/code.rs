//! The code cache: compiled kernels in memory, byte-capped, published in
//! weighted groups.
//!
//! [`CodeCache::publish`] retains each value under its key as one *group*
//! weighing the caller's byte count (compiled bytes, where the backend can
//! measure them), evicting the oldest groups while the retained total exceeds
//! the capacity. The values of one group typically share one compiled program
//! and differ in the symbol each kernel was compiled under. A key already
//! present is re-pointed: the older group no longer owns it, and that group's
//! eviction leaves it be.
//!
//! The capacity is fixed when the cache is created: by default
//! `KCACHE_CODE_CACHE_BYTES`, read (and, when malformed, warned about) once
//! then, else 256 MiB; only a [`Capacity::Dynamic`] capacity is read again on
//! every publish and find. The bytes retained never exceed it (a group larger than the whole
//! capacity is evicted as soon as it is published; capacity 0 disables the
//! cache).
//!
//! [`with_cold_caches`] runs a closure with every code cache of the process
//! emptied, and puts back what each held when it returns or panics.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The capacity when `KCACHE_CODE_CACHE_BYTES` is unset: 256 MiB.
pub const DEFAULT_CAPACITY: u64 = 256 << 20;

/// The environment variable that sets the capacity in bytes.
pub const CAPACITY_ENV: &str = "KCACHE_CODE_CACHE_BYTES";

/// Where a cache takes its capacity from.
#[derive(Clone)]
pub enum Capacity {
    /// `KCACHE_CODE_CACHE_BYTES`, else [`DEFAULT_CAPACITY`], read once when
    /// the cache is created.
    FromEnv,
    /// A fixed number of bytes.
    Fixed(u64),
    /// Whatever the function answers at the time, read on every publish
    /// and find.
    Dynamic(Arc<dyn Fn() -> u64 + Send + Sync>),
}

impl Capacity {
    fn read(&self) -> u64 {
        match self {
            Capacity::FromEnv => capacity_from_env(),
            Capacity::Fixed(n) => *n,
            Capacity::Dynamic(f) => f(),
        }
    }
}

impl std::fmt::Debug for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capacity::FromEnv => f.write_str("FromEnv"),
            Capacity::Fixed(n) => write!(f, "Fixed({n})"),
            Capacity::Dynamic(_) => f.write_str("Dynamic"),
        }
    }
}

/// `KCACHE_CODE_CACHE_BYTES` as a byte count ([`crate::bytes::parse_byte_size`]);
/// [`DEFAULT_CAPACITY`] when unset or unreadable (with a warning).
pub fn capacity_from_env() -> u64 {
    match std::env::var(CAPACITY_ENV) {
        Ok(v) => crate::bytes::parse_byte_size(&v).unwrap_or_else(|_| {
            tracing::warn!("{CAPACITY_ENV}={v:?} is not a byte count; using the default");
            DEFAULT_CAPACITY
        }),
        Err(_) => DEFAULT_CAPACITY,
    }
}

/// Counters a code cache keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CodeCacheStats {
    /// Finds that answered a value.
    pub hits: u64,
    /// Finds that answered nothing.
    pub misses: u64,
    /// Groups published.
    pub published: u64,
    /// Groups evicted to make room (or refused, being larger than the capacity).
    pub evicted: u64,
    /// Entries held now.
    pub entries: u64,
    /// Bytes retained now.
    pub bytes: u64,
}

struct Group<K> {
    id: u64,
    bytes: u64,
    keys: Vec<K>,
}

struct Slot<V> {
    group: u64,
    value: V,
}

/// What one cache holds: its entries and its groups, oldest first.
struct State<K, V> {
    entries: HashMap<K, Slot<V>>,
    groups: VecDeque<Group<K>>,
    retained: u64,
}

impl<K, V> Default for State<K, V> {
    fn default() -> Self {
        State {
            entries: HashMap::new(),
            groups: VecDeque::new(),
            retained: 0,
        }
    }
}

impl<K: Hash + Eq, V> State<K, V> {
    /// Evicts the oldest groups while the retained total exceeds `capacity`;
    /// returns how many went.
    fn shrink_to(&mut self, capacity: u64) -> u64 {
        let mut evicted = 0;
        while self.retained > capacity {
            let Some(group) = self.groups.pop_front() else {
                break;
            };
            self.retained -= group.bytes;
            evicted += 1;
            for key in group.keys {
                // A key re-pointed to a younger group belongs to that group now.
                if self.entries.get(&key).is_some_and(|s| s.group == group.id) {
                    self.entries.remove(&key);
                }
            }
        }
        evicted
    }
}

struct Shared<K, V> {
    state: Mutex<State<K, V>>,
    capacity: Capacity,
    next_group: AtomicU64,
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    published: AtomicU64,
    evicted: AtomicU64,
}

impl<K, V> Shared<K, V> {
    fn lock(&self) -> MutexGuard<'_, State<K, V>> {
        // A panic while holding the lock cannot leave the maps inconsistent
        // halfway through anything a reader relies on: every mutation below
        // is completed before user code runs.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A byte-capped in-memory cache of compiled kernels, published in weighted
/// groups (see the module docs). Cloning shares the cache.
pub struct CodeCache<K, V> {
    shared: Arc<Shared<K, V>>,
}

impl<K, V> Clone for CodeCache<K, V> {
    fn clone(&self) -> Self {
        CodeCache {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K, V> CodeCache<K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    /// A cache whose capacity comes from `capacity`, registered for
    /// [`with_cold_caches`].
    pub fn new(capacity: Capacity) -> Self {
        // Read once: a malformed value warns once per cache, not per lookup.
        let capacity = match capacity {
            Capacity::FromEnv => Capacity::Fixed(capacity_from_env()),
            other => other,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            capacity,
            next_group: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            published: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        });
        let weak: Weak<dyn Cold> = Arc::downgrade(&shared) as Weak<dyn Cold>;
        registry().push(weak);
        CodeCache { shared }
    }

    /// The value under `key`, counting a hit or a miss.
    pub fn find(&self, key: &K) -> Option<V> {
        let capacity = self.shared.capacity.read();
        let mut state = self.shared.lock();
        let evicted = state.shrink_to(capacity);
        let found = state.entries.get(key).map(|s| s.value.clone());
        drop(state);
        self.count_evicted(evicted);
        let counter = if found.is_some() {
            &self.shared.hits
        } else {
            &self.shared.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Retains `entries` as one group weighing `bytes`, then evicts the
    /// oldest groups (this one included, when it alone exceeds the capacity)
    /// while the retained total exceeds the capacity.
    pub fn publish(&self, entries: impl IntoIterator<Item = (K, V)>, bytes: u64) {
        self.publish_unless_cleared(None, entries, bytes);
    }

    /// [`CodeCache::publish`], unless the cache was cleared since
    /// [`CodeCache::generation`] answered `generation`: a value built before
    /// a clear may close over handles the clear released. Returns whether it
    /// published.
    pub fn publish_if_generation(
        &self,
        generation: u64,
        entries: impl IntoIterator<Item = (K, V)>,
        bytes: u64,
    ) -> bool {
        self.publish_unless_cleared(Some(generation), entries, bytes)
    }

    fn publish_unless_cleared(
        &self,
        generation: Option<u64>,
        entries: impl IntoIterator<Item = (K, V)>,
        bytes: u64,
    ) -> bool {
        let capacity = self.shared.capacity.read();
        let id = self.shared.next_group.fetch_add(1, Ordering::Relaxed);
        let mut state = self.shared.lock();
        // Checked under the lock that `clear` takes too, so a clear either
        // happened before (and refuses this) or happens after (and drops it).
        if generation.is_some_and(|g| g != self.shared.generation.load(Ordering::SeqCst)) {
            return false;
        }
        let mut keys = Vec::new();
        for (key, value) in entries {
            keys.push(key.clone());
            state.entries.insert(key, Slot { group: id, value });
        }
        state.groups.push_back(Group { id, bytes, keys });
        state.retained += bytes;
        let evicted = state.shrink_to(capacity);
        drop(state);
        self.shared.published.fetch_add(1, Ordering::Relaxed);
        self.count_evicted(evicted);
        true
    }

    /// Drops every entry and bumps the generation, so a value built before
    /// the clear is never published after it.
    pub fn clear(&self) {
        let mut state = self.shared.lock();
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        let old = std::mem::take(&mut *state);
        drop(state);
        // Values drop outside the lock: a program's teardown may be slow.
        drop(old);
    }

    /// A number that changes whenever the cache is cleared.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// The capacity (as read now, for a [`Capacity::Dynamic`] one).
    pub fn capacity(&self) -> u64 {
        self.shared.capacity.read()
    }

    /// Counters, and what the cache holds now.
    pub fn stats(&self) -> CodeCacheStats {
        let state = self.shared.lock();
        CodeCacheStats {
            hits: self.shared.hits.load(Ordering::Relaxed),
            misses: self.shared.misses.load(Ordering::Relaxed),
            published: self.shared.published.load(Ordering::Relaxed),
            evicted: self.shared.evicted.load(Ordering::Relaxed),
            entries: state.entries.len() as u64,
            bytes: state.retained,
        }
    }

    /// How many entries the cache holds.
    pub fn len(&self) -> usize {
        self.shared.lock().entries.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn count_evicted(&self, n: u64) {
        if n > 0 {
            self.shared.evicted.fetch_add(n, Ordering::Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------
// The cold-cache scope

/// What [`with_cold_caches`] needs of a cache, whatever its key and value types.
trait Cold: Send + Sync {
    /// Empties the cache, handing back what it held.
    fn take(&self) -> Box<dyn std::any::Any + Send>;
    /// Replaces what the cache holds by what [`Cold::take`] handed back.
    fn put_back(&self, held: Box<dyn std::any::Any + Send>);
    /// Empties the cache.
    fn empty(&self);
}

impl<K, V> Cold for Shared<K, V>
where
    K: Hash + Eq + Send + 'static,
    V: Send + 'static,
{
    fn take(&self) -> Box<dyn std::any::Any + Send> {
        Box::new(std::mem::take(&mut *self.lock()))
    }

    fn put_back(&self, held: Box<dyn std::any::Any + Send>) {
        let held = *held
            .downcast::<State<K, V>>()
            .expect("a cache gets back only what it handed out");
        let published = std::mem::replace(&mut *self.lock(), held);
        drop(published);
    }

    fn empty(&self) {
        let published = std::mem::take(&mut *self.lock());
        drop(published);
    }
}

/// Every code cache this process created (weakly: a dropped cache goes).
fn registry() -> MutexGuard<'static, Vec<Weak<dyn Cold>>> {
    static REGISTRY: Mutex<Vec<Weak<dyn Cold>>> = Mutex::new(Vec::new());
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|w| w.strong_count() > 0);
    reg
}

/// Runs `f` with every code cache this process has created emptied, so a
/// compile inside reuses nothing an earlier compile published; then puts back,
/// on return or panic, what each held on entry, discarding what `f` published
/// (a cache created inside ends empty). A value handed out inside stays valid,
/// as after an eviction. Scopes nest.
///
/// For tests. Not for a compile running concurrently on another thread: that
/// one may publish into a cache while it is being restored.
pub fn with_cold_caches<R>(f: impl FnOnce() -> R) -> R {
    let held: Vec<(Arc<dyn Cold>, Box<dyn std::any::Any + Send>)> = registry()
        .iter()
        .filter_map(Weak::upgrade)
        .map(|cache| {
            let state = cache.take();
            (cache, state)
        })
        .collect();
    let result = catch_unwind(AssertUnwindSafe(f));
    let before: Vec<*const ()> = held
        .iter()
        .map(|(c, _)| Arc::as_ptr(c) as *const ())
        .collect();
    // Caches created inside the scope end empty.
    let created: Vec<Arc<dyn Cold>> = registry()
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|c| !before.contains(&(Arc::as_ptr(c) as *const ())))
        .collect();
    for cache in created {
        cache.empty();
    }
    for (cache, state) in held {
        cache.put_back(state);
    }
    match result {
        Ok(r) => r,
        Err(panic) => resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: u64) -> CodeCache<u32, &'static str> {
        CodeCache::new(Capacity::Fixed(capacity))
    }

    #[test]
    fn publish_then_find() {
        let c = cache(100);
        assert_eq!(c.find(&1), None);
        c.publish([(1, "a"), (2, "b")], 10);
        assert_eq!(c.find(&1), Some("a"));
        assert_eq!(c.find(&2), Some("b"));
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries, s.bytes), (2, 1, 2, 10));
    }

    #[test]
    fn oldest_groups_go_first_and_the_total_never_exceeds_the_capacity() {
        let c = cache(25);
        c.publish([(1, "a")], 10);
        c.publish([(2, "b")], 10);
        c.publish([(3, "c")], 10);
        assert_eq!(c.find(&1), None);
        assert_eq!(c.find(&2), Some("b"));
        assert_eq!(c.find(&3), Some("c"));
        assert_eq!(c.stats().bytes, 20);
    }

    #[test]
    fn a_group_larger_than_the_capacity_is_not_retained() {
        let c = cache(10);
        c.publish([(1, "a")], 5);
        c.publish([(2, "b")], 11);
        assert_eq!(c.find(&2), None);
        assert_eq!(c.stats().bytes, 0);
        assert!(c.is_empty());
    }

    #[test]
    fn zero_capacity_disables_the_cache() {
        let c = cache(0);
        c.publish([(1, "a")], 0);
        c.publish([(1, "a")], 1);
        assert_eq!(c.find(&1), None);
    }

    #[test]
    fn a_repointed_key_survives_its_old_groups_eviction() {
        let c = cache(20);
        c.publish([(1, "old"), (2, "b")], 10);
        c.publish([(1, "new")], 10);
        assert_eq!(c.find(&1), Some("new"));
        c.publish([(3, "c")], 10); // evicts the first group: key 2 goes, key 1 stays
        assert_eq!(c.find(&2), None);
        assert_eq!(c.find(&1), Some("new"));
        assert_eq!(c.find(&3), Some("c"));
    }

    #[test]
    fn a_dynamic_capacity_is_read_on_every_publish_and_find() {
        let cap = Arc::new(AtomicU64::new(100));
        let read = Arc::clone(&cap);
        let c: CodeCache<u32, u32> = CodeCache::new(Capacity::Dynamic(Arc::new(move || {
            read.load(Ordering::SeqCst)
        })));
        c.publish([(1, 1)], 40);
        c.publish([(2, 2)], 40);
        cap.store(50, Ordering::SeqCst);
        assert_eq!(
            c.find(&1),
            None,
            "the shrunken capacity applies at the next find"
        );
        assert_eq!(c.find(&2), Some(2));
    }

    #[test]
    fn a_publish_that_spans_a_clear_is_refused() {
        let c = cache(100);
        let g = c.generation();
        c.clear();
        assert!(!c.publish_if_generation(g, [(1, "a")], 1));
        assert_eq!(c.find(&1), None);
        assert!(c.publish_if_generation(c.generation(), [(1, "a")], 1));
        assert_eq!(c.find(&1), Some("a"));
    }
}
