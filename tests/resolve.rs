//! The resolver's protocol, against a recording test backend.

use kcache::backend::{Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras};
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::canon::segment_kernel_name;
use kcache::resolve::census::with_census;
use kcache::resolve::split::{chunks, programs_for, Split};
use kcache::resolve::{Kernel, Outcome, ResolveError, Resolver, Threads};
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// A compiled program: the symbols it holds and the texts they were compiled from.
#[derive(Debug)]
struct Program {
    id: usize,
    kernels: Vec<(String, String)>,
    options: Vec<String>,
}

impl Program {
    fn has(&self, symbol: &str) -> bool {
        self.kernels.iter().any(|(s, _)| s == symbol)
    }
}

type CompileHook = Box<dyn Fn(&CompileJob<'_>) + Send + Sync>;

/// A program's bytes: its options, then each kernel's symbol and text.
fn encode(job: &CompileJob<'_>) -> Vec<u8> {
    let mut out = job.options.join("\u{2}");
    for k in job.kernels {
        out.push('\u{1}');
        out.push_str(k.symbol);
        out.push('\u{2}');
        out.push_str(k.text);
    }
    out.into_bytes()
}

/// Compiles by recording; fails a group holding a symbol in `fail`.
#[derive(Default)]
struct Recorder {
    compiles: Mutex<Vec<Vec<String>>>,
    next: AtomicUsize,
    fail: Mutex<HashSet<String>>,
    on_compile: Mutex<Option<Arc<CompileHook>>>,
    threads: Mutex<HashSet<std::thread::ThreadId>>,
    loads: AtomicUsize,
    /// Symbols whose key extras say uncacheable.
    uncacheable_keys: Mutex<HashSet<String>>,
    /// Symbols whose compile says it read what its key missed.
    uncacheable_compiles: Mutex<HashSet<String>>,
    /// Whether the backend compiles each kernel of a group on its own.
    isolates: std::sync::atomic::AtomicBool,
    /// What `Backend::key_version` answers.
    key_version: std::sync::atomic::AtomicU32,
}

impl Recorder {
    /// Runs `f` inside every compile from now on.
    fn on_compile(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.on_compile.lock().unwrap() = Some(Arc::new(
            Box::new(move |_: &CompileJob<'_>| f()) as CompileHook
        ));
    }

    fn compiled_symbols(&self) -> Vec<String> {
        self.compiles
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// The identity string is leaked once per change so `identity()` can lend it.
struct Test(Arc<Recorder>, &'static str);

impl Backend for Test {
    type Program = Program;

    fn family(&self) -> &'static str {
        "test"
    }

    fn identity(&self) -> &str {
        self.1
    }

    fn key_version(&self) -> u32 {
        self.0.key_version.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<Program>, BackendError> {
        self.0
            .threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        let hook = self.0.on_compile.lock().unwrap().clone();
        if let Some(hook) = hook {
            hook(job);
        }
        let symbols: Vec<String> = job.kernels.iter().map(|k| k.symbol.to_string()).collect();
        self.0.compiles.lock().unwrap().push(symbols.clone());
        let failing = self.0.fail.lock().unwrap();
        if symbols.iter().any(|s| failing.contains(s)) {
            return Err(BackendError::Compile {
                backend: "test",
                kernels: symbols,
                log: "injected failure".into(),
            });
        }
        let mut seen = HashSet::new();
        assert!(
            symbols.iter().all(|s| seen.insert(s)),
            "two kernels under one symbol in a group"
        );
        Ok(Compiled {
            program: Arc::new(Program {
                id: self.0.next.fetch_add(1, Ordering::SeqCst),
                kernels: job
                    .kernels
                    .iter()
                    .map(|k| (k.symbol.to_string(), k.text.to_string()))
                    .collect(),
                options: job.options.to_vec(),
            }),
            binary: encode(job),
            uncacheable: {
                let marked = self.0.uncacheable_compiles.lock().unwrap();
                symbols
                    .iter()
                    .find(|s| marked.contains(*s))
                    .map(|s| format!("{s} read an unkeyed file"))
            },
        })
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        let marked = self.0.uncacheable_keys.lock().unwrap();
        Ok(KeyExtras {
            uncacheable: marked
                .contains(kernel.symbol)
                .then(|| "a header uses __TIME__".into()),
            // As the C compiler's backend reads its options.
            records_names: kcache::backend::records_names("cc", options),
            ..KeyExtras::default()
        })
    }

    fn isolates_kernels(&self) -> bool {
        self.0.isolates.load(Ordering::SeqCst)
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<Program>, BackendError> {
        self.0.loads.fetch_add(1, Ordering::SeqCst);
        let text = std::str::from_utf8(binary).map_err(|e| BackendError::Load {
            backend: "test",
            reason: e.to_string(),
        })?;
        let mut lines = text.split('\u{1}');
        let options = lines
            .next()
            .unwrap_or_default()
            .split('\u{2}')
            .filter(|o| !o.is_empty())
            .map(String::from)
            .collect();
        let kernels: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once('\u{2}'))
            .map(|(s, t)| (s.to_string(), t.to_string()))
            .collect();
        let program = Program {
            id: self.0.next.fetch_add(1, Ordering::SeqCst),
            kernels,
            options,
        };
        match symbols.iter().find(|s| !program.has(s)) {
            Some(s) => Err(BackendError::MissingSymbol {
                backend: "test",
                symbol: s.to_string(),
            }),
            None => Ok(Arc::new(program)),
        }
    }
}

fn resolver(rec: &Arc<Recorder>, hooks: &Hooks) -> Resolver<Test> {
    resolver_as(rec, hooks, "test-compiler 1.0")
}

fn resolver_as(rec: &Arc<Recorder>, hooks: &Hooks, identity: &'static str) -> Resolver<Test> {
    Resolver::with(
        Arc::new(Test(Arc::clone(rec), identity)),
        Capacity::Fixed(1 << 20),
        hooks,
    )
}

/// A kernel as a renderer would write it, with its loop symbol from a counter.
fn kernel(name: &str, body: &str, counter: usize) -> Kernel {
    Kernel::new(
        name,
        format!("void {name}(float* n1_x) {{ for (int i{counter} = 0; i{counter} < 4; i{counter}++) n1_x[i{counter}] {body}; }}"),
    )
    .bound(["n1_x"])
}

#[test]
fn an_unchanged_kernel_is_compiled_once_whatever_its_generated_names() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let first = r.resolve(&[kernel("k", "+= 1", 3)]).unwrap();
    let second = r.resolve(&[kernel("k", "+= 1", 17)]).unwrap();
    assert_eq!(rec.compiles.lock().unwrap().len(), 1);
    assert_eq!(first[0].outcome, Outcome::Compiled);
    assert_eq!(second[0].outcome, Outcome::Reused);
    assert!(Arc::ptr_eq(&first[0].program, &second[0].program));
    let changed = r.resolve(&[kernel("k", "+= 2", 17)]).unwrap();
    assert_eq!(changed[0].outcome, Outcome::Compiled);
    assert_eq!(rec.compiles.lock().unwrap().len(), 2);
}

#[test]
fn a_hit_answers_the_symbol_the_kernel_was_compiled_under() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let a = segment_kernel_name("mm", 3);
    let b = segment_kernel_name("mm", 5);
    r.resolve(&[kernel(&a, "= 0", 1)]).unwrap();
    let hit = r.resolve(&[kernel(&b, "= 0", 9)]).unwrap();
    assert_eq!(hit[0].outcome, Outcome::Reused);
    assert_eq!(&*hit[0].symbol, a.as_str());
    assert!(hit[0].program.has(&hit[0].symbol));
}

#[test]
fn one_representative_per_distinct_key_and_duplicates_share_it() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let batch = [
        kernel("a", "= 1", 1),
        kernel("b", "= 2", 2),
        kernel("a", "= 1", 3),
        kernel("c", "= 3", 4),
    ];
    let ((), census) = with_census(|| {
        let out = r.resolve(&batch).unwrap();
        assert_eq!(
            out.iter().map(|o| o.outcome).collect::<Vec<_>>(),
            [
                Outcome::Compiled,
                Outcome::Compiled,
                Outcome::Reused,
                Outcome::Compiled
            ]
        );
        assert!(Arc::ptr_eq(&out[0].program, &out[2].program));
    });
    assert_eq!(rec.compiled_symbols(), ["a", "b", "c"]);
    assert_eq!(census.kernels_requested, 4);
    assert_eq!(census.kernels_compiled, 3);
    assert_eq!(census.kernels_reused, 1);
    assert_eq!(census.programs_compiled, 1);
}

#[test]
fn groups_follow_option_lists_in_batch_order() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let batch = [
        kernel("a", "= 1", 1).options(["-O2"]),
        kernel("b", "= 2", 1).options(["-O3"]),
        kernel("c", "= 3", 1).options(["-O2"]),
    ];
    let out = r.resolve(&batch).unwrap();
    assert_eq!(*rec.compiles.lock().unwrap(), [vec!["a", "c"], vec!["b"]]);
    assert_eq!(out[0].program.options, ["-O2"]);
    assert_eq!(out[1].program.options, ["-O3"]);
    assert!(Arc::ptr_eq(&out[0].program, &out[2].program));
}

#[test]
fn two_candidates_rendering_one_symbol_compile_as_separate_programs() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let batch = [
        kernel("k", "= 1", 1),
        kernel("k", "= 2", 2),
        kernel("j", "= 2", 2),
    ];
    let out = r.resolve(&batch).unwrap();
    assert_eq!(*rec.compiles.lock().unwrap(), [vec!["k", "j"], vec!["k"]]);
    assert!(out[1].program.kernels[0].1.contains("= 2"));
    assert!(out.iter().all(|o| o.program.has(&o.symbol)));
}

