//! Verified binding: which names a kernel text binds, shown by parsing it.
//!
//! [`bind`] lexes the text with [`crate::canon::lexer`] (through the token
//! adapter in [`tokens`]), cuts it into top-level items, parses each with the
//! island grammar `grammar/kernel.lalrpop` (declarations exact, expressions as
//! balanced token runs; a plain function definition by a hand-written descent
//! over the same productions, `stmts`, which leaves anything else to the LR
//! parser), and resolves every identifier occurrence against the
//! declarations whose scope holds it: from the end of a declarator to the end
//! of its block (parameters: over the function body; labels: over the whole
//! function, their own namespace, binding only the names after a `goto`; a
//! `for`-init declaration: over the `for`). The token buffers
//! (the lexing, the terminals, the identifier list) and the per-name and
//! per-declaration lists (the spellings and the table of their ids, the
//! verdicts, the orderings) are kept per thread from one text to the next
//! (`canon/scratch.rs`), so a call neither allocates them anew nor faults
//! them in again.
//!
//! A name is *verified* when every occurrence of it in code is within the
//! scope of a declaration of it in the text that binds (a block-scope object,
//! a parameter, a label, a GLSL anonymous-block member), and it never stands
//! where a renaming could not follow it or something outside the text may
//! name it: in a directive (so a name the text `#define`s is never verified;
//! a function-like macro's own parameters and a header name excepted), an
//! attribute, `asm` (but for its operands' C expressions, which are code),
//! `_Pragma`, an argument of a macro whose body may stringize it (one the
//! text defines with `#` or `%:` or whose body names such a macro, or one
//! the backend reports whose body is not seen), an argument of a macro that
//! may call another passed beside it (`APPLY(STR, x)`), or in parentheses
//! right after a macro call (its expansion may end in such a macro's name),
//! as a struct, union or enum tag or inside such a body, in an item the
//! grammar could not parse, declared with linkage (file scope, `extern`, a
//! function) or as a typedef, or declared between conditional directives. A
//! name after a member operator (`p->x`) is no occurrence of a binding and
//! counts neither way: renaming never reaches it. A name right before a
//! label-like `:` in an initializer's braces (GNU's `{ a: 1 }`) may name a
//! member, and is kept as written everywhere. A name right before `::`
//! (`cfg::s`, `Color::Red`) names a namespace or a type, never a local, so a
//! local spelled like it is no binding it may follow: it is kept as written
//! everywhere. Nor is a member's own name
//! in a plain struct body, which the renamer keeps as written
//! ([`Binding::member_declarators`]). A macro the text
//! defines with `##`, a block-scope typedef or a lexical error gives up the
//! whole text ([`Binding::whole`]).
//!
//! Not seen here: the bodies of macros from headers, options or the
//! compiler. A header macro whose body names a local of the kernel (an
//! object-like `#define ACC acc`) would follow it under renaming only if the
//! backend reported its body's words too; [`crate::canon::MacroNames`] holds
//! names only.
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

mod asm;
mod designators;
mod directives;
mod groups;
mod keywords;
mod lexed;
mod members;
pub mod neutral;
mod order;
mod runs;
mod short;
pub mod sink;
mod spelled;
mod stmts;
pub mod tokens;
mod typedefs;

#[allow(clippy::all, missing_docs, unused_parens, dead_code)]
mod kernel {
    include!(concat!(env!("OUT_DIR"), "/kernel.rs"));
}

