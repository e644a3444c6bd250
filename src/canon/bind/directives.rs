//! What the token adapter reads outside code: the text's own directives
//! (the macros it defines, which stringize, its conditional regions) and the
//! words of directives, attributes and strings, which are opaque.

use super::lexed::Token;
use super::tokens::Adapted;
use super::Reason;
use crate::canon::lexer::spelling;
use std::borrow::Cow;
use std::ops::Range;

/// The bytes that continue a word in [`words`] (a backslash aside): one
/// lookup a byte, not six tests.
const IN_WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'\n' | b'\r') || c >= 0x80;
        b += 1;
    }
    t
};

/// Every identifier-like word in `text[span]` (a directive, an attribute, a
/// string the compiler reads): opaque.
pub(super) fn words<'t>(
    text: &'t [u8],
    span: Range<usize>,
    reason: Reason,
    out: &mut Vec<(Cow<'t, [u8]>, Reason)>,
) {
    let s = &text[span];
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'\\'
            && s.get(i + 1)
                .is_some_and(|c| !matches!(c, b'u' | b'U' | b'\n' | b'\r'))
        {
            // An escape in a string (`\n`): no word.
            i += 2;
        } else if b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80 || b == b'\\' {
            let start = i;
            while i < s.len()
                && (IN_WORD[s[i] as usize]
                    // A backslash continues a word only as a UCN or a splice.
                    || s[i] == b'\\' && matches!(s.get(i + 1), Some(b'u' | b'U' | b'\n' | b'\r')))
            {
                i += 1;
            }
            if i == start {
                // A backslash that continues nothing (the last byte).
                i += 1;
                continue;
            }
            let w = &s[start..i];
            // Conservative: the word as C spells it (splices removed, UCNs
            // decoded) and each piece between backslashes and newlines.
            if w.iter().any(|b| matches!(b, b'\\' | b'\n' | b'\r')) {
                let part: Vec<u8> = spelling(w)
                    .iter()
                    .copied()
                    .filter(|b| !matches!(b, b'\n' | b'\r'))
                    .collect();
                out.push((Cow::Owned(part), reason));
                for piece in w.split(|b| matches!(b, b'\\' | b'\n' | b'\r')) {
                    if !piece.is_empty() {
                        out.push((Cow::Borrowed(piece), reason));
                    }
                }
            } else {
                // Nothing to split at: the word is its one piece.
                out.push((Cow::Borrowed(w), reason));
            }
        } else if b.is_ascii_digit() {
            // A number: `2x` names nothing.
            while i < s.len() && (s[i].is_ascii_alphanumeric() || matches!(s[i], b'_' | b'.')) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}

/// The names a macro's body uses.
type Uses = Vec<Vec<u8>>;

/// What the text's own directives say.
pub(super) struct Directives<'t> {
    /// Macros the text defines.
    pub(super) defined: Vec<Cow<'t, [u8]>>,
    /// Macros the text defines whose bodies use `#` or `##`.
    pub(super) stringizing: Vec<Cow<'t, [u8]>>,
    /// Macros the text defines that may call a macro passed to them
    /// (`#define APPLY(m, x) m(x)`).
    pub(super) applying: Vec<Cow<'t, [u8]>>,
}

