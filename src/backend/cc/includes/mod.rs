//! The files a compile reads besides its kernels: `#include`, `#embed` and
//! `__has_include` references, resolved the way the compiler resolves them,
//! recursively, and digested by contents in a deterministic order.
//!
//! # What is digested
//!
//! * every header a reference reaches, wherever it was found (the user's
//!   directories, `/usr/local/include`, the compiler's own directories: a
//!   system header edited in place changes the key): its path as resolved
//!   (the directory it was found in joined with the name as written, which is
//!   what the compiler reports and what `__FILE__` says) and its contents; its
//!   own references are followed in turn, `#include_next` chains included. A
//!   file is digested once, at its first reference, so cycles end and the
//!   order (depth first, in directive order) is deterministic;
//! * `#embed` data: path and contents;
//! * `__has_include(...)` (and `_next`, `__has_embed`): the name, and where it
//!   resolved or that it did not, since the answer changes the preprocessed
//!   text.
//!
//! Directives are found with the crate's lexer, so a commented-out `#include`
//! does not count; conditionals are not evaluated, so an include under
//! `#if 0` is still resolved and digested (more inputs than needed never
//! serve a wrong binary, they only share less). Every `#define` and `#undef`
//! of every file read is collected, with the identifiers of its body, for the
//! macro names a key must never rename; a file that spells `__TIME__`,
//! `__DATE__` or `__TIMESTAMP__`, or the assembler directives `.incbin` or
//! `.include` (a macro may hand them to an `asm`), makes the result
//! uncacheable.
//!
//! # What is refused, and what is uncacheable
//!
//! In the user's texts and headers: a computed include (`#include KERNEL_H`,
//! `__has_include(NAME)`): what it names is only known after macro expansion.
//! An include that resolves nowhere in the search path and is certainly read:
//! outside any `#if` group, in a text that is itself read unconditionally (the
//! compile would fail). Under a conditional the absence is digested instead,
//! so the `#if __has_include("x.h")` idiom works and the file appearing later
//! changes the key. A nesting deeper than GCC's own limit. Any candidate
//! path that is no regular file or directory (a FIFO, a device), or that
//! lies under `/proc`, `/dev` or `/sys` as spelled or through a symbolic
//! link's targets: the compiler's process reads another file there than
//! kcache's (`/proc/self/cwd`). A symbolic link to such a directory standing
//! as a directory of the path is not seen.
//!
//! In a header of the compiler's own directories the same findings do not
//! refuse the kernel (the user cannot change them): the scan marks the result
//! [`Closure::uncacheable`], so it is compiled every time and never stored.
//! (The compile's own `-MD` report, checked after every compile, is the
//! second line of defence: a file it names that no key covered also makes the
//! compile uncacheable.)
//!
//! # Staying fast
//!
//! The closure of a text's references is memoized per process by the search
//! path and the references, and re-validated by stat (see `memo.rs`): every
//! file read and every directory a lookup missed in keep the identity they
//! had, or the closure is computed again.
//!
//! # The search path
//!
//! Mirrors GCC's: a quoted name is looked up in the including file's
//! directory (for the translation unit, which the cc backend hands the
//! compiler on stdin: its working directory, the source directory, which
//! is `-iquote`'s first; GPU drivers search their working directory), then the `-iquote` directories (the source directory
//! first: the backend passes it as `-iquote`), then the bracket chain; a
//! bracketed name in the bracket chain only: `-I`, `-isystem`, the compiler's
//! own directories (unless `-nostdinc`), `-idirafter`. `#include_next`
//! continues after the directory the current file was found in. `-include`
//! and `-imacros` files are looked up in the directory the compiler runs in
//! (the source directory) first, then in the quoted chain.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use super::options::{against, Flags, Forced};
use crate::canon::lexer::{lex, TokenKind};
use crate::key::{Digest, PartsHasher};

mod directive;
mod kept;
mod lookup;
pub(crate) mod memo;
mod spelled;

pub(crate) use spelled::{assembler_file_read, time_macro};

