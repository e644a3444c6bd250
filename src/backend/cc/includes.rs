//! The files a compile reads besides its kernels: `#include`, `#embed` and
//! `__has_include` references, resolved the way the compiler resolves them,
//! recursively, and digested in a deterministic order.
//!
//! # What is digested
//!
//! * every header found outside the compiler's own include directories: its
//!   path as resolved (the directory it was found in joined with the name as
//!   written, which is what the compiler reports and what `__FILE__` says) and
//!   its contents; its own references are followed in turn. A file is digested
//!   once, at its first reference, so cycles end and the order (depth first,
//!   in directive order) is deterministic;
//! * a header found in the compiler's own directories (`<math.h>`): its path
//!   only. Its contents belong to the compiler installation, which the
//!   backend's identity (compiler path, executable digest, version, target,
//!   include directories) stands for; they are neither read nor followed;
//! * `#embed` data: path and contents, wherever it was found;
//! * `__has_include(...)` (and `_next`, `__has_embed`): the name, and where it
//!   resolved or that it did not, since the answer changes the preprocessed
//!   text.
//!
//! Directives are found with the crate's lexer, so a commented-out `#include`
//! does not count; conditionals are not evaluated, so an include under
//! `#if 0` is still resolved and digested (more inputs than needed never
//! serve a wrong binary, they only share less).
//!
//! # What is refused
//!
//! A computed include (`#include KERNEL_H`, `__has_include(NAME)`): what it
//! names is only known after macro expansion. An include that resolves
//! nowhere in the search path and is certainly read: outside any `#if` group,
//! in a text that is itself read unconditionally (the compile would fail).
//! Under a conditional the absence is digested instead, so the
//! `#if __has_include("x.h")` idiom works and the file appearing later
//! changes the key; a header's include guard makes its whole body
//! conditional, so a header's missing include is left to the compiler's own
//! error. A nesting deeper than GCC's own limit.
//!
//! # The search path
//!
//! Mirrors GCC's: a quoted name is looked up in the including file's
//! directory (none for the translation unit, which kcache writes in a private
//! directory), then the `-iquote` directories (the source directory first:
//! the backend passes it as `-iquote`), then the bracket chain; a bracketed
//! name in the bracket chain only: `-I`, `-isystem`, the compiler's own
//! directories (unless `-nostdinc`), `-idirafter`. `#include_next` continues
//! after the directory the current file was found in. `-include` and
//! `-imacros` files are looked up in the directory the compiler runs in (the
//! source directory) first, then in the quoted chain.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use super::options::{against, Flags, Forced};
use crate::canon::lexer::{lex, spelling, TokenKind};
use crate::key::{Digest, PartsHasher};

/// GCC's default limit on `#include` nesting.
const MAX_DEPTH: usize = 200;

/// Why the files a compile reads could not be digested.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// A reference kcache cannot see through.
    Refused {
        /// The directive or option, as written.
        input: String,
        /// Where it is, and why it is refused.
        reason: String,
    },
    /// A file that resolved could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// What a directive refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// `#include` or `#import`.
    Include,
    /// `#include_next`.
    IncludeNext,
    /// `#embed`.
    Embed,
    /// `__has_include(...)`.
    HasInclude,
    /// `__has_include_next(...)`.
    HasIncludeNext,
    /// `__has_embed(...)`.
    HasEmbed,
}

impl RefKind {
    fn tag(self) -> &'static str {
        match self {
            RefKind::Include => "include",
            RefKind::IncludeNext => "include_next",
            RefKind::Embed => "embed",
            RefKind::HasInclude => "has_include",
            RefKind::HasIncludeNext => "has_include_next",
            RefKind::HasEmbed => "has_embed",
        }
    }

    fn is_next(self) -> bool {
        matches!(self, RefKind::IncludeNext | RefKind::HasIncludeNext)
    }

    fn is_query(self) -> bool {
        matches!(
            self,
            RefKind::HasInclude | RefKind::HasIncludeNext | RefKind::HasEmbed
        )
    }
}

