//! How the resolver lays compiled programs out in a persistent store.
//!
//! Two kinds of entry, both under readable prefixes:
//!
//! * `kcache/kernel/<key>`: a kernel's record under its program key
//!   ([`crate::key::program_key`], 32 bytes). Version 2 (what
//!   [`store_program`](crate::resolve::Resolver) writes when the program is
//!   small, [`INLINE_MAX_BYTES`] counting every copy) carries the program's
//!   bytes itself, so a hit is one read:
//!
//!   ```text
//!   offset  size  field
//!        0     1  version, 2
//!        1    32  the kernel's key (the record names the key it answers)
//!       33    32  the program's id: blake3 of its bytes
//!       65     4  symbol length s, u32 little endian
//!       69     s  the symbol it was compiled under (UTF-8)
//!     69+s     n  the program's bytes, to the end
//!   ```
//!
//!   Version 1 (a larger program) is a version byte, the program's id and
//!   the symbol; its bytes are the program entry's.
//! * `kcache/program/<id>`: a program's bytes, as its backend's `load` takes
//!   them back; `<id>` is the blake3 digest of those bytes (32 bytes), so one
//!   program serves every kernel compiled into it. Written only for programs
//!   too large to inline.
//!
//! The store verifies every entry's bytes against the checksum they were
//! written with; [`load_program`] and [`check_inline`] also check that a
//! program's bytes hash to the id its record names, so bytes replaced under a
//! valid id (with the store's checksum recomputed) are never loaded, and a
//! version-2 record naming another key than the one looked up is not used.
//! A kcache that predates version 2 takes such a record for a malformed one:
//! a miss (it compiles and writes its own), never a misread.

use std::sync::Arc;

use crate::key::Digest;
use crate::store::{key_from_hex, key_to_hex, CorruptEntry, Store, StoreError};

const PROGRAM_PREFIX: &[u8] = b"kcache/program/";
const KERNEL_PREFIX: &[u8] = b"kcache/kernel/";
const RECORD_VERSION: u8 = 1;
const INLINE_RECORD_VERSION: u8 = 2;
/// Bytes before an inline record's symbol.
const INLINE_HEAD: usize = 1 + 32 + 32 + 4;

/// The most bytes of program a compile stores inline, every kernel's copy
/// counted: a program this small whose kernels' records each carry it is
/// answered in one read; a larger one is stored once, beside its records.
pub const INLINE_MAX_BYTES: usize = 64 << 10;

/// A stored program's id: the digest of its bytes.
pub fn program_id(binary: &[u8]) -> Digest {
    Digest(*blake3::hash(binary).as_bytes())
}

/// Where a program's bytes are stored.
pub fn program_entry_key(id: &Digest) -> Vec<u8> {
    [PROGRAM_PREFIX, id.as_bytes()].concat()
}

/// The bytes of program `id`, only if they hash to `id`. Bytes that do not
/// are removed from the store and reported as [`StoreError::Forged`]: the
/// caller counts it and compiles instead.
///
/// Bytes equal to ones this process already found to hash to `id` are not
/// hashed again (a bounded per-process memo): equality with verified bytes
/// is the same proof, at memory speed.
pub fn load_program(store: &dyn Store, id: &Digest) -> Result<Option<Vec<u8>>, StoreError> {
    let key = program_entry_key(id);
    let Some(bytes) = store.get(&key)? else {
        return Ok(None);
    };
    if hashes_to(id, &bytes) {
        return Ok(Some(bytes));
    }
    if let Err(e) = store.remove(&key) {
        tracing::debug!(error = %e, "could not remove a stored program whose bytes are not its id's");
    }
    Err(StoreError::Forged {
        what: entry_name(&key),
    })
}

/// Whether `bytes` hash to `id`, by the per-process memo first.
fn hashes_to(id: &Digest, bytes: &[u8]) -> bool {
    hashes_to_then(id, bytes, || verified::remember(id, bytes))
}

/// Whether `bytes` hash to `id`, by the memo first; `remember` keeps bytes
/// just found to.
fn hashes_to_then(id: &Digest, bytes: &[u8], remember: impl FnOnce()) -> bool {
    if verified::holds(id, bytes) {
        return true;
    }
    if program_id(bytes) == *id {
        remember();
        return true;
    }
    false
}

