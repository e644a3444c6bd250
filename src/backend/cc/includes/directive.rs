//! Preprocessor lines, as far as the include scanner cares: which files a
//! directive names, and which macro a `#define` or `#undef` names and what its
//! body refers to.

use crate::canon::lexer::{lex, spelling, TokenKind};

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
    pub(super) fn tag(self) -> &'static str {
        match self {
            RefKind::Include => "include",
            RefKind::IncludeNext => "include_next",
            RefKind::Embed => "embed",
            RefKind::HasInclude => "has_include",
            RefKind::HasIncludeNext => "has_include_next",
            RefKind::HasEmbed => "has_embed",
        }
    }

    pub(super) fn is_next(self) -> bool {
        matches!(self, RefKind::IncludeNext | RefKind::HasIncludeNext)
    }

    pub(super) fn is_query(self) -> bool {
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
    /// For `#define` and `#undef`: the macro's name and the identifiers of
    /// its body that are not its parameters.
    pub define: Option<Define>,
}

/// The macro a `#define` or `#undef` names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Define {
    /// The macro's name.
    pub name: Box<[u8]>,
    /// The identifiers after the name and the parameter list that are not
    /// parameters: what the expansion may name where it is expanded.
    pub body: Body,
    /// Whether the body pastes tokens (`##`, `%:%:`): the expansion may then
    /// name what no token of the kernel or the body spells (`CAT(q, 1)`
    /// reaches a local `q1`).
    pub pastes: bool,
}

/// The identifiers of a macro's parameters and body in one buffer, each
/// followed by a NUL byte (no identifier holds one): a compiler's
/// predefined macros are a few hundred, loaded by every warm hit, and a
/// buffer per identifier was an allocation each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Body(Vec<u8>);

impl Body {
    /// With room for `bytes` bytes of identifiers and their ends.
    pub(crate) fn with_capacity(bytes: usize) -> Body {
        Body(Vec::with_capacity(bytes))
    }

    /// Adds `word`, which holds no NUL byte (an identifier never does).
    pub(crate) fn push(&mut self, word: &[u8]) {
        debug_assert!(!word.contains(&0), "an identifier holds no NUL");
        self.0.extend_from_slice(word);
        self.0.push(0);
    }

    /// Whether there is no identifier.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many identifiers there are.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().filter(|b| **b == 0).count()
    }

    /// The identifiers, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.0
            .split_inclusive(|b| *b == 0)
            .map(|w| &w[..w.len() - 1])
    }
}

impl<T: AsRef<[u8]>> FromIterator<T> for Body {
    fn from_iter<I: IntoIterator<Item = T>>(words: I) -> Body {
        let mut body = Body::default();
        for w in words {
            body.push(w.as_ref());
        }
        body
    }
}

impl Directive {
    /// How the directive changes the conditional nesting depth.
    pub(super) fn nesting(&self) -> isize {
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
    // `%:` is `#` spelled as a digraph: `%:if __has_include("x.h")` asks too.
    let Some(body) = text.strip_prefix(b"#").or_else(|| text.strip_prefix(b"%:")) else {
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
    if matches!(&name[..], b"define" | b"undef") {
        // A function-like macro's parameters name nothing outside it: the
        // body's other identifiers are what its expansion may reach (a
        // kernel's local among them is never renamed: see `macros.rs`).
        let params_end = match toks.get(2) {
            Some(t)
                if &body[t.span.clone()] == b"("
                    && toks.get(1).is_some_and(|n| n.span.end == t.span.start) =>
            {
                (3..toks.len())
                    .find(|&i| &body[toks[i].span.clone()] == b")")
                    .map_or(toks.len(), |i| i + 1)
            }
            _ => 2,
        };
        let params: Vec<_> = (3..params_end).filter_map(ident).collect();
        let pastes = toks.get(params_end..).is_some_and(|body_toks| {
            body_toks.iter().any(|t| {
                t.kind == TokenKind::Punct && crate::canon::dialect::is_paste(&body[t.span.clone()])
            })
        });
        let define = ident(1).map(|macro_name| Define {
            name: macro_name.into_owned().into_boxed_slice(),
            body: (params_end..toks.len())
                .filter_map(ident)
                .filter(|w| !params.contains(w))
                .collect(),
            pastes,
        });
        let mut refs = Vec::new();
        queries(body, &toks, &mut refs)?;
        return Ok(Directive { name, refs, define });
    }
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
                define: None,
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
    queries(body, &toks, &mut refs)?;
    Ok(Directive {
        name,
        refs,
        define: None,
    })
}

/// The `__has_include(...)` (and `_next`, `__has_embed`) queries of a
/// directive's tokens.
fn queries(
    body: &[u8],
    toks: &[crate::canon::lexer::Token],
    refs: &mut Vec<Reference>,
) -> Result<(), String> {
    let ident = |i: usize| -> Option<std::borrow::Cow<'_, [u8]>> {
        toks.get(i)
            .filter(|t| t.kind == TokenKind::Ident)
            .map(|t| spelling(&body[t.span.clone()]))
    };
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
        match header_name(body, toks, i + 2) {
            Some((name, angled)) => refs.push(Reference { kind, name, angled }),
            None => {
                return Err(format!(
                    "computed __{}: which file it names is only known after macro expansion",
                    kind.tag()
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gives_back_its_words_in_order() {
        let empty = Body::default();
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        assert_eq!(empty.iter().count(), 0);
        let body: Body = ["a", "bc", "__LINE__"].into_iter().collect();
        assert!(!body.is_empty());
        assert_eq!(body.len(), 3);
        let words: Vec<&[u8]> = body.iter().collect();
        assert_eq!(words, [&b"a"[..], b"bc", b"__LINE__"]);
        // Two bodies that join to the same bytes are still different.
        let other: Body = ["ab", "c", "__LINE__"].into_iter().collect();
        assert_ne!(body, other);
        // A function-like macro's parameters are no words of its body.
        let define = parse_directive(b"#define F(x, y) (x + g(y, __FILE__))").unwrap();
        let words: Vec<&[u8]> = define.define.as_ref().unwrap().body.iter().collect();
        assert_eq!(words, [&b"g"[..], b"__FILE__"]);
        // An object-like macro's parenthesis opens no parameter list.
        let define = parse_directive(b"#define G (x + y)").unwrap();
        let words: Vec<&[u8]> = define.define.as_ref().unwrap().body.iter().collect();
        assert_eq!(words, [&b"x"[..], b"y"]);
    }

    #[test]
    fn a_body_that_pastes_is_told_apart() {
        // Review 2026-12-02, GPU F19b: `CAT(q, 1)` reaches a local `q1`.
        let pastes = |line: &[u8]| parse_directive(line).unwrap().define.unwrap().pastes;
        assert!(pastes(b"#define CAT(a, b) a##b"));
        assert!(pastes(b"#define CAT(a, b) a %:%: b"));
        assert!(pastes(b"#define CAT(a, b) a #\\\n# b"));
        assert!(pastes(b"#define __INT64_C(c) c ## L"));
        assert!(pastes(b"#define ONE q ## 1"));
        // A stringify, a paste in a string or a comment, the parameter list.
        assert!(!pastes(b"#define STR(x) #x"));
        assert!(!pastes(b"#define S \"a##b\" /* ## */"));
        assert!(!pastes(b"#define F(a) a"));
        assert!(!pastes(b"#undef CAT"));
    }

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
