//! Properties of the lexer and the renamer that the docs claim.

use kcache::canon::bind::bind;
use kcache::canon::lexer::{lex, spelling, TokenKind};
use kcache::canon::rename::{is_keyword, is_scope_local, is_symbol};
use kcache::canon::{canonical_kernel, kernel_token, CanonOptions, Canonical, Derivation};
use proptest::prelude::*;
use std::collections::HashMap;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1024),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Lexing is lossless and total.

proptest! {
    #![proptest_config(config())]

    #[test]
    fn lexing_is_lossless_on_arbitrary_bytes(src in proptest::collection::vec(any::<u8>(), 0..400)) {
        let tokens = lex(&src);
        let mut at = 0;
        for t in &tokens {
            prop_assert_eq!(t.span.start, at);
            prop_assert!(t.span.end > t.span.start);
            at = t.span.end;
        }
        prop_assert_eq!(at, src.len());
    }

    #[test]
    fn lexing_is_lossless_on_c_like_text(src in c_like_text()) {
        let tokens = lex(src.as_bytes());
        let rebuilt: Vec<u8> = tokens.iter().flat_map(|t| src.as_bytes()[t.span.clone()].to_vec()).collect();
        prop_assert_eq!(rebuilt, src.as_bytes());
    }

    #[test]
    fn no_input_panics(
        src in proptest::collection::vec(any::<u8>(), 0..300),
        opts in arbitrary_options(),
    ) {
        let c = canonical_kernel(&src, &opts);
        prop_assert_eq!(c.bound_renamed, c.reason.is_none());
    }

    #[test]
    fn with_nothing_to_rename_the_text_is_kept_byte_for_byte(src in proptest::collection::vec(any::<u8>(), 0..300)) {
        let opts = CanonOptions { symbols: false, scope_locals: false, ..CanonOptions::default() };
        let c = canonical_kernel(&src, &opts);
        // Only a kept name that looks canonical forces the marked form.
        if !c.text.starts_with(b"/*kc0 ") {
            prop_assert_eq!(c.text, src);
        }
    }
}

/// Text built from C-ish fragments, including the tricky ones.
fn c_like_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "i1",
        "v2_x",
        " ",
        "\n",
        "\r\n",
        "\\\n",
        "\\\r\n",
        "\\ \t\n",
        "\\\r",
        "\r",
        "<:",
        ":>",
        "<%",
        "%>",
        "%:",
        "%:%:",
        "??=",
        "\\u0041",
        "\\",
        "/",
        "*",
        "/*",
        "*/",
        "//",
        "\"",
        "'",
        "R\"(",
        ")\"",
        "R\"d(",
        ")d\"",
        "#",
        "# define X",
        "[[",
        "]]",
        "[",
        "]",
        ".",
        "->",
        "::",
        ":",
        "-",
        ">",
        "1e+5",
        "0x1p-3f",
        "u8\"s\"",
        "L'c'",
        "$",
        "é",
        "\\u00e9",
        "\t",
        "(",
        ")",
        "{",
        "}",
        ";",
    ]);
    proptest::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

