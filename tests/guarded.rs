//! The guarded per-device cache: the find/evict/clear protocol under
//! deterministic interleavings and under contention, destroy failures, value
//! lifetimes, and the `KernelCache` wiring to the hooks.
//!
//! Interleavings are forced with channels inside the build closure, never
//! with sleeps.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex, OnceLock, Weak};
use std::thread;

use kcache::cache::guarded::{
    DestroyPanicked, GuardedCache, GuardedError, Handles, KernelCache, Stats,
};
use kcache::cache::hooks::{HookError, Hooks};
use kcache::key::Source;
use proptest::prelude::*;

#[derive(Debug, thiserror::Error)]
enum TestError {
    #[error(transparent)]
    Guarded(#[from] GuardedError),
    #[error("build failed")]
    Build,
}

/// A built value: a unique id, and the backend handle generation it closed over.
#[derive(Debug)]
struct Val {
    id: u64,
    handle: u64,
}

/// Ids and destroy calls, shared by a cache's build closures and destroy hook.
#[derive(Default)]
struct Ledger {
    next_id: AtomicU64,
    destroyed: Mutex<Vec<u64>>,
}

impl Ledger {
    fn val(&self, handle: u64) -> Val {
        Val {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            handle,
        }
    }

    fn destroyed(&self) -> Vec<u64> {
        self.destroyed.lock().unwrap().clone()
    }
}

fn cache_with_ledger<K: std::hash::Hash + Eq>(
    handles: Handles,
) -> (GuardedCache<K, Val>, Arc<Ledger>) {
    let ledger = Arc::new(Ledger::default());
    let l = ledger.clone();
    let cache = GuardedCache::with_destroy(handles, move |v: Arc<Val>| {
        l.destroyed.lock().unwrap().push(v.id);
        Ok(())
    });
    (cache, ledger)
}

fn assert_accounting<K: std::hash::Hash + Eq, V>(cache: &GuardedCache<K, V>) -> Stats {
    let s = cache.stats();
    assert_eq!(
        s.builds - s.destroys,
        cache.len() as u64,
        "builds - destroys = retained: {s:?}"
    );
    s
}

/// Runs `find_or_build(key, device)` on another thread and calls `meanwhile`
/// while its build is in flight (after the build started, before it returns).
fn during_build<K, M>(
    cache: &GuardedCache<K, Val>,
    ledger: &Ledger,
    key: K,
    device: usize,
    meanwhile: M,
) -> Result<Arc<Val>, TestError>
where
    K: std::hash::Hash + Eq + Send + Sync,
    M: FnOnce(),
{
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let builder = s.spawn(move || {
            cache.find_or_build(key, device, || {
                started_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                Ok::<_, TestError>(ledger.val(0))
            })
        });
        started_rx.recv().unwrap();
        meanwhile();
        go_tx.send(()).unwrap();
        builder.join().unwrap()
    })
}

#[test]
fn evict_during_an_inflight_build_fails_it_and_destroys_the_value() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let r = during_build(&cache, &ledger, "k", 0, || {
        // Nothing cached yet: the epoch is bumped all the same.
        assert_eq!(cache.evict_device(0).unwrap(), 0);
    });
    assert!(
        matches!(
            r,
            Err(TestError::Guarded(
                GuardedError::DeviceDestroyedDuringBuild { device: 0 }
            ))
        ),
        "got {r:?}"
    );
    assert!(cache.is_empty());
    assert_eq!(ledger.destroyed(), [0], "the rejected value was destroyed");
    let s = assert_accounting(&cache);
    assert_eq!(s.evicted_during_build, 1);

    // The device is usable again once the evict is over.
    let v = cache
        .find_or_build("k", 0, || Ok::<_, TestError>(ledger.val(0)))
        .unwrap();
    assert_eq!(v.id, 1);
}

#[test]
fn evicting_another_device_during_a_build_does_not_fail_it() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let v = during_build(&cache, &ledger, "k", 0, || {
        cache.evict_device(1).unwrap();
    })
    .unwrap();
    assert!(Arc::ptr_eq(&v, &cache.get("k", 0).unwrap()));
    assert!(ledger.destroyed().is_empty());
}

