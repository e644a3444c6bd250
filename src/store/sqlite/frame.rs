//! How the SQLite store frames a value: with its key, so that a row found
//! for another key (a damaged index, swapped rows) is never served.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "kcsqlv2\n"
//!      8     4  key length, u32 little endian
//!     12     8  payload length, u64 little endian
//!     20     k  the key
//!   20+k     n  the payload
//! ```
//!
//! The row's `checksum` column is the blake3 digest of the whole frame, so it
//! covers the key as well as the payload.

/// First bytes of every framed value.
const MAGIC: &[u8; 8] = b"kcsqlv2\n";

/// Bytes before the key.
const HEAD: usize = 20;

/// Frames `payload` under `key`.
pub(crate) fn encode(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + key.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out
}

/// The checksum a frame is stored with.
pub(crate) fn checksum(frame: &[u8]) -> [u8; 32] {
    *blake3::hash(frame).as_bytes()
}

/// Why a row is not `key`'s value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FrameDamage {
    /// The bytes do not match the row's checksum.
    Checksum,
    /// Not a frame: bad magic or lengths that disagree with the size.
    Malformed,
    /// A well-formed frame of another key.
    OtherKey,
}

impl std::fmt::Display for FrameDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FrameDamage::Checksum => "checksum mismatch",
            FrameDamage::Malformed => "not a framed value (bad magic or lengths)",
            FrameDamage::OtherKey => "the row holds another key's value",
        })
    }
}

/// The key and payload of a frame, if it is one.
pub(crate) fn parse(frame: &[u8]) -> Option<(&[u8], &[u8])> {
    if frame.len() < HEAD || &frame[..8] != MAGIC {
        return None;
    }
    let key_len = u32::from_le_bytes(frame[8..12].try_into().ok()?) as usize;
    let payload_len = u64::from_le_bytes(frame[12..20].try_into().ok()?);
    let rest = &frame[HEAD..];
    if (key_len as u64).checked_add(payload_len) != Some(rest.len() as u64) {
        return None;
    }
    Some(rest.split_at(key_len))
}

/// The payload `frame` holds for `key`, checked against the row's
/// `checksum`.
pub(crate) fn decode<'a>(key: &[u8], frame: &'a [u8], sum: &[u8]) -> Result<&'a [u8], FrameDamage> {
    if sum != checksum(frame) {
        return Err(FrameDamage::Checksum);
    }
    let (stored, payload) = parse(frame).ok_or(FrameDamage::Malformed)?;
    if stored != key {
        return Err(FrameDamage::OtherKey);
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_name_their_key() {
        let f = encode(b"key", b"payload");
        let sum = checksum(&f);
        assert_eq!(decode(b"key", &f, &sum), Ok(&b"payload"[..]));
        assert_eq!(decode(b"kez", &f, &sum), Err(FrameDamage::OtherKey));
        assert_eq!(decode(b"key", &f, &[0; 32]), Err(FrameDamage::Checksum));
        let mut short = f.clone();
        short.pop();
        assert_eq!(
            decode(b"key", &short, &checksum(&short)),
            Err(FrameDamage::Malformed)
        );
        assert_eq!(parse(&encode(b"", b"")), Some((&b""[..], &b""[..])));
    }
}