/// One file a directive names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    /// What kind of reference.
    pub kind: RefKind,
    /// The name between the quotes or brackets, as written.
    pub name: Vec<u8>,
    /// `<name>` rather than `"name"`.
    pub angled: bool,
}

/// Removes line splices (backslash-newline), as translation phase 2 does.
fn unsplice(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !text.contains(&b'\\') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\\' {
            match (text.get(i + 1), text.get(i + 2)) {
                (Some(b'\n'), _) => {
                    i += 2;
                    continue;
                }
                (Some(b'\r'), Some(b'\n')) => {
                    i += 3;
                    continue;
                }
                _ => {}
            }
        }
        out.push(text[i]);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// Reads a header name (`"x.h"` or `<x.h>`) at token `at` of `toks`, over
/// `body`; `None` when the token starts no header name.
fn header_name(
    body: &[u8],
    toks: &[crate::canon::lexer::Token],
    at: usize,
) -> Option<(Vec<u8>, bool)> {
    let t = toks.get(at)?;
    match (t.kind, body[t.span.start]) {
        (TokenKind::Str, b'"') => Some((body[t.span.start + 1..t.span.end - 1].to_vec(), false)),
        (TokenKind::Punct, b'<') => {
            let rest = &body[t.span.start + 1..];
            let close = rest.iter().position(|&b| b == b'>')?;
            Some((rest[..close].to_vec(), true))
        }
        _ => None,
    }
}

/// A preprocessor line, as far as the scanner cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Directive {
    /// The directive's name (`include`, `if`, `define`; empty for the null
    /// directive or a line marker).
    pub name: Vec<u8>,
    /// The files it refers to.
    pub refs: Vec<Reference>,
}

impl Directive {
    /// How the directive changes the conditional nesting depth.
    fn nesting(&self) -> isize {
        match &self.name[..] {
            b"if" | b"ifdef" | b"ifndef" => 1,
            b"endif" => -1,
            _ => 0,
        }
    }
}

/// Parses a preprocessor line (a [`TokenKind::Preprocessor`] token, `#`
/// included): its name and the files it refers to, or why kcache cannot tell.
pub(crate) fn parse_directive(directive: &[u8]) -> Result<Directive, String> {
    let text = unsplice(directive);
    let Some(body) = text.strip_prefix(b"#") else {
        return Ok(Directive::default());
    };
    let toks: Vec<_> = lex(body)
        .into_iter()
        .filter(|t| t.kind != TokenKind::Whitespace && !t.kind.is_comment())
        .collect();
    let ident = |i: usize| -> Option<std::borrow::Cow<'_, [u8]>> {
        toks.get(i)
            .filter(|t| t.kind == TokenKind::Ident)
            .map(|t| spelling(&body[t.span.clone()]))
    };
    let Some(name) = ident(0) else {
        // The null directive, or a line marker (`# 12 "file"`).
        return Ok(Directive::default());
    };
    let kind = match &*name {
        b"include" | b"import" => Some(RefKind::Include),
        b"include_next" => Some(RefKind::IncludeNext),
        b"embed" => Some(RefKind::Embed),
        _ => None,
    };
    let name = name.into_owned();
    if let Some(kind) = kind {
        let directive = String::from_utf8_lossy(&name).into_owned();
        return match header_name(body, &toks, 1) {
            Some((file, angled)) => Ok(Directive {
                name,
                refs: vec![Reference {
                    kind,
                    name: file,
                    angled,
                }],
            }),
            None if toks.len() < 2 => Err(format!("#{directive} names no file")),
            None if toks[1].kind != TokenKind::Ident => {
                Err(format!("#{directive} names no file kcache can read"))
            }
            None => Err(format!(
                "computed #{directive}: which file it names is only known after macro expansion"
            )),
        };
    }
    let mut refs = Vec::new();
    for i in 1..toks.len() {
        let kind = match ident(i).as_deref() {
            Some(b"__has_include") => RefKind::HasInclude,
            Some(b"__has_include_next") => RefKind::HasIncludeNext,
            Some(b"__has_embed") => RefKind::HasEmbed,
            _ => continue,
        };
        // `defined(__has_include)` or `#ifdef __has_include` only asks whether
        // the feature exists.
        let opens = toks
            .get(i + 1)
            .is_some_and(|t| &body[t.span.clone()] == b"(");
        if !opens {
            continue;
        }
        match header_name(body, &toks, i + 2) {
            Some((name, angled)) => refs.push(Reference { kind, name, angled }),
            None => {
                return Err(format!(
                    "computed __{}: which file it names is only known after macro expansion",
                    kind.tag()
                ))
            }
        }
    }
    Ok(Directive { name, refs })
}

