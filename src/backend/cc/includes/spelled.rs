//! What a file spells that makes a compile uncacheable, found by a plain
//! byte scan (comments included: too many findings never serve a wrong
//! binary, they only cache less).

/// The first of `__TIME__`, `__DATE__`, `__TIMESTAMP__` that `text` spells.
pub(crate) fn time_macro(text: &[u8]) -> Option<&'static str> {
    const TIME: [&str; 3] = ["__TIMESTAMP__", "__TIME__", "__DATE__"];
    let mut at = 0;
    while let Some(i) = text[at..].windows(2).position(|w| w == b"__") {
        let rest = &text[at + i..];
        if let Some(m) = TIME.iter().find(|m| rest.starts_with(m.as_bytes())) {
            return Some(m);
        }
        at += i + 2;
    }
    None
}

/// The assembler directive that reads a file (`.incbin`, `.include`) that
/// `text` spells anywhere, in any case: a header macro may hand it to a
/// kernel's `asm` (the kernel's own text is checked by `canon::dialect`).
/// Any spelling counts, comments included: too many never serve a wrong
/// binary, they only cache less.
pub(crate) fn assembler_file_read(text: &[u8]) -> Option<&'static str> {
    const READS: [&str; 2] = [".incbin", ".include"];
    let lower = text.to_ascii_lowercase();
    READS
        .into_iter()
        .find(|d| lower.windows(d.len()).any(|w| w == d.as_bytes()))
}
