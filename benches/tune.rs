//! What does kcache save a search, per backend?
//!
//! For each backend available here, over the built-in tune family
//! (`kcache::tune::render`):
//! * `resolve/compile/<backend>`: a batch of 12 candidates resolved by a fresh
//!   resolver on an empty store: the time per compiled kernel;
//! * `resolve/load/<backend>`: the same batch resolved by a fresh resolver
//!   over a `FileStore` holding its programs: the time per loaded kernel;
//! * `tune/cold/<backend>` and `tune/warm/<backend>`: the whole search
//!   (`kcache::tune::tune`, default options: 36 candidates, run and checked
//!   where the backend can run kernels) over a fresh store directory, then
//!   over a directory a previous search filled; the speedup is cold / warm.
//!
//! Every timed run starts as a new process would: a new backend instance
//! (its handle cache empty) and a new resolver (its code cache empty), both
//! built untimed. The drivers' own caches are off (`POCL_KERNEL_CACHE=0`,
//! `MESA_SHADER_CACHE_DISABLE=true`). PoCL finishes code generation at a
//! kernel's first launch, so a warm OpenCL search still pays that.
//!
//! ```text
//! cargo bench --bench tune -- --warm-up-time 1 --measurement-time 3
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use kcache::backend::cuda::{Cuda, CudaConfig};
use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::{Backend, BackendError};
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::resolve::census::with_census;
use kcache::resolve::{Kernel, Resolver};
use kcache::store::{FileStore, Store};
use kcache::tune::render::{render, search_space, Problem};
use kcache::tune::{tune, TuneOptions};

const CANDIDATES: usize = 12;
const CAPACITY: u64 = 256 << 20;

/// A backend and a resolver over it, as a new process would have them, with
/// `dir` as the store when given.
fn fresh<B: Backend + 'static>(
    open: &dyn Fn(&Hooks) -> Result<B, BackendError>,
    dir: Option<&std::path::Path>,
) -> Resolver<B> {
    let hooks = Hooks::new();
    let backend = Arc::new(open(&hooks).expect("available a moment ago"));
    let store =
        dir.map(|d| Arc::new(FileStore::open(d).expect("the store opens")) as Arc<dyn Store>);
    Resolver::with(backend, Capacity::Fixed(CAPACITY), &hooks).with_store(store)
}

fn batch<B: Backend>(backend: &B, problem: Problem) -> Vec<Kernel> {
    search_space()
        .into_iter()
        .take(CANDIDATES)
        .flat_map(|c| render(c, problem, backend.language()).kernels)
        .collect()
}

/// Times `run` on a fresh setup `iters` times; the setup is not timed.
fn timed<S>(iters: u64, setup: impl Fn() -> S, run: impl Fn(S)) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let state = setup();
        let start = Instant::now();
        run(state);
        total += start.elapsed();
    }
    total
}

fn bench_backend<B: Backend + 'static>(
    c: &mut Criterion,
    name: &str,
    open: impl Fn(&Hooks) -> Result<B, BackendError>,
) {
    let probe = match open(&Hooks::new()) {
        Ok(backend) => backend,
        Err(err) => {
            eprintln!("{name}: skipped: {err}");
            return;
        }
    };
    let options = TuneOptions::default();
    let problem = options.problem;
    let runs = probe.can_run();
    drop(probe);
    let open: &dyn Fn(&Hooks) -> Result<B, BackendError> = &open;

    // How many kernels the batch compiles (the others share their code).
    let compiled = {
        let r = fresh(open, None);
        let batch = batch(&**r.backend(), problem);
        let (_, census) = with_census(|| r.resolve(&batch).expect("the batch compiles"));
        census.kernels_compiled
    };
    let store = tempfile::tempdir().expect("a temporary directory");
    {
        let r = fresh(open, Some(store.path()));
        r.resolve(&batch(&**r.backend(), problem))
            .expect("the batch compiles");
    }

    let mut group = c.benchmark_group("resolve");
    group.sample_size(10);
    group.throughput(Throughput::Elements(compiled));
    group.bench_function(BenchmarkId::new("compile", name), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || {
                    let r = fresh(open, None);
                    let batch = batch(&**r.backend(), problem);
                    (r, batch)
                },
                |(r, batch)| {
                    let (_, census) =
                        with_census(|| r.resolve(&batch).expect("the batch compiles"));
                    assert_eq!(census.kernels_compiled, compiled);
                },
            )
        })
    });
    group.bench_function(BenchmarkId::new("load", name), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || {
                    let r = fresh(open, Some(store.path()));
                    let batch = batch(&**r.backend(), problem);
                    (r, batch)
                },
                |(r, batch)| {
                    let (_, census) = with_census(|| r.resolve(&batch).expect("the batch loads"));
                    assert_eq!(census.kernels_compiled, 0, "all from the store");
                },
            )
        })
    });
    group.finish();

    let search = |dir: &std::path::Path| fresh(open, Some(dir));
    let run = |r: Resolver<B>| {
        let report = tune(&r, &options, |_| {}).expect("the search runs");
        assert_eq!(report.best.is_some(), runs);
        report
    };
    let warm_dir = tempfile::tempdir().expect("a temporary directory");
    // One untimed search each way, to say where the time goes.
    for (what, report) in [
        ("cold", run(search(warm_dir.path()))),
        ("warm", run(search(warm_dir.path()))),
    ] {
        let c = &report.census;
        eprintln!(
            "{name}: {what} search of {} candidates in {:.2?}: {} kernels compiled in {:.2?}, \
             {} stored ({} programs) loaded in {:.2?}, {} reused; runs: {}",
            report.trials.len(),
            report.wall,
            c.kernels_compiled,
            c.compile_time,
            c.kernels_stored,
            c.programs_loaded,
            c.load_time,
            c.kernels_reused,
            if runs { "yes" } else { "none (compile only)" },
        );
    }

    let mut group = c.benchmark_group("tune");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("cold", name), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    (search(dir.path()), dir)
                },
                |(r, _dir)| {
                    let report = run(r);
                    assert!(report.census.kernels_compiled > 0);
                },
            )
        })
    });
    group.bench_function(BenchmarkId::new("warm", name), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || search(warm_dir.path()),
                |r| {
                    let report = run(r);
                    assert_eq!(report.census.kernels_compiled, 0, "all from the store");
                },
            )
        })
    });
    group.finish();
}

fn main() {
    // Before any driver loads: their own caches would hide the compile.
    std::env::set_var("POCL_KERNEL_CACHE", "0");
    std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
    let mut c = Criterion::default().configure_from_args();
    bench_backend(&mut c, "cc", |hooks| {
        kcache::backend::cc::CcBackend::builder()
            .hooks(hooks)
            .build()
    });
    bench_backend(&mut c, "opencl", |hooks| {
        OpenCl::with_hooks(&OpenClConfig::default(), hooks)
    });
    bench_backend(&mut c, "cuda", |hooks| {
        Cuda::with_hooks(&CudaConfig::default(), hooks)
    });
    bench_backend(&mut c, "vulkan", |hooks| {
        Vulkan::with_hooks(&VulkanConfig::default(), hooks)
    });
    c.final_summary();
}