/// Checks the program bytes an inline record carries against the id it
/// names, as [`load_program`] checks a program entry's: a record whose bytes
/// do not hash to its id is removed and reported as [`StoreError::Forged`].
pub fn check_inline(store: &dyn Store, key: &Digest, record: &Record) -> Result<(), StoreError> {
    let Some((all, at)) = &record.inline else {
        return Ok(());
    };
    // The memo shares the record's buffer: a hit copies no program.
    let keep = || verified::keep(&record.program, Arc::clone(all), *at);
    if hashes_to_then(&record.program, &all[*at..], keep) {
        return Ok(());
    }
    let entry = kernel_entry_key(key);
    if let Err(e) = store.remove(&entry) {
        tracing::debug!(error = %e, "could not remove a kernel record whose program is not its id's");
    }
    Err(StoreError::Forged {
        what: entry_name(&entry),
    })
}

/// Program bytes this process verified against their id, kept to compare
/// the next read of the same program with: two generations of at most
/// [`verified::MAX_BYTES`] each (a full one becomes the previous one, the
/// older is dropped).
pub(crate) mod verified {
    use crate::key::Digest;
    use rustc_hash::FxHashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};

    /// Program bytes per generation.
    pub const MAX_BYTES: usize = 16 << 20;

    /// Verified bytes: `.0[.1..]`, shared with the record they came in.
    type Held = (Arc<Vec<u8>>, usize);

    #[derive(Default)]
    struct Memo {
        current: FxHashMap<Digest, Held>,
        previous: FxHashMap<Digest, Held>,
        bytes: usize,
    }

    fn memo() -> &'static Mutex<Memo> {
        static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
        MEMO.get_or_init(Default::default)
    }

    /// Whether `bytes` equal bytes already verified to hash to `id`.
    pub fn holds(id: &Digest, bytes: &[u8]) -> bool {
        let m = memo().lock().unwrap_or_else(PoisonError::into_inner);
        m.current
            .get(id)
            .or_else(|| m.previous.get(id))
            .is_some_and(|(all, at)| all[*at..] == *bytes)
    }

    /// Remembers `bytes`, just verified to hash to `id` (a copy).
    pub fn remember(id: &Digest, bytes: &[u8]) {
        if bytes.len() <= MAX_BYTES {
            keep(id, Arc::new(bytes.to_vec()), 0);
        }
    }

    /// Remembers `all[at..]`, just verified to hash to `id`, sharing `all`
    /// (counted whole: it is what stays allocated).
    pub fn keep(id: &Digest, all: Arc<Vec<u8>>, at: usize) {
        if all.len() > MAX_BYTES || at > all.len() {
            return;
        }
        let mut m = memo().lock().unwrap_or_else(PoisonError::into_inner);
        if m.bytes + all.len() > MAX_BYTES {
            m.previous = std::mem::take(&mut m.current);
            m.bytes = 0;
        }
        m.bytes += all.len();
        m.current.insert(*id, (all, at));
    }
}

/// Where a kernel's record is stored.
pub fn kernel_entry_key(key: &Digest) -> Vec<u8> {
    [KERNEL_PREFIX, key.as_bytes()].concat()
}

/// A kernel's record (version 1): its program's id and its symbol; the
/// program's bytes are stored under [`program_entry_key`].
pub fn encode_record(program: &Digest, symbol: &str) -> Vec<u8> {
    [&[RECORD_VERSION][..], program.as_bytes(), symbol.as_bytes()].concat()
}

/// Kernel `key`'s record carrying its program (version 2): the program's
/// id, the symbol, and `binary`, the bytes that hash to the id.
pub fn encode_inline_record(
    key: &Digest,
    program: &Digest,
    symbol: &str,
    binary: &[u8],
) -> Vec<u8> {
    let mut r = Vec::with_capacity(INLINE_HEAD + symbol.len() + binary.len());
    r.push(INLINE_RECORD_VERSION);
    r.extend_from_slice(key.as_bytes());
    r.extend_from_slice(program.as_bytes());
    r.extend_from_slice(&(symbol.len() as u32).to_le_bytes());
    r.extend_from_slice(symbol.as_bytes());
    r.extend_from_slice(binary);
    r
}

/// Whether a compile of a `len`-byte program answering `kernels` records
/// stores the program inline in each record.
pub fn inlines(len: usize, kernels: usize) -> bool {
    len.checked_mul(kernels)
        .is_some_and(|all| all <= INLINE_MAX_BYTES)
}

/// A kernel's record, read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The program's id: blake3 of its bytes.
    pub program: Digest,
    /// The symbol the kernel was compiled under.
    pub symbol: String,
    /// A version-2 record's bytes, and where its program starts in them.
    inline: Option<(Arc<Vec<u8>>, usize)>,
}

