//! The token adapter: [`crate::canon::lexer`]'s tokens as the grammar's
//! terminals, plus every identifier occurrence the binder must judge.
//!
//! The lexer has one `Punct` kind for most punctuators; here they are split
//! by their bytes, keywords are classified by their spelling, and typedef
//! names (from the typedef pre-pass: the parser never feeds back
//! into the lexer) become type names. Comments and directives are dropped;
//! so are attributes (`[[...]]`, `__attribute__((...))`, `__declspec`,
//! `__launch_bounds__`, GLSL `layout(...)`), `asm` operands and `_Pragma`,
//! whose names are opaque occurrences instead. A `:` that closes a `?` is an
//! operator, so the grammar tells a label from a conditional expression.
//!
//! Each identifier is interned once per occurrence: one of at most 16 plain
//! bytes through a table keyed on its bytes as integers (`bind/short.rs`),
//! any other through the table of spellings (`canon/spellings.rs`), whose
//! ids both share. One walk over the
//! lexed tokens, before the main one, drops comments, finds digraphs and
//! notes whether any identifier is spelled `typedef` or a tag keyword: a
//! text with neither skips the typedef pre-pass. The text's own directives
//! are read in `bind/directives.rs`. (The directive lines are not gathered on
//! that walk: a list of them, allocated and freed per text, moved the heap so
//! that glibc trimmed and refaulted megabytes after every 1 MiB text of the
//! benchmark, costing more in page faults than the second walk saves.)

use super::directives::{words, Directives};
use super::keywords::{self, classify, is_opencl_space, opaque_construct};
use super::lexed::Token;
use super::short::{ShortIds, SHORT};
use super::spelled::{brackets_apart, is_digraph};
use super::typedefs::typedef_names;
use super::Reason;
use crate::canon::lexer::{spelling, TokenKind};
use crate::canon::scratch;
use crate::canon::spellings::Spellings;
use std::borrow::Cow;
use std::ops::Range;

/// A terminal of `grammar/kernel.lalrpop`.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident,
    TypeName,
    Lit,
    Op,
    Member,
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Semi,
    Comma,
    Star,
    Amp,
    Assign,
    Colon,
    Ellipsis,
    Typedef,
    Extern,
    Storage,
    Qual,
    Space,
    Struct,
    Enum,
    If,
    Else,
    For,
    While,
    Do,
    Switch,
    Case,
    Default,
    Return,
    Break,
    Continue,
    Goto,
    /// A bracketed group `[...]` holding no brace or tag, as one token.
    Group,
    /// The parenthesized condition of an `if`, `while` or `switch`, as one
    /// token (when it holds no brace or tag).
    Cond,
    /// A C++ construct the grammar does not parse (templates, classes,
    /// namespaces, lambdas' `operator`s, ...): its item is not parsed.
    Unsupported,
}

/// One identifier in code (not in a comment or a directive).
#[derive(Clone, Debug)]
pub struct Ident {
    /// Where it starts (a `u32`, as a [`Token`]'s: see
    /// [`super::MAX_TEXT`]).
    pub at: u32,
    /// Its spelling (line splices removed), as an index into
    /// [`Adapted::names`].
    pub id: u32,
    /// Why it can never be a binding occurrence, if it cannot.
    pub never: Option<Reason>,
}