#[test]
fn clear_during_a_build_fails_a_borrowing_cache() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Borrowed);
    let r = during_build(&cache, &ledger, "k", 2, || {
        cache.clear().unwrap();
    });
    assert!(
        matches!(
            r,
            Err(TestError::Guarded(GuardedError::ClearedDuringBuild {
                device: 2
            }))
        ),
        "got {r:?}"
    );
    assert!(cache.is_empty());
    assert_eq!(ledger.destroyed(), [0]);
    assert_eq!(assert_accounting(&cache).cleared_during_build, 1);
}

#[test]
fn clear_during_a_build_installs_on_an_owning_cache() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let v = during_build(&cache, &ledger, "k", 2, || {
        cache.clear().unwrap();
    })
    .unwrap();
    assert!(Arc::ptr_eq(&v, &cache.get("k", 2).unwrap()));
    assert!(ledger.destroyed().is_empty());
    assert_eq!(assert_accounting(&cache).cleared_during_build, 0);
}

#[test]
fn a_key_installed_meanwhile_wins_and_the_loser_is_destroyed() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let mut winner = None;
    let got = during_build(&cache, &ledger, "k", 0, || {
        winner = Some(
            cache
                .find_or_build("k", 0, || Ok::<_, TestError>(ledger.val(0)))
                .unwrap(),
        );
    })
    .unwrap();
    let winner = winner.unwrap();
    assert!(Arc::ptr_eq(&got, &winner));
    // The in-flight build takes its id when released, after the winner's.
    assert_eq!(winner.id, 0);
    assert_eq!(ledger.destroyed(), [1], "the in-flight build lost");
    let s = assert_accounting(&cache);
    assert_eq!((s.builds, s.lost_races, s.destroys), (2, 1, 1));
}

#[test]
fn a_value_installed_after_an_evict_wins_over_the_stale_build() {
    let (cache, ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let got = during_build(&cache, &ledger, "k", 0, || {
        cache.evict_device(0).unwrap();
        cache
            .find_or_build("k", 0, || Ok::<_, TestError>(ledger.val(0)))
            .unwrap();
    })
    .unwrap();
    assert_eq!(got.id, 0, "the installed value is valid and is returned");
    assert_eq!(ledger.destroyed(), [1], "the stale build was destroyed");
}

#[test]
fn a_failing_build_caches_nothing_and_returns_its_error() {
    let (cache, _ledger) = cache_with_ledger::<&str>(Handles::Owned);
    let r = cache.find_or_build("k", 0, || Err(TestError::Build));
    assert!(matches!(r, Err(TestError::Build)));
    assert!(!cache.contains_key("k", 0));
    assert_eq!(assert_accounting(&cache).build_failures, 1);
}

#[test]
fn build_and_destroy_run_outside_the_lock() {
    let slot: Arc<OnceLock<Weak<GuardedCache<u32, u32>>>> = Arc::default();
    let s = slot.clone();
    let seen_len = Arc::new(AtomicUsize::new(usize::MAX));
    let l = seen_len.clone();
    let cache = Arc::new(GuardedCache::with_destroy(Handles::Owned, move |_| {
        // Would deadlock if the cache's lock were held here.
        let cache = s.get().unwrap().upgrade().unwrap();
        l.store(cache.len(), Ordering::SeqCst);
        Ok(())
    }));
    slot.set(Arc::downgrade(&cache)).unwrap();

    // A build may use the cache, even to build another key.
    let outer = cache
        .find_or_build(1, 0, || {
            let inner = cache.find_or_build(2, 0, || Ok::<_, GuardedError>(20))?;
            Ok::<_, GuardedError>(*inner + 1)
        })
        .unwrap();
    assert_eq!(*outer, 21);
    assert_eq!(cache.evict_device(0).unwrap(), 2);
    assert_eq!(seen_len.load(Ordering::SeqCst), 0);
}

#[test]
fn a_failing_destroy_strands_no_other_victim() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    let cache: GuardedCache<u32, u32> = GuardedCache::with_destroy(Handles::Owned, move |v| {
        c.lock().unwrap().push(*v);
        match *v {
            1 => Err("release of 1 failed".into()),
            3 => panic!("release of 3 panicked"),
            _ => Ok(()),
        }
    });
    let fill = || {
        for k in 0..5 {
            cache
                .find_or_build(k, 0, || Ok::<_, GuardedError>(k))
                .unwrap();
        }
    };

    fill();
    match cache.evict_device(0) {
        Err(GuardedError::Destroy {
            victims,
            failed,
            source,
        }) => {
            assert_eq!((victims, failed), (5, 2));
            // Victims come out in hash order: the first failure is either one.
            let msg = source.to_string();
            assert!(
                msg == "release of 1 failed" || source.downcast_ref::<DestroyPanicked>().is_some(),
                "{msg}"
            );
        }
        other => panic!("expected a destroy failure, got {other:?}"),
    }
    let mut destroyed = std::mem::take(&mut *calls.lock().unwrap());
    destroyed.sort();
    assert_eq!(destroyed, [0, 1, 2, 3, 4], "every victim reached destroy");
    assert!(cache.is_empty());

    fill();
    assert!(matches!(
        cache.clear(),
        Err(GuardedError::Destroy {
            victims: 5,
            failed: 2,
            ..
        })
    ));
    let mut destroyed = std::mem::take(&mut *calls.lock().unwrap());
    destroyed.sort();
    assert_eq!(destroyed, [0, 1, 2, 3, 4]);
    let s = assert_accounting(&cache);
    assert_eq!((s.destroys, s.destroy_failures), (10, 4));
}

