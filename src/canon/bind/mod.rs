//! Verified binding: which names a kernel text binds, shown by parsing it.
//!
//! [`bind`] lexes the text with [`crate::canon::lexer`] (through the token
//! adapter in [`tokens`]), cuts it into top-level items, parses each with the
//! island grammar `grammar/kernel.lalrpop` (declarations exact, expressions as
//! balanced token runs), and resolves every identifier occurrence against the
//! declarations whose scope holds it: from the end of a declarator to the end
//! of its block (parameters: over the function body; labels: over the whole
//! function; a `for`-init declaration: over the `for`).
//!
//! A name is *verified* when every occurrence of it in code is within the
//! scope of a declaration of it in the text that binds (a block-scope object,
//! a parameter, a label, a GLSL anonymous-block member), and it never stands
//! where a renaming could not follow it or something outside the text may
//! name it: in a directive (so a name the text `#define`s is never verified),
//! an attribute, `asm`, `_Pragma`, an argument of a macro whose body may
//! stringize or paste it, after a member operator, as a struct, union or
//! enum tag or inside such a body, in an item the grammar could not parse,
//! declared with linkage (file scope, `extern`, a function) or as a typedef,
//! or declared between conditional directives.
//!
//! Why uniform renaming of verified names is sound: each such name is
//! replaced at every occurrence by one fresh name, and every occurrence
//! refers to a declaration inside the text; a declaration shadows any outer
//! meaning of its name throughout its scope, so the substitution preserves
//! what every occurrence refers to. A construct the grammar reads as a
//! balanced run may hide a declaration (a statement expression, a lambda):
//! that declaration is in the text too, so the uniform renaming still maps it
//! and its uses alike. Anything the grammar cannot parse keeps its names as
//! written: not renaming is always sound.

pub mod neutral;
pub mod sink;
pub mod tokens;

#[allow(clippy::all, missing_docs, unused_parens, dead_code)]
mod kernel {
    include!(concat!(env!("OUT_DIR"), "/kernel.rs"));
}

use rustc_hash::FxHashMap;
use sink::{DeclKind, Sink, PENDING};
use std::borrow::Cow;
use std::cell::RefCell;
use tokens::Tok;

/// Why a name is left as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It stands in a preprocessor directive (a macro the text defines, a
    /// name a macro body uses, a `#pragma` operand) or `_Pragma`.
    Directive,
    /// It stands in an attribute.
    Attribute,
    /// It stands in an `asm` statement or operand.
    Asm,
    /// It stands in an argument of a macro whose body may stringize or
    /// paste it.
    MacroArgument,
    /// It stands after `.`, `->` or `::`.
    Member,
    /// It is a tag, or stands inside a struct, union or enum body.
    Tag,
    /// It stands in an item the grammar does not parse.
    Unparsed,
    /// Some occurrence refers to no declaration in the text.
    Free,
    /// It is declared with linkage (file scope, `extern`, a function).
    Linkage,
    /// It is declared as a typedef name.
    Typedef,
    /// It is declared between conditional directives.
    Conditional,
    /// It is a macro name where the kernel is compiled.
    Macro,
    /// The whole text is given up (see [`Binding::whole`]).
    Whole,
}

impl Reason {
    /// The reason in words.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Directive => "stands in a preprocessor directive",
            Reason::Attribute => "stands in an attribute",
            Reason::Asm => "stands in an asm statement",
            Reason::MacroArgument => {
                "stands in an argument of a macro whose body is not known to leave it alone"
            }
            Reason::Member => "stands after a member operator",
            Reason::Tag => "is a tag or stands in a struct, union or enum body",
            Reason::Unparsed => "stands in code the grammar does not parse",
            Reason::Free => "has an occurrence that refers to no declaration in the kernel",
            Reason::Linkage => "is declared with linkage",
            Reason::Typedef => "is a typedef name",
            Reason::Conditional => "is declared between conditional directives",
            Reason::Macro => "is a macro name",
            Reason::Whole => "the kernel is given up",
        }
    }
}

/// What [`bind`] found.
#[derive(Debug, Default)]
pub struct Binding<'t> {
    /// Each name met in code: `Ok` when verified, else why not.
    verdicts: FxHashMap<Cow<'t, [u8]>, Result<(), Reason>>,
    /// Names declared by a binding declaration, in order of first declaration.
    declared: Vec<Cow<'t, [u8]>>,
    /// Byte ranges of the top-level items the grammar did not parse.
    unparsed: Vec<(usize, usize)>,
    /// Names of the functions the text defines (in items that parsed).
    functions: Vec<Cow<'t, [u8]>>,
    /// Why nothing in the text is verified, if nothing is.
    pub whole: Option<String>,
}