fn arbitrary_options() -> impl Strategy<Value = CanonOptions> {
    let name = prop::sample::select(vec![
        "a", "b", "i1", "v1_a", "kc1", "__x", "_X", "int", "k__seg2", "", "x", "f",
    ]);
    let names = proptest::collection::vec(name.clone().prop_map(String::from), 0..4);
    let derivation = prop::sample::select(vec!["*_l", "t*", "*", "p*s", "**"]);
    (
        proptest::option::of(name.prop_map(String::from)),
        names.clone(),
        names.clone(),
        names,
        proptest::collection::vec(derivation, 0..3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(kernel_name, bound, keep, free, ders, symbols, scope_locals)| CanonOptions {
                kernel_name,
                bound,
                keep,
                free,
                derivations: ders.iter().filter_map(|d| Derivation::parse(d)).collect(),
                symbols,
                scope_locals,
                infer: false,
            },
        )
}

// ---------------------------------------------------------------------------
// Consistent renaming leaves the canonical text unchanged; any other change
// changes it.

/// One piece of a generated kernel. Names are slots, filled per rendering.
#[derive(Clone, Debug)]
enum Piece {
    Bound(usize),
    Symbol(usize),
    ScopeLocal(usize),
    /// `<bound>_local`
    DerivedLocal(usize),
    /// `t<digits>` (a minted tile node)
    Tile(usize),
    /// The kernel's own name (a segment kernel).
    Own,
    Free(usize),
    Kept(&'static str),
    Member(usize),
    Number(u32),
    Op(&'static str),
    Str(String),
    Char(char),
    Pp(String),
    Attr(String),
    /// A comment holding words and name slots.
    Comment(Vec<Piece>),
    Space(&'static str),
}

const OPS: &[&str] = &[
    "+", "-", "*", "=", ";", "(", ")", "{", "}", "[", "]", "<", ",", "+=",
];
const KEPT: &[&str] = &[
    "float",
    "int",
    "threadIdx",
    "fmaxf",
    "kc1",
    "kc_2",
    "kc0",
    "w_note",
];

fn piece() -> impl Strategy<Value = Piece> {
    let slot = 0usize..4;
    let leaf = prop_oneof![
        slot.clone().prop_map(Piece::Bound),
        slot.clone().prop_map(Piece::Symbol),
        slot.clone().prop_map(Piece::ScopeLocal),
        slot.clone().prop_map(Piece::DerivedLocal),
        slot.clone().prop_map(Piece::Tile),
        Just(Piece::Own),
        slot.clone().prop_map(Piece::Free),
        prop::sample::select(KEPT).prop_map(Piece::Kept),
        slot.clone().prop_map(Piece::Member),
        (0u32..1000).prop_map(Piece::Number),
        prop::sample::select(OPS).prop_map(Piece::Op),
        "[a-z0-9 ']{0,6}".prop_map(Piece::Str),
        prop::sample::select(vec!['a', 'z', '0', '"']).prop_map(Piece::Char),
        // No `i` or `t`: a directive or attribute naming a slot's name would
        // keep it as written in one rendering only.
        "[a-hj-su-z0-9 ]{0,8}".prop_map(Piece::Pp),
        "[a-hj-su-z0-9:]{1,8}".prop_map(Piece::Attr),
        prop::sample::select(vec![" ", "\n", "  ", "\t"]).prop_map(Piece::Space),
    ];
    leaf.prop_recursive(1, 8, 6, |inner| {
        proptest::collection::vec(inner, 0..6).prop_map(Piece::Comment)
    })
}

/// A concrete choice of names for the slots, as one candidate's renderer
/// would make it: counters and labels that differ between candidates.
#[derive(Clone, Debug)]
struct Names {
    bound: Vec<String>,
    symbols: Vec<u32>,
    scopes: Vec<u32>,
    tiles: Vec<u32>,
    segment: usize,
}

fn names() -> impl Strategy<Value = Names> {
    (
        proptest::sample::subsequence((0..40u32).collect::<Vec<_>>(), 4).prop_shuffle(),
        proptest::sample::subsequence((0..40u32).collect::<Vec<_>>(), 4).prop_shuffle(),
        proptest::sample::subsequence((0..40u32).collect::<Vec<_>>(), 4).prop_shuffle(),
        proptest::sample::subsequence((0..40u32).collect::<Vec<_>>(), 4).prop_shuffle(),
        0usize..20,
    )
        .prop_map(|(b, s, v, t, segment)| Names {
            bound: b.iter().map(|n| format!("n{n}_w")).collect(),
            symbols: s,
            scopes: v,
            tiles: t,
            segment,
        })
}

fn render_piece(p: &Piece, n: &Names, out: &mut String, in_comment: bool) {
    match p {
        Piece::Bound(k) => out.push_str(&n.bound[*k]),
        Piece::Symbol(k) => out.push_str(&format!("i{}", n.symbols[*k])),
        Piece::ScopeLocal(k) => out.push_str(&format!("v{}_acc", n.scopes[*k])),
        Piece::DerivedLocal(k) => out.push_str(&format!("{}_local", n.bound[*k])),
        Piece::Tile(k) => out.push_str(&format!("t{}", n.tiles[*k])),
        Piece::Own => out.push_str(&format!("mm__seg{}", n.segment)),
        Piece::Free(k) => out.push_str(&format!("f_{k}")),
        Piece::Kept(s) => out.push_str(s),
        Piece::Member(k) => out.push_str(&format!(".m_{k}")),
        Piece::Number(v) => out.push_str(&v.to_string()),
        // Brackets and `;` come balanced, so the statement they stand in parses.
        Piece::Op(o) if !in_comment => out.push_str(match *o {
            "(" => "(0)",
            ")" => "(1)",
            "{" => "{2}",
            "}" => "{3}",
            "[" => "[4]",
            "]" => "[5]",
            ";" => "+ 6 +",
            o => o,
        }),
        Piece::Op(o) => out.push_str(o),
        Piece::Str(s) if !in_comment => out.push_str(&format!("\"{s}\"")),
        Piece::Char(c) if !in_comment => out.push_str(&match c {
            '"' => "'\"'".to_string(),
            c => format!("'{c}'"),
        }),
        Piece::Pp(s) if !in_comment => out.push_str(&format!("\n#define P {s}\n")),
        Piece::Attr(s) if !in_comment => out.push_str(&format!("[[{s}]]")),
        Piece::Comment(inner) if !in_comment => {
            out.push_str("/* ");
            for p in inner {
                render_piece(p, n, out, true);
                out.push(' ');
            }
            out.push_str("*/");
        }
        // Inside a comment, literals and nested comments render as plain words.
        Piece::Str(_) | Piece::Char(_) | Piece::Pp(_) | Piece::Attr(_) | Piece::Comment(_) => {
            out.push_str("w_lit")
        }
        Piece::Space(s) => out.push_str(s),
    }
}

/// The pieces as one statement of a kernel that declares every slot's name
/// (so the binder verifies them): the names a renderer binds are declared.
fn render(pieces: &[Piece], n: &Names) -> String {
    let mut params: Vec<String> = Vec::new();
    for k in 0..4 {
        params.push(format!("float* {}", n.bound[k]));
        params.push(format!("float {}_local", n.bound[k]));
        params.push(format!("int i{}", n.symbols[k]));
        params.push(format!("int v{}_acc", n.scopes[k]));
        params.push(format!("int t{}", n.tiles[k]));
    }
    let mut out = format!(
        "void mm__seg{}({}) {{\n  x_0 = ",
        n.segment,
        params.join(", ")
    );
    for p in pieces {
        render_piece(p, n, &mut out, false);
        // Separate every piece so adjacent names never merge into one.
        out.push(' ');
    }
    out.push_str(";\n}\n");
    out
}

fn options(n: &Names) -> CanonOptions {
    CanonOptions {
        kernel_name: Some(format!("mm__seg{}", n.segment)),
        bound: n.bound.clone(),
        free: (0..4).map(|k| format!("f_{k}")).collect(),
        derivations: vec![
            Derivation::parse("*_local").unwrap(),
            Derivation::parse("t*").unwrap(),
        ],
        ..CanonOptions::default()
    }
}

fn canon(pieces: &[Piece], n: &Names) -> Canonical {
    canonical_kernel(render(pieces, n).as_bytes(), &options(n))
}

/// Whether a piece is kept as written (so changing it must change the text).
fn is_kept(p: &Piece) -> bool {
    matches!(
        p,
        Piece::Free(_)
            | Piece::Kept(_)
            | Piece::Member(_)
            | Piece::Number(_)
            | Piece::Op(_)
            | Piece::Str(_)
            | Piece::Char(_)
            | Piece::Pp(_)
            | Piece::Attr(_)
    )
}

/// Changes one kept piece into a different kept piece of its kind.
fn change(p: &mut Piece) {
    match p {
        Piece::Free(k) => *k = (*k + 1) % 4,
        Piece::Kept(s) => *s = if *s == "w_other" { "w_note" } else { "w_other" },
        Piece::Member(k) => *k += 10,
        Piece::Number(v) => *v += 1,
        Piece::Op(o) => *o = if *o == "-" { "+" } else { "-" },
        Piece::Str(s) | Piece::Pp(s) | Piece::Attr(s) => s.push('q'),
        Piece::Char(c) => *c = if *c == 'q' { 'r' } else { 'q' },
        _ => unreachable!("not a kept piece"),
    }
}

/// Changes the `n`-th kept piece (in rendering order, comments included);
/// inside a comment, literals render as a fixed word, so only names count there.
fn change_nth(pieces: &mut [Piece], n: &mut usize, in_comment: bool) -> bool {
    for p in pieces.iter_mut() {
        if let Piece::Comment(inner) = p {
            if !in_comment && change_nth(inner, n, true) {
                return true;
            }
            continue;
        }
        let counts = is_kept(p)
            && !(in_comment
                && matches!(
                    p,
                    Piece::Str(_) | Piece::Char(_) | Piece::Pp(_) | Piece::Attr(_)
                ));
        if counts {
            if *n == 0 {
                change(p);
                return true;
            }
            *n -= 1;
        }
    }
    false
}

fn count_kept(pieces: &[Piece], in_comment: bool) -> usize {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Comment(inner) if !in_comment => count_kept(inner, true),
            Piece::Str(_) | Piece::Char(_) | Piece::Pp(_) | Piece::Attr(_) if in_comment => 0,
            p if is_kept(p) => 1,
            _ => 0,
        })
        .sum()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn consistent_renaming_leaves_the_canonical_text_unchanged(
        pieces in proptest::collection::vec(piece(), 0..40),
        a in names(),
        b in names(),
    ) {
        let ca = canon(&pieces, &a);
        let cb = canon(&pieces, &b);
        prop_assert_eq!(ca.text_lossy(), cb.text_lossy(), "\n{}\n{}", render(&pieces, &a), render(&pieces, &b));
        prop_assert_eq!(ca.kernel_token, cb.kernel_token);
    }

    #[test]
    fn changing_a_token_that_is_not_renamed_changes_the_canonical_text(
        pieces in proptest::collection::vec(piece(), 1..40),
        n in names(),
        which in 0usize..64,
    ) {
        let kept = count_kept(&pieces, false);
        prop_assume!(kept > 0);
        let mut changed = pieces.clone();
        prop_assert!(change_nth(&mut changed, &mut (which % kept), false));
        let before = canon(&pieces, &n);
        let after = canon(&changed, &n);
        prop_assert_ne!(before.text_lossy(), after.text_lossy(), "\n{}\n{}", render(&pieces, &n), render(&changed, &n));
    }
}

// ---------------------------------------------------------------------------
// Injectivity, against an independent oracle: two kernels have equal
// canonical forms exactly when they are equal up to a renaming of the names
// they bind.

/// What a kernel is, up to renaming: every byte that is not a renamed name,
/// and each renamed name as its first-occurrence number.
#[derive(Debug, PartialEq, Eq)]
enum Atom {
    Bytes(Vec<u8>),
    Renamed(usize),
    Own,
}

fn renamable(src: &[u8], name: &[u8], o: &CanonOptions) -> bool {
    let s = |v: &[String]| v.iter().any(|x| x.as_bytes() == name);
    let refused = o.bound.iter().any(|b| {
        o.free.contains(b)
            || b.starts_with("__")
            || (b.starts_with('_') && b[1..].starts_with(|c: char| c.is_ascii_uppercase()))
            || is_keyword(b.as_bytes())
    });
    let base = |n: &[u8]| {
        (o.symbols && is_symbol(n))
            || (!refused && o.bound.iter().any(|b| b.as_bytes() == n))
            || (!n.is_empty() && n.iter().all(u8::is_ascii_digit))
    };
    if s(&o.keep) || s(&o.free) || is_keyword(name) {
        return false;
    }
    // The binder must verify the name too (its own tests check how).
    if bind(src, None).verdict(name).is_err() {
        return false;
    }
    base(name)
        || (o.scope_locals && is_scope_local(name))
        || o.derivations.iter().any(|d| {
            let (p, x) = (d.prefix.as_bytes(), d.suffix.as_bytes());
            name.len() > p.len() + x.len()
                && name.starts_with(p)
                && name.ends_with(x)
                && base(&name[p.len()..name.len() - x.len()])
        })
}

/// Names standing right after `.`, `->` or `::` (or `.template`).
fn member_names(src: &[u8]) -> std::collections::HashSet<Vec<u8>> {
    let mut names = std::collections::HashSet::new();
    let mut member = false;
    for t in lex(src) {
        let bytes = &src[t.span.clone()];
        match t.kind {
            TokenKind::Ident => {
                if member {
                    names.insert(spelling(bytes).into_owned());
                }
                member = member && bytes == b"template";
            }
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => member = true,
            TokenKind::Whitespace => {}
            k if k.is_comment() => {}
            _ => member = false,
        }
    }
    names
}

fn oracle(src: &[u8], o: &CanonOptions) -> Vec<Atom> {
    let mut atoms = Vec::new();
    let mut numbers: HashMap<Vec<u8>, usize> = HashMap::new();
    // A name that would be renamed but also stands after a member operator
    // may be a member the kernel declares: it is kept everywhere.
    let members = member_names(src);
    let mut name = |n: &[u8], member: bool, atoms: &mut Vec<Atom>| {
        let own = o.kernel_name.as_deref().map(str::as_bytes) == Some(n);
        let kept = o.keep.iter().chain(&o.free).any(|k| k.as_bytes() == n) || is_keyword(n);
        let renames = own || renamable(src, n, o);
        if member || kept || (renames && members.contains(n)) {
            atoms.push(Atom::Bytes(n.to_vec()));
        } else if own {
            atoms.push(Atom::Own);
        } else if renamable(src, n, o) {
            let next = numbers.len();
            atoms.push(Atom::Renamed(*numbers.entry(n.to_vec()).or_insert(next)));
        } else {
            atoms.push(Atom::Bytes(n.to_vec()));
        }
    };
    let mut member = false;
    for t in lex(src) {
        let bytes = &src[t.span.clone()];
        match t.kind {
            TokenKind::Ident => {
                name(&spelling(bytes), member, &mut atoms);
                member = member && bytes == b"template";
            }
            k if k.is_comment() => {
                // Words of the small alphabet below: [A-Za-z_$][A-Za-z0-9_$]*, numbers skipped.
                let mut i = 0;
                while i < bytes.len() {
                    let c = bytes[i];
                    if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
                        let end = i + bytes[i..]
                            .iter()
                            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'$')
                            .count();
                        name(&bytes[i..end], false, &mut atoms);
                        i = end;
                    } else if c.is_ascii_digit() {
                        let end = i + bytes[i..]
                            .iter()
                            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'.')
                            .count();
                        atoms.push(Atom::Bytes(bytes[i..end].to_vec()));
                        i = end;
                    } else {
                        atoms.push(Atom::Bytes(vec![c]));
                        i += 1;
                    }
                }
            }
            TokenKind::Whitespace => atoms.push(Atom::Bytes(bytes.to_vec())),
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => {
                member = true;
                atoms.push(Atom::Bytes(bytes.to_vec()));
            }
            _ => {
                member = false;
                atoms.push(Atom::Bytes(bytes.to_vec()));
            }
        }
    }
    // Adjacent byte runs merge, so token boundaries inside kept text don't matter.
    let mut merged: Vec<Atom> = Vec::new();
    for a in atoms {
        match (merged.last_mut(), a) {
            (Some(Atom::Bytes(prev)), Atom::Bytes(b)) => prev.extend(b),
            (_, a) => merged.push(a),
        }
    }
    merged
}

