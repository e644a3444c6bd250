//! The batch resolver: a batch of rendered kernels in, a loaded program and
//! the symbol to call out, per kernel, compiling only what nothing earlier
//! compiled.
//!
//! [`Resolver::resolve`] follows one protocol:
//!
//! 1. Every kernel is canonicalized and keyed ([`crate::key::program_key`]:
//!    the canonical text and kernel token, the option list, the backend's
//!    identity, and what else the compile reads), then looked up in the code
//!    cache without the lock. A key is derived once per process for each
//!    kernel (text, symbol, options, renaming rules) and reused while the
//!    backend's [`crate::backend::KeyValidity`] holds (the cc backend
//!    re-stats each file the key rests on once per batch, or, in a process
//!    that keeps keying, trusts [`watch`]'s change reports instead) or the backend,
//!    asked again, answers the same extras; [`Census::keys_derived`] counts
//!    the keys derived anew.
//! 2. If any missed (or `always_lock` is set), the lock is taken and the misses
//!    are looked up again: another thread may just have published them. What
//!    is still missing is looked up in the persistent store, if there is one.
//!    The distinct keys still missing are then leased from the store
//!    ([`lease`]), so other processes compile each key once.
//! 3. `before_compile` runs, still under the lock.
//! 4. What remains is compiled there: one representative per distinct key
//!    (the first in batch order; the others share its program and symbol),
//!    grouped by option list in batch order. A group never holds two kernels
//!    under one symbol (a batch of search candidates often renders one name
//!    several times): such a kernel starts a group of its own. Unless the
//!    backend [isolates kernels](Backend::isolates_kernels), a kernel joins
//!    a group only when [`crate::canon::isolation`] proves it isolated from
//!    every member and the option list; others compile alone. A program's
//!    later kernels go to the backend without their shared directive prefix.
//! 5. Without a split, each group compiles as one program and is published
//!    as soon as its compile returned, so a failing group publishes nothing
//!    (earlier groups stay) and its error propagates; the next resolve
//!    compiles those kernels afresh. With a split ([`split::programs_for`],
//!    or [`split::programs_measured`] from the measured cost of this
//!    resolver's compiles under [`Resolver::with_measured_split`];
//!    [`split::chunks`]) that cuts any group, every program of the batch is
//!    compiled at once (the first on the calling thread, the others on rayon
//!    or scoped OS threads), all joined before `resolve` returns or fails; then
//!    each success is published in batch order and the first failure in batch
//!    order is returned.
//!
//! Each kernel's answer is the program holding its code and the symbol to
//! look it up by: the symbol it was *compiled* under, which a hit may have
//! taken from another name (a segment kernel renamed by position).
//!
//! An *uncacheable* kernel (its text uses `__TIME__`, `__DATE__` or
//! `__TIMESTAMP__`, or [`crate::backend::KeyExtras::uncacheable`] is set) is
//! never looked up, compiles alone on every resolve, and is never published
//! nor stored, like every kernel of a program whose [`Compiled::uncacheable`]
//! is set; its outcome is [`Outcome::Uncacheable`].
//!
//! The resolver listens to the [`crate::cache::hooks`]: a clear of any
//! backend's kernels, or a destroy of its own device, empties its code cache,
//! and a resolve whose compile spans such a clear does not publish what it
//! built (it still answers it: a program is reference counted, so the caller's
//! copy stays valid).

mod builder;
pub mod census;
mod concurrent;
mod groups;
mod key_memo;
pub mod lease;
pub mod split;
mod store_path;
pub mod stored;
pub mod watch;

use crate::backend::{Backend, BackendError, CompileJob, Compiled, KernelSource};
use crate::cache::code::{Capacity, CodeCache, CodeCacheStats};
use crate::cache::hooks::{self, HookError, Hooks, Registration};
use crate::canon::dialect::option_macros;
use crate::canon::{CanonOptions, MacroNames, Renamer};
use crate::key::{program_key, Digest, ProgramKeyInput};
use crate::store::Store;
pub use builder::{IntoStore, ResolverBuilder};
use census::Census;
use split::{chunks, Split};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
pub use store_path::StoreLookups;