#[cfg(unix)]
fn path_from_bytes(name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(name))
}

#[cfg(not(unix))]
fn path_from_bytes(name: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(name).into_owned())
}

fn path_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_encoded_bytes()
}

fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// One directory of the search chain.
#[derive(Clone, Debug)]
struct Dir {
    path: PathBuf,
    /// One of the compiler's own directories: covered by the identity.
    compiler: bool,
}

/// Where the compiler looks for the files a compile reads.
#[derive(Clone, Debug)]
pub(crate) struct Search {
    /// Quoted chain: `-iquote` dirs, then the bracket chain from `bracket`.
    chain: Vec<Dir>,
    bracket: usize,
    /// The directory the compiler runs in.
    cwd: PathBuf,
}

impl Search {
    /// The search path `flags` set up, for a compiler running in `cwd` whose
    /// own include directories are `compiler_dirs`.
    pub(crate) fn new(flags: &Flags, cwd: &Path, compiler_dirs: &[PathBuf]) -> Search {
        let user = |dirs: &[PathBuf]| {
            dirs.iter()
                .map(|p| Dir {
                    path: p.clone(),
                    compiler: false,
                })
                .collect::<Vec<_>>()
        };
        let mut chain = user(&flags.quote);
        let bracket = chain.len();
        chain.extend(user(&flags.bracket));
        chain.extend(user(&flags.system));
        if !flags.nostdinc {
            chain.extend(compiler_dirs.iter().map(|p| Dir {
                path: p.clone(),
                compiler: true,
            }));
        }
        chain.extend(user(&flags.after));
        Search {
            chain,
            bracket,
            cwd: cwd.to_path_buf(),
        }
    }
}

/// Where a text being scanned came from.
#[derive(Clone, Debug)]
struct Origin {
    /// The directory quoted names are looked up in first (none for the
    /// translation unit's own texts).
    dir: Option<PathBuf>,
    /// The chain position the file was found at (for `#include_next`).
    pos: Option<usize>,
    /// For messages: `kernel `k``, `the prelude`, or the file's path.
    label: String,
}

/// A reference resolved to a file.
struct Found {
    path: PathBuf,
    pos: Option<usize>,
    compiler: bool,
}

struct Scanner<'a> {
    search: &'a Search,
    out: Vec<Digest>,
    /// Files already digested, by canonical path; `true` for embedded data.
    seen: HashSet<(bool, PathBuf)>,
}

fn record(tag: &str, kind: RefKind, path: &Path, contents: Option<&[u8]>) -> Digest {
    let mut h = PartsHasher::new();
    h.part("kcache-cc")
        .part(tag)
        .part(kind.tag())
        .part(path_bytes(path));
    if let Some(c) = contents {
        h.part(c);
    }
    h.finish()
}

