//! The kernel corpus (`tests/corpus/`, described in its README): a reviewed
//! insta snapshot of every kernel's canonical form (in `snapshots/`), and
//! properties over the whole corpus that can fail:
//!
//! * canonicalizing is deterministic, with a fresh or a reused [`Renamer`];
//! * a hand-written `.renamed.` twin (bound names, symbols and scope locals
//!   renamed as a renderer would for another candidate) canonicalizes to the
//!   same text, and a `.differs.` twin (a token that is not renamed changed)
//!   to another;
//! * a segment kernel renamed to another index canonicalizes to the same text,
//!   unless its name also stands where nothing is renamed (a string);
//! * an oracle written from the rules in `canon::rename`'s docs (not from its
//!   code) predicts every kernel's canonical text and renaming map exactly.
//!
//! Kernels that show a known violation of the rules are listed in
//! [`KNOWN_VIOLATIONS`]: they have no snapshot until the code is fixed, and an
//! ignored regression test each states the expected canonical text.

use kcache::canon::lexer::{lex, spelling, TokenKind};
use kcache::canon::rename::is_keyword;
use kcache::canon::{canonical_kernel, CanonOptions, Canonical, Derivation, Renamer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------
// The corpus on disk

/// A kernel's sidecar `<name>.json`: its renamer options (all optional).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
struct Spec {
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bound: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keep: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    free: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    derivations: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    symbols: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope_locals: Option<bool>,
}

impl Spec {
    fn options(&self) -> CanonOptions {
        CanonOptions {
            kernel_name: self.kernel_name.clone(),
            bound: self.bound.clone(),
            keep: self.keep.clone(),
            free: self.free.clone(),
            derivations: self
                .derivations
                .iter()
                .map(|d| {
                    Derivation::parse(d).unwrap_or_else(|| panic!("bad derivation template `{d}`"))
                })
                .collect(),
            symbols: self.symbols.unwrap_or(true),
            scope_locals: self.scope_locals.unwrap_or(true),
            infer: false,
        }
    }
}

/// What a corpus file is to the tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A kernel of its own, with a snapshot.
    Kernel,
    /// `<name>.renamed.<ext>`: must canonicalize like `<name>.<ext>`.
    Renamed,
    /// `<name>.differs.<ext>`: must not canonicalize like `<name>.<ext>`.
    Differs,
}

#[derive(Clone, Debug)]
struct Kernel {
    /// The file name, e.g. `c_add_fwd.renamed.c`.
    file: String,
    /// The base kernel's stem, e.g. `c_add_fwd`.
    base: String,
    ext: String,
    role: Role,
    text: Vec<u8>,
    spec: Spec,
}

impl Kernel {
    fn options(&self) -> CanonOptions {
        self.spec.options()
    }

    fn canonical(&self) -> Canonical {
        canonical_kernel(&self.text, &self.options())
    }

    /// The base kernel's file name.
    fn base_file(&self) -> String {
        format!("{}.{}", self.base, self.ext)
    }
}

const EXTENSIONS: [&str; 3] = ["c", "cu", "cl"];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots")
}

fn read_spec(path: &Path) -> Spec {
    let json = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (every kernel needs its sidecar)", path.display()));
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every kernel file of the corpus, sorted by file name. A twin's options are
/// its own sidecar (`<name>.renamed.json`) when it has one, else its base's.
fn corpus() -> Vec<Kernel> {
    let dir = corpus_dir();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut kernels = Vec::new();
    for file in files {
        let Some((stem, ext)) = file.rsplit_once('.') else {
            continue;
        };
        if !EXTENSIONS.contains(&ext) {
            assert!(
                ext == "json" || file == "README.md" || file == ".gitattributes",
                "{file}: not a kernel (.c, .cu, .cl), a sidecar, the README or .gitattributes"
            );
            continue;
        }
        let (base, role) = if let Some(b) = stem.strip_suffix(".renamed") {
            (b, Role::Renamed)
        } else if let Some(b) = stem.strip_suffix(".differs") {
            (b, Role::Differs)
        } else {
            (stem, Role::Kernel)
        };
        let own = dir.join(format!("{stem}.json"));
        let spec = if role == Role::Kernel || own.exists() {
            read_spec(&own)
        } else {
            read_spec(&dir.join(format!("{base}.json")))
        };
        kernels.push(Kernel {
            text: std::fs::read(dir.join(&file)).unwrap(),
            file: file.clone(),
            base: base.to_string(),
            ext: ext.to_string(),
            role,
            spec,
        });
    }
    kernels
}

fn find<'a>(corpus: &'a [Kernel], file: &str) -> &'a Kernel {
    corpus
        .iter()
        .find(|k| k.file == file)
        .unwrap_or_else(|| panic!("{file}: not in the corpus"))
}

