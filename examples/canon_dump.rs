//! Differential dumps and instruction counts for the canonicalizer.
//!
//! `cargo run --release --example canon_dump -- dump OUT [N]` writes the
//! `Debug` form of every result (canonical text, renaming map, inferred and
//! kept names with their reasons, the binding's verdicts) for every file of
//! `tests/corpus/` (all folders), the benchmark's generated kernels and `N`
//! (default 12000) texts spliced and mutated from the corpus, each under four
//! option sets. Run it before and after a change to the renamer or the binder
//! and `cmp` the two files: the canonical text is what keys are taken over, so
//! any difference is a key change (see `KEY_VERSION`).
//!
//! `cargo run --release --example canon_dump -- run text|full|bind|lex BYTES N`
//! canonicalizes (or binds, or lexes) the benchmark's generated kernel of about
//! `BYTES` bytes `N` times, for `valgrind --tool=callgrind`: the difference
//! between `N = 1` and `N = 0` over `BYTES` is the cost in instructions per
//! byte.

use kcache::canon::{CanonOptions, Derivation, MacroNames, Renamer};
use std::io::Write;

#[path = "../benches/support/canon_kernel.rs"]
mod canon_kernel;
use canon_kernel::generated_kernel;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if !matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("json" | "snap" | "md" | "new")
        ) {
            out.push(p);
        }
    }
}

fn spec(path: &Path) -> Option<CanonOptions> {
    let s = path.to_str()?;
    let base = s.split('.').next()?;
    let text = std::fs::read_to_string(format!("{base}.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let strs = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(|x| x.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    Some(CanonOptions {
        kernel_name: v
            .get("kernel_name")
            .and_then(|x| x.as_str())
            .map(String::from),
        bound: strs("bound"),
        keep: strs("keep"),
        free: strs("free"),
        derivations: strs("derivations")
            .iter()
            .filter_map(|d| Derivation::parse(d))
            .collect(),
        symbols: v.get("symbols").and_then(|x| x.as_bool()).unwrap_or(true),
        scope_locals: v
            .get("scope_locals")
            .and_then(|x| x.as_bool())
            .unwrap_or(true),
        infer: false,
    })
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const SNIPPETS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    ";",
    "[",
    "]",
    ",",
    "=",
    "*",
    "&",
    ":",
    "?",
    "typedef ",
    "struct ",
    "enum ",
    "int ",
    "float ",
    "const ",
    "extern ",
    "static ",
    "__global ",
    "__shared__ ",
    "#define X(a) #a\n",
    "#define Y y\n",
    "#if A\n",
    "#endif\n",
    "asm(\"\" : \"=r\"(x));",
    "__attribute__((aligned(4))) ",
    "for (int i0 = 0; i0 < 4; ++i0) ",
    "if (x) ",
    "else ",
    "lbl: ",
    "goto lbl;",
    "x->y",
    "a.b",
    "v1_t",
    "i7",
    "n2_a",
    "kc1",
    "/* c */",
    "// c\n",
    "\"s\"",
    "'c'",
    "\\\n",
    "switch (i0) { case 1: break; default: ; }",
    "do { } while (0);",
    "return x;",
    "sizeof(int)",
    "(float)",
    "int (*fp)(int);",
    "struct s { int a; } v;",
    "typedef float T;",
    "T x;",
    "#pragma unroll\n",
    "_Pragma(\"x\")",
    "layout(local_size_x=1) in;",
    "#version 450\n",
    "buffer B { float d[]; };",
    "template<int N> ",
    "operator",
    "__LINE__",
    "x ## y",
    "\n",
    " ",
    "ACC",
    "STR(x)",
    "1e-3f",
    "0x1p3",
    "...",
    "[[nodiscard]] ",
];

fn options_sets(path_spec: Option<CanonOptions>) -> Vec<(&'static str, Renamer)> {
    let mut sets = Vec::new();
    let base = path_spec.unwrap_or_default();
    let mut infer = base.clone();
    infer.infer = true;
    let macros: MacroNames = [b"ACC".as_slice(), b"STR", b"assert", b"i3"]
        .iter()
        .copied()
        .collect();
    let macros = Arc::new(macros);
    sets.push(("spec", Renamer::new(&base)));
    sets.push(("infer", Renamer::new(&infer)));
    sets.push((
        "infer+macros",
        Renamer::new(&infer).with_macros(macros.clone()),
    ));
    sets.push(("default", Renamer::new(&CanonOptions::default())));
    sets
}