/// What the adapter hands the parser and the binder.
pub struct Adapted<'t> {
    /// The grammar's terminals, in order.
    pub toks: Vec<(u32, Tok, u32)>,
    /// Every identifier in code, in order.
    pub idents: Vec<Ident>,
    /// The id of every identifier token outside comments and directives, in
    /// order (those of opaque constructs' own words too): the renamer walks
    /// the tokens with it and never hashes a name in code again.
    pub code_ids: Vec<u32>,
    /// Each distinct spelling met, by id, and the id of each.
    pub names: Spellings<'t>,
    /// Every token but blanks (comments included), for the renamer: one
    /// lexing serves both.
    pub all: super::TokenList,
    /// Names met where no renaming may reach: directives, attribute and
    /// `asm` text, `_Pragma` strings.
    pub opaque: Vec<(Cow<'t, [u8]>, Reason)>,
    /// Byte ranges of code between conditional directives (`#if` ...
    /// `#endif`): a name declared there may not be declared at all.
    pub conditional: Vec<Range<usize>>,
    /// Whether the text is GLSL (it has a `#version` line).
    pub glsl: bool,
    /// Where the pre-pass found a typedef declaring a name (sorted).
    pub typedefs: Vec<usize>,
    /// Why nothing in the text may be renamed, if nothing may.
    pub whole: Option<String>,
    /// Why nothing may be renamed though the text is still parsed (for the
    /// functions it defines), if nothing may.
    pub refused: Option<String>,
    /// Whether some token may be [`Tok::Struct`] (a word classified so was
    /// met): only then can [`Adapted::toks`] hold a struct body.
    pub struct_words: bool,
}

