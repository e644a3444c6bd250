//! What in a kernel's text the lexer cannot read as every compiler would, or
//! what makes the compile depend on more than the text.
//!
//! A kernel is *raw-keyed* (not renamed: its key is taken over its raw text
//! and its full name, see [`super::rename`]) when it holds:
//!
//! * a trigraph sequence (`??` then one of `=/'()!<>-`): whether it is
//!   replaced depends on the options (`-std=c99` does, `-std=gnu99` does not);
//! * a raw-string literal (`R"`, `LR"`, `uR"`, `UR"`, `u8R"`): C has none, so
//!   there `R` is a name and the quotes open an ordinary string;
//! * a digit separator (`1'000`): in C before C23 the quote opens a character
//!   literal;
//! * `<::` or `<:<:`, which C++ reads as `< ::` and as an attribute opener;
//! * any lexical error token;
//! * a macro whose expansion depends on where it is expanded, in the code or
//!   inside a directive of the kernel: `__FILE__`, `__LINE__`, `__COUNTER__`,
//!   `__func__`, `__FUNCTION__`, `__PRETTY_FUNCTION__`, `__BASE_FILE__`,
//!   `__FILE_NAME__`, `__INCLUDE_LEVEL__`, or a name the backend reports as
//!   one (a macro such as `assert` whose body uses them): its expansion is
//!   fixed by the raw text and the full name (`__func__` names the segment
//!   index too), and such a kernel is never grouped (see [`super::isolation`]).
//!
//!
//! With a kernel name given ([`Scanner::with_kernel_name`]), a kernel is also
//! raw-keyed when the compile may see its full name where the renamer cannot
//! replace it by its kernel token (which drops a segment index):
//!
//! * the name stands in a directive (`#ifdef f__seg0`, `#if defined(...)`,
//!   a macro body), which the renamer copies as written; the Vulkan backend
//!   also defines the name itself (`#define <symbol> main`), which such a
//!   directive can test;
//! * the name stands in the arguments of a macro call in code (a macro the
//!   kernel defines, or one of [`Scanner::with_macros`]: a macro from a
//!   header or an option list may stringify or paste it), or in parentheses
//!   right after one (its expansion may end in a macro's name: `ID(STR)(f)`);
//! * a directive stringifies (a `#` or `%:` operator in its body): a macro
//!   can reach the name through other macros' arguments;
//! * a `#define` body leaves a parenthesis open: the macro opens a call the
//!   code closes, whose arguments no lexical scan delimits.
//!
//! A kernel is *uncacheable* (compiled every time, never published or
//! stored) when it uses `__TIME__`, `__DATE__` or `__TIMESTAMP__`, in code
//! or a directive, or when one of its directives pastes tokens (`##`,
//! `%:%:`): a paste can spell any of those names, and no lexical scan can
//! see what it spells. It is uncacheable too when it spells `asm`,
//! `__asm__` or `__asm` (in code or a directive) and its string literals,
//! unescaped and joined in order, hold `.incbin` or `.include` (whitespace
//! and case ignored), or one of its directives holds a string literal (a
//! macro may hand the asm its text): the assembler reads a file that the key
//! never digests and `-MD` never reports.

mod quick;
mod strings;

use super::lexer::{for_each_token_spliced, spelling, TokenKind};
use super::MacroNames;
use rustc_hash::FxHashSet;
use std::borrow::Cow;
use std::ops::Range;

use strings::{string_contents, unspliced};

/// What a scan found (the first reason of each kind).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Why the kernel must be keyed on its raw text.
    pub raw: Option<String>,
    /// Why the kernel cannot be cached at all.
    pub uncacheable: Option<String>,
}

impl Findings {
    /// Whether the scan found nothing.
    pub fn is_clean(&self) -> bool {
        self.raw.is_none() && self.uncacheable.is_none()
    }
}