/// One kernel of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The kernel's text as rendered: self-contained top-level definitions.
    pub text: String,
    /// The name the current rendering gives it (its entry point).
    pub symbol: String,
    /// The compiler option list it compiles under, in order.
    pub options: Vec<String>,
    /// What the renamer may rename. Its `kernel_name` is the symbol unless
    /// set otherwise.
    pub canon: CanonOptions,
}

impl Kernel {
    /// A kernel with no options, whose own name is `symbol`, renaming only
    /// symbols and scope locals until told its bound names.
    pub fn new(symbol: impl Into<String>, text: impl Into<String>) -> Self {
        let symbol = symbol.into();
        Kernel {
            text: text.into(),
            canon: CanonOptions {
                kernel_name: Some(symbol.clone()),
                ..CanonOptions::default()
            },
            symbol,
            options: Vec::new(),
        }
    }

    /// Sets the option list.
    pub fn options<S: Into<String>>(mut self, options: impl IntoIterator<Item = S>) -> Self {
        self.options = options.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the names the kernel binds.
    pub fn bound<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.canon.bound = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets every renamer option at once (the kernel name included).
    pub fn canon(mut self, canon: CanonOptions) -> Self {
        self.canon = canon;
        self
    }
}

/// How a kernel was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// From the code cache, or shared with an identical kernel of the batch.
    Reused,
    /// Loaded from the persistent store.
    Stored,
    /// Loaded from a tier shared with other machines (the Redis tier): most
    /// likely another machine's compile.
    Shared,
    /// Compiled by this resolve.
    Compiled,
    /// Compiled by this resolve, and never published nor stored: the
    /// compile depends on more than its key (`__TIME__`).
    Uncacheable,
}

/// One kernel's answer.
#[derive(Debug)]
pub struct Resolved<P> {
    /// The program holding the kernel's code.
    pub program: Arc<P>,
    /// The symbol to look the kernel up by in `program`.
    pub symbol: Arc<str>,
    /// How it was answered.
    pub outcome: Outcome,
    /// The kernel's program key.
    pub key: Digest,
}

impl<P> Clone for Resolved<P> {
    fn clone(&self) -> Self {
        Resolved {
            program: Arc::clone(&self.program),
            symbol: Arc::clone(&self.symbol),
            outcome: self.outcome,
            key: self.key,
        }
    }
}

/// A resolved batch: each kernel's answer, in batch order, and what the
/// resolve did.
#[derive(Debug)]
pub struct Batch<P> {
    /// One answer per kernel of the batch.
    pub answers: Vec<Resolved<P>>,
    /// What the resolve did.
    pub census: Census,
}

/// What the code cache holds per kernel: the program and the symbol the
/// kernel was compiled under.
struct Entry<P> {
    program: Arc<P>,
    symbol: Arc<str>,
}

impl<P> Clone for Entry<P> {
    fn clone(&self) -> Self {
        Entry {
            program: Arc::clone(&self.program),
            symbol: Arc::clone(&self.symbol),
        }
    }
}

/// A kernel's answer while a resolve runs: none yet, or an entry and how it
/// was found.
type Answer<P> = Option<(Entry<P>, Outcome)>;

/// Errors at the resolver's boundary.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A kernel could not be keyed (the backend cannot see everything its
    /// compile would read).
    #[error("cannot key kernel `{symbol}`")]
    Key {
        /// The kernel.
        symbol: String,
        /// Why.
        #[source]
        source: BackendError,
    },
    /// A program failed to compile.
    #[error("program {program} of {programs} ({}) failed to compile", kernels.join(", "))]
    Compile {
        /// The program's number in batch order.
        program: usize,
        /// How many programs the batch compiled.
        programs: usize,
        /// The kernels it held.
        kernels: Vec<String>,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A compile thread panicked.
    #[error("the compile of program {program} panicked: {message}")]
    Panicked {
        /// The program's number in batch order.
        program: usize,
        /// The panic's message.
        message: String,
    },
}

/// Where a split batch's other programs compile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Threads {
    /// On rayon's pool.
    #[default]
    Rayon,
    /// On scoped OS threads of their own.
    Os,
}

type BeforeCompile = Box<dyn Fn(&[&Kernel]) + Send + Sync>;