impl Record {
    /// The program's bytes, if the record carries them (version 2; not yet
    /// checked against [`Record::program`]: see [`check_inline`]).
    pub fn inline(&self) -> Option<&[u8]> {
        self.inline.as_ref().map(|(bytes, at)| &bytes[*at..])
    }
}

/// Reads back the record stored under kernel `key`: `None` if it is not one
/// this version wrote, or a version-2 record naming another key.
pub fn read_record(key: &Digest, bytes: Vec<u8>) -> Option<Record> {
    match bytes.first() {
        Some(&RECORD_VERSION) => {
            let (program, symbol) = decode_record(&bytes)?;
            Some(Record {
                program,
                symbol,
                inline: None,
            })
        }
        Some(&INLINE_RECORD_VERSION) => {
            let head = bytes.get(..INLINE_HEAD)?;
            if head[1..33] != key.as_bytes()[..] {
                return None;
            }
            let program = Digest(head[33..65].try_into().ok()?);
            let len = u32::from_le_bytes(head[65..69].try_into().ok()?) as usize;
            let at = INLINE_HEAD.checked_add(len)?;
            let symbol = std::str::from_utf8(bytes.get(INLINE_HEAD..at)?).ok()?;
            Some(Record {
                program,
                symbol: symbol.to_string(),
                inline: Some((Arc::new(bytes), at)),
            })
        }
        _ => None,
    }
}

/// Reads a version-1 record back; `None` if it is not one.
pub fn decode_record(bytes: &[u8]) -> Option<(Digest, String)> {
    let (&version, rest) = bytes.split_first()?;
    if version != RECORD_VERSION || rest.len() < 32 {
        return None;
    }
    let (id, symbol) = rest.split_at(32);
    Some((
        Digest(id.try_into().ok()?),
        String::from_utf8(symbol.to_vec()).ok()?,
    ))
}

/// A store entry as `kcache cache ls` names it: `program/<hex>`,
/// `kernel/<hex>`, or the key's hex when kcache did not write it.
pub fn entry_name(key: &[u8]) -> String {
    let digest = |rest: &[u8]| (rest.len() == 32).then(|| key_to_hex(rest));
    if let Some(hex) = key.strip_prefix(PROGRAM_PREFIX).and_then(digest) {
        format!("program/{hex}")
    } else if let Some(hex) = key.strip_prefix(KERNEL_PREFIX).and_then(digest) {
        format!("kernel/{hex}")
    } else {
        key_to_hex(key)
    }
}

/// The store key an [`entry_name`] names.
pub fn entry_key(name: &str) -> Result<Vec<u8>, StoreError> {
    if let Some(hex) = name.strip_prefix("program/") {
        Ok([PROGRAM_PREFIX, &key_from_hex(hex)?].concat())
    } else if let Some(hex) = name.strip_prefix("kernel/") {
        Ok([KERNEL_PREFIX, &key_from_hex(hex)?].concat())
    } else {
        key_from_hex(name)
    }
}

/// What `kcache cache export` writes: a program's raw bytes, found by the
/// program's name or through a kernel's record. `Ok(None)` when absent.
///
/// A program's bytes are checked against their id as the resolver checks
/// them ([`load_program`], [`check_inline`]): bytes that are not their id's
/// are never written out, but removed and reported as
/// [`StoreError::Forged`].
pub fn export(store: &dyn Store, name: &str) -> Result<Option<Vec<u8>>, ExportError> {
    let key = entry_key(name)?;
    let digest = |rest: &[u8]| rest.try_into().ok().map(Digest);
    if let Some(id) = key.strip_prefix(PROGRAM_PREFIX).and_then(digest) {
        return Ok(load_program(store, &id)?);
    }
    let Some(bytes) = store.get(&key)? else {
        return Ok(None);
    };
    let Some(kernel) = key.strip_prefix(KERNEL_PREFIX) else {
        return Ok(Some(bytes));
    };
    let kernel = digest(kernel).ok_or(ExportError::BadRecord)?;
    let record = read_record(&kernel, bytes).ok_or(ExportError::BadRecord)?;
    check_inline(store, &kernel, &record)?;
    match record.inline() {
        Some(binary) => Ok(Some(binary.to_vec())),
        None => Ok(load_program(store, &record.program)?),
    }
}