#[test]
fn the_options_and_the_compiler_are_in_the_key() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    r.resolve(&[kernel("a", "= 1", 1).options(["-O3"])])
        .unwrap();
    assert_eq!(rec.compiles.lock().unwrap().len(), 2);
    let r2 = resolver_as(&rec, &hooks, "test-compiler 2.0");
    let k1 = r.key(&kernel("a", "= 1", 1)).unwrap();
    let k2 = r2.key(&kernel("a", "= 1", 1)).unwrap();
    assert_ne!(k1, k2, "a change of compiler never hits an old entry");
}

#[test]
fn a_change_of_the_backends_key_version_never_hits_an_old_entry() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let before = r.key(&kernel("a", "= 1", 1)).unwrap();
    assert_eq!(before, r.key(&kernel("a", "= 1", 1)).unwrap());
    rec.key_version
        .store(1, std::sync::atomic::Ordering::SeqCst);
    assert_ne!(before, r.key(&kernel("a", "= 1", 1)).unwrap());
}

#[test]
fn a_failing_group_publishes_nothing_earlier_groups_stay_and_a_retry_recompiles() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    rec.fail.lock().unwrap().insert("bad".into());
    let batch = [
        kernel("ok", "= 1", 1).options(["-O1"]),
        kernel("bad", "= 2", 1).options(["-O2"]),
        kernel("later", "= 3", 1).options(["-O3"]),
    ];
    let err = r.resolve(&batch).unwrap_err();
    match &err {
        ResolveError::Compile {
            program, kernels, ..
        } => {
            assert_eq!(*program, 1);
            assert_eq!(kernels, &["bad"]);
        }
        other => panic!("{other}"),
    }
    // The group after the failure never compiled; the one before is published.
    assert_eq!(rec.compiled_symbols(), ["ok", "bad"]);
    rec.fail.lock().unwrap().clear();
    let out = r.resolve(&batch).unwrap();
    assert_eq!(
        out.iter().map(|o| o.outcome).collect::<Vec<_>>(),
        [Outcome::Reused, Outcome::Compiled, Outcome::Compiled]
    );
    assert_eq!(rec.compiled_symbols(), ["ok", "bad", "bad", "later"]);
}

#[test]
fn before_compile_runs_under_the_lock_and_for_an_all_hit_batch_only_with_always_lock() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let r = resolver(&rec, &hooks).before_compile(move |ks| {
        seen.lock()
            .unwrap()
            .push(ks.iter().map(|k| k.symbol.clone()).collect::<Vec<_>>())
    });
    r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    r.resolve(&[kernel("a", "= 1", 2)]).unwrap(); // all hit: no lock, no call
    assert_eq!(*calls.lock().unwrap(), [vec!["a".to_string()]]);

    let calls = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&calls);
    let r = resolver(&rec, &hooks)
        .always_lock(true)
        .before_compile(move |ks| {
            assert!(ks.is_empty() || ks.len() == 1);
            *seen.lock().unwrap() += 1;
        });
    r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    r.resolve(&[kernel("a", "= 1", 2)]).unwrap();
    assert_eq!(*calls.lock().unwrap(), 2);
}

