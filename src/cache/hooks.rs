//! Cache hooks: teardown notifications carried up from the backends.
//!
//! Compiled kernels are memoized in layers: each backend keeps its own driver
//! handles per device (a [`GuardedCache`](super::guarded::GuardedCache)), and
//! layers above (the code cache, the resolver) keep programs built over them.
//! Only a backend owns its handles, so only it releases them, but the layers
//! above sit higher in the crate than any one backend and must forget what they
//! memoized first. This module is that back-channel: a layer registers a
//! callback here, and a backend fires it when it is about to release handles.
//!
//! Listeners only drop memoization; they own no backend resources.
//!
//! # Semantics
//!
//! * The registry is mutex-guarded, but callbacks run *outside* the lock, on a
//!   snapshot taken when the notification starts: a callback may register
//!   another listener, drop its own [`Registration`], or touch any cache.
//!   (A listener registered or unregistered during a notification takes
//!   effect from the next one.)
//! * Every callback runs even when one fails; the first failure is returned
//!   after all of them ran, the others are logged. A panicking callback is
//!   caught and reported as [`HookError::Panicked`]; it stops nobody else.
//! * [`Hooks::around_clear`] notifies clear-all listeners before *and* after
//!   the clear. The first notification drops what is already memoized; the
//!   second catches a build that started after the first one and closed over a
//!   handle the clear then released (see
//!   [`Handles::Borrowed`](super::guarded::Handles::Borrowed)). A listener
//!   failure never stops the clear and is reported only once the clear
//!   completed; the clear's own failure wins. Nested `around_clear` calls on the
//!   same thread and registry notify once per side, not once per level; a clear
//!   on another thread notifies on its own.
//! * Device-destroy listeners are called with `(backend, index)`. `backend` is
//!   a family name (`cuda`) or a `<family>/<variant>` refinement of it
//!   (`cuda/ptx`); [`family_matches`] accepts both. `index` is that backend's
//!   own device index, so a listener must match the family before it looks at
//!   the index: index 0 of one backend is not index 0 of another.
//!
//! # Tests and the process-wide registry
//!
//! [`Hooks`] is a value; [`global()`] is the process-wide instance the free
//! functions of this module use. Tests build their own `Hooks` so that tests
//! running in parallel threads never see each other's notifications.
//!
//! # Example
//!
//! ```
//! use kcache::cache::hooks::{family_matches, HookError, Hooks};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//!
//! let hooks = Hooks::new();
//! let seen = Arc::new(AtomicUsize::new(0));
//! let s = seen.clone();
//! let _listener = hooks.on_device_destroy(move |backend, _index| {
//!     if family_matches("cuda", backend) {
//!         s.fetch_add(1, Ordering::SeqCst);
//!     }
//!     Ok(())
//! });
//! hooks.notify_device_destroy("cuda/ptx", 0).unwrap();
//! hooks.notify_device_destroy("opencl", 0).unwrap();
//! assert_eq!(seen.load(Ordering::SeqCst), 1);
//!
//! // A clear notifies before and after itself, and the clear's value comes back.
//! let cleared = hooks.around_clear(|| Ok::<_, HookError>(3)).unwrap();
//! assert_eq!(cleared, 3);
//! ```

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

/// A boxed error a listener (or a destroy hook) reports.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What was being notified when a listener failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A backend is tearing down one of its devices.
    DeviceDestroy {
        /// The backend family (or `<family>/<variant>`) that notified.
        backend: String,
        /// The backend's own device index.
        index: usize,
    },
    /// A backend's whole kernel cache is being cleared.
    ClearAll,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::DeviceDestroy { backend, index } => {
                write!(f, "destroy of {backend} device {index}")
            }
            Event::ClearAll => f.write_str("clear of all kernel caches"),
        }
    }
}

/// Errors at the hooks boundary: a listener that failed or panicked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// A listener reported a failure (build it with [`HookError::listener`]).
    #[error("cache listener failed: {0}")]
    Listener(#[source] BoxError),
    /// A listener panicked; the panic was caught so the others still ran.
    #[error("cache listener panicked during {event}: {message}")]
    Panicked {
        /// The notification the listener was answering.
        event: Event,
        /// The panic's message, when it carried one.
        message: String,
    },
}

impl HookError {
    /// Wraps any error a listener wants to report.
    pub fn listener(error: impl Into<BoxError>) -> Self {
        HookError::Listener(error.into())
    }
}

