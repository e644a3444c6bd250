//! How a value is framed in Redis: its length, its store key and a blake3
//! checksum, all checked on every read; with a secret, a MAC over the frame
//! and the Redis key name it lives under.
//!
//! ```text
//! off  size  field
//!   0     8  magic "kcRedis\x01"
//!   8     1  flags: bit 0 = MAC present; no other bit is ever set
//!   9     3  reserved, zero
//!  12     4  store-key length, u32 little endian
//!  16     8  payload length, u64 little endian
//!  24    32  blake3 of the payload
//!  56    32  MAC: blake3 keyed hash of header[0..56], the Redis key name,
//!            the store key and the payload; zeros without a secret
//!  88     k  the store key
//! 88+k    n  the payload
//! ```
//!
//! A frame is accepted only if it is byte for byte what [`encode`] writes
//! for the reader's configuration: without a secret, the flag clear and the
//! MAC field zero; with one, the flag set and the MAC right. So no mutation
//! of a frame (a flipped bit anywhere, a cut, an extension) is ever read,
//! not even one in bytes the checksum does not cover; and a reader without
//! the secret refuses a MAC'd frame it cannot check rather than serve half
//! a verified frame.

use std::fmt;

const MAGIC: &[u8; 8] = b"kcRedis\x01";
const FLAG_MAC: u8 = 1;
/// Bytes before the store key.
pub(crate) const HEADER_LEN: usize = 88;
const MAC_CONTEXT: &str = "kcache redis tier v1 entry MAC";

/// The key of the entry MAC, derived from the configured secret so that the
/// secret itself is never the key of anything else.
#[derive(Clone)]
pub(crate) struct MacKey([u8; 32]);

impl MacKey {
    pub(crate) fn derive(secret: &[u8]) -> Self {
        MacKey(blake3::derive_key(MAC_CONTEXT, secret))
    }
}

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey(..)")
    }
}

fn mac(
    key: &MacKey,
    head: &[u8],
    redis_key: &[u8],
    store_key: &[u8],
    payload: &[u8],
) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(&key.0);
    // The Redis key name is length-prefixed so that it cannot slide into the
    // store key's bytes.
    h.update(&head[..56]);
    h.update(&(redis_key.len() as u64).to_le_bytes());
    h.update(redis_key);
    h.update(store_key);
    h.update(payload);
    h.finalize()
}

/// Frames `payload` for `store_key`, to be stored under `redis_key`.
pub(crate) fn encode(
    mac_key: Option<&MacKey>,
    redis_key: &[u8],
    store_key: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + store_key.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(if mac_key.is_some() { FLAG_MAC } else { 0 });
    out.extend_from_slice(&[0; 3]);
    out.extend_from_slice(&(store_key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    let tag = match mac_key {
        Some(k) => *mac(k, &out, redis_key, store_key, payload).as_bytes(),
        None => [0; 32],
    };
    out.extend_from_slice(&tag);
    out.extend_from_slice(store_key);
    out.extend_from_slice(payload);
    out
}

/// Why a frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a frame this version wrote, or damaged: truncated, a length that
    /// does not match, a checksum that does not.
    Corrupt(&'static str),
    /// A frame for another store key (copied under this key name).
    OtherKey,
    /// A secret is configured and the frame has no MAC, or a wrong one.
    Unauthenticated(&'static str),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Corrupt(why) => write!(f, "corrupt: {why}"),
            Refused::OtherKey => f.write_str("holds another key's entry"),
            Refused::Unauthenticated(why) => write!(f, "unauthenticated: {why}"),
        }
    }
}

/// A checked frame: the store key it names and its payload.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Decoded<'a> {
    pub store_key: &'a [u8],
    pub payload: &'a [u8],
}