#[test]
fn many_threads_resolving_overlapping_batches_compile_each_distinct_key_once() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = Arc::new(resolver(&rec, &hooks));
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    std::thread::scope(|s| {
        for t in 0..threads {
            let r = Arc::clone(&r);
            let barrier = Arc::clone(&barrier);
            s.spawn(move || {
                barrier.wait();
                for round in 0..50 {
                    // Overlapping windows of 10 distinct bodies, names from
                    // per-thread counters so the texts all differ.
                    let batch: Vec<Kernel> = (0..6)
                        .map(|j| {
                            let body = (round + t + j) % 10;
                            kernel(
                                &format!("k{body}"),
                                &format!("= {body}"),
                                t * 1000 + round * 10 + j,
                            )
                        })
                        .collect();
                    let out = r.resolve(&batch).unwrap();
                    for (k, o) in batch.iter().zip(&out) {
                        assert!(
                            o.program.has(&o.symbol),
                            "answered with a program lacking its symbol"
                        );
                        let (_, text) = o
                            .program
                            .kernels
                            .iter()
                            .find(|(s, _)| *s == *o.symbol)
                            .unwrap();
                        let body = k.symbol.trim_start_matches('k');
                        assert!(
                            text.contains(&format!("= {body};")),
                            "answered with another kernel's code"
                        );
                    }
                }
            });
        }
    });
    let compiled = rec.compiled_symbols();
    let distinct: HashSet<&String> = compiled.iter().collect();
    assert_eq!(
        compiled.len(),
        10,
        "every distinct key compiled exactly once: {compiled:?}"
    );
    assert_eq!(distinct.len(), 10);
}

#[test]
fn a_split_batch_compiles_its_programs_at_once_and_joins_them() {
    for threads in [Threads::Rayon, Threads::Os] {
        let rec = Arc::new(Recorder::default());
        let hooks = Hooks::new();
        let r = resolver(&rec, &hooks)
            .with_split(Some(Split::new(4)))
            .with_threads(threads);
        let batch: Vec<Kernel> = (0..8)
            .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
            .collect();
        let (out, census) = with_census(|| r.resolve(&batch).unwrap());
        // Concurrent compiles record in any order: compare as sorted runs.
        let mut compiled = rec.compiles.lock().unwrap().clone();
        compiled.sort();
        assert_eq!(
            compiled,
            chunks(4, &(0..8).map(|j| format!("k{j}")).collect::<Vec<_>>()),
            "{threads:?}: contiguous runs"
        );
        assert_eq!(census.programs_compiled, 4);
        assert_eq!(census.concurrent_compiles, 4);
        assert_eq!(census.split_capable_compiles, 4);
        assert!(out.iter().all(|o| o.program.has(&o.symbol)));
        let distinct: HashSet<usize> = out.iter().map(|o| o.program.id).collect();
        assert_eq!(distinct.len(), 4);
    }
}

#[test]
fn a_measured_split_before_any_measure_compiles_no_more_programs_than_cores() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks)
        .with_split(Some(Split::new(64)))
        .with_measured_split(true);
    assert_eq!(r.compile_costs(), None, "nothing measured yet");
    let batch: Vec<Kernel> = (0..64)
        .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
        .collect();
    let (out, census) = with_census(|| r.resolve(&batch).unwrap());
    assert_eq!(census.programs_compiled, cores.min(64) as u64);
    assert!(out.iter().all(|o| o.program.has(&o.symbol)));
    // The same resolver without the measure splits by count alone.
    let rec = Arc::new(Recorder::default());
    let r = resolver(&rec, &hooks).with_split(Some(Split::new(64)));
    let (_, census) = with_census(|| r.resolve(&batch).unwrap());
    assert_eq!(census.programs_compiled, 64);
}

#[test]
fn split_compiles_really_run_at_once() {
    let rec = Arc::new(Recorder::default());
    let barrier = Arc::new(Barrier::new(3));
    let b = Arc::clone(&barrier);
    // Each of the three compiles waits for the other two: only concurrent
    // compiles get past the barrier.
    rec.on_compile(move || {
        b.wait();
    });
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks)
        .with_split(Some(Split::new(3)))
        .with_threads(Threads::Os);
    let batch: Vec<Kernel> = (0..3)
        .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
        .collect();
    r.resolve(&batch).unwrap();
    assert_eq!(rec.threads.lock().unwrap().len(), 3);
    assert!(
        rec.threads
            .lock()
            .unwrap()
            .contains(&std::thread::current().id()),
        "the first compiles on the calling thread"
    );
}

#[test]
fn a_split_batch_publishes_every_success_and_returns_the_first_failure_in_batch_order() {
    let rec = Arc::new(Recorder::default());
    rec.fail
        .lock()
        .unwrap()
        .extend(["k2".to_string(), "k6".to_string()]);
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks).with_split(Some(Split::new(4)));
    let batch: Vec<Kernel> = (0..8)
        .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
        .collect();
    match r.resolve(&batch).unwrap_err() {
        ResolveError::Compile {
            program,
            programs,
            kernels,
            ..
        } => {
            assert_eq!((program, programs), (1, 4));
            assert_eq!(kernels, ["k2", "k3"]);
        }
        other => panic!("{other}"),
    }
    rec.fail.lock().unwrap().clear();
    rec.compiles.lock().unwrap().clear();
    let out = r.resolve(&batch).unwrap();
    // Programs 0 and 2 were published; the four kernels of 1 and 3 compile
    // again, now split four ways.
    let mut again = rec.compiles.lock().unwrap().clone();
    again.sort();
    assert_eq!(again, [vec!["k2"], vec!["k3"], vec!["k6"], vec!["k7"]]);
    assert_eq!(
        out.iter().filter(|o| o.outcome == Outcome::Reused).count(),
        4
    );
}

#[test]
fn a_resolver_configured_without_a_split_compiles_one_program() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks)
        .with_split(Some(Split::new(4)))
        .with_split(None);
    let batch: Vec<Kernel> = (0..4)
        .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
        .collect();
    let whole = r.resolve_counted(&batch).unwrap().census;
    assert_eq!(whole.programs_compiled, 1);
    assert_eq!(whole.concurrent_compiles, 0);
    assert_eq!(
        whole.split_capable_compiles, 1,
        "recorded whether or not it split"
    );
}

#[test]
fn split_capable_compiles_are_recorded_with_the_code_cache_disabled() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = Resolver::with(
        Arc::new(Test(Arc::clone(&rec), "t")),
        Capacity::Fixed(0),
        &hooks,
    );
    let (_, c) = with_census(|| {
        r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
        r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    });
    assert_eq!(c.split_capable_compiles, 2);
    assert_eq!(c.programs_compiled, 2);
}

#[test]
fn a_clear_empties_the_code_cache_and_a_compile_spanning_it_is_not_published() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    hooks.notify_clear_all().unwrap();
    assert_eq!(r.cache_stats().entries, 0);
    // Now a clear lands in the middle of a compile (as a backend's around_clear would).
    let h = hooks.clone();
    rec.on_compile(move || {
        h.notify_clear_all().unwrap();
    });
    let out = r.resolve(&[kernel("b", "= 2", 1)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled);
    assert!(
        out[0].program.has("b"),
        "the answer is still good: the program is reference counted"
    );
    assert_eq!(
        r.cache_stats().entries,
        0,
        "nothing published over the clear"
    );
    *rec.on_compile.lock().unwrap() = None; // compile plainly again
    r.resolve(&[kernel("b", "= 2", 1)]).unwrap();
    assert_eq!(rec.compiled_symbols(), ["a", "b", "b"]);
}