/// Macros whose expansion depends on the position or the enclosing function.
pub const POSITION_MACROS: [&str; 17] = [
    "__FILE__",
    "__LINE__",
    "__COUNTER__",
    "__func__",
    "__FUNCTION__",
    "__PRETTY_FUNCTION__",
    "__BASE_FILE__",
    "__FILE_NAME__",
    "__INCLUDE_LEVEL__",
    // Builtins that give the same (GCC, Clang): a name, not a macro, but
    // they spell the function, the file label or where the call stands.
    "__builtin_FUNCTION",
    "__builtin_LINE",
    "__builtin_FILE",
    "__builtin_FILE_NAME",
    "__builtin_COLUMN",
    "__builtin_source_location",
    // Clang's `-fms-extensions` function names.
    "__FUNCSIG__",
    "__FUNCDNAME__",
];

/// Macros whose expansion depends on the time of the compile.
pub const TIME_MACROS: [&str; 3] = ["__TIME__", "__DATE__", "__TIMESTAMP__"];

/// Whether `name` is a position macro, built in or reported by the backend.
pub fn is_position_macro(name: &[u8], reported: Option<&MacroNames>) -> bool {
    // Every built-in one starts with `__`: most names cost one comparison.
    name.starts_with(b"__") && POSITION_MACROS.iter().any(|m| m.as_bytes() == name)
        || reported.is_some_and(|r| r.contains(name))
}

/// Whether `name` is a time macro.
pub fn is_time_macro(name: &[u8]) -> bool {
    name.starts_with(b"__") && TIME_MACROS.iter().any(|m| m.as_bytes() == name)
}

/// What an option list's macro definitions (`-DNAME=BODY`, `-D NAME=BODY`)
/// add to the scan: the names whose bodies use a position macro (directly
/// or through another such name), which are position macros themselves, and
/// why the list makes every kernel uncacheable (a body uses `__TIME__`, or
/// pastes tokens).
pub fn option_macros<S: AsRef<str>>(options: &[S]) -> (MacroNames, Option<String>) {
    let mut defs: Vec<(&str, &str)> = Vec::new();
    let mut iter = options.iter().map(AsRef::as_ref);
    while let Some(o) = iter.next() {
        let def = match o.strip_prefix("-D") {
            Some("") => iter.next().unwrap_or_default(),
            Some(def) => def,
            None => continue,
        };
        let (head, body) = def.split_once('=').unwrap_or((def, ""));
        let name_len = head
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$')
            .count();
        defs.push((&head[..name_len], body));
    }
    let mut position = MacroNames::default();
    let mut uncacheable = None;
    // A name joins once its body uses a position macro or a name that
    // joined: at most one round per definition.
    for _ in 0..=defs.len() {
        let before = position.len();
        for (name, body) in &defs {
            let found = scan(body.as_bytes(), Some(&position));
            if let Some(why) = found.uncacheable {
                uncacheable.get_or_insert_with(|| format!("option `-D{name}`: {why}"));
            }
            if body.contains("##") || found.raw.is_some() {
                position.insert(name.as_bytes());
            }
        }
        if position.len() == before {
            break;
        }
    }
    if defs
        .iter()
        .any(|(_, body)| body.contains("##") || body.contains("%:%:"))
    {
        uncacheable.get_or_insert_with(|| "an option's macro pastes tokens".into());
    }
    (position, uncacheable)
}

/// Scans `text` on its own (one lexing pass).
pub fn scan(text: &[u8], position_macros: Option<&MacroNames>) -> Findings {
    let mut scanner = Scanner::new(position_macros);
    for_each_token_spliced(text, |kind, span, spliced| {
        scanner.token(text, kind, span, spliced)
    });
    scanner.finish(text)
}

