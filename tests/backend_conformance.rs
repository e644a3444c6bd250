//! One conformance suite for every backend: the same checks, run for each
//! backend this machine can load, through the resolver and the tune family
//! (`kcache::tune::render`), against real compilers and drivers.
//!
//! For each backend (one `conformance!` line below):
//! * a batch of tune candidates compiles through the resolver and, where the
//!   backend runs kernels here, every candidate's result matches
//!   `Data::reference`; compiling or loading the same group twice answers the
//!   same program;
//! * two kernels of one program get distinct entries, each answering its own
//!   code;
//! * handle-cache keys are per device;
//! * `clear_cache` notifies clear-all listeners twice and drops the memo above
//!   (the next resolve compiles or reloads, never answering a released
//!   program); a listener failure is reported after the clear completed;
//! * a device destroy evicts its own backend's device only, notifies before it
//!   lets go, and completes even when a listener fails; a foreign backend's
//!   notification evicts nothing;
//! * programs persist: a fresh backend instance over the same `FileStore`
//!   compiles nothing and runs what it loaded, and so does a fresh process
//!   (this test binary re-executed in the child role).
//!
//! A backend whose library is missing prints why and skips, unless its name
//! is in `KCACHE_TEST_REQUIRE` (comma-separated, as in `tests/gpu_backends.rs`;
//! CI sets `opencl,cuda,vulkan`). Launches skip where the backend cannot run
//! kernels here (CUDA without a GPU) unless `<name>-launch` is listed too.

mod backend_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backend_support::{required, run_in_fresh_process};
use kcache::backend::cc::CcBackend;
use kcache::backend::cuda::{Cuda, CudaConfig};
use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::{Backend, BackendError, CompileJob, Compiled, KernelSource};
use kcache::cache::code::Capacity;
use kcache::cache::guarded::{GuardedCache, GuardedError, Handles, KernelCache};
use kcache::cache::hooks::{HookError, Hooks};
use kcache::key::Source;
use kcache::resolve::census::with_census;
use kcache::resolve::{Kernel, Outcome, ResolveError, Resolved, Resolver};
use kcache::store::{FileStore, MemoryStore, Store};
use kcache::tune::render::{render, search_space, Buffer, Candidate, Config, Data, Problem};

/// What the suite needs of a backend beyond the trait: the teardown API every
/// backend has in the same shape (a constructor taking the hooks, a handle
/// cache, `destroy_device`). `conformance!` implements it from those.
trait Conformant: Backend + Sized + 'static {
    /// The family name, as `KCACHE_TEST_REQUIRE` lists it.
    const NAME: &'static str;
    /// Opens the backend on device `device`, its listener on `hooks`.
    fn open(hooks: &Hooks, device: usize) -> Result<Self, BackendError>;
    /// Programs in the backend's handle cache, over all devices.
    fn cached(&self) -> usize;
    /// Programs in the backend's handle cache for `device`.
    fn cached_on(&self, device: usize) -> usize;
    /// Evicts `device` from the handle cache directly (no notification).
    fn evict(&self, device: usize) -> usize;
    /// The backend's `destroy_device`.
    fn destroy(&self) -> Result<(), BackendError>;
}

/// Implements [`Conformant`] for a backend and instantiates every check for
/// it in a module named after it:
/// `conformance!(module, Type, |hooks, device| constructor)`.
macro_rules! conformance {
    ($name:ident, $backend:ty, |$hooks:ident, $device:ident| $open:expr) => {
        impl Conformant for $backend {
            const NAME: &'static str = stringify!($name);
            fn open($hooks: &Hooks, $device: usize) -> Result<Self, BackendError> {
                $open
            }
            fn cached(&self) -> usize {
                self.kernel_cache().cache().len()
            }
            fn cached_on(&self, device: usize) -> usize {
                self.kernel_cache().cache().device_len(device)
            }
            fn evict(&self, device: usize) -> usize {
                self.kernel_cache().cache().evict_device(device).unwrap()
            }
            fn destroy(&self) -> Result<(), BackendError> {
                self.destroy_device()
            }
        }

        mod $name {
            use super::*;
            type B = $backend;

            #[test]
            fn a_tune_batch_resolves_and_runs() {
                check_batch::<B>();
            }

            #[test]
            fn the_same_group_twice_is_the_same_program() {
                check_same_program::<B>();
            }

            #[test]
            fn two_kernels_of_one_program_get_distinct_entries() {
                check_two_kernels::<B>();
            }

            #[test]
            fn handle_cache_keys_are_per_device() {
                check_per_device_keys::<B>();
            }

            #[test]
            fn clear_notifies_twice_and_drops_the_memo_above() {
                check_clear::<B>();
            }

            #[test]
            fn a_device_destroy_evicts_only_its_own_device() {
                check_destroy::<B>();
            }

            #[test]
            fn a_foreign_notification_evicts_nothing() {
                check_foreign::<B>();
            }

            #[test]
            fn programs_reload_in_a_fresh_instance() {
                check_fresh_instance::<B>();
            }

            #[test]
            fn programs_reload_in_a_fresh_process() {
                check_fresh_process::<B>(concat!(stringify!($name), "::child"));
            }

            /// The child half of the test above; run only by it.
            #[test]
            #[ignore = "run in a fresh process by programs_reload_in_a_fresh_process"]
            fn child() {
                child_loads_the_store::<B>();
            }
        }
    };
}

