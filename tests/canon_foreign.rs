//! Foreign kernels (`tests/corpus/foreign/`): hand-written CUDA, OpenCL, C
//! and GLSL, and kernels in the styles of generators kcache has no renderer
//! for (tinygrad, Halide, Inductor), canonicalized with inference. Each has a
//! reviewed snapshot (`snapshots/foreign@<file>.snap`); the properties below
//! run over all of them.

use kcache::canon::bind::neutral::defined_function;
use kcache::canon::lexer::{lex, spelling, TokenKind};
use kcache::canon::{CanonOptions, Canonical, Renamer};
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::PathBuf;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        ..ProptestConfig::default()
    }
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/foreign")
}

/// Every kernel of the corpus: its file name and text, sorted by name.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The options a foreign kernel is canonicalized under: inference, and the
/// one function it defines as its name.
fn options(text: &[u8]) -> CanonOptions {
    CanonOptions {
        kernel_name: defined_function(text),
        infer: true,
        ..CanonOptions::default()
    }
}

fn canon(text: &[u8]) -> Canonical {
    Renamer::new(&options(text)).canonicalize(text)
}

fn render(c: &Canonical) -> String {
    let mut s = String::from("canonical text:\n");
    s.push_str(&c.text_lossy());
    s.push_str("\nkernel token: ");
    s.push_str(c.kernel_token.as_deref().unwrap_or("(none)"));
    // A raw-keyed kernel is not renamed and the binder is not consulted.
    if let Some(why) = &c.raw {
        s.push_str(&format!("\nraw: {why}"));
    }
    if let Some(why) = &c.uncacheable {
        s.push_str(&format!("\nuncacheable: {why}"));
    }
    s.push_str("\ninferred: ");
    s.push_str(&c.inferred.join(", "));
    if let Some(why) = &c.given_up {
        s.push_str(&format!("\ngiven up: {why}"));
    }
    for (l, r) in &c.unparsed {
        s.push_str(&format!("\nunparsed: bytes {l}..{r}"));
    }
    s.push_str("\nkept:\n");
    for (name, why) in &c.kept {
        s.push_str(&format!("  {name}: {why}\n"));
    }
    s
}

#[test]
fn the_corpus_has_at_least_40_kernels_in_every_language() {
    let c = corpus();
    assert!(c.len() >= 40, "{} kernels", c.len());
    for ext in [".c", ".cu", ".cl", ".comp", ".cpp"] {
        assert!(c.iter().any(|(f, _)| f.ends_with(ext)), "no {ext} kernel");
    }
}

#[test]
fn foreign_canonical_forms_match_reviewed_snapshots() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        insta::glob!("corpus/foreign", "*.{c,cu,cl,comp,cpp}", |path| {
            let text = std::fs::read(path).unwrap();
            insta::assert_snapshot!("foreign", render(&canon(&text)));
        });
    });
}

#[test]
fn every_foreign_snapshot_belongs_to_a_kernel() {
    let files: HashSet<String> = corpus().into_iter().map(|(f, _)| f).collect();
    let snaps = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    for e in std::fs::read_dir(snaps).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if let Some(file) = name
            .strip_prefix("foreign@")
            .and_then(|n| n.strip_suffix(".snap"))
        {
            assert!(files.contains(file), "snapshots/{name}: no such kernel");
        }
    }
}

#[test]
fn inference_renames_something_in_most_kernels() {
    // A sanity floor, not a result: the kernels that keep everything say why
    // in their snapshots (templates, static_cast).
    let c = corpus();
    let renaming = c
        .iter()
        .filter(|(_, t)| !canon(t).inferred.is_empty())
        .count();
    assert!(renaming * 10 >= c.len() * 9, "{renaming} of {}", c.len());
}

/// `text` with each name in `map` replaced at every code identifier (but a
/// member: `.x` names no binding, nor does a member's name in its struct
/// body, which the binder reports) and every comment word spelled like it.
fn rename(text: &[u8], map: &[(String, String)]) -> Vec<u8> {
    let find = |w: &[u8]| map.iter().find(|(f, _)| f.as_bytes() == w).map(|(_, t)| t);
    let declarators = kcache::canon::bind::bind(text, None)
        .member_declarators()
        .to_vec();
    let mut out = Vec::new();
    let mut member = false;
    for t in lex(text) {
        let bytes = &text[t.span.clone()];
        let after_member = member || declarators.binary_search(&t.span.start).is_ok();
        match t.kind {
            TokenKind::Whitespace => {}
            k if k.is_comment() => {}
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => member = true,
            _ => member = false,
        }
        match t.kind {
            TokenKind::Ident if after_member => out.extend_from_slice(bytes),
            TokenKind::Ident => match find(&spelling(bytes)) {
                Some(to) => out.extend_from_slice(to.as_bytes()),
                None => out.extend_from_slice(bytes),
            },
            k if k.is_comment() => {
                let mut i = 0;
                while i < bytes.len() {
                    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
                    if word(bytes[i]) {
                        let end = i + bytes[i..].iter().take_while(|b| word(**b)).count();
                        match find(&bytes[i..end]).filter(|_| !bytes[i].is_ascii_digit()) {
                            Some(to) => out.extend_from_slice(to.as_bytes()),
                            None => out.extend_from_slice(&bytes[i..end]),
                        }
                        i = end;
                    } else {
                        out.push(bytes[i]);
                        i += 1;
                    }
                }
            }
            _ => out.extend_from_slice(bytes),
        }
    }
    out
}