#[test]
fn values_handed_out_stay_valid_and_modules_go_before_their_context() {
    let log = Arc::new(Mutex::new(Vec::new()));
    struct Context(Arc<Mutex<Vec<String>>>);
    impl Drop for Context {
        fn drop(&mut self) {
            self.0.lock().unwrap().push("context".into());
        }
    }
    struct Module {
        name: &'static str,
        ctx: Arc<Context>,
    }
    impl Drop for Module {
        fn drop(&mut self) {
            self.ctx
                .0
                .lock()
                .unwrap()
                .push(format!("module {}", self.name));
        }
    }

    let ctx = Arc::new(Context(log.clone()));
    let cache: GuardedCache<&str, Module> = GuardedCache::new(Handles::Owned);
    let build = |name| {
        let ctx = ctx.clone();
        move || Ok::<_, GuardedError>(Module { name, ctx })
    };
    let held = cache.find_or_build("a", 0, build("a")).unwrap();
    cache.find_or_build("b", 0, build("b")).unwrap();
    drop(ctx);

    assert_eq!(cache.evict_device(0).unwrap(), 2);
    assert_eq!(
        *log.lock().unwrap(),
        ["module b"],
        "the held module survives"
    );
    assert_eq!(held.name, "a");
    drop(held);
    assert_eq!(*log.lock().unwrap(), ["module b", "module a", "context"]);
}

#[test]
fn destroy_cannot_invalidate_a_value_a_caller_holds() {
    let released = Arc::new(Mutex::new(Vec::new()));
    let r = released.clone();
    // The owner releases explicitly only when the cache held the last reference.
    let cache: GuardedCache<u32, String> = GuardedCache::with_destroy(Handles::Owned, move |v| {
        match Arc::try_unwrap(v) {
            Ok(s) => r.lock().unwrap().push(s),
            Err(_still_held) => {}
        }
        Ok(())
    });
    let held = cache
        .find_or_build(1, 0, || Ok::<_, GuardedError>("held".to_string()))
        .unwrap();
    cache
        .find_or_build(2, 0, || Ok::<_, GuardedError>("unheld".to_string()))
        .unwrap();
    cache.clear().unwrap();
    assert_eq!(*released.lock().unwrap(), ["unheld"]);
    assert_eq!(*held, "held");
}

#[test]
fn shared_keys_resolve_to_one_value_under_contention() {
    const THREADS: usize = 8;
    const ITERS: usize = 3000;
    const SHARED: u64 = 32;
    const DEVICES: usize = 3;
    let (cache, ledger) = cache_with_ledger::<(u64, u64)>(Handles::Owned);
    // (key, device) -> the id of the value it first resolved to.
    type Resolved = HashMap<((u64, u64), usize), u64>;
    let resolved: Mutex<Resolved> = Mutex::default();
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (cache, ledger, resolved, barrier) = (&cache, &ledger, &resolved, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..ITERS as u64 {
                    // Shared keys (owner u64::MAX) collide across threads;
                    // private ones (owner t) only with this thread.
                    let key = if i % 2 == 0 {
                        (u64::MAX, i / 2 % SHARED)
                    } else {
                        (t, i / 2 % 8)
                    };
                    let device = (i as usize / 7) % DEVICES;
                    let v = cache
                        .find_or_build(key, device, || {
                            // Widen the window in which two builds of a key race.
                            thread::yield_now();
                            Ok::<_, TestError>(ledger.val(0))
                        })
                        .unwrap();
                    let first = *resolved
                        .lock()
                        .unwrap()
                        .entry((key, device))
                        .or_insert(v.id);
                    assert_eq!(first, v.id, "{key:?} on {device} resolved to two values");
                }
            });
        }
    });
    let s = assert_accounting(&cache);
    let expected = (SHARED as usize + THREADS * 8) * DEVICES;
    assert_eq!(cache.len(), expected);
    assert_eq!(s.builds, ledger.next_id.load(Ordering::SeqCst));
    assert_eq!(s.destroys, s.lost_races);
    assert_eq!(ledger.destroyed().len() as u64, s.destroys);
    assert_eq!(s.hits + s.builds, (THREADS * ITERS) as u64);
}