conformance!(opencl, OpenCl, |hooks, device| OpenCl::with_hooks(
    &OpenClConfig { device },
    hooks
));
conformance!(cuda, Cuda, |hooks, device| Cuda::with_hooks(
    &CudaConfig {
        device,
        ..CudaConfig::default()
    },
    hooks
));
conformance!(vulkan, Vulkan, |hooks, device| Vulkan::with_hooks(
    &VulkanConfig {
        device,
        ..VulkanConfig::default()
    },
    hooks
));
// The host is the C backend's only device.
conformance!(cc, CcBackend, |hooks, device| if device == 0 {
    CcBackend::builder().hooks(hooks).build()
} else {
    Err(BackendError::Unavailable {
        backend: "cc",
        reason: format!("no device {device}: the host is the only one"),
    })
});

// ------------------------------------------------------------- helpers ---

/// Small enough to compile and run quickly, odd enough to exercise every
/// guard (no size is a multiple of a tile, a vector or a work-group).
const PROBLEM: Problem = Problem { m: 5, k: 19, n: 7 };
const SEED: u64 = 7;
const CAPACITY: u64 = 64 << 20;
/// The tune loop's tolerance against the f64 reference.
const TOLERANCE: f32 = 1e-4;

/// Device 0 of `B` on `hooks`, or `None` after saying why it is skipped
/// (failing where `B` is required).
fn open<B: Conformant>(hooks: &Hooks) -> Option<B> {
    match B::open(hooks, 0) {
        Ok(backend) => Some(backend),
        Err(err) if required(B::NAME) => {
            panic!("{} is required here but unavailable: {err}", B::NAME)
        }
        Err(err) => {
            eprintln!("skipped: {err}");
            None
        }
    }
}

/// Whether `backend` runs kernels here; says why not (failing where
/// `<name>-launch` is required).
fn runs<B: Conformant>(backend: &B) -> bool {
    if backend.can_run() {
        return true;
    }
    let what = format!("{}-launch", B::NAME);
    assert!(!required(&what), "{} launches are required here", B::NAME);
    eprintln!(
        "{}: launches skipped: the backend cannot run kernels here",
        B::NAME
    );
    false
}

fn resolver<B: Conformant>(backend: &Arc<B>, hooks: &Hooks) -> Resolver<B> {
    Resolver::with(Arc::clone(backend), Capacity::Fixed(CAPACITY), hooks)
}

/// Points of the search space: unfused and fused, several tiles, unrolls
/// and vector widths.
fn configs(n: usize) -> Vec<Config> {
    let space = search_space();
    [0, 9, 24, 31, 17, 35]
        .iter()
        .take(n)
        .map(|&i| space[i])
        .collect()
}

/// The candidates of `configs`, rendered afresh (new names every time, as a
/// search renders them).
fn candidates<B: Backend>(backend: &B, configs: &[Config]) -> Vec<Candidate> {
    configs
        .iter()
        .map(|c| render(*c, PROBLEM, backend.language()))
        .collect()
}

fn kernels(candidates: &[Candidate]) -> Vec<Kernel> {
    candidates.iter().flat_map(|c| c.kernels.clone()).collect()
}

/// A kernel to launch: the program holding it and its symbol there.
type Code<P> = (Arc<P>, Arc<str>);

