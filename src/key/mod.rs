//! Keys: every digest kcache takes, computed in one place each.
//!
//! * [`digest_parts`]: the hex digest of a list of length-prefixed parts, so no
//!   two different lists collide by concatenation.
//! * [`make_key`]: the per-device handle-cache key shared by every backend:
//!   device, kernel name, source and options, each digested on its own and
//!   joined by `:`.
//! * [`program_key`]: the key a compiled program is found under, in the code
//!   cache and in the persistent stores.
//!
//! Every key carries [`KEY_VERSION`]: bump it whenever the meaning of a key's
//! inputs changes, and every old entry misses. A program key also carries its
//! backend's own version ([`crate::backend::Backend::key_version`]): bump
//! that one when only one backend's keying changes, so the other backends'
//! entries still hit.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// The key schema version, mixed into every digest this module takes.
///
/// 2: the lexer reads lines, splices and digraphs as GCC does; kernels it may
/// misread, or that use position macros, are keyed on their raw text and
/// full name; groups hold only kernels proved isolated.
///
/// 3: a name is renamed only where the binder verifies it (a name the rules
/// select that also stands in a directive, `asm`, an attribute, ... is kept
/// as written): a version-2 canonical text renamed such names, and a
/// different kernel's version-3 text can equal it.
///
/// 4: a local spelled like a member of a struct the binder reads, and a local
/// named in an `asm` operand, are renamed (version 3 kept them), and inferred
/// names are numbered from their first occurrence outside a member access.
///
/// 5: a name a macro can reach through a path version 4 did not follow (a
/// macro whose body names a stringizing macro, a `%:` stringify or
/// `%:define`, the parentheses after a macro call, a stringizing macro
/// passed to a macro that calls its parameter) is kept as written: version 4
/// renamed it, so two kernels whose compiled strings differ could share a
/// version-4 key (`tests/canon_macro_reach.rs`).
pub const KEY_VERSION: u32 = 5;

/// Width in hex characters of every digest field.
pub const DIGEST_HEX_LEN: usize = 64;

/// A blake3 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest as 64 lowercase hex characters.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// Parses 64 hex characters.
    pub fn from_hex(hex: &str) -> Option<Digest> {
        blake3::Hash::from_hex(hex)
            .ok()
            .map(|h| Digest(*h.as_bytes()))
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", &self.to_hex()[..16])
    }
}

/// Incremental form of [`digest_parts`]: feed parts one at a time.
///
/// Small parts are gathered in a buffer and reach blake3 together: a key is
/// mostly short parts (names, flags, lengths), and each `update` call costs
/// more than hashing a short part's bytes. The digest is that of the same
/// byte stream, however it is cut.
#[derive(Clone)]
pub struct PartsHasher {
    hasher: blake3::Hasher,
    staged: [u8; STAGE],
    len: usize,
}

/// How many bytes of small parts [`PartsHasher`] gathers (a multiple of
/// blake3's 64-byte block).
const STAGE: usize = 512;

impl Default for PartsHasher {
    fn default() -> Self {
        PartsHasher {
            hasher: blake3::Hasher::new(),
            staged: [0; STAGE],
            len: 0,
        }
    }
}

impl PartsHasher {
    /// An empty list of parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one part, prefixed by its length.
    pub fn part(&mut self, part: impl AsRef<[u8]>) -> &mut Self {
        let part = part.as_ref();
        let n = part.len();
        let len = (n as u64).to_le_bytes();
        if self.len + len.len() + n > STAGE {
            self.flush();
        }
        if len.len() + n <= STAGE {
            let at = self.len;
            self.staged[at..at + len.len()].copy_from_slice(&len);
            self.staged[at + len.len()..at + len.len() + n].copy_from_slice(part);
            self.len += len.len() + n;
        } else {
            self.hasher.update(&len);
            self.hasher.update(part);
        }
        self
    }

    fn flush(&mut self) {
        self.hasher.update(&self.staged[..self.len]);
        self.len = 0;
    }

    /// The digest of the parts so far.
    pub fn finish(&self) -> Digest {
        if self.len == 0 {
            return Digest(*self.hasher.finalize().as_bytes());
        }
        let mut h = self.hasher.clone();
        h.update(&self.staged[..self.len]);
        Digest(*h.finalize().as_bytes())
    }
}