/// A small alphabet, so that collisions between kept and canonical-looking
/// names, tokens and markers are frequent.
fn tiny_kernel() -> impl Strategy<Value = String> {
    tiny_pieces().prop_map(|v| v.join(" "))
}

const TINY: &[&str] = &[
    "i1",
    "i2",
    "v1_a",
    "a",
    "b",
    "a_l",
    "kc1",
    "kc_1",
    "kc__1",
    "kc0",
    "kc_0",
    "f",
    "x",
    ".",
    "->",
    "1",
    "+",
    " ",
    "\n",
    "/* i1 kc1 a */",
    "/*kc0 kc_*/",
    "// b\n",
    "\"i1\"",
    "\n#define i1\n",
    "[[a]]",
    "k__seg",
    "k__seg1",
    "k__seg2",
    "kc",
    "int",
];

fn tiny_pieces() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::collection::vec(prop::sample::select(TINY), 0..12)
}

/// Two kernels that are mostly the same: the second swaps a few pieces for
/// others of the alphabet, so near-misses (a kept `kc1` where the other has a
/// renamed name, a token against a kept twin) come up often.
fn tiny_pair() -> impl Strategy<Value = (String, String)> {
    tiny_pieces()
        .prop_flat_map(|a| {
            let n = a.len();
            (
                Just(a),
                proptest::collection::vec((0..n.max(1), prop::sample::select(TINY)), 0..3),
            )
        })
        .prop_map(|(a, swaps)| {
            let mut b = a.clone();
            for (i, p) in swaps {
                if i < b.len() {
                    b[i] = p;
                }
            }
            (a.join(" "), b.join(" "))
        })
}

