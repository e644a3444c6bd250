//! Which names a paste (`##`) in a macro from outside the kernel may spell.
//!
//! A header's `#define CAT(a, b) a##b` makes `CAT(q, 1)` name `q1`, a token
//! the kernel never spells: the binder verifies a local `q1` (each of its
//! occurrences is a binding's), the expansion reads it, and renamed with the
//! rest it would no longer be read (review 2026-12-02, GPU F19b). The
//! arguments are no help: they are already kept as written (every argument
//! of a macro the backend reports is opaque to the binder), and `q1` is
//! none of them.
//!
//! What a paste joins are tokens that keep their spelling under renaming:
//! the kernel's own names that stand where no renaming reaches (an argument
//! of such a macro, a directive: those the binder keeps, for a reason of
//! its own), the words of macro bodies from outside (keywords among them),
//! and numbers. A pasted identifier starts with an identifier, so it starts
//! with one of those names or words, and is longer than it (else it is that
//! token, kept already). So, in a kernel that names a macro that may paste:
//!
//! * every name the kernel declares with a proper prefix among those pieces
//!   is kept as written;
//! * a kernel whose own name has one is keyed on its raw text: the renamer
//!   replaces its name by its kernel token, which a pasted name would not
//!   follow;
//! * another kernel declaring a name with such a prefix is not isolated
//!   from it (see [`super::isolation`]).
//!
//! Any other declared name is no paste's result, whatever the macros do
//! with their arguments: renaming it stays sound. Renderer kernels that
//! call `isnan` from `<math.h>` (whose other branches reach glibc's
//! `__MATH_TG`, which pastes) keep their other names renamed this way,
//! where giving the kernel up would lose them all.

/// Whether a paste may spell `name`: some proper prefix of it is a piece
/// (`is_piece`) a pasted identifier may start with.
pub fn may_be_pasted(name: &[u8], is_piece: impl Fn(&[u8]) -> bool) -> bool {
    (1..name.len()).any(|i| is_piece(&name[..i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_pasted_only_from_a_proper_prefix() {
        let piece = |p: &[u8]| p == b"q" || p == b"n12_w";
        assert!(may_be_pasted(b"q1", piece));
        assert!(may_be_pasted(b"n12_w_grad", piece));
        // The piece itself is a token, kept as written where it stands.
        assert!(!may_be_pasted(b"q", piece));
        assert!(!may_be_pasted(b"r1", piece));
        assert!(!may_be_pasted(b"", piece));
    }
}