/// A scan fed token by token (so the renamer's pass can run it without
/// lexing twice).
pub struct Scanner<'m> {
    position_macros: Option<&'m MacroNames>,
    findings: Findings,
    /// The kernel's own name, as the renamer would replace it.
    kernel_name: Option<&'m [u8]>,
    /// Macro names where the kernel is compiled (the backend's).
    macros: Option<&'m MacroNames>,
    /// Names the kernel's own directives define.
    defined: FxHashSet<Box<[u8]>>,
    /// How many of the open parentheses in code (directives aside) are, or
    /// stand inside, the argument list of a macro: those are the innermost
    /// ones (every parenthesis opened inside one is inside one too), so a
    /// count says all a stack of them would.
    in_call: usize,
    /// The last identifier in code, when nothing the scan saw followed it
    /// ([`CALL_CLOSED`] for the `)` that closes a macro call).
    last_ident: Option<Range<usize>>,
    /// Whether a directive's body leaves a parenthesis open (a macro that
    /// opens a call the code closes).
    opens_call: bool,
    /// Whether an asm keyword was spelled.
    asm: bool,
    /// Every string literal's contents, unescaped, in order.
    strings: Vec<u8>,
    /// Whether a directive holds a string literal.
    directive_string: bool,
    /// Whether a directive stringifies.
    stringifies: bool,
    /// Whether the caller has already searched the text for trigraphs and
    /// found none (see [`Scanner::no_trigraphs`]).
    no_trigraphs: bool,
}

impl<'m> Scanner<'m> {
    /// A scan that also treats `position_macros` as position macros.
    pub fn new(position_macros: Option<&'m MacroNames>) -> Self {
        Scanner {
            position_macros,
            findings: Findings::default(),
            kernel_name: None,
            macros: None,
            defined: FxHashSet::default(),
            in_call: 0,
            last_ident: None,
            opens_call: false,
            asm: false,
            strings: Vec::new(),
            directive_string: false,
            stringifies: false,
            no_trigraphs: false,
        }
    }

    /// Tells the scan that the text holds no trigraph (the binder searched
    /// it: [`crate::canon::bind::Binding::whole`] is unset only when it
    /// found none), so [`Scanner::finish`] need not search it again.
    pub fn no_trigraphs(&mut self) {
        self.no_trigraphs = true;
    }

    /// A scan that also looks for where the kernel's own name `name` (as
    /// [`super::CanonOptions::kernel_name`] gives it) may reach the compile
    /// unreplaced (see the module docs).
    pub fn with_kernel_name(mut self, name: Option<&'m [u8]>) -> Self {
        self.kernel_name = name.filter(|n| !n.is_empty());
        self
    }

    /// A scan that knows the names that are macros where the kernel is
    /// compiled (see [`super::MacroNames`]), whose arguments it watches for
    /// the kernel's name.
    pub fn with_macros(mut self, macros: Option<&'m MacroNames>) -> Self {
        self.macros = macros;
        self
    }

    /// One token of `text`, in order.
    #[inline(always)]
    pub fn token(&mut self, text: &[u8], kind: TokenKind, span: Range<usize>, spliced: bool) {
        // Most names: only a possible macro call's callee. (What the slow
        // path does for them, without its call.)
        if kind == TokenKind::Ident {
            let first = text[span.start];
            let plain =
                first != b'_' && first != b'a' && first != b'\\' && self.position_macros.is_none();
            match self.kernel_name {
                Some(k) if plain && k[0] != first => {
                    self.last_ident = Some(span);
                    return;
                }
                None if plain => {
                    self.last_ident = None;
                    return;
                }
                _ => {}
            }
        } else if kind == TokenKind::Punct && self.kernel_name.is_some() {
            // Parentheses, the most common token the scan wants: what the
            // slow path does for them, without its call.
            match &text[span.clone()] {
                b"(" => {
                    let callee = self.last_ident.take();
                    return self.open_paren(text, callee);
                }
                b")" => {
                    self.last_ident = None;
                    self.close_paren();
                    return;
                }
                // A lone `<` (every comparison) is wanted only as a possible
                // start of `<:`, which it is not: what the slow path does
                // for it, without its calls.
                b"<" => {
                    self.last_ident = None;
                    return;
                }
                _ => {}
            }
        }
        self.token_slow(text, kind, span, spliced)
    }

    /// Whether a `(` may open a macro's arguments, in which the kernel's
    /// name is looked for.
    fn calls_possible(&self) -> bool {
        self.kernel_name.is_some() && (self.macros.is_some() || !self.defined.is_empty())
    }

