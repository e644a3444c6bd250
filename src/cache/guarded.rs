//! The generation-guarded per-device cache backends keep their driver handles
//! in (compiled programs, modules, pipelines), and [`KernelCache`], the one-line
//! way a backend wires such a cache to the [hooks](super::hooks).
//!
//! # The protocol
//!
//! [`GuardedCache::find_or_build`] looks a key up under the lock; on a miss it
//! notes the device's *epoch* and the cache's *generation*, builds **outside**
//! the lock (a compile takes long, and other keys must stay servable), then
//! re-checks under the lock:
//!
//! 1. a value installed for the key meanwhile wins: the freshly built one is
//!    destroyed and the winner returned, so a key always resolves to one value;
//! 2. else, if the device was evicted meanwhile ([`GuardedCache::evict_device`]
//!    bumps its epoch, even when nothing was cached), the build fails with
//!    [`GuardedError::DeviceDestroyedDuringBuild`];
//! 3. else, for a cache whose values borrow handles someone else releases
//!    ([`Handles::Borrowed`]), if the cache was cleared meanwhile
//!    ([`GuardedCache::clear`] bumps the generation), the build fails with
//!    [`GuardedError::ClearedDuringBuild`];
//! 4. else the value is installed.
//!
//! A rejected value is destroyed before the error is returned. Victims of an
//! eviction or a clear are destroyed outside the lock, every one of them even
//! when some fail; the first failure is returned.
//!
//! # Values outlive eviction; modules go before their context
//!
//! Values are handed out as `Arc<V>`: a caller's handle stays valid after the
//! cache evicted it. The *destroy hook* a cache is built with
//! ([`GuardedCache::with_destroy`]) runs when the cache lets go of a value, and
//! receives the cache's own `Arc` — so it can only drop that reference (or, via
//! [`Arc::try_unwrap`], release the value explicitly when the cache held the
//! last reference). It cannot invalidate an `Arc` a caller still holds.
//! The driver release itself belongs in the value's `Drop`, which runs when the
//! last holder lets go.
//!
//! Teardown order then holds by construction: a module handle holds an
//! `Arc` of the context it lives in, so the context's `Drop` (which destroys
//! the driver context) runs only after every module's `Drop` (which unloads
//! the module), whoever held the modules last:
//!
//! ```
//! use kcache::cache::guarded::{GuardedCache, GuardedError, Handles};
//! use std::sync::{Arc, Mutex};
//!
//! struct Context { log: Arc<Mutex<Vec<&'static str>>> }
//! impl Drop for Context {
//!     fn drop(&mut self) { self.log.lock().unwrap().push("context destroyed") }
//! }
//! struct Module { ctx: Arc<Context> }
//! impl Drop for Module {
//!     fn drop(&mut self) { self.ctx.log.lock().unwrap().push("module unloaded") }
//! }
//!
//! let log = Arc::new(Mutex::new(Vec::new()));
//! let ctx = Arc::new(Context { log: log.clone() });
//! let cache: GuardedCache<String, Module> = GuardedCache::new(Handles::Owned);
//! let module = cache
//!     .find_or_build("k".to_string(), 0, || Ok::<_, GuardedError>(Module { ctx: ctx.clone() }))
//!     .unwrap();
//!
//! cache.evict_device(0).unwrap(); // the cache lets go; `module` stays usable
//! drop(ctx);                      // the backend drops its context: still alive
//! assert!(log.lock().unwrap().is_empty());
//! drop(module);                   // last module gone: module, then context
//! assert_eq!(*log.lock().unwrap(), ["module unloaded", "context destroyed"]);
//! ```
//!
//! # Values no one holds
//!
//! A cache built with [`GuardedCache::sweep_unheld`] lets go of values only
//! it holds: whenever a device's entries grow past twice what was held at its
//! last sweep (and past [`SWEEP_MIN`]), installing one first sweeps that
//! device, handing every value the `held` test rejects to the destroy hook.
//! The layer above (the resolver's code cache, which is byte-capped) decides
//! what stays alive; the handle cache then never holds more than about twice
//! that, however long a search runs. The test runs under the lock, and only
//! the cache can hand out a value it alone holds, so a value found unheld
//! cannot be taken meanwhile.
//!
//! # Model checking
//!
//! The protocol is model-checked with loom (the tests in `loom_model` below):
//! `RUSTFLAGS="--cfg loom" cargo test --lib --release cache::guarded::loom_model`.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