pub(crate) use directive::{parse_directive, Body, Define, RefKind, Reference};
use lookup::{Found, Lookup};
use memo::Validation;

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
    /// Where the translation unit's own quoted includes look first.
    tu_dir: Option<PathBuf>,
    /// Digest of all of the above: closures are memoized under it.
    id: Digest,
    /// Where closures are kept across processes (see `kept.rs`), if anywhere.
    kept: Option<PathBuf>,
    /// Why no reference may be followed at all, if none may.
    no_references: Option<&'static str>,
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
        let mut s = Search {
            chain,
            bracket,
            cwd: cwd.to_path_buf(),
            tu_dir: None,
            id: Digest([0; 32]),
            kept: None,
            no_references: None,
        };
        s.id = s.digest();
        s
    }

    /// The same search, for a compiler that looks up the translation unit's
    /// quoted includes in `dir` first (a GPU driver in its working
    /// directory).
    pub(crate) fn with_tu_dir(mut self, dir: PathBuf) -> Search {
        self.tu_dir = Some(dir);
        self.id = self.digest();
        self
    }

    /// The same search, its closures kept in `dir` across processes (the
    /// compilers folder): what is kept does not change what is found.
    pub(crate) fn kept_in(mut self, dir: Option<PathBuf>) -> Search {
        self.kept = dir;
        self
    }

    /// The same search, refusing every reference, wherever it stands, with
    /// `reason` (a compiler whose lookup kcache cannot follow).
    pub(crate) fn refusing_references(mut self, reason: &'static str) -> Search {
        self.tu_dir = None;
        self.no_references = Some(reason);
        self.id = self.digest();
        self
    }

    fn digest(&self) -> Digest {
        let mut h = PartsHasher::new();
        h.part("kcache-search")
            .part((self.bracket as u64).to_le_bytes());
        h.part(path_bytes(&self.cwd));
        h.part(self.tu_dir.as_deref().map_or(&b"\0"[..], path_bytes));
        h.part(self.no_references.unwrap_or(""));
        for d in &self.chain {
            h.part([d.compiler as u8]).part(path_bytes(&d.path));
        }
        h.finish()
    }
}

/// Everything the references of a text reach, digested: what a key takes
/// from a text's includes. Memoized per process (see the module docs).
#[derive(Debug)]
pub(crate) struct Closure {
    /// Over every file's path and contents, every absence and every query
    /// answer, in scan order.
    pub digest: Digest,
    /// Every file read, canonical, for the check against the compiler's own
    /// report.
    pub files: Vec<PathBuf>,
    /// Every `#define` and `#undef` of every file read.
    pub defines: Vec<Define>,
    /// Why the result cannot be keyed (a header of the compiler's own
    /// directories kcache cannot follow, or one that uses `__TIME__`).
    pub uncacheable: Option<String>,
    validation: Validation,
}

/// A text scanned: its own macro definitions, and the closure of its
/// references.
#[derive(Debug)]
pub(crate) struct Scanned {
    /// The text's own `#define`s and `#undef`s.
    pub defines: Vec<Define>,
    /// What its references reach.
    pub closure: Arc<Closure>,
}

/// Where a scan starts: a text's reference, or a forced include.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Root {
    Ref { r: Reference, conditional: bool },
    Forced(Forced),
}

type ClosureMemo = Mutex<FxHashMap<Digest, Arc<Closure>>>;

fn closures() -> &'static ClosureMemo {
    static CLOSURES: OnceLock<ClosureMemo> = OnceLock::new();
    CLOSURES.get_or_init(Default::default)
}

/// One directive of a file, parsed, with whether it is inside an `#if`
/// group; or the directive as written and why it cannot be followed.
type Item = Result<(directive::Directive, bool), (String, String)>;