/// Whether a device whose framework is `framework` belongs to the backend
/// family `family`: the framework equals the family (`cuda`) or refines it as
/// `<family>/<variant>` (`cuda/ptx`). An empty family matches nothing, and a
/// longer name is not a refinement (`cudax` is not `cuda`).
pub fn family_matches(family: &str, framework: &str) -> bool {
    if family.is_empty() {
        return false;
    }
    match framework.strip_prefix(family) {
        Some("") => true,
        Some(rest) => rest.len() > 1 && rest.starts_with('/'),
        None => false,
    }
}

/// The message a panic payload carries, if it is a string.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

type DeviceDestroyFn = dyn Fn(&str, usize) -> Result<(), HookError> + Send + Sync;
type ClearAllFn = dyn Fn() -> Result<(), HookError> + Send + Sync;

#[derive(Clone)]
enum Listener {
    DeviceDestroy(Arc<DeviceDestroyFn>),
    ClearAll(Arc<ClearAllFn>),
}

#[derive(Default)]
struct Listeners {
    next_id: u64,
    // Ordered by id, so listeners run in registration order.
    by_id: BTreeMap<u64, Listener>,
}

struct Inner {
    // Identifies this registry in the per-thread nesting record; never reused,
    // unlike an address.
    id: u64,
    listeners: Mutex<Listeners>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Listeners> {
        // Nothing runs user code under this lock, so a poisoned registry is
        // still consistent.
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A registry of teardown listeners.
///
/// Cloning is cheap and yields a handle to the same registry.
#[derive(Clone)]
pub struct Hooks {
    inner: Arc<Inner>,
}

impl Default for Hooks {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = self.inner.lock();
        let device_destroy = l
            .by_id
            .values()
            .filter(|l| matches!(l, Listener::DeviceDestroy(_)))
            .count();
        f.debug_struct("Hooks")
            .field("device_destroy_listeners", &device_destroy)
            .field("clear_all_listeners", &(l.by_id.len() - device_destroy))
            .finish()
    }
}

/// A listener's registration: dropping it unregisters the listener.
///
/// A notification already in progress may still call the listener once (it
/// runs on a snapshot), so a listener must stay safe to call until then, for
/// instance by holding a `Weak` of what it touches.
#[must_use = "dropping the registration unregisters the listener at once"]
pub struct Registration {
    registry: Weak<Inner>,
    id: u64,
}

impl Registration {
    /// Keeps the listener registered for the registry's whole life.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(inner) = self.registry.upgrade() else {
            return;
        };
        // The callback is dropped after the lock is released: what it captured
        // may unregister other listeners when it drops.
        let removed = inner.lock().by_id.remove(&self.id);
        drop(removed);
    }
}