#[cfg(all(loom, test))]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(all(loom, test)))]
use std::sync::{Mutex, MutexGuard};

use super::hooks::{panic_message, BoxError, HookError, Hooks, Registration};
use crate::key::{make_key, Source};

/// Errors at the guarded cache boundary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardedError {
    /// The device was evicted (torn down) while a value for it was being built;
    /// the value was destroyed, not installed.
    #[error("device {device} was destroyed while a value for it was being built")]
    DeviceDestroyedDuringBuild {
        /// The device index.
        device: usize,
    },
    /// The cache was cleared while a value over borrowed handles was being
    /// built; the value was destroyed, not installed.
    #[error("the cache was cleared while a value for device {device} was being built")]
    ClearedDuringBuild {
        /// The device index.
        device: usize,
    },
    /// Destroying values the cache let go of failed; every value was still
    /// handed to the destroy hook.
    #[error("{failed} of {victims} cached values failed to destroy; first: {source}")]
    Destroy {
        /// How many values the cache let go of.
        victims: usize,
        /// How many of them failed to destroy.
        failed: usize,
        /// The first failure.
        #[source]
        source: BoxError,
    },
    /// A teardown listener failed (from [`KernelCache::clear`]).
    #[error(transparent)]
    Listener(#[from] HookError),
}

/// A destroy hook panicked; the panic was caught so the other victims were
/// still destroyed.
#[derive(Debug, thiserror::Error)]
#[error("destroy panicked: {0}")]
pub struct DestroyPanicked(pub String);

/// Whether a cache's values own the handles they hold, or borrow handles whose
/// release a clear performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handles {
    /// Values own (or keep alive) what they hold: a value built across a clear
    /// is still good and is installed.
    Owned,
    /// Values borrow handles a clear releases: a value built across a clear may
    /// close over a released handle, so it is rejected with
    /// [`GuardedError::ClearedDuringBuild`] (the seed's `invalidated_by_clear`).
    Borrowed,
}

/// Counters, for tests and diagnostics.
///
/// Every value a build returned is counted in `builds` and, once the cache
/// lets go of it (lost race, rejected build, eviction, clear, drop), in
/// `destroys`, in the same critical section: whenever no `find_or_build` is
/// between its build and its re-check, `builds - destroys == len()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Lookups `find_or_build` answered from the cache.
    pub hits: u64,
    /// Values builds returned.
    pub builds: u64,
    /// Builds that returned an error (nothing to destroy).
    pub build_failures: u64,
    /// Built values that lost to a value installed meanwhile.
    pub lost_races: u64,
    /// Built values rejected because their device was evicted meanwhile.
    pub evicted_during_build: u64,
    /// Built values rejected because the (borrowing) cache was cleared meanwhile.
    pub cleared_during_build: u64,
    /// Values the cache let go of (each handed to the destroy hook once).
    pub destroys: u64,
    /// Destroy hook calls that failed or panicked.
    pub destroy_failures: u64,
}

type DestroyFn<V> = dyn Fn(Arc<V>) -> Result<(), BoxError> + Send + Sync;

type HeldFn<V> = dyn Fn(&Arc<V>) -> bool + Send + Sync;

/// The fewest entries a device holds before [`GuardedCache::sweep_unheld`]'s
/// sweeps start.
pub const SWEEP_MIN: usize = 32;

struct Slot<K, V> {
    epoch: u64,
    entries: HashMap<K, Arc<V>>,
    /// Past this many entries, an install sweeps (with `sweep_unheld`).
    sweep_at: usize,
}