/// What the resolver answered, as code to launch.
fn code<P>(resolved: &[Resolved<P>]) -> Vec<Code<P>> {
    resolved
        .iter()
        .map(|r| (Arc::clone(&r.program), Arc::clone(&r.symbol)))
        .collect()
}

/// Runs a candidate's steps, one kernel each, as the tune loop does, and
/// answers `Y`.
fn run_candidate<B: Backend>(
    backend: &B,
    candidate: &Candidate,
    code: &[Code<B::Program>],
) -> Vec<f32> {
    assert_eq!(candidate.steps.len(), code.len());
    let mut data = Data::new(PROBLEM, SEED);
    for (step, (program, symbol)) in candidate.steps.iter().zip(code) {
        let mut launch = step.launch(&data);
        backend
            .launch(program, symbol, &mut launch)
            .unwrap_or_else(|e| panic!("{}: {e}", candidate.config));
        // Only `Y` is written; it is always the first buffer.
        assert_eq!(step.buffers[0], Buffer::Y);
        data.y = std::mem::take(&mut launch.buffers[0]);
    }
    data.y
}

/// Runs every candidate and checks it against the reference.
fn check_results<B: Backend>(backend: &B, candidates: &[Candidate], code: &[Code<B::Program>]) {
    let reference = Data::new(PROBLEM, SEED).reference(PROBLEM);
    let mut at = 0;
    for candidate in candidates {
        let mine = &code[at..at + candidate.kernels.len()];
        at += candidate.kernels.len();
        let got = run_candidate(backend, candidate, mine);
        assert_eq!(got.len(), reference.len());
        let error = got
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            error <= TOLERANCE,
            "{}: max error {error} against the reference",
            candidate.config
        );
    }
}

/// One candidate's kernels as one compile job's sources.
fn sources(candidate: &Candidate) -> Vec<KernelSource<'_>> {
    candidate
        .kernels
        .iter()
        .map(|k| KernelSource {
            symbol: &k.symbol,
            text: &k.text,
        })
        .collect()
}

fn job<'a>(kernels: &'a [KernelSource<'a>]) -> CompileJob<'a> {
    CompileJob {
        kernels,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh: false,
    }
}

fn compile<B: Backend>(backend: &B, candidate: &Candidate) -> Compiled<B::Program> {
    backend.compile(&job(&sources(candidate))).unwrap()
}

fn same<P>(a: &[Resolved<P>], b: &[Resolved<P>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| Arc::ptr_eq(&x.program, &y.program))
}

/// Counts clear-all notifications on `hooks`.
fn count_clears(hooks: &Hooks) -> (Arc<AtomicUsize>, kcache::cache::hooks::Registration) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    let registration = hooks.on_clear_all(move || {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    (count, registration)
}

fn failing_listener() -> HookError {
    HookError::listener("a listener that always fails")
}

fn is_unavailable(err: &BackendError) -> bool {
    matches!(err, BackendError::Unavailable { .. })
}

// -------------------------------------------------------------- checks ---

fn check_batch<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let backend = Arc::new(backend);
    let r = resolver(&backend, &hooks);
    let configs = configs(4);
    let first = candidates(&*backend, &configs);
    let batch = kernels(&first);
    let (resolved, census) = with_census(|| r.resolve(&batch).unwrap());
    assert_eq!(resolved.len(), batch.len());
    assert!(resolved
        .iter()
        .all(|a| matches!(a.outcome, Outcome::Compiled | Outcome::Reused)));
    // Every candidate zeroes Y the same way: the batch compiles that once.
    assert!(census.kernels_compiled > 0);
    assert!(
        census.kernels_compiled < batch.len() as u64,
        "{census:?}: nothing shared"
    );
    assert_eq!(backend.cached() as u64, census.programs_compiled);
    if runs(&*backend) {
        check_results(&*backend, &first, &code(&resolved));
    }

    // Rendered again (other names), the same kernels: all reused, the same
    // programs.
    let again = candidates(&*backend, &configs);
    let (resolved_again, census) = with_census(|| r.resolve(&kernels(&again)).unwrap());
    assert_eq!(census.kernels_compiled, 0);
    assert!(resolved_again.iter().all(|a| a.outcome == Outcome::Reused));
    assert!(same(&resolved, &resolved_again));
    if backend.can_run() {
        check_results(&*backend, &again, &code(&resolved_again));
    }
}

fn check_same_program<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let candidate = &candidates(&backend, &configs(1))[0];
    let a = compile(&backend, candidate);
    let b = compile(&backend, candidate);
    assert!(Arc::ptr_eq(&a.program, &b.program), "compiled twice");
    assert_eq!(a.binary, b.binary);
    assert_eq!(backend.cached(), 1);

    // The same group rendered with other names is another group to the
    // backend (the resolver is what sees through names).
    let renamed = &candidates(&backend, &configs(1))[0];
    let c = compile(&backend, renamed);
    assert!(!Arc::ptr_eq(&a.program, &c.program));
    assert_eq!(backend.cached(), 2);

    let symbols: Vec<&str> = candidate.kernels.iter().map(|k| &*k.symbol).collect();
    let loaded = backend.load(&a.binary, &symbols).unwrap();
    let reloaded = backend.load(&a.binary, &symbols[..1]).unwrap();
    assert!(Arc::ptr_eq(&loaded, &reloaded), "loaded twice");
    assert_eq!(backend.cached(), 3);
    if runs(&backend) {
        let code: Vec<Code<B::Program>> = candidate
            .kernels
            .iter()
            .map(|k| (Arc::clone(&loaded), Arc::from(k.symbol.as_str())))
            .collect();
        check_results(&backend, std::slice::from_ref(candidate), &code);
    }
}