use crate::canon::scratch;
use crate::canon::spellings::Spellings;
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
    /// It stands right before `::`, where C++ looks a name up among
    /// namespaces and types, never a local: `cfg::s` is no use of a local
    /// `cfg` (review 2026-12-02, GPU F11).
    Scope,
    /// It stands right before a `:` inside an initializer's braces, where
    /// it may name a member without `.` (GNU's `{ a: 1 }`; see
    /// `bind/designators.rs`).
    Designator,
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
    /// The language reserves it (a GLSL keyword, type or `gl_` name): a
    /// declaration of it does not compile.
    Reserved,
    /// It is spelled with `$`, a universal character name or a byte above
    /// ASCII, which some compilers take for a name and others refuse (NVRTC
    /// refuses `a$b` and `café`): renamed, a kernel that fails to compile
    /// would share the key of one that compiles.
    Spelling,
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
            Reason::Scope => "stands before `::`, where no local is looked up",
            Reason::Designator => "stands before `:` in an initializer, where it may name a member",
            Reason::Tag => "is a tag or stands in a struct, union or enum body",
            Reason::Unparsed => "stands in code the grammar does not parse",
            Reason::Free => "has an occurrence that refers to no declaration in the kernel",
            Reason::Linkage => "is declared with linkage",
            Reason::Typedef => "is a typedef name",
            Reason::Conditional => "is declared between conditional directives",
            Reason::Macro => "is a macro name",
            Reason::Whole => "the kernel is given up",
            Reason::Reserved => "is a word the language reserves",
            Reason::Spelling => {
                "is spelled with `$`, a UCN or a non-ASCII byte, which some compilers refuse"
            }
        }
    }
}

/// What [`bind`] found.
#[derive(Debug, Default)]
pub struct Binding<'t> {
    /// Per id: `None` when the name never stands in code, `Ok` when verified,
    /// else why not.
    verdicts: Vec<Option<Result<(), Reason>>>,
    /// Names declared by a binding declaration, in order of first declaration.
    declared: Vec<Cow<'t, [u8]>>,
    /// Per id: whether [`Binding::declared`] holds it.
    is_declared: Vec<bool>,
    /// Byte ranges of the top-level items the grammar did not parse.
    unparsed: Vec<(usize, usize)>,
    /// Names of the functions the text defines (in items that parsed).
    functions: Vec<Cow<'t, [u8]>>,
    /// Every token but blanks, comments included (see [`TokenList`]).
    tokens: TokenList,
    /// The id of each identifier token in [`Binding::tokens`], in order.
    code_ids: Vec<u32>,
    /// Each name's spelling (line splices removed), by id, and the id of
    /// each name met (in code, a directive or an opaque region).
    names: Spellings<'t>,
    /// Where each member declarator of a plain struct body starts (sorted):
    /// see [`Binding::member_declarators`].
    members: Vec<usize>,
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
        match self.names.id(name) {
            Some(id) => self.verdicts[id as usize].unwrap_or(Ok(())),
            None => Ok(()),
        }
    }

    /// [`Binding::verdict`] by id (see [`Binding::code_ids`]).
    #[inline]
    pub fn verdict_id(&self, id: u32) -> Result<(), Reason> {
        if self.whole.is_some() {
            return Err(Reason::Whole);
        }
        self.verdicts
            .get(id as usize)
            .copied()
            .flatten()
            .unwrap_or(Ok(()))
    }

    /// [`Binding::declares`] by id.
    #[inline]
    pub fn declares_id(&self, id: u32) -> bool {
        self.is_declared.get(id as usize) == Some(&true)
    }

    /// The id of `name`, if the text names it outside comments.
    pub fn id(&self, name: &[u8]) -> Option<u32> {
        self.names.id(name)
    }

    /// The spelling (line splices removed) of the name whose id is `id`
    /// (see [`Binding::code_ids`]); `id` must be below
    /// [`Binding::name_count`].
    pub fn name(&self, id: u32) -> &Cow<'t, [u8]> {
        &self.names[id as usize]
    }

    /// How many distinct names the text has outside comments (ids run
    /// below this).
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// Where each struct or union member's name stands in a plain body
    /// (sorted byte offsets): a name in the struct's own namespace, which
    /// the renamer keeps as written, like a name after a member operator.
    pub fn member_declarators(&self) -> &[usize] {
        &self.members
    }

    /// The id of every identifier token in [`Binding::tokens`], in order:
    /// the `k`th identifier token's spelling (splices removed) has id
    /// `code_ids()[k]`.
    pub fn code_ids(&self) -> &[u32] {
        &self.code_ids
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
        self.names
            .id(name)
            .is_some_and(|id| self.is_declared.get(id as usize) == Some(&true))
    }

    /// Names a binding declaration in the text declares (parameters, locals,
    /// labels), verified or not, in order of first declaration.
    pub fn declared(&self) -> &[Cow<'t, [u8]>] {
        &self.declared
    }

    /// The text's tokens as [`crate::canon::lexer::for_each_token_spliced`]
    /// gives them, blanks left out: the lexing the binder did, for the
    /// renamer to reuse. None for a text longer than [`MAX_TEXT`] (given
    /// up whole, see [`Binding::whole`]). A view: the comments are merged
    /// into the code as it is read ([`Tokens::iter`]).
    pub fn tokens(&self) -> Tokens<'_> {
        self.tokens.tokens()
    }
}

