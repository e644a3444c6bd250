//! Split versus whole compiles, and the cost of an all-hit resolve.
//!
//! `cargo bench --bench split`: a batch of N distinct C kernels (N = 8, 32,
//! 128) compiled through the resolver as one program, or split into k
//! programs compiled at once (k = 2, 4, or as many as the measured cost of a
//! program says pay, at most 4); every iteration starts cold (the
//! backend's handle cache and the code cache are cleared, untimed). Then the
//! CPU time one program's compile costs, the compiler's (its children's
//! `getrusage`, which other load on the machine moves less than wall time)
//! and kcache's own, fitted to a fixed per-program part and a per-kernel
//! part: the fixed part is what caps a split's speed-up. Then the
//! per-kernel cost of resolving a batch that hits entirely.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use kcache::backend::cc::CcBackend;
use kcache::backend::Backend;
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::resolve::split::{programs_measured, Split};
use kcache::resolve::{Kernel, Resolver, Threads};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// `n` distinct kernels with a little arithmetic each, as a renderer would
/// write them (bound node names, loop symbols).
fn batch(n: usize) -> Vec<Kernel> {
    (0..n)
        .map(|j| {
            let name = format!("seg{j}");
            Kernel::new(
                name.clone(),
                format!(
                    "#include <math.h>\nvoid {name}(float* n1_x, const float* n2_y, int n) {{\n  for (int i1 = 0; i1 < n; i1++) {{\n    float v2_t = n2_y[i1] * {j}.5f + 1.0f;\n    for (int i3 = 0; i3 < 4; i3++) v2_t = sqrtf(v2_t * v2_t + (float)i3) * 0.5f;\n    n1_x[i1] = v2_t > 1.0f ? v2_t : expf(-v2_t);\n  }}\n}}\n"
                ),
            )
            .bound(["n1_x", "n2_y"])
        })
        .collect()
}

fn split_versus_whole(c: &mut Criterion) {
    let hooks = Hooks::new();
    let backend = Arc::new(
        CcBackend::builder()
            .hooks(&hooks)
            .build()
            .expect("a C compiler"),
    );
    let mut group = c.benchmark_group("split");
    group.sample_size(10);
    for n in [8usize, 32, 128] {
        let kernels = batch(n);
        group.throughput(Throughput::Elements(n as u64));
        // `measured`: up to 4 programs, as many as the measured cost of
        // this resolver's earlier compiles says pay (see
        // `split::programs_measured`); primed untimed with a 1-kernel and
        // an 8-kernel batch so that two program sizes were measured.
        for (name, k, measured) in [
            ("1_programs", 1usize, false),
            ("2_programs", 2, false),
            ("4_programs", 4, false),
            ("measured_programs", 4, true),
        ] {
            let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(1 << 30), &hooks)
                .with_split((k > 1).then(|| Split::new(k)))
                .with_measured_split(measured)
                .with_threads(Threads::Rayon);
            if measured {
                for primer in [batch(1), batch(8)] {
                    backend.clear_cache().expect("clear");
                    resolver.resolve(&primer).expect("compiles");
                }
            }
            group.bench_with_input(BenchmarkId::new(name, n), &kernels, |b, kernels| {
                b.iter_batched(
                    // Cold: the backend's loaded programs and the code cache go (untimed).
                    || backend.clear_cache().expect("clear"),
                    |()| resolver.resolve(kernels).expect("compiles"),
                    BatchSize::PerIteration,
                )
            });
            if let Some(fit) = resolver.compile_costs().filter(|_| measured) {
                let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
                println!(
                    "split/measured_programs/{n}: fit {:.1} ms per program + {:.2} ms per kernel: \
                     {} programs on {cores} cores",
                    fit.per_program.as_secs_f64() * 1e3,
                    fit.per_kernel.as_secs_f64() * 1e3,
                    programs_measured(Split::new(k), n, cores, Some(fit))
                );
            }
        }
    }
    group.finish();
}

