//! Neutral symbols: a kernel's function name replaced by a symbol derived
//! from the rest of its canonical text, so kernels that differ only in their
//! function name compile once (tinygrad renders one winner as `test` and again
//! under its real name).
//!
//! The replacement is made in the text that is compiled, not only in its key:
//! the answer's symbol is the neutral one. It is refused (the name stays)
//! unless the text defines a function of that name and every occurrence of
//! the name is a code identifier the renamer could rename: none in a
//! directive, a string, an attribute or after a member operator.

use crate::canon::lexer::{for_each_token_spliced, spelling, TokenKind};
use crate::canon::{CanonOptions, Renamer};

/// The placeholder the name is first replaced by; the neutral symbol is then
/// taken over the canonical text of that rendering.
const PLACEHOLDER: &str = "kcache_neutral_symbol";

/// The function the text defines, when it defines exactly one (in items the
/// grammar parses).
pub fn defined_function(text: &[u8]) -> Option<String> {
    let b = super::bind(text, None);
    match b.functions() {
        [one] => Some(String::from_utf8_lossy(one).into_owned()),
        _ => None,
    }
}

/// `text` with the code occurrences of the identifier `name` replaced by
/// `to`, or `None` when some occurrence is not a plain code identifier (it
/// stands in a directive, string, attribute or comment, or after a member
/// operator) or the text defines no function `name`.
pub fn replace_function_name(text: &[u8], name: &str, to: &str) -> Option<Vec<u8>> {
    let b = super::bind(text, None);
    if !b.functions().iter().any(|f| **f == *name.as_bytes()) {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut after_member = false;
    let mut refused = false;
    let contains = |s: &[u8]| s.windows(name.len()).any(|w| w == name.as_bytes());
    for_each_token_spliced(text, |kind, span, spliced| {
        let bytes = &text[span.clone()];
        match kind {
            TokenKind::Ident => {
                let spelled = if spliced {
                    spelling(bytes)
                } else {
                    bytes.into()
                };
                if *spelled == *name.as_bytes() {
                    if after_member {
                        refused = true;
                    }
                    out.extend_from_slice(&text[copied..span.start]);
                    out.extend_from_slice(to.as_bytes());
                    copied = span.end;
                }
                after_member = false;
            }
            TokenKind::Whitespace => {}
            k if k.is_comment() => refused |= contains(bytes),
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => after_member = true,
            _ => {
                refused |= contains(bytes);
                after_member = false;
            }
        }
    });
    if refused {
        return None;
    }
    out.extend_from_slice(&text[copied..]);
    Some(out)
}

/// The neutral symbol of a kernel whose function is `name`, and the text
/// with it in place; `None` when the name cannot be replaced soundly (see
/// [`replace_function_name`]). `options` are the kernel's renaming options
/// (its `kernel_name` is ignored): the symbol is a digest of the canonical
/// text they give, so two kernels share it exactly when their canonical texts
/// agree up to the function's name.
pub fn neutral_symbol(
    text: &[u8],
    name: &str,
    options: &CanonOptions,
) -> Option<(String, Vec<u8>)> {
    // The replacement must be a fresh name, or it would merge two names.
    let fresh = |s: &str| !text.windows(s.len()).any(|w| w == s.as_bytes());
    if !fresh(PLACEHOLDER) {
        return None;
    }
    let placeholder = replace_function_name(text, name, PLACEHOLDER)?;
    let canon = Renamer::new(&CanonOptions {
        kernel_name: Some(PLACEHOLDER.into()),
        ..options.clone()
    })
    .canonical_text(&placeholder);
    let digest = blake3::hash(&canon);
    let symbol = format!("kc_{}", &digest.to_hex()[..16]);
    if !fresh(&symbol) {
        return None;
    }
    let text = replace_function_name(text, name, &symbol)?;
    Some((symbol, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_differing_only_in_their_name_share_a_neutral_symbol() {
        let o = CanonOptions {
            infer: true,
            ..CanonOptions::default()
        };
        let a = b"__kernel void test(__global float* x) { x[0] = 1.0f; }";
        let b = b"__kernel void r_32_4(__global float* data0) { data0[0] = 1.0f; }";
        let (sa, ta) = neutral_symbol(a, "test", &o).unwrap();
        let (sb, _) = neutral_symbol(b, "r_32_4", &o).unwrap();
        assert_eq!(sa, sb);
        assert!(String::from_utf8(ta)
            .unwrap()
            .contains(&format!("void {sa}(")));
        let c = b"__kernel void test(__global float* x) { x[0] = 2.0f; }";
        assert_ne!(neutral_symbol(c, "test", &o).unwrap().0, sa);
    }

    #[test]
    fn a_name_that_stands_outside_code_is_not_neutralized() {
        let o = CanonOptions::default();
        for text in [
            "#define K test\nvoid test(float* x) { x[0] = 1; }",
            "void test(float* x) { printf(\"test\"); }",
            "void test(float* x) { x->test = 1; }",
            "void other(float* x) { x[0] = 1; }",
            "void test(float* kcache_neutral_symbol) { kcache_neutral_symbol[0] = 1; }",
        ] {
            assert_eq!(neutral_symbol(text.as_bytes(), "test", &o), None, "{text}");
        }
    }

    #[test]
    fn the_only_defined_function_names_the_kernel() {
        assert_eq!(
            defined_function(b"__device__ float sq(float v);\n__global__ void add(float* a) { a[0] = sq(a[0]); }").as_deref(),
            Some("add")
        );
        assert_eq!(defined_function(b"void a() {}\nvoid b() {}"), None);
    }
}