fn check_two_kernels<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    // The handle cache: one source, two kernel names, two keys.
    let source = Source::from("one program text");
    let options: [(&str, &str); 0] = [];
    assert_ne!(
        KernelCache::<()>::key(0, "first", &source, &options),
        KernelCache::<()>::key(0, "second", &source, &options)
    );

    // The resolver: one candidate's kernels compile as one program, and each
    // kernel gets its own entry, key and symbol in it.
    let backend = Arc::new(backend);
    let r = resolver(&backend, &hooks);
    let unfused = configs(1);
    assert!(!unfused[0].fuse);
    let candidate = &candidates(&*backend, &unfused)[0];
    let resolved = r.resolve(&candidate.kernels).unwrap();
    let n = candidate.kernels.len();
    assert!(n >= 2);
    assert!(resolved
        .iter()
        .all(|a| Arc::ptr_eq(&a.program, &resolved[0].program)));
    assert_eq!(backend.cached(), 1, "one program");
    assert_eq!(r.cache_stats().entries, n as u64, "an entry per kernel");
    let mut keys: Vec<_> = resolved.iter().map(|a| a.key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n);
    let mut symbols: Vec<&str> = resolved.iter().map(|a| &*a.symbol).collect();
    symbols.sort_unstable();
    symbols.dedup();
    assert_eq!(symbols.len(), n);

    if runs(&*backend) {
        // The first kernel zeroes Y, the last takes each row's softmax: on Y
        // all ones, one answers zeros and the other 1/n.
        let ones = |step: &kcache::tune::render::Step| {
            let mut data = Data::new(PROBLEM, SEED);
            data.y = vec![1.0; PROBLEM.m * PROBLEM.n];
            step.launch(&data)
        };
        let (first, last) = (&resolved[0], &resolved[n - 1]);
        let mut zero = ones(&candidate.steps[0]);
        backend
            .launch(&first.program, &first.symbol, &mut zero)
            .unwrap();
        assert!(zero.buffers[0].iter().all(|&y| y == 0.0));
        let mut softmax = ones(&candidate.steps[n - 1]);
        backend
            .launch(&last.program, &last.symbol, &mut softmax)
            .unwrap();
        let want = 1.0 / PROBLEM.n as f32;
        assert!(softmax.buffers[0]
            .iter()
            .all(|&y| (y - want).abs() <= TOLERANCE));
    }
}

