//! The per-process memo of kernel keys: what deriving a kernel's key cost
//! (its backend's [`KeyExtras`], canonicalization, the digest) is paid once
//! per kernel text, options and renaming rules, so a batch that repeats
//! texts, and every later batch that repeats them, derives each key once.
//!
//! # Why a memoized key is the key deriving it again would give
//!
//! A key is a function of the kernel (text, symbol, options, renaming
//! rules: all compared whole, never by a digest of them), of its backend
//! (family, key version, identity: the memo forgets everything when any
//! of them changes) and of the extras the backend reads from outside the
//! text (headers, predefined macros). The extras are the only part that can
//! change behind the memo's back, so a memoized key is used only while:
//!
//! * its extras' [`KeyValidity`](crate::backend::KeyValidity) holds (the cc
//!   backend re-stats the files and directories they came from, once per
//!   keying batch; see below for when it trusts change reports instead), or
//! * the backend, asked again, answers extras equal to the memoized ones
//!   (digests, macro names, position macros, uncacheable reason): only the
//!   canonicalization and the digest are saved then.
//!
//! Otherwise the key is derived again and replaces the memoized one.
//!
//! # Change notification instead of stats
//!
//! Re-stat-ing every file a key rests on is most of an all-hit batch, so in
//! a process that keys batch after batch the cc backend arms each of its
//! validations with [`super::watch`] (inotify on Linux) the second time a
//! batch re-validates it: every file and every directory on the way to it
//! is watched, *then* everything is stat-ed afresh as before, and from then
//! on the validation holds without a stat (but one full check a second,
//! for writers no watch sees) until the watcher reports
//! anything that may touch it (the file written, closed after writing, its
//! attributes or times set, moved or deleted; an entry on its path created,
//! deleted or renamed; a report lost; the mount table changed). The queue
//! is drained once at the start of each keying batch: a change that
//! completed before the batch began is seen by it. After a report, or for
//! any path no watch covers (relative, not on a local filesystem, a watch
//! refused), it is stat-ed once per batch as before. So the rule stays:
//! a memoized key is trusted only while nothing it rests on can have
//! changed, and when unsure it is re-validated by stat.
//!
//! # Bounds
//!
//! Two generations of at most [`MAX_ENTRIES`] entries and [`MAX_TEXT_BYTES`]
//! of text each: a full current generation becomes the previous one (the
//! older is dropped), and a hit in the previous one moves to the current.
//! A long search of distinct kernels keeps at most two generations.

use super::{Kernel, Keyed};
use crate::backend::KeyExtras;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

/// Entries per generation.
pub(super) const MAX_ENTRIES: usize = 1024;

/// Kernel text bytes per generation.
pub(super) const MAX_TEXT_BYTES: usize = 1 << 20;

/// One memoized key: the kernel it was derived for (compared whole), the
/// extras it was derived from, and the result.
pub(super) struct Memoized {
    kernel: Kernel,
    pub extras: KeyExtras,
    pub keyed: Keyed,
}

impl Memoized {
    fn is_for(&self, kernel: &Kernel) -> bool {
        self.kernel.text == kernel.text
            && self.kernel.symbol == kernel.symbol
            && self.kernel.options == kernel.options
            && self.kernel.canon == kernel.canon
    }
}

/// Whether two extras say the same about a compile (their validity, which
/// says only when they were computed, aside).
pub(super) fn same_extras(a: &KeyExtras, b: &KeyExtras) -> bool {
    a.digests == b.digests
        && a.macros == b.macros
        && a.position_macros == b.position_macros
        && a.pasting == b.pasting
        && a.reached == b.reached
        && a.uncacheable == b.uncacheable
        && a.records_names == b.records_names
}

type Generation = FxHashMap<u64, Vec<Arc<Memoized>>>;

/// What a key takes from its backend: the memo holds keys of one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BackendId<'a> {
    pub family: &'a str,
    pub key_version: u32,
    pub identity: &'a str,
}

