//! A stable-toolchain fuzz driver for the lexer and the canonicalizer: a
//! million inputs by default (`KCACHE_FUZZ_INPUTS` sets how many), drawn from
//! a seeded generator so a failure names the seed that reproduces it.
//!
//! Three kinds of input, in turn: arbitrary bytes; C-like token soups (the
//! pieces that make the lexer's hard cases: comments, splices, raw strings,
//! directives, member operators, digraphs, bytes that are not UTF-8); and
//! corpus kernels mutated byte-wise (flips, insertions, deletions, splices
//! from another kernel). Each goes through [`lex`] (which must cover the
//! input exactly, in order) and [`canonical_kernel`] under random options
//! (and, for a third, macro names kept as written), whose text must equal
//! [`Renamer::canonical_text`]'s. A panic fails the
//! test with its seed; an input that takes longer than the watchdog allows
//! fails it too, without waiting for the input to finish.

use kcache::canon::lexer::lex;
use kcache::canon::{canonical_kernel, CanonOptions, Derivation, MacroNames, Renamer};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod rng;
use rng::Rng;

const PIECES: &[&str] = &[
    "a",
    "b",
    "k",
    "i1",
    "i22",
    "v2_x",
    "v0_",
    "x_grad",
    "d_a",
    "_",
    "$",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\\\n",
    "\\\r\n",
    "\\",
    "/",
    "*",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "\\\"",
    "R\"(",
    ")\"",
    "R\"d(",
    ")d\"",
    "u8R\"(",
    "L'",
    "#",
    "#define X",
    "# define F(a) a",
    "#include \"h.h\"",
    "#if",
    "#endif",
    "#undef a",
    "##",
    "#a",
    "[[",
    "]]",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ";",
    ",",
    ".",
    "->",
    "::",
    "...",
    "<:",
    ":>",
    "<%",
    "%>",
    "%:",
    "%:%:",
    "0",
    "1.5e-3f",
    "0x1p3",
    "1'000",
    ".5",
    "0b1",
    "123abc",
    "int",
    "float",
    "void",
    "for",
    "return",
    "struct",
    "sizeof",
    "__kernel",
    "__global",
    "\u{e9}",
    "\u{2028}",
    "\u{0}",
    "\u{7f}",
    "\u{fffd}",
];

const NAMES: &[&str] = &[
    "a", "b", "k", "x", "x_grad", "d_a", "i1", "v2_x", "int", "main", "",
];

fn names(rng: &mut Rng) -> Vec<String> {
    (0..rng.below(4))
        .map(|_| rng.pick(NAMES).to_string())
        .collect()
}

fn options(rng: &mut Rng) -> CanonOptions {
    let derivations = ["*_grad", "d_*", "*", "x*y", "**"]
        .iter()
        .filter(|_| rng.below(4) == 0)
        .filter_map(|t| Derivation::parse(t))
        .collect();
    CanonOptions {
        kernel_name: (rng.below(3) > 0).then(|| rng.pick(NAMES).to_string()),
        bound: names(rng),
        keep: names(rng),
        free: names(rng),
        derivations,
        symbols: rng.below(2) == 0,
        scope_locals: rng.below(2) == 0,
        infer: rng.below(2) == 0,
    }
}

fn bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(256);
    (0..len).map(|_| rng.next() as u8).collect()
}

fn soup(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(64) {
        out.extend_from_slice(rng.pick(PIECES).as_bytes());
        if rng.below(16) == 0 {
            out.push(rng.next() as u8);
        }
    }
    out
}

fn mutant(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = rng.pick(corpus).clone();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(out.len() + 1);
        match rng.below(4) {
            0 if at < out.len() => out[at] ^= 1 << rng.below(8),
            1 => out.insert(at, *rng.pick(b"\\\n\"'/*#()[]{}.$\r\0\xff")),
            2 if at < out.len() => {
                let end = (at + rng.below(16)).min(out.len());
                out.drain(at..end);
            }
            _ => {
                let other = rng.pick(corpus);
                let from = rng.below(other.len() + 1);
                let end = (from + rng.below(32)).min(other.len());
                let piece = other[from..end].to_vec();
                out.splice(at..at, piece);
            }
        }
    }
    out
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut texts: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            matches!(
                p.extension()?.to_str()?,
                "c" | "cl" | "cu" | "comp" | "glsl"
            )
            .then(|| std::fs::read(&p).ok())?
        })
        .collect();
    texts.sort();
    assert!(!texts.is_empty(), "no corpus kernels in {}", dir.display());
    texts
}

/// Generates and checks the input of `seed`.
fn check(seed: u64, corpus: &[Vec<u8>]) {
    let mut rng = Rng(seed);
    let input = match seed % 3 {
        0 => bytes(&mut rng),
        1 => soup(&mut rng),
        _ => mutant(&mut rng, corpus),
    };
    let tokens = lex(&input);
    let mut at = 0;
    for t in &tokens {
        assert_eq!(t.span.start, at, "a gap or overlap in the tokens");
        assert!(t.span.end > t.span.start, "an empty token");
        at = t.span.end;
    }
    assert_eq!(at, input.len(), "the tokens do not cover the input");
    let options = options(&mut rng);
    let canonical = canonical_kernel(&input, &options);
    assert_eq!(
        canonical.text,
        Renamer::new(&options).canonical_text(&input),
        "canonicalize and canonical_text disagree"
    );
    // Names a backend reports as macros are kept as written.
    if rng.below(3) == 0 {
        let macros: MacroNames = names(&mut rng)
            .into_iter()
            .map(String::into_bytes)
            .collect();
        let renamer = Renamer::new(&options).with_macros(Arc::new(macros));
        assert_eq!(
            renamer.canonicalize(&input).text,
            renamer.canonical_text(&input),
            "canonicalize and canonical_text disagree with macros"
        );
    }
}

/// How long one input may take before the run counts as hung.
const WATCHDOG: Duration = Duration::from_secs(60);

#[test]
fn canonicalizer_and_lexer_survive_a_million_generated_inputs() {
    let total: u64 = std::env::var("KCACHE_FUZZ_INPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let corpus = Arc::new(corpus());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<Result<u64, String>>();
    let mut current = Vec::new();
    for w in 0..workers {
        let (tx, corpus) = (tx.clone(), corpus.clone());
        let at = Arc::new(AtomicU64::new(u64::MAX));
        current.push(at.clone());
        std::thread::spawn(move || {
            let mut done = 0;
            for seed in (w..total).step_by(workers as usize) {
                at.store(seed, Ordering::Relaxed);
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| check(seed, &corpus))) {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    tx.send(Err(format!("seed {seed}: {msg}"))).ok();
                    return;
                }
                done += 1;
                if done % 1024 == 0 {
                    tx.send(Ok(1024)).ok();
                }
            }
            tx.send(Ok(done % 1024)).ok();
        });
    }
    drop(tx);
    let mut checked = 0u64;
    let mut last_progress = Instant::now();
    loop {
        match rx.recv_timeout(WATCHDOG) {
            Ok(Ok(n)) => {
                checked += n;
                last_progress = Instant::now();
            }
            Ok(Err(failure)) => panic!("{failure}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let seeds: Vec<u64> = current.iter().map(|a| a.load(Ordering::Relaxed)).collect();
                panic!(
                    "no progress for {:?}: hung on one of the seeds {seeds:?}",
                    last_progress.elapsed()
                );
            }
        }
    }
    assert_eq!(checked, total);
    println!(
        "canon fuzz: {checked} inputs on {workers} threads in {:.1?}",
        start.elapsed()
    );
}