impl<K, V> Default for Slot<K, V> {
    fn default() -> Self {
        Slot {
            epoch: 0,
            entries: HashMap::new(),
            sweep_at: SWEEP_MIN,
        }
    }
}

impl<K, V> Slot<K, V> {
    /// Takes out every value `held` rejects, and sets the next sweep's
    /// threshold.
    fn sweep(&mut self, held: &HeldFn<V>) -> Vec<Arc<V>> {
        let mut victims = Vec::new();
        self.entries.retain(|_, v| {
            let keep = held(v);
            if !keep {
                victims.push(v.clone());
            }
            keep
        });
        self.sweep_at = SWEEP_MIN.max(2 * self.entries.len());
        victims
    }
}

struct State<K, V> {
    // Slots stay after eviction: an epoch must never go back to a value an
    // in-flight build may have noted.
    devices: HashMap<usize, Slot<K, V>>,
    generation: u64,
    stats: Stats,
}

/// A per-device cache of values built outside its lock and installed only if
/// nothing invalidated them meanwhile (see the [module docs](self)).
///
/// Keys are scoped per device: the same key on two devices names two entries.
pub struct GuardedCache<K, V> {
    state: Mutex<State<K, V>>,
    destroy: Box<DestroyFn<V>>,
    handles: Handles,
    held: Option<Box<HeldFn<V>>>,
}

enum Rejected<V> {
    Lost(Arc<V>),
    Evicted,
    Cleared,
}