/// The digest of `parts`, each prefixed by its length (u64, little endian), so
/// `["ab", "c"]` and `["a", "bc"]` never collide.
pub fn digest_parts_raw<I, P>(parts: I) -> Digest
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    let mut h = PartsHasher::new();
    for p in parts {
        h.part(p);
    }
    h.finish()
}

/// The hex digest of `parts`, each length-prefixed (see [`digest_parts_raw`]).
pub fn digest_parts<I, P>(parts: I) -> String
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    digest_parts_raw(parts).to_hex()
}

/// Digest of one named key field: the version, the field's name, then its parts.
fn field_digest<'a>(field: &str, parts: impl IntoIterator<Item = &'a [u8]>) -> Digest {
    field_digest_at(KEY_VERSION, field, parts)
}

fn field_digest_at<'a>(
    version: u32,
    field: &str,
    parts: impl IntoIterator<Item = &'a [u8]>,
) -> Digest {
    let mut h = PartsHasher::new();
    h.part(b"kcache-key")
        .part(version.to_le_bytes())
        .part(field);
    for p in parts {
        h.part(p);
    }
    h.finish()
}

/// Kernel source text that carries its own digest once computed, so keying
/// the same source again costs O(1) rather than O(length).
///
/// Clones share the text and, once either has computed it, the digest.
#[derive(Clone)]
pub struct Source {
    inner: Arc<SourceInner>,
}

struct SourceInner {
    text: Box<[u8]>,
    digest: OnceLock<Digest>,
}

impl Source {
    /// Wraps `text`; nothing is digested until a key needs it.
    pub fn new(text: impl Into<Box<[u8]>>) -> Self {
        Source {
            inner: Arc::new(SourceInner {
                text: text.into(),
                digest: OnceLock::new(),
            }),
        }
    }

    /// The text.
    pub fn bytes(&self) -> &[u8] {
        &self.inner.text
    }

    /// The digest of the text as [`make_key`]'s source field, computed once.
    pub fn digest(&self) -> Digest {
        *self
            .inner
            .digest
            .get_or_init(|| field_digest("source", [&self.inner.text[..]]))
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("len", &self.inner.text.len())
            .field("digested", &self.inner.digest.get().is_some())
            .finish()
    }
}

impl From<&str> for Source {
    fn from(s: &str) -> Self {
        Source::new(s.as_bytes())
    }
}

impl From<String> for Source {
    fn from(s: String) -> Self {
        Source::new(s.into_bytes())
    }
}

impl From<Vec<u8>> for Source {
    fn from(s: Vec<u8>) -> Self {
        Source::new(s)
    }
}

/// The per-device handle-cache key every backend uses:
/// `<device>:<name>:<source>:<options>`, four 64-hex-character digests.
///
/// Each field is digested on its own (with [`KEY_VERSION`] and the field's
/// name), so a `:` or `=` inside a value can never shift bytes from one field
/// into another. Options are sorted (by key, then value) so their order never
/// matters, and digested as length-prefixed parts so no option can be split
/// into two or two merged into one. The source field comes from
/// [`Source::digest`], computed once per source.
pub fn make_key<K, V>(device: &str, name: &str, source: &Source, options: &[(K, V)]) -> String
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut sorted: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    sorted.sort_unstable();
    let count = (sorted.len() as u64).to_le_bytes();
    let option_parts = std::iter::once(&count[..]).chain(
        sorted
            .iter()
            .flat_map(|(k, v)| [k.as_bytes(), v.as_bytes()]),
    );
    let fields = [
        field_digest("device", [device.as_bytes()]),
        field_digest("name", [name.as_bytes()]),
        source.digest(),
        field_digest("options", option_parts),
    ];
    let mut key = String::with_capacity(4 * DIGEST_HEX_LEN + 3);
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            key.push(':');
        }
        key.push_str(&f.to_hex());
    }
    key
}