// ---------------------------------------------------------------------------
// Known violations of the rules: no snapshot until fixed (see the ignored
// regression tests at the end, which state the expected canonical texts).

/// Kernel file, and the rule the current code breaks on it.
const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

fn known_violation(file: &str) -> Option<&'static str> {
    KNOWN_VIOLATIONS
        .iter()
        .find(|(f, _)| *f == file)
        .map(|(_, why)| *why)
}

// ---------------------------------------------------------------------------
// Snapshots

/// The canonical text made safe for a snapshot file, injectively: insta
/// normalizes CR LF and trims the end, so carriage returns, other control
/// characters and bytes that are not UTF-8 are shown as `⟨...⟩` (no corpus
/// kernel contains `⟨`), and the end is marked.
fn show(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\r' => out.push_str("⟨CR⟩"),
                '\n' | '\t' => out.push(c),
                c if c.is_control() => out.push_str(&format!("⟨U+{:04X}⟩", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("⟨x{b:02X}⟩"));
        }
    }
    out.push_str("⟨EOF⟩");
    out
}

/// What a snapshot holds: the canonical text first, then the rest of the
/// result and the options it was taken under.
fn render(kernel: &Kernel, c: &Canonical) -> String {
    let mut s = String::new();
    s.push_str(
        "canonical text (⟨CR⟩ a carriage return, ⟨xHH⟩ a byte that is not UTF-8, ⟨EOF⟩ the end):\n",
    );
    s.push_str(&show(&c.text));
    s.push_str("\n\nkernel token: ");
    s.push_str(c.kernel_token.as_deref().unwrap_or("(none)"));
    s.push_str(&format!("\nbound renamed: {}", c.bound_renamed));
    s.push_str("\nreason: ");
    s.push_str(c.reason.as_deref().unwrap_or("(none)"));
    s.push_str("\nrenamed, in order of first occurrence:\n");
    for (from, to) in &c.renamed {
        s.push_str(&format!("  {from} -> {to}\n"));
    }
    s.push_str("options: ");
    s.push_str(&serde_json::to_string(&kernel.spec).unwrap());
    s.push('\n');
    s
}

#[test]
fn corpus_canonical_forms_match_reviewed_snapshots() {
    let corpus = corpus();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        insta::glob!("corpus", "*.{c,cu,cl}", |path| {
            let file = path.file_name().unwrap().to_str().unwrap();
            let kernel = find(&corpus, file);
            if kernel.role != Role::Kernel {
                return;
            }
            if let Some(why) = known_violation(file) {
                eprintln!("{file}: no snapshot (known violation: {why})");
                return;
            }
            insta::assert_snapshot!("canonical", render(kernel, &kernel.canonical()));
        });
    });
}

#[test]
fn every_snapshot_belongs_to_a_corpus_kernel() {
    let corpus = corpus();
    let expected: HashSet<String> = corpus
        .iter()
        .filter(|k| k.role == Role::Kernel && known_violation(&k.file).is_none())
        .map(|k| format!("canonical@{}.snap", k.file))
        .collect();
    let mut found = HashSet::new();
    for entry in std::fs::read_dir(snapshot_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("canonical@") && name.ends_with(".snap") {
            assert!(
                expected.contains(&name),
                "snapshots/{name}: no such kernel (or it is a known violation): delete it"
            );
            found.insert(name);
        }
    }
    let mut missing: Vec<_> = expected.difference(&found).collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "kernels without a snapshot: {missing:?}"
    );
}

// ---------------------------------------------------------------------------
// Properties over the corpus

#[test]
fn canonicalizing_is_deterministic() {
    let corpus = corpus();
    for k in &corpus {
        let options = k.options();
        let first = canonical_kernel(&k.text, &options);
        let renamer = Renamer::new(&options);
        // A reused renamer, before and after canonicalizing other kernels.
        assert_eq!(renamer.canonicalize(&k.text), first, "{}", k.file);
        for other in corpus.iter().rev() {
            renamer.canonicalize(&other.text);
        }
        assert_eq!(renamer.canonicalize(&k.text), first, "{}", k.file);
        // And from a copy of the text.
        assert_eq!(
            canonical_kernel(&k.text.clone(), &options),
            first,
            "{}",
            k.file
        );
    }
}

