//! Whether two kernels can share a translation unit: a lexical proof that
//! neither can change what the other compiles to.
//!
//! A backend that compiles a group as one translation unit (cc, OpenCL,
//! CUDA) answers each kernel with the group's program, but keys each on its
//! own text; so the resolver groups two kernels only when [`Isolation`]
//! proves them isolated, and compiles every other kernel alone.
//!
//! # The check
//!
//! A kernel is *groupable* only if, lexed as the compiler lexes it:
//!
//! * the [`super::dialect`] scan finds nothing (no trigraph, raw string,
//!   digit separator or lexical error, which the lexer may read otherwise;
//!   no position or time macro: `__LINE__`, `__COUNTER__` and the like
//!   expand by what precedes them in the unit);
//! * its directives form a *prefix* (before any code) of `#include <...>`
//!   and `#define` lines only: no `#pragma` (`#pragma GCC optimize`,
//!   `OPENCL EXTENSION`: state that lasts to the end of the unit), no
//!   `#undef`, no conditional, no quoted include, no directive after code;
//! * it has no `_Pragma`/`__pragma`, no attribute (`[[...]]`,
//!   `__attribute__`, `__declspec`: `constructor`, `alias`, `weak`), no
//!   `asm` (a top-level `asm` defines symbols, a label renames one), no
//!   `template`, `operator` or `using` (they change overload resolution and
//!   name lookup for names the other kernel does not spell), and no `extern`
//!   inside a function body (a block-scope `extern` declares across the unit);
//! * its brackets balance (digraphs included), its first significant token is
//!   an identifier or keyword, and its last is `;` or the `}` closing a
//!   function body (a depth-0 `{` right after a `)` whose `(` follows a
//!   name): so the kernel is whole declarations, and the next kernel starts
//!   at file scope, as it would alone;
//! * no string literal stands at brace depth 0 but `"C"`/`"C++"` after
//!   `extern`;
//! * it declares no reserved name (`__x`, `_X`) and no name the compiler may
//!   call without the source naming it ([`IMPLICIT_CALLS`]: `memcpy` for a
//!   struct copy, `puts` for a `printf`), which would take over the other
//!   kernel's implicit calls;
//! * it defines no function with external linkage (no `static`) but its
//!   own symbol ([`Isolation::with_symbol`]): the list of implicit callees
//!   cannot be complete across compilers and flags (gcc calls `nearbyintf`
//!   for a narrowed `nearbyint`), and an external definition would answer
//!   them.
//!
//! The names a kernel *may declare* at file scope are its identifiers at brace
//! depth 0 (but those inside the parameter list of a function body), and
//! every identifier inside depth-0 braces that are no function body (struct
//! and union members, enum constants, initializers); keywords excluded, names
//! compared by [`super::lexer::spelling`]. Its *names* are every identifier it
//! spells, in code or directives, and its own symbol
//! ([`Isolation::with_symbol`]), which the resolver looks up in the group's
//! program: a kernel that does not declare its symbol is compiled alone, and
//! one that declares another's symbol is not isolated from it. Two
//! groupable kernels are isolated when
//! their directive prefixes are equal, and the names each may declare are
//! disjoint from the other's names, both ways; and, where one names a
//! backend macro that may paste tokens, no name the other may declare is one
//! a paste may spell ([`Isolation::with_pasting`], [`super::pastes`]).
//!
//! # Why this is sound
//!
//! The group's unit is the backend's prelude, then the kernels in order; the
//! resolver gives the backend each later kernel with its directive prefix
//! blanked to its line ends (the first kernel's is the same, so the unit
//! holds it once, where each kernel alone would). What precedes kernel B in the group that is not in B
//! alone is other kernels' code, which holds no directive, pragma, attribute
//! or asm, and is whole declarations at file scope: it can reach B only by
//! declaring a name that B's code, or a macro B expands (its prefix is
//! shared, and its names are B's names), looks up; helpers, typedefs, tags,
//! enum constants and statics are all file-scope declarations, and
//! implicit declarations are made for names the calling kernel spells. What
//! follows B cannot change how B's code reads: C and C++ look names up
//! backwards, but for a name declared later at file scope, which the check
//! also forbids in both directions. A kernel that declares nothing another
//! spells, and implicitly calls nothing another defines, links to the same
//! definitions as alone. So B in the group compiles to what B alone compiles
//! to, and the group fails only where a member alone fails.
//!
//! Names that options define (`-DN=helper`) are not in the text: the resolver
//! adds the identifiers of the option list to every member's names, and a
//! forced include (`-include`, `-imacros`) makes no kernel groupable.