#[test]
fn only_its_own_devices_destroy_empties_the_code_cache() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    hooks.notify_device_destroy("other", 0).unwrap();
    hooks.notify_device_destroy("test", 1).unwrap();
    assert_eq!(r.cache_stats().entries, 1);
    hooks.notify_device_destroy("test/variant", 0).unwrap();
    assert_eq!(r.cache_stats().entries, 0);
}

proptest! {
    #[test]
    fn programs_for_stays_within_its_bounds(max in 0usize..10, min in 0usize..10, n in 0usize..200) {
        let k = programs_for(Split { max_programs: max, min_kernels: min }, n);
        if n == 0 {
            prop_assert_eq!(k, 0);
        } else {
            prop_assert!(k >= 1 && k <= n);
            prop_assert!(k <= max.max(1));
            if let Some(by_size) = n.checked_div(min) {
                prop_assert!(k <= by_size.max(1));
            }
        }
    }

    #[test]
    fn chunks_are_contiguous_balanced_and_cover_everything(k in 0usize..12, n in 0usize..100) {
        let idxs: Vec<usize> = (0..n).collect();
        let runs = chunks(k, &idxs);
        let flat: Vec<usize> = runs.iter().flatten().copied().collect();
        prop_assert_eq!(flat, idxs);
        prop_assert!(runs.iter().all(|r| !r.is_empty()));
        prop_assert!(runs.len() <= k.max(1));
        if let (Some(a), Some(b)) = (runs.iter().map(Vec::len).min(), runs.iter().map(Vec::len).max()) {
            prop_assert!(b - a <= 1, "balanced by count");
        }
    }
}

// ---------------------------------------------------------------------------
// The second tier: code cache, then persistent store, then compile.

use kcache::resolve::stored;
use kcache::store::{FileStore, MemoryStore, Store, StoreError};

#[test]
fn a_fresh_resolver_gets_a_stored_program_without_compiling() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let batch = [
        kernel("a", "= 1", 1),
        kernel("b", "= 2", 1),
        kernel("a", "= 1", 7),
    ];
    let first = Arc::new(Recorder::default());
    {
        let store: Arc<dyn Store> = Arc::new(FileStore::open(dir.path()).unwrap());
        let r = resolver(&first, &hooks).with_store(Some(store));
        r.resolve(&batch).unwrap();
    }
    // As another process would: a new backend, a new resolver, the same directory.
    let second = Arc::new(Recorder::default());
    let store: Arc<dyn Store> = Arc::new(FileStore::open(dir.path()).unwrap());
    let r = resolver(&second, &hooks).with_store(Some(store));
    let (out, census) = with_census(|| {
        r.resolve(&[
            kernel("a", "= 1", 40),
            kernel("b", "= 2", 41),
            kernel("a", "= 1", 42),
        ])
        .unwrap()
    });
    assert!(
        second.compiles.lock().unwrap().is_empty(),
        "nothing compiled"
    );
    assert_eq!(
        second.loads.load(Ordering::SeqCst),
        1,
        "the program is loaded once"
    );
    assert_eq!(
        out.iter().map(|o| o.outcome).collect::<Vec<_>>(),
        [Outcome::Stored, Outcome::Stored, Outcome::Reused]
    );
    assert!(out.iter().all(|o| o.program.has(&o.symbol)));
    assert_eq!(
        (
            census.kernels_stored,
            census.programs_loaded,
            census.kernels_compiled
        ),
        (2, 1, 0)
    );
    // Now it is in the code cache too.
    assert_eq!(
        r.resolve(&[kernel("b", "= 2", 3)]).unwrap()[0].outcome,
        Outcome::Reused
    );
}

#[test]
fn a_changed_kernel_misses_the_store() {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 20));
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    let fresh = Arc::new(Recorder::default());
    let out = resolver(&fresh, &hooks)
        .with_store(Some(store))
        .resolve(&[kernel("a", "= 2", 1)])
        .unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled);
}

/// Compiles `k` with a resolver of its own over `store`, as an earlier
/// process would have.
fn compile_into(store: &Arc<dyn Store>, hooks: &Hooks, k: Kernel) {
    let rec = Arc::new(Recorder::default());
    resolver(&rec, hooks)
        .with_store(Some(Arc::clone(store)))
        .resolve(&[k])
        .unwrap();
}

/// A store whose every operation fails, as a full or read-only disk would.
#[derive(Debug, Default)]
struct Broken {
    calls: AtomicUsize,
}

impl Store for Broken {
    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(StoreError::Io {
            op: "read",
            path: "/broken".into(),
            source: std::io::Error::from_raw_os_error(libc_eio()),
        })
    }
    fn put(&self, _key: &[u8], _value: &[u8]) -> Result<(), StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(StoreError::Io {
            op: "write",
            path: "/broken".into(),
            source: std::io::Error::from_raw_os_error(28),
        })
    }
    fn remove(&self, _key: &[u8]) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn clear(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn len(&self) -> Result<usize, StoreError> {
        Ok(0)
    }
}

fn libc_eio() -> i32 {
    5
}

#[test]
fn a_store_error_never_fails_a_compile() {
    let hooks = Hooks::new();
    let broken = Arc::new(Broken::default());
    let rec = Arc::new(Recorder::default());
    let r = resolver(&rec, &hooks).with_store(Some(broken.clone() as Arc<dyn Store>));
    let out = r
        .resolve(&[kernel("a", "= 1", 1), kernel("b", "= 2", 1)])
        .unwrap();
    assert!(out.iter().all(|o| o.outcome == Outcome::Compiled));
    assert!(broken.calls.load(Ordering::SeqCst) >= 2);
    assert!(r.store_errors() >= 2, "each failure is counted");
    // And the code cache still works above it.
    assert_eq!(
        r.resolve(&[kernel("a", "= 1", 9)]).unwrap()[0].outcome,
        Outcome::Reused
    );
}

#[test]
fn a_stored_program_that_fails_to_load_is_compiled_instead() {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 20));
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    // Damage every stored program (the store's checksum is over the damaged
    // bytes), inline ones included: bytes that do not load, under the id
    // they hash to.
    let damaged = b"\xff\xfe";
    let mut seen = 0;
    for e in store.list().unwrap() {
        if e.key.starts_with(b"kcache/program/") {
            store.put(&e.key, damaged).unwrap();
            seen += 1;
        }
        if let Some(key) = e.key.strip_prefix(b"kcache/kernel/") {
            let key = kcache::key::Digest(key.try_into().unwrap());
            let bytes = store.get(&e.key).unwrap().unwrap();
            let record = stored::read_record(&key, bytes).unwrap();
            if record.inline().is_some() {
                let id = stored::program_id(damaged);
                let forged = stored::encode_inline_record(&key, &id, &record.symbol, damaged);
                store.put(&e.key, &forged).unwrap();
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 1, "one program, damaged");
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(store));
    let out = r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled);
    assert_eq!(fresh.compiles.lock().unwrap().len(), 1);
}

