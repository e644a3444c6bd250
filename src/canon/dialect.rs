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
//! A kernel is *uncacheable* (compiled every time, never published or
//! stored) when it uses `__TIME__`, `__DATE__` or `__TIMESTAMP__`, in code
//! or a directive, or when one of its directives pastes tokens (`##`,
//! `%:%:`): a paste can spell any of those names, and no lexical scan can
//! see what it spells.

use super::lexer::{for_each_token_spliced, spelling, TokenKind};
use super::MacroNames;
use std::ops::Range;

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
pub const POSITION_MACROS: [&str; 9] = [
    "__FILE__",
    "__LINE__",
    "__COUNTER__",
    "__func__",
    "__FUNCTION__",
    "__PRETTY_FUNCTION__",
    "__BASE_FILE__",
    "__FILE_NAME__",
    "__INCLUDE_LEVEL__",
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
                position.insert(name.as_bytes().into());
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
}

impl<'m> Scanner<'m> {
    /// A scan that also treats `position_macros` as position macros.
    pub fn new(position_macros: Option<&'m MacroNames>) -> Self {
        Scanner {
            position_macros,
            findings: Findings::default(),
        }
    }

    /// One token of `text`, in order.
    #[inline]
    pub fn token(&mut self, text: &[u8], kind: TokenKind, span: Range<usize>, spliced: bool) {
        if self.wants(text, kind, &span) {
            self.token_in(text, kind, span, spliced, false)
        }
    }

    /// Whether a token can hold anything the scan looks for: for most, one
    /// byte tells. Every built-in macro starts with `_` (a UCN spelling one
    /// is a lexical error), every digraph reading with `<`.
    #[inline(always)]
    pub fn wants(&self, text: &[u8], kind: TokenKind, span: &Range<usize>) -> bool {
        let first = text[span.start];
        match kind {
            TokenKind::Whitespace
            | TokenKind::LineComment
            | TokenKind::BlockComment
            | TokenKind::Str
            | TokenKind::Char
            | TokenKind::Dot
            | TokenKind::Arrow
            | TokenKind::ColonColon => false,
            TokenKind::Ident => first == b'_' || self.position_macros.is_some(),
            TokenKind::Punct => first == b'<',
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
            }
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
            TokenKind::Preprocessor => self.directive(text, span),
            k if k.is_error() => {
                raw.get_or_insert_with(|| format!("holds a lexical error ({k:?})"));
            }
            _ => {}
        }
    }

    /// The inside of a directive, past its `#` (or the `%` of `%:`).
    fn directive(&mut self, text: &[u8], span: Range<usize>) {
        let inner = &text[span.start + 1..span.end];
        let base = span.start + 1;
        for_each_token_spliced(inner, |kind, s, spliced| {
            self.token_in(text, kind, base + s.start..base + s.end, spliced, true)
        });
    }

    /// Ends the scan: trigraphs are looked for over the whole text (they are
    /// replaced before anything is tokenized, comments and literals included).
    pub fn finish(mut self, text: &[u8]) -> Findings {
        if self.findings.raw.is_none() && has_trigraph(text) {
            self.findings.raw = Some("holds a trigraph sequence".into());
        }
        self.findings
    }
}

fn is_lt_colon(p: &[u8]) -> bool {
    p.first() == Some(&b'<') && p.last() == Some(&b':')
}

fn is_paste(p: &[u8]) -> bool {
    let core: Vec<u8> = p
        .iter()
        .copied()
        .filter(|b| !b" \t\r\n\\".contains(b))
        .collect();
    core == b"##" || core == b"%:%:"
}