impl<K, V> GuardedCache<K, V>
where
    K: Hash + Eq,
{
    /// An empty cache whose values are simply dropped when it lets go of them.
    pub fn new(handles: Handles) -> Self {
        Self::with_destroy(handles, |_| Ok(()))
    }

    /// An empty cache that hands every value it lets go of to `destroy`.
    ///
    /// `destroy` runs outside the cache's lock and receives the cache's own
    /// reference: a value a caller still holds stays valid.
    pub fn with_destroy<F>(handles: Handles, destroy: F) -> Self
    where
        F: Fn(Arc<V>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        GuardedCache {
            state: Mutex::new(State {
                devices: HashMap::new(),
                generation: 0,
                stats: Stats::default(),
            }),
            destroy: Box::new(destroy),
            handles,
            held: None,
        }
    }

    /// Lets go of values no one else holds, by `held` (see the [module
    /// docs](self#values-no-one-holds)): `held(v)` answers whether anyone but
    /// the cache holds `v` (typically `Arc::strong_count(v) > 1`, or the same
    /// of a handle inside `v`). It runs under the cache's lock and must not
    /// use the cache.
    pub fn sweep_unheld<F>(mut self, held: F) -> Self
    where
        F: Fn(&Arc<V>) -> bool + Send + Sync + 'static,
    {
        self.held = Some(Box::new(held));
        self
    }

    /// Sweeps every device now (with [`GuardedCache::sweep_unheld`]; else
    /// nothing happens). Returns how many values were let go of; each went to
    /// the destroy hook, outside the lock.
    pub fn sweep(&self) -> Result<usize, GuardedError> {
        let Some(held) = &self.held else {
            return Ok(0);
        };
        let victims: Vec<Arc<V>> = {
            let mut s = self.lock();
            let s = &mut *s;
            let victims: Vec<_> = s
                .devices
                .values_mut()
                .flat_map(|slot| slot.sweep(&**held))
                .collect();
            s.stats.destroys += victims.len() as u64;
            victims
        };
        self.destroy_all(victims)
    }

    fn lock(&self) -> MutexGuard<'_, State<K, V>> {
        // No user code runs under the lock but `K`'s `Hash`/`Eq`; the state
        // stays consistent through a panic there.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value for `key` on `device`, built by `build` on a miss (see the
    /// [module docs](self) for what happens when the cache changes while
    /// `build` runs).
    ///
    /// `build` runs outside the lock, so two threads missing the same key may
    /// both build; one value wins, the other is destroyed. A build error is
    /// returned as is, and caches nothing.
    pub fn find_or_build<E, F>(&self, key: K, device: usize, build: F) -> Result<Arc<V>, E>
    where
        F: FnOnce() -> Result<V, E>,
        E: From<GuardedError>,
    {
        let (epoch, generation) = {
            let mut s = self.lock();
            let s = &mut *s;
            if let Some(slot) = s.devices.get(&device) {
                if let Some(v) = slot.entries.get(&key) {
                    s.stats.hits += 1;
                    return Ok(v.clone());
                }
            }
            let epoch = s.devices.get(&device).map_or(0, |slot| slot.epoch);
            (epoch, s.generation)
        };

        let built = match build() {
            Ok(v) => Arc::new(v),
            Err(e) => {
                self.lock().stats.build_failures += 1;
                return Err(e);
            }
        };

        let rejected = {
            let mut guard = self.lock();
            let s = &mut *guard;
            s.stats.builds += 1;
            let slot = s.devices.entry(device).or_default();
            // An installed value is valid by construction (eviction and clear
            // remove), so it wins even over a stale epoch.
            let rejected = if let Some(winner) = slot.entries.get(&key) {
                s.stats.lost_races += 1;
                Rejected::Lost(winner.clone())
            } else if slot.epoch != epoch {
                s.stats.evicted_during_build += 1;
                Rejected::Evicted
            } else if self.handles == Handles::Borrowed && s.generation != generation {
                s.stats.cleared_during_build += 1;
                Rejected::Cleared
            } else {
                slot.entries.insert(key, built.clone());
                let swept = match &self.held {
                    Some(held) if slot.entries.len() > slot.sweep_at => slot.sweep(&**held),
                    _ => Vec::new(),
                };
                s.stats.destroys += swept.len() as u64;
                drop(guard);
                if let Err(e) = self.destroy_all(swept) {
                    tracing::warn!(error = %e, device, "destroying values no one held failed");
                }
                return Ok(built);
            };
            s.stats.destroys += 1;
            rejected
        };

        if let Err(e) = self.destroy_all(vec![built]) {
            tracing::warn!(error = %e, device, "destroying a value the cache did not keep failed");
        }
        match rejected {
            Rejected::Lost(winner) => Ok(winner),
            Rejected::Evicted => Err(GuardedError::DeviceDestroyedDuringBuild { device }.into()),
            Rejected::Cleared => Err(GuardedError::ClearedDuringBuild { device }.into()),
        }
    }

    /// The cached value for `key` on `device`, without building (not counted
    /// as a hit).
    pub fn get<Q>(&self, key: &Q, device: usize) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lock()
            .devices
            .get(&device)
            .and_then(|slot| slot.entries.get(key))
            .cloned()
    }

    /// Whether `key` is cached on `device`.
    pub fn contains_key<Q>(&self, key: &Q, device: usize) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key, device).is_some()
    }

    /// Forgets every value of `device` and bumps its epoch (even when nothing
    /// was cached), so a build for it in flight is rejected. Returns how many
    /// values were let go of; each went to the destroy hook, outside the lock.
    pub fn evict_device(&self, device: usize) -> Result<usize, GuardedError> {
        let victims: Vec<Arc<V>> = {
            let mut s = self.lock();
            let s = &mut *s;
            let slot = s.devices.entry(device).or_default();
            slot.epoch += 1;
            let victims: Vec<_> = slot.entries.drain().map(|(_, v)| v).collect();
            s.stats.destroys += victims.len() as u64;
            victims
        };
        self.destroy_all(victims)
    }

    /// Forgets every value and bumps the generation, so a build in flight on a
    /// [`Handles::Borrowed`] cache is rejected. Returns how many values were
    /// let go of; each went to the destroy hook, outside the lock.
    pub fn clear(&self) -> Result<usize, GuardedError> {
        let victims: Vec<Arc<V>> = {
            let mut s = self.lock();
            let s = &mut *s;
            s.generation += 1;
            let victims: Vec<_> = s
                .devices
                .values_mut()
                .flat_map(|slot| slot.entries.drain().map(|(_, v)| v))
                .collect();
            s.stats.destroys += victims.len() as u64;
            victims
        };
        self.destroy_all(victims)
    }

    /// Hands every victim to the destroy hook, catching panics; all run, the
    /// first failure is returned.
    fn destroy_all(&self, victims: Vec<Arc<V>>) -> Result<usize, GuardedError> {
        let n = victims.len();
        let (failed, first) = destroy_each(&*self.destroy, victims);
        if failed == 0 {
            return Ok(n);
        }
        self.lock().stats.destroy_failures += failed as u64;
        Err(GuardedError::Destroy {
            victims: n,
            failed,
            source: first.expect("a failure was counted"),
        })
    }

    /// How many values are cached, over all devices.
    pub fn len(&self) -> usize {
        self.lock().devices.values().map(|s| s.entries.len()).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many values are cached for `device`.
    pub fn device_len(&self, device: usize) -> usize {
        self.lock()
            .devices
            .get(&device)
            .map_or(0, |s| s.entries.len())
    }

    /// The device's epoch: how many times it was evicted.
    pub fn epoch(&self, device: usize) -> u64 {
        self.lock().devices.get(&device).map_or(0, |s| s.epoch)
    }

    /// The cache's generation: how many times it was cleared.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    /// Whether values own or borrow their handles.
    pub fn handles(&self) -> Handles {
        self.handles
    }
}