fn dump(out: &str, n: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths = Vec::new();
    files(&root, &mut paths);
    let texts: Vec<(String, Vec<u8>, Option<CanonOptions>)> = paths
        .iter()
        .map(|p| {
            (
                p.strip_prefix(&root).unwrap().display().to_string(),
                std::fs::read(p).unwrap(),
                spec(p),
            )
        })
        .collect();
    let mut emit = |label: &str, text: &[u8], spec: Option<CanonOptions>| {
        for (name, r) in options_sets(spec) {
            let c = r.canonicalize(text);
            let k = r.key_form(text);
            writeln!(
                out,
                "== {label} [{name}]\n{c:?}\n{:?} {:?}",
                k.text == c.text,
                k.uncacheable
            )
            .unwrap();
            let b = kcache::canon::bind::bind(text, None);
            let mut names: Vec<_> = b
                .declared()
                .iter()
                .map(|d| (d.clone(), b.verdict(d)))
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            writeln!(
                out,
                "bind {:?} {:?} {:?} {:?} {:?}",
                b.whole,
                b.unparsed(),
                b.functions(),
                b.member_declarators(),
                names
            )
            .unwrap();
        }
    };
    for (label, text, spec) in &texts {
        emit(label, text, spec.clone());
    }
    for (size, seed) in [(16usize << 10, 1000usize), (3000, 5), (1 << 20, 1000)] {
        let (t, o) = generated_kernel(size, seed);
        emit(&format!("generated {size}"), t.as_bytes(), Some(o));
    }
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for case in 0..n {
        let (_, a, sa) = &texts[rng.below(texts.len())];
        let (_, b, _) = &texts[rng.below(texts.len())];
        let mut t: Vec<u8> = match case % 3 {
            0 => {
                let ca = rng.below(a.len() + 1);
                let cb = rng.below(b.len() + 1);
                [&a[..ca], &b[cb..]].concat()
            }
            1 => {
                let mut t = a.clone();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(t.len() + 1);
                    let len = rng.below(8).min(t.len() - at);
                    t.drain(at..at + len);
                }
                t
            }
            _ => {
                let mut t = a.clone();
                for _ in 0..1 + rng.below(5) {
                    let at = rng.below(t.len() + 1);
                    let s = SNIPPETS[rng.below(SNIPPETS.len())].as_bytes();
                    t.splice(at..at, s.iter().copied());
                }
                t
            }
        };
        if case % 7 == 0 {
            // Occasionally a byte-level flip.
            if !t.is_empty() {
                let at = rng.below(t.len());
                let f = b"{}();,=*&:?#\"'\\/ \nax_0";
                t[at] = f[rng.below(f.len())];
            }
        }
        emit(
            &format!("case {case}"),
            &t,
            if case % 2 == 0 { sa.clone() } else { None },
        );
    }
}

fn run(what: &str, bytes: usize, n: usize) {
    let (text, options) = generated_kernel(bytes, 1000);
    let renamer = Renamer::new(&options);
    let text = text.as_bytes();
    let mut total = 0usize;
    for _ in 0..n {
        total += match what {
            "text" => renamer.canonical_text(text).len(),
            "full" => renamer.canonicalize(text).text.len(),
            "bind" => kcache::canon::bind::bind(text, None).name_count(),
            "lex" => kcache::canon::bind::lex(text).tokens().len(),
            _ => panic!("run text|full|bind|lex BYTES N"),
        };
    }
    println!("{} bytes, {n} runs, {total}", text.len());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |s| s.parse().expect("a number"))
    };
    match args.first().map(String::as_str) {
        Some("dump") => dump(args.get(1).expect("dump OUT [N]"), num(2, 12000)),
        Some("run") => run(
            args.get(1).map_or("text", String::as_str),
            num(2, 1 << 20),
            num(3, 1),
        ),
        _ => eprintln!("usage: canon_dump dump OUT [N] | run text|full|bind|lex BYTES N"),
    }
}