    /// A `(` (with a kernel name to look for) after the name `callee`, if
    /// one stood right before it: whether it opens a macro's arguments.
    #[inline]
    fn open_paren(&mut self, text: &[u8], callee: Option<Range<usize>>) {
        // Without a macro to call, no name is spelled out.
        let macros = !self.defined.is_empty() || self.macros.is_some();
        let call = macros
            && callee.is_some_and(|s| {
                // An empty callee is a macro call's `)`: its expansion may
                // end in a function-like macro's name (`ID(STR)(f)`).
                s.is_empty() || {
                    let c = name_of(&text[s]);
                    self.defined.contains(&*c) || self.macros.is_some_and(|m| m.contains(&*c))
                }
            });
        if call || self.in_call > 0 {
            self.in_call += 1;
        }
    }

    /// A `)` in code (with a kernel name to look for).
    #[inline]
    fn close_paren(&mut self) {
        if self.in_call == 1 {
            // A macro call closes: a `(` right after it may open another.
            self.last_ident = Some(CALL_CLOSED);
        }
        self.in_call = self.in_call.saturating_sub(1);
    }

    #[inline(never)]
    fn token_slow(&mut self, text: &[u8], kind: TokenKind, span: Range<usize>, spliced: bool) {
        if matches!(
            kind,
            TokenKind::Whitespace | TokenKind::LineComment | TokenKind::BlockComment
        ) {
            return;
        }
        // A token the caller filtered out by `wants` leaves `last_ident`
        // standing: a `(` then counts as a call of a name further back,
        // which only makes more kernels raw-keyed.
        let callee = self.last_ident.take();
        if self.kernel_name.is_some() {
            let first = text[span.start];
            match kind {
                TokenKind::Ident => {
                    // Every name is a possible macro call's callee; only
                    // some need more.
                    self.last_ident = Some(span.clone());
                    let more = first == b'_'
                        || first == b'a'
                        || first == b'\\'
                        || self.position_macros.is_some()
                        || self.kernel_name.is_some_and(|k| k[0] == first);
                    if !more {
                        return;
                    }
                }
                TokenKind::Punct if text[span.clone()] == *b"(" => {
                    return self.open_paren(text, callee);
                }
                TokenKind::Punct if text[span.clone()] == *b")" => {
                    self.close_paren();
                    return;
                }
                _ => {}
            }
        }
        if self.wants(text, kind, &span) {
            self.token_in(text, kind, span, spliced, false)
        }
    }

    /// Whether a token can hold anything the scan looks for: for most, one
    /// byte tells. Every built-in macro starts with `_` (a UCN spelling one
    /// is a lexical error), every digraph reading with `<`; `asm` and the
    /// kernel's name are looked for, string literals and parentheses kept
    /// track of.
    #[inline(always)]
    pub fn wants(&self, text: &[u8], kind: TokenKind, span: &Range<usize>) -> bool {
        let first = text[span.start];
        match kind {
            TokenKind::Whitespace
            | TokenKind::LineComment
            | TokenKind::BlockComment
            | TokenKind::Char
            | TokenKind::Dot
            | TokenKind::Arrow
            | TokenKind::ColonColon => false,
            TokenKind::Ident => {
                first == b'_'
                    || first == b'a'
                    || first == b'\\'
                    || self.position_macros.is_some()
                    || self.kernel_name.is_some()
            }
            TokenKind::Punct => {
                first == b'<' || self.kernel_name.is_some() && (first == b'(' || first == b')')
            }
            TokenKind::Number => text[span.clone()].contains(&b'\''),
            _ => true,
        }
    }

