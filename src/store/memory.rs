//! The in-memory LRU store: one process, many threads, a byte cap.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use super::{
    Clock, Counters, EntryInfo, PruneReport, Store, StoreError, StoreStats, SystemClock,
    VerifyReport,
};

/// An in-process LRU store capped in bytes (key plus value bytes).
///
/// Thread safe: one mutex guards the map and the recency list, held only for
/// the lookup; the value is copied out after the lock is released. An entry
/// larger than the cap on its own is not retained. Values live in memory
/// only, so there is nothing to corrupt: [`Store::verify`] checks the byte
/// accounting and reports no corrupt entry.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Lru>,
    max_bytes: u64,
    counters: Counters,
    clock: Arc<dyn Clock>,
}

impl MemoryStore {
    /// A store holding at most `max_bytes` of keys and values.
    pub fn new(max_bytes: u64) -> Self {
        Self::with_clock(max_bytes, Arc::new(SystemClock))
    }

    /// A store whose access times (shown by [`Store::list`]) come from
    /// `clock`.
    pub fn with_clock(max_bytes: u64, clock: Arc<dyn Clock>) -> Self {
        MemoryStore {
            inner: Mutex::new(Lru::default()),
            max_bytes,
            counters: Counters::default(),
            clock,
        }
    }

    /// The byte cap.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The bytes an entry counts against the cap.
    pub fn entry_cost(key_len: usize, value_len: usize) -> u64 {
        key_len as u64 + value_len as u64
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        // A panic while holding the lock leaves the list consistent (every
        // mutation completes before it can panic), so a poisoned lock is safe
        // to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn evict_to(&self, lru: &mut Lru, max_bytes: u64) -> PruneReport {
        let mut report = PruneReport::default();
        while lru.bytes > max_bytes {
            let Some(freed) = lru.pop_lru() else { break };
            report.removed += 1;
            report.freed_bytes += freed;
        }
        report.remaining_bytes = lru.bytes;
        report
    }
}

impl Store for MemoryStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let now = self.clock.now();
        let value = self.lock().touch(key, now);
        match value {
            Some(v) => {
                self.counters.hit();
                Ok(Some(v.to_vec()))
            }
            None => {
                self.counters.miss();
                Ok(None)
            }
        }
    }

    fn count_lookups(&self, hits: u64, misses: u64) {
        self.counters.lookups(hits, misses);
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let cost = Self::entry_cost(key.len(), value.len());
        if cost > self.max_bytes {
            self.lock().remove(key);
            return Ok(());
        }
        let value: Arc<[u8]> = Arc::from(value);
        let now = self.clock.now();
        let mut lru = self.lock();
        lru.insert(key, value, cost, now);
        let evicted = self.evict_to(&mut lru, self.max_bytes).removed;
        Counters::add(&self.counters.evictions, evicted);
        Ok(())
    }

    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        Ok(self.lock().remove(key))
    }

    fn clear(&self) -> Result<(), StoreError> {
        *self.lock() = Lru::default();
        Ok(())
    }

    fn len(&self) -> Result<usize, StoreError> {
        Ok(self.lock().map.len())
    }

    fn describe(&self) -> String {
        format!("memory store (cap {} bytes)", self.max_bytes)
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let (entries, bytes) = {
            let lru = self.lock();
            (lru.map.len() as u64, lru.bytes)
        };
        let mut s = StoreStats {
            entries,
            bytes,
            ..StoreStats::default()
        };
        self.counters.snapshot().add_to(&mut s);
        Ok(s)
    }

    fn size_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.lock().bytes)
    }

    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        let lru = self.lock();
        Ok(lru
            .iter_mru()
            .map(|s| EntryInfo {
                key: s.key.to_vec(),
                size: s.value.len() as u64,
                stored_bytes: s.cost,
                last_access: s.last_access,
            })
            .collect())
    }

    fn verify(&self) -> Result<VerifyReport, StoreError> {
        let lru = self.lock();
        let counted: u64 = lru.iter_mru().map(|s| s.cost).sum();
        debug_assert_eq!(counted, lru.bytes);
        Ok(VerifyReport {
            checked: lru.map.len() as u64,
            corrupt: Vec::new(),
        })
    }

    fn prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        let mut lru = self.lock();
        let report = self.evict_to(&mut lru, max_bytes);
        Counters::add(&self.counters.evictions, report.removed);
        Ok(report)
    }
}

const NIL: usize = usize::MAX;