/// Adapts the lexed `text` (`lexed`: [`super::lex`]) for the grammar.
/// `macros`: names that are macros where the kernel is compiled, whose bodies
/// are not seen: their arguments are opaque.
pub fn adapt<'t>(
    text: &'t [u8],
    mut lexed: super::Lexed,
    macros: Option<&crate::canon::MacroNames>,
) -> Adapted<'t> {
    // The tokens the grammar may see (comments dropped), the keywords the
    // typedef pre-pass looks for and whether digraphs stand in the code:
    // found on the lexing's walk.
    let raw = std::mem::take(&mut lexed.list.code);
    let comments = std::mem::take(&mut lexed.list.comments);
    let (keywords, digraphs) = (lexed.keywords, lexed.digraphs);
    let too_long = lexed.too_long;
    let mut a = Adapted {
        toks: scratch::take(raw.len()),
        // About one distinct name per 64 bytes in generated kernels.
        names: Spellings::take(text.len() / 64 + 16),
        all: super::TokenList::default(),
        idents: scratch::take(raw.len() / 2),
        code_ids: scratch::take(raw.len() / 2),
        opaque: Vec::new(),
        conditional: Vec::new(),
        glsl: false,
        typedefs: Vec::new(),
        whole: None,
        refused: None,
        struct_words: false,
    };
    // Trigraphs (`??<` is `{` where a compiler option enables them) and
    // digraphs (`<%` is `{`) spell brackets the adapter would not see as such:
    // the block structure would be wrong, so the text is given up.
    if too_long {
        a.whole = Some(format!(
            "it is {} bytes long, over the {} the binder takes",
            text.len(),
            super::MAX_TEXT
        ));
    } else if crate::canon::dialect::has_trigraph(text) {
        a.whole = Some("it contains a trigraph".into());
    }
    if digraphs
        || raw
            .last()
            .is_some_and(|t| t.kind == TokenKind::Punct && is_digraph(&spelling(&text[t.range()])))
    {
        a.whole = Some("it contains a digraph".into());
    }
    let directives = Directives::read(text, &raw, &lexed.directives, &mut a, macros);
    drop(lexed);
    let typedefs = typedef_names(text, &raw, keywords);
    a.typedefs = typedefs.declaring.clone();
    // What each distinct spelling is, by id, found at its first occurrence.
    let mut info: Vec<Option<Word>> = scratch::take(text.len() / 64 + 16);
    let mut short = ShortIds::take(text.len() / 64 + 16);
    let mut ternary: Vec<u32> = vec![0];
    let mut after_member = false;
    // Right after a string or character literal, with nothing between: a
    // C++ literal's ud-suffix (`"abc"_s` calls `operator""_s`), which no
    // local binds.
    let mut glued = false;
    // Right after `struct`, `union`, `enum`: a tag, whatever else it names.
    let mut after_tag = false;
    // Tokens before this index are inside a group sent as one token.
    let mut hidden_until = 0usize;
    // Where in `a.toks` the current statement starts (as far as tokens
    // tell; see [`note`]): the last token sent and the statement's first are
    // read there, not kept per token.
    let mut stmt = 0usize;
    // Whether the pre-pass found a typedef declaring some name.
    let declaring = !typedefs.declaring.is_empty();
    // How many braces are open: a file included inside a block is text the
    // binder never reads, which may name the block's locals.
    let mut braces = 0usize;
    let mut groups = super::groups::Groups::default();
    let mut i = 0;
    while i < raw.len() {
        let (kind, span, spliced) = (raw[i].kind, raw[i].range(), raw[i].spliced);
        let idx = i;
        // Inside a group already handed to the parser as one token.
        let hidden = idx < hidden_until;
        i += 1;
        let tag_here = std::mem::take(&mut after_tag);
        let glued_here = std::mem::take(&mut glued);
        let tok = match kind {
            TokenKind::Ident => {
                let bytes = &text[span.clone()];
                // One lookup per occurrence: what the spelling is, once per id.
                let id = if !spliced && bytes.len() <= SHORT {
                    match short.get(text, span.start, span.end) {
                        Some(id) => id,
                        None => {
                            let id = a.intern(Cow::Borrowed(bytes));
                            short.insert(text, span.start, span.end, id);
                            id
                        }
                    }
                } else if spliced {
                    a.intern(spelling(bytes))
                } else {
                    a.intern(Cow::Borrowed(bytes))
                };
                if info.len() <= id as usize {
                    info.resize(id as usize + 1, None);
                }
                // Read in place, field by field as needed: no copy.
                let word: &Word = info[id as usize].get_or_insert_with(|| {
                    let w = Word::of(
                        &a.names[id as usize],
                        a.glsl,
                        &typedefs,
                        &directives,
                        macros,
                    );
                    a.struct_words |= w.class == Tok::Struct;
                    w
                });
                // The common word (no construct, no macro, no class its
                // position decides) where nothing around it matters: what the
                // general path below gives it, in one test.
                if word.plain && !(after_member | tag_here | declaring | glued_here) {
                    let never = (word.class != Tok::Ident).then_some(Reason::Free);
                    a.push_id(span.start, id, never);
                    if !hidden {
                        a.toks
                            .push((span.start as u32, word.class, span.end as u32));
                        note(word.class, a.toks.len(), &mut stmt);
                    }
                    continue;
                }
                if after_member {
                    after_member = word.template;
                    a.push_id(span.start, id, Some(Reason::Member));
                    if !hidden {
                        a.toks
                            .push((span.start as u32, Tok::Ident, span.end as u32));
                        note(Tok::Ident, a.toks.len(), &mut stmt);
                    }
                    continue;
                }
                if let Some(reason) = word.opaque {
                    // The construct's own word, its qualifiers and its
                    // parenthesized operands are dropped; their names are opaque.
                    a.code_ids.push(id);
                    if reason == Reason::Asm {
                        while i < raw.len()
                            && raw[i].kind == TokenKind::Ident
                            && matches!(
                                &text[raw[i].range()],
                                b"volatile" | b"__volatile__" | b"goto" | b"inline"
                            )
                        {
                            let id = a.intern(Cow::Borrowed(&text[raw[i].range()]));
                            a.code_ids.push(id);
                            i += 1;
                        }
                    }
                    if i < raw.len() && &text[raw[i].range()] == b"(" {
                        let end = balanced(text, &raw, i);
                        if reason == Reason::Asm {
                            super::asm::operands(&mut a, text, &raw, i, end);
                        } else {
                            for (k, s, sp) in raw[i..end].iter().map(Token::parts) {
                                a.opaque_token(text, *k, s.clone(), *sp, reason);
                            }
                        }
                        i = end;
                    }
                    continue;
                }
                let next_is_word = || raw.get(i).is_some_and(|t| t.kind == TokenKind::Ident);
                let tok = if tag_here
                    || !typedefs.declaring.is_empty()
                        && typedefs.declaring.binary_search(&span.start).is_ok()
                {
                    Tok::Ident
                } else if word.opencl_space && next_is_word() {
                    // OpenCL's unprefixed address spaces are keywords only
                    // there; elsewhere `kernel` or `local` is a name. Before
                    // another word (`global float* x`) it is the keyword.
                    Tok::Space
                } else {
                    word.class
                };
                after_tag = word.tag_keyword;
                let invoked = || i < raw.len() && &text[raw[i].range()] == b"(";
                let never = if tok == Tok::Ident && word.is_macro && invoked() {
                    let mut opaque_group = |from: usize, to: usize| {
                        for (k, s, sp) in raw[from..to].iter().map(Token::parts) {
                            if *k == TokenKind::Ident {
                                let n = if *sp {
                                    spelling(&text[s.clone()])
                                } else {
                                    Cow::Borrowed(&text[s.clone()])
                                };
                                a.opaque.push((n, Reason::MacroArgument));
                            }
                        }
                    };
                    // A macro whose body may stringize or paste its
                    // arguments: their names are opaque.
                    let mut end = balanced(text, &raw, i);
                    // A macro that may stringize, passed as an argument
                    // (`APPLY(STR, x)`: not called there), may be applied
                    // to the others.
                    let passed = || {
                        (i..end).any(|j| {
                            let (k, s, sp) = raw[j].parts();
                            let called = raw.get(j + 1).is_some_and(|t| &text[t.range()] == b"(");
                            let n = if *sp {
                                spelling(&text[s.clone()])
                            } else {
                                Cow::Borrowed(&text[s.clone()])
                            };
                            *k == TokenKind::Ident
                                && !called
                                && (directives.stringizing.iter().any(|m| **m == *n)
                                    || macros.is_some_and(|m| m.contains(&*n))
                                        && !directives.defined.iter().any(|m| **m == *n))
                        })
                    };
                    if word.stringizes || word.applies && passed() {
                        opaque_group(i, end);
                    }
                    // The expansion may end in a function-like macro's name
                    // (`ID(STR)(x)`), which takes the next parentheses.
                    while end < raw.len() && &text[raw[end].range()] == b"(" {
                        let next = balanced(text, &raw, end);
                        opaque_group(end, next);
                        end = next;
                    }
                    word.stringizes.then_some(Reason::MacroArgument)
                } else {
                    None
                };
                // Keywords and type names are occurrences too, never binding
                // ones: a name the rules select that is spelled like one is kept.
                let never = match tok {
                    Tok::Ident => never.or(glued_here.then_some(Reason::Free)),
                    Tok::TypeName if word.typedef => Some(Reason::Typedef),
                    _ => Some(Reason::Free),
                };
                a.push_id(span.start, id, never);
                tok
            }
            TokenKind::Str | TokenKind::Char | TokenKind::RawStr => {
                // A line splice between still glues them (phase 2 joins
                // lines before tokens are formed).
                glued = raw
                    .get(i)
                    .is_some_and(|t| t.start() == span.end || text.get(span.end) == Some(&b'\\'));
                Tok::Lit
            }
            TokenKind::Number => Tok::Lit,
            TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => {
                if kind == TokenKind::ColonColon {
                    scope_before(&mut a, &raw, idx);
                }
                after_member = true;
                if !hidden {
                    a.toks
                        .push((span.start as u32, Tok::Member, span.end as u32));
                    note(Tok::Member, a.toks.len(), &mut stmt);
                }
                continue;
            }
            TokenKind::Attribute => {
                words(text, span, Reason::Attribute, &mut a.opaque);
                continue;
            }
            TokenKind::Preprocessor => {
                if braces > 0 && names_a_file(&text[span]) {
                    a.refused.get_or_insert_with(|| {
                        "it includes a file inside a block, whose text may name the block's \
                         locals"
                            .into()
                    });
                }
                continue;
            }
            TokenKind::Punct => {
                let bytes = &text[span.clone()];
                match *bytes {
                    [b'{' | b'(' | b'['] => {
                        ternary.push(0);
                        braces += usize::from(bytes[0] == b'{');
                        if bytes == b"[" && brackets_apart(text, &raw, i) {
                            a.whole.get_or_insert_with(|| {
                                "it has an attribute whose `[ [` the lexer reads apart".into()
                            });
                        }
                        let last = a.toks.last().map_or(Tok::Semi, |t| t.1);
                        let at_start = stmt == a.toks.len();
                        // A subscript or array size, or the condition of an
                        // `if`, `while` or `switch`, declares nothing the grammar
                        // records: it goes to the parser as one token (its names
                        // are still judged), unless it holds a brace or a tag.
                        let cond =
                            bytes == b"(" && matches!(last, Tok::If | Tok::While | Tok::Switch);
                        // In an expression statement (one that starts like an
                        // expression, not with a specifier), parentheses are
                        // calls, casts and grouping: no declarator's.
                        let in_expression = bytes == b"("
                            && !at_start
                            && matches!(
                                a.toks[stmt].1,
                                Tok::Ident
                                    | Tok::Op
                                    | Tok::Lit
                                    | Tok::Member
                                    | Tok::Star
                                    | Tok::Amp
                                    | Tok::Assign
                                    | Tok::Group
                                    | Tok::Return
                            );
                        if !hidden && (bytes == b"[" || cond || in_expression) {
                            let (end, inside_plain) = groups.balanced_plain(text, &raw, idx);
                            let closed = end <= raw.len()
                                && end > idx + 1
                                && text[raw[end - 1].range()]
                                    == *if cond { b")".as_slice() } else { b"]" };
                            let plain = closed && inside_plain;
                            if plain {
                                let tok = if cond { Tok::Cond } else { Tok::Group };
                                a.toks
                                    .push((span.start as u32, tok, raw[end - 1].end() as u32));
                                note(tok, a.toks.len(), &mut stmt);
                                hidden_until = end;
                                after_member = false;
                                continue;
                            }
                        }
                        match bytes[0] {
                            b'{' => Tok::LBrace,
                            b'(' => Tok::LParen,
                            _ => Tok::LBracket,
                        }
                    }
                    [b'}' | b')' | b']'] => {
                        if ternary.len() > 1 {
                            ternary.pop();
                        }
                        braces -= usize::from(bytes[0] == b'}' && braces > 0);
                        match bytes[0] {
                            b'}' => Tok::RBrace,
                            b')' => Tok::RParen,
                            _ => Tok::RBracket,
                        }
                    }
                    [b';'] => Tok::Semi,
                    [b','] => Tok::Comma,
                    [b'*'] => Tok::Star,
                    [b'&'] => Tok::Amp,
                    [b'='] => Tok::Assign,
                    [b'.', b'.', b'.'] => Tok::Ellipsis,
                    [b'?'] => {
                        *ternary.last_mut().expect("never empty") += 1;
                        Tok::Op
                    }
                    [b':'] => {
                        let open = ternary.last_mut().expect("never empty");
                        if *open > 0 {
                            *open -= 1;
                            Tok::Op
                        } else {
                            Tok::Colon
                        }
                    }
                    _ => Tok::Op,
                }
            }
            k if k.is_error() => {
                a.whole
                    .get_or_insert_with(|| format!("a lexical error at byte {}", span.start));
                continue;
            }
            _ => continue,
        };
        after_member = false;
        if !hidden {
            a.toks.push((span.start as u32, tok, span.end as u32));
            note(tok, a.toks.len(), &mut stmt);
        }
    }
    short.give();
    scratch::give(info);
    a.all = super::TokenList {
        code: raw,
        comments,
    };
    a
}