/// A kernel's key, and what else the resolve needs from keying it.
#[derive(Clone)]
struct Keyed {
    key: Digest,
    /// Why it can never be cached, when it cannot.
    uncacheable: Option<String>,
    /// The backend's position macros, for the isolation check.
    position_macros: Arc<MacroNames>,
    /// The backend's macros that may paste and the words of the outside
    /// bodies, for the isolation check (see [`crate::canon::pastes`]).
    pasting: Arc<MacroNames>,
    reached: Arc<MacroNames>,
    /// Why it compiles alone, when its compile records its own spellings
    /// (see [`crate::backend::KeyExtras::records_names`]).
    records_names: Option<String>,
}

/// Resolves batches of kernels against one backend (one device).
pub struct Resolver<B: Backend> {
    backend: Arc<B>,
    cache: CodeCache<Digest, Entry<B::Program>>,
    lock: Mutex<()>,
    split: Option<Split>,
    /// Whether a split's program count comes from `costs`.
    measured_split: bool,
    costs: split::Costs,
    threads: Threads,
    always_lock: bool,
    before_compile: Option<BeforeCompile>,
    store: Option<Arc<dyn Store>>,
    store_errors: AtomicU64,
    store_warned: AtomicBool,
    store_lookups: store_path::LookupCounters,
    keys: key_memo::KeyMemo,
    _listeners: Vec<Registration>,
}

