//! The counting the persistent stores share: each implements its raw
//! operations once, as a [`CountedStore`], and the one [`Store`]
//! implementation here counts every failed operation in the store's
//! [`Counters`] (which it persists, for `kcache cache stats`).

use std::fmt;
use std::time::Duration;

use super::{
    Counters, EntryInfo, LeaseGrant, PruneReport, Store, StoreError, StoreStats, VerifyReport,
};

/// A store whose operations are counted: the raw operations behind each
/// [`Store`] method, and the counters their errors go to. Hits, misses,
/// evictions and corrupt entries are the raw operations' own to count.
pub(crate) trait CountedStore: Send + Sync + fmt::Debug {
    fn counters(&self) -> &Counters;
    fn describe_store(&self) -> String;
    fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;
    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError>;
    fn raw_remove(&self, key: &[u8]) -> Result<bool, StoreError>;
    fn raw_clear(&self) -> Result<(), StoreError>;
    fn raw_len(&self) -> Result<usize, StoreError>;
    fn raw_stats(&self) -> Result<StoreStats, StoreError>;
    fn raw_size_bytes(&self) -> Result<u64, StoreError>;
    fn raw_list(&self) -> Result<Vec<EntryInfo>, StoreError>;
    fn raw_verify(&self) -> Result<VerifyReport, StoreError>;
    fn raw_prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError>;
    fn raw_lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError>;
    fn raw_flush(&self) -> Result<(), StoreError>;
}

impl<S: CountedStore> Store for S {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.counters().count(self.raw_get(key))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.counters().count(self.raw_put(key, value))
    }

    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        self.counters().count(self.raw_remove(key))
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.counters().count(self.raw_clear())
    }

    fn len(&self) -> Result<usize, StoreError> {
        self.counters().count(self.raw_len())
    }

    fn describe(&self) -> String {
        self.describe_store()
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.counters().count(self.raw_stats())
    }

    fn size_bytes(&self) -> Result<u64, StoreError> {
        self.counters().count(self.raw_size_bytes())
    }

    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        self.counters().count(self.raw_list())
    }

    fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.counters().count(self.raw_verify())
    }

    fn prune(&self, max_bytes: u64) -> Result<PruneReport, StoreError> {
        self.counters().count(self.raw_prune(max_bytes))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.counters().count(self.raw_flush())
    }

    fn lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        self.counters().count(self.raw_lease(key, wait))
    }

    fn count_lookups(&self, hits: u64, misses: u64) {
        self.counters().lookups(hits, misses);
    }
}
