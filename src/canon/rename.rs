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
//! `.template` too), a name that stands right before `::` or before a `:`
//! in an initializer's braces anywhere (the binder's
//! [`super::bind::Reason::Scope`] and [`super::bind::Reason::Designator`]), and a member's own name in a struct body the binder
//! reads ([`super::bind::Binding::member_declarators`]); a name a paste in a
//! backend macro the kernel names may spell ([`Renamer::with_pasting`]);
//! anything inside `[[...]]`, a preprocessor line, a string
//! or character literal; nothing at all in a kernel with a lexical error (see
//! "Raw keying" below). A name the rules would rename
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
//! name the kernel declares that the binder verifies is renamed too. The
//! dialect scan rides along the first renaming pass (or, when the backend
//! reports macros and a kernel name is given, runs before the binder): a
//! raw-keyed kernel (see "Raw keying" below) is not renamed at all and what
//! the binder found is not used; one lexing of the text serves the scan, the
//! binder and every renaming pass.
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
//!
//! # Raw keying
//!
//! A kernel the lexer may read otherwise than its compiler (see
//! [`super::dialect`]: trigraphs, raw strings, digit separators, a lexical
//! error), or whose code depends on its position or its full name
//! (`__LINE__`, `__func__`, a backend's position macro such as `assert`), or
//! that is uncacheable (`__TIME__`), is not renamed at all: its canonical text
//! is the marker `/*kc0 raw*/` followed by its text byte for byte, and its
//! kernel token is its full name (a segment kernel keeps its index, which
//! `__func__` spells). [`Canonical::raw`] says why. The marker cannot be
//! produced by renaming: an unmarked text never contains the word `kc0`, and
//! a marked one starts `/*kc0 kc_`. So a raw-keyed text never equals a renamed
//! one, and two raw-keyed texts are equal only when the kernels are.

use super::dialect::{Findings, Scanner};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;

mod names;
mod options;
mod out;
mod pass;
mod words;

