//! Stores composed fastest first: memory → file or SQLite → Redis.

use std::sync::Arc;
use std::time::Duration;

use super::{
    Counters, EntryInfo, LeaseGrant, Origin, PruneReport, RemoteStats, Store, StoreError,
    StoreStats, VerifyReport,
};

/// Tiers read through and written through, fastest first.
///
/// * `get` asks each tier in order; a hit in a lower tier is copied into the
///   tiers above it. A tier's error is logged, counted, and the next tier
///   asked; the error is returned only if no tier had the entry.
/// * `put`, `remove`, `clear`, `flush`, `prune` and `verify` go to every tier
///   (all are tried; the first error is returned).
/// * `len`, `size_bytes`, `list` describe the last tier, which holds
///   everything the faster tiers hold.
///
/// Each tier keeps its own LRU: a hit served by a faster tier is not seen by
/// the slower ones, which may therefore evict an entry a faster tier still
/// serves (it is then served until the faster tier evicts it too).
///
/// Tiers are any [`Store`]: nothing here knows what they are.
#[derive(Debug)]
pub struct Tiered {
    tiers: Vec<Arc<dyn Store>>,
    counters: Counters,
}

impl Tiered {
    /// Tiers, fastest first.
    pub fn new(tiers: Vec<Arc<dyn Store>>) -> Self {
        Tiered {
            tiers,
            counters: Counters::default(),
        }
    }

    /// The tiers, fastest first.
    pub fn tiers(&self) -> &[Arc<dyn Store>] {
        &self.tiers
    }

    fn last(&self) -> Result<&Arc<dyn Store>, StoreError> {
        self.tiers.last().ok_or_else(|| StoreError::Unsupported {
            store: "an empty tiered store".into(),
            op: "reading its entries",
        })
    }

    fn note(&self, tier: &dyn Store, op: &str, e: &StoreError) {
        Counters::bump(&self.counters.errors);
        tracing::warn!(tier = %tier.describe(), op, error = %e, "kcache store: tier failed");
    }

    /// Runs `f` on every tier, returning the first error after trying all.
    fn all<T>(
        &self,
        op: &str,
        mut f: impl FnMut(&dyn Store) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::with_capacity(self.tiers.len());
        let mut first = None;
        for t in &self.tiers {
            match f(&**t) {
                Ok(v) => out.push(v),
                Err(e) => {
                    self.note(&**t, op, &e);
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(out), Err)
    }
}

impl Store for Tiered {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.get_traced(key)?.map(|(v, _)| v))
    }

    /// The answering tier's origin: a hit in a remote tier is remote, though
    /// it is copied into the local ones on its way out.
    fn get_traced(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Origin)>, StoreError> {
        let mut first = None;
        for (i, t) in self.tiers.iter().enumerate() {
            match t.get_traced(key) {
                Ok(Some((v, origin))) => {
                    for upper in &self.tiers[..i] {
                        if let Err(e) = upper.put(key, &v) {
                            self.note(&**upper, "promote", &e);
                        }
                    }
                    self.counters.hit();
                    return Ok(Some((v, origin)));
                }
                Ok(None) => {}
                Err(e) => {
                    self.note(&**t, "get", &e);
                    first.get_or_insert(e);
                }
            }
        }
        self.counters.miss();
        first.map_or(Ok(None), Err)
    }

    fn count_lookups(&self, hits: u64, misses: u64) {
        self.counters.lookups(hits, misses);
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.all("put", |t| t.put(key, value)).map(drop)
    }

    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        self.all("remove", |t| t.remove(key))
            .map(|r| r.into_iter().any(|x| x))
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.all("clear", |t| t.clear()).map(drop)
    }

    fn len(&self) -> Result<usize, StoreError> {
        self.last()?.len()
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.tiers.iter().map(|t| t.describe()).collect();
        format!("tiered store: {}", names.join(" → "))
    }

    /// Entries and bytes of the last tier; hits, misses and errors as this
    /// composition saw them; evictions and corruption summed over the tiers.
    fn stats(&self) -> Result<StoreStats, StoreError> {
        let per_tier = self.all("stats", |t| t.stats())?;
        let last = per_tier.last().copied().unwrap_or_default();
        let own = self.counters.snapshot();
        Ok(StoreStats {
            entries: last.entries,
            bytes: last.bytes,
            hits: own.hits,
            misses: own.misses,
            evictions: per_tier.iter().map(|s| s.evictions).sum(),
            errors: own.errors,
            corrupt: per_tier.iter().map(|s| s.corrupt).sum(),
        })
    }

    fn size_bytes(&self) -> Result<u64, StoreError> {
        self.last()?.size_bytes()
    }

    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        self.last()?.list()
    }

    fn verify(&self) -> Result<VerifyReport, StoreError> {
        let reports = self.all("verify", |t| t.verify())?;
        Ok(VerifyReport {
            checked: reports.iter().map(|r| r.checked).sum(),
            corrupt: reports.into_iter().flat_map(|r| r.corrupt).collect(),
        })
    }

    fn prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        let reports = self.all("prune", |t| t.prune(max_bytes))?;
        Ok(PruneReport {
            removed: reports.iter().map(|r| r.removed).sum(),
            freed_bytes: reports.iter().map(|r| r.freed_bytes).sum(),
            remaining_bytes: reports.last().map_or(0, |r| r.remaining_bytes),
        })
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.all("flush", |t| t.flush()).map(drop)
    }

    /// The last tier's: the one every process shares. A remote last tier
    /// that cannot lease (its server is unreachable) leaves it to the tier
    /// before it, so processes on this machine still compile each key once.
    fn lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        let last = self.last()?;
        match last.lease(key, wait) {
            Err(e) if last.is_remote() && self.tiers.len() > 1 => {
                tracing::debug!(error = %e, "kcache store: the remote tier cannot lease; using the local one");
                self.tiers[self.tiers.len() - 2].lease(key, wait)
            }
            r => r,
        }
    }

    fn remote_stats(&self) -> Option<Result<RemoteStats, StoreError>> {
        self.tiers.iter().find_map(|t| t.remote_stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FileStore, MemoryStore};

    #[test]
    fn leases_come_from_the_shared_last_tier_and_memory_grants_every_one() {
        let memory = MemoryStore::new(1 << 20);
        let a = memory.lease(b"k", Duration::ZERO).unwrap();
        assert!(matches!(a, LeaseGrant::Free(_)));
        assert!(matches!(
            memory.lease(b"k", Duration::ZERO).unwrap(),
            LeaseGrant::Free(_)
        ));
        let tmp = tempfile::tempdir().unwrap();
        let tiered = Tiered::new(vec![
            Arc::new(MemoryStore::new(1 << 20)),
            Arc::new(FileStore::open(tmp.path().join("store")).unwrap()),
        ]);
        let held = tiered.lease(b"k", Duration::ZERO).unwrap();
        assert!(matches!(held, LeaseGrant::Free(_)));
        assert!(matches!(
            tiered.lease(b"k", Duration::ZERO).unwrap(),
            LeaseGrant::TimedOut
        ));
        drop(held);
        assert!(matches!(
            tiered.lease(b"k", Duration::ZERO).unwrap(),
            LeaseGrant::Free(_)
        ));
    }
}