    #[inline(never)]
    fn token_in(
        &mut self,
        text: &[u8],
        kind: TokenKind,
        span: Range<usize>,
        spliced: bool,
        in_directive: bool,
    ) {
        let raw = &mut self.findings.raw;
        let bytes = &text[span.clone()];
        match kind {
            TokenKind::Ident => {
                let name = if spliced {
                    spelling(bytes)
                } else {
                    bytes.into()
                };
                if matches!(&*name, b"asm" | b"__asm__" | b"__asm") {
                    self.asm = true;
                }
                let in_macro_call = self.in_call > 0;
                if self.kernel_name == Some(&*name) && (in_directive || in_macro_call) {
                    raw.get_or_insert_with(|| {
                        let name = String::from_utf8_lossy(&name);
                        if in_directive {
                            format!("its own name `{name}` stands in a directive")
                        } else {
                            format!("its own name `{name}` is a macro's argument, which may stringify it")
                        }
                    });
                }
                if is_time_macro(&name) {
                    self.findings.uncacheable.get_or_insert_with(|| {
                        format!("uses `{}`", String::from_utf8_lossy(&name))
                    });
                } else if raw.is_none() && is_position_macro(&name, self.position_macros) {
                    *raw = Some(format!(
                        "uses `{}`, which expands by position",
                        String::from_utf8_lossy(&name)
                    ));
                }
            }
            TokenKind::RawStr => {
                raw.get_or_insert_with(|| "holds a raw string literal (C has none)".into());
                self.string(bytes, spliced, in_directive);
            }
            TokenKind::Str => self.string(bytes, spliced, in_directive),
            TokenKind::Number if bytes.contains(&b'\'') => {
                raw.get_or_insert_with(|| "holds a digit separator (C before C23 has none)".into());
            }
            TokenKind::Punct if is_lt_colon(bytes) => {
                let next = text.get(span.end..).unwrap_or_default();
                if next.starts_with(b":") || next.starts_with(b"<:") {
                    raw.get_or_insert_with(|| {
                        "holds `<::` or `<:<:`, read otherwise by C++".into()
                    });
                }
            }
            TokenKind::Punct if in_directive && is_paste(bytes) => {
                self.findings.uncacheable.get_or_insert_with(|| {
                    "a directive pastes tokens, which can spell `__TIME__`".into()
                });
            }
            TokenKind::Punct if in_directive && is_stringify(bytes) => self.stringifies = true,
            // A `#` the lexer took for a directive's start inside a
            // directive is a stringifying operator too.
            TokenKind::Preprocessor if in_directive => {
                self.stringifies = true;
                self.directive(text, span)
            }
            TokenKind::Preprocessor => self.directive(text, span),
            k if k.is_error() => {
                raw.get_or_insert_with(|| format!("holds a lexical error ({k:?})"));
            }
            _ => {}
        }
    }

    /// The inside of a directive, past its `#` (or the `%` of `%:`).
    fn directive(&mut self, text: &[u8], span: Range<usize>) {
        self.last_ident = None;
        if let Some(why) = strings::misread_header_name(&text[span.clone()]) {
            self.findings.uncacheable.get_or_insert(why);
        }
        let inner = &text[span.start + 1..span.end];
        let base = span.start + 1;
        if self.plain_directive(text, base, inner) {
            return;
        }
        // The words so far (`define`, then the name), and the body's
        // parenthesis balance past the name and its parameter list.
        let mut words = 0;
        let mut define = false;
        let mut balance: isize = 0;
        let mut params = false;
        for_each_token_spliced(inner, |kind, s, spliced| {
            let at = base + s.start..base + s.end;
            let bytes = &text[at.clone()];
            match kind {
                TokenKind::Whitespace | TokenKind::LineComment | TokenKind::BlockComment => {}
                TokenKind::Punct if words == 0 && bytes == b":" => {}
                _ => {
                    words += 1;
                    if words == 1 {
                        define = kind == TokenKind::Ident && *name_of(bytes) == *b"define";
                    } else if words == 2 && define && kind == TokenKind::Ident {
                        self.defined.insert(name_of(bytes).into());
                        params = text.get(at.end) == Some(&b'(');
                    } else if define && kind == TokenKind::Punct {
                        match bytes {
                            b"(" => balance += 1,
                            b")" if params && balance == 1 => {
                                params = false;
                                balance = 0;
                            }
                            b")" => balance -= 1,
                            _ => {}
                        }
                    }
                }
            }
            self.token_in(text, kind, at, spliced, true)
        });
        self.opens_call |= define && balance > 0;
    }