/// A token of `text` that is copied as written (not a renamed name, not the
/// kernel's own name, not blank or a comment), and the text with it changed.
fn mutate(text: &[u8], c: &Canonical, which: usize) -> Option<Vec<u8>> {
    let renamed: HashSet<&str> = c.renamed.iter().map(|(f, _)| f.as_str()).collect();
    let tokens: Vec<_> = lex(text)
        .into_iter()
        .filter(|t| match t.kind {
            TokenKind::Whitespace => false,
            k if k.is_comment() => false,
            TokenKind::Ident => !renamed
                .contains(String::from_utf8_lossy(&spelling(&text[t.span.clone()])).as_ref()),
            _ => true,
        })
        .collect();
    let t = tokens.get(which % tokens.len().max(1))?;
    let bytes = &text[t.span.clone()];
    let changed: Vec<u8> = match t.kind {
        // A free name, a member, a macro, a keyword: another spelling.
        TokenKind::Ident => [bytes, b"_z"].concat(),
        TokenKind::Number => [bytes, b"7"].concat(),
        TokenKind::Str | TokenKind::Char | TokenKind::RawStr => {
            let q = bytes.iter().position(|b| *b == b'"' || *b == b'\'')?;
            [&bytes[..=q], b"q", &bytes[q + 1..]].concat()
        }
        TokenKind::Preprocessor | TokenKind::Attribute => {
            let at = bytes.len() - if t.kind == TokenKind::Attribute { 2 } else { 0 };
            [&bytes[..at], b" q", &bytes[at..]].concat()
        }
        TokenKind::Punct | TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => match bytes
        {
            b"+" => b"-".to_vec(),
            b"*" => b"/".to_vec(),
            b"<" => b">".to_vec(),
            b"=" => b"^".to_vec(),
            b"," => b";".to_vec(),
            b => [b, b" +"].concat(),
        },
        _ => return None,
    };
    let mut out = text[..t.span.start].to_vec();
    out.extend_from_slice(&changed);
    out.extend_from_slice(&text[t.span.end..]);
    Some(out)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn renaming_every_declared_name_consistently_leaves_the_inferred_text_unchanged(
        which in 0usize..1000,
        salt in 0u32..100_000,
    ) {
        let corpus = corpus();
        let (file, text) = &corpus[which % corpus.len()];
        let c = canon(text);
        // Every name the canonical text renamed but the kernel's own.
        let own = options(text).kernel_name;
        let map: Vec<(String, String)> = c
            .renamed
            .iter()
            .filter(|(f, _)| Some(f) != own.as_ref())
            .enumerate()
            .map(|(k, (f, _))| (f.clone(), format!("q{salt}_{k}")))
            .collect();
        let other = rename(text, &map);
        let d = Renamer::new(&options(&other)).canonicalize(&other);
        prop_assert_eq!(c.text_lossy(), d.text_lossy(), "{}\n{}", file, String::from_utf8_lossy(&other));
    }

    #[test]
    fn changing_a_token_that_is_not_renamed_changes_the_inferred_text(
        which in 0usize..1000,
        token in 0usize..10_000,
    ) {
        let corpus = corpus();
        let (file, text) = &corpus[which % corpus.len()];
        let c = canon(text);
        let Some(changed) = mutate(text, &c, token) else { return Ok(()); };
        // The kernel's name is the original's, whatever the change does to it.
        let o = options(text);
        let d = Renamer::new(&o).canonicalize(&changed);
        prop_assert_ne!(c.text_lossy(), d.text_lossy(), "{}\n{}", file, String::from_utf8_lossy(&changed));
    }
}

/// The reuse figure: each kernel against a rendering with every name the
/// binder sees declared (verified or not) renamed consistently. A kernel
/// whose declared names are all verified shares its canonical text with the
/// rendering; one that keeps a name (for a reason its snapshot gives) does
/// not. Printed for the README; the floor guards against regressions.
#[test]
fn renamed_foreign_renderings_share_a_canonical_text() {
    let corpus = corpus();
    let mut shared = 0;
    let mut missed = Vec::new();
    for (file, text) in &corpus {
        let b = kcache::canon::bind::bind(text, None);
        let own = options(text).kernel_name;
        let map: Vec<(String, String)> = b
            .declared()
            .iter()
            .map(|d| String::from_utf8_lossy(d).into_owned())
            .filter(|d| Some(d) != own.as_ref())
            .enumerate()
            .map(|(k, d)| (d, format!("r{k}_renamed")))
            .collect();
        let other = rename(text, &map);
        if canon(text).text == Renamer::new(&options(&other)).canonicalize(&other).text {
            shared += 1;
        } else {
            missed.push(file.as_str());
        }
    }
    eprintln!(
        "renamed foreign renderings: {shared} of {} share a canonical text; missed: {missed:?}",
        corpus.len()
    );
    assert!(
        shared * 100 >= corpus.len() * 85,
        "{shared} of {}: {missed:?}",
        corpus.len()
    );
}