fn check_per_device_keys<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let candidate = &candidates(&backend, &configs(1))[0];
    let text: String = candidate.kernels.iter().map(|k| k.text.as_str()).collect();
    let source = Source::from(text.as_str());
    let options = [("0", "-DX=1")];
    assert_ne!(
        KernelCache::<()>::key(0, "dense_0", &source, &options),
        KernelCache::<()>::key(1, "dense_0", &source, &options),
        "the device index is in the key"
    );

    let index = backend.device_index();
    compile(&backend, candidate);
    assert_eq!(backend.cached_on(index), 1);
    // Evicting another index leaves this device's entries.
    assert_eq!(backend.evict(index + 1), 0);
    assert_eq!(backend.cached_on(index), 1);

    match B::open(&hooks, index + 1) {
        Ok(other) => {
            // The same group on another device is another entry, and a
            // destroy of that device evicts it alone.
            compile(&other, candidate);
            assert_eq!(other.cached_on(index + 1), 1);
            assert_eq!(other.cached_on(index), 0);
            hooks.notify_device_destroy(B::NAME, index + 1).unwrap();
            assert_eq!(other.cached(), 0);
            assert_eq!(backend.cached_on(index), 1);
        }
        Err(err) => eprintln!(
            "{}: one device only ({err}): per-device keys checked on the key and an unused index",
            B::NAME
        ),
    }
    assert_eq!(backend.evict(index), 1);
    assert_eq!(backend.cached(), 0);
}