#[test]
fn renamed_twins_canonicalize_like_their_kernel() {
    let corpus = corpus();
    let mut twins = 0;
    for twin in corpus.iter().filter(|k| k.role == Role::Renamed) {
        let base = find(&corpus, &twin.base_file());
        assert_ne!(twin.text, base.text, "{}: renames nothing", twin.file);
        let (a, b) = (base.canonical(), twin.canonical());
        assert_eq!(
            a.text_lossy(),
            b.text_lossy(),
            "{} and {} differ in canonical text",
            base.file,
            twin.file
        );
        assert_eq!(a.text, b.text);
        assert_eq!(a.kernel_token, b.kernel_token, "{}", twin.file);
        assert_eq!(
            (a.bound_renamed, &a.reason),
            (b.bound_renamed, &b.reason),
            "{}",
            twin.file
        );
        let targets = |c: &Canonical| {
            c.renamed
                .iter()
                .map(|(_, to)| to.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(targets(&a), targets(&b), "{}", twin.file);
        twins += 1;
    }
    assert!(twins >= 10, "only {twins} renamed twins");
}

#[test]
fn differs_twins_canonicalize_unlike_their_kernel() {
    let corpus = corpus();
    let mut twins = 0;
    for twin in corpus.iter().filter(|k| k.role == Role::Differs) {
        let base = find(&corpus, &twin.base_file());
        assert_ne!(
            base.canonical().text_lossy(),
            twin.canonical().text_lossy(),
            "{} canonicalizes like {}: a wrong hit",
            twin.file,
            base.file
        );
        twins += 1;
    }
    assert!(twins >= 4, "only {twins} differs twins");
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// `text` with every whole-word occurrence of `from` replaced by `to`.
fn replace_word(text: &[u8], from: &str, to: &str) -> Vec<u8> {
    let from = from.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let whole = text[i..].starts_with(from)
            && (i == 0 || !is_ident_byte(text[i - 1]))
            && text.get(i + from.len()).is_none_or(|&b| !is_ident_byte(b));
        if whole {
            out.extend_from_slice(to.as_bytes());
            i += from.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// Whether `name` occurs in a token where nothing is renamed (a literal, a
/// preprocessor line, an attribute, an error token).
fn occurs_in_opaque_token(text: &[u8], name: &str) -> bool {
    lex(text).iter().any(|t| {
        !matches!(t.kind, TokenKind::Ident | TokenKind::Whitespace) && !t.kind.is_comment() && {
            let bytes = &text[t.span.clone()];
            bytes.windows(name.len()).any(|w| w == name.as_bytes())
        }
    })
}

#[test]
fn segment_kernels_canonicalize_alike_at_any_index() {
    let corpus = corpus();
    let (mut alike, mut unlike) = (0, 0);
    for k in corpus.iter().filter(|k| k.role == Role::Kernel) {
        let Some(name) = &k.spec.kernel_name else {
            continue;
        };
        let token = kcache::canon::kernel_token(name);
        if token == name {
            continue;
        }
        for index in [0, 7, 12, 1000] {
            let other =
                kcache::canon::segment_kernel_name(token.strip_suffix("__seg").unwrap(), index);
            if &other == name {
                continue;
            }
            let mut spec = k.spec.clone();
            spec.kernel_name = Some(other.clone());
            let text = replace_word(&k.text, name, &other);
            assert_ne!(text, k.text, "{}: the kernel never names itself", k.file);
            let (a, b) = (k.canonical(), canonical_kernel(&text, &spec.options()));
            if a.raw.is_some() {
                // Raw keyed (`__func__` spells the index): the full name is
                // the token, so another index is another key.
                assert_eq!(a.kernel_token.as_deref(), Some(name.as_str()), "{}", k.file);
                assert_ne!(a.kernel_token, b.kernel_token, "{} as {other}", k.file);
                unlike += 1;
            } else if occurs_in_opaque_token(&k.text, name) {
                assert_ne!(
                    a.text, b.text,
                    "{} as {other}: its name in a literal was lost",
                    k.file
                );
                unlike += 1;
            } else {
                assert_eq!(a.text_lossy(), b.text_lossy(), "{} as {other}", k.file);
                assert_eq!(a.kernel_token, b.kernel_token);
                alike += 1;
            }
        }
    }
    assert!(
        alike >= 12 && unlike >= 3,
        "segment twins: {alike} alike, {unlike} unlike"
    );
}

// ---------------------------------------------------------------------------
// The oracle: the rules of `canon::rename`'s module docs, written again from
// the docs, on the crate's lexer. It predicts the canonical text and the map.

/// `i` then digits.
fn oracle_symbol(name: &[u8]) -> bool {
    name.len() > 1 && name[0] == b'i' && name[1..].iter().all(u8::is_ascii_digit)
}

/// `v`, digits, `_`, anything.
fn oracle_scope_local(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b"v") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && rest.get(digits) == Some(&b'_')
}

fn oracle_digits(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(u8::is_ascii_digit)
}

/// `__x` or `_X`.
fn oracle_reserved(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'_' && (b[1] == b'_' || b[1].is_ascii_uppercase())
}

fn oracle_numbered(name: &[u8], prefix: &[u8]) -> bool {
    name.strip_prefix(prefix).is_some_and(oracle_digits)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Keep,
    Token,
    Rename,
}

struct Oracle<'a> {
    o: &'a CanonOptions,
    refused: bool,
    /// The binder's verdicts: the rules select a name, the binder must
    /// verify it (its own tests check how it decides).
    binding: kcache::canon::bind::Binding<'a>,
}

impl Oracle<'_> {
    fn base(&self, name: &[u8]) -> bool {
        (self.o.symbols && oracle_symbol(name))
            || (!self.refused && self.o.bound.iter().any(|b| b.as_bytes() == name))
            || oracle_digits(name)
    }

    fn fate(&self, name: &[u8]) -> Fate {
        let listed = |v: &[String]| v.iter().any(|n| n.as_bytes() == name);
        if listed(&self.o.keep) || listed(&self.o.free) || is_keyword(name) {
            return Fate::Keep;
        }
        if self.o.kernel_name.as_deref().map(str::as_bytes) == Some(name) {
            return Fate::Token;
        }
        if self.binding.verdict(name).is_err() {
            return Fate::Keep;
        }
        if (self.o.symbols && oracle_symbol(name))
            || (self.o.scope_locals && oracle_scope_local(name))
            || (!self.refused && listed(&self.o.bound))
        {
            return Fate::Rename;
        }
        let derived = self.o.derivations.iter().any(|d| {
            let (p, s) = (d.prefix.as_bytes(), d.suffix.as_bytes());
            name.len() > p.len() + s.len()
                && name.starts_with(p)
                && name.ends_with(s)
                && self.base(&name[p.len()..name.len() - s.len()])
        });
        if derived {
            Fate::Rename
        } else {
            Fate::Keep
        }
    }
}

/// A piece of a kernel: bytes copied as they are, or a name at a renamable
/// position (its written bytes, and whether it stands after a member operator).
enum Piece<'t> {
    Verbatim(&'t [u8]),
    Name(&'t [u8], bool),
}

/// Where C's splice-aware scanning of a comment finds words: identifiers and
/// pp-numbers (so `2i9` holds no name); everything else is verbatim.
fn comment_pieces<'t>(c: &'t [u8], out: &mut Vec<Piece<'t>>) {
    // A backslash, any spaces or tabs, then LF, CR LF or a lone CR.
    let splice = |i: usize| -> usize {
        if c.get(i) != Some(&b'\\') {
            return 0;
        }
        let mut j = i + 1;
        while matches!(c.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        match (c.get(j), c.get(j + 1)) {
            (Some(b'\r'), Some(b'\n')) => j + 2 - i,
            (Some(b'\r' | b'\n'), _) => j + 1 - i,
            _ => 0,
        }
    };
    let ucn = |i: usize| -> usize {
        let n = match (c.get(i), c.get(i + 1)) {
            (Some(b'\\'), Some(b'u')) => 4,
            (Some(b'\\'), Some(b'U')) => 8,
            _ => return 0,
        };
        let ok = c.len() >= i + 2 + n && c[i + 2..i + 2 + n].iter().all(u8::is_ascii_hexdigit);
        if ok {
            n + 2
        } else {
            0
        }
    };
    let ident_start = |i: usize| -> usize {
        match c[i] {
            b if b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80 => 1,
            _ => ucn(i),
        }
    };
    // Extends a word from `i` through splices and whatever `more` accepts.
    let extend = |mut i: usize, more: &dyn Fn(usize) -> usize| -> usize {
        loop {
            let mut j = i;
            while splice(j) > 0 {
                j += splice(j);
            }
            if j >= c.len() {
                return i;
            }
            match more(j) {
                0 => return i,
                n => i = j + n,
            }
        }
    };
    let mut i = 0;
    let mut verbatim = 0;
    while i < c.len() {
        let number_start =
            c[i].is_ascii_digit() || (c[i] == b'.' && c.get(i + 1).is_some_and(u8::is_ascii_digit));
        let end = if number_start {
            let more = |j: usize| -> usize {
                match (c[j], c.get(j + 1)) {
                    (b'e' | b'E' | b'p' | b'P', Some(b'+' | b'-')) => 2,
                    (b'\'', Some(n)) if n.is_ascii_alphanumeric() || *n == b'_' => 2,
                    (b, _) if is_ident_byte(b) || b == b'.' => 1,
                    _ => ucn(j),
                }
            };
            Some(extend(i + 1, &more))
        } else if ident_start(i) > 0 {
            let more = |j: usize| -> usize {
                if is_ident_byte(c[j]) {
                    1
                } else {
                    ucn(j)
                }
            };
            Some(extend(i + ident_start(i), &more))
        } else {
            None
        };
        match end {
            Some(end) => {
                if verbatim < i {
                    out.push(Piece::Verbatim(&c[verbatim..i]));
                }
                out.push(if number_start {
                    Piece::Verbatim(&c[i..end])
                } else {
                    Piece::Name(&c[i..end], false)
                });
                i = end;
                verbatim = end;
            }
            None => i += 1,
        }
    }
    if verbatim < c.len() {
        out.push(Piece::Verbatim(&c[verbatim..]));
    }
}

/// The kernel cut into pieces: names at renamable positions (code and
/// comments) and everything else.
fn pieces(text: &[u8]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut after_member = false;
    for t in lex(text) {
        let bytes = &text[t.span];
        match t.kind {
            TokenKind::Ident => {
                out.push(Piece::Name(bytes, after_member));
                // `a.template f()`: the member is the name after `template`.
                after_member = after_member && bytes == b"template";
            }
            k if k.is_comment() => comment_pieces(bytes, &mut out),
            TokenKind::Whitespace => out.push(Piece::Verbatim(bytes)),
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => {
                out.push(Piece::Verbatim(bytes));
                after_member = true;
            }
            _ => {
                out.push(Piece::Verbatim(bytes));
                after_member = false;
            }
        }
    }
    out
}

/// Why the rules say `text` is raw-keyed (`canon::rename`'s "Raw keying"
/// and `canon::dialect`'s list), written from the docs.
fn oracle_raw(text: &[u8]) -> Option<&'static str> {
    const MACROS: [&[u8]; 12] = [
        b"__FILE__",
        b"__LINE__",
        b"__COUNTER__",
        b"__func__",
        b"__FUNCTION__",
        b"__PRETTY_FUNCTION__",
        b"__BASE_FILE__",
        b"__FILE_NAME__",
        b"__INCLUDE_LEVEL__",
        b"__TIME__",
        b"__DATE__",
        b"__TIMESTAMP__",
    ];
    let trigraph = text
        .windows(3)
        .any(|w| w[0] == b'?' && w[1] == b'?' && b"=/'()!<>-".contains(&w[2]));
    if trigraph {
        return Some("trigraph");
    }
    fn tokens(text: &[u8], in_directive: bool) -> Option<&'static str> {
        let toks = lex(text);
        for (n, t) in toks.iter().enumerate() {
            let b = &text[t.span.clone()];
            let next = toks.get(n + 1).map(|t| &text[t.span.clone()]);
            let why = match t.kind {
                k if k.is_error() => Some("lexical error"),
                TokenKind::RawStr => Some("raw string"),
                TokenKind::Number if b.contains(&b'\'') => Some("digit separator"),
                TokenKind::Ident if MACROS.contains(&spelling(b).as_ref()) => Some("macro"),
                TokenKind::Punct
                    if b == b"<:" && next.is_some_and(|x| x.starts_with(b":") || x == b"<:") =>
                {
                    Some("<::")
                }
                TokenKind::Punct if in_directive && (b == b"##" || b == b"%:%:") => Some("paste"),
                TokenKind::Preprocessor => tokens(&b[1..], true),
                _ => None,
            };
            if why.is_some() {
                return why;
            }
        }
        None
    }
    tokens(text, false)
}

/// The canonical form the rules predict for `text` under `o`.
fn oracle(text: &[u8], o: &CanonOptions) -> Canonical {
    if let Some(why) = oracle_raw(text) {
        return Canonical {
            text: [b"/*kc0 raw*/".as_slice(), text].concat(),
            kernel_token: o.kernel_name.clone(),
            renamed: Vec::new(),
            bound_renamed: false,
            reason: Some(why.into()),
            raw: Some(why.into()),
            uncacheable: None,
            inferred: Vec::new(),
            kept: Vec::new(),
            given_up: None,
            unparsed: Vec::new(),
        };
    }
    let refused = o
        .bound
        .iter()
        .any(|b| o.free.contains(b) || oracle_reserved(b) || is_keyword(b.as_bytes()));
    let oracle = Oracle {
        o,
        refused,
        binding: kcache::canon::bind::bind(text, None),
    };
    let token = o.kernel_name.as_deref().map(kcache::canon::kernel_token);
    let pieces = pieces(text);
    // A name the rules would rename that also stands after a member operator
    // may name a member the kernel declares: it is kept everywhere.
    let members: HashSet<Vec<u8>> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Name(written, true) => Some(spelling(written).into_owned()),
            _ => None,
        })
        .filter(|name| oracle.fate(name) != Fate::Keep)
        .collect();
    // First occurrences, and the names kept as written.
    let mut order: Vec<(Vec<u8>, Fate)> = Vec::new();
    let mut seen = HashSet::new();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for p in &pieces {
        if let Piece::Name(written, member) = p {
            let name = spelling(written).into_owned();
            let fate = if *member || members.contains(&name) {
                Fate::Keep
            } else {
                oracle.fate(&name)
            };
            if fate == Fate::Keep {
                kept.push(name);
            } else if seen.insert(name.clone()) {
                order.push((name, fate));
            }
        }
    }
    let token_bytes = token.map(str::as_bytes);
    let token_written = order.iter().any(|(_, f)| *f == Fate::Token);
    let marked = kept
        .iter()
        .any(|k| oracle_numbered(k, b"kc") || Some(k.as_slice()) == token_bytes)
        || (token_written && token_bytes.is_some_and(|t| oracle_numbered(t, b"kc")));
    let mut prefix = b"kc".to_vec();
    if marked {
        prefix.push(b'_');
        while kept.iter().any(|k| oracle_numbered(k, &prefix)) {
            prefix.push(b'_');
        }
    }
    let mut map: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut renamed = Vec::new();
    let mut n = 0;
    for (name, fate) in &order {
        let to = match fate {
            Fate::Token if marked => [prefix.as_slice(), b"0"].concat(),
            Fate::Token => token_bytes.unwrap().to_vec(),
            _ => {
                n += 1;
                [prefix.as_slice(), n.to_string().as_bytes()].concat()
            }
        };
        renamed.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(&to).into_owned(),
        ));
        map.insert(name.clone(), to);
    }
    let mut out = Vec::new();
    if marked {
        out.extend_from_slice(b"/*kc0 ");
        out.extend_from_slice(&prefix);
        out.extend_from_slice(b"*/");
    }
    for p in &pieces {
        match p {
            Piece::Verbatim(b) => out.extend_from_slice(b),
            Piece::Name(written, member) => {
                let name = spelling(written);
                match map.get(name.as_ref()) {
                    Some(to) if !member => out.extend_from_slice(to),
                    _ => out.extend_from_slice(written),
                }
            }
        }
    }
    Canonical {
        text: out,
        kernel_token: token.map(str::to_string),
        renamed,
        bound_renamed: !refused,
        reason: None,
        raw: None,
        uncacheable: None,
        inferred: Vec::new(),
        kept: Vec::new(),
        given_up: None,
        unparsed: Vec::new(),
    }
}

