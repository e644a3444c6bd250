//! The renamer: a kernel's canonical text, the text its keys are taken over.
//!
//! A kernel's canonical text is its text with the names it *owns* renamed to
//! canonical names `kc1`, `kc2`, ... numbered by first occurrence, and its own
//! name replaced by its kernel token ([`super::kernel_token`]). Renamed are:
//!
//! * loop and static-index symbols: `i` then digits (switchable);
//! * scope locals: `v`, digits, `_`, anything (switchable);
//! * names in `bound` (what the renderer declares for the kernel's tensor nodes);
//! * names derived from a base by a derivation template `(prefix, suffix)`,
//!   `prefix ++ base ++ suffix`, where the base is in `bound`, a symbol, or digits.
//!
//! Never renamed: names in `keep` or `free`; C, C++, CUDA and OpenCL keywords;
//! a name after `.`, `->` or `::` (whitespace and comments may stand between;
//! `.template` too); anything inside `[[...]]`, a preprocessor line, a string
//! or character literal, or a lexical error. A name the rules would rename
//! that also stands after a member operator somewhere in the kernel is kept
//! everywhere: it may name a struct member or namespace the kernel declares,
//! and renaming the declaration but not the access would let a kernel that
//! does not compile share a key with one that does.
//!
//! Whatever the rules select, a name is renamed only when the binder
//! ([`super::bind`]) verifies that the kernel binds it: every occurrence in
//! code refers to a declaration in the kernel, and none stands where a
//! renaming cannot follow (a directive, an attribute, `asm`, an argument of a
//! stringizing macro, an unparsed item, ...). [`Canonical::kept`] says why a
//! selected name was left as written. With [`CanonOptions::infer`], every
//! name the kernel declares that the binder verifies is renamed too.
//!
//! Comments are renamed like code. If `bound` meets `free`, or holds a
//! reserved name (`__x`, `_X`) or a keyword, no bound name and no name derived
//! from one is renamed (symbols and scope locals still are), and
//! [`Canonical::reason`] says why. Keywords are never renamed; a bound keyword
//! refuses bound renaming because the kernel's other uses of it would be the
//! keyword.
//!
//! # Why this is sound
//!
//! Every renamed name is bound in the kernel, as the binder checks (declared
//! there: a declaration shadows any outer meaning throughout its scope;
//! parameters are passed by position; the kernel is looked up through the
//! symbol the cache stores), and
//! distinct names get distinct canonical names, so two kernels with equal
//! canonical forms are equal up to a renaming of their own bindings.
//!
//! Everything not renamed is copied byte for byte. A canonical name must never
//! be mistaken for a name left as written: when some kept name (in code or a
//! comment) is itself spelled `kc<digits>`, or equals the kernel token, or the
//! token is spelled `kc<digits>`, the canonical names move to the first free
//! prefix of `kc_`, `kc__`, ... (the kernel's own name becomes `<prefix>0`) and
//! the text starts with the marker comment `/*kc0 <prefix>*/`. No unmarked text
//! contains the word `kc0` (canonical numbers start at 1 and no kept name
//! matches `kc<digits>` there), so the marker cannot be forged, and the text,
//! together with the kernel token, determines the kernel up to renaming.

use super::lexer::{spelling, TokenKind};
use logos::Logos;
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;

/// A derivation template: names `prefix ++ base ++ suffix` are renamed when
/// the base is a bound name, a symbol or digits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Derivation {
    /// What comes before the base.
    pub prefix: String,
    /// What comes after the base.
    pub suffix: String,
}

impl Derivation {
    /// Parses `PREFIX*SUFFIX`, where exactly one `*` marks the base.
    pub fn parse(template: &str) -> Option<Derivation> {
        let (prefix, suffix) = template.split_once('*')?;
        if suffix.contains('*') {
            return None;
        }
        Some(Derivation {
            prefix: prefix.to_string(),
            suffix: suffix.to_string(),
        })
    }
}

/// What to rename, for [`canonical_kernel`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonOptions {
    /// The kernel's own name, replaced by its kernel token.
    pub kernel_name: Option<String>,
    /// Names the kernel declares (its tensor nodes): renamed.
    pub bound: Vec<String>,
    /// Names never renamed.
    pub keep: Vec<String>,
    /// Names with a meaning outside the kernel: never renamed, and a bound
    /// name among them refuses all bound renaming.
    pub free: Vec<String>,
    /// Derivation templates.
    pub derivations: Vec<Derivation>,
    /// Whether `i<digits>` names are loop/static-index symbols.
    pub symbols: bool,
    /// Whether `v<digits>_...` names are scope locals.
    pub scope_locals: bool,
    /// Whether to rename every name the kernel declares (parameters, locals,
    /// labels) whose occurrences all refer to a declaration in it, whatever
    /// the other rules select (see [`super::bind`]).
    pub infer: bool,
}