thread_local! {
    // Registries this thread is inside `around_clear` of (one entry per level).
    static CLEARING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as inside `around_clear` of one registry until dropped,
/// so the mark goes away even when the clear panics.
struct ClearingMark(u64);

impl ClearingMark {
    /// Marks the thread; says whether it already was inside a clear of `id`.
    fn enter(id: u64) -> (ClearingMark, bool) {
        let nested = CLEARING.with(|c| {
            let mut c = c.borrow_mut();
            let nested = c.contains(&id);
            c.push(id);
            nested
        });
        (ClearingMark(id), nested)
    }
}

impl Drop for ClearingMark {
    fn drop(&mut self) {
        // `try_with`: nothing to unmark once the thread's locals are gone.
        let _ = CLEARING.try_with(|c| {
            let mut c = c.borrow_mut();
            if let Some(pos) = c.iter().rposition(|&id| id == self.0) {
                c.remove(pos);
            }
        });
    }
}

/// Runs every callback, catching panics; returns the first failure and logs
/// the others.
fn run_all<F: ?Sized>(
    callbacks: &[Arc<F>],
    event: impl Fn() -> Event,
    call: impl Fn(&F) -> Result<(), HookError>,
) -> Result<(), HookError> {
    let mut first = None;
    for cb in callbacks {
        let outcome = match catch_unwind(AssertUnwindSafe(|| call(cb))) {
            Ok(r) => r,
            Err(payload) => Err(HookError::Panicked {
                event: event(),
                message: panic_message(payload.as_ref()),
            }),
        };
        if let Err(e) = outcome {
            if first.is_none() {
                first = Some(e);
            } else {
                tracing::warn!(error = %e, "further cache listener failure during {}", event());
            }
        }
    }
    first.map_or(Ok(()), Err)
}

impl Hooks {
    /// An empty registry.
    pub fn new() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Hooks {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                listeners: Mutex::new(Listeners::default()),
            }),
        }
    }

    fn register(&self, listener: Listener) -> Registration {
        let mut l = self.inner.lock();
        let id = l.next_id;
        l.next_id += 1;
        l.by_id.insert(id, listener);
        Registration {
            registry: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// The listeners `pick` selects, in registration order; the lock is
    /// released before any of them runs.
    fn snapshot<T>(&self, pick: impl Fn(&Listener) -> Option<T>) -> Vec<T> {
        self.inner.lock().by_id.values().filter_map(pick).collect()
    }

    /// Registers `f`, called as `f(backend, index)` whenever a backend is about
    /// to tear down one of its devices. Match `backend` with
    /// [`family_matches`] before looking at `index`.
    pub fn on_device_destroy<F>(&self, f: F) -> Registration
    where
        F: Fn(&str, usize) -> Result<(), HookError> + Send + Sync + 'static,
    {
        self.register(Listener::DeviceDestroy(Arc::new(f)))
    }

    /// Registers `f`, called as `f(index)` whenever a device of `family` (or of
    /// a `<family>/<variant>` refinement) is about to be torn down.
    pub fn on_device_destroy_for<F>(&self, family: impl Into<String>, f: F) -> Registration
    where
        F: Fn(usize) -> Result<(), HookError> + Send + Sync + 'static,
    {
        let family = family.into();
        self.on_device_destroy(move |backend, index| {
            if family_matches(&family, backend) {
                f(index)
            } else {
                Ok(())
            }
        })
    }

    /// Runs every device-destroy listener with `(backend, index)`; returns the
    /// first failure after all of them ran.
    ///
    /// A backend calls this from its device-destroy path *before* it releases
    /// anything, and completes its teardown even when this fails: prefer
    /// [`Hooks::around_device_destroy`], which has that shape.
    pub fn notify_device_destroy(&self, backend: &str, index: usize) -> Result<(), HookError> {
        let snapshot = self.snapshot(|l| match l {
            Listener::DeviceDestroy(f) => Some(f.clone()),
            Listener::ClearAll(_) => None,
        });
        run_all(
            &snapshot,
            || Event::DeviceDestroy {
                backend: backend.to_string(),
                index,
            },
            |f| f(backend, index),
        )
    }

    /// Registers `f`, called whenever a backend's whole kernel cache is cleared
    /// (twice per clear: see [`Hooks::around_clear`]).
    pub fn on_clear_all<F>(&self, f: F) -> Registration
    where
        F: Fn() -> Result<(), HookError> + Send + Sync + 'static,
    {
        self.register(Listener::ClearAll(Arc::new(f)))
    }

    /// Runs every clear-all listener once; returns the first failure after all
    /// of them ran. Prefer [`Hooks::around_clear`], which notifies on both
    /// sides of a clear.
    pub fn notify_clear_all(&self) -> Result<(), HookError> {
        let snapshot = self.snapshot(|l| match l {
            Listener::ClearAll(f) => Some(f.clone()),
            Listener::DeviceDestroy(_) => None,
        });
        run_all(&snapshot, || Event::ClearAll, |f| f())
    }

    /// Runs `clear` with a clear-all notification on each side of it: how a
    /// backend's `clear_cache` must be written, so that no caller can release
    /// handles without the layers above being told.
    ///
    /// The clear runs even when the first notification fails, and the second
    /// runs even when the clear fails or panics (it may have released part of
    /// its handles). The clear's own failure wins (a panic is resumed after
    /// the second notification); otherwise the first listener failure is
    /// returned, after the clear completed. Inside another `around_clear` of
    /// the same registry on the same thread, `clear` runs without notifying:
    /// the outer call notifies once per side.
    pub fn around_clear<T, E>(&self, clear: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<HookError>,
    {
        let (_mark, nested) = ClearingMark::enter(self.inner.id);
        if nested {
            return clear();
        }
        let before = self.notify_clear_all();
        let outcome = catch_unwind(AssertUnwindSafe(clear));
        let after = self.notify_clear_all();
        finish(outcome, before, after, || Event::ClearAll)
    }

    /// Runs `teardown` after notifying device-destroy listeners of
    /// `(backend, index)`: how a backend's device-destroy path must be
    /// written. The teardown runs even when a listener fails; its own failure
    /// (or panic) wins, otherwise the first listener failure is returned once
    /// the teardown completed.
    pub fn around_device_destroy<T, E>(
        &self,
        backend: &str,
        index: usize,
        teardown: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<HookError>,
    {
        let before = self.notify_device_destroy(backend, index);
        let outcome = catch_unwind(AssertUnwindSafe(teardown));
        finish(outcome, before, Ok(()), || Event::DeviceDestroy {
            backend: backend.to_string(),
            index,
        })
    }
}

/// Combines an operation's outcome with the listener outcomes around it: a
/// panic is resumed, the operation's failure wins, then the first listener
/// failure; listener failures that lose are logged.
fn finish<T, E: From<HookError>>(
    outcome: std::thread::Result<Result<T, E>>,
    before: Result<(), HookError>,
    after: Result<(), HookError>,
    event: impl Fn() -> Event,
) -> Result<T, E> {
    let mut listener = before.err();
    if let Err(e) = after {
        if listener.is_none() {
            listener = Some(e);
        } else {
            tracing::warn!(error = %e, "further cache listener failure during {}", event());
        }
    }
    let lost = |e: HookError| {
        tracing::warn!(error = %e, "cache listener failure during {} superseded", event());
    };
    match outcome {
        Err(payload) => {
            if let Some(e) = listener {
                lost(e);
            }
            resume_unwind(payload)
        }
        Ok(Err(e)) => {
            if let Some(e) = listener {
                lost(e);
            }
            Err(e)
        }
        Ok(Ok(v)) => match listener {
            Some(e) => Err(e.into()),
            None => Ok(v),
        },
    }
}

/// The process-wide registry behind this module's free functions.
pub fn global() -> &'static Hooks {
    static GLOBAL: OnceLock<Hooks> = OnceLock::new();
    GLOBAL.get_or_init(Hooks::new)
}

/// [`Hooks::on_device_destroy`] on the [`global()`] registry.
pub fn on_device_destroy<F>(f: F) -> Registration
where
    F: Fn(&str, usize) -> Result<(), HookError> + Send + Sync + 'static,
{
    global().on_device_destroy(f)
}

/// [`Hooks::on_device_destroy_for`] on the [`global()`] registry.
pub fn on_device_destroy_for<F>(family: impl Into<String>, f: F) -> Registration
where
    F: Fn(usize) -> Result<(), HookError> + Send + Sync + 'static,
{
    global().on_device_destroy_for(family, f)
}

/// [`Hooks::notify_device_destroy`] on the [`global()`] registry.
pub fn notify_device_destroy(backend: &str, index: usize) -> Result<(), HookError> {
    global().notify_device_destroy(backend, index)
}

/// [`Hooks::on_clear_all`] on the [`global()`] registry.
pub fn on_clear_all<F>(f: F) -> Registration
where
    F: Fn() -> Result<(), HookError> + Send + Sync + 'static,
{
    global().on_clear_all(f)
}

/// [`Hooks::notify_clear_all`] on the [`global()`] registry.
pub fn notify_clear_all() -> Result<(), HookError> {
    global().notify_clear_all()
}

/// [`Hooks::around_clear`] on the [`global()`] registry.
pub fn around_clear<T, E>(clear: impl FnOnce() -> Result<T, E>) -> Result<T, E>
where
    E: From<HookError>,
{
    global().around_clear(clear)
}

/// [`Hooks::around_device_destroy`] on the [`global()`] registry.
pub fn around_device_destroy<T, E>(
    backend: &str,
    index: usize,
    teardown: impl FnOnce() -> Result<T, E>,
) -> Result<T, E>
where
    E: From<HookError>,
{
    global().around_device_destroy(backend, index, teardown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_matches_family_and_its_variants_only() {
        assert!(family_matches("cuda", "cuda"));
        assert!(family_matches("cuda", "cuda/ptx"));
        assert!(family_matches("cuda", "cuda/ptx/sm_90"));
        assert!(!family_matches("cuda", "cudax"));
        assert!(!family_matches("cuda", "cuda/"));
        assert!(!family_matches("cuda", "opencl"));
        assert!(!family_matches("cuda/ptx", "cuda"));
        assert!(!family_matches("", ""));
        assert!(!family_matches("", "/x"));
    }

    #[test]
    fn panic_message_reads_str_and_string_payloads() {
        let p = catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "plain");
        let p = catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "formatted 7");
        let p = catch_unwind(|| std::panic::panic_any(5u8)).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "non-string panic payload");
    }

    #[test]
    fn nesting_mark_is_per_registry_and_unwinds() {
        let (a, b) = (Hooks::new(), Hooks::new());
        let (_outer, nested) = ClearingMark::enter(a.inner.id);
        assert!(!nested);
        let (_other, nested) = ClearingMark::enter(b.inner.id);
        assert!(!nested, "another registry is not nested");
        let r = catch_unwind(|| {
            let (_inner, nested) = ClearingMark::enter(a.inner.id);
            assert!(nested);
            panic!("unwind through the mark");
        });
        assert!(r.is_err());
        CLEARING.with(|c| assert_eq!(c.borrow().len(), 2));
    }
}