/// A memory store that counts its reads.
#[derive(Debug)]
struct CountingReads {
    inner: MemoryStore,
    gets: AtomicUsize,
}

impl CountingReads {
    fn new() -> Self {
        CountingReads {
            inner: MemoryStore::new(1 << 24),
            gets: AtomicUsize::new(0),
        }
    }
}

impl Store for CountingReads {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value)
    }
    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        self.inner.remove(key)
    }
    fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear()
    }
    fn len(&self) -> Result<usize, StoreError> {
        self.inner.len()
    }
    fn list(&self) -> Result<Vec<kcache::store::EntryInfo>, StoreError> {
        self.inner.list()
    }
}

/// Each kernel record in `store`: its key, its record.
fn records(store: &dyn Store) -> Vec<(kcache::key::Digest, stored::Record)> {
    let mut out = Vec::new();
    for e in store.list().unwrap() {
        if let Some(key) = e.key.strip_prefix(b"kcache/kernel/") {
            let key = kcache::key::Digest(key.try_into().unwrap());
            let bytes = store.get(&e.key).unwrap().unwrap();
            out.push((key, stored::read_record(&key, bytes).unwrap()));
        }
    }
    out
}

fn program_entries(store: &dyn Store) -> usize {
    let list = store.list().unwrap();
    list.iter()
        .filter(|e| e.key.starts_with(b"kcache/program/"))
        .count()
}

#[test]
fn a_small_program_rides_in_its_record_and_a_hit_is_one_read() {
    let hooks = Hooks::new();
    let store = Arc::new(CountingReads::new());
    let dyn_store: Arc<dyn Store> = store.clone();
    compile_into(&dyn_store, &hooks, kernel("a", "= 1", 1));
    let recs = records(&*store);
    assert_eq!(recs.len(), 1);
    assert!(
        recs[0].1.inline().is_some(),
        "the record carries its program"
    );
    assert_eq!(program_entries(&*store), 0, "and it is not stored twice");
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(dyn_store));
    store.gets.store(0, Ordering::SeqCst);
    let out = r.resolve(&[kernel("a", "= 1", 5)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Stored);
    assert!(out[0].program.has(&out[0].symbol));
    assert!(fresh.compiles.lock().unwrap().is_empty());
    assert_eq!(store.gets.load(Ordering::SeqCst), 1, "one read per hit");
}

#[test]
fn a_large_program_is_stored_once_beside_records_that_name_it() {
    let hooks = Hooks::new();
    let store = Arc::new(CountingReads::new());
    let dyn_store: Arc<dyn Store> = store.clone();
    let big = format!("= 1{}", " + 0".repeat(stored::INLINE_MAX_BYTES / 4 + 1));
    compile_into(&dyn_store, &hooks, kernel("a", &big, 1));
    let recs = records(&*store);
    assert_eq!(recs.len(), 1);
    assert!(recs[0].1.inline().is_none());
    assert_eq!(program_entries(&*store), 1);
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(dyn_store));
    store.gets.store(0, Ordering::SeqCst);
    let out = r.resolve(&[kernel("a", &big, 2)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Stored);
    assert_eq!(
        store.gets.load(Ordering::SeqCst),
        2,
        "the record, then the program"
    );
}

#[test]
fn a_record_in_the_version_1_layout_is_still_answered_through_its_program() {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 24));
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    for (key, record) in records(&*store) {
        let binary = record.inline().unwrap().to_vec();
        store
            .put(&stored::program_entry_key(&record.program), &binary)
            .unwrap();
        store
            .put(
                &stored::kernel_entry_key(&key),
                &stored::encode_record(&record.program, &record.symbol),
            )
            .unwrap();
    }
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(store));
    let out = r.resolve(&[kernel("a", "= 1", 2)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Stored);
    assert!(fresh.compiles.lock().unwrap().is_empty());
}

#[test]
fn a_record_copied_under_another_kernels_key_is_a_miss() {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 24));
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    let (a_key, _) = records(&*store).remove(0);
    store.clear().unwrap();
    compile_into(&store, &hooks, kernel("b", "= 2", 1));
    let b_entry = store.list().unwrap().remove(0).key;
    assert!(b_entry.starts_with(b"kcache/kernel/"));
    // b's record, byte for byte, where a's belongs: its framing is valid
    // (the store's own put), and it carries b's program.
    let b_record = store.get(&b_entry).unwrap().unwrap();
    store
        .put(&stored::kernel_entry_key(&a_key), &b_record)
        .unwrap();
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(store));
    let out = r.resolve(&[kernel("a", "= 1", 3)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled, "not b's program");
    assert!(out[0]
        .program
        .kernels
        .iter()
        .all(|(_, text)| text.contains("= 1")));
}

#[test]
fn a_record_whose_program_is_not_its_id_is_refused_and_removed() {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 24));
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    let (key, record) = records(&*store).remove(0);
    let mut flipped = record.inline().unwrap().to_vec();
    *flipped.last_mut().unwrap() ^= 1;
    let forged = stored::encode_inline_record(&key, &record.program, &record.symbol, &flipped);
    store.put(&stored::kernel_entry_key(&key), &forged).unwrap();
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(Arc::clone(&store)));
    let out = r.resolve(&[kernel("a", "= 1", 2)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled);
    assert_eq!(r.store_errors(), 1, "counted");
    // The compile stored a genuine record in its place.
    let (_, again) = records(&*store).remove(0);
    assert_eq!(stored::program_id(again.inline().unwrap()), again.program);
}

#[test]
fn a_truncated_or_flipped_record_file_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let file = Arc::new(FileStore::open(dir.path()).unwrap());
    let store: Arc<dyn Store> = file.clone();
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    let (key, _) = records(&*store).remove(0);
    let path = file.entry_path(&stored::kernel_entry_key(&key));
    let damages: [fn(&mut Vec<u8>); 3] = [
        |b| {
            b.pop();
        },
        |b| *b.last_mut().unwrap() ^= 0x40,
        |b| b.truncate(b.len() / 2),
    ];
    for (n, damage) in damages.into_iter().enumerate() {
        let mut bytes = std::fs::read(&path).unwrap();
        damage(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let fresh = Arc::new(Recorder::default());
        let r = resolver(&fresh, &hooks).with_store(Some(Arc::clone(&store)));
        let out = r.resolve(&[kernel("a", "= 1", 2)]).unwrap();
        assert_eq!(out[0].outcome, Outcome::Compiled, "damage {n}");
        // Recompiled and stored afresh: a hit again.
        let fresh = Arc::new(Recorder::default());
        let r = resolver(&fresh, &hooks).with_store(Some(Arc::clone(&store)));
        let out = r.resolve(&[kernel("a", "= 1", 3)]).unwrap();
        assert_eq!(out[0].outcome, Outcome::Stored, "damage {n}");
    }
}