/// User plus system time of `who` (`RUSAGE_CHILDREN`: the waited-for
/// children and their descendants; `RUSAGE_THREAD`: the calling thread).
fn cpu(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the plain struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

/// The CPU time of one program's cold compile of n kernels: the compiler's
/// (criterion's figure) and kcache's own on the calling thread (printed),
/// then the fit `per program + n × per kernel` over both.
fn program_cpu(c: &mut Criterion) {
    let hooks = Hooks::new();
    let backend = Arc::new(
        CcBackend::builder()
            .hooks(&hooks)
            .build()
            .expect("a C compiler"),
    );
    let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(1 << 30), &hooks);
    let sizes = [1usize, 8, 32];
    // Per size: (compiler, kcache's thread, wall, iterations).
    let totals = RefCell::new(vec![
        (Duration::ZERO, Duration::ZERO, Duration::ZERO, 0u32);
        3
    ]);
    let mut group = c.benchmark_group("program_cpu");
    group.sample_size(10);
    for (s, &n) in sizes.iter().enumerate() {
        let kernels = batch(n);
        group.bench_with_input(BenchmarkId::new("compiler", n), &kernels, |b, kernels| {
            b.iter_custom(|iters| {
                let mut compiler = Duration::ZERO;
                for _ in 0..iters {
                    backend.clear_cache().expect("clear");
                    let (c0, t0, w0) = (
                        cpu(libc::RUSAGE_CHILDREN),
                        cpu(libc::RUSAGE_THREAD),
                        std::time::Instant::now(),
                    );
                    resolver.resolve(kernels).expect("compiles");
                    let wall = w0.elapsed();
                    let (dc, dt) = (
                        cpu(libc::RUSAGE_CHILDREN) - c0,
                        cpu(libc::RUSAGE_THREAD) - t0,
                    );
                    compiler += dc;
                    let t = &mut totals.borrow_mut()[s];
                    t.0 += dc;
                    t.1 += dt;
                    t.2 += wall;
                    t.3 += 1;
                }
                compiler
            })
        });
    }
    group.finish();
    let ms = |d: Duration, n: u32| d.as_secs_f64() * 1e3 / f64::from(n.max(1));
    let means: Vec<[f64; 3]> = totals
        .borrow()
        .iter()
        .map(|&(c, t, w, n)| [ms(c, n), ms(t, n), ms(w, n)])
        .collect();
    for (n, m) in sizes.iter().zip(&means) {
        println!(
            "program_cpu: {n:3} kernels in one program: compiler {:6.1} ms cpu, kcache {:5.1} ms cpu, {:6.1} ms wall",
            m[0], m[1], m[2]
        );
    }
    // Least squares over the three sizes.
    let xs: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
    let mx = xs.iter().sum::<f64>() / 3.0;
    for (what, i) in [("compiler cpu", 0), ("kcache cpu", 1), ("wall", 2)] {
        let my = means.iter().map(|m| m[i]).sum::<f64>() / 3.0;
        let sxy: f64 = xs
            .iter()
            .zip(&means)
            .map(|(x, m)| (x - mx) * (m[i] - my))
            .sum();
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let per_kernel = sxy / sxx;
        let per_program = my - per_kernel * mx;
        println!(
            "program_cpu: {what}: {per_program:.1} ms per program + {per_kernel:.2} ms per kernel; \
             two programs at 32 kernels at best {:.2}x",
            (per_program + 32.0 * per_kernel) / (per_program + 16.0 * per_kernel)
        );
    }
}

fn all_hit(c: &mut Criterion) {
    let hooks = Hooks::new();
    let backend = Arc::new(
        CcBackend::builder()
            .hooks(&hooks)
            .build()
            .expect("a C compiler"),
    );
    let resolver = Resolver::with(backend, Capacity::Fixed(1 << 30), &hooks);
    let kernels = batch(32);
    resolver.resolve(&kernels).expect("compiles");
    let mut group = c.benchmark_group("all_hit");
    group.throughput(Throughput::Elements(kernels.len() as u64));
    group.bench_function("resolve_32_kernels", |b| {
        b.iter(|| resolver.resolve(&kernels).expect("hits"))
    });
    // The same batch with every header re-validated by `stat` each batch.
    kcache::resolve::watch::set_enabled(false);
    group.bench_function("resolve_32_kernels_polling", |b| {
        b.iter(|| resolver.resolve(&kernels).expect("hits"))
    });
    kcache::resolve::watch::set_enabled(true);
    group.finish();
}

criterion_group!(benches, split_versus_whole, program_cpu, all_hit);
criterion_main!(benches);