use super::dialect::{scan, Findings};
use super::lexer::{for_each_token_spliced, spelling, TokenKind};
use super::rename::{is_keyword, is_reserved};
use super::MacroNames;
use rustc_hash::FxHashSet;

/// Functions a compiler may call where the source names none of them (a
/// struct copy, `printf` of a constant string, a `sqrt` for errno, stack
/// protection): a kernel that declares one could take over another kernel's
/// calls.
pub const IMPLICIT_CALLS: &[&str] = &[
    "abort", "bcmp", "bzero", "calloc", "cabs", "cabsf", "cbrt", "ceil", "cos", "cosf", "exit",
    "exp", "exp10", "exp10f", "exp2", "exp2f", "expf", "fabs", "fabsf", "floor", "floorf", "fma",
    "fmaf", "fmax", "fmaxf", "fmin", "fminf", "fprintf", "fputc", "fputs", "free", "fwrite",
    "hypot", "ldexp", "log", "log2", "logf", "malloc", "memchr", "memcmp", "memcpy", "memmove",
    "mempcpy", "memset", "pow", "powf", "printf", "putchar", "puts", "realloc", "round", "roundf",
    "sin", "sincos", "sincosf", "sincosl", "sinf", "snprintf", "sprintf", "sqrt", "sqrtf", "sqrtl",
    "stpcpy", "strcat", "strchr", "strcmp", "strcpy", "strlen", "strncpy", "tan", "tanf", "trunc",
    "truncf",
];

/// What the isolation check knows of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Isolation {
    /// Why the kernel must be compiled alone; `None` when it is groupable.
    pub alone: Option<String>,
    /// The length of its directive prefix (0 when it has none), which the
    /// resolver drops from every kernel but a unit's first.
    pub prefix_len: usize,
    /// The directives of the prefix, in order, for comparison.
    prefix: Vec<Box<[u8]>>,
    /// Names it may declare at file scope.
    declares: FxHashSet<Box<[u8]>>,
    /// The functions it defines without `static`: symbols of the unit that
    /// another kernel's unasked calls would bind to.
    external: Vec<Box<[u8]>>,
    /// Every name it spells (its declarations included).
    names: FxHashSet<Box<[u8]>>,
    /// When it names a macro that may paste: the words of the outside
    /// macros' bodies, which with its names and the keywords are what a
    /// pasted name may start with (see [`Isolation::with_pasting`]).
    pieces: Option<std::sync::Arc<MacroNames>>,
}

impl Isolation {
    /// Checks `text`; `position_macros` are the backend's (see
    /// [`crate::backend::KeyExtras::position_macros`]).
    pub fn of(text: &[u8], position_macros: Option<&MacroNames>) -> Isolation {
        let findings: Findings = scan(text, position_macros);
        let mut walk = Walk::default();
        for_each_token_spliced(text, |kind, span, spliced| {
            if walk.alone.is_none() {
                walk.token(text, kind, span, spliced);
            }
        });
        let finished = walk.finish_reason();
        let alone = findings
            .raw
            .or(findings.uncacheable)
            .or(walk.alone.take())
            .or(finished);
        Isolation {
            alone,
            prefix_len: walk.prefix_len,
            prefix: walk.prefix,
            declares: walk.declares,
            external: walk.external,
            names: walk.names,
            pieces: None,
        }
    }

    /// Takes `pasting` (the backend's macros that may paste) and `reached`
    /// (the words of the outside macros' bodies) into account: when the
    /// kernel names such a macro, a paste may spell a name no token of it
    /// shows (`CAT(q, 1)` is `q1`), and a kernel declaring a name a paste
    /// may spell is not isolated from it (see [`super::pastes`]).
    pub fn with_pasting(
        mut self,
        pasting: &MacroNames,
        reached: &std::sync::Arc<MacroNames>,
    ) -> Isolation {
        if !pasting.is_empty() && self.names.iter().any(|n| pasting.contains(n)) {
            self.pieces = Some(std::sync::Arc::clone(reached));
        }
        self
    }

    /// Whether a paste in a macro this kernel names may spell one of
    /// `declares`.
    fn may_paste_one_of(&self, declares: &FxHashSet<Box<[u8]>>) -> bool {
        let Some(reached) = &self.pieces else {
            return false;
        };
        let piece = |p: &[u8]| self.names.contains(p) || reached.contains(p) || is_keyword(p);
        declares
            .iter()
            .any(|d| super::pastes::may_be_pasted(d, piece))
    }