impl<'t> Directives<'t> {
    /// Reads the directives among `raw`, which stand at `at` (in order).
    pub(super) fn read(
        text: &'t [u8],
        raw: &[Token],
        at: &[usize],
        a: &mut Adapted<'t>,
        macros: Option<&crate::canon::MacroNames>,
    ) -> Directives<'t> {
        let mut d = Directives {
            defined: Vec::new(),
            stringizing: Vec::new(),
            applying: Vec::new(),
        };
        // Each other macro's name and the names its body uses (its
        // parameters aside): it stringizes if one of them may.
        let mut bodies: Vec<(Cow<'t, [u8]>, Uses, bool)> = Vec::new();
        let mut depth = 0usize;
        let mut open_at = 0usize;
        // The last line whose words were all kept: the same line again
        // (`#pragma unroll` before every loop) keeps the same words, and a
        // name's first opaque occurrence is the one that counts.
        let mut last_kept: Option<&[u8]> = None;
        for span in at.iter().map(|&i| raw[i].range()) {
            // Without a backslash or a slash the line has no splice and no
            // comment: it is its own text, and its words borrow from it.
            let bytes = &text[span.clone()];
            let plain = !bytes.iter().any(|&b| b == b'\\' || b == b'/');
            let line: Cow<'t, [u8]> = if plain {
                Cow::Borrowed(bytes)
            } else {
                Cow::Owned(strip_comments(&spelling(bytes)))
            };
            // `%:` is `#` spelled as a digraph.
            let hash = if line.starts_with(b"%:") { 2 } else { 1 };
            let body = line[hash..].trim_ascii_start();
            let word_len = body
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            let (word, rest) = body.split_at(word_len);
            // A header name (`<a.h>`, `"a.h"`) names a file, not a macro.
            let header = matches!(word, b"include" | b"include_next" | b"import")
                && matches!(rest.trim_ascii_start().first(), Some(b'<' | b'"'));
            if !header {
                // A function-like macro's parameters are its own: they name
                // nothing outside it.
                let params = if word == b"define" {
                    macro_params(rest.trim_ascii_start())
                } else {
                    Vec::new()
                };
                let own = |p: &[Vec<u8>], w: &[u8]| !p.iter().any(|p| **p == *w);
                if plain && params.is_empty() {
                    // Every word is kept: no buffer to filter.
                    if last_kept != Some(bytes) {
                        words(text, span.clone(), Reason::Directive, &mut a.opaque);
                        last_kept = Some(bytes);
                    }
                } else if plain {
                    let mut found = Vec::new();
                    words(text, span.clone(), Reason::Directive, &mut found);
                    a.opaque
                        .extend(found.into_iter().filter(|(w, _)| own(&params, w)));
                } else {
                    let mut found = Vec::new();
                    words(&line, 0..line.len(), Reason::Directive, &mut found);
                    a.opaque.extend(
                        found
                            .into_iter()
                            .filter(|(w, _)| own(&params, w))
                            .map(|(w, r)| (Cow::Owned(w.into_owned()), r)),
                    );
                }
            }
            match word {
                b"version" => a.glsl = true,
                b"if" | b"ifdef" | b"ifndef" => {
                    if depth == 0 {
                        open_at = span.end;
                    }
                    depth += 1;
                }
                b"endif" => {
                    if depth == 1 {
                        a.conditional.push(open_at..span.start);
                    }
                    depth = depth.saturating_sub(1);
                }
                b"define" => {
                    let rest = rest.trim_ascii_start();
                    let n = rest
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
                        .count();
                    let name: Cow<'t, [u8]> = Cow::Owned(rest[..n].to_vec());
                    let body = &rest[n..];
                    if body.windows(2).any(|w| w == b"##") {
                        // A pasted name is no token: it may refer to any
                        // declaration, so none may be renamed.
                        a.whole.get_or_insert_with(|| {
                            format!(
                                "macro `{}` pastes tokens (##)",
                                String::from_utf8_lossy(&name)
                            )
                        });
                    } else if body.contains(&b'#') || body.windows(2).any(|w| w == b"%:") {
                        // `%:` is `#` spelled as a digraph.
                        d.stringizing.push(name.clone());
                    } else {
                        let params = macro_params(rest);
                        let uses = body
                            .split(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$')))
                            .filter(|w| w.first().is_some_and(|b| !b.is_ascii_digit()))
                            .filter(|w| !params.iter().any(|p| **p == **w))
                            .map(<[u8]>::to_vec)
                            .collect();
                        bodies.push((name.clone(), uses, applies(body, &params)));
                    }
                    let balance = |o: u8, c: u8| {
                        body.iter().filter(|&&b| b == o).count()
                            != body.iter().filter(|&&b| b == c).count()
                    };
                    if balance(b'{', b'}') || balance(b'(', b')') || balance(b'[', b']') {
                        a.whole.get_or_insert_with(|| {
                            format!(
                                "macro `{}` has unbalanced brackets",
                                String::from_utf8_lossy(&name)
                            )
                        });
                    }
                    d.defined.push(name);
                }
                _ => {}
            }
        }
        if depth > 0 {
            a.conditional.push(open_at..text.len());
        }
        // A macro whose body names one that may stringize (`#define S STR`)
        // may stringize too: one round per macro at most.
        let may = |d: &Directives<'_>, w: &[u8]| {
            d.stringizing.iter().any(|m| **m == *w)
                || macros.is_some_and(|m| m.contains(w)) && !d.defined.iter().any(|m| **m == *w)
        };
        while let Some(k) = bodies
            .iter()
            .position(|(_, uses, _)| uses.iter().any(|w| may(&d, w)))
        {
            let (name, _, _) = bodies.swap_remove(k);
            d.stringizing.push(name);
        }
        // So does one whose body names a macro that may call one passed.
        while let Some(k) = bodies.iter().position(|(_, uses, direct)| {
            *direct || uses.iter().any(|w| d.applying.iter().any(|m| **m == **w))
        }) {
            let (name, _, _) = bodies.swap_remove(k);
            d.applying.push(name);
        }
        d
    }
}

