//! The resolver's path through the persistent store: loading what a batch
//! misses, storing what it compiles, and counting per kernel.

use super::census::Census;
use super::stored::{
    self, encode_inline_record, encode_record, kernel_entry_key, program_entry_key, program_id,
    read_record, Record,
};
use super::{Answer, Entry, Outcome, Resolver};
use crate::backend::Backend;
use crate::key::Digest;
use crate::store::{uncounted, Origin, StoreError};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A resolver's store lookups counted per kernel: a kernel answered from the
/// store is one hit though it may take two reads (its record, then its
/// program, when the record does not carry it), and kernels of one batch
/// sharing a key count once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreLookups {
    /// Kernels the store answered.
    pub hits: u64,
    /// Kernels looked up in the store and not answered by it (no record,
    /// a malformed one, a missing or unloadable program, or a store error).
    pub misses: u64,
}

/// A program's bytes: carried by its record, or read on their own.
enum InlineOr {
    Inline(Record),
    Own(Vec<u8>),
}

impl InlineOr {
    fn bytes(&self) -> &[u8] {
        match self {
            InlineOr::Inline(r) => r.inline().expect("an inline record"),
            InlineOr::Own(b) => b,
        }
    }
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

    /// Writes the record of each of a program's kernels. A small program
    /// ([`stored::inlines`]) rides in each record, so a hit is one read;
    /// a larger one is written first, on its own, so a reader that finds a
    /// record finds its program (unless evicted since).
    pub(super) fn store_program(&self, binary: &[u8], kernels: &[(Digest, &str)]) {
        let Some(store) = &self.store else { return };
        let id = program_id(binary);
        let inline = stored::inlines(binary.len(), kernels.len());
        if !inline {
            if let Err(e) = store.put(&program_entry_key(&id), binary) {
                self.store_failed("put", &e);
                return;
            }
        }
        for (key, symbol) in kernels {
            let record = if inline {
                encode_inline_record(key, &id, symbol, binary)
            } else {
                encode_record(&id, symbol)
            };
            if let Err(e) = store.put(&kernel_entry_key(key), &record) {
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
        let mut looked: FxHashMap<Digest, Option<(Digest, String)>> = FxHashMap::default();
        // Records that carry their program's bytes, with their keys.
        let mut carriers: Vec<(Digest, Record)> = Vec::new();
        // The keys whose record came from a tier other machines share.
        let mut shared: Vec<Digest> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if answers[i].is_some() || uncacheable[i] {
                continue;
            }
            let record = looked.entry(*key).or_insert_with(|| {
                let record = match uncounted(|| store.get_traced(&kernel_entry_key(key))) {
                    Ok(Some((bytes, origin))) => {
                        if origin == Origin::Remote {
                            shared.push(*key);
                        }
                        read_record(key, bytes).or_else(|| {
                            tracing::warn!("a stored kernel record is malformed; ignoring it");
                            None
                        })
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.store_failed("get", &e);
                        None
                    }
                }?;
                let named = (record.program, record.symbol.clone());
                if record.inline().is_some() {
                    carriers.push((*key, record));
                }
                Some(named)
            });
            if let Some((id, symbol)) = record.clone() {
                match wanted.iter_mut().find(|(p, _)| *p == id) {
                    Some((_, ks)) => ks.push((i, symbol)),
                    None => wanted.push((id, vec![(i, symbol)])),
                }
            }
        }
        for (id, kernels) in wanted {
            // Only bytes that hash to the id their record names: carried by a
            // record (one read answered it), or the program's own entry.
            let held = match carriers.iter().position(|(_, r)| r.program == id) {
                Some(at) => {
                    let (key, record) = carriers.swap_remove(at);
                    match stored::check_inline(&**store, &key, &record) {
                        Ok(()) => InlineOr::Inline(record),
                        Err(e) => {
                            self.store_failed("get", &e);
                            continue;
                        }
                    }
                }
                None => match uncounted(|| stored::load_program(&**store, &id)) {
                    Ok(Some(b)) => InlineOr::Own(b),
                    Ok(None) => continue,
                    Err(e) => {
                        self.store_failed("get", &e);
                        continue;
                    }
                },
            };
            let binary = held.bytes();
            let mut symbols: Vec<&str> = kernels.iter().map(|(_, s)| s.as_str()).collect();
            symbols.sort_unstable();
            symbols.dedup();
            let program = match self.backend.load_digested(binary, &id, &symbols) {
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
