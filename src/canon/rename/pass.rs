//! One renaming pass over a kernel's tokens (see [`super`]).

use super::names::{increment_decimal, is_numbered};
use super::out::{Out, RUN};
use super::words::{Found, Words};
use super::{is_renamer_keyword, Class, Decision, Renamer, BASE_PREFIX};
use crate::canon::bind::{Token, TokenIter, Tokens};
use crate::canon::dialect::{Findings, Scanner};
use crate::canon::lexer::{for_each_comment_word, spelling, TokenKind};
use crate::canon::scratch;
use crate::canon::spellings::Spellings;
use rustc_hash::FxHashSet;
use std::borrow::Cow;

/// A decision once taken for a spelling: kept, the kernel's own name, or the
/// canonical name (where it stands in [`Pass::names`]).
#[derive(Clone, Copy, PartialEq)]
pub(in crate::canon) enum Taken {
    /// Kept; whether it could be mistaken for a canonical name or the token.
    Keep {
        collides: bool,
    },
    Token,
    /// To be renamed, but met only as a member so far: numbered where first
    /// met as a name of the kernel, so a member spelled like it does not
    /// move the numbering.
    Pending,
    Renamed {
        from: usize,
        to: usize,
    },
}

/// Gives the dialect scan riding along a pass the token `t` the walk `rest`
/// just gave (neither a name, a punctuator, a number, a well-formed comment
/// nor a member operator); once it needs every later token at once, gives
/// it those and moves it to `scanned`.
fn feed<'m>(
    scan: &mut Option<Scanner<'m>>,
    scanned: &mut Option<Scanner<'m>>,
    text: &[u8],
    t: Token,
    rest: &TokenIter<'_>,
) {
    if let Some(s) = scan {
        if !s.quick_other(text, t.kind, &t.range(), t.spliced) {
            s.exact(text, rest.rest());
            *scanned = scan.take();
        }
    }
}

/// Where the first name of `rest` (comments may stand before it) starts, if
/// a name is first; else `usize::MAX`. After a member operator that name is
/// a member.
#[inline(never)]
fn name_after(rest: Tokens<'_>) -> usize {
    // Comments are skipped: the code alone is looked at.
    let next = rest.code().iter().find(|t| t.kind != TokenKind::Whitespace);
    match next {
        Some(t) if t.kind == TokenKind::Ident => t.start(),
        _ => usize::MAX,
    }
}

/// The next token that is neither a punctuator nor a number, which the
/// walk has nothing to do with but hand the riding scan the few it wants
/// (a tight loop of its own: most tokens are these, and each costs a test
/// of its kind rather than the walk's `match`).
#[inline(always)]
fn next_wanted<'a>(
    rest: &mut std::slice::Iter<'a, Token>,
    text: &[u8],
    scan: &mut Option<Scanner<'_>>,
) -> Option<&'a Token> {
    loop {
        let token = rest.next()?;
        match token.kind {
            // Only a punctuator of two bytes or more can matter to the scan
            // (see `Scanner::quick_punct`).
            TokenKind::Punct => {
                if token.end().wrapping_sub(token.start()) > 1 {
                    if let Some(s) = scan {
                        s.quick_punct(text, &token.range());
                    }
                }
            }
            TokenKind::Number => {
                if let Some(s) = scan {
                    s.quick_number(text, &token.range());
                }
            }
            _ => return Some(token),
        }
    }
}