impl Default for CanonOptions {
    fn default() -> Self {
        CanonOptions {
            kernel_name: None,
            bound: Vec::new(),
            keep: Vec::new(),
            free: Vec::new(),
            derivations: Vec::new(),
            symbols: true,
            scope_locals: true,
            infer: false,
        }
    }
}

/// A kernel's canonical form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canonical {
    /// The canonical text.
    pub text: Vec<u8>,
    /// The kernel token its own name contributes, when a name was given. Keys
    /// are taken over the token and the text together.
    pub kernel_token: Option<String>,
    /// Each renamed name (with line splices removed) and its canonical name,
    /// in order of first occurrence; the kernel's own name maps to what
    /// replaced it.
    pub renamed: Vec<(String, String)>,
    /// Whether bound names (and names derived from them) were renamed.
    pub bound_renamed: bool,
    /// Why bound renaming was refused.
    pub reason: Option<String>,
    /// Names renamed by inference alone (no other rule selected them), in
    /// order of first occurrence.
    pub inferred: Vec<String>,
    /// Names the rules selected (or, with inference, the kernel declares)
    /// that were left as written, each with why: the binder did not verify
    /// them (see [`super::bind`]).
    pub kept: Vec<(String, String)>,
    /// Why the binder verified no name of the kernel (a lexical error, a
    /// macro that pastes tokens, ...), when it verified none.
    pub given_up: Option<String>,
    /// Byte ranges of the kernel's top-level items the grammar did not
    /// parse: their names are kept as written.
    pub unparsed: Vec<(usize, usize)>,
}

impl Canonical {
    /// The canonical text as UTF-8 (lossy where the kernel was not UTF-8).
    pub fn text_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.text)
    }
}

/// The canonical form of one kernel's text (see the module docs).
pub fn canonical_kernel(text: &[u8], options: &CanonOptions) -> Canonical {
    Renamer::new(options).canonicalize(text)
}

/// [`CanonOptions`] prepared for repeated use: sets hashed, refusal decided.
pub struct Renamer {
    kernel_name: Option<Vec<u8>>,
    token: Option<Vec<u8>>,
    /// `keep` and `free` names (never renamed) and bound names (renamed,
    /// unless refused, when they are left out).
    classes: FxHashMap<Vec<u8>, Class>,
    derivations: Vec<(Vec<u8>, Vec<u8>)>,
    symbols: bool,
    scope_locals: bool,
    reason: Option<String>,
    /// Macro names where the kernel is compiled: never renamed.
    macros: Option<std::sync::Arc<super::MacroNames>>,
    infer: bool,
    /// Whether the binder's verdicts apply (off only in this module's tests
    /// of the renaming mechanics).
    verify: bool,
}

/// The canonical-name prefix when nothing collides with it.
const BASE_PREFIX: &[u8] = b"kc";

/// The first prefix `kc_`, `kc__`, ... that no kept name uses as
/// `<prefix><digits>`.
fn free_prefix(kept: &FxHashSet<Cow<'_, [u8]>>) -> Vec<u8> {
    let mut prefix = BASE_PREFIX.to_vec();
    loop {
        prefix.push(b'_');
        if !kept.iter().any(|k| is_numbered(k, &prefix)) {
            return prefix;
        }
    }
}

impl Renamer {
    /// Prepares `options`.
    pub fn new(options: &CanonOptions) -> Renamer {
        let free: FxHashSet<&str> = options.free.iter().map(String::as_str).collect();
        let reason = options.bound.iter().find_map(|b| {
            if free.contains(b.as_str()) {
                Some(format!("bound name `{b}` is also free"))
            } else if is_reserved(b.as_bytes()) {
                Some(format!("bound name `{b}` is in the reserved namespace"))
            } else if is_keyword(b.as_bytes()) {
                Some(format!("bound name `{b}` is a keyword"))
            } else {
                None
            }
        });
        // One map for both lists, so a name costs one lookup; a kept name wins.
        let mut classes: FxHashMap<Vec<u8>, Class> = FxHashMap::default();
        if reason.is_none() {
            for b in &options.bound {
                classes.insert(b.as_bytes().to_vec(), Class::Bound);
            }
        }
        for n in options.keep.iter().chain(&options.free) {
            classes.insert(n.as_bytes().to_vec(), Class::Never);
        }
        Renamer {
            kernel_name: options.kernel_name.as_ref().map(|n| n.as_bytes().to_vec()),
            token: options
                .kernel_name
                .as_ref()
                .map(|n| super::kernel_token(n).as_bytes().to_vec()),
            classes,
            derivations: options
                .derivations
                .iter()
                .map(|d| (d.prefix.as_bytes().to_vec(), d.suffix.as_bytes().to_vec()))
                .collect(),
            symbols: options.symbols,
            scope_locals: options.scope_locals,
            reason,
            macros: None,
            infer: options.infer,
            verify: true,
        }
    }

