//! Store hit latency and write cost: get of a 4 KiB and a 64 KiB entry, put
//! of a 64 KiB entry, for the memory, file and SQLite stores.
//!
//! The anchor (cuda-python's program cache, same machine kind): file-store
//! get of a small entry 32 µs, in-memory get 1.1 µs, 64 KiB write 589 µs.
//!
//! Beside the file store's gets, `raw_read`: a plain read of the same entry
//! file, the floor a verified get is measured against.
//!
//! And the keyed end-to-end hit: a kernel's text resolved by a resolver whose
//! code cache is cold, answered from the store (canonicalize, key, read the
//! record and the program, load it), with the C backend.
//!
//! `cargo bench --bench store -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kcache::store::{FileStore, MemoryStore, Store};

fn stores(dir: &std::path::Path) -> Vec<(&'static str, Arc<dyn Store>)> {
    vec![
        ("memory", Arc::new(MemoryStore::new(1 << 30))),
        ("file", Arc::new(FileStore::open(dir.join("file")).unwrap())),
        #[cfg(feature = "sqlite")]
        (
            "sqlite",
            Arc::new(kcache::store::SqliteStore::open(dir.join("sqlite")).unwrap()),
        ),
    ]
}

fn value(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn get(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let stores = stores(dir.path());
    // A program key, as the resolver uses.
    let key = *blake3::hash(b"a kernel").as_bytes();
    for (label, len) in [("4KiB", 4 << 10), ("64KiB", 64 << 10)] {
        let mut g = c.benchmark_group(format!("get_{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        for (name, s) in &stores {
            s.put(&key, &value(len)).unwrap();
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| black_box(s.get(black_box(&key)).unwrap().unwrap()))
            });
        }
        // The floor: one `std::fs::read` of the very file the file store's
        // get reads (open, read, close; nothing verified).
        let file = FileStore::open(dir.path().join("file")).unwrap();
        let path = file.entry_path(&key);
        g.bench_function(BenchmarkId::from_parameter("raw_read"), |b| {
            b.iter(|| black_box(std::fs::read(black_box(&path)).unwrap()))
        });
        g.finish();
    }
}

fn put(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let stores = stores(dir.path());
    let v = value(64 << 10);
    let mut g = c.benchmark_group("put_64KiB");
    g.throughput(Throughput::Bytes(v.len() as u64));
    for (name, s) in &stores {
        let mut i = 0u64;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                // A few keys in rotation: replacements, as a search rewrites.
                i = (i + 1) % 16;
                s.put(&i.to_le_bytes(), black_box(&v)).unwrap()
            })
        });
    }
    g.finish();
}

fn keyed_hit(c: &mut Criterion) {
    use criterion::BatchSize;
    use kcache::backend::cc::CcBackend;
    use kcache::cache::code::Capacity;
    use kcache::cache::hooks::Hooks;
    use kcache::resolve::{Kernel, Outcome, Resolver};
    let hooks = Hooks::new();
    let Ok(backend) = CcBackend::builder().hooks(&hooks).build() else {
        eprintln!("skipped: no C compiler");
        return;
    };
    let backend = Arc::new(backend);
    let kernel = Kernel::new(
        "saxpy__seg0",
        "void saxpy__seg0(float* n1_y, const float* n2_x, int n) {\n  for (int i1 = 0; i1 < n; i1++) n1_y[i1] += 2.0f * n2_x[i1];\n}\n",
    )
    .bound(["n1_y", "n2_x"]);
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("keyed_hit");
    for (name, store) in stores(dir.path()) {
        let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(1 << 30), &hooks)
            .with_store(Some(store));
        resolver.resolve(std::slice::from_ref(&kernel)).unwrap();
        let hit = |b: &mut criterion::Bencher<'_>| {
            b.iter_batched(
                || resolver.clear(),
                |()| {
                    let r = resolver.resolve(std::slice::from_ref(&kernel)).unwrap();
                    assert_eq!(r[0].outcome, Outcome::Stored);
                    r
                },
                BatchSize::PerIteration,
            )
        };
        g.bench_function(BenchmarkId::from_parameter(name), &hit);
        if name == "file" {
            // The same hit with its key's files re-validated by `stat`.
            kcache::resolve::watch::set_enabled(false);
            g.bench_function(BenchmarkId::from_parameter("file_polling"), &hit);
            kcache::resolve::watch::set_enabled(true);
        }
    }
    g.finish();
}

criterion_group!(benches, get, put, keyed_hit);
criterion_main!(benches);