fn check_clear<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let backend = Arc::new(backend);
    let (clears, _registration) = count_clears(&hooks);
    let r = resolver(&backend, &hooks);
    let configs = configs(1);
    let before = r
        .resolve(&kernels(&candidates(&*backend, &configs)))
        .unwrap();
    assert!(r.cache_stats().entries > 0 && backend.cached() > 0);

    backend.clear_cache().unwrap();
    assert_eq!(clears.load(Ordering::SeqCst), 2, "before and after");
    assert_eq!(r.cache_stats().entries, 0, "the memo above is gone");
    assert_eq!(backend.cached(), 0);

    // The next resolve compiles again: a new program, not the released one.
    let again = candidates(&*backend, &configs);
    let (after, census) = with_census(|| r.resolve(&kernels(&again)).unwrap());
    assert!(census.kernels_compiled > 0);
    assert!(after
        .iter()
        .all(|a| before.iter().all(|b| !Arc::ptr_eq(&a.program, &b.program))));
    if runs(&*backend) {
        // What was handed out before the clear is still good.
        check_results(&*backend, &candidates(&*backend, &configs), &code(&before));
        check_results(&*backend, &again, &code(&after));
    }

    // With a store, the next resolve reloads instead of compiling.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(CAPACITY));
    let stored = resolver(&backend, &hooks).with_store(Some(store));
    let before = stored
        .resolve(&kernels(&candidates(&*backend, &configs)))
        .unwrap();
    backend.clear_cache().unwrap();
    assert_eq!(clears.load(Ordering::SeqCst), 4);
    let again = candidates(&*backend, &configs);
    let (after, census) = with_census(|| stored.resolve(&kernels(&again)).unwrap());
    assert_eq!(census.kernels_compiled, 0);
    assert!(census.programs_loaded > 0);
    assert!(after.iter().any(|a| a.outcome == Outcome::Stored));
    assert!(after
        .iter()
        .all(|a| before.iter().all(|b| !Arc::ptr_eq(&a.program, &b.program))));
    if backend.can_run() {
        check_results(&*backend, &again, &code(&after));
    }

    // A failing listener is reported, after the clear completed.
    let _failing = hooks.on_clear_all(|| Err(failing_listener()));
    assert!(backend.cached() > 0);
    let err = backend.clear_cache().unwrap_err();
    assert!(
        matches!(
            &err,
            BackendError::Teardown {
                source: GuardedError::Listener(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(backend.cached(), 0, "the clear completed");
    assert_eq!(clears.load(Ordering::SeqCst), 6);
}

fn check_destroy<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let backend = Arc::new(backend);
    let index = backend.device_index();
    let r = resolver(&backend, &hooks);
    let configs = configs(1);
    let handed_out = r
        .resolve(&kernels(&candidates(&*backend, &configs)))
        .unwrap();
    let memo = r.cache_stats().entries;
    assert!(memo > 0 && backend.cached_on(index) > 0);

    // Bystanders: another backend family on the same index, this family on
    // another index.
    let foreign: KernelCache<u32> =
        KernelCache::new("foreign", &hooks, GuardedCache::new(Handles::Owned));
    let sibling: KernelCache<u32> =
        KernelCache::new(B::NAME, &hooks, GuardedCache::new(Handles::Owned));
    let put = |cache: &KernelCache<u32>, device: usize| {
        let key = KernelCache::<u32>::key::<&str, &str>(device, "k", &Source::from("k"), &[]);
        cache
            .find_or_build(key, device, || Ok::<_, GuardedError>(1))
            .unwrap();
    };
    put(&foreign, index);
    put(&sibling, index + 1);

    // Listeners run before the backend lets go of its device: it can still
    // run kernels (where it could) while they are told.
    let could_run = runs(&*backend);
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let _listener = {
        let (told, backend) = (Arc::clone(&told), Arc::downgrade(&backend));
        hooks.on_device_destroy_for(B::NAME, move |i| {
            let still = backend.upgrade().map(|b| b.can_run());
            told.lock().unwrap().push((i, still));
            Ok(())
        })
    };

    backend.destroy().unwrap();
    assert_eq!(
        *told.lock().unwrap(),
        [(index, Some(could_run))],
        "notified once, before the device was let go"
    );
    assert_eq!(backend.cached(), 0, "its own device evicted");
    assert_eq!(r.cache_stats().entries, 0, "the memo above is gone");
    assert_eq!(foreign.cache().len(), 1, "another family untouched");
    assert_eq!(sibling.cache().len(), 1, "another device untouched");
    assert!(!backend.can_run());

    // What was handed out stays valid (it keeps the device alive)...
    if could_run {
        check_results(
            &*backend,
            &candidates(&*backend, &configs),
            &code(&handed_out),
        );
    }
    // ...but the backend builds nothing more.
    let candidate = &candidates(&*backend, &configs)[0];
    let err = backend.compile(&job(&sources(candidate))).unwrap_err();
    assert!(is_unavailable(&err), "{err:?}");
    match r.resolve(&candidate.kernels) {
        Err(ResolveError::Compile { source, .. }) => assert!(is_unavailable(&source)),
        Err(other) => panic!("expected a compile error, got {other:?}"),
        Ok(_) => panic!("resolved on a destroyed device"),
    }
    // Idempotent: a second destroy only notifies again.
    backend.destroy().unwrap();
    drop(handed_out);

    // A failing listener does not stop the teardown, and is reported after it.
    let hooks = Hooks::new();
    let backend = B::open(&hooks, 0).expect("opened a moment ago");
    compile(&backend, candidate);
    let _failing = hooks.on_device_destroy(|_, _| Err(failing_listener()));
    let err = backend.destroy().unwrap_err();
    assert!(
        matches!(
            &err,
            BackendError::Teardown {
                source: GuardedError::Listener(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(backend.cached(), 0);
    let err = backend.compile(&job(&sources(candidate))).unwrap_err();
    assert!(is_unavailable(&err), "torn down anyway: {err:?}");
}

fn check_foreign<B: Conformant>() {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return;
    };
    let backend = Arc::new(backend);
    let index = backend.device_index();
    let r = resolver(&backend, &hooks);
    let configs = configs(1);
    let before = r
        .resolve(&kernels(&candidates(&*backend, &configs)))
        .unwrap();
    let (cached, memo) = (backend.cached(), r.cache_stats().entries);

    let longer = format!("{}x", B::NAME);
    let empty_variant = format!("{}/", B::NAME);
    for (family, device) in [
        ("foreign", index),
        (longer.as_str(), index),
        (empty_variant.as_str(), index),
        (B::NAME, index + 1),
    ] {
        hooks.notify_device_destroy(family, device).unwrap();
        assert_eq!(backend.cached(), cached, "({family}, {device}) evicted");
        assert_eq!(r.cache_stats().entries, memo, "({family}, {device})");
    }
    let after = r
        .resolve(&kernels(&candidates(&*backend, &configs)))
        .unwrap();
    assert!(after.iter().all(|a| a.outcome == Outcome::Reused));
    assert!(same(&before, &after));

    // A `<family>/<variant>` refinement is this backend's own.
    hooks
        .notify_device_destroy(&format!("{}/variant", B::NAME), index)
        .unwrap();
    assert_eq!(backend.cached(), 0);
    assert_eq!(r.cache_stats().entries, 0);
}

/// Resolves `configs` through a resolver over a `FileStore` at `dir` and
/// drops everything (as a process ending would).
fn fill_store<B: Conformant>(dir: &std::path::Path, configs: &[Config]) -> bool {
    let hooks = Hooks::new();
    let Some(backend) = open::<B>(&hooks) else {
        return false;
    };
    let backend = Arc::new(backend);
    let store: Arc<dyn Store> = Arc::new(FileStore::open(dir).unwrap());
    let r = resolver(&backend, &hooks).with_store(Some(store));
    let resolved = r
        .resolve(&kernels(&candidates(&*backend, configs)))
        .unwrap();
    assert!(resolved.iter().all(|a| a.outcome != Outcome::Stored));
    assert_eq!(r.store_errors(), 0);
    true
}

/// A new backend instance and resolver over the `FileStore` at `dir`: every
/// kernel comes from the store, nothing compiles, and (where the backend runs
/// here) every candidate matches the reference.
fn load_store<B: Conformant>(dir: &std::path::Path, configs: &[Config]) {
    let hooks = Hooks::new();
    let backend = Arc::new(B::open(&hooks, 0).unwrap());
    let store: Arc<dyn Store> = Arc::new(FileStore::open(dir).unwrap());
    let r = resolver(&backend, &hooks).with_store(Some(store));
    let fresh = candidates(&*backend, configs);
    let (resolved, census) = with_census(|| r.resolve(&kernels(&fresh)).unwrap());
    assert_eq!(census.kernels_compiled, 0, "{census:?}");
    assert!(census.programs_loaded > 0, "{census:?}");
    assert!(resolved
        .iter()
        .all(|a| matches!(a.outcome, Outcome::Stored | Outcome::Reused)));
    assert!(resolved.iter().any(|a| a.outcome == Outcome::Stored));
    assert_eq!(r.store_errors(), 0);
    if runs(&*backend) {
        check_results(&*backend, &fresh, &code(&resolved));
    }
}

fn check_fresh_instance<B: Conformant>() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs(2);
    if fill_store::<B>(dir.path(), &configs) {
        load_store::<B>(dir.path(), &configs);
    }
}

/// The store directory a parent hands its child (see `check_fresh_process`).
const CHILD_STORE: &str = "KCACHE_CONFORMANCE_CHILD_STORE";

fn check_fresh_process<B: Conformant>(child: &str) {
    let dir = tempfile::tempdir().unwrap();
    if !fill_store::<B>(dir.path(), &configs(2)) {
        return;
    }
    run_in_fresh_process(child, CHILD_STORE, dir.path());
}

fn child_loads_the_store<B: Conformant>() {
    let dir = std::env::var_os(CHILD_STORE)
        .expect("run by programs_reload_in_a_fresh_process, which names the store");
    load_store::<B>(std::path::Path::new(&dir), &configs(2));
}

// ------------------------------------------------- across real backends ---

/// One available backend, wired on shared hooks, seen through closures.
struct Wired {
    name: &'static str,
    cached: Box<dyn Fn() -> usize>,
    memo: Box<dyn Fn() -> u64>,
    destroy: Box<dyn Fn() -> Result<(), BackendError>>,
}

fn wire<B: Conformant>(hooks: &Hooks) -> Option<Wired> {
    let backend = Arc::new(open::<B>(hooks)?);
    let r = Arc::new(resolver(&backend, hooks));
    r.resolve(&kernels(&candidates(&*backend, &configs(1))))
        .unwrap();
    let (b1, b2) = (Arc::clone(&backend), backend);
    Some(Wired {
        name: B::NAME,
        cached: Box::new(move || b1.cached()),
        memo: Box::new(move || r.cache_stats().entries),
        destroy: Box::new(move || b2.destroy()),
    })
}

/// Every backend's device 0 on one registry: destroying one backend's
/// device evicts nothing of the others, whose index 0 is another device.
#[test]
fn a_destroy_reaches_no_other_real_backend() {
    let hooks = Hooks::new();
    let wired: Vec<Wired> = [
        wire::<OpenCl>(&hooks),
        wire::<Cuda>(&hooks),
        wire::<Vulkan>(&hooks),
    ]
    .into_iter()
    .flatten()
    .collect();
    if wired.len() < 2 {
        eprintln!("skipped: fewer than two backends available");
        return;
    }
    for (i, victim) in wired.iter().enumerate() {
        (victim.destroy)().unwrap();
        assert_eq!((victim.cached)(), 0, "{}", victim.name);
        assert_eq!((victim.memo)(), 0, "{}", victim.name);
        for other in &wired[i + 1..] {
            assert!(
                (other.cached)() > 0,
                "{} evicted {}",
                victim.name,
                other.name
            );
            assert!((other.memo)() > 0, "{} cleared {}", victim.name, other.name);
        }
    }
}