impl<'t> Binding<'t> {
    /// Whether `name` may be renamed: `Ok`, or why not. A name that never
    /// stands in code (only in comments) may: renaming it changes no code.
    pub fn verdict(&self, name: &[u8]) -> Result<(), Reason> {
        if self.whole.is_some() {
            return Err(Reason::Whole);
        }
        self.verdicts.get(name).copied().unwrap_or(Ok(()))
    }

    /// Byte ranges `[start, end)` of the top-level items the grammar did
    /// not parse (their names are kept as written).
    pub fn unparsed(&self) -> &[(usize, usize)] {
        &self.unparsed
    }

    /// The names of the functions the text defines, in order (only those in
    /// items the grammar parsed).
    pub fn functions(&self) -> &[Cow<'t, [u8]>] {
        &self.functions
    }

    /// Whether a binding declaration in the text declares `name`.
    pub fn declares(&self, name: &[u8]) -> bool {
        self.declared.iter().any(|d| **d == *name)
    }

    /// Names a binding declaration in the text declares (parameters, locals,
    /// labels), verified or not, in order of first declaration.
    pub fn declared(&self) -> &[Cow<'t, [u8]>] {
        &self.declared
    }
}

/// Binds `text` (see the module docs). `macros`: names that are macros where
/// the kernel is compiled.
pub fn bind<'t>(text: &'t [u8], macros: Option<&crate::canon::MacroNames>) -> Binding<'t> {
    let a = tokens::adapt(text, macros);
    let mut binding = Binding {
        whole: a.whole.clone(),
        ..Binding::default()
    };
    if binding.whole.is_some() {
        return binding;
    }
    let sink = RefCell::new(Sink {
        glsl: a.glsl,
        ..Sink::default()
    });
    let parser = kernel::ItemParser::new();
    let mut unparsed: Vec<(usize, usize)> = Vec::new();
    for chunk in items(&a.toks) {
        let (nd, ns, nn, nf) = {
            let s = sink.borrow();
            (
                s.decls.len(),
                s.scopes.len(),
                s.never.len(),
                s.functions.len(),
            )
        };
        let toks = chunk.iter().map(|&(l, t, r)| Ok::<_, ()>((l, t, r)));
        if parser.parse(&sink, toks).is_err() {
            let mut s = sink.borrow_mut();
            s.decls.truncate(nd);
            s.scopes.truncate(ns);
            s.never.truncate(nn);
            s.functions.truncate(nf);
            unparsed.push((chunk[0].0, chunk[chunk.len() - 1].2));
        }
    }
    let mut sink = sink.into_inner();
    let mut k = 0;
    for &at in &sink.functions {
        while k < a.idents.len() && a.idents[k].at < at {
            k += 1;
        }
        if let Some(id) = a.idents.get(k).filter(|id| id.at == at) {
            binding.functions.push(id.name.clone());
        }
    }
    // The pre-pass's typedef guess must be what the grammar found.
    let mut parsed_typedefs: Vec<usize> = sink
        .decls
        .iter()
        .filter(|d| d.kind == DeclKind::Typedef)
        .map(|d| d.at)
        .collect();
    parsed_typedefs.sort_unstable();
    if parsed_typedefs != a.typedefs
        || sink
            .decls
            .iter()
            .any(|d| d.kind == DeclKind::Typedef && d.to == PENDING)
    {
        binding.whole = Some("its typedef names are not told apart from other names".into());
        return binding;
    }
    resolve_pending(&mut sink);
    judge(&a, &sink, &unparsed, &mut binding);
    binding.unparsed = unparsed;
    binding
}

