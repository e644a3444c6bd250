//! A remote hit beside a local one: `get` of a 4 KiB and a 64 KiB entry from
//! the Redis tier over loopback TCP and over a unix socket (GET, frame and
//! checksum check, with and without a MAC) and from the file store; and the
//! keyed end-to-end hit (text → key → the store's record and program →
//! loaded program) answered by Redis alone, with the C backend.
//!
//! Each run starts its own `redis-server` (skipped with a reason without
//! one, unless `KCACHE_TEST_REQUIRE` names `redis`).
//!
//! `cargo bench --bench store_redis -- --warm-up-time 1 --measurement-time 3`

#[path = "../tests/store_redis_support/mod.rs"]
mod redis_support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kcache::store::{FileStore, RedisOptions, RedisStore, Store};

fn value(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn redis(url: String, secret: bool) -> Arc<dyn Store> {
    let mut o = RedisOptions::new(url);
    // A benchmark measures; a loaded machine must not trip the breaker.
    o.op_timeout = Duration::from_secs(5);
    o.connect_timeout = Duration::from_secs(5);
    if secret {
        o = o.secret(b"bench secret");
    }
    Arc::new(RedisStore::open(o).unwrap())
}

fn get(c: &mut Criterion) {
    let Some(server) = redis_support::RedisServer::start_tcp() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<(&str, Arc<dyn Store>)> = vec![
        (
            "file",
            Arc::new(FileStore::open(dir.path().join("file")).unwrap()),
        ),
        ("redis_tcp", redis(server.tcp_url(), false)),
        ("redis_tcp_mac", redis(server.tcp_url(), true)),
        ("redis_unix", redis(server.url(), false)),
    ];
    let key = *blake3::hash(b"a kernel").as_bytes();
    for (label, len) in [("4KiB", 4 << 10), ("64KiB", 64 << 10)] {
        let mut g = c.benchmark_group(format!("remote_get_{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        for (name, s) in &stores {
            s.put(&key, &value(len)).unwrap();
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| black_box(s.get(black_box(&key)).unwrap().unwrap()))
            });
        }
        g.finish();
    }
}

fn keyed_hit(c: &mut Criterion) {
    use criterion::BatchSize;
    use kcache::backend::cc::CcBackend;
    use kcache::cache::code::Capacity;
    use kcache::cache::hooks::Hooks;
    use kcache::resolve::{Kernel, Outcome, Resolver};
    let Some(server) = redis_support::RedisServer::start_tcp() else {
        return;
    };
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
    let mut g = c.benchmark_group("remote_keyed_hit");
    let stores: Vec<(&str, Arc<dyn Store>, Outcome)> = vec![
        (
            "file",
            Arc::new(FileStore::open(dir.path().join("file")).unwrap()),
            Outcome::Stored,
        ),
        ("redis_tcp", redis(server.tcp_url(), false), Outcome::Shared),
    ];
    for (name, store, outcome) in stores {
        let resolver = Resolver::with(Arc::clone(&backend), Capacity::Fixed(1 << 30), &hooks)
            .with_store(Some(store));
        resolver.resolve(std::slice::from_ref(&kernel)).unwrap();
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || resolver.clear(),
                |()| {
                    let r = resolver.resolve(std::slice::from_ref(&kernel)).unwrap();
                    assert_eq!(r[0].outcome, outcome);
                    r
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, get, keyed_hit);
criterion_main!(benches);
