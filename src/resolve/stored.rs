//! How the resolver lays compiled programs out in a persistent store.
//!
//! Two kinds of entry, both under readable prefixes:
//!
//! * `kcache/program/<id>`: a program's bytes, as its backend's `load` takes
//!   them back; `<id>` is the blake3 digest of those bytes (32 bytes), so one
//!   program serves every kernel compiled into it.
//! * `kcache/kernel/<key>`: a kernel's record under its program key
//!   ([`crate::key::program_key`], 32 bytes): a version byte, the id of the
//!   program holding it, and the symbol it was compiled under.
//!
//! The store verifies every entry's bytes against the checksum they were
//! written with; [`load_program`] also checks that a program's bytes hash to
//! the id its record names, so bytes replaced under a valid id (with the
//! store's checksum recomputed) are never loaded.

use crate::key::Digest;
use crate::store::{key_from_hex, key_to_hex, Store, StoreError};

const PROGRAM_PREFIX: &[u8] = b"kcache/program/";
const KERNEL_PREFIX: &[u8] = b"kcache/kernel/";
const RECORD_VERSION: u8 = 1;

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
    if verified::holds(id, &bytes) {
        return Ok(Some(bytes));
    }
    if program_id(&bytes) == *id {
        verified::remember(id, &bytes);
        return Ok(Some(bytes));
    }
    if let Err(e) = store.remove(&key) {
        tracing::debug!(error = %e, "could not remove a stored program whose bytes are not its id's");
    }
    Err(StoreError::Forged {
        what: entry_name(&key),
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

    #[derive(Default)]
    struct Memo {
        current: FxHashMap<Digest, Arc<[u8]>>,
        previous: FxHashMap<Digest, Arc<[u8]>>,
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
            .is_some_and(|v| **v == *bytes)
    }

    /// Remembers `bytes`, just verified to hash to `id`.
    pub fn remember(id: &Digest, bytes: &[u8]) {
        if bytes.len() > MAX_BYTES {
            return;
        }
        let mut m = memo().lock().unwrap_or_else(PoisonError::into_inner);
        if m.bytes + bytes.len() > MAX_BYTES {
            m.previous = std::mem::take(&mut m.current);
            m.bytes = 0;
        }
        m.bytes += bytes.len();
        m.current.insert(*id, Arc::from(bytes));
    }
}

/// Where a kernel's record is stored.
pub fn kernel_entry_key(key: &Digest) -> Vec<u8> {
    [KERNEL_PREFIX, key.as_bytes()].concat()
}

/// A kernel's record: its program's id and its symbol.
pub fn encode_record(program: &Digest, symbol: &str) -> Vec<u8> {
    [&[RECORD_VERSION][..], program.as_bytes(), symbol.as_bytes()].concat()
}

/// Reads a record back; `None` if it is not one this version wrote.
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
pub fn export(store: &dyn Store, name: &str) -> Result<Option<Vec<u8>>, ExportError> {
    let key = entry_key(name)?;
    let Some(bytes) = store.get(&key)? else {
        return Ok(None);
    };
    if !key.starts_with(KERNEL_PREFIX) {
        return Ok(Some(bytes));
    }
    let (id, _) = decode_record(&bytes).ok_or(ExportError::BadRecord)?;
    Ok(store.get(&program_entry_key(&id))?)
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