/// One pass over a kernel's tokens, writing its canonical text.
///
/// Kept bytes are copied in runs: only a renamed name interrupts a run.
pub(super) struct Pass<'r, 't, 'k> {
    pub(super) renamer: &'r Renamer,
    pub(super) text: &'t [u8],
    pub(super) prefix: Vec<u8>,
    pub(super) marked: bool,
    /// Names met only in comments, and by the same index the decision
    /// taken for each (both kept for the thread's next text, as the other
    /// per-name lists are: see [`crate::canon::scratch`]).
    pub(super) taken: Spellings<'t>,
    pub(super) taken_as: Vec<Taken>,
    /// What the options list each name the binder met as, by its id: asked
    /// once per listed name rather than once per name met (when the lists
    /// are no longer than the text's names).
    pub(super) listed: Option<Vec<Option<Class>>>,
    /// Decisions for names the binder met outside comments, by its id.
    pub(super) by_id: Vec<Option<Taken>>,
    /// Renamed names in order of first occurrence (the token included),
    /// kept only when `record` is set.
    pub(super) order: Vec<(Cow<'t, [u8]>, Taken)>,
    pub(super) record: bool,
    /// The canonical names given, one after another, the last ending at
    /// `names_end`; at least [`RUN`] bytes of slack follow it.
    pub(super) names: Vec<u8>,
    pub(super) names_end: usize,
    /// The canonical name last given (`prefix` and `renamed` in decimal),
    /// `last[..last_len]`, with [`RUN`] bytes of slack after it.
    pub(super) last: Vec<u8>,
    pub(super) last_len: usize,
    pub(super) out: Vec<u8>,
    /// Set when a kept name could be mistaken for a canonical name or the token.
    pub(super) collision: bool,
    /// When set, every kept name at a renamable position is collected here.
    pub(super) kept: Option<&'k mut FxHashSet<Cow<'t, [u8]>>>,
    /// Names kept although the rules would rename them: they also stand
    /// after a member operator, so they may name a member the kernel declares.
    pub(super) keep: FxHashSet<Cow<'t, [u8]>>,
    /// Renamable names met after a member operator in this pass.
    pub(super) member_conflicts: FxHashSet<Cow<'t, [u8]>>,
    /// Names kept as written because a paste in a macro the text names may
    /// spell them (see [`crate::canon::pastes`]; shared by the passes).
    pub(super) pasted: std::rc::Rc<FxHashSet<Cow<'t, [u8]>>>,
    /// Which names the text binds (shared by the passes over one text).
    pub(super) binding: std::rc::Rc<crate::canon::bind::Binding<'t>>,
    /// Names the rules selected that the binder did not verify, with why
    /// (recorded only when `record` is set).
    pub(super) refused: Vec<(Cow<'t, [u8]>, String)>,
    /// Names renamed by inference alone (recorded only when `record` is set).
    pub(super) inferred: Vec<Cow<'t, [u8]>>,
    /// The same, always kept.
    pub(super) inferred_all: FxHashSet<Cow<'t, [u8]>>,
    /// The dialect scan, when it rides along this pass (see
    /// [`Scanner::quick`]), and what it found once the pass has run.
    pub(super) scan: Option<Scanner<'r>>,
    pub(super) findings: Option<Findings>,
    /// The short comment words met last (see [`Words`]).
    words: Words,
}

/// The room the map of names decided by spelling gets at its first entry.
const TAKEN_ROOM: usize = 64;

/// Gives the names decided by spelling their first room (out of line: once
/// per text at most).
#[cold]
#[inline(never)]
fn make_room(taken: &mut Spellings<'_>) {
    taken.reserve(TAKEN_ROOM);
}

impl<'r, 't, 'k> Pass<'r, 't, 'k> {
    pub(super) fn new(
        renamer: &'r Renamer,
        text: &'t [u8],
        prefix: Vec<u8>,
        marked: bool,
        keep: FxHashSet<Cow<'t, [u8]>>,
        binding: std::rc::Rc<crate::canon::bind::Binding<'t>>,
    ) -> Self {
        let last = [&prefix[..], &[0; RUN]].concat();
        // Room for a name of four digits per name the binder met, so that
        // a kernel of a few thousand names never regrows it (comment words
        // may add more).
        let room = binding.name_count() * (prefix.len() + 4) + RUN;
        let mut names = scratch::take(room);
        names.resize(room, 0);
        let mut by_id = scratch::take(binding.name_count());
        by_id.resize(binding.name_count(), None);
        Pass {
            renamer,
            text,
            prefix,
            marked,
            taken: Spellings::take(0),
            taken_as: scratch::take(0),
            by_id,
            listed: (renamer.classes.len() <= binding.name_count()).then(|| {
                let mut listed = vec![None; binding.name_count()];
                for (name, &class) in &renamer.classes {
                    if let Some(id) = binding.id(name) {
                        listed[id as usize] = Some(class);
                    }
                }
                listed
            }),
            order: Vec::new(),
            record: false,
            names,
            last_len: last.len() - RUN,
            last,
            names_end: 0,
            out: Vec::new(),
            collision: false,
            kept: None,
            keep,
            member_conflicts: FxHashSet::default(),
            pasted: Default::default(),
            binding,
            refused: Vec::new(),
            inferred: Vec::new(),
            inferred_all: FxHashSet::default(),
            scan: None,
            findings: None,
            words: Words::default(),
        }
    }

    /// The decision taken for `name`, if it was met.
    pub(super) fn known(&self, name: &[u8]) -> Option<Taken> {
        match self.binding.id(name) {
            Some(id) => self.by_id[id as usize],
            None => self.taken.id(name).map(|i| self.taken_as[i as usize]),
        }
    }

    /// Why the binder did not verify `name`, in words.
    pub(super) fn why(&self, name: &[u8]) -> String {
        match self.binding.verdict(name) {
            Ok(()) if self.pastes(name) => {
                "may be spelled by a paste (`##`) in a macro the kernel uses".to_string()
            }
            Ok(()) => match self.renamer.decide(name) {
                Decision::Never if is_renamer_keyword(name) => "is a keyword".to_string(),
                Decision::Never
                    if self
                        .renamer
                        .macros
                        .as_ref()
                        .is_some_and(|m| m.contains(name)) =>
                {
                    crate::canon::bind::Reason::Macro.describe().to_string()
                }
                Decision::Never if crate::canon::rename::is_reserved(name) => {
                    "is in the reserved namespace, the implementation's (keywords, \
                     a driver's macros)"
                        .to_string()
                }
                Decision::Never => "is listed in keep or free".to_string(),
                _ => "stands after a member operator".to_string(),
            },
            Err(crate::canon::bind::Reason::Whole) => {
                self.binding.whole.clone().unwrap_or_default()
            }
            Err(r) => r.describe().to_string(),
        }
    }

    pub(super) fn run(&mut self) {
        let text = self.text;
        let mut w = Out::with_room(text.len());
        if self.record {
            // At most one entry per name: no regrowing while recording.
            self.order.reserve(self.binding.name_count() + 1);
        }
        if self.marked {
            let marker = [&b"/*kc0 "[..], &self.prefix, b"*/"].concat();
            w.put(&marker, 0, marker.len());
        }
        // The binder's lexing of the text, reused: one lexing per text, and
        // its ids for the names in code, so no name there is hashed again.
        let binding = self.binding.clone();
        let mut ids = binding.code_ids().iter();
        // A struct member's own declarator is kept like a member access, as
        // is a name after a member operator: where the next declarator
        // starts, where the name after the last member operator starts, and
        // the nearer of the two (none: `usize::MAX`), so that a name that
        // is neither costs one comparison.
        let members = binding.member_declarators();
        let mut next_declarator = 0;
        let mut declarator_at = members.first().copied().unwrap_or(usize::MAX);
        let mut after_op_at = usize::MAX;
        let mut member_at = declarator_at;
        let collecting = self.kept.is_some();
        let tokens = binding.tokens();
        // The scan while it takes tokens one by one, and once it has taken
        // the rest at once.
        let mut scan = self.scan.take();
        let mut scanned = None;
        // Before a macro call is possible the scan acts on a name in code
        // only when its spelling is `asm`, a built-in macro (each starts
        // with `_`) or a backend's position macro (see `Scanner::quick_name`):
        // where no name's spelling starts so, and none is reported, no name
        // in code is handed to it, and none is tested per occurrence.
        let mut scan_names = scan.as_ref().is_some_and(|s| {
            (0..binding.name_count() as u32).any(|id| s.quick_wants_name(binding.name(id)))
        });
        // The code in runs, each comment taken where it stands (the binder
        // keeps the two apart: see `TokenList`). A loop per run: one loop
        // that a comment also entered cost a register copy per token.
        let mut rest = tokens.iter();
        loop {
            while let Some(&token) = next_wanted(rest.code_run(), text, &mut scan) {
                let (kind, span, spliced) = (token.kind, &token.range(), token.spliced);
                match kind {
                    TokenKind::Ident => {
                        let id = ids.next().copied();
                        if scan_names {
                            if let Some(s) = &mut scan {
                                s.quick_name(text, span, spliced);
                            }
                        }
                        let member = span.start == member_at;
                        if member {
                            if span.start == declarator_at {
                                next_declarator += 1;
                                declarator_at =
                                    members.get(next_declarator).copied().unwrap_or(usize::MAX);
                            }
                            if span.start == after_op_at {
                                // `a.template f<T>()`: the member is the name
                                // after `template`.
                                after_op_at = match &text[span.clone()] {
                                    b"template" => name_after(rest.rest()),
                                    _ => usize::MAX,
                                };
                            }
                            member_at = declarator_at.min(after_op_at);
                        }
                        // The common case, a name in code whose decision is
                        // taken: what `name` would do, without its spelling.
                        if let (Some(id), false) = (id, member || collecting) {
                            match self.by_id[id as usize] {
                                Some(Taken::Keep { collides }) => {
                                    self.collision |= collides;
                                    continue;
                                }
                                Some(Taken::Renamed { from, to }) => {
                                    w.replace(
                                        text,
                                        (span.start, span.end),
                                        &self.names,
                                        (from, to),
                                    );
                                    continue;
                                }
                                None => {
                                    self.first_in_code(&mut w, id, span.start, span.end);
                                    continue;
                                }
                                _ => {}
                            }
                        }
                        self.name(&mut w, span.start, span.end, member, spliced, id);
                    }
                    TokenKind::Dot | TokenKind::Arrow | TokenKind::ColonColon => {
                        after_op_at = name_after(rest.rest());
                        member_at = declarator_at.min(after_op_at);
                    }
                    TokenKind::Whitespace => {}
                    // No comment is in a run of code.
                    _ => {
                        feed(&mut scan, &mut scanned, text, token, &rest);
                        scan_names &= scan.is_some();
                    }
                }
            }
            // The run ended at a comment, or at the end.
            let Some(&comment) = rest.next() else {
                break;
            };
            if comment.kind == TokenKind::UnterminatedComment {
                feed(&mut scan, &mut scanned, text, comment, &rest);
                scan_names &= scan.is_some();
            }
            self.comment(&mut w, comment.start(), comment.end());
        }
        self.out = w.finish(text);
        let whole = self.binding.whole.is_some();
        self.findings = scan.or(scanned).map(|mut s| {
            // The binder searched the text for trigraphs: a text holding one
            // is given up whole, so none is there when it is not.
            if !whole {
                s.no_trigraphs();
            }
            s.finish(text)
        });
    }

    /// Words inside a comment: identifiers are renamed like code; nothing
    /// else there (quotes included) means anything.
    fn comment(&mut self, w: &mut Out, start: usize, end: usize) {
        for_each_comment_word(&self.text[start..end], |span, spliced| {
            self.name(
                w,
                start + span.start,
                start + span.end,
                false,
                spliced,
                None,
            )
        });
    }

    /// An identifier at a renamable position (`member`: right after `.`,
    /// `->` or `::`, where it is kept). `id`: the binder's id for it, when
    /// it stands in code.
    #[inline]
    fn name(
        &mut self,
        w: &mut Out,
        start: usize,
        end: usize,
        member: bool,
        spliced: bool,
        id: Option<u32>,
    ) {
        let text = self.text;
        let spelled = if spliced {
            spelling(&text[start..end])
        } else {
            Cow::Borrowed(&text[start..end])
        };
        // A word of a comment the binder never met was decided by spelling:
        // that map is asked first, and a word it lacks costs a second lookup.
        // A short word met before is found without either (see `Words`).
        let key = if spliced || id.is_some() {
            None
        } else {
            Words::key(text, start, end)
        };
        let (id, known) = match (id, key.and_then(|k| self.words.get(k))) {
            (Some(id), _) | (None, Some(Found::Id(id))) => (Some(id), self.by_id[id as usize]),
            (None, Some(Found::Taken(taken))) => (None, Some(taken)),
            (None, None) => match self.taken.id(&spelled).map(|i| self.taken_as[i as usize]) {
                Some(taken) => {
                    // A decision by spelling never changes once taken
                    // (but a `Pending` one, which only a name in code gets).
                    if let (Some(k), false) = (key, taken == Taken::Pending) {
                        self.words.put(k, Found::Taken(taken));
                    }
                    (None, Some(taken))
                }
                None => {
                    let id = self.binding.id(&spelled);
                    if let (Some(k), Some(id)) = (key, id) {
                        self.words.put(k, Found::Id(id));
                    }
                    (id, id.and_then(|id| self.by_id[id as usize]))
                }
            },
        };
        if !member && self.kept.is_none() {
            // The common case: a name whose decision is taken.
            if let Some(Taken::Keep { collides }) = known {
                self.collision |= collides;
                return;
            }
        }
        let taken = if member {
            let elsewhere = match known {
                Some(t) => t,
                None => self.take(&spelled, id, true),
            };
            // The rules' names keep their old member rule; an inferred name
            // was verified by the binder, and a member the kernel declares
            // stands in a struct body, kept as written there (a member
            // declarator) or kept with every name in it.
            if !matches!(elsewhere, Taken::Keep { .. }) && !self.inferred_all.contains(&spelled) {
                self.member_conflicts.insert(spelled.clone());
            }
            Taken::Keep {
                collides: self.kept_collides(&spelled),
            }
        } else {
            match known {
                Some(Taken::Pending) => self.number(&spelled, id),
                Some(t) => t,
                None => self.take(&spelled, id, false),
            }
        };
        if let Taken::Keep { collides } = taken {
            self.collision |= collides;
            if let Some(kept) = self.kept.as_deref_mut() {
                kept.insert(spelled);
            }
            return;
        }
        w.skip(text, start, end);
        self.put_taken(taken, w);
    }

    /// A name in code met for the first time where it may be renamed (not
    /// as a member, not while kept names are collected): what
    /// [`Pass::name`] does for it, with the binder's spelling of `id`
    /// instead of one taken from the text, and no map of comment words asked.
    #[inline(never)]
    fn first_in_code(&mut self, w: &mut Out, id: u32, start: usize, end: usize) {
        let binding = self.binding.clone();
        match self.take(binding.name(id), Some(id), false) {
            Taken::Keep { collides } => self.collision |= collides,
            Taken::Renamed { from, to } => {
                w.replace(self.text, (start, end), &self.names, (from, to))
            }
            taken => {
                w.skip(self.text, start, end);
                self.put_taken(taken, w);
            }
        }
    }

    /// Writes what a renamed name (or the kernel's own name) becomes.
    #[inline]
    fn put_taken(&self, taken: Taken, w: &mut Out) {
        match taken {
            Taken::Keep { .. } | Taken::Pending => {}
            Taken::Token if self.marked => {
                w.put(&self.prefix, 0, self.prefix.len());
                w.put(b"0", 0, 1);
            }
            Taken::Token => {
                let token = self.renamer.token.as_deref().unwrap_or_default();
                w.put(token, 0, token.len())
            }
            Taken::Renamed { from, to } => w.put(&self.names, from, to),
        }
    }

    /// [`Pass::put_taken`] for a name written outside the pass.
    pub(super) fn write_taken(&self, taken: Taken, out: &mut Vec<u8>) {
        match taken {
            Taken::Keep { .. } | Taken::Pending => {}
            Taken::Token if self.marked => {
                out.extend_from_slice(&self.prefix);
                out.push(b'0');
            }
            Taken::Token => {
                out.extend_from_slice(self.renamer.token.as_deref().unwrap_or_default())
            }
            Taken::Renamed { from, to } => out.extend_from_slice(&self.names[from..to]),
        }
    }

    /// Takes the decision for a spelling met for the first time (`id`: the
    /// binder's, when it has one; `member`: met as a member).
    // A `Cow`, not a slice: where the spelling is kept its clone keeps
    // the text's borrow (a slice would lose the lifetime and be copied).
    #[allow(clippy::ptr_arg)]
    fn take(&mut self, spelled: &Cow<'t, [u8]>, id: Option<u32>, member: bool) -> Taken {
        debug_assert!(id.is_some() || self.binding.id(spelled).is_none());
        let verdict = match id {
            Some(id) => self.binding.verdict_id(id),
            // Without an id the binder never met the name (`name` asked
            // it): what `verdict` would say, without hashing it again.
            None if self.binding.whole.is_some() => Err(crate::canon::bind::Reason::Whole),
            None => Ok(()),
        };
        let decision = if !self.keep.is_empty() && self.keep.contains(spelled) {
            Decision::Never
        } else {
            let listed = match (id, &self.listed) {
                (Some(id), Some(listed)) => listed[id as usize],
                _ => self.renamer.classes.get(spelled.as_ref()).copied(),
            };
            match self.renamer.decide_listed(spelled, listed) {
                // A name is renamed only when the binder verified it, and
                // no paste may spell it.
                Decision::Rename
                    if self.renamer.verify && verdict.is_err() || self.pastes(spelled) =>
                {
                    if self.record {
                        let why = self.why(spelled);
                        self.refused.push((spelled.clone(), why));
                    }
                    Decision::Never
                }
                Decision::Keep
                    if self.renamer.infer
                        && verdict.is_ok()
                        && id.is_some_and(|id| self.binding.declares_id(id))
                        && !self.pastes(spelled) =>
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
                collides: self.kept_collides(spelled),
            },
            Decision::Token => {
                let token = self.renamer.token.as_deref().unwrap_or_default();
                if !self.marked && is_numbered(token, BASE_PREFIX) {
                    self.collision = true;
                }
                Taken::Token
            }
            Decision::Rename if member => Taken::Pending,
            Decision::Rename => return self.number(spelled, id),
        };
        if self.record && taken == Taken::Token {
            self.order.push((spelled.clone(), taken));
        }
        self.store(spelled, id, taken);
        taken
    }

    /// Whether a paste may spell `name` (see [`Pass::pasted`]).
    fn pastes(&self, name: &[u8]) -> bool {
        !self.pasted.is_empty() && self.pasted.contains(name)
    }

    /// Gives a name to be renamed its canonical number.
    // A `Cow`, not a slice: see `take`.
    #[allow(clippy::ptr_arg)]
    fn number(&mut self, spelled: &Cow<'t, [u8]>, id: Option<u32>) -> Taken {
        // The name before, its number plus one, in place: no division per
        // name, and one short run to copy.
        self.last_len = increment_decimal(&mut self.last, self.prefix.len(), self.last_len);
        let (from, len) = (self.names_end, self.last_len);
        let to = from + len;
        // Room for the name and the slack after it (see `names`).
        if to + RUN > self.names.len() {
            self.names.resize((to + RUN).max(2 * self.names.len()), 0);
        }
        // `last` has slack too: one block, and the bytes past the name are
        // slack in `names`.
        let block = self.last.first_chunk::<RUN>();
        let room = self
            .names
            .get_mut(from..)
            .and_then(<[u8]>::first_chunk_mut::<RUN>);
        if let (Some(block), Some(room), true) = (block, room, len <= RUN) {
            *room = *block;
        } else {
            self.names[from..to].copy_from_slice(&self.last[..len]);
        }
        self.names_end = to;
        let taken = Taken::Renamed { from, to };
        if self.record {
            self.order.push((spelled.clone(), taken));
        }
        self.store(spelled, id, taken);
        taken
    }

    #[inline]
    // A `Cow`, not a slice: see `take`.
    #[allow(clippy::ptr_arg)]
    fn store(&mut self, spelled: &Cow<'t, [u8]>, id: Option<u32>, taken: Taken) {
        match id {
            Some(id) => self.by_id[id as usize] = Some(taken),
            None => {
                // Names without an id are comment words the binder never
                // met: none in most texts, dozens in a commented generated
                // one, where growing from empty rehashed it five times.
                if self.taken.is_empty() {
                    make_room(&mut self.taken);
                }
                let i = self.taken.intern(spelled.clone()) as usize;
                if i == self.taken_as.len() {
                    self.taken_as.push(taken);
                } else {
                    self.taken_as[i] = taken;
                }
            }
        }
    }

    /// Whether a kept name could be read back as a canonical name or as the
    /// kernel token (only the unmarked form cares: the marked one was chosen
    /// to avoid every kept name).
    fn kept_collides(&self, kept: &[u8]) -> bool {
        !self.marked
            && (is_numbered(kept, BASE_PREFIX) || self.renamer.token.as_deref() == Some(kept))
    }
}

impl Drop for Pass<'_, '_, '_> {
    /// Keeps the per-name lists for the thread's next text (the spellings
    /// keep their own; the text written is the caller's).
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.by_id));
        scratch::give(std::mem::take(&mut self.names));
        scratch::give(std::mem::take(&mut self.taken_as));
    }
}