/// The directives of `text`, in order.
fn directives(text: &[u8]) -> Vec<Item> {
    // Most kernels have no directive at all: skip the lexer.
    if !text.contains(&b'#') {
        return Vec::new();
    }
    let mut conditional = 0usize;
    let mut out = Vec::new();
    for tok in lex(text) {
        if tok.kind != TokenKind::Preprocessor {
            continue;
        }
        let line = &text[tok.span];
        match parse_directive(line) {
            Ok(d) => {
                conditional = conditional.saturating_add_signed(d.nesting());
                let inside = conditional > 0;
                out.push(Ok((d, inside)));
            }
            Err(why) => out.push(Err((shown(line), why))),
        }
    }
    out
}

/// A directive for a message: trimmed, at most 200 characters.
fn shown(directive: &[u8]) -> String {
    let s = String::from_utf8_lossy(directive);
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

/// A reference as a directive spells it, for messages.
fn spell(r: &Reference) -> String {
    let n = String::from_utf8_lossy(&r.name);
    let name = if r.angled {
        format!("<{n}>")
    } else {
        format!("\"{n}\"")
    };
    format!("#{} {name}", r.kind.tag())
}

/// Where a text being scanned came from.
#[derive(Clone, Debug)]
struct Origin {
    /// The directory quoted names are looked up in first.
    dir: Option<PathBuf>,
    /// The chain position the file was found at (for `#include_next`).
    pos: Option<usize>,
    /// Found in the compiler's own directories.
    compiler: bool,
    /// For messages: `kernel `k``, `the prelude`, or the file's path.
    label: String,
}

struct Scanner<'a> {
    search: &'a Search,
    h: PartsHasher,
    files: Vec<PathBuf>,
    defines: Vec<Define>,
    uncacheable: Option<String>,
    /// Files already digested, by canonical path; `true` for embedded data.
    seen: HashSet<(bool, PathBuf)>,
    lookup: Lookup,
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
    fn push(&mut self, d: Digest) {
        self.h.part(d.as_bytes());
    }

    fn probe(&mut self, path: &Path) -> bool {
        self.lookup.probe(path)
    }

    fn resolve(&mut self, r: &Reference, from: &Origin) -> Option<Found> {
        let (search, dir) = (self.search, from.dir.as_deref());
        self.lookup.resolve(search, r, dir, from.pos, from.compiler)
    }

    fn read(&mut self, path: &Path) -> Result<Arc<memo::FileInfo>, ScanError> {
        let (info, id) = memo::read(path).map_err(|source| ScanError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.lookup.watch(path, Some(id));
        Ok(info)
    }

    /// Whether `path` is digested for the first time.
    fn first_visit(&mut self, data: bool, path: &Path) -> bool {
        let canonical = self.lookup.canonical(path);
        let first = self.seen.insert((data, canonical.clone()));
        if first {
            self.files.push(canonical);
        }
        first
    }

    /// A finding that refuses a user's text, or makes a compiler header's
    /// closure uncacheable.
    fn problem(&mut self, from: &Origin, e: ScanError) -> Result<(), ScanError> {
        match e {
            ScanError::Refused { input, reason } if from.compiler => {
                if self.uncacheable.is_none() {
                    self.uncacheable = Some(format!("{input}: {reason}"));
                }
                Ok(())
            }
            e => Err(e),
        }
    }

    /// Digests what `items` (a text's directives) refer to; `guarded` when
    /// the text itself is only read under a conditional.
    fn scan(
        &mut self,
        items: &[Item],
        from: &Origin,
        depth: usize,
        guarded: bool,
    ) -> Result<(), ScanError> {
        for item in items {
            let (d, inside) = match item {
                Ok(x) => x,
                Err((input, why)) => {
                    let e = ScanError::Refused {
                        input: input.clone(),
                        reason: format!("in {}: {why}", from.label),
                    };
                    self.problem(from, e)?;
                    continue;
                }
            };
            if let Some(def) = &d.define {
                self.defines.push(def.clone());
            }
            for r in &d.refs {
                if let Err(e) = self.reference(r, from, depth, guarded || *inside) {
                    let e = match e {
                        ScanError::Refused { input, reason } if input.is_empty() => {
                            ScanError::Refused {
                                input: spell(r),
                                reason: format!("in {}: {reason}", from.label),
                            }
                        }
                        e => e,
                    };
                    self.problem(from, e)?;
                }
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
        if let Some(reason) = self.search.no_references {
            return Err(ScanError::Refused {
                input: String::new(),
                reason: reason.into(),
            });
        }
        let found = self.resolve(r, from);
        if let Some(odd) = self.lookup.irregular.take() {
            return Err(ScanError::Refused {
                input: String::new(),
                reason: odd.to_string(),
            });
        }
        let Some(found) = found else {
            let mut h = PartsHasher::new();
            h.part("kcache-cc")
                .part("absent")
                .part(r.kind.tag())
                .part([r.angled as u8])
                .part(&r.name);
            self.push(h.finish());
            if r.kind.is_query() || conditional {
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
                self.push(record("found", r.kind, &found.path, None));
            }
            RefKind::Embed | RefKind::HasEmbed => {
                // Embedded bytes go into the program whoever provides them.
                if self.first_visit(true, &found.path) {
                    let info = self.read(&found.path)?;
                    self.push(record("data", r.kind, &found.path, Some(&info.contents)));
                }
            }
            RefKind::Include | RefKind::IncludeNext => {
                self.header(r.kind, found, depth, conditional)?;
            }
        }
        Ok(())
    }

    /// Digests a header and follows its references.
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
        let info = self.read(&found.path)?;
        self.push(record("header", kind, &found.path, Some(&info.contents)));
        if self.uncacheable.is_none() {
            if let Some(m) = time_macro(&info.contents) {
                self.uncacheable = Some(format!(
                    "{} uses {m}, which changes with every compile",
                    found.path.display()
                ));
            } else if let Some(d) = assembler_file_read(&info.contents) {
                self.uncacheable = Some(format!(
                    "{} spells the assembler directive {d}, which reads a file neither the key nor -MD sees",
                    found.path.display()
                ));
            }
        }
        let origin = Origin {
            dir: found.path.parent().map(Path::to_path_buf),
            pos: found.pos,
            compiler: found.compiler,
            label: found.path.display().to_string(),
        };
        let items = info.directives();
        self.scan(items, &origin, depth + 1, guarded)
    }

    fn forced(&mut self, f: &Forced) -> Result<(), ScanError> {
        let refuse = |reason: String| ScanError::Refused {
            input: format!("{} {}", f.option, f.name),
            reason,
        };
        let name = Path::new(&f.name);
        let first = against(&self.search.cwd, &f.name);
        let found = if self.probe(&first) {
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
            self.resolve(&r, &Origin::tu(None, ""))
        };
        if let Some(odd) = self.lookup.irregular.take() {
            return Err(refuse(odd.to_string()));
        }
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

impl Origin {
    fn tu(dir: Option<PathBuf>, label: &str) -> Origin {
        Origin {
            dir,
            pos: None,
            compiler: false,
            label: label.to_string(),
        }
    }
}

/// The closure of `roots` under `search`, from the memo when it still holds.
fn closure(search: &Search, roots: &[Root], guarded: bool) -> Result<Arc<Closure>, ScanError> {
    let mut h = PartsHasher::new();
    h.part("kcache-closure")
        .part(search.id.as_bytes())
        .part([guarded as u8]);
    for root in roots {
        match root {
            Root::Ref { r, conditional } => h
                .part([0, r.kind as u8, r.angled as u8, *conditional as u8])
                .part(&r.name),
            Root::Forced(f) => h.part([1]).part(f.option).part(&f.name),
        };
    }
    let key = h.finish();
    if let Some(c) = closures()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned()
    {
        if c.validation.holds() {
            return Ok(c);
        }
    }
    let clock = memo::now();
    // No roots, nothing to read: cheaper scanned than loaded.
    let kept_in = search.kept.as_deref().filter(|_| !roots.is_empty());
    let kept = kept_in.and_then(|dir| kept::load(dir, &key, clock));
    if let Some(c) = kept {
        let c = Arc::new(c);
        closures()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Arc::clone(&c));
        return Ok(c);
    }
    let mut s = Scanner {
        search,
        h: PartsHasher::new(),
        files: Vec::new(),
        defines: Vec::new(),
        uncacheable: None,
        seen: HashSet::new(),
        lookup: Lookup::default(),
    };
    s.h.part("kcache-cc-closure");
    let tu = Origin::tu(search.tu_dir.clone(), "");
    for root in roots {
        match root {
            Root::Forced(f) => s.forced(f)?,
            Root::Ref { r, conditional } => {
                s.reference(r, &tu, 0, guarded || *conditional)
                    .map_err(|e| match e {
                        ScanError::Refused { input, reason } if input.is_empty() => {
                            ScanError::Refused {
                                input: spell(r),
                                reason,
                            }
                        }
                        e => e,
                    })?;
            }
        }
    }
    let c = Arc::new(Closure {
        digest: s.h.finish(),
        files: s.files,
        defines: s.defines,
        uncacheable: s.uncacheable,
        validation: Validation::new(s.lookup.watch, clock),
    });
    if let Some(dir) = kept_in {
        kept::save(dir, &key, &c);
    }
    closures()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, Arc::clone(&c));
    Ok(c)
}

/// Scans a text of the translation unit (a kernel, the prelude), labelled
/// `label` in messages; `guarded` when an absent file should be digested as
/// absent rather than refused (a compiler with headers of its own that no
/// directory holds).
pub(crate) fn scan_text(
    search: &Search,
    label: &str,
    text: &[u8],
    guarded: bool,
) -> Result<Scanned, ScanError> {
    let mut defines = Vec::new();
    let mut roots = Vec::new();
    for item in directives(text) {
        let (d, inside) = item.map_err(|(input, why)| ScanError::Refused {
            input,
            reason: format!("in {label}: {why}"),
        })?;
        defines.extend(d.define);
        roots.extend(d.refs.into_iter().map(|r| Root::Ref {
            r,
            conditional: inside,
        }));
    }
    let closure = closure(search, &roots, guarded).map_err(|e| match e {
        ScanError::Refused { input, reason } if !reason.starts_with("in ") => ScanError::Refused {
            input,
            reason: format!("in {label}: {reason}"),
        },
        e => e,
    })?;
    Ok(Scanned { defines, closure })
}

/// The closure of the `-imacros` and `-include` files `flags` name, in the
/// order the compiler reads them.
pub(crate) fn scan_forced(search: &Search, flags: &Flags) -> Result<Arc<Closure>, ScanError> {
    let roots: Vec<Root> = flags.forced.iter().cloned().map(Root::Forced).collect();
    closure(search, &roots, false)
}

/// The search of a compiler that searches only `dirs` (its `-I` options)
/// and, for the translation unit's quoted includes, `cwd` first, and has
/// headers of its own that no directory holds (NVRTC's, a GPU driver's): scan
/// with `guarded` set, so a header found nowhere is digested as absent rather
/// than refused, since it is either one of those, covered by the compiler's
/// identity, or a compile that fails; and should a file of that name appear
/// in a searched directory, the key changes.
pub(crate) fn search_in_dirs(dirs: &[PathBuf], cwd: &Path) -> Search {
    let flags = Flags {
        bracket: dirs.to_vec(),
        nostdinc: true,
        ..Flags::default()
    };
    Search::new(&flags, cwd, &[]).with_tu_dir(cwd.to_path_buf())
}

impl Closure {
    /// Whether nothing the closure was computed from changed.
    pub(crate) fn holds(&self) -> bool {
        self.validation.holds()
    }

    /// Whether every file it read is as it was, by stats taken now (see
    /// [`Validation::files_hold_now`]).
    pub(crate) fn files_hold_now(&self) -> bool {
        self.validation.files_hold_now()
    }
}

impl Search {
    /// Every directory of the chain, in order.
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.chain.iter().map(|d| d.path.as_path())
    }

    /// The bracket chain's directories, in search order.
    pub(crate) fn bracket_dirs(&self) -> impl Iterator<Item = &Path> {
        self.chain[self.bracket..].iter().map(|d| d.path.as_path())
    }
}