/// Calls `destroy` on each victim, panics caught; returns the failure count
/// and the first failure.
fn destroy_each<V>(destroy: &DestroyFn<V>, victims: Vec<Arc<V>>) -> (usize, Option<BoxError>) {
    let mut failed = 0;
    let mut first = None;
    for v in victims {
        let outcome = match catch_unwind(AssertUnwindSafe(|| destroy(v))) {
            Ok(r) => r,
            Err(payload) => Err(Box::new(DestroyPanicked(panic_message(payload.as_ref()))) as _),
        };
        if let Err(e) = outcome {
            failed += 1;
            if first.is_none() {
                first = Some(e);
            } else {
                tracing::warn!(error = %e, "further destroy failure");
            }
        }
    }
    (failed, first)
}

impl<K, V> Drop for GuardedCache<K, V> {
    fn drop(&mut self) {
        let state = match self.state.get_mut() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        let victims: Vec<Arc<V>> = state
            .devices
            .values_mut()
            .flat_map(|slot| slot.entries.drain().map(|(_, v)| v))
            .collect();
        let n = victims.len();
        let (failed, first) = destroy_each(&*self.destroy, victims);
        if let Some(e) = first {
            tracing::warn!(error = %e, failed, victims = n, "destroying a dropped cache's values failed");
        }
    }
}

impl<K, V> fmt::Debug for GuardedCache<K, V>
where
    K: Hash + Eq,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("GuardedCache")
            .field("handles", &self.handles)
            .field(
                "len",
                &s.devices.values().map(|d| d.entries.len()).sum::<usize>(),
            )
            .field("generation", &s.generation)
            .field("stats", &s.stats)
            .finish()
    }
}