/// A doubly linked recency list threaded through a slab, indexed by a map:
/// every operation is O(1).
#[derive(Debug, Default)]
struct Lru {
    map: HashMap<Arc<[u8]>, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Most recently used.
    head: Option<usize>,
    /// Least recently used.
    tail: Option<usize>,
    bytes: u64,
}

#[derive(Debug)]
struct Slot {
    key: Arc<[u8]>,
    value: Arc<[u8]>,
    cost: u64,
    last_access: SystemTime,
    prev: usize,
    next: usize,
}

impl Lru {
    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.slots[i].prev, self.slots[i].next);
        match prev {
            NIL => self.head = (next != NIL).then_some(next),
            p => self.slots[p].next = next,
        }
        match next {
            NIL => self.tail = (prev != NIL).then_some(prev),
            n => self.slots[n].prev = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        self.slots[i].prev = NIL;
        self.slots[i].next = self.head.unwrap_or(NIL);
        if let Some(h) = self.head {
            self.slots[h].prev = i;
        }
        self.head = Some(i);
        if self.tail.is_none() {
            self.tail = Some(i);
        }
    }

    fn touch(&mut self, key: &[u8], now: SystemTime) -> Option<Arc<[u8]>> {
        let i = *self.map.get(key)?;
        if self.head != Some(i) {
            self.unlink(i);
            self.push_front(i);
        }
        self.slots[i].last_access = now;
        Some(self.slots[i].value.clone())
    }

    fn insert(&mut self, key: &[u8], value: Arc<[u8]>, cost: u64, now: SystemTime) {
        if let Some(&i) = self.map.get(key) {
            self.bytes = self.bytes - self.slots[i].cost + cost;
            let s = &mut self.slots[i];
            s.value = value;
            s.cost = cost;
            s.last_access = now;
            if self.head != Some(i) {
                self.unlink(i);
                self.push_front(i);
            }
            return;
        }
        let key: Arc<[u8]> = Arc::from(key);
        let slot = Slot {
            key: key.clone(),
            value,
            cost,
            last_access: now,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.map.insert(key, i);
        self.bytes += cost;
        self.push_front(i);
    }

    fn release(&mut self, i: usize) -> u64 {
        self.unlink(i);
        let s = &mut self.slots[i];
        let cost = s.cost;
        // Drop the bytes now; the slot itself is reused by the next insert.
        s.value = Arc::from(&[][..]);
        s.key = s.value.clone();
        self.free.push(i);
        self.bytes -= cost;
        cost
    }

    fn remove(&mut self, key: &[u8]) -> bool {
        match self.map.remove(key) {
            Some(i) => {
                self.release(i);
                true
            }
            None => false,
        }
    }

    fn pop_lru(&mut self) -> Option<u64> {
        let i = self.tail?;
        self.map.remove(&self.slots[i].key);
        Some(self.release(i))
    }

    fn iter_mru(&self) -> impl Iterator<Item = &Slot> {
        let mut at = self.head.unwrap_or(NIL);
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let s = &self.slots[at];
                at = s.next;
                s
            })
        })
    }
}

/// A fast hasher for keys: the resolver's keys are blake3 digests already,
/// so a multiply-rotate mix is enough, and callers are not adversaries.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap());
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_list_stays_linked() {
        let mut lru = Lru::default();
        let t = SystemTime::UNIX_EPOCH;
        for k in [b"a", b"b", b"c"] {
            lru.insert(k, Arc::from(&b"v"[..]), 2, t);
        }
        lru.touch(b"a", t);
        let order: Vec<&[u8]> = lru.iter_mru().map(|s| &*s.key).collect();
        assert_eq!(order, [&b"a"[..], b"c", b"b"]);
        assert_eq!(lru.pop_lru(), Some(2));
        assert!(lru.remove(b"a"));
        assert!(!lru.remove(b"a"));
        let order: Vec<&[u8]> = lru.iter_mru().map(|s| &*s.key).collect();
        assert_eq!(order, [&b"c"[..]]);
        assert_eq!(lru.bytes, 2);
        lru.insert(b"d", Arc::from(&b"v"[..]), 2, t);
        assert_eq!(lru.slots.len(), 3, "freed slots are reused");
        assert_eq!(lru.pop_lru(), Some(2));
        assert_eq!(lru.pop_lru(), Some(2));
        assert_eq!(lru.pop_lru(), None);
        assert_eq!((lru.head, lru.tail, lru.bytes), (None, None, 0));
    }
}
