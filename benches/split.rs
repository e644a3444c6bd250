//! Split versus whole compiles, and the cost of an all-hit resolve.
//!
//! `cargo bench --bench split`: a batch of N distinct C kernels (N = 8, 32,
//! 128) compiled through the resolver as one program, or split into k
//! programs compiled at once (k = 2, 4); every iteration starts cold (the
//! backend's handle cache and the code cache are cleared, untimed). Then the
//! per-kernel cost of resolving a batch that hits entirely.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use kcache::backend::cc::CcBackend;
use kcache::backend::Backend;
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::resolve::split::Split;
use kcache::resolve::{Kernel, Resolver, Threads};
use std::sync::Arc;

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
        for k in [1usize, 2, 4] {
            let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(1 << 30), &hooks)
                .with_split((k > 1).then(|| Split::new(k)))
                .with_threads(Threads::Rayon);
            group.bench_with_input(
                BenchmarkId::new(format!("{k}_programs"), n),
                &kernels,
                |b, kernels| {
                    b.iter_batched(
                        // Cold: the backend's loaded programs and the code cache go (untimed).
                        || backend.clear_cache().expect("clear"),
                        |()| resolver.resolve(kernels).expect("compiles"),
                        BatchSize::PerIteration,
                    )
                },
            );
        }
    }
    group.finish();
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

criterion_group!(benches, split_versus_whole, all_hit);
criterion_main!(benches);
