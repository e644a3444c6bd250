//! Expression runs as single terminals: fewer tokens for the LR parser.
//!
//! Most of a kernel is expressions, which the grammar reads as balanced token
//! runs (`Tails`, `Inners`, `Anys`) recording nothing: a token costs the
//! parser a shift and a reduction and tells the binder nothing. So before
//! parsing, two kinds of run become one `group` terminal spanning them:
//!
//! * what follows an `=` up to the `,`, `;`, `:` or closing bracket that ends
//!   it (an initializer, or the right side of an assignment);
//! * a whole expression statement after `;`, `{`, or a `}` that closes a
//!   block (one opened after `;`, a brace, `)`, a condition, `else`, `do` or
//!   a label): a run that starts like an expression (not with a specifier, a
//!   keyword or a brace) and ends at its `;`. After the `}` of a tag body or
//!   an interface block a declarator follows, which a `group` is not;
//! * the third clause of a `for` head: what follows the second `;` at the
//!   top level of the parentheses after `for`, up to the `)` closing them.
//!
//! Why this changes no parse. A run is collapsed only when every token in it
//! is one every balanced-run rule accepts (at its top level: names, literals,
//! operators, member operators, `*`, `&`, `=`, specifiers and qualifiers,
//! `...`, and for a statement `,`; inside its brackets also `:`), its
//! brackets match, and it holds no brace, no tag keyword (`struct`, `enum`:
//! their bodies and tags are recorded) and no statement keyword. Its first
//! token is one an `Atom` starts with (or, after `=`, a type name, as an
//! `Initializer` may). A run of such tokens derives from `Tails`, `Inners`
//! or `Anys` exactly when the one `group` token does, wherever the run
//! stands: in an initializer (`Atom Tails` or `"typename" Tails`), in a
//! statement (`Atom Inners ";"`, which no declaration matches, since a
//! declaration starts with a specifier), inside brackets or a brace run
//! (which accept every such token). In a `for` head, no production puts a
//! `;` at the top level of its parentheses but the head's own two (a `Decl`
//! ends with the first; initializers, declarators and `Inners` hold none
//! outside brackets), so in any parse what follows the second is the last
//! `Inners ")"`; when the brackets before it do not nest, no parse exists
//! with or without the collapse. Nothing inside a run is recorded by an
//! action, so the sink is the same; the identifiers in it are judged from the
//! adapter's list of occurrences, which this does not touch. A run that meets
//! anything else is left as it is.

use super::tokens::Tok;

/// Whether `t` may stand at a run's top level (`statement`: also `,`).
fn top(t: Tok, statement: bool) -> bool {
    matches!(
        t,
        Tok::Group
            | Tok::Ident
            | Tok::Lit
            | Tok::Op
            | Tok::Member
            | Tok::Star
            | Tok::Amp
            | Tok::Assign
            | Tok::TypeName
            | Tok::Qual
            | Tok::Space
            | Tok::Storage
            | Tok::Ellipsis
    ) || statement && t == Tok::Comma
}

/// Whether `t` may stand inside a run's brackets.
fn inner(t: Tok) -> bool {
    top(t, true) || t == Tok::Colon
}

/// Whether a run may start with `t` (`after_assign`: an initializer may
/// start with a type name, a statement may not).
fn starts(t: Tok, after_assign: bool) -> bool {
    matches!(
        t,
        Tok::Group
            | Tok::Ident
            | Tok::Lit
            | Tok::Op
            | Tok::Member
            | Tok::Star
            | Tok::Amp
            | Tok::Assign
            | Tok::LParen
            | Tok::LBracket
    ) || after_assign && t == Tok::TypeName
}

/// The end (exclusive) of the run starting at `toks[from]`, if it is one
/// that may be collapsed: it ends before a top-level `;` (a statement), or
/// before a top-level `,`, `;`, `:` or closing bracket (after `=`).
fn run_end(
    toks: &[(u32, Tok, u32)],
    from: usize,
    statement: bool,
    open: &mut Vec<Tok>,
) -> Option<usize> {
    if !starts(toks.get(from)?.1, !statement) {
        return None;
    }
    run_to(toks, from, statement, false, open)
}