/// Checks `frame`, read from `redis_key`: its magic, lengths, checksum and,
/// with a MAC key, its MAC (in constant time). `want` is the store key the
/// reader asked for, when it asked for one (`ls` and `verify` do not).
pub(crate) fn decode<'a>(
    mac_key: Option<&MacKey>,
    redis_key: &[u8],
    want: Option<&[u8]>,
    frame: &'a [u8],
) -> Result<Decoded<'a>, Refused> {
    if frame.len() < HEADER_LEN {
        return Err(Refused::Corrupt("truncated header"));
    }
    if &frame[..8] != MAGIC {
        return Err(Refused::Corrupt("bad magic"));
    }
    let flags = frame[8];
    if flags & !FLAG_MAC != 0 || frame[9..12] != [0; 3] {
        return Err(Refused::Corrupt("reserved bits set"));
    }
    let key_len = u32::from_le_bytes(frame[12..16].try_into().unwrap()) as u64;
    let payload_len = u64::from_le_bytes(frame[16..24].try_into().unwrap());
    let total = (HEADER_LEN as u64)
        .checked_add(key_len)
        .and_then(|n| n.checked_add(payload_len));
    if total != Some(frame.len() as u64) {
        return Err(Refused::Corrupt("length mismatch"));
    }
    let (head, rest) = frame.split_at(HEADER_LEN);
    let (store_key, payload) = rest.split_at(key_len as usize);
    if want.is_some_and(|w| w != store_key) {
        return Err(Refused::OtherKey);
    }
    if blake3::hash(payload).as_bytes() != &head[24..56] {
        return Err(Refused::Corrupt("checksum mismatch"));
    }
    match mac_key {
        Some(k) => {
            if flags & FLAG_MAC == 0 {
                return Err(Refused::Unauthenticated("no MAC"));
            }
            let stored = blake3::Hash::from_bytes(head[56..88].try_into().unwrap());
            // `Hash` equality is constant time.
            if mac(k, head, redis_key, store_key, payload) != stored {
                return Err(Refused::Unauthenticated("wrong MAC"));
            }
        }
        None if flags & FLAG_MAC != 0 => {
            return Err(Refused::Unauthenticated("a MAC and no secret to check it"));
        }
        None if head[56..88] != [0; 32] => {
            return Err(Refused::Corrupt("MAC bytes without the MAC flag"));
        }
        None => {}
    }
    Ok(Decoded { store_key, payload })
}

/// The store key and payload length a frame's first bytes name, if they
/// look like a frame of `total` bytes; nothing is verified (`ls` only).
pub(crate) fn peek(head: &[u8], total: u64) -> Option<(&[u8], u64)> {
    if head.len() < HEADER_LEN || &head[..8] != MAGIC {
        return None;
    }
    let key_len = u32::from_le_bytes(head[12..16].try_into().unwrap()) as u64;
    let payload_len = u64::from_le_bytes(head[16..24].try_into().unwrap());
    if (HEADER_LEN as u64)
        .checked_add(key_len)?
        .checked_add(payload_len)?
        != total
    {
        return None;
    }
    let key = head.get(HEADER_LEN..HEADER_LEN + key_len as usize)?;
    Some((key, payload_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RK: &[u8] = b"kcache:k1:{ab}:v";

    #[test]
    fn frames_round_trip_with_and_without_a_mac() {
        let k = MacKey::derive(b"secret");
        for mac_key in [None, Some(&k)] {
            let f = encode(mac_key, RK, b"key", b"payload");
            let d = decode(mac_key, RK, Some(b"key"), &f).unwrap();
            assert_eq!((d.store_key, d.payload), (&b"key"[..], &b"payload"[..]));
        }
    }

    #[test]
    fn every_damage_is_refused() {
        let f = encode(None, RK, b"key", b"payload");
        let mut flipped = f.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            decode(None, RK, Some(b"key"), &flipped),
            Err(Refused::Corrupt("checksum mismatch"))
        );
        assert_eq!(
            decode(None, RK, Some(b"key"), &f[..f.len() - 1]),
            Err(Refused::Corrupt("length mismatch"))
        );
        assert_eq!(
            decode(None, RK, Some(b"key"), &f[..10]),
            Err(Refused::Corrupt("truncated header"))
        );
        assert_eq!(decode(None, RK, Some(b"other"), &f), Err(Refused::OtherKey));
        let mut magic = f.clone();
        magic[0] ^= 1;
        assert_eq!(
            decode(None, RK, None, &magic),
            Err(Refused::Corrupt("bad magic"))
        );
    }

    #[test]
    fn a_secret_rejects_missing_wrong_and_moved_macs() {
        let k = MacKey::derive(b"secret");
        let plain = encode(None, RK, b"key", b"v");
        assert_eq!(
            decode(Some(&k), RK, Some(b"key"), &plain),
            Err(Refused::Unauthenticated("no MAC"))
        );
        let wrong = encode(Some(&MacKey::derive(b"other")), RK, b"key", b"v");
        assert_eq!(
            decode(Some(&k), RK, Some(b"key"), &wrong),
            Err(Refused::Unauthenticated("wrong MAC"))
        );
        let good = encode(Some(&k), RK, b"key", b"v");
        assert_eq!(
            decode(Some(&k), b"kcache:k1:{cd}:v", Some(b"key"), &good),
            Err(Refused::Unauthenticated("wrong MAC")),
            "a frame moved under another key name fails its MAC"
        );
        assert_eq!(
            decode(None, RK, Some(b"key"), &good),
            Err(Refused::Unauthenticated("a MAC and no secret to check it")),
            "a reader without the secret cannot check the MAC"
        );
    }

    #[test]
    fn mac_bytes_without_the_flag_are_damage() {
        let mut f = encode(None, RK, b"key", b"v");
        f[60] ^= 4;
        assert_eq!(
            decode(None, RK, Some(b"key"), &f),
            Err(Refused::Corrupt("MAC bytes without the MAC flag"))
        );
    }
}