    /// Macro names whose expansion depends on position or the enclosing
    /// function (see [`crate::backend::KeyExtras::position_macros`]).
    /// Not yet consulted: the raw-text rule that uses them is to come.
    pub fn with_position_macros(self, _macros: std::sync::Arc<super::MacroNames>) -> Renamer {
        self
    }

    /// The rules alone, without the binder: for tests of the mechanics.
    #[cfg(test)]
    fn unverified(mut self) -> Renamer {
        self.verify = false;
        self
    }

    /// Keeps every name in `macros` as written (see [`super::MacroNames`]).
    pub fn with_macros(mut self, macros: std::sync::Arc<super::MacroNames>) -> Renamer {
        self.macros = (!macros.is_empty()).then_some(macros);
        self
    }

    /// The canonical form of `text`.
    pub fn canonicalize(&self, text: &[u8]) -> Canonical {
        let pass = self.pass(text, true);
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut kept: Vec<(String, String)> = pass
            .refused
            .iter()
            .map(|(n, r)| (lossy(n), r.clone()))
            .collect();
        if self.infer {
            for d in pass.binding.declared() {
                if !matches!(pass.taken.get(d.as_ref()), Some(Taken::Renamed(_)))
                    && !pass.refused.iter().any(|(n, _)| n == d)
                {
                    kept.push((lossy(d), pass.why(d)));
                }
            }
        }
        let inferred = pass.inferred.iter().map(|n| lossy(n)).collect();
        let renamed = pass
            .order
            .iter()
            .map(|(from, taken)| {
                let mut to = Vec::new();
                pass.write_taken(*taken, &mut to);
                (
                    String::from_utf8_lossy(from).into_owned(),
                    String::from_utf8_lossy(&to).into_owned(),
                )
            })
            .collect();
        Canonical {
            text: pass.out,
            kernel_token: self
                .token
                .as_ref()
                .map(|t| String::from_utf8_lossy(t).into_owned()),
            renamed,
            bound_renamed: self.reason.is_none(),
            reason: self.reason.clone(),
            inferred,
            kept,
            given_up: pass.binding.whole.clone(),
            unparsed: pass.binding.unparsed().to_vec(),
        }
    }

    /// Just the canonical text of `text` (what a key needs), without the
    /// renaming map [`Renamer::canonicalize`] also builds.
    pub fn canonical_text(&self, text: &[u8]) -> Vec<u8> {
        self.pass(text, false).out
    }

    /// Whether bound renaming is refused, and why.
    pub fn refusal(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The kernel token, when a kernel name was given.
    pub fn kernel_token(&self) -> Option<&[u8]> {
        self.token.as_deref()
    }

    /// Runs the unmarked pass; again, keeping every renamable name that also
    /// stands after a member operator; and marked, when a kept name collides.
    /// `record`: keep the renaming map, in order of first occurrence.
    fn pass<'t>(&self, text: &'t [u8], record: bool) -> Pass<'_, 't, 't> {
        let binding = std::rc::Rc::new(super::bind::bind(text, self.macros.as_deref()));
        let new = |prefix, marked, members| {
            let mut p = Pass::new(self, text, prefix, marked, members, binding.clone());
            p.record = record;
            p
        };
        let mut pass = new(BASE_PREFIX.to_vec(), false, Default::default());
        pass.run();
        let members = std::mem::take(&mut pass.member_conflicts);
        if !members.is_empty() {
            pass = new(BASE_PREFIX.to_vec(), false, members.clone());
            pass.run();
        }
        if pass.collision {
            let mut kept = FxHashSet::default();
            let mut collect = new(BASE_PREFIX.to_vec(), false, members.clone());
            collect.record = false;
            collect.kept = Some(&mut kept);
            collect.run();
            drop(collect);
            pass = new(free_prefix(&kept), true, members);
            pass.run();
        }
        pass
    }

    /// What happens to a name at a renamable position, by the rules alone
    /// (the binder's verdict comes after).
    fn decide(&self, name: &[u8]) -> Decision {
        let class = self.classes.get(name).copied();
        if class == Some(Class::Never)
            || is_keyword(name)
            || self.macros.as_ref().is_some_and(|m| m.contains(name))
        {
            return Decision::Never;
        }
        if self.kernel_name.as_deref() == Some(name) {
            return Decision::Token;
        }
        if class == Some(Class::Bound)
            || self.symbols && is_symbol(name)
            || self.scope_locals && is_scope_local(name)
        {
            return Decision::Rename;
        }
        for (prefix, suffix) in &self.derivations {
            if name.len() > prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
                && self.is_base(&name[prefix.len()..name.len() - suffix.len()])
            {
                return Decision::Rename;
            }
        }
        Decision::Keep
    }

    /// Whether `name` is a derivation's base: a symbol, digits or a bound name.
    fn is_base(&self, name: &[u8]) -> bool {
        self.symbols && is_symbol(name)
            || is_digits(name)
            || self.classes.get(name) == Some(&Class::Bound)
    }
}

