//! String literals as the assembler receives them, for the asm check of
//! [`super`]; and the bytes a compiler reads otherwise than the lexer does
//! (a splice across a form feed, a header name holding `/*`), which make a
//! kernel uncacheable.

/// `text` with its line splices (a backslash, blanks, a line end) removed.
pub(super) fn unspliced(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\\' {
            let mut j = i + 1;
            while j < text.len() && matches!(text[j], b' ' | b'\t') {
                j += 1;
            }
            let end = match text.get(j..) {
                Some([b'\r', b'\n', ..]) => Some(j + 2),
                Some([b'\r' | b'\n', ..]) => Some(j + 1),
                _ => None,
            };
            if let Some(end) = end {
                i = end;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// What a string literal token (its prefix and quotes included, splices
/// removed) holds, escapes replaced by the bytes they stand for (a code
/// point past ASCII by its UTF-8). A raw string's contents are as written.
pub(super) fn string_contents(token: &[u8]) -> Vec<u8> {
    let Some(open) = token.iter().position(|&b| b == b'"') else {
        return Vec::new();
    };
    let body = &token[open + 1..];
    let body = body.strip_suffix(b"\"").unwrap_or(body);
    if token[..open].ends_with(b"R") {
        let start = body.iter().position(|&b| b == b'(').map_or(0, |p| p + 1);
        let end = body.iter().rposition(|&b| b == b')').unwrap_or(body.len());
        return body.get(start..end).unwrap_or_default().to_vec();
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        i += 1;
        if b != b'\\' || i == body.len() {
            out.push(b);
            continue;
        }
        let e = body[i];
        i += 1;
        let radix_digits = |i: &mut usize, radix: u32, max: usize| {
            let mut v: u32 = 0;
            let mut n = 0;
            while n < max && *i < body.len() && (body[*i] as char).is_digit(radix) {
                v = v
                    .wrapping_mul(radix)
                    .wrapping_add((body[*i] as char).to_digit(radix).unwrap_or(0));
                *i += 1;
                n += 1;
            }
            v
        };
        let code = match e {
            b'0'..=b'7' => {
                i -= 1;
                radix_digits(&mut i, 8, 3)
            }
            b'x' => radix_digits(&mut i, 16, usize::MAX),
            b'u' => radix_digits(&mut i, 16, 4),
            b'U' => radix_digits(&mut i, 16, 8),
            b'n' => 10,
            b't' => 9,
            b'r' => 13,
            b'v' => 11,
            b'f' => 12,
            b'a' => 7,
            b'b' => 8,
            b'e' | b'E' => 27,
            other => other as u32,
        };
        match char::from_u32(code) {
            Some(c) if matches!(e, b'u' | b'U') || code < 0x80 => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => out.push(code as u8),
        }
    }
    out
}

/// Why the text is read otherwise by some compiler than by the lexer, when
/// a backslash and a line end stand apart by a form feed, a vertical tab or
/// a NUL: GCC splices the line there (with a warning), Clang splices all
/// but the NUL, the lexer splices across spaces and tabs only. Code a
/// comment hides from one reader is code to the other (review 2026-12-02:
/// `/* c *\<FF><LF>/` ends a comment for GCC alone), so no reading can be
/// trusted: the kernel is compiled every time.
pub(in crate::canon) fn odd_splice(text: &[u8]) -> Option<String> {
    if !text.contains(&b'\\') {
        return None;
    }
    let odd = text.iter().enumerate().any(|(i, &b)| {
        if b != b'\\' {
            return false;
        }
        let gap = text[i + 1..]
            .iter()
            .take_while(|&&c| matches!(c, b' ' | b'\t' | 0x0b | 0x0c | 0))
            .count();
        let after = text.get(i + 1 + gap);
        matches!(after, Some(b'\n' | b'\r'))
            && text[i + 1..i + 1 + gap]
                .iter()
                .any(|&c| matches!(c, 0x0b | 0x0c | 0))
    });
    odd.then(|| {
        "a backslash and a line end stand apart by a form feed, vertical tab or NUL, \
         which compilers splice differently"
            .into()
    })
}

/// Why the directive `line` is read otherwise by the compiler than by the
/// lexer, when it names a file (`#include`, `#import`, `#embed`,
/// `__has_include(...)`, `__has_embed(...)`) whose header name holds `/*`,
/// `//` or a backslash: inside a header name those open no comment and
/// escape nothing, while the lexer reads them as it reads code (review
/// 2026-12-02: `#include <a/*b.h>` hid the lines after it from every
/// scan). The kernel is compiled every time.
pub(in crate::canon) fn misread_header_name(line: &[u8]) -> Option<String> {
    // Only a directive that names a file, or a conditional that may ask for
    // one, has a header name: most (`#pragma`, `#define`) are passed by
    // their first word.
    let rest = line
        .strip_prefix(b"#")
        .or_else(|| line.strip_prefix(b"%:"))
        .unwrap_or(line)
        .trim_ascii_start();
    let word = rest
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(rest, |n| &rest[..n]);
    let names_one = matches!(word, b"include" | b"include_next" | b"import" | b"embed");
    let asks = matches!(word, b"if" | b"elif") && line.windows(6).any(|w| w == b"__has_");
    // A word hidden behind a comment or a splice is read the long way.
    let hidden = rest.first().is_some_and(|b| matches!(b, b'/' | b'\\'));
    if !(names_one || asks || hidden) {
        return None;
    }
    for key in [&b"include"[..], b"import", b"embed", b"__has_"] {
        let mut from = 0;
        while let Some(p) = line[from..].windows(key.len()).position(|w| w == key) {
            let mut i = from + p + key.len();
            from = i;
            while line
                .get(i)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                i += 1;
            }
            while line
                .get(i)
                .is_some_and(|b| matches!(b, b' ' | b'\t' | b'('))
            {
                i += 1;
            }
            let close = match line.get(i) {
                Some(b'<') => b'>',
                Some(b'"') => b'"',
                _ => continue,
            };
            let name = &line[i + 1..];
            let end = name
                .iter()
                .position(|&b| b == close || b == b'\n' || b == b'\r')
                .unwrap_or(name.len());
            let name = &name[..end];
            if name.windows(2).any(|w| w == b"/*" || w == b"//") || name.contains(&b'\\') {
                return Some(format!(
                    "the header name `{}` holds a comment opener or a backslash, which \
                     the compiler reads as part of the name",
                    String::from_utf8_lossy(name)
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_replaced_and_raw_strings_kept() {
        assert_eq!(string_contents(br#"u8"a\x41\101\n""#), b"aAA\n");
        assert_eq!(string_contents(br#""\u00e9\"""#), "é\"".as_bytes());
        assert_eq!(string_contents(br#"R"d(.in\x)d""#), br".in\x");
        assert_eq!(string_contents(b"x"), b"");
    }

    #[test]
    fn splices_are_removed() {
        assert_eq!(unspliced(b"a\\\nb\\ \t\r\nc\\d"), b"abc\\d");
    }

    #[test]
    fn a_splice_across_a_form_feed_vertical_tab_or_nul_is_odd() {
        for gap in ["\x0c", "\x0b", "\0", " \x0c\t"] {
            let text = format!("/* c *\\{gap}\n/ int x;");
            assert!(super::odd_splice(text.as_bytes()).is_some(), "{gap:?}");
        }
        for fine in ["/* c *\\ \t\n/", "a \\n b", "\"\\x0c\"", "\\\x0cx\n"] {
            assert!(super::odd_splice(fine.as_bytes()).is_none(), "{fine:?}");
        }
    }

    #[test]
    fn a_header_name_holding_a_comment_opener_or_a_backslash_is_misread() {
        for line in [
            "#include <a/*b.h>",
            "#include \"a//b.h\"",
            "#if __has_include(\"q\\\" /* \")",
            "#  include_next <x\\y.h>",
            "%:embed \"d/*\"",
        ] {
            assert!(
                super::misread_header_name(line.as_bytes()).is_some(),
                "{line}"
            );
        }
        for line in [
            "#include <math.h> /* c */",
            "#include \"a/b.h\" // c",
            "#if __has_include(<x.h>) && 1 /* c */",
            "#define S \"a\\nb\"",
        ] {
            assert!(
                super::misread_header_name(line.as_bytes()).is_none(),
                "{line}"
            );
        }
    }
}
