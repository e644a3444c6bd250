//! The dialect scan's quick reading (until a `(` can open a macro's
//! arguments) and the reading that rides along the renaming pass find what
//! the exact scan finds, token by token, on texts spliced from the corpus
//! and from the constructs the scan looks for (macros defined mid-text and
//! then called, calls across lines and through other macros, the kernel's
//! name in arguments, position and time macros spelled with splices or in
//! comments, `#pragma` and `_Pragma`, digraphs), under option sets with and
//! without a kernel name, the backend's macros and reported position macros.

use kcache::canon::bind::Token;
use kcache::canon::dialect::{Findings, Scanner};
use kcache::canon::lexer::{for_each_token_spliced, TokenKind};
use kcache::canon::{CanonOptions, MacroNames, Renamer};
use std::path::Path;
use std::sync::Arc;

mod rng;
use rng::Rng;

/// Constructs the scan reads; `@` is the kernel's own name.
const FRAGMENTS: &[&str] = &[
    "#define M(x) x\n",
    "#define STR(x) #x\n",
    "#define ID(x) x\n",
    "#define N\n",
    "#define S2 STR\n",
    "N(@)",
    "S2(@)",
    "#define LP (\n",
    "#define D \\\n  (@\n",
    "#def\\\nine Z(a) a\n",
    "# /* c */ define C(a, b) a b\n",
    "%:define Q(x) %:x\n",
    "#undef M\n",
    "#define\n",
    "#\n",
    "#if defined(@)\n#endif\n",
    "#ifdef @\n",
    "#endif\n",
    "#pragma unroll 4\n",
    "#pragma omp parallel for\n",
    "#pragma message(\"@\")\n",
    "#pragma @ 2\n",
    "#  pragma\tGCC ivdep\n",
    "#include \"x.h\"\n",
    "_Pragma(\"unroll 2\")",
    "M(@)",
    "M (\n@)",
    "M\n#if 1\n(@)\n#endif\n",
    "ID(STR)(@)",
    "ID(M)(1)(@)",
    "C(@, 1)",
    "Z(@)",
    "Q(@)",
    "STR(@)",
    "E(@)",
    "assert(@)",
    "POS",
    "LP @)",
    "D)",
    "@(",
    "@",
    "f(@)",
    "x.@",
    "p->M(@)",
    "(",
    ")",
    "((",
    "))",
    ",",
    ";",
    "{",
    "}",
    " ",
    "\n",
    "\\\n",
    "<",
    "<:",
    ":>",
    "<%",
    "%>",
    "%:",
    "'c'",
    "\"s\"",
    "\"__LINE__\"",
    "/* __FILE__ @( */",
    "// __COUNTER__ M(\n",
    "__asm__ volatile(\"nop\")",
    "[[gnu::unused]]",
    "::",
    "kc1",
    "void @(int a) { a = 1; }\n",
];

/// Constructs that make a kernel raw-keyed or uncacheable whatever else it
/// holds (drawn rarely, so that most texts turn on the others).
const TRIGGERS: &[&str] = &[
    "#define W __LINE__\n",
    "#define T __TI\\\nME__\n",
    "a<::b>",
    "<:<:",
    "??=",
    "?\\\n?=",
    "R\"(x)\"",
    "u8R\"d(x)d\"",
    "1'000",
    "__LINE__",
    "__LI\\\nNE__",
    "__func__",
    "__TIME__",
    "__DATE__",
    "asm(\".incbin \\\"f\\\"\")",
    "\\u0041",
    "\"open",
    "/* open",
];

/// The corpus's kernels.
fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("c" | "cu" | "cl")
            )
        })
        .collect();
    paths.sort();
    assert!(paths.len() > 20, "the corpus is missing");
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// A text of corpus slices and fragments, `@` spelled `name`.
fn text(rng: &mut Rng, corpus: &[Vec<u8>], name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(24) {
        if rng.below(4) == 0 {
            let k = &corpus[rng.below(corpus.len())];
            let from = rng.below(k.len());
            let to = (from + 1 + rng.below(160)).min(k.len());
            out.extend_from_slice(&k[from..to]);
        } else {
            let f = if rng.below(24) == 0 {
                TRIGGERS[rng.below(TRIGGERS.len())]
            } else {
                FRAGMENTS[rng.below(FRAGMENTS.len())]
            };
            out.extend_from_slice(f.replace('@', name).as_bytes());
        }
    }
    out
}