    /// Counts the kernel's own symbol (the entry point the resolver looks
    /// up in the group's program) among its names, so a kernel declaring it
    /// is not isolated from this one; a kernel that does not declare its
    /// symbol is compiled alone (alone, its lookup fails; in a group,
    /// another kernel could supply it).
    pub fn with_symbol(mut self, symbol: &[u8]) -> Isolation {
        if !self.declares.contains(symbol) {
            self.alone.get_or_insert_with(|| {
                format!(
                    "it does not declare its own symbol `{}`",
                    String::from_utf8_lossy(symbol)
                )
            });
        }
        // A compiler calls functions the source does not name (gcc narrows
        // `(float)nearbyint((double)f)` to `nearbyintf`), and no list of them
        // is complete (review 2026-12-02, C F17): a kernel defining an
        // external function other than its symbol could answer another
        // kernel's unasked call, so it is compiled alone.
        if let Some(f) = self.external.iter().find(|f| ***f != *symbol) {
            self.alone.get_or_insert_with(|| {
                format!(
                    "it defines `{}` with external linkage, which another kernel's code may call unnamed",
                    String::from_utf8_lossy(f)
                )
            });
        }
        self.names.insert(symbol.into());
        self
    }

    /// Whether the kernel may share a unit with another isolated from it.
    pub fn groupable(&self) -> bool {
        self.alone.is_none()
    }

    /// Whether both kernels are groupable and neither can change what the
    /// other compiles to (see the module docs).
    pub fn isolated_from(&self, other: &Isolation) -> bool {
        self.groupable()
            && other.groupable()
            && self.prefix == other.prefix
            && self.declares.is_disjoint(&other.names)
            && other.declares.is_disjoint(&self.names)
            && !self.may_paste_one_of(&other.declares)
            && !other.may_paste_one_of(&self.declares)
    }

    /// Whether the kernel declares none of `names` (an option list's).
    pub fn declares_none_of(&self, names: &FxHashSet<Box<[u8]>>) -> bool {
        self.declares.is_disjoint(names)
    }

    /// The names the kernel may declare at file scope, sorted (for tests
    /// and diagnostics).
    pub fn declared(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .declares
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect();
        v.sort();
        v
    }
}

/// The identifiers of an option list (what `-D` bodies may expand to), or
/// `None` when an option includes a file into the unit (`-include`,
/// `-imacros`), whose names no lexical check sees.
pub fn option_names<S: AsRef<str>>(options: &[S]) -> Option<FxHashSet<Box<[u8]>>> {
    let mut names = FxHashSet::default();
    for o in options {
        let o = o.as_ref();
        let forced = [
            "-include",
            "--include",
            "-imacros",
            "--imacros",
            "-preinclude",
        ];
        if forced.iter().any(|f| o.starts_with(f)) {
            return None;
        }
        for_each_token_spliced(o.as_bytes(), |kind, span, spliced| {
            if kind == TokenKind::Ident {
                names.insert(name_of(&o.as_bytes()[span], spliced));
            }
        });
    }
    Some(names)
}

fn name_of(bytes: &[u8], spliced: bool) -> Box<[u8]> {
    if spliced {
        spelling(bytes).into_owned().into_boxed_slice()
    } else {
        bytes.into()
    }
}

/// A bracket on the stack, and for a depth-0 brace whether it opens a
/// function body.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Open {
    Paren,
    Bracket,
    Brace { body: bool },
}

/// The walk over one kernel's tokens.
#[derive(Default)]
struct Walk {
    alone: Option<String>,
    prefix: Vec<Box<[u8]>>,
    prefix_len: usize,
    seen_code: bool,
    stack: Vec<Open>,
    /// The last significant token: an identifier (and whether a keyword), a
    /// `)` closing a depth-0 parenthesis opened right after a name, or other.
    last: Last,
    /// The current depth-0 parenthesis group, and whether its `(` followed a
    /// non-keyword name.
    group: usize,
    group_after_name: bool,
    /// Identifiers at depth 0 not yet known to be parameters, with the
    /// parenthesis group they stand in (0: none).
    pending: Vec<(Box<[u8]>, usize)>,
    declares: FxHashSet<Box<[u8]>>,
    names: FxHashSet<Box<[u8]>>,
    /// See [`Isolation::external`].
    external: Vec<Box<[u8]>>,
    /// The last name at depth 0, and the one before the current depth-0
    /// group's `(`.
    last_name: Option<Box<[u8]>>,
    group_name: Option<Box<[u8]>>,
    /// Whether `static` stands in the current file-scope declaration.
    is_static: bool,
    last_is_body_close: bool,
    last_is_semicolon: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Last {
    #[default]
    None,
    Name,
    Keyword,
    Extern,
    /// A `)` closing depth-0 group `n`, whose `(` followed a name.
    CloseAfterName(usize),
    Other,
}

impl Walk {
    fn refuse(&mut self, why: impl Into<String>) {
        self.alone.get_or_insert_with(|| why.into());
    }