#[test]
fn the_rules_predict_every_canonical_form() {
    let corpus = corpus();
    let mut checked = 0;
    for k in corpus.iter().filter(|k| known_violation(&k.file).is_none()) {
        let got = k.canonical();
        let want = oracle(&k.text, &k.options());
        if got.text != want.text {
            let at = got
                .text
                .iter()
                .zip(&want.text)
                .take_while(|(a, b)| a == b)
                .count();
            let from = at.saturating_sub(60);
            panic!(
                "{}: canonical text departs from the rules at byte {at}:\n got: {:?}\nwant: {:?}",
                k.file,
                String::from_utf8_lossy(&got.text[from..(at + 60).min(got.text.len())]),
                String::from_utf8_lossy(&want.text[from..(at + 60).min(want.text.len())]),
            );
        }
        assert_eq!(got.renamed, want.renamed, "{}: renaming map", k.file);
        assert_eq!(got.kernel_token, want.kernel_token, "{}", k.file);
        assert_eq!(got.bound_renamed, want.bound_renamed, "{}", k.file);
        assert_eq!(
            got.raw.is_some(),
            want.raw.is_some(),
            "{}: raw keying",
            k.file
        );
        match &got.reason {
            None => assert!(got.bound_renamed, "{}: refused without a reason", k.file),
            Some(_) if got.raw.is_some() => {}
            Some(reason) => {
                let culprit = k
                    .spec
                    .bound
                    .iter()
                    .find(|b| reason.contains(&format!("`{b}`")));
                assert!(
                    culprit.is_some(),
                    "{}: reason `{reason}` names no bound name",
                    k.file
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 45, "the oracle checked only {checked} kernels");
}

/// The corpus keeps covering what the issue asks of it; this fails if a
/// kernel that carries a rule is removed or stops exercising it.
#[test]
fn the_corpus_covers_every_rule() {
    let corpus = corpus();
    let kernels: Vec<&Kernel> = corpus.iter().filter(|k| k.role == Role::Kernel).collect();
    let clean = kernels
        .iter()
        .filter(|k| known_violation(&k.file).is_none());
    assert!(clean.count() >= 30, "fewer than 30 kernels with snapshots");
    for ext in EXTENSIONS {
        let n = kernels.iter().filter(|k| k.ext == ext).count();
        assert!(n >= 6, "only {n} .{ext} kernels");
    }
    for (file, _) in KNOWN_VIOLATIONS {
        find(&corpus, file);
    }
    for k in &corpus {
        assert!(
            !k.text.windows(3).any(|w| w == "⟨".as_bytes()),
            "{}: ⟨ breaks show()",
            k.file
        );
    }
    let has = |what: &str, pred: &dyn Fn(&Kernel, &Canonical) -> bool| {
        let n = kernels.iter().filter(|k| pred(k, &k.canonical())).count();
        assert!(n > 0, "no kernel covers {what}");
    };
    let kinds = |k: &Kernel| {
        lex(&k.text)
            .into_iter()
            .map(|t| t.kind)
            .collect::<HashSet<_>>()
    };
    let contains = |k: &Kernel, s: &str| k.text.windows(s.len()).any(|w| w == s.as_bytes());
    for kind in [
        TokenKind::Str,
        TokenKind::Char,
        TokenKind::RawStr,
        TokenKind::LineComment,
        TokenKind::BlockComment,
        TokenKind::Preprocessor,
        TokenKind::Attribute,
        TokenKind::Arrow,
        TokenKind::ColonColon,
        TokenKind::UnterminatedComment,
        TokenKind::UnterminatedStr,
        TokenKind::UnterminatedRawStr,
        TokenKind::UnterminatedAttribute,
    ] {
        has(&format!("{kind:?}"), &|k, _| kinds(k).contains(&kind));
    }
    has("CR LF line endings", &|k, _| contains(k, "\r\n"));
    has("a line comment continued by a splice", &|k, _| {
        lex(&k.text)
            .iter()
            .any(|t| t.kind == TokenKind::LineComment && k.text[t.span.clone()].contains(&b'\n'))
    });
    has("a splice inside an identifier", &|k, _| {
        lex(&k.text)
            .iter()
            .any(|t| t.kind == TokenKind::Ident && k.text[t.span.clone()].contains(&b'\\'))
    });
    has("#define with a continuation", &|k, _| {
        contains(k, "#define") && contains(k, "\\\n")
    });
    has("#pragma unroll", &|k, _| contains(k, "#pragma unroll"));
    has("#if / #endif", &|k, _| {
        contains(k, "#if") && contains(k, "#endif")
    });
    has("#include", &|k, _| contains(k, "#include"));
    has("a builtin (threadIdx.x)", &|k, _| {
        contains(k, "threadIdx.x")
    });
    has("__syncthreads", &|k, _| contains(k, "__syncthreads"));
    has("get_global_id", &|k, _| contains(k, "get_global_id"));
    has("fmaxf", &|k, _| contains(k, "fmaxf"));
    // Kept as written, for their spelling: NVRTC refuses `a$b` and `café`,
    // so a renamed one would share the key of an ASCII twin that compiles.
    let for_spelling = |why: &str| why.contains("non-ASCII");
    has("a kept $ identifier", &|_, c| {
        c.kept
            .iter()
            .any(|(n, why)| n.contains('$') && for_spelling(why))
    });
    has("a kept non-ASCII identifier", &|_, c| {
        c.kept
            .iter()
            .any(|(n, why)| !n.is_ascii() && for_spelling(why))
    });
    for k in &kernels {
        let c = k.canonical();
        // The kernel's own name maps to its kernel token, not renamed.
        let odd = c
            .renamed
            .iter()
            .find(|(f, t)| f != t && (f.contains('$') || !f.is_ascii()));
        assert!(odd.is_none(), "{}: renamed {odd:?}", k.file);
    }
    has("the marked form", &|_, c| {
        c.text.starts_with(b"/*kc0 kc_*/")
    });
    has("a second marked prefix", &|_, c| {
        c.text.starts_with(b"/*kc0 kc__*/")
    });
    has("a kept name equal to the kernel token", &|k, c| {
        let t = c.kernel_token.as_deref().unwrap_or("");
        k.spec.kernel_name.as_deref() != Some(t) && contains(k, &format!("{t}("))
    });
    has("bound meeting free", &|_, c| {
        c.reason.as_deref().is_some_and(|r| r.contains("free"))
    });
    has("a reserved bound name", &|_, c| {
        c.reason.as_deref().is_some_and(|r| r.contains("reserved"))
    });
    has("a keyword bound name", &|_, c| {
        c.reason.as_deref().is_some_and(|r| r.contains("keyword"))
    });
    has("symbols switched off", &|k, _| {
        k.spec.symbols == Some(false)
    });
    has("scope locals switched off", &|k, _| {
        k.spec.scope_locals == Some(false)
    });
    has("names in keep", &|k, _| !k.spec.keep.is_empty());
    has("no kernel name", &|k, _| k.spec.kernel_name.is_none());
    has("a segment kernel", &|_, c| {
        c.kernel_token
            .as_deref()
            .is_some_and(|t| t.ends_with("__seg"))
    });
    has("a derivation with a digits base", &|k, c| {
        k.spec.derivations.iter().any(|d| d == "t*") && c.renamed.iter().any(|(f, _)| f == "t42")
    });
    let derivation_kinds: BTreeMap<&str, usize> = kernels
        .iter()
        .flat_map(|k| k.spec.derivations.iter().map(String::as_str))
        .fold(BTreeMap::new(), |mut m, d| {
            *m.entry(d).or_default() += 1;
            m
        });
    assert!(
        derivation_kinds.len() >= 4,
        "derivation templates used: {derivation_kinds:?}"
    );
}

// ---------------------------------------------------------------------------
// Regression tests for the known violations: they state the canonical text
// the rules require. Run with `cargo test --test canon_corpus -- --ignored`
// once the code is fixed, then drop the kernel from KNOWN_VIOLATIONS and
// review its new snapshot.

fn assert_canonical(file: &str, want: &str) {
    let corpus = corpus();
    let k = find(&corpus, file);
    let got = k.canonical();
    assert_eq!(got.text_lossy(), want, "{file}");
}

#[test]
fn regression_letters_beyond_latin1_continue_an_identifier() {
    // `i1θ` is one identifier (a free name): renaming the symbol i1 inside it
    // makes `extern float i1θ` and `extern float i2θ` read alike, a wrong hit.
    // The bound nodes spelled beyond ASCII are kept as written (NVRTC
    // refuses such names; renamed, a kernel that fails there would share
    // the key of an ASCII twin that compiles).
    assert_canonical(
        "c_non_latin1_identifier.c",
        "/* n3_θ and n4_中 are bound nodes; i1θ is a global from the prelude:\n   \
         each is one identifier (GCC accepts UTF-8 letters beyond U+00FF). */\n\
         extern float i1θ;\n\
         void theta_fwd(float *n3_θ, const float *n4_中) {\n  \
         for (int kc1 = 0; kc1 < 4; ++kc1) n3_θ[kc1] = i1θ + n4_中[kc1];\n}\n",
    );
}

#[test]
fn regression_a_byte_that_is_not_utf8_stays_inside_its_string() {
    // Today `"caf\xE9 i2"` and `"caf\xE9 i3"` canonicalize alike: a wrong hit
    // between kernels that print different text.
    let corpus = corpus();
    let k = find(&corpus, "c_latin1_string.c");
    let want: &[u8] =
        b"/* Legacy output in Latin-1: the literal holds the byte 0xE9, not UTF-8. */\n\
#include <stdio.h>\n\
void greet(const float *kc1) {\n  \
for (int kc2 = 0; kc2 < 1; ++kc2) printf(\"caf\xe9 i2 %f\\n\", kc1[kc2]);\n}\n";
    assert_eq!(k.canonical().text_lossy(), String::from_utf8_lossy(want));
    assert_eq!(k.canonical().text, want);
}

#[test]
fn regression_decrement_then_greater_is_not_an_arrow() {
    assert_canonical(
        "c_decrement_arrow.c",
        "/* A count-down loop written with -->, which C reads as -- then >. */\n\
         void countdown(float *kc1) {\n  int kc2 = 8;\n  \
         for (int kc3 = 0; kc2-->kc3; ) kc1[kc2] = (float)kc3;\n}\n",
    );
}

#[test]
fn regression_a_directive_after_a_comment_is_a_preprocessor_line() {
    // Today `#include <i1.h>` and `#include <i2.h>` (each kernel looping over
    // its own symbol) canonicalize alike: a wrong hit across headers.
    assert_canonical(
        "c_comment_before_directive.c",
        "/* prelude */ #include <i1.h>\nvoid k(float *kc1) {\n  \
         for (int kc2 = 0; kc2 < 2; ++kc2) kc1[kc2] = 0.0f;\n}\n",
    );
}

#[test]
fn regression_a_ucn_names_the_same_identifier_as_its_character() {
    // `n2_\u00e9` and `n2_é` are one name to C: both are kept as written (a
    // name spelled beyond ASCII is never renamed), so neither is renamed
    // without the other, and `n1_x`, the other parameter, is still renamed.
    let corpus = corpus();
    let c = find(&corpus, "c_ucn_spelling.c").canonical();
    let text = c.text_lossy();
    assert!(
        text.contains("void ucn_fwd(float *n2_\\u00e9, const float *kc1)"),
        "{text}"
    );
    assert!(text.contains("n2_é[kc2] = kc1[kc2]"), "{text}");
}