    /// Ends the scan: trigraphs are looked for over the whole text (they are
    /// replaced before anything is tokenized, comments and literals included).
    pub fn finish(mut self, text: &[u8]) -> Findings {
        if self.findings.raw.is_none() && !self.no_trigraphs && has_trigraph(text) {
            self.findings.raw = Some("holds a trigraph sequence".into());
        }
        if let Some(why) = strings::odd_splice(text) {
            self.findings.uncacheable.get_or_insert(why);
        }
        if self.asm {
            let reads = [&b".incbin"[..], b".include"]
                .iter()
                .any(|d| self.strings.windows(d.len()).any(|w| w == *d));
            if reads {
                self.findings.uncacheable.get_or_insert_with(|| {
                    "its asm holds `.incbin` or `.include`: the assembler reads a file".into()
                });
            } else if self.directive_string {
                self.findings.uncacheable.get_or_insert_with(|| {
                    "it has asm, and a directive holds a string that may be asm text".into()
                });
            }
        }
        if self.kernel_name.is_some() {
            if self.stringifies {
                self.findings.raw.get_or_insert_with(|| {
                    "a directive stringifies, which may spell its own name".into()
                });
            } else if self.opens_call {
                self.findings.raw.get_or_insert_with(|| {
                    "a macro opens a call its code closes, which may take its own name".into()
                });
            }
        }
        self.findings
    }

    /// A string literal's contents, for the asm check: unescaped, with
    /// whitespace dropped and letters lowered (so `". INCBIN"` is found).
    fn string(&mut self, bytes: &[u8], spliced: bool, in_directive: bool) {
        self.directive_string |= in_directive;
        let bytes = if spliced {
            Cow::Owned(unspliced(bytes))
        } else {
            Cow::Borrowed(bytes)
        };
        let contents = string_contents(&bytes);
        self.strings.extend(
            contents
                .into_iter()
                .filter(|b| !b.is_ascii_whitespace())
                .map(|b| b.to_ascii_lowercase()),
        );
    }
}

/// What [`Scanner`] keeps as the callee after a macro call's `)`: no name.
const CALL_CLOSED: Range<usize> = 0..0;

fn name_of(bytes: &[u8]) -> Cow<'_, [u8]> {
    spelling(bytes)
}

fn is_stringify(p: &[u8]) -> bool {
    p == b"#" || p == b"%:"
}

fn is_lt_colon(p: &[u8]) -> bool {
    p.first() == Some(&b'<') && p.last() == Some(&b':')
}

/// Whether the punctuator `p` is the paste operator (`##`, `%:%:`, with
/// blanks or splices between its halves).
pub(crate) fn is_paste(p: &[u8]) -> bool {
    let core: Vec<u8> = p
        .iter()
        .copied()
        .filter(|b| !b" \t\r\n\\".contains(b))
        .collect();
    core == b"##" || core == b"%:%:"
}

/// Whether `text` holds `??` followed by a trigraph's third character.
pub fn has_trigraph(text: &[u8]) -> bool {
    // Most texts have no `?` at all: a block is tested as a whole (a fold
    // with no early exit, which compiles to vector compares; `contains` was
    // a call per block), and only one holding a `?` is looked at byte by byte.
    const BLOCK: usize = 64;
    let quest = |block: &[u8]| match <&[u8; BLOCK]>::try_from(block) {
        Ok(full) => full.iter().fold(false, |any, &b| any | (b == b'?')),
        Err(_) => block.contains(&b'?'),
    };
    let mut start = 0;
    while start < text.len() {
        let end = (start + BLOCK).min(text.len());
        if quest(&text[start..end]) {
            for at in start..end {
                if text[at] == b'?'
                    && text.get(at + 1) == Some(&b'?')
                    && text.get(at + 2).is_some_and(|c| b"=/'()!<>-".contains(c))
                {
                    return true;
                }
            }
        }
        start = end;
    }
    false
}

#[cfg(test)]
mod tests;