/// Cuts the terminals into top-level items: each ends with a `;` outside
/// any bracket, or with the `}` closing a function body (a brace opened right
/// after a `)`).
fn items(toks: &[(usize, Tok, usize)]) -> Vec<&[(usize, Tok, usize)]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    let mut body = false;
    for (i, &(_, t, _)) in toks.iter().enumerate() {
        match t {
            Tok::LParen | Tok::LBracket => depth += 1,
            Tok::LBrace => {
                if depth == 0 {
                    body = i > start && toks[i - 1].1 == Tok::RParen;
                }
                depth += 1;
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                depth = depth.saturating_sub(1);
                if depth == 0 && t == Tok::RBrace && body {
                    out.push(&toks[start..=i]);
                    start = i + 1;
                    body = false;
                }
            }
            Tok::Semi if depth == 0 => {
                out.push(&toks[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < toks.len() {
        out.push(&toks[start..]);
    }
    out
}

/// Gives each block-scope declaration the end of the innermost scope that
/// holds it (scopes nest, so a sweep in position order finds it).
fn resolve_pending(sink: &mut Sink) {
    let mut scopes = sink.scopes.clone();
    scopes.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut order: Vec<usize> = (0..sink.decls.len())
        .filter(|&i| sink.decls[i].to == PENDING)
        .collect();
    order.sort_unstable_by_key(|&i| sink.decls[i].at);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    for i in order {
        let at = sink.decls[i].at;
        while next < scopes.len() && scopes[next].0 <= at {
            while stack.last().is_some_and(|s| s.1 <= scopes[next].0) {
                stack.pop();
            }
            stack.push(scopes[next]);
            next += 1;
        }
        while stack.last().is_some_and(|s| s.1 <= at) {
            stack.pop();
        }
        match stack.last() {
            Some(s) => sink.decls[i].to = s.1,
            None => sink.decls[i].kind = DeclKind::Linkage,
        }
    }
}

/// Whether `at` lies in one of `ranges` (sorted by start, non-overlapping
/// after [`merge`]).
fn within(ranges: &[(usize, usize)], at: usize) -> bool {
    let i = ranges.partition_point(|r| r.0 <= at);
    i > 0 && at < ranges[i - 1].1
}

/// Sorts and merges overlapping ranges.
fn merge(mut v: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
            _ => out.push(r),
        }
    }
    out
}

/// Every identifier occurrence against the declarations: a verdict per name.
fn judge<'t>(
    a: &tokens::Adapted<'t>,
    sink: &Sink,
    unparsed: &[(usize, usize)],
    b: &mut Binding<'t>,
) {
    let never = merge(sink.never.clone());
    let unparsed = merge(unparsed.to_vec());
    let conditional = merge(a.conditional.iter().map(|r| (r.start, r.end)).collect());
    // Declarations by the position of their name.
    let mut by_at: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, d) in sink.decls.iter().enumerate() {
        by_at.insert(d.at, i);
    }
    // Per name: the visible ranges of its binding declarations.
    let mut scopes: FxHashMap<&[u8], Vec<(usize, usize)>> = FxHashMap::default();
    let fail = |verdicts: &mut FxHashMap<Cow<'t, [u8]>, Result<(), Reason>>,
                name: &Cow<'t, [u8]>,
                reason: Reason| {
        match verdicts.get_mut(name.as_ref()) {
            Some(v @ Ok(())) => *v = Err(reason),
            Some(Err(_)) => {}
            None => {
                verdicts.insert(name.clone(), Err(reason));
            }
        }
    };
    // Opaque occurrences first, so theirs is the reason given.
    for (name, reason) in &a.opaque {
        fail(&mut b.verdicts, name, *reason);
    }
    // Then declarations.
    for id in &a.idents {
        let Some(&i) = by_at.get(&id.at) else {
            continue;
        };
        let d = sink.decls[i];
        match d.kind {
            DeclKind::Local | DeclKind::Param | DeclKind::Label => {
                if within(&conditional, d.at) {
                    fail(&mut b.verdicts, &id.name, Reason::Conditional);
                }
                if !scopes.contains_key(id.name.as_ref()) {
                    b.declared.push(id.name.clone());
                }
                scopes
                    .entry(id.name.as_ref())
                    .or_default()
                    .push((d.from, d.to));
            }
            DeclKind::Linkage => fail(&mut b.verdicts, &id.name, Reason::Linkage),
            DeclKind::Typedef => fail(&mut b.verdicts, &id.name, Reason::Typedef),
        }
    }
    // Then every occurrence.
    for id in &a.idents {
        let reason = if let Some(r) = id.never {
            Some(r)
        } else if within(&unparsed, id.at) {
            Some(Reason::Unparsed)
        } else if within(&never, id.at) {
            Some(Reason::Tag)
        } else if by_at.contains_key(&id.at) {
            None
        } else {
            let bound = scopes
                .get(id.name.as_ref())
                .is_some_and(|v| v.iter().any(|&(from, to)| from <= id.at && id.at < to));
            (!bound).then_some(Reason::Free)
        };
        match reason {
            Some(r) => fail(&mut b.verdicts, &id.name, r),
            None => {
                b.verdicts.entry(id.name.clone()).or_insert(Ok(()));
            }
        }
    }
}

#[cfg(test)]
mod tests;