use names::{is_digits, is_numbered, lossy, lossy_owned, raw_text};
pub use names::{is_keyword, is_renamer_keyword, is_reserved, is_scope_local, is_symbol};
pub use options::{CanonOptions, Canonical, Derivation, KeyForm, RAW_MARKER};
use pass::Pass;
pub(in crate::canon) use pass::Taken;

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
    /// Words outside macros' bodies name (see [`Renamer::with_reached`]).
    reached: Option<std::sync::Arc<super::MacroNames>>,
    /// Macro names that expand by position: a kernel using one is raw-keyed.
    position_macros: Option<std::sync::Arc<super::MacroNames>>,
    /// Macro names that may paste (see [`Renamer::with_pasting`]).
    pasting: Option<std::sync::Arc<super::MacroNames>>,
    infer: bool,
    /// Whether the binder's verdicts apply (off only in this module's tests
    /// of the renaming mechanics).
    verify: bool,
    /// The longest text bound: [`super::bind::MAX_TEXT`], lowered only in
    /// this module's tests of a longer text's path.
    limit: usize,
    /// Why every text is raw-keyed, when the compile records the names a
    /// renaming would change (see [`Renamer::raw_keyed`]).
    raw: Option<String>,
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
            } else if is_renamer_keyword(b.as_bytes()) {
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
            reached: None,
            position_macros: None,
            pasting: None,
            infer: options.infer,
            verify: true,
            limit: super::bind::MAX_TEXT,
            raw: None,
        }
    }

    /// Keys every text on its raw text and full name, for `reason`: the
    /// compile records the kernel's own spellings (debug information names
    /// its locals and parameters and gives their columns), so no renaming
    /// leaves what it produces unchanged. The dialect scan still runs: what
    /// makes a kernel uncacheable does so here too.
    pub fn raw_keyed(mut self, reason: impl Into<String>) -> Renamer {
        self.raw = Some(reason.into());
        self
    }

    /// Macro names whose expansion depends on position or the enclosing
    /// function (see [`crate::backend::KeyExtras::position_macros`]): a
    /// kernel that uses one is raw-keyed (see the module docs).
    pub fn with_position_macros(mut self, macros: std::sync::Arc<super::MacroNames>) -> Renamer {
        self.position_macros = (!macros.is_empty()).then_some(macros);
        self
    }

    /// Macro names from outside the kernel that may paste tokens (see
    /// [`crate::backend::KeyExtras::pasting`]): in a kernel that names one,
    /// every name a paste may spell is kept as written, and a kernel whose
    /// own name is one is raw-keyed (see [`super::pastes`]).
    pub fn with_pasting(mut self, macros: std::sync::Arc<super::MacroNames>) -> Renamer {
        self.pasting = (!macros.is_empty()).then_some(macros);
        self
    }

    /// The names of `binding`'s text a paste may spell, when the text names
    /// a macro that may paste: the declared ones, and whether its own name
    /// is one (see [`super::pastes`]).
    fn pasted<'t>(&self, binding: &super::bind::Binding<'t>) -> (FxHashSet<Cow<'t, [u8]>>, bool) {
        let Some(pasting) = self.pasting.as_deref() else {
            return Default::default();
        };
        if !pasting.iter().any(|m| binding.id(m).is_some()) {
            return Default::default();
        }
        // The kernel's names a renaming never reaches, the outside bodies'
        // words, and the keywords those leave out.
        let piece = |p: &[u8]| {
            binding
                .id(p)
                .is_some_and(|id| binding.verdict_id(id).is_err())
                || self.reached.as_ref().is_some_and(|r| r.contains(p))
                || is_keyword(p)
        };
        let names = binding
            .declared()
            .iter()
            .filter(|d| super::pastes::may_be_pasted(d, piece))
            .cloned()
            .collect();
        let own = self
            .kernel_name
            .as_deref()
            .is_some_and(|n| super::pastes::may_be_pasted(n, piece));
        (names, own)
    }

    /// The position macros the backend reported, if any.
    pub fn position_macros(&self) -> Option<&super::MacroNames> {
        self.position_macros.as_deref()
    }

    /// The rules alone, without the binder: for tests of the mechanics.
    #[cfg(test)]
    fn unverified(mut self) -> Renamer {
        self.verify = false;
        self
    }

    /// Binds only texts of at most `limit` bytes: for tests of a longer
    /// text's path without a text of 4 GiB.
    #[cfg(test)]
    fn with_limit(mut self, limit: usize) -> Renamer {
        self.limit = limit;
        self
    }

    /// Keeps every name in `words` as written: the words the bodies of the
    /// backend's macros name, which an expansion reads where it stands (see
    /// [`crate::backend::KeyExtras::reached`]). Unlike [`Renamer::with_macros`],
    /// they are no macros to the binder.
    pub fn with_reached(mut self, words: std::sync::Arc<super::MacroNames>) -> Renamer {
        self.reached = (!words.is_empty()).then_some(words);
        self
    }

    /// Keeps every name in `macros` as written (see [`super::MacroNames`]).
    pub fn with_macros(mut self, macros: std::sync::Arc<super::MacroNames>) -> Renamer {
        self.macros = (!macros.is_empty()).then_some(macros);
        self
    }

    /// The canonical form of `text`.
    pub fn canonicalize(&self, text: &[u8]) -> Canonical {
        let mut pass = match self.pass(text, true) {
            Ok(pass) => pass,
            Err(findings) => {
                let raw = findings.raw.or_else(|| findings.uncacheable.clone());
                return Canonical {
                    text: raw_text(text),
                    kernel_token: self.kernel_name.as_ref().map(|n| lossy(n)),
                    renamed: Vec::new(),
                    bound_renamed: false,
                    reason: raw.clone(),
                    raw,
                    uncacheable: findings.uncacheable,
                    // What the binder found is not used: nothing is renamed.
                    inferred: Vec::new(),
                    kept: Vec::new(),
                    given_up: None,
                    unparsed: Vec::new(),
                };
            }
        };
        let mut kept: Vec<(String, String)> = pass
            .refused
            .iter()
            .map(|(n, r)| (lossy(n), r.clone()))
            .collect();
        if self.infer {
            // A set, not a search of the list per declared name: a kernel
            // of many refused names (all declared between conditional
            // directives) made this quadratic (60,000 names: 3.5 s).
            let refused: FxHashSet<&[u8]> = pass.refused.iter().map(|(n, _)| n.as_ref()).collect();
            for d in pass.binding.declared() {
                if !matches!(pass.known(d), Some(Taken::Renamed { .. }))
                    && !refused.contains(d.as_ref())
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
                (lossy(from), lossy_owned(to))
            })
            .collect();
        Canonical {
            // The text written is the caller's: the pass keeps the rest
            // of its buffers for the thread's next text when dropped.
            text: std::mem::take(&mut pass.out),
            kernel_token: self
                .token
                .as_ref()
                .map(|t| String::from_utf8_lossy(t).into_owned()),
            renamed,
            bound_renamed: self.reason.is_none(),
            reason: self.reason.clone(),
            raw: None,
            uncacheable: None,
            inferred,
            kept,
            given_up: pass.binding.whole.clone(),
            unparsed: pass.binding.unparsed().to_vec(),
        }
    }

    /// Just the canonical text of `text`, without the renaming map
    /// [`Renamer::canonicalize`] also builds.
    pub fn canonical_text(&self, text: &[u8]) -> Vec<u8> {
        self.key_form(text).text
    }

    /// What a key of `text` is taken over: its canonical text and kernel
    /// token (both raw for a raw-keyed kernel), and whether it is uncacheable.
    pub fn key_form(&self, text: &[u8]) -> KeyForm<'_> {
        match self.pass(text, false) {
            Ok(mut pass) => KeyForm {
                text: std::mem::take(&mut pass.out),
                kernel_token: self.token.as_deref(),
                uncacheable: None,
            },
            Err(findings) => KeyForm {
                text: raw_text(text),
                kernel_token: self.kernel_name.as_deref(),
                uncacheable: findings.uncacheable,
            },
        }
    }

    /// Whether bound renaming is refused, and why.
    pub fn refusal(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The kernel token of a renamed text, when a kernel name was given (a
    /// raw-keyed text's is the full name: [`Renamer::key_form`] tells which).
    pub fn kernel_token(&self) -> Option<&[u8]> {
        self.token.as_deref()
    }

    /// Runs the unmarked pass; again, keeping every renamable name that also
    /// stands after a member operator; and marked, when a kept name collides.
    /// `record`: keep the renaming map, in order of first occurrence. What
    /// the dialect scan found, when the kernel is to be raw-keyed: then the
    /// binding is not used.
    fn pass<'t>(&self, text: &'t [u8], record: bool) -> Result<Pass<'_, 't, 't>, Findings> {
        let mut scanner = Scanner::new(self.position_macros.as_deref())
            .with_kernel_name(self.kernel_name.as_deref())
            .with_macros(self.macros.as_deref());
        if text.len() > self.limit || self.raw.is_some() {
            // The binder's tokens hold `u32` positions: a longer text is
            // not lexed for it but raw-keyed whole, nothing renamed, as is
            // every text when the compile records names. The scan still
            // runs (its lexing has `usize` positions): what makes a kernel
            // uncacheable does at any length.
            super::lexer::for_each_token_spliced(text, |kind, span, spliced| {
                scanner.token(text, kind, span, spliced)
            });
            let mut findings = scanner.finish(text);
            findings.raw.get_or_insert_with(|| match &self.raw {
                Some(reason) => reason.clone(),
                None => format!(
                    "it is {} bytes long, over the {} the binder takes",
                    text.len(),
                    self.limit
                ),
            });
            return Err(findings);
        }
        // One lexing serves the dialect scan, the binder and every pass.
        let tokens = super::bind::lex(text);
        // The scan rides along the first pass, where it costs a test or two
        // per token; but where it follows every parenthesis from the start
        // (a kernel name and the backend's macros) it runs first, so that a
        // raw-keyed kernel is never bound.
        let fused = if scanner.quick_ahead() {
            Some(scanner)
        } else {
            scanner.exact(text, tokens.tokens());
            let findings = scanner.finish(text);
            if !findings.is_clean() {
                return Err(findings);
            }
            None
        };
        let binding = std::rc::Rc::new(super::bind::bind_lexed(
            text,
            tokens,
            self.macros.as_deref(),
        ));
        let (pasted, own_pasted) = self.pasted(&binding);
        let pasted = std::rc::Rc::new(pasted);
        let new = |prefix, marked, members| {
            let mut p = Pass::new(self, text, prefix, marked, members, binding.clone());
            p.record = record;
            p.pasted = pasted.clone();
            p
        };
        let mut pass = new(BASE_PREFIX.to_vec(), false, Default::default());
        pass.scan = fused;
        pass.run();
        if let Some(findings) = pass.findings.take().filter(|f| !f.is_clean()) {
            return Err(findings);
        }
        if own_pasted {
            // Its name becomes the kernel token, which a pasted name would
            // not follow (see `super::pastes`).
            return Err(Findings {
                raw: Some(
                    "its own name may be spelled by a paste (`##`) in a macro it uses".into(),
                ),
                uncacheable: None,
            });
        }
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
        Ok(pass)
    }

    /// What happens to a name at a renamable position, by the rules alone
    /// (the binder's verdict comes after).
    fn decide(&self, name: &[u8]) -> Decision {
        self.decide_listed(name, self.classes.get(name).copied())
    }

    /// [`Renamer::decide`], given what the options list `name` as.
    fn decide_listed(&self, name: &[u8], class: Option<Class>) -> Decision {
        if class == Some(Class::Never)
            || self.macros.as_ref().is_some_and(|m| m.contains(name))
            || self.reached.as_ref().is_some_and(|m| m.contains(name))
        {
            return Decision::Never;
        }
        // A bound name (none is a keyword, or none is listed as bound: see
        // `new`), a symbol or a scope local is no keyword: most names met
        // are one of these, and skip the keyword test.
        let selected = class == Some(Class::Bound)
            || self.symbols && is_symbol(name)
            || self.scope_locals && is_scope_local(name);
        debug_assert!(!(selected && is_keyword(name)));
        if !selected && is_renamer_keyword(name) {
            return Decision::Never;
        }
        if self.kernel_name.as_deref() == Some(name) {
            return Decision::Token;
        }
        // The implementation's namespace holds keywords (`__int128`,
        // `_Float16`) and the macros a driver defines unasked, which no
        // list covers (NVRTC's `__volatile__`, PoCL's `_CL_*`: review
        // 2026-12-02): a name there is never renamed, even when bound.
        if names::is_reserved(name) {
            return Decision::Never;
        }
        if selected {
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
pub(super) enum Class {
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

#[cfg(test)]
mod tests;
