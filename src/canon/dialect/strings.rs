//! String literals as the assembler receives them, for the asm check of
//! [`super`].

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
}