#[test]
fn a_compile_spanning_its_devices_destroy_is_not_published() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    // The device goes while the compile runs (as a backend's destroy path
    // notifies before it releases anything).
    let h = hooks.clone();
    rec.on_compile(move || {
        h.notify_device_destroy("test", 0).unwrap();
    });
    let out = r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    assert!(
        out[0].program.has("a"),
        "the answer stays valid: the program is reference counted"
    );
    assert_eq!(
        r.cache_stats().entries,
        0,
        "nothing published over the destroy"
    );
    // A foreign device's destroy mid-compile does not stop the publish.
    let h = hooks.clone();
    rec.on_compile(move || {
        h.notify_device_destroy("test", 1).unwrap();
        h.notify_device_destroy("other", 0).unwrap();
    });
    r.resolve(&[kernel("b", "= 2", 1)]).unwrap();
    assert_eq!(r.cache_stats().entries, 1);
}

/// Collects what `tracing` writes, for the "say so once" check.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_store_is_reported_once_and_every_failure_counted() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .finish();
    let hooks = Hooks::new();
    let rec = Arc::new(Recorder::default());
    let broken = Arc::new(Broken::default());
    let r = resolver(&rec, &hooks).with_store(Some(broken as Arc<dyn Store>));
    tracing::subscriber::with_default(subscriber, || {
        for j in 0..3 {
            r.resolve(&[kernel(&format!("k{j}"), "= 1", 1)]).unwrap();
        }
    });
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert_eq!(text.matches("compiling without it").count(), 1, "{text}");
    assert!(
        r.store_errors() >= 6,
        "a get and a put per compile: {}",
        r.store_errors()
    );
}

// ---------------------------------------------------------------------------
// Groups hold only kernels proved isolated; uncacheable kernels compile alone,
// every time, and are never published or stored.

/// The programs the recorder compiled, as symbol lists.
fn programs(rec: &Recorder) -> Vec<Vec<String>> {
    rec.compiles.lock().unwrap().clone()
}

fn separate(a: &str, b: &str) -> Vec<Vec<String>> {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let out = resolver(&rec, &hooks)
        .resolve(&[Kernel::new("a", a), Kernel::new("b", b)])
        .unwrap();
    assert!(out.iter().all(|o| o.outcome == Outcome::Compiled));
    programs(&rec)
}

#[test]
fn isolated_kernels_share_a_program() {
    assert_eq!(
        separate(
            "void a(float* y) { y[0] = 1; }",
            "void b(float* y) { y[0] = 2; }"
        ),
        [vec!["a", "b"]]
    );
}

#[test]
fn a_macro_defined_in_one_kernel_and_used_by_another_compiles_apart() {
    assert_eq!(
        separate(
            "#define N 4\nvoid a(float* y) { y[0] = N; }",
            "void b(float* y) { y[0] = N; }"
        ),
        [vec!["a"], vec!["b"]]
    );
}

#[test]
fn a_helper_of_one_kernel_called_by_another_compiles_apart() {
    assert_eq!(
        separate(
            "static float h(float x) { return x; }\nvoid a(float* y) { y[0] = h(1); }",
            "void b(float* y) { y[0] = h(2); }"
        ),
        [vec!["a"], vec!["b"]]
    );
}

#[test]
fn a_static_declared_by_both_kernels_compiles_apart() {
    assert_eq!(
        separate(
            "static int s = 1;\nvoid a(int* y) { y[0] = s; }",
            "static int s = 2;\nvoid b(int* y) { y[0] = s; }"
        ),
        [vec!["a"], vec!["b"]]
    );
}

#[test]
fn a_counter_kernel_compiles_apart() {
    assert_eq!(
        separate(
            "void a(int* y) { y[0] = 1; }",
            "void b(int* y) { y[0] = __COUNTER__; }"
        ),
        [vec!["a"], vec!["b"]]
    );
}

#[test]
fn a_pragma_kernel_compiles_apart() {
    assert_eq!(
        separate(
            "#pragma GCC optimize(\"O0\")\nvoid a(int* y) { y[0] = 1; }",
            "void b(int* y) { y[0] = 2; }"
        ),
        [vec!["a"], vec!["b"]]
    );
}

#[test]
fn a_shared_directive_prefix_is_handed_to_the_backend_once() {
    let p = "#include <math.h>\n#define sq(x) ((x) * (x))\n";
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let out = resolver(&rec, &hooks)
        .resolve(&[
            Kernel::new("a", format!("{p}void a(float* y) {{ y[0] = sq(1); }}")),
            Kernel::new("b", format!("{p}void b(float* y) {{ y[0] = sq(2); }}")),
        ])
        .unwrap();
    let texts = &out[0].program.kernels;
    assert_eq!(programs(&rec), [vec!["a", "b"]]);
    assert!(texts[0].1.starts_with(p));
    assert_eq!(
        texts[1].1.trim_start(),
        "void b(float* y) { y[0] = sq(2); }"
    );
    // Its code stays on the line it was on, for the compiler's diagnostics.
    assert_eq!(texts[1].1.lines().count(), 3);
}

#[test]
fn a_backend_that_isolates_kernels_groups_them_all() {
    let rec = Arc::new(Recorder::default());
    rec.isolates.store(true, Ordering::SeqCst);
    let hooks = Hooks::new();
    resolver(&rec, &hooks)
        .resolve(&[
            Kernel::new("a", "#define N 4\nvoid a(float* y) { y[0] = N; }"),
            Kernel::new("b", "void b(float* y) { y[0] = N; }"),
        ])
        .unwrap();
    assert_eq!(programs(&rec), [vec!["a", "b"]]);
}

/// Resolves `k` twice with one resolver and once with a fresh one over the
/// same store: every resolve must compile it, and the store stays empty.
fn assert_uncacheable(rec: &Arc<Recorder>, k: Kernel) {
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 20));
    let r = resolver(rec, &hooks).with_store(Some(Arc::clone(&store)));
    for round in 0..2 {
        let (out, census) = with_census(|| r.resolve(std::slice::from_ref(&k)).unwrap());
        assert_eq!(out[0].outcome, Outcome::Uncacheable, "round {round}");
        assert_eq!(census.kernels_uncacheable, 1);
        assert_eq!(census.kernels_compiled, 1);
        assert!(out[0].program.has(&out[0].symbol));
    }
    assert_eq!(programs(rec).len(), 2, "compiled on every resolve");
    assert_eq!(store.list().unwrap().len(), 0, "nothing stored");
    let fresh = resolver(rec, &hooks).with_store(Some(store));
    assert_eq!(
        fresh.resolve(&[k]).unwrap()[0].outcome,
        Outcome::Uncacheable
    );
    assert_eq!(programs(rec).len(), 3);
}