fn tiny_options() -> impl Strategy<Value = CanonOptions> {
    (
        prop::sample::select(vec![
            None,
            Some("k__seg1"),
            Some("k__seg2"),
            Some("k__seg"),
            Some("kc1"),
        ]),
        any::<bool>(),
    )
        .prop_map(|(kernel_name, refuse)| CanonOptions {
            kernel_name: kernel_name.map(String::from),
            bound: vec!["a".into(), "b".into()],
            free: if refuse {
                vec!["f".into(), "b".into()]
            } else {
                vec!["f".into()]
            },
            derivations: vec![Derivation::parse("*_l").unwrap()],
            ..CanonOptions::default()
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn canonical_forms_are_equal_exactly_when_kernels_are_equal_up_to_renaming(
        a in tiny_kernel(),
        b in tiny_kernel(),
        oa in tiny_options(),
        ob in tiny_options(),
    ) {
        let ca = canonical_kernel(a.as_bytes(), &oa);
        let cb = canonical_kernel(b.as_bytes(), &ob);
        let same_canon = ca.text == cb.text && ca.kernel_token == cb.kernel_token;
        let same_kernel = oracle(a.as_bytes(), &oa) == oracle(b.as_bytes(), &ob)
            && oa.kernel_name.as_deref().map(kernel_token) == ob.kernel_name.as_deref().map(kernel_token);
        prop_assert_eq!(same_canon, same_kernel, "\nA: {:?} {:?}\nB: {:?} {:?}\n{}\n{}", a, oa.kernel_name, b, ob.kernel_name, ca.text_lossy(), cb.text_lossy());
    }

    #[test]
    fn near_twins_have_equal_canonical_forms_exactly_when_equal_up_to_renaming(
        (a, b) in tiny_pair(),
        oa in tiny_options(),
        ob in tiny_options(),
    ) {
        let ca = canonical_kernel(a.as_bytes(), &oa);
        let cb = canonical_kernel(b.as_bytes(), &ob);
        let same_canon = ca.text == cb.text && ca.kernel_token == cb.kernel_token;
        let same_kernel = oracle(a.as_bytes(), &oa) == oracle(b.as_bytes(), &ob)
            && oa.kernel_name.as_deref().map(kernel_token) == ob.kernel_name.as_deref().map(kernel_token);
        prop_assert_eq!(same_canon, same_kernel, "\nA: {:?} {:?}\nB: {:?} {:?}\n{}\n{}", a, oa.kernel_name, b, ob.kernel_name, ca.text_lossy(), cb.text_lossy());
    }

    #[test]
    fn a_kernel_is_equal_to_itself_up_to_renaming_under_either_options(a in tiny_kernel(), o in tiny_options()) {
        let c1 = canonical_kernel(a.as_bytes(), &o);
        let c2 = canonical_kernel(a.as_bytes(), &o);
        prop_assert_eq!(c1, c2);
    }
}

// ---------------------------------------------------------------------------
// Raw keying stays injective: a raw-keyed text is never a renamed one.

/// Something that makes a kernel raw-keyed.
fn raw_trigger() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "R\"(x)\" ",
        "1'000 ",
        " ??=",
        " __LINE__",
        " __func__",
        " \"open",
        " /* open",
        " \\u0041",
        "\n#define W __COUNTER__\n",
        " __TIME__",
    ])
}

