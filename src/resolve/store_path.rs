//! The resolver's path through the persistent store: loading what a batch
//! misses, storing what it compiles, and counting per kernel.

use super::census::Census;
use super::stored::{
    self, decode_record, encode_record, kernel_entry_key, program_entry_key, program_id,
};
use super::{Answer, Entry, Outcome, Resolver};
use crate::backend::Backend;
use crate::key::Digest;
use crate::store::{uncounted, Origin, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A resolver's store lookups counted per kernel: a kernel answered from the
/// store is one hit though it takes two reads (its record, then its program),
/// and kernels of one batch sharing a key count once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreLookups {
    /// Kernels the store answered.
    pub hits: u64,
    /// Kernels looked up in the store and not answered by it (no record,
    /// a malformed one, a missing or unloadable program, or a store error).
    pub misses: u64,
}

#[derive(Debug, Default)]
pub(super) struct LookupCounters {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<B: Backend + 'static> Resolver<B> {
    /// The kernels this resolver looked up in its store, counted per kernel.
    pub fn store_lookups(&self) -> StoreLookups {
        StoreLookups {
            hits: self.store_lookups.hits.load(Ordering::Relaxed),
            misses: self.store_lookups.misses.load(Ordering::Relaxed),
        }
    }

    /// Writes a program's bytes, then the record of each of its kernels, so a
    /// reader that finds a record finds its program (unless evicted since).
    pub(super) fn store_program(&self, binary: &[u8], kernels: &[(Digest, &str)]) {
        let Some(store) = &self.store else { return };
        let id = program_id(binary);
        if let Err(e) = store.put(&program_entry_key(&id), binary) {
            self.store_failed("put", &e);
            return;
        }
        for (key, symbol) in kernels {
            if let Err(e) = store.put(&kernel_entry_key(key), &encode_record(&id, symbol)) {
                self.store_failed("put", &e);
                return;
            }
        }
    }

    /// Counts a batch's store lookups per kernel: `looked_up` distinct keys,
    /// `hits` of them answered (the reads themselves went uncounted).
    pub(super) fn count_store_lookups(&self, hits: u64, looked_up: u64) {
        let Some(store) = &self.store else { return };
        let misses = looked_up.saturating_sub(hits);
        let lookups = &self.store_lookups;
        lookups.hits.fetch_add(hits, Ordering::Relaxed);
        lookups.misses.fetch_add(misses, Ordering::Relaxed);
        if hits + misses > 0 {
            store.count_lookups(hits, misses);
        }
    }

    /// Answers what the store holds among the kernels still missing: each
    /// stored program is loaded once, and published like a compiled one.
    /// Answers how many distinct keys it looked up.
    pub(super) fn load_stored(
        &self,
        keys: &[Digest],
        uncacheable: &[bool],
        answers: &mut [Answer<B::Program>],
        generation: u64,
        census: &mut Census,
    ) -> u64 {
        let Some(store) = &self.store else { return 0 };
        // Each stored program wanted, with the kernels it answers.
        let mut wanted: Vec<(Digest, Vec<(usize, String)>)> = Vec::new();
        let mut looked: HashMap<Digest, Option<(Digest, String)>> = HashMap::new();
        // The keys whose record came from a tier other machines share.
        let mut shared: Vec<Digest> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if answers[i].is_some() || uncacheable[i] {
                continue;
            }
            let record = looked.entry(*key).or_insert_with(|| {
                match uncounted(|| store.get_traced(&kernel_entry_key(key))) {
                    Ok(Some((bytes, origin))) => {
                        if origin == Origin::Remote {
                            shared.push(*key);
                        }
                        decode_record(&bytes).or_else(|| {
                            tracing::warn!("a stored kernel record is malformed; ignoring it");
                            None
                        })
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.store_failed("get", &e);
                        None
                    }
                }
            });
            if let Some((id, symbol)) = record.clone() {
                match wanted.iter_mut().find(|(p, _)| *p == id) {
                    Some((_, ks)) => ks.push((i, symbol)),
                    None => wanted.push((id, vec![(i, symbol)])),
                }
            }
        }
        for (id, kernels) in wanted {
            // Only bytes that hash to the id their record names.
            let binary = match uncounted(|| stored::load_program(&**store, &id)) {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => {
                    self.store_failed("get", &e);
                    continue;
                }
            };
            let mut symbols: Vec<&str> = kernels.iter().map(|(_, s)| s.as_str()).collect();
            symbols.sort_unstable();
            symbols.dedup();
            let program = match self.backend.load_digested(&binary, &id, &symbols) {
                Ok(p) => p,
                Err(e) => {
                    self.store_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("a stored program failed to load ({e}); compiling instead");
                    continue;
                }
            };
            census.programs_loaded += 1;
            let mut entries: Vec<(Digest, Entry<B::Program>)> = Vec::new();
            for (i, symbol) in kernels {
                let entry = Entry {
                    program: Arc::clone(&program),
                    symbol: Arc::from(symbol.as_str()),
                };
                let outcome = if entries.iter().any(|(k, _)| *k == keys[i]) {
                    Outcome::Reused
                } else {
                    census.kernels_stored += 1;
                    entries.push((keys[i], entry.clone()));
                    if shared.contains(&keys[i]) {
                        census.kernels_shared += 1;
                        Outcome::Shared
                    } else {
                        Outcome::Stored
                    }
                };
                answers[i] = Some((entry, outcome));
            }
            self.cache
                .publish_if_generation(generation, entries, binary.len() as u64);
        }
        looked.len() as u64
    }

    /// Logs a store failure (as a warning the first time: the resolver goes
    /// on without the store) and counts it.
    fn store_failed(&self, op: &str, e: &StoreError) {
        self.store_errors.fetch_add(1, Ordering::Relaxed);
        if !self.store_warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("program store {op} failed ({e}); compiling without it");
        } else {
            tracing::debug!("program store {op} failed again: {e}");
        }
    }
}