/// A backend's kernel cache, wired to the hooks: a [`GuardedCache`] keyed by
/// [`make_key`] plus a device-destroy listener for the backend's family.
///
/// Every backend wires the same way:
///
/// * `KernelCache::new(FAMILY, hooks, cache)` registers a listener that evicts
///   device `index` when `(backend, index)` is notified with `backend` equal to
///   `FAMILY` or a `FAMILY/<variant>`; a foreign family's notification evicts
///   nothing. The listener goes away with the `KernelCache`.
/// * [`KernelCache::key`] builds the key from the device index, kernel name,
///   source and options, and [`KernelCache::find_or_build`] passes the same
///   index as the device.
/// * the backend's `clear_cache` is [`KernelCache::clear`], which clears inside
///   [`Hooks::around_clear`];
/// * the backend's device-destroy path is [`KernelCache::destroy_device`]: it
///   notifies (evicting this cache's entries for the device, and telling the
///   layers above) before the teardown the backend passes runs, completes that
///   teardown even when a listener fails, and reports the failure after.
///
/// ```
/// use kcache::cache::guarded::{GuardedError, Handles, KernelCache, GuardedCache};
/// use kcache::cache::hooks::Hooks;
/// use kcache::key::Source;
///
/// let hooks = Hooks::new();
/// let kernels: KernelCache<String> =
///     KernelCache::new("opencl", &hooks, GuardedCache::new(Handles::Owned));
/// let source = Source::from("kernel void k() {}");
/// let key = KernelCache::<String>::key(0, "k", &source, &[("-O", "2")]);
/// let program = kernels
///     .find_or_build(key, 0, || Ok::<_, GuardedError>("program".to_string()))
///     .unwrap();
/// assert_eq!(*program, "program");
///
/// hooks.notify_device_destroy("cuda", 0).unwrap(); // foreign: nothing evicted
/// assert_eq!(kernels.cache().len(), 1);
/// kernels.destroy_device(0, || Ok::<_, GuardedError>(())).unwrap();
/// assert!(kernels.cache().is_empty());
/// ```
pub struct KernelCache<V> {
    family: String,
    hooks: Hooks,
    cache: Arc<GuardedCache<String, V>>,
    _listener: Registration,
}

impl<V> KernelCache<V>
where
    V: Send + Sync + 'static,
{
    /// Wraps `cache` as the kernel cache of backend `family`, registering its
    /// device-destroy listener on `hooks`.
    pub fn new(family: impl Into<String>, hooks: &Hooks, cache: GuardedCache<String, V>) -> Self {
        let family = family.into();
        let cache = Arc::new(cache);
        let weak: Weak<GuardedCache<String, V>> = Arc::downgrade(&cache);
        let listener = hooks.on_device_destroy_for(family.clone(), move |index| {
            // A notification may still reach a listener whose cache is gone.
            match weak.upgrade() {
                Some(cache) => cache
                    .evict_device(index)
                    .map(drop)
                    .map_err(HookError::listener),
                None => Ok(()),
            }
        });
        KernelCache {
            family,
            hooks: hooks.clone(),
            cache,
            _listener: listener,
        }
    }

    /// The key of a kernel on a device: [`make_key`] over the device index,
    /// the kernel name, the source and the options.
    pub fn key<O: AsRef<str>, P: AsRef<str>>(
        device: usize,
        name: &str,
        source: &Source,
        options: &[(O, P)],
    ) -> String {
        make_key(&device.to_string(), name, source, options)
    }

    /// [`GuardedCache::find_or_build`]; `device` must be the index in `key`.
    pub fn find_or_build<E, F>(&self, key: String, device: usize, build: F) -> Result<Arc<V>, E>
    where
        F: FnOnce() -> Result<V, E>,
        E: From<GuardedError>,
    {
        self.cache.find_or_build(key, device, build)
    }

    /// Clears the cache inside [`Hooks::around_clear`]: layers above are told
    /// before and after. Returns how many values were let go of.
    pub fn clear(&self) -> Result<usize, GuardedError> {
        self.hooks.around_clear(|| self.cache.clear())
    }

    /// Tears device `index` down: notifies device-destroy listeners (this
    /// cache's own evicts the device's entries), then runs `teardown`, then
    /// reports. See [`Hooks::around_device_destroy`].
    pub fn destroy_device<T, E>(
        &self,
        index: usize,
        teardown: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<HookError>,
    {
        self.hooks
            .around_device_destroy(&self.family, index, teardown)
    }

    /// The backend family this cache listens for.
    pub fn family(&self) -> &str {
        &self.family
    }

    /// The hooks the listener is registered on.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The underlying cache, for introspection.
    pub fn cache(&self) -> &GuardedCache<String, V> {
        &self.cache
    }
}

impl<V> fmt::Debug for KernelCache<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelCache")
            .field("family", &self.family)
            .field("cache", &self.cache)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;