impl<'t> Adapted<'t> {
    /// Keeps the buffers the binder is done with for the thread's next text
    /// (see [`crate::canon::scratch`]).
    pub(super) fn give_back(&mut self) {
        scratch::give(std::mem::take(&mut self.toks));
        scratch::give(std::mem::take(&mut self.idents));
        drop(std::mem::take(&mut self.all));
        scratch::give(std::mem::take(&mut self.code_ids));
    }

    /// The id of `name`, interned on first sight.
    pub fn intern(&mut self, name: Cow<'t, [u8]>) -> u32 {
        self.names.intern(name)
    }

    pub(super) fn push_ident(&mut self, at: usize, name: Cow<'t, [u8]>, never: Option<Reason>) {
        let id = self.intern(name);
        self.push_id(at, id, never);
    }

    fn push_id(&mut self, at: usize, id: u32, never: Option<Reason>) {
        self.code_ids.push(id);
        // `at` is a token's start: no more than `MAX_TEXT`.
        self.idents.push(Ident {
            at: at as u32,
            id,
            never,
        });
    }

    /// A token inside an opaque construct: its names are opaque, a string's
    /// words too (`asm` operands name locals as `%[x]`, `alias("f")` names a
    /// symbol).
    pub(super) fn opaque_token(
        &mut self,
        text: &'t [u8],
        kind: TokenKind,
        span: Range<usize>,
        spliced: bool,
        reason: Reason,
    ) {
        match kind {
            TokenKind::Ident => {
                let n = if spliced {
                    spelling(&text[span.clone()])
                } else {
                    Cow::Borrowed(&text[span.clone()])
                };
                self.push_ident(span.start, n.clone(), Some(reason));
                self.opaque.push((n, reason));
            }
            TokenKind::Str | TokenKind::RawStr | TokenKind::Char | TokenKind::Attribute => {
                words(text, span, reason, &mut self.opaque)
            }
            _ => {}
        }
    }
}

