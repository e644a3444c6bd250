//! What the grammar's actions record: declarations, block scopes and the
//! ranges whose names never bind, all as byte offsets into the kernel text.

use super::tokens::Tok;
use lalrpop_util::ParseError;

/// A block-scope declaration's `to` until the binder finds its block.
pub const PENDING: usize = usize::MAX - 1;

/// What a declared name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclKind {
    /// A block-scope object (or a GLSL anonymous-block member): binds.
    Local,
    /// A parameter: binds, over its function's body or its prototype.
    Param,
    /// A label: binds over its function's body.
    Label,
    /// A name with linkage (file scope, `extern`, a function): never binds,
    /// since something outside the text may refer to it by name.
    Linkage,
    /// A typedef name: never renamed (it is a type, spelled as a type
    /// everywhere by the pre-pass).
    Typedef,
}

/// One declaration: the name's position and the range it is visible over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decl {
    /// Byte offset of the declared identifier.
    pub at: usize,
    /// Where its scope starts (just after its declarator).
    pub from: usize,
    /// Where its scope ends (the end of its block), or [`PENDING`].
    pub to: usize,
    /// What it declares.
    pub kind: DeclKind,
}

/// A declarator, as the grammar builds it.
#[derive(Clone, Copy, Debug)]
pub struct Declarator {
    /// Byte offset of its identifier.
    pub at: usize,
    /// Where it ends.
    pub end: usize,
    /// The declarations of its first parameter list (indices into
    /// [`Sink::decls`]), when it has one.
    pub params: Option<(usize, usize)>,
    /// Whether it declares a function.
    pub func: bool,
    /// Whether a pointer applies to the name inside parentheses.
    pub ptr: bool,
}

/// The storage class a declaration's specifiers give.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spec {
    /// `typedef`.
    pub typedef: bool,
    /// `extern`.
    pub external: bool,
}

impl Spec {
    /// Both specifier sets at once.
    pub fn or(self, other: Spec) -> Spec {
        Spec {
            typedef: self.typedef || other.typedef,
            external: self.external || other.external,
        }
    }
}

/// What one parse of a top-level item recorded.
#[derive(Debug, Default)]
pub struct Sink {
    /// Declarations, in the order their productions reduced.
    pub decls: Vec<Decl>,
    /// Block scopes `[start, end)`: compound statements and `for` statements.
    pub scopes: Vec<(usize, usize)>,
    /// Ranges whose identifiers never refer to a binding (tags, struct and
    /// enum bodies, interface-block names).
    pub never: Vec<(usize, usize)>,
    /// Whether the text is GLSL (it has a `#version` line).
    pub glsl: bool,
    /// Where each function definition's name stands.
    pub functions: Vec<usize>,
    /// The declarators of the declaration being parsed (see
    /// [`Sink::push_declarator`]).
    pub declarators: Vec<Declarator>,
}

type Reject = ParseError<usize, Tok, ()>;

impl Sink {
    /// An empty sink whose declaration and scope lists are the thread's
    /// kept buffers (see `scratch`): a text's records then grow no
    /// list anew. They go back when the sink is dropped.
    pub fn new(glsl: bool) -> Sink {
        let mut sink = Sink::default();
        sink.decls = crate::canon::scratch::take(0);
        sink.scopes = crate::canon::scratch::take(0);
        sink.glsl = glsl;
        sink
    }

    /// Records a declaration whose scope starts at `from`.
    pub fn push(&mut self, at: usize, from: usize, to: usize, kind: DeclKind) {
        self.decls.push(Decl { at, from, to, kind });
    }

    /// Keeps a declaration's declarator until the declaration is reduced;
    /// returns where it stands (the first one's place is the list's).
    pub fn push_declarator(&mut self, d: Declarator) -> usize {
        self.declarators.push(d);
        self.declarators.len() - 1
    }

    /// Declares the declarators kept from `from` on (none for `None`), in
    /// order, each with its scope ending at `to` and the kind `kind` gives
    /// it, and keeps them no longer.
    pub fn declare(
        &mut self,
        from: Option<usize>,
        to: usize,
        kind: impl Fn(&Declarator) -> DeclKind,
    ) {
        let Some(from) = from else { return };
        for i in from..self.declarators.len() {
            let d = self.declarators[i];
            self.push(d.at, d.end, to, kind(&d));
        }
        self.declarators.truncate(from);
    }

    /// Marks `[l, r)` as holding no binding occurrence.
    pub fn never(&mut self, l: usize, r: usize) {
        self.never.push((l, r));
    }

    /// A parameter list closed at `end`: its parameters are visible up to
    /// there (prototype scope) unless a function definition extends them.
    pub fn close_params(&mut self, lo: usize, hi: usize, end: usize) {
        for d in &mut self.decls[lo..hi] {
            if d.to == PENDING && d.kind == DeclKind::Param {
                d.to = end;
            }
        }
    }

    /// A function definition: its parameters and labels bind over its body;
    /// its own name has linkage.
    pub fn function_def(&mut self, d: Declarator, body: (usize, usize)) -> Result<(), Reject> {
        let (lo, hi) = match d.params {
            Some(p) if d.func => p,
            _ => return Err(ParseError::User { error: () }),
        };
        for p in &mut self.decls[lo..hi] {
            if p.to == d.end && p.kind == DeclKind::Param {
                p.to = body.1;
            }
        }
        for p in &mut self.decls[hi..] {
            if p.kind == DeclKind::Label {
                p.from = body.0;
                p.to = body.1;
            }
        }
        self.push(d.at, d.end, 0, DeclKind::Linkage);
        self.functions.push(d.at);
        Ok(())
    }

    /// A GLSL interface block `qualifiers Name { members } instance? ;`:
    /// members of an anonymous block are visible to the end of the text as
    /// bare names (nothing outside the shader refers to them by name); the
    /// block's name and a named instance's members never bind.
    pub fn interface_block(
        &mut self,
        d: Declarator,
        body: (usize, usize),
        instance: Option<usize>,
    ) -> Result<(), Reject> {
        if !self.glsl || d.params.is_some() || d.ptr {
            return Err(ParseError::User { error: () });
        }
        // The block's braces are no scope of their own.
        self.scopes.retain(|&s| s != body);
        let members = self
            .decls
            .iter_mut()
            .filter(|m| m.at > body.0 && m.at < body.1);
        for m in members {
            if instance.is_some() || m.kind != DeclKind::Local {
                m.kind = DeclKind::Linkage;
            } else {
                m.to = usize::MAX;
            }
        }
        self.never(d.at, d.end);
        if let Some(at) = instance {
            self.push(at, at, 0, DeclKind::Linkage);
        }
        Ok(())
    }
}

impl Drop for Sink {
    /// Keeps the declaration and scope lists for the thread's next text.
    fn drop(&mut self) {
        crate::canon::scratch::give(std::mem::take(&mut self.decls));
        crate::canon::scratch::give(std::mem::take(&mut self.scopes));
    }
}
