//! What the renamer is told ([`CanonOptions`]) and what it answers
//! ([`Canonical`], [`KeyForm`]).

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

/// What to rename, for [`super::canonical_kernel`].
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
    /// the other rules select (see [`crate::canon::bind`]).
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
    /// Why bound renaming was refused (for a raw-keyed kernel, why nothing
    /// was renamed).
    pub reason: Option<String>,
    /// Why the kernel is raw-keyed (see the module docs), when it is.
    pub raw: Option<String>,
    /// Why the kernel can never be cached (`__TIME__`), when it cannot.
    pub uncacheable: Option<String>,
    /// Names renamed by inference alone (no other rule selected them), in
    /// order of first occurrence.
    pub inferred: Vec<String>,
    /// Names the rules selected (or, with inference, the kernel declares)
    /// that were left as written, each with why: the binder did not verify
    /// them (see [`crate::canon::bind`]).
    pub kept: Vec<(String, String)>,
    /// Why the binder verified no name of the kernel (a lexical error, a
    /// macro that pastes tokens, ...), when it verified none.
    pub given_up: Option<String>,
    /// Byte ranges of the kernel's top-level items the grammar did not
    /// parse: their names are kept as written.
    pub unparsed: Vec<(usize, usize)>,
}

/// What a key is taken over: [`super::Renamer::key_form`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyForm<'r> {
    /// The canonical text.
    pub text: Vec<u8>,
    /// The kernel token (the full name for a raw-keyed kernel).
    pub kernel_token: Option<&'r [u8]>,
    /// Why the kernel can never be cached, when it cannot.
    pub uncacheable: Option<String>,
}

/// What starts every raw-keyed canonical text (see the module docs).
pub const RAW_MARKER: &[u8] = b"/*kc0 raw*/";

impl Canonical {
    /// The canonical text as UTF-8 (lossy where the kernel was not UTF-8).
    pub fn text_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.text)
    }
}