/// The option sets: kernel name, backend macros, reported position macros.
type Set = (
    Option<&'static str>,
    Option<Arc<MacroNames>>,
    Option<Arc<MacroNames>>,
);

fn names(list: &[&str]) -> Arc<MacroNames> {
    Arc::new(list.iter().map(|m| m.as_bytes()).collect())
}

fn option_sets() -> Vec<Set> {
    let backend = names(&["STR", "ID", "E", "assert", "M"]);
    let position = names(&["assert", "POS"]);
    let mut sets = Vec::new();
    for kernel in [None, Some("f__seg0")] {
        for macros in [None, Some(backend.clone()), Some(names(&[]))] {
            for pos in [None, Some(position.clone())] {
                sets.push((kernel, macros.clone(), pos));
            }
        }
    }
    sets
}

fn lexed(text: &[u8]) -> Vec<Token> {
    let mut tokens = Vec::new();
    for_each_token_spliced(text, |kind, span, spliced| {
        if kind != TokenKind::Whitespace {
            tokens.push(Token::new(kind, span, spliced));
        }
    });
    tokens
}

fn scanner<'m>(set: &'m Set) -> Scanner<'m> {
    Scanner::new(set.2.as_deref())
        .with_kernel_name(set.0.map(str::as_bytes))
        .with_macros(set.1.as_deref())
}

/// What the exact scan finds, every token given.
fn exact(text: &[u8], set: &Set) -> Findings {
    let mut s = scanner(set);
    s.exact(text, &lexed(text));
    s.finish(text)
}

fn renamer(set: &Set) -> Renamer {
    let o = CanonOptions {
        kernel_name: set.0.map(str::to_string),
        infer: true,
        ..CanonOptions::default()
    };
    let mut r = Renamer::new(&o);
    if let Some(m) = &set.1 {
        r = r.with_macros(m.clone());
    }
    if let Some(p) = &set.2 {
        r = r.with_position_macros(p.clone());
    }
    r
}

/// Checks the three readings of `text` under `set` against the exact one.
fn check(text: &[u8], set: &Set, r: &Renamer) {
    let want = exact(text, set);
    let shown = || format!("{:?} under {:?}", String::from_utf8_lossy(text), set);
    // The quick reading, then the exact one from where calls are possible.
    let mut quick = scanner(set);
    quick.tokens(text, &lexed(text));
    assert_eq!(quick.finish(text), want, "quick reading: {}", shown());
    // The reading that rides along the renaming pass (or runs before it).
    let c = r.canonicalize(text);
    assert_eq!(
        (c.raw, c.uncacheable),
        (
            want.raw.clone().or(want.uncacheable.clone()),
            want.uncacheable.clone()
        ),
        "renaming pass: {}",
        shown()
    );
    // The scan fed every token, blanks too: a token the exact scan leaves
    // out only ever makes it find more.
    let mut all = scanner(set);
    for_each_token_spliced(text, |kind, span, spliced| {
        all.token(text, kind, span, spliced)
    });
    let all = all.finish(text);
    assert_eq!(
        all.uncacheable,
        want.uncacheable,
        "every token: {}",
        shown()
    );
    assert!(
        all.raw.is_none() || want.raw.is_some(),
        "every token: {}",
        shown()
    );
}

#[test]
fn every_reading_of_the_scan_finds_what_the_exact_one_finds() {
    let corpus = corpus();
    let sets = option_sets();
    let renamers: Vec<Renamer> = sets.iter().map(renamer).collect();
    let mut rng = Rng(0x5ca9_9a75);
    for k in &corpus {
        for (set, r) in sets.iter().zip(&renamers) {
            check(k, set, r);
        }
    }
    let (mut raw, mut uncacheable) = (0, 0);
    for _ in 0..4096 {
        let name = if rng.below(4) > 0 { "f__seg0" } else { "other" };
        let t = text(&mut rng, &corpus, name);
        // The set drawn, then the one that differs only in the kernel name.
        let k = rng.below(sets.len());
        for k in [k, (k + sets.len() / 2) % sets.len()] {
            check(&t, &sets[k], &renamers[k]);
            let found = exact(&t, &sets[k]);
            raw += found.raw.is_some() as usize;
            uncacheable += found.uncacheable.is_some() as usize;
        }
    }
    // The texts reach both verdicts and clean ones too.
    assert!(
        raw > 1000 && raw < 7000 && uncacheable > 100,
        "{raw} {uncacheable}"
    );
}
