//! A hand-written parse of the common function definition: the statement
//! structure without the LR automaton.
//!
//! Most of a kernel is one function body: statements, simple declarations and
//! expression runs. [`function`] parses a top-level item of the terminals
//! `grammar/kernel.lalrpop` reads, by recursive descent over the same
//! productions (`Item`'s function definition, `Compound`, `Stmt` with its
//! dangling `else`, `Decl`, `ForHead`, `Label`, the balanced runs), and calls
//! the sink's recorders in the order the grammar's actions would run (the LR
//! parser reduces in postorder: a `Param` when its list goes on, a `Decl` at
//! its `;`, a `Label` before its statement, a `Compound`'s scope at its `}`,
//! a `for`'s after its statement, the function's own name last).
//!
//! It covers a subset of the grammar: declaration specifiers without tags,
//! declarators that are a name with pointers and subscripts (a function's:
//! one parameter list of such parameters). Anything else it meets (a tag, a
//! parenthesized or abstract declarator, a prototype in a block, a token no
//! production takes there, unbalanced brackets, the end of the item
//! mid-construct, nesting deeper than [`DEPTH`]) makes it give up, and the
//! caller hands the item to the LR parser as before, with the sink rolled
//! back. So it never decides that an item does not parse: it only finds the
//! derivation of one that does, which, the grammar being LR(1) and so
//! unambiguous, is the LR parser's, recording the same things.
//!
//! Why each choice here is the grammar's: a block item starting with a
//! specifier is a `Decl`, one starting otherwise a statement (no `Atom`
//! starts with a specifier); a name before a `:` is a label (no expression
//! run holds a `:` outside brackets, and the adapter made every ternary `:`
//! an operator); a balanced run is taken as far as it goes, since what may
//! follow each (`,`, `;`, `:`, a closer) is never a token of it; an `else`
//! goes to the nearest `if`, as the grammar's closed and open statements
//! say.

use super::sink::{DeclKind, Declarator, Sink, Spec, PENDING};
use super::tokens::Tok;

/// One terminal: start, kind, end.
type Term = (u32, Tok, u32);

/// How deeply statements may nest before the item is left to the LR parser
/// (which keeps its stack on the heap; this parse recurses).
pub const DEPTH: usize = 200;

/// The parse gave up: the LR parser decides.
struct GiveUp;

type Parsed<T> = Result<T, GiveUp>;

/// Parses `item` (one top-level item) as a function definition, recording
/// what the grammar's actions would into `sink`. `false`: not parsed here
/// (the sink may hold a part of the records; the caller rolls it back).
/// `closers`: room for the brackets open in a run, kept by the caller.
pub fn function(item: &[Term], sink: &mut Sink, closers: &mut Vec<Tok>) -> bool {
    if item.last().map(|t| t.1) != Some(Tok::RBrace) {
        return false;
    }
    closers.clear();
    let mut p = Parser {
        toks: item,
        i: 0,
        sink,
        depth: 0,
        closers,
    };
    p.definition().is_ok() && p.i == item.len()
}

struct Parser<'a> {
    toks: &'a [Term],
    i: usize,
    sink: &'a mut Sink,
    depth: usize,
    closers: &'a mut Vec<Tok>,
}

/// Whether a declaration's specifiers start with `t`.
fn starts_decl(t: Tok) -> bool {
    matches!(
        t,
        Tok::TypeName
            | Tok::Qual
            | Tok::Storage
            | Tok::Space
            | Tok::Typedef
            | Tok::Extern
            | Tok::Struct
            | Tok::Enum
    )
}

/// What a terminal is to the balanced runs, as bits of [`CLASS`]: a token of
/// every run by itself (`TailTok`, `InnerTok`, `AnyTok`, `BraceTok` all take
/// it), a separator some take, an opener or a closer.
const PLAIN: u8 = 1;
const COMMA: u8 = 2;
const COLON: u8 = 4;
const SEMI: u8 = 8;
const OPEN: u8 = 16;
const CLOSE: u8 = 32;