impl Scanner<'_> {
    fn resolve(&self, r: &Reference, from: &Origin) -> Option<Found> {
        let name = path_from_bytes(&r.name);
        if name.is_absolute() {
            return is_file(&name).then_some(Found {
                path: name,
                pos: None,
                compiler: false,
            });
        }
        let after = if r.kind.is_next() {
            from.pos.map(|p| p + 1)
        } else {
            None
        };
        if !r.angled && after.is_none() {
            if let Some(dir) = &from.dir {
                let path = dir.join(&name);
                if is_file(&path) {
                    return Some(Found {
                        path,
                        pos: None,
                        compiler: false,
                    });
                }
            }
        }
        let start = after.unwrap_or(if r.angled { self.search.bracket } else { 0 });
        self.search
            .chain
            .iter()
            .enumerate()
            .skip(start)
            .find_map(|(i, d)| {
                let path = d.path.join(&name);
                is_file(&path).then_some(Found {
                    path,
                    pos: Some(i),
                    compiler: d.compiler,
                })
            })
    }

    fn read(path: &Path) -> Result<Vec<u8>, ScanError> {
        std::fs::read(path).map_err(|source| ScanError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Whether `path` is digested for the first time.
    fn first_visit(&mut self, data: bool, path: &Path) -> bool {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.seen.insert((data, canonical))
    }

    /// Digests what `text`'s directives refer to; `guarded` when the text
    /// itself is only read under a conditional.
    fn scan(
        &mut self,
        text: &[u8],
        from: &Origin,
        depth: usize,
        guarded: bool,
    ) -> Result<(), ScanError> {
        // Most kernels have no directive at all: skip the lexer.
        if !text.contains(&b'#') {
            return Ok(());
        }
        // How deep in `#if` groups the directive is: a file that cannot be
        // found is only certainly wanted outside them.
        let mut conditional = 0usize;
        for tok in lex(text) {
            if tok.kind != TokenKind::Preprocessor {
                continue;
            }
            let directive = &text[tok.span];
            let shown = || {
                let s = String::from_utf8_lossy(directive);
                let s = s.trim();
                match s.char_indices().nth(200) {
                    Some((cut, _)) => format!("{}...", &s[..cut]),
                    None => s.to_string(),
                }
            };
            let d = parse_directive(directive).map_err(|why| ScanError::Refused {
                input: shown(),
                reason: format!("in {}: {why}", from.label),
            })?;
            conditional = conditional.saturating_add_signed(d.nesting());
            for r in &d.refs {
                self.reference(r, from, depth, guarded || conditional > 0)
                    .map_err(|e| match e {
                        ScanError::Refused { input, reason } if input.is_empty() => {
                            ScanError::Refused {
                                input: shown(),
                                reason: format!("in {}: {reason}", from.label),
                            }
                        }
                        e => e,
                    })?;
            }
        }
        Ok(())
    }

    /// Digests what `r` refers to; a refusal with an empty `input` is
    /// completed by the caller with the directive.
    ///
    /// A file found nowhere is refused when the reference is certainly
    /// followed (outside any `#if` group: the compile would fail anyway, and
    /// the refusal says so early). Under a conditional, or for a
    /// `__has_include` query, its absence is digested instead: the compile
    /// either does not read it or fails, and the file appearing later changes
    /// the key (the `#if __has_include("x.h")` idiom).
    fn reference(
        &mut self,
        r: &Reference,
        from: &Origin,
        depth: usize,
        conditional: bool,
    ) -> Result<(), ScanError> {
        let Some(found) = self.resolve(r, from) else {
            if r.kind.is_query() || conditional {
                let mut h = PartsHasher::new();
                h.part("kcache-cc")
                    .part("absent")
                    .part(r.kind.tag())
                    .part([r.angled as u8])
                    .part(&r.name);
                self.out.push(h.finish());
                return Ok(());
            }
            return Err(ScanError::Refused {
                input: String::new(),
                reason: "kcache cannot find this file in the include search path \
                         (the source directory, -iquote, -I, -isystem, the compiler's \
                         directories, -idirafter)"
                    .into(),
            });
        };
        match r.kind {
            RefKind::HasInclude | RefKind::HasIncludeNext => {
                self.out.push(record("found", r.kind, &found.path, None));
            }
            RefKind::Embed | RefKind::HasEmbed => {
                // Embedded bytes go into the program whoever provides them.
                if self.first_visit(true, &found.path) {
                    let data = Self::read(&found.path)?;
                    self.out
                        .push(record("data", r.kind, &found.path, Some(&data)));
                }
            }
            RefKind::Include | RefKind::IncludeNext => {
                if found.compiler {
                    if self.first_visit(false, &found.path) {
                        self.out.push(record("compiler", r.kind, &found.path, None));
                    }
                } else {
                    self.header(r.kind, found, depth, conditional)?;
                }
            }
        }
        Ok(())
    }

    /// Digests a header outside the compiler's directories and follows its
    /// references.
    fn header(
        &mut self,
        kind: RefKind,
        found: Found,
        depth: usize,
        guarded: bool,
    ) -> Result<(), ScanError> {
        if !self.first_visit(false, &found.path) {
            return Ok(());
        }
        if depth >= MAX_DEPTH {
            return Err(ScanError::Refused {
                input: String::new(),
                reason: format!("#include nested more than {MAX_DEPTH} deep"),
            });
        }
        let text = Self::read(&found.path)?;
        self.out
            .push(record("header", kind, &found.path, Some(&text)));
        let origin = Origin {
            dir: found.path.parent().map(Path::to_path_buf),
            pos: found.pos,
            label: found.path.display().to_string(),
        };
        self.scan(&text, &origin, depth + 1, guarded)
    }

    fn forced(&mut self, f: &Forced) -> Result<(), ScanError> {
        let refuse = |reason: String| ScanError::Refused {
            input: format!("{} {}", f.option, f.name),
            reason,
        };
        let name = Path::new(&f.name);
        let first = against(&self.search.cwd, &f.name);
        let found = if is_file(&first) {
            Some(Found {
                path: first,
                pos: None,
                compiler: false,
            })
        } else if name.is_absolute() {
            None
        } else {
            let r = Reference {
                kind: RefKind::Include,
                name: f.name.clone().into_bytes(),
                angled: false,
            };
            let tu = Origin {
                dir: None,
                pos: None,
                label: String::new(),
            };
            self.resolve(&r, &tu)
        };
        let Some(found) = found else {
            return Err(refuse(
                "reads a file kcache cannot find in the source directory or the \
                 quoted include search path"
                    .into(),
            ));
        };
        // Forced files are the user's, wherever they were found.
        let found = Found {
            compiler: false,
            ..found
        };
        self.header(RefKind::Include, found, 0, false)
            .map_err(|e| match e {
                ScanError::Refused { input, reason } if input.is_empty() => refuse(reason),
                e => e,
            })
    }
}

/// Digests of every file the compile of `texts` (labelled, in translation-unit
/// order) reads under `flags`, in a deterministic order: the `-imacros` and
/// `-include` files first, then each text's references, depth first.
/// [`extras`] for a compiler that searches only `dirs` (its `-I` options)
/// and the directory it runs in, and has headers of its own that no
/// directory holds (NVRTC's, a GPU driver's): a header found nowhere is
/// digested as absent rather than refused, since it is either one of those,
/// covered by the compiler's identity, or a compile that fails; and should a
/// file of that name appear in a searched directory, the key changes.
pub(crate) fn extras_in_dirs(
    dirs: &[PathBuf],
    cwd: &Path,
    texts: &[(&str, &[u8])],
) -> Result<Vec<Digest>, ScanError> {
    let flags = Flags {
        bracket: dirs.to_vec(),
        nostdinc: true,
        ..Flags::default()
    };
    let search = Search::new(&flags, cwd, &[]);
    let mut s = Scanner {
        search: &search,
        out: Vec::new(),
        seen: HashSet::new(),
    };
    for (label, text) in texts {
        let origin = Origin {
            dir: None,
            pos: None,
            label: (*label).to_string(),
        };
        s.scan(text, &origin, 0, true)?;
    }
    Ok(s.out)
}

pub(crate) fn extras(
    search: &Search,
    flags: &Flags,
    texts: &[(&str, &[u8])],
) -> Result<Vec<Digest>, ScanError> {
    let mut s = Scanner {
        search,
        out: Vec::new(),
        seen: HashSet::new(),
    };
    for f in &flags.forced {
        s.forced(f)?;
    }
    for (label, text) in texts {
        let origin = Origin {
            dir: None,
            pos: None,
            label: (*label).to_string(),
        };
        s.scan(text, &origin, 0, false)?;
    }
    Ok(s.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(line: &str) -> Result<Vec<(RefKind, String, bool)>, String> {
        parse_directive(line.as_bytes()).map(|d| {
            d.refs
                .into_iter()
                .map(|r| (r.kind, String::from_utf8(r.name).unwrap(), r.angled))
                .collect()
        })
    }

    #[test]
    fn include_forms() {
        use RefKind::*;
        assert_eq!(
            refs("#include \"a.h\""),
            Ok(vec![(Include, "a.h".into(), false)])
        );
        assert_eq!(
            refs("#  include <sys/x.h>"),
            Ok(vec![(Include, "sys/x.h".into(), true)])
        );
        assert_eq!(
            refs("# /* c */ include /* d */ \"b.h\" // trailing"),
            Ok(vec![(Include, "b.h".into(), false)])
        );
        assert_eq!(
            refs("#inc\\\nlude \"s.h\""),
            Ok(vec![(Include, "s.h".into(), false)])
        );
        assert_eq!(
            refs("#include_next <n.h>"),
            Ok(vec![(IncludeNext, "n.h".into(), true)])
        );
        assert_eq!(
            refs("#import \"i.h\""),
            Ok(vec![(Include, "i.h".into(), false)])
        );
        assert_eq!(
            refs("#embed \"d.bin\" limit(4)"),
            Ok(vec![(Embed, "d.bin".into(), false)])
        );
    }

    #[test]
    fn other_directives_refer_to_nothing() {
        for line in [
            "#define X 1",
            "#pragma once",
            "#",
            "# 12 \"f.c\"",
            "#if A > B",
        ] {
            assert_eq!(refs(line), Ok(vec![]), "{line}");
        }
    }

    #[test]
    fn computed_includes_are_refused() {
        assert!(refs("#include KERNEL_H").unwrap_err().contains("computed"));
        assert!(refs("#include").unwrap_err().contains("names no file"));
        assert!(refs("#include \"unterminated.h")
            .unwrap_err()
            .contains("no file kcache can read"));
        assert!(refs("#if __has_include(NAME)")
            .unwrap_err()
            .contains("computed"));
    }

    #[test]
    fn has_include_queries() {
        use RefKind::*;
        assert_eq!(
            refs("#if __has_include(\"a.h\") && __has_include_next(<b.h>)"),
            Ok(vec![
                (HasInclude, "a.h".into(), false),
                (HasIncludeNext, "b.h".into(), true)
            ])
        );
        assert_eq!(refs("#ifdef __has_include"), Ok(vec![]));
        assert_eq!(refs("#if defined(__has_include)"), Ok(vec![]));
        assert_eq!(
            refs("#define HAS_A __has_include(\"a.h\")"),
            Ok(vec![(HasInclude, "a.h".into(), false)])
        );
    }

    #[test]
    fn conditionals_nest() {
        let depth = |line: &str| parse_directive(line.as_bytes()).unwrap().nesting();
        assert_eq!(depth("#if X"), 1);
        assert_eq!(depth("# ifdef X"), 1);
        assert_eq!(depth("#ifndef X"), 1);
        assert_eq!(depth("#elif Y"), 0);
        assert_eq!(depth("#else"), 0);
        assert_eq!(depth("#endif /* X */"), -1);
        assert_eq!(depth("#include \"a.h\""), 0);
    }

    #[test]
    fn unsplice_handles_crlf() {
        assert_eq!(&*unsplice(b"a\\\r\nb\\\nc\\d"), b"abc\\d");
    }
}