#[derive(Default)]
struct Generations {
    /// The backend every entry was derived under: family, key version,
    /// identity.
    backend: (String, u32, String),
    current: Generation,
    previous: Generation,
    entries: usize,
    text_bytes: usize,
}

/// The memo (see the module docs).
#[derive(Default)]
pub(super) struct KeyMemo {
    inner: Mutex<Generations>,
}

/// What a kernel's entry is filed under: a fast hash of the fields the
/// entry is compared on (a collision costs a comparison, never a wrong key).
pub(super) fn slot(kernel: &Kernel) -> u64 {
    let mut h = FxHasher::default();
    kernel.text.hash(&mut h);
    kernel.symbol.hash(&mut h);
    kernel.options.hash(&mut h);
    kernel.canon.kernel_name.hash(&mut h);
    kernel.canon.bound.hash(&mut h);
    h.finish()
}

impl KeyMemo {
    /// The entry memoized for `kernel` under `backend`, if any.
    pub(super) fn find(
        &self,
        slot: u64,
        kernel: &Kernel,
        backend: BackendId<'_>,
    ) -> Option<Arc<Memoized>> {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if !g.is_for(backend) {
            return None;
        }
        let pick = |gen: &Generation| {
            gen.get(&slot)
                .and_then(|v| v.iter().find(|m| m.is_for(kernel)).cloned())
        };
        if let Some(m) = pick(&g.current) {
            return Some(m);
        }
        let m = pick(&g.previous)?;
        g.insert(slot, Arc::clone(&m));
        Some(m)
    }

    /// Memoizes `keyed`, derived for `kernel` from `extras` under
    /// `backend`, in place of what was memoized for it.
    pub(super) fn insert(
        &self,
        slot: u64,
        kernel: &Kernel,
        backend: BackendId<'_>,
        extras: KeyExtras,
        keyed: Keyed,
    ) {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if !g.is_for(backend) {
            *g = Generations {
                backend: (
                    backend.family.to_string(),
                    backend.key_version,
                    backend.identity.to_string(),
                ),
                ..Generations::default()
            };
        }
        let m = Arc::new(Memoized {
            kernel: kernel.clone(),
            extras,
            keyed,
        });
        g.insert(slot, m);
    }

    /// How many entries the current generation holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
    }
}

impl Generations {
    fn is_for(&self, b: BackendId<'_>) -> bool {
        self.backend.1 == b.key_version
            && self.backend.0 == b.family
            && self.backend.2 == b.identity
    }