/// [`PLAIN`] and the rest, by `Tok as usize`.
const CLASS: [u8; Tok::Unsupported as usize + 1] = {
    let mut c = [0u8; Tok::Unsupported as usize + 1];
    let plain = [
        Tok::Group,
        Tok::Ident,
        Tok::Lit,
        Tok::Op,
        Tok::Member,
        Tok::Star,
        Tok::Amp,
        Tok::Assign,
        Tok::TypeName,
        Tok::Qual,
        Tok::Space,
        Tok::Storage,
        Tok::Struct,
        Tok::Enum,
        Tok::Ellipsis,
    ];
    let mut k = 0;
    while k < plain.len() {
        c[plain[k] as usize] = PLAIN;
        k += 1;
    }
    c[Tok::Comma as usize] = COMMA;
    c[Tok::Colon as usize] = COLON;
    c[Tok::Semi as usize] = SEMI;
    c[Tok::LParen as usize] = OPEN;
    c[Tok::LBracket as usize] = OPEN;
    c[Tok::LBrace as usize] = OPEN;
    c[Tok::RParen as usize] = CLOSE;
    c[Tok::RBracket as usize] = CLOSE;
    c[Tok::RBrace as usize] = CLOSE;
    c
};

/// The closer of the opener `open`.
fn closer(open: Tok) -> Tok {
    match open {
        Tok::LParen => Tok::RParen,
        Tok::LBracket => Tok::RBracket,
        _ => Tok::RBrace,
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.i).map(|t| t.1)
    }

    /// Takes the next token, which must be `t`.
    fn expect(&mut self, t: Tok) -> Parsed<Term> {
        match self.toks.get(self.i) {
            Some(&term) if term.1 == t => {
                self.i += 1;
                Ok(term)
            }
            _ => Err(GiveUp),
        }
    }

    /// `DeclSpecs Declarator Compound`, the declarator a name with a
    /// parameter list (`Item`'s first production and `Sink::function_def`).
    fn definition(&mut self) -> Parsed<()> {
        self.specs()?;
        let ptr = self.pointers();
        let (at, _, _) = self.expect(Tok::Ident)?;
        self.expect(Tok::LParen)?;
        let lo = self.sink.decls.len();
        self.params()?;
        let (_, _, end) = self.expect(Tok::RParen)?;
        let hi = self.sink.decls.len();
        self.sink.close_params(lo, hi, end as usize);
        let d = Declarator {
            at: at as usize,
            end: end as usize,
            params: Some((lo, hi)),
            func: true,
            ptr,
        };
        let body = self.compound()?;
        self.sink.function_def(d, body).map_err(|_| GiveUp)
    }

    /// `DeclSpecs`: one specifier or more, no tag.
    fn specs(&mut self) -> Parsed<Spec> {
        let mut spec = Spec::default();
        let start = self.i;
        while let Some(t) = self.peek() {
            match t {
                Tok::TypeName | Tok::Qual | Tok::Storage | Tok::Space => {}
                Tok::Typedef => spec.typedef = true,
                Tok::Extern => {
                    spec.external = true;
                    // `extern "C"`.
                    if self.toks.get(self.i + 1).is_some_and(|t| t.1 == Tok::Lit) {
                        self.i += 1;
                    }
                }
                _ => break,
            }
            self.i += 1;
        }
        if self.i == start {
            return Err(GiveUp);
        }
        Ok(spec)
    }

    /// `Ptrs?`: whether there were any.
    fn pointers(&mut self) -> bool {
        let start = self.i;
        loop {
            match self.peek() {
                Some(Tok::Star) => {
                    self.i += 1;
                    while self.peek() == Some(Tok::Qual) {
                        self.i += 1;
                    }
                }
                Some(Tok::Amp) => self.i += 1,
                _ => return self.i > start,
            }
        }
    }

    /// A declarator that is a name with pointers and `group` subscripts:
    /// where the name stands and where the declarator ends.
    fn name_declarator(&mut self) -> Parsed<(usize, usize)> {
        self.pointers();
        let (at, _, mut end) = self.expect(Tok::Ident)?;
        while let Some(&(_, Tok::Group, r)) = self.toks.get(self.i) {
            end = r;
            self.i += 1;
        }
        Ok((at as usize, end as usize))
    }

    /// `Params`, up to the closing `)` (not taken).
    fn params(&mut self) -> Parsed<()> {
        if self.peek() == Some(Tok::RParen) {
            return Ok(());
        }
        loop {
            let s = self.specs()?;
            if !matches!(self.peek(), Some(Tok::Comma | Tok::RParen)) {
                let (at, end) = self.name_declarator()?;
                let kind = if s.typedef || s.external {
                    DeclKind::Linkage
                } else {
                    DeclKind::Param
                };
                self.sink.push(at, end, PENDING, kind);
            }
            match self.peek() {
                Some(Tok::RParen) => return Ok(()),
                Some(Tok::Comma) => {
                    self.i += 1;
                    if self.peek() == Some(Tok::Ellipsis) {
                        self.i += 1;
                        return match self.peek() {
                            Some(Tok::RParen) => Ok(()),
                            _ => Err(GiveUp),
                        };
                    }
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// Counts one level of nesting, giving up past [`DEPTH`].
    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > DEPTH {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// `Compound`: its scope.
    fn compound(&mut self) -> Parsed<(usize, usize)> {
        self.enter()?;
        let (l, _, _) = self.expect(Tok::LBrace)?;
        loop {
            match self.peek() {
                Some(Tok::RBrace) => break,
                Some(t) if starts_decl(t) => self.decl()?,
                Some(_) => self.stmt()?,
                None => return Err(GiveUp),
            }
        }
        let (_, _, r) = self.expect(Tok::RBrace)?;
        self.sink.scopes.push((l as usize, r as usize));
        self.depth -= 1;
        Ok((l as usize, r as usize))
    }

    /// `Decl`, its `;` included.
    fn decl(&mut self) -> Parsed<()> {
        let s = self.specs()?;
        if self.peek() == Some(Tok::Semi) {
            self.i += 1;
            return Ok(());
        }
        let kind = if s.typedef {
            DeclKind::Typedef
        } else if s.external {
            DeclKind::Linkage
        } else {
            DeclKind::Local
        };
        loop {
            let (at, end) = self.name_declarator()?;
            if self.peek() == Some(Tok::Assign) {
                self.i += 1;
                self.initializer()?;
            }
            // Nothing between declarators records: pushing each as it ends
            // is `Sink::declare`'s order.
            self.sink.push(at, end, PENDING, kind);
            match self.peek() {
                Some(Tok::Comma) => self.i += 1,
                Some(Tok::Semi) => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// `Initializer`: `Atom Tails`, `"typename" Tails` or `Braces`.
    fn initializer(&mut self) -> Parsed<()> {
        match self.peek() {
            Some(Tok::LBrace) => {
                self.i += 1;
                self.nested(Tok::LBrace)
            }
            Some(Tok::TypeName) => {
                self.i += 1;
                self.run(false)
            }
            _ => {
                self.atom()?;
                self.run(false)
            }
        }
    }

    /// `Atom`.
    fn atom(&mut self) -> Parsed<()> {
        match self.peek() {
            Some(
                Tok::Group
                | Tok::Ident
                | Tok::Lit
                | Tok::Op
                | Tok::Member
                | Tok::Star
                | Tok::Amp
                | Tok::Assign,
            ) => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::LParen) => {
                self.i += 1;
                self.nested(Tok::LParen)
            }
            Some(Tok::LBracket) => {
                self.i += 1;
                self.nested(Tok::LBracket)
            }
            _ => Err(GiveUp),
        }
    }

    /// `Tails` (`comma`: `Inners`), as far as it goes: the next token is not
    /// one of it.
    fn run(&mut self, comma: bool) -> Parsed<()> {
        let allowed = if comma { PLAIN | COMMA } else { PLAIN };
        while let Some(&(_, t, _)) = self.toks.get(self.i) {
            let class = CLASS[t as usize];
            if class & allowed != 0 {
                self.i += 1;
            } else if class & OPEN != 0 {
                self.i += 1;
                self.nested(t)?;
            } else {
                break;
            }
        }
        Ok(())
    }

    /// The rest of a bracketed run whose opener `open` was just taken, its
    /// closer included: `Anys` inside `(` and `[`, `BraceRun` inside `{`.
    fn nested(&mut self, open: Tok) -> Parsed<()> {
        let base = self.closers.len();
        self.closers.push(open);
        // What the innermost open bracket holds besides plain tokens.
        let inside = |open: Tok| {
            if open == Tok::LBrace {
                PLAIN | COMMA | COLON | SEMI
            } else {
                PLAIN | COMMA | COLON
            }
        };
        let mut allowed = inside(open);
        while let Some(&(_, t, _)) = self.toks.get(self.i) {
            self.i += 1;
            let class = CLASS[t as usize];
            if class & allowed != 0 {
                continue;
            }
            if class & OPEN != 0 {
                self.closers.push(t);
                allowed = inside(t);
            } else if class & CLOSE != 0 {
                if self.closers.pop().map(closer) != Some(t) {
                    return Err(GiveUp);
                }
                match self.closers.last() {
                    Some(&o) if self.closers.len() > base => allowed = inside(o),
                    _ => return Ok(()),
                }
            } else {
                return Err(GiveUp);
            }
        }
        Err(GiveUp)
    }

    /// `Cond`.
    fn cond(&mut self) -> Parsed<()> {
        match self.peek() {
            Some(Tok::Cond) => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::LParen) => {
                self.i += 1;
                self.nested(Tok::LParen)
            }
            _ => Err(GiveUp),
        }
    }

    /// `Stmt`.
    fn stmt(&mut self) -> Parsed<()> {
        self.enter()?;
        let Some(&(l, t, end)) = self.toks.get(self.i) else {
            return Err(GiveUp);
        };
        match t {
            Tok::LBrace => {
                self.compound()?;
            }
            Tok::Semi => self.i += 1,
            Tok::If => {
                self.i += 1;
                self.cond()?;
                self.stmt()?;
                if self.peek() == Some(Tok::Else) {
                    self.i += 1;
                    self.stmt()?;
                }
            }
            Tok::While | Tok::Switch => {
                self.i += 1;
                self.cond()?;
                self.stmt()?;
            }
            Tok::For => {
                self.i += 1;
                self.for_head()?;
                self.stmt()?;
                let r = self.toks[self.i - 1].2;
                self.sink.scopes.push((l as usize, r as usize));
            }
            Tok::Do => {
                self.i += 1;
                self.stmt()?;
                self.expect(Tok::While)?;
                self.cond()?;
                self.expect(Tok::Semi)?;
            }
            Tok::Return => {
                self.i += 1;
                self.run(true)?;
                self.expect(Tok::Semi)?;
            }
            Tok::Break | Tok::Continue => {
                self.i += 1;
                self.expect(Tok::Semi)?;
            }
            Tok::Goto => {
                self.i += 1;
                self.expect(Tok::Ident)?;
                self.expect(Tok::Semi)?;
            }
            Tok::Case => {
                self.i += 1;
                self.atom()?;
                self.run(true)?;
                self.expect(Tok::Colon)?;
                self.stmt()?;
            }
            Tok::Default => {
                self.i += 1;
                self.expect(Tok::Colon)?;
                self.stmt()?;
            }
            Tok::Ident if self.toks.get(self.i + 1).is_some_and(|t| t.1 == Tok::Colon) => {
                self.i += 2;
                self.sink.push(l as usize, end as usize, 0, DeclKind::Label);
                self.stmt()?;
            }
            _ => {
                self.atom()?;
                self.run(true)?;
                self.expect(Tok::Semi)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// `ForHead`, its parentheses included.
    fn for_head(&mut self) -> Parsed<()> {
        self.expect(Tok::LParen)?;
        match self.peek() {
            Some(Tok::Semi) => self.i += 1,
            Some(t) if starts_decl(t) => self.decl()?,
            _ => {
                self.atom()?;
                self.run(true)?;
                self.expect(Tok::Semi)?;
            }
        }
        self.run(true)?;
        self.expect(Tok::Semi)?;
        self.run(true)?;
        self.expect(Tok::RParen)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "stmts_tests.rs"]
mod tests;