#[test]
fn a_time_macro_kernel_compiles_on_every_resolve_and_is_never_stored() {
    let rec = Arc::new(Recorder::default());
    assert_uncacheable(
        &rec,
        Kernel::new("t", "void t(char** s) { *s = __TIME__; }"),
    );
}

#[test]
fn a_time_macro_in_a_directive_makes_a_kernel_uncacheable() {
    let rec = Arc::new(Recorder::default());
    assert_uncacheable(
        &rec,
        Kernel::new(
            "t",
            "#define WHEN __DATE__\nvoid t(char** s) { *s = WHEN; }",
        ),
    );
}

#[test]
fn backend_key_extras_can_make_a_kernel_uncacheable() {
    let rec = Arc::new(Recorder::default());
    rec.uncacheable_keys.lock().unwrap().insert("u".into());
    assert_uncacheable(&rec, Kernel::new("u", "void u(int* y) { y[0] = 1; }"));
}

#[test]
fn a_compile_that_reads_what_its_key_missed_is_never_published() {
    let rec = Arc::new(Recorder::default());
    rec.uncacheable_compiles.lock().unwrap().insert("c".into());
    assert_uncacheable(&rec, Kernel::new("c", "void c(int* y) { y[0] = 1; }"));
}

#[test]
fn uncacheable_kernels_compile_alone_and_never_share_a_representative() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let t = "void t(char** s) { *s = __TIME__; }";
    let out = resolver(&rec, &hooks)
        .resolve(&[
            Kernel::new("a", "void a(int* y) { y[0] = 1; }"),
            Kernel::new("t", t),
            Kernel::new("t", t),
        ])
        .unwrap();
    assert_eq!(programs(&rec), [vec!["a"], vec!["t"], vec!["t"]]);
    assert_eq!(out[0].outcome, Outcome::Compiled);
    assert!(out[1..].iter().all(|o| o.outcome == Outcome::Uncacheable));
}

#[test]
fn the_tune_renderers_segments_share_one_program_in_every_language() {
    use kcache::backend::Language;
    use kcache::tune::render::{render, search_space, Problem};
    let p = Problem { m: 4, k: 8, n: 4 };
    for lang in [Language::C, Language::OpenCl, Language::Cuda] {
        let rec = Arc::new(Recorder::default());
        let hooks = Hooks::new();
        let candidate = render(search_space()[0], p, lang);
        let n = candidate.kernels.len();
        resolver(&rec, &hooks).resolve(&candidate.kernels).unwrap();
        let compiled = programs(&rec);
        assert_eq!(compiled.len(), 1, "{lang:?}: {compiled:?}");
        assert_eq!(compiled[0].len(), n, "{lang:?}");
    }
}

#[test]
fn an_option_macro_using_a_position_macro_keys_its_users_on_their_raw_text() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let at = |counter: usize, options: &[&str]| {
        r.key(&kernel("k", "= L", counter).options(options.iter().copied()))
            .unwrap()
    };
    // Without the option, renamed twins share a key; with it, they do not.
    assert_eq!(at(3, &["-DL=1"]), at(17, &["-DL=1"]));
    assert_ne!(at(3, &["-DL=__LINE__"]), at(17, &["-DL=__LINE__"]));
    assert_ne!(
        at(3, &["-D", "L=M", "-DM=__COUNTER__"]),
        at(17, &["-D", "L=M", "-DM=__COUNTER__"])
    );
}

#[test]
fn a_debug_option_keys_renamed_twins_apart_and_compiles_each_alone() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let at = |counter: usize, options: &[&str]| {
        r.key(&kernel("k", "= 1", counter).options(options.iter().copied()))
            .unwrap()
    };
    // Debug information names the loop symbol: renamed twins differ there.
    assert_eq!(at(3, &["-O2"]), at(17, &["-O2"]));
    assert_ne!(at(3, &["-O2", "-g"]), at(17, &["-O2", "-g"]));
    assert_eq!(at(3, &["-g0"]), at(17, &["-g0"]));
    // Isolated kernels group without it; under it each compiles alone, its
    // lines its own, not the group's.
    let pair = |options: &[&str]| {
        [
            Kernel::new("a", "void a(int* y) { y[0] = 1; }").options(options.iter().copied()),
            Kernel::new("b", "void b(int* y) { y[0] = 2; }").options(options.iter().copied()),
        ]
    };
    r.resolve(&pair(&["-O1"])).unwrap();
    r.resolve(&pair(&["-O1", "-g"])).unwrap();
    assert_eq!(programs(&rec), [vec!["a", "b"], vec!["a"], vec!["b"]]);
}

#[test]
fn an_option_macro_using_a_time_macro_makes_every_kernel_uncacheable() {
    let rec = Arc::new(Recorder::default());
    assert_uncacheable(&rec, kernel("k", "= 1", 1).options(["-DSTAMP=__TIME__"]));
}

#[test]
fn an_uncacheable_kernel_compiles_alone_even_where_kernels_are_isolated() {
    let rec = Arc::new(Recorder::default());
    rec.isolates.store(true, Ordering::SeqCst);
    let hooks = Hooks::new();
    let out = resolver(&rec, &hooks)
        .resolve(&[
            Kernel::new("a", "void a(int* y) { y[0] = 1; }"),
            Kernel::new("t", "void t(char** s) { *s = __TIME__; }"),
            Kernel::new("b", "void b(int* y) { y[0] = 2; }"),
        ])
        .unwrap();
    assert_eq!(programs(&rec), [vec!["a", "b"], vec!["t"]]);
    assert_eq!(out[0].outcome, Outcome::Compiled);
    assert_eq!(out[1].outcome, Outcome::Uncacheable);
}

// ---------------------------------------------------------------------------
// The builder, and the census a resolve returns.

fn built(rec: &Arc<Recorder>) -> kcache::resolve::ResolverBuilder<'static, Test> {
    Resolver::builder(Arc::new(Test(Arc::clone(rec), "test-compiler 1.0")))
}

fn four_kernels() -> Vec<Kernel> {
    (0..4)
        .map(|j| kernel(&format!("k{j}"), &format!("= {j}"), j))
        .collect()
}

#[test]
fn the_builder_defaults_to_no_store() {
    let hooks = Hooks::new();
    let r = built(&Arc::new(Recorder::default())).hooks(&hooks).build();
    assert!(r.store().is_none());
}

#[test]
fn the_builder_defaults_to_no_split() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = built(&rec).hooks(&hooks).build();
    assert_eq!(r.split(), None);
    let census = r.resolve_counted(&four_kernels()).unwrap().census;
    assert_eq!(
        (census.programs_compiled, census.concurrent_compiles),
        (1, 0)
    );
}