    fn insert(&mut self, slot: u64, m: Arc<Memoized>) {
        let bucket = self.current.entry(slot).or_default();
        if let Some(old) = bucket.iter_mut().find(|o| o.is_for(&m.kernel)) {
            *old = m;
            return;
        }
        self.entries += 1;
        self.text_bytes += m.kernel.text.len();
        bucket.push(m);
        if self.entries > MAX_ENTRIES || self.text_bytes > MAX_TEXT_BYTES {
            self.previous = std::mem::take(&mut self.current);
            self.entries = 0;
            self.text_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Digest;

    fn keyed(n: u8) -> Keyed {
        Keyed {
            key: Digest([n; 32]),
            uncacheable: None,
            position_macros: Default::default(),
            pasting: Default::default(),
            reached: Default::default(),
            records_names: None,
        }
    }

    fn id(identity: &str) -> BackendId<'_> {
        BackendId {
            family: "cc",
            key_version: 0,
            identity,
        }
    }

    fn kernel(n: usize) -> Kernel {
        Kernel::new(format!("k{n}"), format!("void k{n}(void) {{}}\n"))
    }

    #[test]
    fn a_kernel_differing_in_any_field_is_not_found() {
        let memo = KeyMemo::default();
        let k = kernel(1).options(["-O2"]).bound(["x"]);
        memo.insert(slot(&k), &k, id("cc 1"), KeyExtras::default(), keyed(1));
        assert!(memo.find(slot(&k), &k, id("cc 1")).is_some());
        assert!(memo.find(slot(&k), &k, id("cc 2")).is_none(), "identity");
        let newer = BackendId {
            key_version: 1,
            ..id("cc 1")
        };
        assert!(memo.find(slot(&k), &k, newer).is_none(), "key version");
        let other = BackendId {
            family: "opencl",
            ..id("cc 1")
        };
        assert!(memo.find(slot(&k), &k, other).is_none(), "family");
        let mut others = vec![
            k.clone().options(["-O3"]),
            k.clone().bound(["y"]),
            Kernel {
                text: k.text.clone() + " ",
                ..k.clone()
            },
            Kernel {
                symbol: "other".into(),
                ..k.clone()
            },
        ];
        let mut rules = k.clone();
        rules.canon.infer = !rules.canon.infer;
        others.push(rules);
        for o in &others {
            // Filed under the kernel's own slot too: compared whole.
            assert!(memo.find(slot(o), o, id("cc 1")).is_none(), "{o:?}");
            assert!(memo.find(slot(&k), o, id("cc 1")).is_none(), "{o:?}");
        }
    }

    #[test]
    fn a_backend_change_forgets_everything() {
        let memo = KeyMemo::default();
        let (a, b) = (kernel(1), kernel(2));
        memo.insert(slot(&a), &a, id("cc 1"), KeyExtras::default(), keyed(1));
        memo.insert(slot(&b), &b, id("cc 2"), KeyExtras::default(), keyed(2));
        assert!(memo.find(slot(&a), &a, id("cc 1")).is_none());
        assert!(memo.find(slot(&a), &a, id("cc 2")).is_none());
        assert!(memo.find(slot(&b), &b, id("cc 2")).is_some());
    }

    #[test]
    fn the_memo_keeps_at_most_two_generations() {
        let memo = KeyMemo::default();
        let n = 3 * MAX_ENTRIES;
        for i in 0..n {
            let k = kernel(i);
            memo.insert(slot(&k), &k, id("cc"), KeyExtras::default(), keyed(0));
            assert!(memo.len() <= MAX_ENTRIES);
        }
        let first = kernel(0);
        assert!(
            memo.find(slot(&first), &first, id("cc")).is_none(),
            "dropped"
        );
        let last = kernel(n - 1);
        assert!(memo.find(slot(&last), &last, id("cc")).is_some());
    }

    #[test]
    fn a_hit_in_the_previous_generation_is_kept() {
        let memo = KeyMemo::default();
        let first = kernel(0);
        memo.insert(
            slot(&first),
            &first,
            id("cc"),
            KeyExtras::default(),
            keyed(0),
        );
        for i in 1..=MAX_ENTRIES {
            let k = kernel(i);
            memo.insert(slot(&k), &k, id("cc"), KeyExtras::default(), keyed(0));
        }
        // Now in the previous generation: found, and moved to the current.
        assert!(memo.find(slot(&first), &first, id("cc")).is_some());
        for i in MAX_ENTRIES + 1..=2 * MAX_ENTRIES {
            let k = kernel(i);
            memo.insert(slot(&k), &k, id("cc"), KeyExtras::default(), keyed(0));
        }
        assert!(memo.find(slot(&first), &first, id("cc")).is_some());
    }

    #[test]
    fn extras_compare_on_what_they_say() {
        let a = KeyExtras {
            validity: Some(crate::backend::KeyValidity::new(|| true)),
            ..KeyExtras::default()
        };
        let mut b = KeyExtras::default();
        assert!(same_extras(&a, &b));
        b.digests.push(Digest([1; 32]));
        assert!(!same_extras(&a, &b));
        let c = KeyExtras {
            uncacheable: Some("__TIME__".into()),
            ..KeyExtras::default()
        };
        assert!(!same_extras(&a, &c));
    }
}