impl Drop for Binding<'_> {
    /// Keeps the token buffers and the per-name lists for the thread's next
    /// text (the binder's per-thread spares; the spellings keep their own).
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.code_ids));
        scratch::give(std::mem::take(&mut self.verdicts));
        scratch::give(std::mem::take(&mut self.is_declared));
        scratch::give_spellings(std::mem::take(&mut self.declared));
    }
}

pub use lexed::{lex, Lexed, Token, TokenIter, TokenList, Tokens, MAX_TEXT};

/// Binds `text` (see the module docs). `macros`: names that are macros where
/// the kernel is compiled.
pub fn bind<'t>(text: &'t [u8], macros: Option<&crate::canon::MacroNames>) -> Binding<'t> {
    bind_lexed(text, lex(text), macros)
}

/// [`bind`] over the tokens [`lex`] gave for `text`.
pub fn bind_lexed<'t>(
    text: &'t [u8],
    tokens: Lexed,
    macros: Option<&crate::canon::MacroNames>,
) -> Binding<'t> {
    bind_with(text, tokens, macros, true, true)
}

/// [`bind_lexed`], with expression runs collapsed before the LR parser reads
/// an item (see [`runs`]) or not, and with function definitions parsed by
/// hand where they can be (`fast`, see [`stmts`]) or not: the same binding
/// every way, as tests check.
fn bind_with<'t>(
    text: &'t [u8],
    tokens: Lexed,
    macros: Option<&crate::canon::MacroNames>,
    collapse: bool,
    fast: bool,
) -> Binding<'t> {
    let mut a = tokens::adapt(text, tokens, macros);
    // Given up after the parse, which still finds the functions defined.
    let refused = keywords::keyword_macro(macros).or(a.refused.take());
    let members = members::exempt(&mut a, macros);
    debug_assert_eq!(a.code_ids.len(), a.all.idents());
    let mut binding = Binding::default();
    binding.whole = a.whole.clone();
    binding.tokens = std::mem::take(&mut a.all);
    binding.code_ids = std::mem::take(&mut a.code_ids);
    if binding.whole.is_some() {
        binding.names = std::mem::take(&mut a.names);
        a.give_back();
        return binding;
    }
    // Not sized up front: that saved the regrowing's copies but moved the
    // heap so that glibc trimmed and refaulted it after every large text.
    // The thread's kept lists instead (`Sink::new`).
    let sink = RefCell::new(Sink::new(a.glsl));
    let parser = kernel::ItemParser::new();
    let mut unparsed: Vec<(usize, usize)> = Vec::new();
    let mut closers = Vec::new();
    // The item being handed to the LR parser, collapsed (one buffer).
    let mut collapsed: Vec<(u32, Tok, u32)> = Vec::new();
    // Items are cut before collapsing: a collapsed run holds no `;` and no
    // brace, and ends before none, so the cuts are where they were after.
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
        let roll_back = |sink: &RefCell<Sink>| {
            let mut s = sink.borrow_mut();
            s.decls.truncate(nd);
            s.scopes.truncate(ns);
            s.never.truncate(nn);
            s.functions.truncate(nf);
            s.declarators.clear();
        };
        if fast {
            if stmts::function(chunk, &mut sink.borrow_mut(), &mut closers) {
                continue;
            }
            roll_back(&sink);
        }
        let item = if collapse {
            collapsed.clear();
            collapsed.extend_from_slice(chunk);
            collapsed = runs::collapse(std::mem::take(&mut collapsed));
            &collapsed[..]
        } else {
            chunk
        };
        let toks = item
            .iter()
            .map(|&(l, t, r)| Ok::<_, ()>((l as usize, t, r as usize)));
        if parser.parse(&sink, toks).is_err() {
            roll_back(&sink);
            unparsed.push((chunk[0].0 as usize, chunk[chunk.len() - 1].2 as usize));
        }
    }
    let mut sink = sink.into_inner();
    let mut k = 0;
    for &at in &sink.functions {
        while k < a.idents.len() && (a.idents[k].at as usize) < at {
            k += 1;
        }
        if let Some(id) = a.idents.get(k).filter(|id| id.at as usize == at) {
            binding.functions.push(a.names[id.id as usize].clone());
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
        binding.names = std::mem::take(&mut a.names);
        a.give_back();
        return binding;
    }
    // One ordering of the declarations serves both sweeps.
    let by_at = by_position(&sink.decls);
    resolve_pending(&mut sink, &by_at);
    judge(&mut a, &sink, &by_at, &unparsed, &mut binding);
    binding.whole = binding.whole.take().or(refused);
    scratch::give(by_at);
    binding.unparsed = unparsed;
    binding.names = std::mem::take(&mut a.names);
    binding.members = members;
    a.give_back();
    binding
}