/// What an identifier's spelling is to the adapter, wherever it stands
/// (what depends on its position is decided there).
#[derive(Clone, Copy, PartialEq)]
pub(in crate::canon) struct Word {
    /// The construct it opens, whose operands are opaque.
    opaque: Option<Reason>,
    /// Its class, unless its position says otherwise.
    class: Tok,
    /// An OpenCL address space spelled without underscores.
    opencl_space: bool,
    /// `struct`, `union`, `enum` or `class`: a tag follows.
    tag_keyword: bool,
    /// `template` (after a member operator, the member follows it).
    template: bool,
    /// A macro whose body may stringize or paste its arguments.
    stringizes: bool,
    /// A macro, of the text's or the backend's.
    is_macro: bool,
    /// A macro of the text's that may call a macro passed to it.
    applies: bool,
    /// A typedef name the pre-pass found.
    typedef: bool,
    /// None of the above but its class matters: no construct, no OpenCL
    /// space, no tag keyword, no `template`, no macro, no typedef name.
    plain: bool,
}

impl Word {
    fn of(
        name: &[u8],
        glsl: bool,
        typedefs: &super::typedefs::Typedefs<'_>,
        directives: &Directives<'_>,
        macros: Option<&crate::canon::MacroNames>,
    ) -> Word {
        let tag_type = !typedefs.tags.is_empty() && typedefs.tags.contains(name);
        let typedef = !typedefs.names.is_empty() && typedefs.names.contains(name);
        let stringizes = directives.stringizing.iter().any(|m| **m == *name)
            || macros.is_some_and(|m| m.contains(name))
                && !directives.defined.iter().any(|m| **m == *name);
        let applies = directives.applying.iter().any(|m| **m == *name);
        let is_macro = directives.defined.iter().any(|m| **m == *name)
            || macros.is_some_and(|m| m.contains(name));
        let read = || {
            let mut w = Word {
                opaque: opaque_construct(name, glsl),
                class: classify(name, glsl, tag_type || typedef),
                opencl_space: is_opencl_space(name),
                tag_keyword: matches!(name, b"struct" | b"union" | b"enum" | b"class"),
                template: name == b"template",
                stringizes,
                applies,
                is_macro,
                typedef,
                plain: false,
            };
            w.plain = w.opaque.is_none()
                && !w.opencl_space
                && !w.tag_keyword
                && !w.template
                && !w.is_macro
                && !w.stringizes
                && !w.applies
                && !w.typedef;
            w
        };
        if !keywords::is_plain(name, glsl) {
            return read();
        }
        // Most names are no word of the lists (see `keywords::is_plain`):
        // those are not looked up in them.
        let word = Word {
            opaque: None,
            class: if tag_type || typedef {
                Tok::TypeName
            } else {
                Tok::Ident
            },
            opencl_space: false,
            tag_keyword: false,
            template: false,
            stringizes,
            applies,
            is_macro,
            typedef,
            plain: !(is_macro || stringizes || applies || typedef),
        };
        debug_assert!(word == read(), "{:?}", String::from_utf8_lossy(name));
        word
    }
}

