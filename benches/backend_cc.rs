//! What the C backend costs: a real compile of a group of 8 small kernels,
//! loading such a program from its bytes in a fresh backend, a handle-cache
//! hit, the key extras of a kernel, and constructing a backend.
//!
//! `cargo bench --bench backend_cc -- --warm-up-time 1 --measurement-time 3`
//!
//! Skips (prints why) when no C compiler runs here.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use kcache::backend::cc::CcBackend;
use kcache::backend::{Backend, CompileJob, KernelSource};
use kcache::cache::hooks::Hooks;
use std::hint::black_box;

fn kernels() -> Vec<(String, String)> {
    (0..8)
        .map(|i| {
            let sym = format!("k{i}");
            let text = format!(
                "void {sym}(float* x, float* y, int n) {{\n  for (int i = 0; i < n; i++) y[i] = {i}.5f * x[i] + y[i];\n}}\n"
            );
            (sym, text)
        })
        .collect()
}

fn backend(hooks: &Hooks) -> Option<CcBackend> {
    match CcBackend::builder().hooks(hooks).build() {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("skipping the C backend benches: {e}");
            None
        }
    }
}

fn cc(c: &mut Criterion) {
    let hooks = Hooks::new();
    let Some(b) = backend(&hooks) else { return };
    let owned = kernels();
    let sources: Vec<KernelSource<'_>> = owned
        .iter()
        .map(|(symbol, text)| KernelSource { symbol, text })
        .collect();
    let symbols: Vec<&str> = owned.iter().map(|(s, _)| s.as_str()).collect();
    let job = CompileJob {
        kernels: &sources,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh: false,
    };
    let binary = b.compile(&job).unwrap().binary;

    let mut g = c.benchmark_group("cc");
    g.sample_size(20);
    g.bench_function("compile 8 kernels", |bench| {
        bench.iter_batched(
            || b.clear_cache().unwrap(),
            |()| black_box(b.compile(&job).unwrap()),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("load 8 kernels from bytes, fresh backend", |bench| {
        bench.iter_batched(
            || backend(&hooks).unwrap(),
            |fresh| {
                black_box(fresh.load(&binary, &symbols).unwrap());
                fresh
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("construct (find, identify, work dir)", |bench| {
        bench.iter(|| black_box(backend(&hooks).unwrap()))
    });
    g.sample_size(100);
    g.bench_function("compile 8 kernels, handle-cache hit", |bench| {
        b.compile(&job).unwrap();
        bench.iter(|| black_box(b.compile(&job).unwrap()))
    });
    g.bench_function("key_extras, no includes", |bench| {
        bench.iter(|| black_box(b.key_extras(&sources[0], &[]).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, cc);
criterion_main!(benches);