/// Cuts the terminals into top-level items: each ends with a `;` outside
/// any bracket, or with the `}` closing a function body (a brace opened right
/// after a `)`).
fn items(toks: &[(u32, Tok, u32)]) -> Vec<&[(u32, Tok, u32)]> {
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
/// (`by_at`: [`by_position`] of the declarations.)
fn resolve_pending(sink: &mut Sink, by_at: &[usize]) {
    let scopes = outermost_first(&sink.scopes);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    for &i in by_at {
        if sink.decls[i].to != PENDING {
            continue;
        }
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
    scratch::give(scopes);
}

/// The indices of `decls` in order of position, those at one position in
/// the order they were recorded (a stable sort). Sorted as single integers
/// (the position above, the index below) when both fit in 32 bits: the
/// stable sort stays linear on their near-sorted order (a function's own
/// name is recorded after its body) and compares in one instruction.
fn by_position(decls: &[sink::Decl]) -> Vec<usize> {
    let fits = decls.len() <= u32::MAX as usize && decls.iter().all(|d| d.at <= u32::MAX as usize);
    if !fits {
        let mut order: Vec<usize> = (0..decls.len()).collect();
        order.sort_by_key(|&i| decls[i].at);
        return order;
    }
    // Both lists the thread's kept ones (see `scratch`).
    let mut keys: Vec<u64> = scratch::take(decls.len());
    keys.extend(
        decls
            .iter()
            .enumerate()
            .map(|(i, d)| (d.at as u64) << 32 | i as u64),
    );
    keys.sort();
    let mut order = scratch::take(keys.len());
    order.extend(keys.iter().map(|&k| (k as u32) as usize));
    scratch::give(keys);
    order
}

/// `scopes` by start, the longer first where two start together: without
/// sorting when they nest as a parse records them (see [`order`]), else
/// sorted as single integers when the offsets fit in 32 bits (start above,
/// end complemented below: the same order, compared in one instruction).
fn outermost_first(scopes: &[(usize, usize)]) -> Vec<(usize, usize)> {
    if let Some(v) = order::preorder(scopes) {
        debug_assert_eq!(v, sorted_outermost_first(scopes));
        return v;
    }
    sorted_outermost_first(scopes)
}

fn sorted_outermost_first(scopes: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let fits = scopes
        .iter()
        .all(|&(l, r)| l <= u32::MAX as usize && r <= u32::MAX as usize);
    if !fits {
        let mut v = scopes.to_vec();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        return v;
    }
    let mut keys: Vec<u64> = scopes
        .iter()
        .map(|&(l, r)| (l as u64) << 32 | (u32::MAX - r as u32) as u64)
        .collect();
    keys.sort_unstable();
    keys.iter()
        .map(|&k| ((k >> 32) as usize, (u32::MAX - k as u32) as usize))
        .collect()
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

/// A cursor over sorted, merged ranges, for positions met in order.
struct Ranges<'r> {
    ranges: &'r [(usize, usize)],
    next: usize,
}

impl Ranges<'_> {
    /// Whether `at` (no smaller than any position asked before) is inside.
    fn holds(&mut self, at: usize) -> bool {
        while self.next < self.ranges.len() && self.ranges[self.next].1 <= at {
            self.next += 1;
        }
        self.ranges.get(self.next).is_some_and(|r| r.0 <= at)
    }
}

/// Every identifier occurrence against the declarations: a verdict per name.
/// Identifiers come in position order, so the declarations and the ranges
/// are walked alongside them, and names are looked up by id: no hashing.
fn judge<'t>(
    a: &mut tokens::Adapted<'t>,
    sink: &Sink,
    by_at: &[usize],
    unparsed: &[(usize, usize)],
    b: &mut Binding<'t>,
) {
    let opaque = std::mem::take(&mut a.opaque);
    let opaque: Vec<(u32, Reason)> = opaque
        .into_iter()
        .map(|(name, r)| (a.intern(name), r))
        .collect();
    let n = a.names.len();
    // The per-name and per-declaration lists are the thread's kept ones
    // (see `scratch`): the binding's go back when it is dropped, the rest
    // at the end.
    let mut verdicts: Vec<Option<Result<(), Reason>>> = scratch::take(n);
    verdicts.resize(n, None);
    let fail = |v: &mut Vec<Option<Result<(), Reason>>>, id: u32, r: Reason| {
        let slot = &mut v[id as usize];
        if !matches!(slot, Some(Err(_))) {
            *slot = Some(Err(r));
        }
    };
    // Opaque occurrences first, so theirs is the reason given.
    for &(id, r) in &opaque {
        fail(&mut verdicts, id, r);
    }
    let conditional = merge(a.conditional.iter().map(|r| (r.start, r.end)).collect());
    // Then declarations, by walking them alongside the identifiers.
    // One entry at most per declaration: sized so neither regrows.
    let mut bound: Vec<(u32, usize, usize, bool)> = scratch::take(by_at.len());
    b.declared = scratch::take_spellings(by_at.len().min(n));
    let mut is_declared: Vec<bool> = scratch::take(n);
    is_declared.resize(n, false);
    let mut declaring_list: Vec<bool> = scratch::take(a.idents.len());
    declaring_list.resize(a.idents.len(), false);
    // Its length where the compiler sees it: no check per identifier.
    let declaring = &mut declaring_list[..a.idents.len()];
    let mut cond = Ranges {
        ranges: &conditional,
        next: 0,
    };
    // The `d`th declaration in position order, and where it stands (past
    // the last, `usize::MAX`: no identifier stands there).
    let mut d = 0;
    let position = |d: usize| by_at.get(d).map_or(usize::MAX, |&i| sink.decls[i].at);
    let mut next_at = position(0);
    for (k, id) in a.idents.iter().enumerate() {
        while next_at < id.at as usize {
            d += 1;
            next_at = position(d);
        }
        if next_at != id.at as usize {
            continue;
        }
        declaring[k] = true;
        let decl = &sink.decls[by_at[d]];
        match decl.kind {
            DeclKind::Local | DeclKind::Param | DeclKind::Label => {
                if cond.holds(decl.at) {
                    fail(&mut verdicts, id.id, Reason::Conditional);
                }
                let name = &a.names[id.id as usize];
                if a.glsl && keywords::is_glsl_reserved(name) {
                    fail(&mut verdicts, id.id, Reason::Reserved);
                } else if !keywords::is_ascii_word(name) {
                    fail(&mut verdicts, id.id, Reason::Spelling);
                }
                if !is_declared[id.id as usize] {
                    is_declared[id.id as usize] = true;
                    b.declared.push(a.names[id.id as usize].clone());
                }
                bound.push((id.id, decl.from, decl.to, decl.kind == DeclKind::Label));
            }
            DeclKind::Linkage => fail(&mut verdicts, id.id, Reason::Linkage),
            DeclKind::Typedef => fail(&mut verdicts, id.id, Reason::Typedef),
        }
    }
    // Each name's scopes as one slice of a flat list (no list per name).
    bound.sort_unstable_by_key(|b| b.0);
    let mut first_list: Vec<u32> = scratch::take(n + 1);
    first_list.resize(n + 1, 0);
    let first = &mut first_list[..n + 1];
    for b in &bound {
        first[b.0 as usize + 1] += 1;
    }
    for i in 0..n {
        first[i + 1] += first[i];
    }
    let scopes = |id: u32| &bound[first[id as usize] as usize..first[id as usize + 1] as usize];
    // Labels are a namespace of their own: a label binds only the names
    // right after a `goto`, and those bind nothing else (`x: x = 1; goto x;`
    // assigns an `x` from outside the text).
    let targets: Vec<u32> = if sink.decls.iter().any(|d| d.kind == DeclKind::Label) {
        a.toks
            .windows(2)
            .filter(|w| w[0].1 == Tok::Goto && w[1].1 == Tok::Ident)
            .map(|w| w[1].0)
            .collect()
    } else {
        Vec::new()
    };
    // Then every occurrence.
    let never = merge(sink.never.clone());
    let unparsed = merge(unparsed.to_vec());
    let mut never = Ranges {
        ranges: &never,
        next: 0,
    };
    let mut unparsed = Ranges {
        ranges: &unparsed,
        next: 0,
    };
    let designated: Vec<(usize, usize)> = designators::positions(&a.toks, &sink.scopes)
        .into_iter()
        .map(|p| (p, p + 1))
        .collect();
    let mut designated = Ranges {
        ranges: &designated,
        next: 0,
    };
    for (k, id) in a.idents.iter().enumerate() {
        // A member refers to no binding of the kernel, and renaming never
        // reaches it: neither for nor against. (A member the kernel declares
        // stands in a struct body, which keeps its name.)
        if id.never == Some(Reason::Member) {
            continue;
        }
        let reason = if let Some(r) = id.never {
            Some(r)
        } else if unparsed.holds(id.at as usize) {
            Some(Reason::Unparsed)
        } else if never.holds(id.at as usize) {
            Some(Reason::Tag)
        } else if designated.holds(id.at as usize) {
            Some(Reason::Designator)
        } else if declaring[k] {
            None
        } else {
            let target = !targets.is_empty() && targets.binary_search(&id.at).is_ok();
            let bound = scopes(id.id).iter().any(|&(_, from, to, label)| {
                from <= id.at as usize && (id.at as usize) < to && label == target
            });
            (!bound).then_some(Reason::Free)
        };
        match reason {
            Some(r) => fail(&mut verdicts, id.id, r),
            None => {
                let slot = &mut verdicts[id.id as usize];
                if slot.is_none() {
                    *slot = Some(Ok(()));
                }
            }
        }
    }
    b.verdicts = verdicts;
    b.is_declared = is_declared;
    scratch::give(bound);
    scratch::give(first_list);
    scratch::give(declaring_list);
}

#[cfg(test)]
mod tests;