/// Whether `text` holds `??` followed by a trigraph's third character.
pub fn has_trigraph(text: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = text[i..].iter().position(|&b| b == b'?') {
        let at = i + off;
        if text.get(at + 1) == Some(&b'?')
            && text.get(at + 2).is_some_and(|c| b"=/'()!<>-".contains(c))
        {
            return true;
        }
        i = at + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(src: &str) -> Option<String> {
        scan(src.as_bytes(), None).raw
    }

    fn uncacheable(src: &str) -> Option<String> {
        scan(src.as_bytes(), None).uncacheable
    }

    #[test]
    fn plain_c_is_clean() {
        assert!(scan(b"void k(float* a) { a[0] = 1.0f; /* ?? */ }", None).is_clean());
        assert!(scan(b"#define MAX(a, b) ((a) > (b) ? (a) : (b))\n", None).is_clean());
    }

    #[test]
    fn trigraphs_anywhere_are_raw() {
        for t in [
            "??=", "??/", "??'", "??(", "??)", "??!", "??<", "??>", "??-",
        ] {
            assert!(raw(&format!("x /* {t} */")).is_some(), "{t}");
            assert!(raw(&format!("\"{t}\"")).is_some(), "{t}");
        }
        assert!(raw("a ?? b").is_none());
    }

    #[test]
    fn raw_strings_and_digit_separators_are_raw() {
        for s in [
            r#"R"(x)""#,
            r#"LR"(x)""#,
            r#"uR"(x)""#,
            r#"UR"(x)""#,
            r#"u8R"(x)""#,
        ] {
            assert!(raw(s).is_some(), "{s}");
        }
        assert!(raw("int x = 1'000;").is_some());
        assert!(raw("int x = 1000; char c = '0';").is_none());
    }

    #[test]
    fn lexical_errors_are_raw() {
        assert!(raw("\"open").is_some());
        assert!(raw("/* open").is_some());
        assert!(raw(r"int \u0041;").is_some());
    }

    #[test]
    fn cpp_digraph_readings_are_raw() {
        assert!(raw("a<::b> x;").is_some());
        assert!(raw("<:<:deprecated:>:> int x;").is_some());
        assert!(raw("a<:1:> = 0;").is_none());
    }

    #[test]
    fn position_macros_in_code_or_directives_are_raw() {
        for m in POSITION_MACROS {
            assert!(raw(&format!("int x = {m};")).is_some(), "{m}");
        }
        assert!(raw("#define W __LINE__\nint x = W;").is_some());
        assert!(raw("%:define W __COUNTER__\n").is_some());
        assert!(raw("int x = __LI\\\nNE__;").is_some());
        assert!(raw("\"__LINE__\" /* __FILE__ */").is_none());
    }

    #[test]
    fn reported_position_macros_are_raw() {
        let mut reported = MacroNames::default();
        reported.insert(b"assert".as_slice().into());
        assert!(scan(b"assert(x);", Some(&reported)).raw.is_some());
        assert!(scan(b"asserts(x);", Some(&reported)).raw.is_none());
    }

    #[test]
    fn time_macros_are_uncacheable() {
        for m in TIME_MACROS {
            assert!(uncacheable(&format!("char* s = {m};")).is_some(), "{m}");
            assert!(uncacheable(&format!("#define S {m}\n")).is_some(), "{m}");
        }
        assert!(uncacheable("char* s = \"__TIME__\";").is_none());
    }

    #[test]
    fn option_macros_using_position_macros_are_position_macros() {
        let (pos, why) = option_macros(&["-O2", "-DL=__LINE__", "-D", "M=L+1", "-DN=2"]);
        assert!(pos.contains(b"L".as_slice()) && pos.contains(b"M".as_slice()));
        assert!(!pos.contains(b"N".as_slice()) && why.is_none());
        assert!(scan(b"int x = M;", Some(&pos)).raw.is_some());
        assert!(scan(b"int x = N;", Some(&pos)).raw.is_none());
    }

    #[test]
    fn option_macros_using_time_macros_make_kernels_uncacheable() {
        assert!(option_macros(&["-DSTAMP=__TIME__"]).1.is_some());
        assert!(option_macros(&["-DC(a,b)=a##b"]).1.is_some());
        assert!(option_macros(&["-DX=1", "-I/usr/include"]).1.is_none());
    }

    #[test]
    fn pasting_in_a_directive_is_uncacheable() {
        assert!(uncacheable("#define C(a, b) a ## b\nchar* s = C(__TI, ME__);").is_some());
        assert!(uncacheable("%:define C(a, b) a %:%: b\n").is_some());
        assert!(uncacheable("#define S(a) #a\n").is_none());
    }

    // Raw keying as the renamer applies it.

    use crate::canon::rename::RAW_MARKER;
    use crate::canon::{canonical_kernel, CanonOptions, Canonical, Renamer};

    fn canon_with(text: &str, f: impl FnOnce(&mut CanonOptions)) -> Canonical {
        let mut o = CanonOptions::default();
        f(&mut o);
        canonical_kernel(text.as_bytes(), &o)
    }

    fn canon(text: &str, f: impl FnOnce(&mut CanonOptions)) -> String {
        String::from_utf8(canon_with(text, f).text).unwrap()
    }

    #[test]
    fn a_kernel_the_lexer_may_misread_is_raw_keyed() {
        for src in [
            "i1 = R\"(x)\";",
            "i1 = 1'000;",
            "i1 = '?'; /* ??/ */",
            "i1 = \"open",
        ] {
            let c = canon_with(src, |o| o.kernel_name = Some("k__seg3".into()));
            assert_eq!(c.text, [RAW_MARKER, src.as_bytes()].concat(), "{src}");
            assert_eq!(c.kernel_token.as_deref(), Some("k__seg3"), "{src}");
            assert!(c.raw.is_some() && c.renamed.is_empty() && !c.bound_renamed);
        }
    }

    #[test]
    fn a_position_macro_keeps_the_full_name_in_the_key() {
        let c = canon_with("void k__seg3(void) { puts(__func__); i1; }", |o| {
            o.kernel_name = Some("k__seg3".into())
        });
        assert!(c.text.starts_with(RAW_MARKER));
        assert_eq!(c.kernel_token.as_deref(), Some("k__seg3"));
        let r = Renamer::new(&CanonOptions {
            kernel_name: Some("k__seg3".into()),
            ..CanonOptions::default()
        });
        assert_eq!(r.key_form(b"__LINE__;").kernel_token, Some(&b"k__seg3"[..]));
        assert_eq!(r.key_form(b"i1;").kernel_token, Some(&b"k__seg"[..]));
    }

    #[test]
    fn a_reported_position_macro_is_raw_keyed() {
        let mut m = crate::canon::MacroNames::default();
        m.insert(b"assert".as_slice().into());
        let r = Renamer::new(&CanonOptions::default()).with_position_macros(m.into());
        assert!(r.canonicalize(b"assert(i1);").raw.is_some());
        assert!(r.canonicalize(b"check(i1);").raw.is_none());
    }

    #[test]
    fn a_time_macro_is_uncacheable() {
        let r = Renamer::new(&CanonOptions::default());
        let c = r.canonicalize(b"char* s = __DATE__; i1;");
        assert!(c.uncacheable.is_some() && c.raw.is_some());
        assert!(r.key_form(b"#define T __TIME__\n").uncacheable.is_some());
        assert!(r.key_form(b"i1;").uncacheable.is_none());
    }

    #[test]
    fn a_raw_text_never_equals_a_renamed_one() {
        // The renamed twin of the raw marker is marked, so it cannot match.
        let raw = canon("/*kc0 raw*/i1 = R\"(x)\";", |_| {});
        let renamed = canon("/*kc0 raw*/i1 = 1;", |_| {});
        assert!(raw.starts_with("/*kc0 raw*/"));
        assert!(renamed.starts_with("/*kc0 kc_"), "{renamed}");
    }
}