/// The end of the run from `toks[from]` as [`run_end`] finds it, or, when
/// `for_tail` is set, before the `)` that closes the brackets it stands in
/// (and at nothing else). `open`: room for the brackets open in the run
/// (one buffer for every run of a text).
fn run_to(
    toks: &[(u32, Tok, u32)],
    from: usize,
    statement: bool,
    for_tail: bool,
    open: &mut Vec<Tok>,
) -> Option<usize> {
    open.clear();
    for (i, &(_, t, _)) in toks.iter().enumerate().skip(from) {
        match t {
            Tok::LParen | Tok::LBracket => open.push(t),
            Tok::RParen | Tok::RBracket if !open.is_empty() => {
                let want = if t == Tok::RParen {
                    Tok::LParen
                } else {
                    Tok::LBracket
                };
                if open.pop() != Some(want) {
                    return None;
                }
            }
            _ if !open.is_empty() => {
                if !inner(t) {
                    return None;
                }
            }
            _ if top(t, statement) => {}
            Tok::RParen if for_tail => return Some(i),
            _ if for_tail => return None,
            Tok::Semi => return Some(i),
            Tok::Comma | Tok::Colon | Tok::RParen | Tok::RBracket | Tok::RBrace if !statement => {
                return Some(i)
            }
            _ => return None,
        }
    }
    None
}

