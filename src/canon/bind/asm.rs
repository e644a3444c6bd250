//! `asm` operands: the C expressions in an `asm` statement are code.
//!
//! In `asm("mov.u32 %0, %%laneid;" : "=r"(lane))` the template and the
//! constraint strings are the assembler's, but the parenthesized expression
//! after a constraint is an ordinary C expression in the enclosing scope:
//! the template reaches it only by position (`%0`) or by its symbolic name
//! (`[name]`, which is not a C identifier), never by the variable's name. So
//! a name there is an occurrence like any other, and renaming it with its
//! declaration keeps what the statement means. Everything else in the
//! statement stays opaque: the strings' words, symbolic names in brackets,
//! clobbers and `asm goto` labels. An operand with anything but names,
//! numbers, member operators and plain punctuators (a call, which a macro
//! could stringize; a keyword; a brace) is opaque too, as is a name spelled
//! like a word of the template.

use super::keywords::{classify, opaque_construct};
use super::lexed::Token;
use super::tokens::{balanced, Adapted, Tok};
use super::Reason;
use crate::canon::lexer::{spelling, TokenKind};
use std::borrow::Cow;

/// Reads the tokens `raw[from..end]` of an `asm` statement's parenthesized
/// part (see the module docs).
pub(super) fn operands<'t>(
    a: &mut Adapted<'t>,
    text: &'t [u8],
    raw: &[Token],
    from: usize,
    end: usize,
) {
    let mut k = from;
    while k < end {
        let (kind, span, spliced) = (raw[k].kind, raw[k].range(), raw[k].spliced);
        a.opaque_token(text, kind, span, spliced, Reason::Asm);
        k += 1;
        let constraint = matches!(kind, TokenKind::Str | TokenKind::RawStr);
        if constraint && k < end && &text[raw[k].range()] == b"(" {
            let close = balanced(text, raw, k);
            if close <= end && plain(text, &raw[k + 1..close - 1], a.glsl) {
                let mut member = false;
                for (kind, span, spliced) in raw[k..close].iter().map(Token::parts) {
                    if *kind == TokenKind::Ident {
                        let b = &text[span.clone()];
                        let name = if *spliced {
                            spelling(b)
                        } else {
                            Cow::Borrowed(b)
                        };
                        let never = member.then_some(Reason::Member);
                        a.push_ident(span.start, name, never);
                    }
                    member = matches!(kind, TokenKind::Dot | TokenKind::Arrow);
                }
                k = close;
            }
        }
    }
}

/// Whether an operand's tokens are only names (no keyword, no call),
/// numbers, member operators and punctuators other than braces.
fn plain(text: &[u8], toks: &[Token], glsl: bool) -> bool {
    toks.iter()
        .map(Token::parts)
        .enumerate()
        .all(|(j, (kind, span, spliced))| {
            let b = &text[span.clone()];
            match kind {
                TokenKind::Ident => {
                    let name = if *spliced {
                        spelling(b)
                    } else {
                        Cow::Borrowed(b)
                    };
                    let called = toks
                        .get(j + 1)
                        .is_some_and(|t| t.kind == TokenKind::Punct && &text[t.range()] == b"(");
                    !called
                        && classify(&name, glsl, false) == Tok::Ident
                        && opaque_construct(&name, glsl).is_none()
                }
                TokenKind::Number | TokenKind::Dot | TokenKind::Arrow => true,
                TokenKind::Punct => !matches!(b, b"{" | b"}" | b";"),
                _ => false,
            }
        })
}
