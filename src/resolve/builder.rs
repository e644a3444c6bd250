//! [`ResolverBuilder`]: a resolver's whole configuration in one place, each
//! setting with a stated default, read once when the resolver is built.

use super::split::Split;
use super::{BeforeCompile, Kernel, Resolver, Threads};
use crate::backend::Backend;
use crate::cache::code::Capacity;
use crate::cache::hooks::{self, Hooks};
use crate::store::Store;
use std::sync::Arc;

/// Something [`ResolverBuilder::store`] takes as the persistent store: an
/// `Arc` of any store, or an `Arc<dyn Store>` already.
pub trait IntoStore {
    /// The store, shared.
    fn into_store(self) -> Arc<dyn Store>;
}

impl IntoStore for Arc<dyn Store> {
    fn into_store(self) -> Arc<dyn Store> {
        self
    }
}

impl<S: Store + 'static> IntoStore for Arc<S> {
    fn into_store(self) -> Arc<dyn Store> {
        self
    }
}

/// Builds a [`Resolver`]. Every setting has a default:
///
/// | setting | default |
/// |---|---|
/// | [`store`](Self::store) | none: misses compile, nothing is stored |
/// | [`code_cache_bytes`](Self::code_cache_bytes) | `KCACHE_CODE_CACHE_BYTES`, else 256 MiB ([`crate::cache::code::DEFAULT_CAPACITY`]), read once by [`build`](Self::build) |
/// | [`split`](Self::split) | off: each group compiles as one program |
/// | [`measured_split`](Self::measured_split) | `false`: a split's program count comes from the kernel count |
/// | [`threads`](Self::threads) | [`Threads::Rayon`] |
/// | [`always_lock`](Self::always_lock) | `false`: an all-hit batch takes no lock |
/// | [`before_compile`](Self::before_compile) | none |
/// | [`hooks`](Self::hooks) | the process's ([`crate::cache::hooks::global`]) |
///
/// ```no_run
/// # use std::sync::Arc;
/// # fn demo(backend: Arc<kcache::backend::cc::CcBackend>,
/// #         store: Arc<kcache::store::MemoryStore>) {
/// use kcache::resolve::Resolver;
/// let resolver = Resolver::builder(backend)
///     .store(store)
///     .code_cache_bytes(64 << 20)
///     .build();
/// # }
/// ```
#[must_use = "a builder does nothing until `build`"]
pub struct ResolverBuilder<'h, B: Backend> {
    backend: Arc<B>,
    store: Option<Arc<dyn Store>>,
    code_cache_bytes: Option<u64>,
    split: Option<Split>,
    measured_split: bool,
    threads: Threads,
    always_lock: bool,
    before_compile: Option<BeforeCompile>,
    hooks: &'h Hooks,
}

impl<B: Backend + 'static> ResolverBuilder<'static, B> {
    pub(super) fn new(backend: Arc<B>) -> Self {
        ResolverBuilder {
            backend,
            store: None,
            code_cache_bytes: None,
            split: None,
            measured_split: false,
            threads: Threads::default(),
            always_lock: false,
            before_compile: None,
            hooks: hooks::global(),
        }
    }
}

impl<'h, B: Backend + 'static> ResolverBuilder<'h, B> {
    /// Looks code-cache misses up in `store` and stores what compiles (see
    /// [`Resolver::with_store`] for how a store error is handled).
    pub fn store(mut self, store: impl IntoStore) -> Self {
        self.store = Some(store.into_store());
        self
    }

    /// The store, or none.
    pub fn maybe_store(mut self, store: Option<Arc<dyn Store>>) -> Self {
        self.store = store;
        self
    }

    /// Caps the code cache at `bytes` (0 disables it), instead of
    /// `KCACHE_CODE_CACHE_BYTES`.
    pub fn code_cache_bytes(mut self, bytes: u64) -> Self {
        self.code_cache_bytes = Some(bytes);
        self
    }

    /// Compiles a batch's kernels of one option list as up to
    /// `split.max_programs` programs at once.
    pub fn split(mut self, split: Split) -> Self {
        self.split = Some(split);
        self
    }

    /// The split, or none (each group compiles as one program).
    pub fn maybe_split(mut self, split: Option<Split>) -> Self {
        self.split = split;
        self
    }

    /// Picks a split's program count from the measured cost of the
    /// resolver's compiles (see [`Resolver::with_measured_split`]).
    pub fn measured_split(mut self, measured: bool) -> Self {
        self.measured_split = measured;
        self
    }

    /// Where a split batch's other programs compile.
    pub fn threads(mut self, threads: Threads) -> Self {
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

    /// Listens to `hooks` instead of the process's.
    pub fn hooks<'g>(self, hooks: &'g Hooks) -> ResolverBuilder<'g, B> {
        ResolverBuilder {
            backend: self.backend,
            store: self.store,
            code_cache_bytes: self.code_cache_bytes,
            split: self.split,
            measured_split: self.measured_split,
            threads: self.threads,
            always_lock: self.always_lock,
            before_compile: self.before_compile,
            hooks,
        }
    }

    /// The resolver, its configuration read now (the environment included).
    pub fn build(self) -> Resolver<B> {
        let capacity = self
            .code_cache_bytes
            .map_or(Capacity::FromEnv, Capacity::Fixed);
        let mut r = Resolver::with(self.backend, capacity, self.hooks);
        r.store = self.store;
        r.split = self.split;
        r.measured_split = self.measured_split;
        r.threads = self.threads;
        r.always_lock = self.always_lock;
        r.before_compile = self.before_compile;
        r
    }
}

impl<B: Backend + 'static> Resolver<B> {
    /// A builder over `backend`, every setting at its default (see
    /// [`ResolverBuilder`]).
    pub fn builder(backend: Arc<B>) -> ResolverBuilder<'static, B> {
        ResolverBuilder::new(backend)
    }

    /// The split this resolver compiles with, if any.
    pub fn split(&self) -> Option<Split> {
        self.split
    }

    /// Where a split batch's other programs compile.
    pub fn threads(&self) -> Threads {
        self.threads
    }

    /// Whether an all-hit batch takes the lock too.
    pub fn always_locks(&self) -> bool {
        self.always_lock
    }

    /// Whether a `before_compile` callback is set.
    pub fn has_before_compile(&self) -> bool {
        self.before_compile.is_some()
    }

    /// The code cache's capacity in bytes.
    pub fn code_cache_bytes(&self) -> u64 {
        self.cache.capacity()
    }
}