#[test]
fn the_builder_defaults_to_rayon_threads() {
    let hooks = Hooks::new();
    let r = built(&Arc::new(Recorder::default())).hooks(&hooks).build();
    assert_eq!(r.threads(), Threads::Rayon);
}

#[test]
fn the_builder_defaults_to_taking_no_lock_for_an_all_hit_batch() {
    let hooks = Hooks::new();
    let r = built(&Arc::new(Recorder::default())).hooks(&hooks).build();
    assert!(!r.always_locks());
}

#[test]
fn the_builder_defaults_to_no_before_compile() {
    let hooks = Hooks::new();
    let r = built(&Arc::new(Recorder::default())).hooks(&hooks).build();
    assert!(!r.has_before_compile());
}

#[test]
fn the_builder_sets_every_setting_it_is_given() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let r = built(&rec)
        .hooks(&hooks)
        .store(Arc::new(MemoryStore::new(1 << 20)))
        .code_cache_bytes(12345)
        .split(Split::new(2))
        .threads(Threads::Os)
        .always_lock(true)
        .before_compile(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert!(r.store().is_some());
    assert_eq!(r.code_cache_bytes(), 12345);
    assert_eq!(r.split(), Some(Split::new(2)));
    assert_eq!(r.threads(), Threads::Os);
    assert!(r.always_locks());
    r.resolve(&four_kernels()).unwrap();
    r.resolve(&four_kernels()).unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "always_lock runs before_compile for the all-hit batch too"
    );
}

#[test]
fn a_builders_hooks_clear_its_code_cache() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = built(&rec).hooks(&hooks).build();
    r.resolve(&four_kernels()).unwrap();
    hooks.notify_clear_all().unwrap();
    let again = r.resolve(&four_kernels()).unwrap();
    assert!(again.iter().all(|a| a.outcome == Outcome::Compiled));
}

#[test]
fn a_split_in_the_builder_is_honoured_without_any_scope() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let r = built(&rec).hooks(&hooks).split(Split::new(4)).build();
    let census = r.resolve_counted(&four_kernels()).unwrap().census;
    assert_eq!(
        (census.programs_compiled, census.concurrent_compiles),
        (4, 4)
    );
    assert_eq!(rec.compiles.lock().unwrap().len(), 4);
}

#[test]
fn the_returned_census_equals_the_thread_local_one() {
    let rec = Arc::new(Recorder::default());
    let hooks = Hooks::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1 << 20));
    compile_into(&store, &hooks, kernel("k0", "= 0", 0));
    let r = resolver(&rec, &hooks).with_store(Some(store));
    let mut batch = four_kernels();
    batch.push(kernel("k1", "= 1", 9));
    let (counted, local) = with_census(|| r.resolve_counted(&batch).unwrap());
    assert_eq!(counted.census, local);
    assert_eq!(counted.answers.len(), batch.len());
    assert_eq!(
        (
            local.kernels_requested,
            local.kernels_stored,
            local.kernels_compiled
        ),
        (5, 1, 3)
    );
}

#[test]
fn store_lookups_count_kernels_not_store_reads() {
    let hooks = Hooks::new();
    let store = Arc::new(MemoryStore::new(1 << 20));
    let batch = [kernel("a", "= 1", 1), kernel("b", "= 2", 1)];
    let first = built(&Arc::new(Recorder::default()))
        .hooks(&hooks)
        .store(Arc::clone(&store))
        .build();
    first.resolve(&batch).unwrap();
    assert_eq!(
        first.store_lookups(),
        kcache::resolve::StoreLookups { hits: 0, misses: 2 }
    );
    let reads_before = store.stats().unwrap();
    assert_eq!((reads_before.hits, reads_before.misses), (0, 2));
    let second = built(&Arc::new(Recorder::default()))
        .hooks(&hooks)
        .store(Arc::clone(&store))
        .build();
    let out = second
        .resolve(&[
            kernel("a", "= 1", 5),
            kernel("b", "= 2", 6),
            kernel("a", "= 1", 7),
            kernel("c", "= 3", 8),
        ])
        .unwrap();
    assert_eq!(out[0].outcome, Outcome::Stored);
    assert_eq!(
        second.store_lookups(),
        kcache::resolve::StoreLookups { hits: 2, misses: 1 },
        "a and b from the store once each (a's repeat shares its key), c missed"
    );
    let after = store.stats().unwrap();
    assert_eq!(
        (
            after.hits - reads_before.hits,
            after.misses - reads_before.misses
        ),
        (2, 1),
        "the store's stats count kernels too, not its three reads: {after:?}"
    );
}

#[test]
fn a_direct_store_get_is_still_counted_by_the_store() {
    let store = MemoryStore::new(1 << 20);
    store.put(b"k", b"v").unwrap();
    store.get(b"k").unwrap();
    store.get(b"absent").unwrap();
    let st = store.stats().unwrap();
    assert_eq!((st.hits, st.misses), (1, 1));
}

#[test]
fn a_kept_record_file_overwritten_in_place_with_another_kernels_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let file = Arc::new(FileStore::open(dir.path()).unwrap());
    let store: Arc<dyn Store> = file.clone();
    compile_into(&store, &hooks, kernel("a", "= 1", 1));
    let (a_key, _) = records(&*store).remove(0);
    compile_into(&store, &hooks, kernel("b", "= 2", 1));
    let b_key = records(&*store)
        .into_iter()
        .find(|(k, _)| *k != a_key)
        .unwrap()
        .0;
    // a answered twice: its record file is now kept open by the store.
    for n in 2..4 {
        let fresh = Arc::new(Recorder::default());
        let r = resolver(&fresh, &hooks).with_store(Some(Arc::clone(&store)));
        let out = r.resolve(&[kernel("a", "= 1", n)]).unwrap();
        assert_eq!(out[0].outcome, Outcome::Stored);
    }
    let a_path = file.entry_path(&stored::kernel_entry_key(&a_key));
    let b_bytes = std::fs::read(file.entry_path(&stored::kernel_entry_key(&b_key))).unwrap();
    assert_eq!(
        b_bytes.len() as u64,
        std::fs::metadata(&a_path).unwrap().len(),
        "records of one size, so the kept file's length still matches"
    );
    // b's valid record file written over a's where it lies (same inode).
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&a_path)
        .unwrap();
    f.write_all_at(&b_bytes, 0).unwrap();
    let fresh = Arc::new(Recorder::default());
    let r = resolver(&fresh, &hooks).with_store(Some(Arc::clone(&store)));
    let out = r.resolve(&[kernel("a", "= 1", 4)]).unwrap();
    assert_eq!(out[0].outcome, Outcome::Compiled, "not b's program");
    assert!(out[0]
        .program
        .kernels
        .iter()
        .all(|(_, text)| text.contains("= 1")));
}