/// Marks the name right before the `::` at `raw[at]` (directive lines
/// between aside) as a [`Reason::Scope`]: C++ looks it up among namespaces
/// and types only, so an occurrence there is no local's, and renaming the
/// local with it would point `cfg::s` at another namespace. A name already
/// judged otherwise (a member in `a::b::c`, a keyword) keeps its reason.
fn scope_before(a: &mut Adapted<'_>, raw: &[Token], at: usize) {
    let Some(prev) = raw[..at]
        .iter()
        .rev()
        .find(|t| t.kind != TokenKind::Preprocessor)
    else {
        return;
    };
    if prev.kind != TokenKind::Ident {
        return;
    }
    if let Some(id) = a
        .idents
        .last_mut()
        .filter(|id| id.at as usize == prev.start() && id.never.is_none())
    {
        id.never = Some(Reason::Scope);
    }
}

/// Records that `tok` was sent to the parser, as `a.toks`'s element `len - 1`:
/// a statement starts after `;`, a brace, a label's `:`, a condition, `else`
/// or `do` (`stmt`: where the current one starts in `a.toks`).
#[inline(always)]
/// Whether the directive `line` may read a file into the text where it
/// stands (`#include`, `#include_next`, `#import`, `#embed`; a name hidden
/// behind a comment or a splice counts).
fn names_a_file(line: &[u8]) -> bool {
    let rest = line
        .strip_prefix(b"#")
        .or_else(|| line.strip_prefix(b"%:"))
        .unwrap_or(line);
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"include")
        || rest.starts_with(b"import")
        || rest.starts_with(b"embed")
        || rest.starts_with(b"/")
        || rest.starts_with(b"\\")
}

fn note(tok: Tok, len: usize, stmt: &mut usize) {
    if matches!(
        tok,
        Tok::Semi | Tok::LBrace | Tok::RBrace | Tok::Colon | Tok::Cond | Tok::Else | Tok::Do
    ) {
        *stmt = len;
    }
}

/// Whether `raw[k]` is a brace or a tag keyword, which a group sent as one
/// token may not hold.
pub(super) fn not_plain(text: &[u8], raw: &[Token], k: usize) -> bool {
    let (kind, s, _) = raw[k].parts();
    let b = &text[s.clone()];
    *kind == TokenKind::Punct && b == b"{"
        || *kind == TokenKind::Ident && matches!(b, b"struct" | b"union" | b"enum" | b"class")
}

/// The index just past the balanced group opened at `raw[open]`.
pub(super) fn balanced(text: &[u8], raw: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, (kind, span, _)) in raw
        .iter()
        .enumerate()
        .skip(open)
        .map(|(j, t)| (j, t.parts()))
    {
        if *kind == TokenKind::Punct {
            match &text[span.clone()] {
                b"(" | b"[" | b"{" => depth += 1,
                b")" | b"]" | b"}" => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
        }
    }
    raw.len()
}