impl<B: Backend + 'static> Resolver<B> {
    /// A resolver over `backend`, every setting at its default (what
    /// `Resolver::builder(backend).build()` gives; see [`ResolverBuilder`]):
    /// a code cache sized by `KCACHE_CODE_CACHE_BYTES`, read now, listening
    /// to the process's hooks.
    pub fn new(backend: Arc<B>) -> Self {
        Self::with(backend, Capacity::FromEnv, hooks::global())
    }

    /// A resolver with its own capacity (a [`Capacity::FromEnv`] one is read
    /// now), listening to `hooks`.
    pub fn with(backend: Arc<B>, capacity: Capacity, hooks: &Hooks) -> Self {
        let cache = CodeCache::new(capacity);
        let on_clear = {
            let cache = cache.clone();
            hooks.on_clear_all(move || {
                cache.clear();
                Ok::<(), HookError>(())
            })
        };
        let on_destroy = {
            let cache = cache.clone();
            let device = backend.device_index();
            hooks.on_device_destroy_for(backend.family(), move |index| {
                if index == device {
                    cache.clear();
                }
                Ok(())
            })
        };
        Resolver {
            backend,
            cache,
            lock: Mutex::new(()),
            split: None,
            measured_split: false,
            costs: Default::default(),
            threads: Threads::default(),
            always_lock: false,
            before_compile: None,
            store: None,
            store_errors: AtomicU64::new(0),
            store_warned: AtomicBool::new(false),
            store_lookups: Default::default(),
            keys: Default::default(),
            _listeners: vec![on_clear, on_destroy],
        }
    }

    /// Looks kernels the code cache misses up in `store` before compiling
    /// them, and stores what it compiles. A store error never fails a
    /// resolve: it is logged (a warning the first time), counted, and the
    /// compile proceeds.
    pub fn with_store(mut self, store: Option<Arc<dyn Store>>) -> Self {
        self.store = store;
        self
    }

    /// The persistent store, if any.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    /// How many store operations failed (each was logged, and the resolve
    /// went on without the store).
    pub fn store_errors(&self) -> u64 {
        self.store_errors.load(Ordering::Relaxed)
    }

    /// Compiles a batch's kernels of one option list as up to
    /// `split.max_programs` programs at once.
    pub fn with_split(mut self, split: Option<Split>) -> Self {
        self.split = split;
        self
    }

    /// Where a split batch's other programs compile.
    pub fn with_threads(mut self, threads: Threads) -> Self {
        self.threads = threads;
        self
    }

    /// Takes the lock (and runs `before_compile`) even for an all-hit batch.
    pub fn always_lock(mut self, always: bool) -> Self {
        self.always_lock = always;
        self
    }

    /// Runs `f` under the lock ahead of the compiles, with the kernels about
    /// to compile (none for an all-hit batch under `always_lock`).
    pub fn before_compile(mut self, f: impl Fn(&[&Kernel]) + Send + Sync + 'static) -> Self {
        self.before_compile = Some(Box::new(f));
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }

    /// The code cache's counters.
    pub fn cache_stats(&self) -> CodeCacheStats {
        self.cache.stats()
    }

    /// Empties the code cache (what a clear notification does).
    pub fn clear(&self) {
        self.cache.clear();
    }

    /// The program key of `kernel` (see the module docs).
    pub fn key(&self, kernel: &Kernel) -> Result<Digest, ResolveError> {
        self.keyed(kernel, &mut 0).map(|k| k.key)
    }

    /// `kernel`'s key, from the key memo while what it was derived from
    /// holds (see [`key_memo`]); `derived` counts the keys derived anew.
    fn keyed(&self, kernel: &Kernel, derived: &mut u64) -> Result<Keyed, ResolveError> {
        let backend = key_memo::BackendId {
            family: self.backend.family(),
            key_version: self.backend.key_version(),
            identity: self.backend.identity(),
        };
        let slot = key_memo::slot(kernel);
        let memoized = self.keys.find(slot, kernel, backend);
        if let Some(m) = &memoized {
            if m.extras.validity.as_ref().is_some_and(|v| v.holds()) {
                return Ok(m.keyed.clone());
            }
        }
        let source = KernelSource {
            symbol: &kernel.symbol,
            text: &kernel.text,
        };
        let extras = self
            .backend
            .key_extras(&source, &kernel.options)
            .map_err(|source| ResolveError::Key {
                symbol: kernel.symbol.clone(),
                source,
            })?;
        let keyed = match memoized {
            Some(m) if key_memo::same_extras(&m.extras, &extras) => m.keyed.clone(),
            _ => {
                *derived += 1;
                self.derive(kernel, &extras)
            }
        };
        self.keys
            .insert(slot, kernel, backend, extras, keyed.clone());
        Ok(keyed)
    }

    /// Canonicalizes and digests `kernel` under `extras`.
    fn derive(&self, kernel: &Kernel, extras: &crate::backend::KeyExtras) -> Keyed {
        // Macros the options define with position or time macros count too.
        let (from_options, options_uncacheable) = option_macros(&kernel.options);
        let position_macros = if from_options.is_empty() {
            Arc::clone(&extras.position_macros)
        } else {
            let mut all = (*extras.position_macros).clone();
            all.extend(from_options.iter());
            Arc::new(all)
        };
        let mut renamer = Renamer::new(&kernel.canon)
            .with_macros(Arc::clone(&extras.macros))
            .with_reached(Arc::clone(&extras.reached))
            .with_position_macros(Arc::clone(&position_macros))
            .with_pasting(Arc::clone(&extras.pasting));
        if let Some(why) = &extras.records_names {
            renamer = renamer.raw_keyed(why.clone());
        }
        let form = renamer.key_form(kernel.text.as_bytes());
        let extra = &extras.digests;
        let token = form.kernel_token.map(String::from_utf8_lossy);
        let key = program_key(&ProgramKeyInput {
            backend: self.backend.family(),
            backend_key_version: self.backend.key_version(),
            identity: self.backend.identity(),
            options: &kernel.options,
            canonical: &form.text,
            kernel_token: token.as_deref(),
            extra,
        });
        Keyed {
            key,
            uncacheable: extras
                .uncacheable
                .clone()
                .or(options_uncacheable)
                .or(form.uncacheable),
            position_macros,
            pasting: Arc::clone(&extras.pasting),
            reached: Arc::clone(&extras.reached),
            records_names: extras.records_names.clone(),
        }
    }

    /// Answers every kernel of `batch` with a program and a symbol (see the
    /// module docs for the protocol).
    pub fn resolve(&self, batch: &[Kernel]) -> Result<Vec<Resolved<B::Program>>, ResolveError> {
        self.resolve_counted(batch).map(|b| b.answers)
    }

    /// [`Resolver::resolve`], with what the resolve did. The census is also
    /// added to any [`census::with_census`] running on this thread.
    pub fn resolve_counted(&self, batch: &[Kernel]) -> Result<Batch<B::Program>, ResolveError> {
        // One keying batch: each header a key reads is stat-checked once.
        let mut derived = 0;
        let keyed = crate::backend::key_batch(|| {
            batch
                .iter()
                .map(|k| self.keyed(k, &mut derived))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let keys: Vec<Digest> = keyed.iter().map(|k| k.key).collect();
        let mut census = Census {
            kernels_requested: batch.len() as u64,
            keys_derived: derived,
            ..Census::default()
        };
        let mut answers: Vec<Answer<B::Program>> = keyed
            .iter()
            .map(|k| match k.uncacheable {
                Some(_) => None,
                None => self.cache.find(&k.key).map(|e| (e, Outcome::Reused)),
            })
            .collect();
        let all_hit = answers.iter().all(Option::is_some);
        let result = if all_hit && !self.always_lock {
            Ok(())
        } else {
            self.resolve_locked(batch, &keyed, &keys, &mut answers, &mut census)
        };
        census.kernels_reused = answers
            .iter()
            .filter(|a| matches!(a, Some((_, Outcome::Reused))))
            .count() as u64;
        census::record(&census);
        result?;
        let answers = answers
            .into_iter()
            .zip(keys)
            .map(|(a, key)| {
                let (entry, outcome) = a.expect("every kernel is answered once resolve succeeds");
                Resolved {
                    program: entry.program,
                    symbol: entry.symbol,
                    outcome,
                    key,
                }
            })
            .collect();
        Ok(Batch { answers, census })
    }

    fn resolve_locked(
        &self,
        batch: &[Kernel],
        keyed: &[Keyed],
        keys: &[Digest],
        answers: &mut [Answer<B::Program>],
        census: &mut Census,
    ) -> Result<(), ResolveError> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = self.cache.generation();
        let uncacheable: Vec<bool> = keyed.iter().map(|k| k.uncacheable.is_some()).collect();
        for (i, key) in keys.iter().enumerate() {
            if answers[i].is_none() && !uncacheable[i] {
                answers[i] = self.cache.find(key).map(|e| (e, Outcome::Reused));
            }
        }
        let stored_before = census.kernels_stored;
        let mut looked_up = 0;
        if self.store.is_some() {
            let start = Instant::now();
            looked_up = self.load_stored(keys, &uncacheable, answers, generation, census);
            census.load_time += start.elapsed();
        }
        // Held until this function returns: after publishing and storing.
        let _leases = self.take_leases(keys, &uncacheable, answers, generation, census);
        // After the leases: a kernel waited for and then found is one hit.
        self.count_store_lookups(census.kernels_stored - stored_before, looked_up);
        // One representative per distinct key, first in batch order; an
        // uncacheable kernel is its own.
        let mut representative: HashMap<Digest, usize> = HashMap::new();
        let mut reps = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if answers[i].is_some() {
                continue;
            }
            if uncacheable[i] {
                reps.push(i);
            } else if !representative.contains_key(key) {
                representative.insert(*key, i);
                reps.push(i);
            }
        }
        if let Some(f) = &self.before_compile {
            let kernels: Vec<&Kernel> = reps.iter().map(|&i| &batch[i]).collect();
            f(&kernels);
        }
        if reps.is_empty() {
            return Ok(());
        }
        census.kernels_compiled = reps.len() as u64;
        let groups = if self.backend.isolates_kernels() {
            // Compiled each on its own, but an uncacheable kernel's program
            // is never published: it holds that kernel alone.
            groups::group_by_options(batch, &reps, |i, j| !uncacheable[i] && !uncacheable[j])
        } else {
            groups::isolated_groups(batch, keyed, &reps)
        };
        let split = self.split.filter(|_| self.backend.split_capable());
        let programs: Vec<Vec<usize>> = groups
            .iter()
            .flat_map(|g| match split {
                Some(s) => chunks(self.programs(s, g.len()), g),
                None => vec![g.clone()],
            })
            .collect();
        let concurrent = programs.len() > groups.len();
        let n = programs.len();
        let mut outcome = Ok(());
        let mut finish =
            |p: usize, result: Result<Compiled<B::Program>, ResolveError>, census: &mut Census| {
                if self.backend.split_capable() {
                    census.split_capable_compiles += 1;
                }
                match result {
                    Ok(c) => {
                        census.programs_compiled += 1;
                        let kernels = &programs[p];
                        if c.uncacheable.is_some() || kernels.iter().any(|&i| uncacheable[i]) {
                            census.kernels_uncacheable += kernels.len() as u64;
                            groups::answer_uncacheable(batch, kernels, &c, answers);
                        } else {
                            self.publish(batch, keys, kernels, c, generation, answers);
                        }
                    }
                    Err(e) => {
                        if outcome.is_ok() {
                            outcome = Err(e);
                        }
                    }
                }
            };
        if concurrent {
            let start = Instant::now();
            let results = self.compile_all(batch, &programs, &uncacheable);
            census.compile_time += start.elapsed();
            census.concurrent_compiles += n as u64;
            // Every success is published in batch order; the first failure wins.
            for (p, r) in results.into_iter().enumerate() {
                finish(p, r, census);
            }
        } else {
            // Each group is published as soon as it compiled; a failure stops
            // the batch with the earlier groups published.
            for (p, kernels) in programs.iter().enumerate() {
                let start = Instant::now();
                let fresh = kernels.iter().any(|&i| uncacheable[i]);
                let r = self.compile_one(batch, kernels, p, n, fresh);
                census.compile_time += start.elapsed();
                let failed = r.is_err();
                finish(p, r, census);
                if failed {
                    break;
                }
            }
        }
        if outcome.is_ok() {
            // Kernels sharing a representative's key share its answer.
            for (i, key) in keys.iter().enumerate() {
                if answers[i].is_none() {
                    let r = representative[key];
                    let (entry, outcome) =
                        answers[r].clone().expect("representatives are answered");
                    let outcome = match outcome {
                        Outcome::Uncacheable => Outcome::Uncacheable,
                        _ => Outcome::Reused,
                    };
                    answers[i] = Some((entry, outcome));
                }
            }
        }
        outcome
    }

    /// Publishes one compiled program under its kernels' keys (unless the
    /// cache was cleared since `generation`) and answers those kernels.
    fn publish(
        &self,
        batch: &[Kernel],
        keys: &[Digest],
        kernels: &[usize],
        compiled: Compiled<B::Program>,
        generation: u64,
        answers: &mut [Answer<B::Program>],
    ) {
        let entries: Vec<(Digest, Entry<B::Program>)> = kernels
            .iter()
            .map(|&i| {
                let entry = Entry {
                    program: Arc::clone(&compiled.program),
                    symbol: Arc::from(batch[i].symbol.as_str()),
                };
                answers[i] = Some((entry.clone(), Outcome::Compiled));
                (keys[i], entry)
            })
            .collect();
        if !self
            .cache
            .publish_if_generation(generation, entries, compiled.binary.len() as u64)
        {
            tracing::debug!(
                "a clear spanned the compile: its programs are answered, not published"
            );
        }
        if self.store.is_some() {
            let symbols: Vec<(Digest, &str)> = kernels
                .iter()
                .map(|&i| (keys[i], batch[i].symbol.as_str()))
                .collect();
            self.store_program(&compiled.binary, &symbols);
        }
    }

    /// The sources of one program: every kernel after the first without
    /// the directive prefix it shares with the first (see the module docs).
    fn job<'a>(&self, batch: &'a [Kernel], kernels: &[usize]) -> Vec<Cow<'a, str>> {
        let shared = kernels.len() > 1 && !self.backend.isolates_kernels();
        kernels
            .iter()
            .enumerate()
            .map(|(n, &i)| groups::unit_text(&batch[i].text, shared && n > 0))
            .collect()
    }

    fn compile_one(
        &self,
        batch: &[Kernel],
        kernels: &[usize],
        program: usize,
        programs: usize,
        fresh: bool,
    ) -> Result<Compiled<B::Program>, ResolveError> {
        let texts = self.job(batch, kernels);
        let sources: Vec<KernelSource<'_>> = kernels
            .iter()
            .zip(&texts)
            .map(|(&i, text)| KernelSource {
                symbol: &batch[i].symbol,
                text,
            })
            .collect();
        let options = &batch[kernels[0]].options;
        let start = Instant::now();
        let compiled = self.backend.compile(&CompileJob {
            kernels: &sources,
            options,
            group: program,
            n_groups: programs,
            fresh,
        });
        if compiled.is_ok() {
            self.costs.record(kernels.len(), start.elapsed());
        }
        compiled.map_err(|source| ResolveError::Compile {
            program,
            programs,
            kernels: kernels.iter().map(|&i| batch[i].symbol.clone()).collect(),
            source,
        })
    }
}