fn named(kernel_name: &str) -> CanonOptions {
    CanonOptions {
        kernel_name: Some(kernel_name.into()),
        bound: vec!["a".into()],
        ..CanonOptions::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn raw_keyed_texts_never_collide_with_renamed_ones(
        src in c_like_text(),
        other in c_like_text(),
        trigger in raw_trigger(),
    ) {
        let o = named("k__seg1");
        let raw = canonical_kernel(format!("{src}\n*/\n{trigger}").as_bytes(), &o);
        // A splice or an open literal may still swallow the trigger.
        prop_assume!(raw.raw.is_some());
        prop_assert!(raw.text.starts_with(b"/*kc0 raw*/"));
        prop_assert_eq!(raw.kernel_token.as_deref(), Some("k__seg1"));
        // The kernels most likely to forge it: its own canonical text, the
        // marker before the untriggered text, and anything else.
        let forgers = [
            raw.text.clone(),
            [b"/*kc0 raw*/".as_slice(), src.as_bytes()].concat(),
            [b"/*kc0 raw*/".as_slice(), other.as_bytes()].concat(),
            other.clone().into_bytes(),
        ];
        for forger in forgers {
            let c = canonical_kernel(&forger, &o);
            if c.raw.is_none() {
                prop_assert!(!c.text.starts_with(b"/*kc0 raw*/"));
                prop_assert_ne!(&c.text, &raw.text);
            }
        }
    }

    #[test]
    fn raw_keyed_kernels_are_equal_only_when_their_texts_are(
        a in c_like_text(),
        b in c_like_text(),
        trigger in raw_trigger(),
    ) {
        let o = named("k");
        let ca = canonical_kernel(format!("{trigger}{a}").as_bytes(), &o);
        let cb = canonical_kernel(format!("{trigger}{b}").as_bytes(), &o);
        prop_assume!(ca.raw.is_some() && cb.raw.is_some());
        prop_assert_eq!(ca.text == cb.text, a == b);
    }
}