/// Replaces each collapsible run of `toks` by one `group` terminal (see the
/// module docs).
pub fn collapse(mut toks: Vec<(u32, Tok, u32)>) -> Vec<(u32, Tok, u32)> {
    // In place: a run's tokens are read before its group is written, and the
    // writing never passes the reading (one large vector less per text).
    let mut w = 0;
    let mut emit = |toks: &mut Vec<(u32, Tok, u32)>, t| {
        toks[w] = t;
        w += 1;
    };
    // The token read before the current one.
    let mut prev: Option<Tok> = None;
    // Per open brace: whether it opens a block (a compound statement or a
    // function body) rather than a tag body or an initializer, after whose
    // `}` a declarator may follow (`struct s { ... } x[2];`).
    let mut blocks: Vec<bool> = Vec::new();
    // Per open bracket of any kind: how many `;` stand at its top level when
    // it is the parenthesis of a `for` head, else `None`.
    let mut nest: Vec<Option<u8>> = Vec::new();
    let mut open: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let before = prev;
        prev = Some(t.1);
        emit(&mut toks, t);
        i += 1;
        match t.1 {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                nest.push((t.1 == Tok::LParen && before == Some(Tok::For)).then_some(0))
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                nest.pop();
            }
            _ => {}
        }
        let statement = match t.1 {
            Tok::Semi if matches!(nest.last(), Some(Some(_))) => {
                if let Some(Some(n)) = nest.last_mut() {
                    *n = n.saturating_add(1);
                    if *n == 2 && toks.get(i).is_some_and(|t| starts(t.1, false)) {
                        if let Some(end) = run_to(&toks, i, true, true, &mut open) {
                            if end > i + 1 {
                                let group = (toks[i].0, Tok::Group, toks[end - 1].2);
                                prev = Some(toks[end - 1].1);
                                emit(&mut toks, group);
                                i = end;
                                continue;
                            }
                        }
                    }
                }
                true
            }
            Tok::Semi => true,
            Tok::LBrace => {
                blocks.push(matches!(
                    before,
                    None | Some(
                        Tok::Semi
                            | Tok::LBrace
                            | Tok::RBrace
                            | Tok::RParen
                            | Tok::Cond
                            | Tok::Else
                            | Tok::Do
                            | Tok::Colon
                    )
                ));
                true
            }
            Tok::RBrace if blocks.pop().unwrap_or(false) => true,
            Tok::Assign => false,
            _ => continue,
        };
        if let Some(end) = run_end(&toks, i, statement, &mut open) {
            if end > i + 1 {
                let group = (toks[i].0, Tok::Group, toks[end - 1].2);
                prev = Some(toks[end - 1].1);
                emit(&mut toks, group);
                i = end;
            }
        }
    }
    toks.truncate(w);
    toks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(ts: &[Tok]) -> Vec<(u32, Tok, u32)> {
        ts.iter()
            .enumerate()
            .map(|(i, &t)| (i as u32, t, i as u32 + 1))
            .collect()
    }

    fn kinds(v: &[(u32, Tok, u32)]) -> Vec<Tok> {
        v.iter().map(|t| t.1).collect()
    }

    #[test]
    fn an_initializer_becomes_one_group_spanning_it() {
        use Tok::*;
        // float v = a [..] * b;
        let v = collapse(toks(&[
            TypeName, Ident, Assign, Ident, Group, Star, Ident, Semi,
        ]));
        assert_eq!(kinds(&v), [TypeName, Ident, Assign, Group, Semi]);
        assert_eq!((v[3].0, v[3].2), (3, 7));
    }

    #[test]
    fn an_expression_statement_becomes_one_group() {
        use Tok::*;
        let v = collapse(toks(&[
            LBrace, Ident, Op, Ident, LParen, Ident, RParen, Semi, RBrace,
        ]));
        assert_eq!(kinds(&v), [LBrace, Group, Semi, RBrace]);
    }

    #[test]
    fn the_third_clause_of_a_for_head_becomes_one_group() {
        use Tok::*;
        // for (int i = 0; i < n; ++i) { }
        let v = collapse(toks(&[
            For, LParen, TypeName, Ident, Assign, Lit, Semi, Ident, Op, Ident, Semi, Op, Op, Ident,
            RParen, LBrace, RBrace,
        ]));
        assert_eq!(
            kinds(&v),
            [
                For, LParen, TypeName, Ident, Assign, Lit, Semi, Group, Semi, Group, RParen,
                LBrace, RBrace
            ]
        );
        assert_eq!((v[9].0, v[9].2), (11, 14));
    }

    #[test]
    fn a_for_head_with_a_third_top_level_semicolon_keeps_its_tail() {
        use Tok::*;
        // for (; a; b c; d) : not a head the grammar accepts, left to it.
        for ts in [
            vec![
                For, LParen, Semi, Ident, Semi, Ident, Ident, Semi, Ident, RParen,
            ],
            // A `;` inside braces is not at the head's top level.
            vec![
                For, LParen, LBrace, Semi, Semi, RBrace, Semi, Op, Ident, RParen,
            ],
        ] {
            let v = collapse(toks(&ts));
            assert!(
                !kinds(&v).windows(2).any(|w| w == [Group, RParen]),
                "{:?}",
                kinds(&v)
            );
        }
    }

    #[test]
    fn runs_with_braces_tags_keywords_or_labels_are_left_alone() {
        use Tok::*;
        for ts in [
            // x = { 1 };  (a brace)
            vec![Semi, Ident, Assign, LBrace, Lit, RBrace, Semi],
            // x = (struct s*) p;  (a tag)
            vec![
                Semi, Ident, Assign, LParen, Struct, Ident, Star, RParen, Ident, Semi,
            ],
            // lbl: x;  (a label's colon)
            vec![Semi, Ident, Colon, Ident, Semi],
            // a declaration starts with a specifier.
            vec![Semi, TypeName, Ident, Semi],
            // mismatched brackets: the parser must see them.
            vec![Semi, Ident, LParen, Ident, RBracket, Semi],
            // a statement keyword.
            vec![Semi, Ident, Op, Return, Semi],
            // a declarator after a tag body, or an interface block's instance.
            vec![Struct, Ident, LBrace, RBrace, Ident, Group, Semi],
            vec![Ident, LBrace, RBrace, Ident, Group, Semi],
        ] {
            let v = collapse(toks(&ts));
            assert_eq!(kinds(&v), ts, "{ts:?}");
        }
    }
}
