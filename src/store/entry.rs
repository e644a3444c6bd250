//! The file store's entry framing (see the module docs of [`crate::store`]).

use crate::key::{digest_parts_raw, Digest};

/// First bytes of every entry file this version writes; its checksum is
/// xxh3-128.
pub(crate) const MAGIC: &[u8; 8] = b"kcache\x02\n";

/// First bytes of an entry written before version 2, whose checksum is
/// blake3: still read (and verified), never written.
pub(crate) const MAGIC_V1: &[u8; 8] = b"kcache\x01\n";

/// Whether `bytes` is the magic of an entry this version reads.
pub(crate) fn is_magic(bytes: &[u8]) -> bool {
    bytes == MAGIC || bytes == MAGIC_V1
}

/// Bytes before the key.
pub(crate) const HEADER_LEN: usize = 56;

/// The largest entry a store reads or keeps (key, value and framing): no
/// compiled program comes near it, and a header promising more (a damaged or
/// planted, possibly sparse, file) is refused before anything is read.
pub const MAX_ENTRY_BYTES: u64 = 512 << 20;

/// The digest that names a key's file.
pub(crate) fn name_digest(key: &[u8]) -> Digest {
    digest_parts_raw([b"kcache-store-entry".as_slice(), key])
}

/// The checksum of a payload, as this version writes it: xxh3-128, little
/// endian, then 16 zero bytes.
///
/// It guards against damage (a torn or flipped write, a truncation), not
/// against someone who can write the store: they could recompute any unkeyed
/// checksum, blake3 included. What a forger must not pass is checked where it
/// matters, with blake3: a program's bytes against the id its record names
/// (`resolve::stored`), a key against the file's name.
pub(crate) fn checksum(payload: &[u8]) -> [u8; 32] {
    let mut sum = [0; 32];
    sum[..16].copy_from_slice(&crate::checksum::xxh3_128(payload).to_le_bytes());
    sum
}

/// The header and key of an entry holding `payload`; the payload follows.
pub(crate) fn encode_head(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEADER_LEN + key.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(key.len() as u32).to_le_bytes());
    head.extend_from_slice(&[0; 4]);
    head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    head.extend_from_slice(&checksum(payload));
    head.extend_from_slice(key);
    head
}

/// The fixed header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub key_len: usize,
    pub payload_len: u64,
    pub checksum: [u8; 32],
    /// Written before version 2: a blake3 checksum.
    pub v1: bool,
}

impl Header {
    /// The file size this header promises.
    pub fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.key_len as u64 + self.payload_len
    }

    /// Whether `payload` matches the checksum, by the entry's own algorithm.
    pub fn verifies(&self, payload: &[u8]) -> bool {
        if self.v1 {
            *blake3::hash(payload).as_bytes() == self.checksum
        } else {
            checksum(payload) == self.checksum
        }
    }
}

/// Why an entry is corrupt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Damage {
    Truncated { len: u64 },
    BadMagic,
    Reserved,
    LengthMismatch { expected: u64, actual: u64 },
    KeyMismatch,
    ChecksumMismatch,
    TooLarge { len: u64, max: u64 },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Truncated { len } => {
                write!(f, "truncated ({len} bytes, shorter than a header)")
            }
            Damage::BadMagic => f.write_str("not a kcache entry (bad magic)"),
            Damage::Reserved => f.write_str("reserved header bytes are not zero"),
            Damage::LengthMismatch { expected, actual } => write!(
                f,
                "length mismatch (header promises {expected} bytes, file has {actual})"
            ),
            Damage::KeyMismatch => f.write_str("stored key does not match the entry's name"),
            Damage::ChecksumMismatch => f.write_str("payload checksum mismatch"),
            Damage::TooLarge { len, max } => write!(
                f,
                "{len} bytes, more than any entry this store keeps ({max} bytes); not read"
            ),
        }
    }
}

/// Parses the fixed header, checking it against the file's length.
pub(crate) fn parse_header(bytes: &[u8], file_len: u64) -> Result<Header, Damage> {
    if file_len < HEADER_LEN as u64 || bytes.len() < HEADER_LEN {
        return Err(Damage::Truncated { len: file_len });
    }
    if !is_magic(&bytes[..8]) {
        return Err(Damage::BadMagic);
    }
    let v1 = &bytes[..8] == MAGIC_V1;
    // Version 2's checksum leaves its last 16 bytes zero.
    if bytes[12..16] != [0; 4] || (!v1 && bytes[40..56] != [0; 16]) {
        return Err(Damage::Reserved);
    }
    let key_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let payload_len = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    let checksum: [u8; 32] = bytes[24..56].try_into().unwrap();
    let h = Header {
        key_len,
        payload_len,
        checksum,
        v1,
    };
    let expected = (HEADER_LEN as u64)
        .checked_add(key_len as u64)
        .and_then(|n| n.checked_add(payload_len));
    if expected != Some(file_len) {
        return Err(Damage::LengthMismatch {
            expected: expected.unwrap_or(u64::MAX),
            actual: file_len,
        });
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trips() {
        let head = encode_head(b"key", b"payload");
        assert_eq!(head.len(), HEADER_LEN + 3);
        let h = parse_header(&head, (head.len() + 7) as u64).unwrap();
        assert_eq!(h.key_len, 3);
        assert_eq!(h.payload_len, 7);
        assert_eq!(h.checksum, checksum(b"payload"));
        assert!(h.verifies(b"payload"));
        assert!(!h.verifies(b"payloae"));
        assert!(!h.v1);
        assert_eq!(&head[HEADER_LEN..], b"key");
    }

    #[test]
    fn a_version_1_entry_is_verified_by_blake3() {
        let mut head = encode_head(b"key", b"payload");
        head[..8].copy_from_slice(MAGIC_V1);
        head[24..56].copy_from_slice(blake3::hash(b"payload").as_bytes());
        let h = parse_header(&head, (head.len() + 7) as u64).unwrap();
        assert!(h.v1);
        assert!(h.verifies(b"payload"));
        assert!(!h.verifies(b"payloae"));
        // A version-2 checksum under a version-1 magic is damage.
        let mut wrong = encode_head(b"key", b"payload");
        wrong[..8].copy_from_slice(MAGIC_V1);
        let h = parse_header(&wrong, (wrong.len() + 7) as u64).unwrap();
        assert!(!h.verifies(b"payload"));
    }

    #[test]
    fn a_version_2_checksum_with_its_tail_set_is_damage() {
        let mut head = encode_head(b"k", b"v");
        head[55] = 1;
        assert_eq!(
            parse_header(&head, (head.len() + 1) as u64),
            Err(Damage::Reserved)
        );
    }

    #[test]
    fn damaged_heads_are_named() {
        let head = encode_head(b"k", b"v");
        assert_eq!(
            parse_header(&head[..10], 10),
            Err(Damage::Truncated { len: 10 })
        );
        assert!(matches!(
            parse_header(&head, head.len() as u64),
            Err(Damage::LengthMismatch { .. })
        ));
        let mut bad = head.clone();
        bad[0] ^= 1;
        assert_eq!(
            parse_header(&bad, (head.len() + 1) as u64),
            Err(Damage::BadMagic)
        );
        let mut huge = head.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse_header(&huge, 100),
            Err(Damage::LengthMismatch { .. })
        ));
    }

    #[test]
    fn names_depend_on_every_key_byte() {
        assert_ne!(name_digest(b"a"), name_digest(b"b"));
        assert_ne!(name_digest(b""), name_digest(b"\0"));
    }
}
