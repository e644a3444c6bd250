//! Canonicalization throughput and key cost.
//!
//! `cargo bench --bench canon`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kcache::canon::Renamer;
use kcache::key::{make_key, Source};
use std::hint::black_box;

#[path = "support/canon_kernel.rs"]
mod canon_kernel;
use canon_kernel::generated_kernel;

fn canonicalize(c: &mut Criterion) {
    let mut group = c.benchmark_group("canonicalize");
    for (label, size) in [("16KiB", 16 << 10), ("1MiB", 1 << 20)] {
        let (text, options) = generated_kernel(size, 1000);
        let renamer = Renamer::new(&options);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("kernel", label), &text, |b, text| {
            b.iter(|| renamer.canonicalize(black_box(text.as_bytes())))
        });
        group.bench_with_input(BenchmarkId::new("text_only", label), &text, |b, text| {
            b.iter(|| renamer.canonical_text(black_box(text.as_bytes())))
        });
    }
    group.finish();
}

fn keys(c: &mut Criterion) {
    let (text, _) = generated_kernel(16 << 10, 7);
    let options = [("arch", "sm_90"), ("O", "3")];
    let mut group = c.benchmark_group("make_key");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("fresh_source_16KiB", |b| {
        b.iter(|| {
            let source = Source::from(black_box(text.as_str()));
            make_key("0", "mm__seg3", &source, &options)
        })
    });
    let source = Source::from(text.as_str());
    group.bench_function("repeated_source_16KiB", |b| {
        b.iter(|| make_key("0", "mm__seg3", black_box(&source), &options))
    });
    group.finish();
}

criterion_group!(benches, canonicalize, keys);

fn lexing(c: &mut Criterion) {
    let (text, _) = generated_kernel(1 << 20, 1000);
    let mut group = c.benchmark_group("lex");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("1MiB", |b| {
        b.iter(|| {
            let mut n = 0usize;
            kcache::canon::lexer::for_each_token(black_box(text.as_bytes()), |_, _| n += 1);
            n
        })
    });
    group.finish();
}
criterion_group!(lex_only, lexing);

/// The verification alone: the token adapter, then the adapter, parser and
/// binder together.
fn binding(c: &mut Criterion) {
    let mut group = c.benchmark_group("bind");
    for (label, size) in [("16KiB", 16 << 10), ("1MiB", 1 << 20)] {
        let (text, _) = generated_kernel(size, 1000);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("adapt", label), &text, |b, text| {
            b.iter(|| {
                let text = black_box(text.as_bytes());
                kcache::canon::bind::tokens::adapt(text, kcache::canon::bind::lex(text), None)
                    .toks
                    .len()
            })
        });
        group.bench_with_input(BenchmarkId::new("bind", label), &text, |b, text| {
            b.iter(|| {
                kcache::canon::bind::bind(black_box(text.as_bytes()), None)
                    .whole
                    .is_none()
            })
        });
    }
    group.finish();
}
criterion_group!(bind_only, binding);
criterion_main!(benches, lex_only, bind_only);