/// Everything that decides a compiled program's bytes, for [`program_key`].
#[derive(Clone, Copy, Debug)]
pub struct ProgramKeyInput<'a> {
    /// The backend family (`cc`, `opencl`, `cuda`, `vulkan`).
    pub backend: &'a str,
    /// The backend's own key version ([`crate::backend::Backend::key_version`]):
    /// a change to what one backend's keys mean orphans that backend's
    /// entries only, where [`KEY_VERSION`] orphans them all.
    pub backend_key_version: u32,
    /// The compiler's identity: resolved path, version output, target or
    /// architecture; a change of compiler never hits an old entry.
    pub identity: &'a str,
    /// The option list, in order: compiler flags can depend on their order.
    pub options: &'a [String],
    /// The kernel's canonical text ([`crate::canon::canonical_kernel`]).
    pub canonical: &'a [u8],
    /// The kernel token its own name contributes ([`crate::canon::kernel_token`]):
    /// the canonical text determines a kernel up to renaming only together
    /// with it.
    pub kernel_token: Option<&'a str>,
    /// Digests of whatever else the compile reads (the headers a kernel
    /// includes), in a deterministic order.
    pub extra: &'a [Digest],
}

/// The key a compiled kernel is found under, in the code cache and in every
/// persistent store.
pub fn program_key(input: &ProgramKeyInput<'_>) -> Digest {
    let mut h = PartsHasher::new();
    h.part(b"kcache-key")
        .part(KEY_VERSION.to_le_bytes())
        .part("program")
        .part(input.backend)
        .part(input.backend_key_version.to_le_bytes())
        .part(input.identity)
        .part((input.options.len() as u64).to_le_bytes());
    for o in input.options {
        h.part(o);
    }
    match input.kernel_token {
        Some(t) => h.part([1]).part(t),
        None => h.part([0]),
    };
    h.part(input.canonical)
        .part((input.extra.len() as u64).to_le_bytes());
    for d in input.extra {
        h.part(d.as_bytes());
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(device: &str, name: &str, source: &str, options: &[(&str, &str)]) -> String {
        make_key(device, name, &Source::from(source), options)
    }

    /// The byte stream a list of parts stands for, hashed in one call.
    fn reference(parts: &[Vec<u8>]) -> Digest {
        let mut bytes = Vec::new();
        for p in parts {
            bytes.extend_from_slice(&(p.len() as u64).to_le_bytes());
            bytes.extend_from_slice(p);
        }
        Digest(*blake3::hash(&bytes).as_bytes())
    }

    /// A digest known from before parts were gathered: a change to how
    /// [`PartsHasher`] feeds blake3 must not move any key.
    #[test]
    fn parts_digests_are_those_of_before_the_gathering() {
        assert_eq!(
            digest_parts(["kcache", "", "a\0b"]),
            "1313ad347b69ee6fdd6c0904c587db258199b83d18d359383a9d404081b2b6fa"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// However parts are cut (empty, short, around the gathering
        /// buffer's size, larger than it), the digest is that of their
        /// length-prefixed bytes in one stream, finished midway or at the end.
        #[test]
        fn parts_hash_as_one_length_prefixed_stream(
            sizes in proptest::collection::vec(
                proptest::prop_oneof![0usize..16, 490usize..530, 1000usize..1200],
                0..24,
            ),
            seed in proptest::prelude::any::<u8>(),
        ) {
            let parts: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, n)| (0..*n).map(|j| (i * 31 + j) as u8 ^ seed).collect())
                .collect();
            let mut h = PartsHasher::new();
            for (i, p) in parts.iter().enumerate() {
                h.part(p);
                proptest::prop_assert_eq!(h.finish(), reference(&parts[..=i]));
            }
            proptest::prop_assert_eq!(h.finish(), reference(&parts));
            proptest::prop_assert_eq!(h.clone().finish(), reference(&parts));
        }
    }

    #[test]
    fn digest_parts_is_length_prefixed() {
        assert_ne!(digest_parts(["ab", "c"]), digest_parts(["a", "bc"]));
        assert_ne!(digest_parts(["a"]), digest_parts(["a", ""]));
        assert_ne!(digest_parts::<[&str; 0], &str>([]), digest_parts([""]));
        assert_eq!(digest_parts(["x", "y"]).len(), DIGEST_HEX_LEN);
    }

    #[test]
    fn make_key_has_four_fixed_width_fields() {
        let k = key("0", "k", "src", &[("O", "3")]);
        let fields: Vec<&str> = k.split(':').collect();
        assert_eq!(fields.len(), 4);
        assert!(fields.iter().all(|f| f.len() == DIGEST_HEX_LEN));
    }

    #[test]
    fn device_changes_the_key() {
        assert_ne!(key("0", "k", "s", &[]), key("1", "k", "s", &[]));
    }

    #[test]
    fn name_changes_the_key() {
        assert_ne!(key("0", "k", "s", &[]), key("0", "k2", "s", &[]));
    }

    #[test]
    fn source_changes_the_key() {
        assert_ne!(key("0", "k", "s", &[]), key("0", "k", "s ", &[]));
    }

    #[test]
    fn options_change_the_key() {
        assert_ne!(key("0", "k", "s", &[]), key("0", "k", "s", &[("O", "3")]));
        assert_ne!(
            key("0", "k", "s", &[("O", "3")]),
            key("0", "k", "s", &[("O", "2")])
        );
    }

    #[test]
    fn option_order_never_matters() {
        assert_eq!(
            key("0", "k", "s", &[("a", "1"), ("b", "2"), ("a", "0")]),
            key("0", "k", "s", &[("b", "2"), ("a", "0"), ("a", "1")])
        );
    }

    #[test]
    fn options_cannot_be_split_or_merged() {
        assert_ne!(
            key("0", "k", "s", &[("a", "b=c")]),
            key("0", "k", "s", &[("a", "b"), ("c", "")])
        );
        assert_ne!(
            key("0", "k", "s", &[("a,b", "")]),
            key("0", "k", "s", &[("a", ""), ("b", "")])
        );
    }

    #[test]
    fn separators_in_values_do_not_shift_fields() {
        assert_ne!(key("0:1", "k", "s", &[]), key("0", "1:k", "s", &[]));
        assert_ne!(key("0", "k:s", "", &[]), key("0", "k", ":s", &[]));
    }

    #[test]
    fn key_version_changes_every_field() {
        for field in ["device", "name", "source", "options", "program"] {
            assert_ne!(
                field_digest(field, [b"k".as_slice()]),
                field_digest_at(KEY_VERSION + 1, field, [b"k".as_slice()]),
                "{field}"
            );
        }
    }

    #[test]
    fn repeated_source_is_digested_once() {
        let s = Source::from("int x;");
        assert!(s.inner.digest.get().is_none());
        let a = make_key::<&str, &str>("0", "k", &s, &[]);
        assert!(s.inner.digest.get().is_some());
        let clone = s.clone();
        let b = make_key::<&str, &str>("0", "k", &clone, &[]);
        assert_eq!(a, b);
        assert_eq!(a, key("0", "k", "int x;", &[]));
    }

    fn pkey<'a>(f: impl FnOnce(&mut ProgramKeyInput<'a>)) -> Digest {
        // Leaked so an override may borrow a caller's local for the same 'a.
        let options: &'a [String] = Box::leak(vec!["-O2".to_string()].into_boxed_slice());
        let extra: &'a [Digest] = Box::leak(vec![digest_parts_raw(["h"])].into_boxed_slice());
        let mut input = ProgramKeyInput {
            backend: "cc",
            backend_key_version: 1,
            identity: "gcc 12",
            options,
            canonical: b"void k(){}",
            kernel_token: Some("k"),
            extra,
        };
        f(&mut input);
        program_key(&input)
    }

    #[test]
    fn program_key_sees_every_input() {
        let base = pkey(|_| {});
        assert_eq!(base, pkey(|_| {}));
        assert_ne!(base, pkey(|i| i.backend = "opencl"));
        assert_ne!(base, pkey(|i| i.backend_key_version = 2));
        assert_ne!(base, pkey(|i| i.identity = "gcc 13"));
        assert_ne!(base, pkey(|i| i.options = &[]));
        assert_ne!(base, pkey(|i| i.canonical = b"void k(){ }"));
        assert_ne!(base, pkey(|i| i.kernel_token = Some("k2")));
        assert_ne!(base, pkey(|i| i.kernel_token = None));
        assert_ne!(base, pkey(|i| i.extra = &[]));
    }

    #[test]
    fn program_key_option_order_matters() {
        let a = ["-O2".to_string(), "-O3".to_string()];
        let b = ["-O3".to_string(), "-O2".to_string()];
        assert_ne!(pkey(|i| i.options = &a), pkey(|i| i.options = &b));
    }

    #[test]
    fn digest_hex_round_trips() {
        let d = digest_parts_raw(["x"]);
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex("zz"), None);
    }
}