/// What a name listed in the options is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Never,
    Bound,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Decision {
    /// Never renamed (kept, free, a keyword, a macro).
    Never,
    /// Not selected by the rules (inference may still rename it).
    Keep,
    Token,
    /// Selected by the rules: renamed when verified.
    Rename,
}

/// A decision once taken for a spelling: kept, the kernel's own name, or the
/// canonical name's number.
#[derive(Clone, Copy)]
enum Taken {
    /// Kept; whether it could be mistaken for a canonical name or the token.
    Keep {
        collides: bool,
    },
    Token,
    Renamed(usize),
}

/// One pass over a kernel's tokens, writing its canonical text.
///
/// Kept bytes are copied in runs: only a renamed name interrupts a run.
struct Pass<'r, 't, 'k> {
    renamer: &'r Renamer,
    text: &'t [u8],
    prefix: Vec<u8>,
    marked: bool,
    taken: FxHashMap<Cow<'t, [u8]>, Taken>,
    /// Renamed names in order of first occurrence (the token included),
    /// kept only when `record` is set.
    order: Vec<(Cow<'t, [u8]>, Taken)>,
    record: bool,
    renamed: usize,
    /// Canonical name `n` is `names[ends[n - 2]..ends[n - 1]]` (from 0 for `n = 1`).
    names: Vec<u8>,
    ends: Vec<usize>,
    out: Vec<u8>,
    /// How far `text` has been written out.
    copied: usize,
    /// Set when a kept name could be mistaken for a canonical name or the token.
    collision: bool,
    /// When set, every kept name at a renamable position is collected here.
    kept: Option<&'k mut FxHashSet<Cow<'t, [u8]>>>,
    /// Names kept although the rules would rename them: they also stand
    /// after a member operator, so they may name a member the kernel declares.
    keep: FxHashSet<Cow<'t, [u8]>>,
    /// Renamable names met after a member operator in this pass.
    member_conflicts: FxHashSet<Cow<'t, [u8]>>,
    /// Which names the text binds (shared by the passes over one text).
    binding: std::rc::Rc<super::bind::Binding<'t>>,
    /// Names the rules selected that the binder did not verify, with why
    /// (recorded only when `record` is set).
    refused: Vec<(Cow<'t, [u8]>, String)>,
    /// Names renamed by inference alone (recorded only when `record` is set).
    inferred: Vec<Cow<'t, [u8]>>,
    /// The same, always kept.
    inferred_all: FxHashSet<Cow<'t, [u8]>>,
}

impl<'r, 't, 'k> Pass<'r, 't, 'k> {
    fn new(
        renamer: &'r Renamer,
        text: &'t [u8],
        prefix: Vec<u8>,
        marked: bool,
        keep: FxHashSet<Cow<'t, [u8]>>,
        binding: std::rc::Rc<super::bind::Binding<'t>>,
    ) -> Self {
        Pass {
            renamer,
            text,
            prefix,
            marked,
            // Most kernels bind a few hundred names at most: size for that.
            // About one distinct name per 64 bytes in generated kernels.
            taken: FxHashMap::with_capacity_and_hasher(
                (text.len() / 64).max(16),
                Default::default(),
            ),
            order: Vec::new(),
            record: false,
            renamed: 0,
            names: Vec::new(),
            ends: Vec::new(),
            out: Vec::new(),
            copied: 0,
            collision: false,
            kept: None,
            keep,
            member_conflicts: FxHashSet::default(),
            binding,
            refused: Vec::new(),
            inferred: Vec::new(),
            inferred_all: FxHashSet::default(),
        }
    }

    /// Why the binder did not verify `name`, in words.
    fn why(&self, name: &[u8]) -> String {
        match self.binding.verdict(name) {
            Ok(()) => match self.renamer.decide(name) {
                Decision::Never if is_keyword(name) => "is a keyword".to_string(),
                Decision::Never
                    if self
                        .renamer
                        .macros
                        .as_ref()
                        .is_some_and(|m| m.contains(name)) =>
                {
                    super::bind::Reason::Macro.describe().to_string()
                }
                Decision::Never => "is listed in keep or free".to_string(),
                _ => "stands after a member operator".to_string(),
            },
            Err(super::bind::Reason::Whole) => self.binding.whole.clone().unwrap_or_default(),
            Err(r) => r.describe().to_string(),
        }
    }

    fn run(&mut self) {
        let text = self.text;
        self.out.reserve(text.len() + 16);
        if self.marked {
            self.out.extend_from_slice(b"/*kc0 ");
            self.out.extend_from_slice(&self.prefix);
            self.out.extend_from_slice(b"*/");
        }
        let mut after_member = false;
        // The binder's lexing of the text, reused: one lexing per text.
        let binding = self.binding.clone();
        for (kind, span, spliced) in binding.tokens().iter().cloned() {
            match kind {
                TokenKind::Ident => {
                    // `a.template f<T>()`: the member is the name after `template`.
                    let template = after_member && &text[span.clone()] == b"template";
                    self.name(span.start, span.end, after_member, spliced);
                    after_member = template;
                }
                TokenKind::LineComment
                | TokenKind::BlockComment
                | TokenKind::UnterminatedComment => self.comment(span.start, span.end),
                TokenKind::Whitespace => {}
                TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => after_member = true,
                _ => after_member = false,
            }
        }
        self.out.extend_from_slice(&text[self.copied..]);
    }

    /// Words inside a comment: identifiers are renamed like code; nothing
    /// else there (quotes included) means anything.
    fn comment(&mut self, start: usize, end: usize) {
        let mut words = Word::lexer(&self.text[start..end]);
        while let Some(word) = words.next() {
            if let Ok(Word::Ident | Word::EscapedIdent) = word {
                let span = words.span();
                self.name(
                    start + span.start,
                    start + span.end,
                    false,
                    word == Ok(Word::EscapedIdent),
                );
            }
        }
    }

    /// An identifier at a renamable position (`member`: right after `.`,
    /// `->` or `::`, where it is kept).
    #[inline]
    fn name(&mut self, start: usize, end: usize, member: bool, spliced: bool) {
        let text = self.text;
        let spelled = if spliced {
            spelling(&text[start..end])
        } else {
            Cow::Borrowed(&text[start..end])
        };
        let taken = if member {
            let elsewhere = match self.taken.get(spelled.as_ref()) {
                Some(&t) => t,
                None => self.take(spelled.clone()),
            };
            // The rules' names keep their old member rule; an inferred name
            // was verified by the binder, which keeps any member the kernel
            // declares (it stands in a struct body).
            if !matches!(elsewhere, Taken::Keep { .. }) && !self.inferred_all.contains(&spelled) {
                self.member_conflicts.insert(spelled.clone());
            }
            Taken::Keep {
                collides: self.kept_collides(&spelled),
            }
        } else {
            match self.taken.get(spelled.as_ref()) {
                Some(&t) => t,
                None => self.take(spelled.clone()),
            }
        };
        if let Taken::Keep { collides } = taken {
            self.collision |= collides;
            if let Some(kept) = self.kept.as_deref_mut() {
                kept.insert(spelled);
            }
            return;
        }
        self.out.extend_from_slice(&text[self.copied..start]);
        self.copied = end;
        let mut out = std::mem::take(&mut self.out);
        self.write_taken(taken, &mut out);
        self.out = out;
    }

    /// Writes what a renamed name (or the kernel's own name) becomes.
    #[inline]
    fn write_taken(&self, taken: Taken, out: &mut Vec<u8>) {
        match taken {
            Taken::Keep { .. } => {}
            Taken::Token if self.marked => {
                out.extend_from_slice(&self.prefix);
                out.push(b'0');
            }
            Taken::Token => {
                out.extend_from_slice(self.renamer.token.as_deref().unwrap_or_default())
            }
            Taken::Renamed(n) => {
                let start = if n >= 2 { self.ends[n - 2] } else { 0 };
                out.extend_from_slice(&self.names[start..self.ends[n - 1]]);
            }
        }
    }

    /// Takes the decision for a spelling met for the first time.
    fn take(&mut self, spelled: Cow<'t, [u8]>) -> Taken {
        let decision = if self.keep.contains(&spelled) {
            Decision::Never
        } else {
            match self.renamer.decide(&spelled) {
                // A name is renamed only when the binder verified it.
                Decision::Rename
                    if self.renamer.verify && self.binding.verdict(&spelled).is_err() =>
                {
                    if self.record {
                        let why = self.why(&spelled);
                        self.refused.push((spelled.clone(), why));
                    }
                    Decision::Never
                }
                Decision::Keep
                    if self.renamer.infer
                        && self.binding.verdict(&spelled).is_ok()
                        && self.binding.declares(&spelled) =>
                {
                    if self.record {
                        self.inferred.push(spelled.clone());
                    }
                    self.inferred_all.insert(spelled.clone());
                    Decision::Rename
                }
                d => d,
            }
        };
        let taken = match decision {
            Decision::Keep | Decision::Never => Taken::Keep {
                collides: self.kept_collides(&spelled),
            },
            Decision::Token => {
                let token = self.renamer.token.as_deref().unwrap_or_default();
                if !self.marked && is_numbered(token, BASE_PREFIX) {
                    self.collision = true;
                }
                Taken::Token
            }
            Decision::Rename => {
                self.renamed += 1;
                self.names.extend_from_slice(&self.prefix);
                push_decimal(&mut self.names, self.renamed);
                self.ends.push(self.names.len());
                Taken::Renamed(self.renamed)
            }
        };
        if self.record && !matches!(taken, Taken::Keep { .. }) {
            self.order.push((spelled.clone(), taken));
        }
        self.taken.insert(spelled, taken);
        taken
    }

    /// Whether a kept name could be read back as a canonical name or as the
    /// kernel token (only the unmarked form cares: the marked one was chosen
    /// to avoid every kept name).
    fn kept_collides(&self, kept: &[u8]) -> bool {
        !self.marked
            && (is_numbered(kept, BASE_PREFIX) || self.renamer.token.as_deref() == Some(kept))
    }
}

/// Words inside a comment: identifiers (as the code lexer spells them),
/// numbers (so `2x` holds no name), and everything else.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(utf8 = false)]
#[logos(subpattern sp = r"\\\r?\n")]
#[logos(subpattern ucn = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}")]
#[logos(subpattern ids = r"(?-u:[A-Za-z_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern idc = r"(?-u:[A-Za-z0-9_$\x80-\xFF])|(?&ucn)")]
#[logos(subpattern id0 = r"(?-u:[A-Za-z_$\x80-\xFF])")]
#[logos(subpattern id1 = r"(?-u:[A-Za-z0-9_$\x80-\xFF])")]
enum Word {
    #[regex(r"(?&id0)(?&id1)*", priority = 10)]
    Ident,
    #[regex(r"(?&ids)((?&sp)*(?&idc))*")]
    EscapedIdent,
    #[regex(r"\.?[0-9]((?&sp)*((?-u:[0-9A-Za-z_$.\x80-\xFF])|[eEpP][+-]|'[0-9A-Za-z_]))*")]
    Number,
    #[regex(r"(?-u:[^A-Za-z0-9_$.\\\x80-\xFF])+")]
    #[regex(r"(?-u:[\x00-\xFF])", priority = 0)]
    Other,
}

/// Appends `n` in decimal (no allocation, unlike `to_string`).
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `i` then digits.
pub fn is_symbol(name: &[u8]) -> bool {
    name.len() > 1 && name[0] == b'i' && is_digits(&name[1..])
}

/// `v`, digits, `_`, anything.
pub fn is_scope_local(name: &[u8]) -> bool {
    if name.first() != Some(&b'v') {
        return false;
    }
    let digits = name[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && name.get(1 + digits) == Some(&b'_')
}

fn is_digits(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(u8::is_ascii_digit)
}

/// `<prefix><digits>`.
fn is_numbered(name: &[u8], prefix: &[u8]) -> bool {
    name.starts_with(prefix) && is_digits(&name[prefix.len()..])
}

/// The implementation's reserved namespace: `__x` and `_X`.
pub fn is_reserved(name: &[u8]) -> bool {
    matches!(name, [b'_', b'_', ..] | [b'_', b'A'..=b'Z', ..])
}

/// C, C++, CUDA and OpenCL C keywords (and the OpenCL and CUDA qualifiers a
/// declaration can use), none of which a declaration can rebind.
pub fn is_keyword(name: &[u8]) -> bool {
    // A match compiles to a switch on length and first bytes: no search.
    matches!(
        name,
        b"_Alignas"
            | b"_Alignof"
            | b"_Atomic"
            | b"_Bool"
            | b"_Complex"
            | b"_Generic"
            | b"_Imaginary"
            | b"_Noreturn"
            | b"_Static_assert"
            | b"_Thread_local"
            | b"__constant"
            | b"__device__"
            | b"__global"
            | b"__global__"
            | b"__host__"
            | b"__kernel"
            | b"__local"
            | b"__private"
            | b"__shared__"
            | b"alignas"
            | b"alignof"
            | b"and"
            | b"asm"
            | b"auto"
            | b"bool"
            | b"break"
            | b"case"
            | b"catch"
            | b"char"
            | b"class"
            | b"const"
            | b"const_cast"
            | b"constant"
            | b"constexpr"
            | b"continue"
            | b"decltype"
            | b"default"
            | b"delete"
            | b"do"
            | b"double"
            | b"dynamic_cast"
            | b"else"
            | b"enum"
            | b"explicit"
            | b"extern"
            | b"false"
            | b"float"
            | b"for"
            | b"friend"
            | b"global"
            | b"goto"
            | b"half"
            | b"if"
            | b"inline"
            | b"int"
            | b"kernel"
            | b"local"
            | b"long"
            | b"mutable"
            | b"namespace"
            | b"new"
            | b"noexcept"
            | b"not"
            | b"nullptr"
            | b"operator"
            | b"or"
            | b"private"
            | b"protected"
            | b"public"
            | b"register"
            | b"reinterpret_cast"
            | b"restrict"
            | b"return"
            | b"short"
            | b"signed"
            | b"sizeof"
            | b"static"
            | b"static_assert"
            | b"static_cast"
            | b"struct"
            | b"switch"
            | b"template"
            | b"this"
            | b"thread_local"
            | b"throw"
            | b"true"
            | b"try"
            | b"typedef"
            | b"typeid"
            | b"typename"
            | b"union"
            | b"unsigned"
            | b"using"
            | b"virtual"
            | b"void"
            | b"volatile"
            | b"while"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon_with(text: &str, f: impl FnOnce(&mut CanonOptions)) -> Canonical {
        let mut o = CanonOptions::default();
        f(&mut o);
        Renamer::new(&o).unverified().canonicalize(text.as_bytes())
    }

    fn canon(text: &str, f: impl FnOnce(&mut CanonOptions)) -> String {
        String::from_utf8(canon_with(text, f).text).unwrap()
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn symbols_and_scope_locals_are_numbered_by_first_occurrence() {
        assert_eq!(
            canon(
                "for (int i7 = 0; i7 < n; i7++) v3_acc += i2 * v3_acc;",
                |_| {}
            ),
            "for (int kc1 = 0; kc1 < n; kc1++) kc2 += kc3 * kc2;"
        );
    }

    #[test]
    fn bound_names_and_their_derivations_are_renamed() {
        let out = canon("float a_local = a[i1] + b + t42 + tmp_i3;", |o| {
            o.bound = strs(&["a", "b"]);
            o.derivations = vec![
                Derivation::parse("*_local").unwrap(),
                Derivation::parse("t*").unwrap(),
                Derivation::parse("tmp_*").unwrap(),
            ];
        });
        assert_eq!(out, "float kc1 = kc2[kc3] + kc4 + kc5 + kc6;");
    }

    #[test]
    fn a_derivation_needs_a_renamable_base() {
        let out = canon("x_local + tx", |o| {
            o.derivations = vec![
                Derivation::parse("*_local").unwrap(),
                Derivation::parse("t*").unwrap(),
            ];
        });
        assert_eq!(out, "x_local + tx");
    }

    #[test]
    fn kernel_name_becomes_its_token() {
        let c = canon_with("void mm__seg3(float* a) { mm__seg3(a); }", |o| {
            o.kernel_name = Some("mm__seg3".into());
            o.bound = strs(&["a"]);
        });
        assert_eq!(c.text, b"void mm__seg(float* kc1) { mm__seg(kc1); }");
        assert_eq!(c.kernel_token.as_deref(), Some("mm__seg"));
        assert_eq!(
            c.renamed,
            vec![
                ("mm__seg3".to_string(), "mm__seg".to_string()),
                ("a".to_string(), "kc1".to_string())
            ]
        );
    }

    #[test]
    fn keep_and_free_names_are_never_renamed() {
        let out = canon("i1 + i2 + a + b", |o| {
            o.keep = strs(&["i1"]);
            o.free = strs(&["a"]);
            o.bound = strs(&["b"]);
        });
        assert_eq!(out, "i1 + kc1 + a + kc2");
    }

    #[test]
    fn names_after_member_operators_are_kept() {
        let out = canon(
            "i1.i2 + i1->i3 + i1 :: i4 + i1 . /* c */ i5 + i1.\\\ni6",
            |_| {},
        );
        assert_eq!(
            out,
            "kc1.i2 + kc1->i3 + kc1 :: i4 + kc1 . /* c */ i5 + kc1.\\\ni6"
        );
    }

    #[test]
    fn opaque_regions_are_kept() {
        let src = "#define i1 i2\n[[i3::i4]] \"i5\" 'i6' R\"(i7)\" i8";
        assert_eq!(
            canon(src, |_| {}),
            "#define i1 i2\n[[i3::i4]] \"i5\" 'i6' R\"(i7)\" kc1"
        );
    }

    #[test]
    fn comments_are_renamed_like_code_and_quotes_there_open_nothing() {
        assert_eq!(
            canon("i4 /* i4's i9 */ // it's i9\n i9 2i9", |_| {}),
            "kc1 /* kc1's kc2 */ // it's kc2\n kc2 2i9"
        );
    }

    #[test]
    fn splices_inside_a_renamed_identifier_are_spelled_out() {
        assert_eq!(canon("i\\\n1 + i1", |_| {}), "kc1 + kc1");
    }

    #[test]
    fn bound_meeting_free_refuses_bound_renaming_only() {
        let c = canon_with("a + a_l + i3 + v1_x", |o| {
            o.bound = strs(&["a"]);
            o.free = strs(&["a"]);
            o.derivations = vec![Derivation::parse("*_l").unwrap()];
        });
        assert_eq!(c.text, b"a + a_l + kc1 + kc2");
        assert!(!c.bound_renamed);
        assert_eq!(c.reason.as_deref(), Some("bound name `a` is also free"));
    }

    #[test]
    fn reserved_or_keyword_bound_names_refuse_bound_renaming() {
        for bad in ["__x", "_X", "int"] {
            let c = canon_with("a + i1", |o| o.bound = strs(&["a", bad]));
            assert_eq!(c.text, b"a + kc1", "{bad}");
            assert!(c.reason.unwrap().contains(bad));
        }
        // `_x` (lowercase) is not reserved at this level.
        assert!(canon_with("a", |o| o.bound = strs(&["_x"])).bound_renamed);
    }

    #[test]
    fn keywords_are_never_renamed_even_when_derived() {
        assert_eq!(
            canon("float lo", |o| {
                o.bound = strs(&["lo"]);
                o.derivations = vec![Derivation::parse("f*at").unwrap()];
            }),
            "float kc1"
        );
    }

    #[test]
    fn pattern_classes_can_be_switched_off() {
        assert_eq!(
            canon("i1 + v1_a + xi1", |o| {
                o.symbols = false;
                o.scope_locals = false;
                o.derivations = vec![Derivation::parse("x*").unwrap()];
            }),
            "i1 + v1_a + xi1"
        );
    }

    #[test]
    fn a_kept_name_spelled_like_a_canonical_name_moves_the_prefix() {
        let c = canon("i5 + kc1 + kc_1", |_| {});
        assert_eq!(c, "/*kc0 kc__*/kc__1 + kc1 + kc_1");
        // Without the marker the two kernels below would both read `kc1 + kc1`.
        assert_ne!(canon("i5 + kc1", |_| {}), canon("i5 + i5", |_| {}));
    }

    #[test]
    fn a_kept_name_equal_to_the_kernel_token_moves_the_prefix() {
        let recursive = canon("void k__seg(){ k__seg(); }", |o| {
            o.kernel_name = Some("k__seg".into())
        });
        let calls_other = canon("void k__seg1(){ k__seg(); }", |o| {
            o.kernel_name = Some("k__seg1".into())
        });
        assert_eq!(recursive, "void k__seg(){ k__seg(); }");
        assert_eq!(calls_other, "/*kc0 kc_*/void kc_0(){ k__seg(); }");
    }

    #[test]
    fn a_token_spelled_like_a_canonical_name_moves_the_prefix() {
        assert_eq!(
            canon("void kc1(){ i1; }", |o| o.kernel_name = Some("kc1".into())),
            "/*kc0 kc_*/void kc_0(){ kc_1; }"
        );
    }

    #[test]
    fn an_unmarked_text_never_contains_kc0() {
        // `kc0` kept forces the marked form, so the marker cannot be forged.
        assert_eq!(canon("/*kc0 kc_*/i1", |_| {}), "/*kc0 kc_*//*kc0 kc_*/kc_1");
    }

    #[test]
    fn keywords_are_recognised() {
        assert!(is_keyword(b"int") && is_keyword(b"__global__") && is_keyword(b"while"));
        assert!(!is_keyword(b"x") && !is_keyword(b"Int") && !is_keyword(b"ints"));
    }

    #[test]
    fn derivation_templates_parse_with_one_star() {
        assert_eq!(
            Derivation::parse("p*s"),
            Some(Derivation {
                prefix: "p".into(),
                suffix: "s".into()
            })
        );
        assert_eq!(Derivation::parse("ps"), None);
        assert_eq!(Derivation::parse("p**s"), None);
    }
}