    fn in_body(&self) -> bool {
        self.stack.contains(&Open::Brace { body: true })
    }

    fn brace_depth(&self) -> usize {
        self.stack
            .iter()
            .filter(|o| matches!(o, Open::Brace { .. }))
            .count()
    }

    fn token(&mut self, text: &[u8], kind: TokenKind, span: std::ops::Range<usize>, spliced: bool) {
        let bytes = &text[span.clone()];
        match kind {
            TokenKind::Whitespace | TokenKind::LineComment | TokenKind::BlockComment => return,
            TokenKind::Preprocessor => {
                if self.seen_code {
                    return self.refuse("a directive after code");
                }
                self.directive(bytes);
                self.prefix.push(bytes.into());
                self.prefix_len = span.end;
                return;
            }
            _ => {}
        }
        if !self.seen_code {
            self.seen_code = true;
            if kind != TokenKind::Ident {
                return self.refuse("its first token is no name");
            }
        }
        self.last_is_body_close = false;
        self.last_is_semicolon = false;
        match kind {
            TokenKind::Ident => self.ident(name_of(bytes, spliced)),
            TokenKind::Str => {
                let c_linkage = bytes == b"\"C\"" || bytes == b"\"C++\"";
                if self.brace_depth() == 0 && !(self.last == Last::Extern && c_linkage) {
                    self.refuse("a string literal at file scope");
                }
                self.last = Last::Other;
            }
            TokenKind::Attribute => self.refuse("an attribute"),
            TokenKind::Punct | TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => {
                self.punct(bytes)
            }
            _ => self.last = Last::Other,
        }
    }

    fn ident(&mut self, name: Box<[u8]>) {
        let keyword = is_keyword(&name);
        match &*name {
            b"_Pragma" | b"__pragma" => self.refuse("a pragma operator"),
            b"__attribute__" | b"__attribute" | b"__declspec" => self.refuse("an attribute"),
            b"asm" | b"__asm__" | b"__asm" => self.refuse("an asm statement"),
            b"template" | b"operator" | b"using" => {
                self.refuse(format!("`{}`", String::from_utf8_lossy(&name)))
            }
            b"extern" if self.in_body() => self.refuse("a block-scope `extern`"),
            _ => {}
        }
        if self.stack.is_empty() {
            if &*name == b"static" {
                self.is_static = true;
            } else if !keyword {
                self.last_name = Some(name.clone());
            }
        }
        self.last = match &*name {
            b"extern" => Last::Extern,
            _ if keyword => Last::Keyword,
            _ => Last::Name,
        };
        if keyword {
            return;
        }
        match self.stack.first() {
            None => self.pending.push((name.clone(), 0)),
            Some(Open::Paren) | Some(Open::Bracket) => {
                self.pending.push((name.clone(), self.group))
            }
            Some(Open::Brace { body: false }) => {
                self.declares.insert(name.clone());
            }
            Some(Open::Brace { body: true }) => {}
        }
        self.names.insert(name);
    }