/// Whether a macro body (its parameter list first) follows one of its
/// parameters with `(` or a name (which may expand to `(`): a macro passed
/// there may be called.
fn applies(body: &[u8], params: &[Vec<u8>]) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$');
    let mut i = 0;
    while i < body.len() {
        if !word(body[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < body.len() && word(body[i]) {
            i += 1;
        }
        if params.iter().any(|p| **p == body[start..i]) {
            let next = body[i..].iter().find(|b| !b.is_ascii_whitespace());
            if next.is_some_and(|&b| b == b'(' || word(b)) {
                return true;
            }
        }
    }
    false
}

/// A directive line with its comments blanked (the preprocessor reads a
/// comment as a space); quotes are honoured.
fn strip_comments(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            q @ (b'"' | b'\'') => {
                let start = i;
                i += 1;
                while i < line.len() && line[i] != q {
                    i += if line[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(line.len());
                out.extend_from_slice(&line[start..i]);
            }
            b'/' if line.get(i + 1) == Some(&b'/') => break,
            b'/' if line.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < line.len() && !(line[i] == b'*' && line.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(line.len());
                out.push(b' ');
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The parameter names of `NAME(a, b)` at the start of a `#define`'s rest
/// (none for an object-like macro: no `(` right after the name).
fn macro_params(rest: &[u8]) -> Vec<Vec<u8>> {
    let n = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
        .count();
    if rest.get(n) != Some(&b'(') {
        return Vec::new();
    }
    let Some(close) = rest[n..].iter().position(|&b| b == b')') else {
        return Vec::new();
    };
    rest[n + 1..n + close]
        .split(|&b| b == b',')
        .map(|p| p.trim_ascii().to_vec())
        .filter(|p| !p.is_empty() && p.as_slice() != b"...")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_table_holds_the_bytes_of_a_word() {
        for c in 0..=255u8 {
            let word = c.is_ascii_alphanumeric() || b"_$\n\r".contains(&c) || c >= 0x80;
            assert_eq!(IN_WORD[c as usize], word, "{c:#x}");
        }
    }

    #[test]
    fn a_directive_gives_its_words_whole() {
        let text = b"#pragma unroll$x \xc3\xa9t\\u00e9 2x";
        let mut out = Vec::new();
        words(text, 0..text.len(), Reason::Directive, &mut out);
        let got: Vec<&[u8]> = out.iter().map(|(w, _)| &**w).collect();
        assert!(got.contains(&&b"pragma"[..]), "{got:?}");
        assert!(got.contains(&&b"unroll$x"[..]), "{got:?}");
        assert!(got.iter().all(|w| *w != b"x"), "{got:?}");
    }
}