/// Builders against a clearer that releases the backend's handles between
/// two clears (what `around_clear` does) and an evicter: a borrowing cache
/// never keeps a value over a released handle (every victim of a clear before
/// a release carries the current handle, and so does every value left at the
/// end), every value is destroyed exactly once, and the counters add up.
#[test]
fn concurrent_clear_and_evict_against_builds() {
    const BUILDERS: usize = 4;
    const MIN_ITERS: usize = 2000;
    const CLEARS: usize = 300;
    const EVICTS: usize = 600;
    const DEVICES: usize = 2;
    thread_local! {
        // Set on the clearer's thread during the clear *before* a release:
        // the handle generation every victim of that clear must carry.
        static EXPECTED_HANDLE: Cell<Option<u64>> = const { Cell::new(None) };
    }
    let ledger = Arc::new(Ledger::default());
    let stale_victims = Arc::new(AtomicUsize::new(0));
    let (l, stale) = (ledger.clone(), stale_victims.clone());
    let cache = GuardedCache::with_destroy(Handles::Borrowed, move |v: Arc<Val>| {
        l.destroyed.lock().unwrap().push(v.id);
        if EXPECTED_HANDLE.get().is_some_and(|h| h != v.handle) {
            // Installed over a handle an earlier round released.
            stale.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    });
    let handle_gen = AtomicU64::new(0);
    // Builders keep going until both invalidators are done, and each
    // invalidation waits for some builder progress, so the two interleave
    // rather than run in bursts a time slice long.
    let invalidators_left = AtomicUsize::new(2);
    let progress = AtomicUsize::new(0);
    let wait_for_progress = |since: &mut usize| {
        while progress.load(Ordering::SeqCst) < *since + 4 {
            thread::yield_now();
        }
        *since = progress.load(Ordering::SeqCst);
    };
    let start = Barrier::new(BUILDERS + 2);
    let outcomes = Mutex::new(HashMap::<&'static str, usize>::new());
    thread::scope(|s| {
        for t in 0..BUILDERS as u64 {
            let (cache, ledger, handle_gen, left, start, outcomes, progress) = (
                &cache,
                &ledger,
                &handle_gen,
                &invalidators_left,
                &start,
                &outcomes,
                &progress,
            );
            s.spawn(move || {
                let mut local = HashMap::<&'static str, usize>::new();
                start.wait();
                let mut i = 0u64;
                while i < MIN_ITERS as u64 || left.load(Ordering::SeqCst) > 0 {
                    let key = (i * 7 + t) % 24;
                    let device = (i as usize + t as usize) % DEVICES;
                    let r = cache.find_or_build(key, device, || {
                        let handle = handle_gen.load(Ordering::SeqCst);
                        // Widen the window in which the build is in flight.
                        thread::yield_now();
                        Ok::<_, TestError>(ledger.val(handle))
                    });
                    let kind = match r {
                        Ok(_) => "ok",
                        Err(TestError::Guarded(GuardedError::DeviceDestroyedDuringBuild {
                            ..
                        })) => "evicted",
                        Err(TestError::Guarded(GuardedError::ClearedDuringBuild { .. })) => {
                            "cleared"
                        }
                        Err(e) => panic!("unexpected {e}"),
                    };
                    *local.entry(kind).or_default() += 1;
                    i += 1;
                    progress.fetch_add(1, Ordering::SeqCst);
                }
                let mut o = outcomes.lock().unwrap();
                for (k, n) in local {
                    *o.entry(k).or_default() += n;
                }
            });
        }
        let (cache, handle_gen, left, start, wait_for_progress) = (
            &cache,
            &handle_gen,
            &invalidators_left,
            &start,
            &wait_for_progress,
        );
        s.spawn(move || {
            start.wait();
            let mut since = 0;
            for _ in 0..CLEARS {
                wait_for_progress(&mut since);
                EXPECTED_HANDLE.set(Some(handle_gen.load(Ordering::SeqCst)));
                cache.clear().unwrap();
                EXPECTED_HANDLE.set(None);
                handle_gen.fetch_add(1, Ordering::SeqCst); // the backend releases its handles
                cache.clear().unwrap();
            }
            left.fetch_sub(1, Ordering::SeqCst);
        });
        s.spawn(move || {
            start.wait();
            let mut since = 0;
            for d in 0..EVICTS {
                wait_for_progress(&mut since);
                cache.evict_device(d % DEVICES).unwrap();
            }
            left.fetch_sub(1, Ordering::SeqCst);
        });
    });

    let current = handle_gen.load(Ordering::SeqCst);
    for key in 0..24 {
        for device in 0..DEVICES {
            if let Some(v) = cache.get(&key, device) {
                assert_eq!(v.handle, current, "value over a released handle kept");
            }
        }
    }
    assert_eq!(
        stale_victims.load(Ordering::SeqCst),
        0,
        "values over released handles were kept"
    );
    let s = assert_accounting(&cache);
    assert_eq!(cache.generation(), 2 * CLEARS as u64);
    let destroyed = ledger.destroyed();
    let unique: HashSet<_> = destroyed.iter().collect();
    assert_eq!(unique.len(), destroyed.len(), "a value was destroyed twice");
    assert_eq!(destroyed.len() as u64, s.destroys);
    let outcomes = outcomes.into_inner().unwrap();
    assert_eq!(outcomes.values().sum::<usize>() as u64, s.hits + s.builds);

    // Everything built is destroyed exactly once when the cache goes.
    let built = ledger.next_id.load(Ordering::SeqCst);
    assert_eq!(built, s.builds);
    drop(cache);
    assert_eq!(ledger.destroyed().len() as u64, built);
}

#[derive(Debug, thiserror::Error)]
enum BackendError {
    #[error(transparent)]
    Guarded(#[from] GuardedError),
    #[error(transparent)]
    Hook(#[from] HookError),
}

/// A kernel cache of backend `family` on fresh hooks, with two kernels built
/// on each of `devices`.
fn kernels_on(family: &str, devices: &[usize]) -> (Hooks, KernelCache<Val>, Arc<Ledger>) {
    let hooks = Hooks::new();
    let (cache, ledger) = cache_with_ledger::<String>(Handles::Owned);
    let kernels = KernelCache::new(family, &hooks, cache);
    fill_kernels(&kernels, &ledger, devices);
    (hooks, kernels, ledger)
}

fn fill_kernels(kernels: &KernelCache<Val>, ledger: &Ledger, devices: &[usize]) {
    let source = Source::from("kernel void k(global float* a) { a[0] = 1; }");
    for &d in devices {
        for name in ["k", "j"] {
            let key = KernelCache::<Val>::key(d, name, &source, &[("-O", "2")]);
            kernels
                .find_or_build(key, d, || Ok::<_, BackendError>(ledger.val(0)))
                .unwrap();
        }
    }
}

#[test]
fn kernel_cache_evicts_only_its_own_family_and_device() {
    let (hooks, kernels, ledger) = kernels_on("opencl", &[0, 1]);
    assert_eq!(kernels.cache().len(), 4);

    hooks.notify_device_destroy("cuda", 0).unwrap();
    hooks.notify_device_destroy("openclx", 0).unwrap();
    assert_eq!(
        kernels.cache().len(),
        4,
        "a foreign backend's notification evicts nothing"
    );
    assert_eq!(kernels.cache().epoch(0), 0);

    hooks.notify_device_destroy("opencl/pocl", 0).unwrap();
    assert_eq!(kernels.cache().device_len(0), 0);
    assert_eq!(kernels.cache().device_len(1), 2, "only that device");
    assert_eq!(ledger.destroyed().len(), 2);
}

#[test]
fn kernel_cache_destroy_device_evicts_before_the_teardown() {
    let (hooks, kernels, _) = kernels_on("cuda", &[0, 1]);
    let above = Arc::new(Mutex::new(Vec::new()));
    let a = above.clone();
    let _layer_above = hooks.on_device_destroy(move |backend, index| {
        a.lock().unwrap().push((backend.to_string(), index));
        Err(HookError::listener("layer above failed"))
    });

    let r = kernels.destroy_device(1, || {
        assert_eq!(
            kernels.cache().device_len(1),
            0,
            "evicted before the teardown"
        );
        Ok::<_, BackendError>("context released")
    });
    assert!(
        matches!(r, Err(BackendError::Hook(HookError::Listener(_)))),
        "{r:?}"
    );
    assert_eq!(*above.lock().unwrap(), [("cuda".to_string(), 1)]);
    assert_eq!(kernels.cache().device_len(0), 2);
}

#[test]
fn kernel_cache_clear_notifies_twice_and_empties() {
    let (hooks, kernels, _) = kernels_on("cc", &[0]);
    let lens = Arc::new(Mutex::new(Vec::new()));
    let slot: Arc<OnceLock<Weak<KernelCache<Val>>>> = Arc::default();
    let (l, s) = (lens.clone(), slot.clone());
    let _reg = hooks.on_clear_all(move || {
        // A listener may touch the cache being cleared.
        if let Some(k) = s.get().and_then(Weak::upgrade) {
            l.lock().unwrap().push(k.cache().len());
        }
        Ok(())
    });
    let kernels = Arc::new(kernels);
    slot.set(Arc::downgrade(&kernels)).unwrap();

    // A top-level clear wrapping the backend's clear still notifies twice.
    let n = hooks.around_clear(|| kernels.clear()).unwrap();
    assert_eq!(n, 2);
    assert_eq!(*lens.lock().unwrap(), [2, 0]);
    assert!(kernels.cache().is_empty());
    assert_eq!(kernels.cache().generation(), 1);
}

#[test]
fn kernel_cache_listener_goes_with_the_cache() {
    let (hooks, kernels, ledger) = kernels_on("vulkan", &[0]);
    drop(kernels);
    assert_eq!(
        ledger.destroyed().len(),
        2,
        "dropping the cache destroys its values"
    );
    hooks.notify_device_destroy("vulkan", 0).unwrap();
    assert_eq!(format!("{hooks:?}").matches("listeners: 0").count(), 2);
}

#[derive(Clone, Debug)]
enum Op {
    Find { key: u8, device: usize },
    Evict { device: usize },
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6, 0usize..3).prop_map(|(key, device)| Op::Find { key, device }),
        1 => (0usize..3).prop_map(|device| Op::Evict { device }),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    /// Sequentially, the cache behaves as a map per device that evict and
    /// clear empty; each value is built once per residency and destroyed once.
    #[test]
    fn sequential_ops_match_a_model(ops in prop::collection::vec(op(), 0..64)) {
        let (cache, ledger) = cache_with_ledger::<u8>(Handles::Borrowed);
        let mut model: HashMap<(u8, usize), u64> = HashMap::new();
        let mut epochs = [0u64; 3];
        let mut generation = 0;
        for op in ops {
            match op {
                Op::Find { key, device } => {
                    let v = cache
                        .find_or_build(key, device, || Ok::<_, TestError>(ledger.val(0)))
                        .unwrap();
                    let expected = *model.entry((key, device)).or_insert(v.id);
                    prop_assert_eq!(v.id, expected);
                }
                Op::Evict { device } => {
                    let n = model.iter().filter(|((_, d), _)| *d == device).count();
                    prop_assert_eq!(cache.evict_device(device).unwrap(), n);
                    model.retain(|(_, d), _| *d != device);
                    epochs[device] += 1;
                }
                Op::Clear => {
                    prop_assert_eq!(cache.clear().unwrap(), model.len());
                    model.clear();
                    generation += 1;
                }
            }
            prop_assert_eq!(cache.len(), model.len());
            prop_assert_eq!(cache.generation(), generation);
            for (d, e) in epochs.iter().enumerate() {
                prop_assert_eq!(cache.epoch(d), *e);
            }
        }
        let s = assert_accounting(&cache);
        prop_assert_eq!(ledger.destroyed().len() as u64, s.destroys);
        let destroyed: HashSet<u64> = ledger.destroyed().into_iter().collect();
        prop_assert_eq!(destroyed.len() as u64, s.destroys, "destroyed twice");
        for id in model.values() {
            prop_assert!(!destroyed.contains(id), "a cached value was destroyed");
        }
    }
}