    fn punct(&mut self, bytes: &[u8]) {
        let p: Vec<u8> = bytes
            .iter()
            .copied()
            .filter(|b| !b" \t\r\n\\".contains(b))
            .collect();
        let last = self.last;
        self.last = Last::Other;
        match &*p {
            b"(" => {
                if self.stack.is_empty() {
                    self.group += 1;
                    self.group_after_name = last == Last::Name;
                    self.group_name = self.last_name.clone().filter(|_| last == Last::Name);
                }
                self.stack.push(Open::Paren);
            }
            b"[" | b"<:" => self.stack.push(Open::Bracket),
            b"{" | b"<%" => {
                let body = self.stack.is_empty()
                    && matches!(last, Last::CloseAfterName(g) if g == self.group);
                if body {
                    // The parameters of a function body are no file-scope names.
                    let group = self.group;
                    self.pending.retain(|(_, g)| *g != group);
                    if !self.is_static {
                        self.external.extend(self.group_name.clone());
                    }
                }
                self.stack.push(Open::Brace { body });
            }
            b")" | b"]" | b":>" | b"}" | b"%>" => {
                let want = match &*p {
                    b")" => Open::Paren,
                    b"]" | b":>" => Open::Bracket,
                    _ => Open::Brace { body: false },
                };
                let top = self.stack.pop();
                let matches = match (top, want) {
                    (Some(Open::Brace { .. }), Open::Brace { .. }) => true,
                    (Some(t), w) => t == w,
                    (None, _) => false,
                };
                if !matches {
                    return self.refuse("unbalanced brackets");
                }
                if self.stack.is_empty() {
                    match top {
                        Some(Open::Paren) if self.group_after_name => {
                            self.last = Last::CloseAfterName(self.group)
                        }
                        Some(Open::Brace { body: true }) => {
                            self.last_is_body_close = true;
                            self.is_static = false;
                        }
                        _ => {}
                    }
                }
            }
            b";" => {
                self.last_is_semicolon = self.stack.is_empty();
                self.is_static &= !self.last_is_semicolon;
            }
            _ => {}
        }
    }

    /// A directive of the prefix: `#include <...>` or `#define` only; its
    /// names are the kernel's names.
    fn directive(&mut self, bytes: &[u8]) {
        let inner = &bytes[if bytes.starts_with(b"%") { 2 } else { 1 }..];
        let mut words = Vec::new();
        for_each_token_spliced(inner, |kind, span, spliced| {
            if !matches!(
                kind,
                TokenKind::Whitespace | TokenKind::LineComment | TokenKind::BlockComment
            ) {
                words.push((kind, span, spliced));
            }
        });
        let head = words
            .first()
            .map(|(_, s, sp)| name_of(&inner[s.clone()], *sp));
        let ok = match head.as_deref() {
            Some(b"define") => true,
            Some(b"include") => words
                .get(1)
                .is_some_and(|(_, s, _)| inner[s.clone()] == *b"<"),
            _ => false,
        };
        if !ok {
            return self.refuse("a directive other than `#include <...>` or `#define`");
        }
        // A function-like macro's parameters name nothing outside it.
        let mut params: FxHashSet<Box<[u8]>> = FxHashSet::default();
        let mut rest = &words[1..];
        if head.as_deref() == Some(b"define") {
            if let [(TokenKind::Ident, name, _), (_, open, _), tail @ ..] = rest {
                if name.end == open.start && inner[open.clone()] == *b"(" {
                    let close = tail.iter().position(|(_, s, _)| inner[s.clone()] == *b")");
                    let close = close.unwrap_or(tail.len());
                    for (kind, span, spliced) in &tail[..close] {
                        if *kind == TokenKind::Ident {
                            params.insert(name_of(&inner[span.clone()], *spliced));
                        }
                    }
                    self.names.insert(name_of(&inner[name.clone()], false));
                    rest = &tail[close.min(tail.len())..];
                }
            }
        }
        for (kind, span, spliced) in rest {
            if *kind == TokenKind::Ident {
                let name = name_of(&inner[span.clone()], *spliced);
                if !params.contains(&name) {
                    self.names.insert(name);
                }
            }
        }
    }

    /// After the last token: why the kernel is not whole declarations, or
    /// declares what it may not.
    fn finish_reason(&mut self) -> Option<String> {
        if !self.stack.is_empty() {
            return Some("unbalanced brackets".into());
        }
        if self.seen_code && !self.last_is_semicolon && !self.last_is_body_close {
            return Some("it does not end with `;` or a function body".into());
        }
        for (name, _) in self.pending.drain(..) {
            self.declares.insert(name);
        }
        let mut declared: Vec<&Box<[u8]>> = self.declares.iter().collect();
        declared.sort();
        declared.into_iter().find_map(|n| {
            let implicit = IMPLICIT_CALLS.iter().any(|c| c.as_bytes() == &**n);
            (is_reserved(n) || implicit).then(|| {
                format!(
                    "it declares `{}`, which other code may use unnamed",
                    String::from_utf8_lossy(n)
                )
            })
        })
    }
}

#[cfg(test)]
mod tests;