/// The program check `kcache cache verify` adds to the store's own (which
/// checks framing and checksums, not what the bytes mean): every program
/// entry, and every kernel record that carries its program, whose bytes do
/// not hash to the id they are stored under is removed and reported, as the
/// resolver and [`export`] would refuse and remove it on reading. A record
/// this version cannot read is left to the store's check; one naming a
/// program entry is checked through that entry.
pub fn verify_programs(store: &dyn Store) -> Result<Vec<CorruptEntry>, StoreError> {
    let digest = |rest: &[u8]| rest.try_into().ok().map(Digest);
    let mut corrupt = Vec::new();
    for entry in store.list()? {
        let key = entry.key;
        let forged = if let Some(id) = key.strip_prefix(PROGRAM_PREFIX).and_then(digest) {
            matches!(store.get(&key)?, Some(bytes) if !hashes_to(&id, &bytes))
        } else if let Some(kernel) = key.strip_prefix(KERNEL_PREFIX).and_then(digest) {
            let record = store.get(&key)?.and_then(|b| read_record(&kernel, b));
            record.is_some_and(|r| r.inline().is_some_and(|b| !hashes_to(&r.program, b)))
        } else {
            false
        };
        if forged {
            store.remove(&key)?;
            corrupt.push(CorruptEntry {
                location: entry_name(&key),
                reason: "its program's bytes are not the program id they are stored under".into(),
                key: Some(key),
            });
        }
    }
    Ok(corrupt)
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store failed, or the name is not one `ls` prints.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A kernel's record is not one this version of kcache wrote.
    #[error("the kernel's record is not one this version of kcache wrote")]
    BadRecord,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn records_round_trip() {
        let id = program_id(b"bytes");
        assert_eq!(
            decode_record(&encode_record(&id, "k__seg3")),
            Some((id, "k__seg3".into()))
        );
        assert_eq!(decode_record(b""), None);
        assert_eq!(decode_record(&[2; 40]), None);
    }

    #[test]
    fn inline_records_round_trip_and_answer_only_their_own_key() {
        let (key, other) = (Digest([1; 32]), Digest([2; 32]));
        let id = program_id(b"program bytes");
        let bytes = encode_inline_record(&key, &id, "k__seg0", b"program bytes");
        let r = read_record(&key, bytes.clone()).unwrap();
        assert_eq!((r.program, r.symbol.as_str()), (id, "k__seg0"));
        assert_eq!(r.inline(), Some(&b"program bytes"[..]));
        assert_eq!(
            read_record(&other, bytes.clone()),
            None,
            "another key's record"
        );
        // Cut anywhere before the program starts: not a record.
        for len in 0..INLINE_HEAD + "k__seg0".len() {
            assert_eq!(read_record(&key, bytes[..len].to_vec()), None, "{len}");
        }
        // A version-1 record still reads, naming its program.
        let v1 = read_record(&key, encode_record(&id, "k")).unwrap();
        assert_eq!((v1.program, v1.inline()), (id, None));
        assert_eq!(read_record(&key, vec![3; 80]), None, "an unknown version");
    }

    #[test]
    fn an_inline_program_cut_or_flipped_is_refused_and_its_record_removed() {
        let store = MemoryStore::new(1 << 20);
        let key = Digest([9; 32]);
        let program = b"an inline program, checked against its id".to_vec();
        let id = program_id(&program);
        let mut cut = program.clone();
        cut.pop();
        let mut flipped = program.clone();
        flipped[3] ^= 1;
        for bad in [cut, flipped] {
            let bytes = encode_inline_record(&key, &id, "k", &bad);
            store.put(&kernel_entry_key(&key), &bytes).unwrap();
            let r = read_record(&key, bytes).unwrap();
            assert!(matches!(
                check_inline(&store, &key, &r),
                Err(StoreError::Forged { .. })
            ));
            assert_eq!(store.get(&kernel_entry_key(&key)).unwrap(), None, "removed");
        }
        let good = read_record(&key, encode_inline_record(&key, &id, "k", &program)).unwrap();
        check_inline(&store, &key, &good).unwrap();
    }

    #[test]
    fn export_reads_a_program_out_of_its_record() {
        let store = MemoryStore::new(1 << 20);
        let key = Digest([5; 32]);
        let id = program_id(b"inline");
        store
            .put(
                &kernel_entry_key(&key),
                &encode_inline_record(&key, &id, "k", b"inline"),
            )
            .unwrap();
        let got = export(&store, &entry_name(&kernel_entry_key(&key))).unwrap();
        assert_eq!(got.as_deref(), Some(&b"inline"[..]));
    }

    #[test]
    fn inlining_counts_every_copy() {
        assert!(inlines(INLINE_MAX_BYTES, 1));
        assert!(!inlines(INLINE_MAX_BYTES + 1, 1));
        assert!(inlines(INLINE_MAX_BYTES / 4, 4));
        assert!(!inlines(INLINE_MAX_BYTES / 4 + 1, 4));
        assert!(!inlines(usize::MAX, 2));
    }

    #[test]
    fn a_program_whose_bytes_are_not_its_id_is_refused_and_removed() {
        let store = MemoryStore::new(1 << 20);
        let id = program_id(b"genuine");
        store.put(&program_entry_key(&id), b"genuine").unwrap();
        assert_eq!(
            load_program(&store, &id).unwrap().as_deref(),
            Some(&b"genuine"[..])
        );
        store.put(&program_entry_key(&id), b"forged").unwrap();
        assert!(matches!(
            load_program(&store, &id),
            Err(StoreError::Forged { .. })
        ));
        assert_eq!(store.get(&program_entry_key(&id)).unwrap(), None, "removed");
        assert_eq!(load_program(&store, &id).unwrap(), None);
    }

    #[test]
    fn forged_bytes_are_refused_after_the_genuine_ones_were_verified() {
        let store = MemoryStore::new(1 << 20);
        let id = program_id(b"genuine, verified once");
        store
            .put(&program_entry_key(&id), b"genuine, verified once")
            .unwrap();
        for _ in 0..2 {
            assert_eq!(
                load_program(&store, &id).unwrap().as_deref(),
                Some(&b"genuine, verified once"[..])
            );
        }
        assert!(verified::holds(&id, b"genuine, verified once"));
        // Same length, one byte off: not the verified bytes, hashed, refused.
        store
            .put(&program_entry_key(&id), b"genuine, verified oncf")
            .unwrap();
        assert!(matches!(
            load_program(&store, &id),
            Err(StoreError::Forged { .. })
        ));
    }

    #[test]
    fn an_inline_program_is_remembered_as_its_bytes_only() {
        let store = MemoryStore::new(1 << 20);
        let key = Digest([5; 32]);
        let program = b"an inline program, remembered from its record".to_vec();
        let id = program_id(&program);
        let r = read_record(&key, encode_inline_record(&key, &id, "k", &program)).unwrap();
        check_inline(&store, &key, &r).unwrap();
        // The memo shares the record's buffer: it holds the program, not the
        // record's head.
        assert!(verified::holds(&id, &program));
        assert!(!verified::holds(
            &id,
            &encode_inline_record(&key, &id, "k", &program)
        ));
        // One byte off, same length: hashed, refused.
        let mut bad = program.clone();
        bad[0] ^= 1;
        let forged = read_record(&key, encode_inline_record(&key, &id, "k", &bad)).unwrap();
        assert!(matches!(
            check_inline(&store, &key, &forged),
            Err(StoreError::Forged { .. })
        ));
    }

    #[test]
    fn bytes_verified_for_one_id_are_never_taken_for_another() {
        let store = MemoryStore::new(1 << 20);
        let genuine = b"verified under their own id, and only that one".to_vec();
        let id = program_id(&genuine);
        store.put(&program_entry_key(&id), &genuine).unwrap();
        load_program(&store, &id).unwrap().unwrap();
        assert!(verified::holds(&id, &genuine));
        // Another id (another kernel's program), the verified bytes under it:
        // as a program entry and carried by a record.
        let other = program_id(b"another kernel's program");
        assert!(!verified::holds(&other, &genuine));
        store.put(&program_entry_key(&other), &genuine).unwrap();
        assert!(matches!(
            load_program(&store, &other),
            Err(StoreError::Forged { .. })
        ));
        let key = Digest([4; 32]);
        let bytes = encode_inline_record(&key, &other, "k", &genuine);
        let r = read_record(&key, bytes).unwrap();
        assert!(matches!(
            check_inline(&store, &key, &r),
            Err(StoreError::Forged { .. })
        ));
    }

    #[test]
    fn a_version_2_record_is_never_read_as_a_version_1_one() {
        // What a kcache before version 2 reads a record with: a miss, never
        // the key and the id taken for an id and a symbol.
        let id = program_id(b"p");
        let v2 = encode_inline_record(&Digest([3; 32]), &id, "k", b"p");
        assert_eq!(decode_record(&v2), None);
    }

    #[test]
    fn export_refuses_program_bytes_that_are_not_their_id() {
        let store = MemoryStore::new(1 << 20);
        let key = Digest([6; 32]);
        let id = program_id(b"the genuine program");
        let forged = b"another program, under its id".as_slice();
        // An inline record whose program is not its id.
        store
            .put(
                &kernel_entry_key(&key),
                &encode_inline_record(&key, &id, "k", forged),
            )
            .unwrap();
        let name = entry_name(&kernel_entry_key(&key));
        assert!(export(&store, &name).is_err(), "an inline forgery");
        // A version-1 record naming a program entry that is not its id.
        store
            .put(&kernel_entry_key(&key), &encode_record(&id, "k"))
            .unwrap();
        store.put(&program_entry_key(&id), forged).unwrap();
        assert!(export(&store, &name).is_err(), "through a record");
        store.put(&program_entry_key(&id), forged).unwrap();
        let by_program = entry_name(&program_entry_key(&id));
        assert!(
            export(&store, &by_program).is_err(),
            "by the program's name"
        );
        // The genuine bytes still export, both ways.
        store
            .put(&program_entry_key(&id), b"the genuine program")
            .unwrap();
        for name in [name, by_program] {
            let got = export(&store, &name).unwrap();
            assert_eq!(got.as_deref(), Some(&b"the genuine program"[..]));
        }
    }

    #[test]
    fn verify_removes_the_programs_that_are_not_their_id_and_keeps_the_genuine() {
        let store = MemoryStore::new(1 << 20);
        let genuine = b"the genuine program".as_slice();
        let forged = b"another program, under its id".as_slice();
        let id = program_id(genuine);
        let (good, bad_inline) = (Digest([7; 32]), Digest([8; 32]));
        let records = [
            (good, encode_inline_record(&good, &id, "k", genuine)),
            (
                bad_inline,
                encode_inline_record(&bad_inline, &id, "k", forged),
            ),
        ];
        for (key, bytes) in &records {
            store.put(&kernel_entry_key(key), bytes).unwrap();
        }
        // A version-1 record's program entry, forged; and another, genuine.
        let other = program_id(b"a second program");
        store.put(&program_entry_key(&id), forged).unwrap();
        store
            .put(&program_entry_key(&other), b"a second program")
            .unwrap();
        let mut found: Vec<String> = verify_programs(&store)
            .unwrap()
            .into_iter()
            .map(|c| c.location)
            .collect();
        found.sort();
        let mut expected = vec![
            entry_name(&kernel_entry_key(&bad_inline)),
            entry_name(&program_entry_key(&id)),
        ];
        expected.sort();
        assert_eq!(found, expected);
        assert!(store.get(&kernel_entry_key(&bad_inline)).unwrap().is_none());
        assert!(store.get(&program_entry_key(&id)).unwrap().is_none());
        assert!(store.get(&kernel_entry_key(&good)).unwrap().is_some());
        assert!(store.get(&program_entry_key(&other)).unwrap().is_some());
        // Nothing left to find.
        assert!(verify_programs(&store).unwrap().is_empty());
    }

    #[test]
    fn names_round_trip() {
        let id = program_id(b"x");
        for key in [
            program_entry_key(&id),
            kernel_entry_key(&id),
            b"other".to_vec(),
        ] {
            assert_eq!(entry_key(&entry_name(&key)).unwrap(), key);
        }
        assert!(entry_name(&program_entry_key(&id)).starts_with("program/"));
    }

    #[test]
    fn export_follows_a_kernel_record_to_its_program() {
        let store = MemoryStore::new(1 << 20);
        let id = program_id(b"compiled");
        store.put(&program_entry_key(&id), b"compiled").unwrap();
        let kernel = Digest([7; 32]);
        store
            .put(&kernel_entry_key(&kernel), &encode_record(&id, "k"))
            .unwrap();
        let by_kernel = export(&store, &entry_name(&kernel_entry_key(&kernel))).unwrap();
        assert_eq!(by_kernel.as_deref(), Some(&b"compiled"[..]));
        let by_program = export(&store, &entry_name(&program_entry_key(&id))).unwrap();
        assert_eq!(by_program.as_deref(), Some(&b"compiled"[..]));
        assert!(export(&store, "kernel/zz").is_err());
        assert_eq!(
            export(&store, &entry_name(&kernel_entry_key(&Digest([1; 32])))).unwrap(),
            None
        );
    }
}
