//! Byte counts as people write them (`2G`, `512MiB`, `1GB`), for every size
//! kcache reads from its environment or command line
//! (`KCACHE_MAX_BYTES`, `KCACHE_CODE_CACHE_BYTES`, `--max-bytes`).
//!
//! A whole number, then optionally a unit: `K`, `M`, `G`, `T` and `KiB`,
//! `MiB`, `GiB`, `TiB` are powers of 1024; `KB`, `MB`, `GB`, `TB` powers of
//! 1000; `B` or nothing is bytes. Case and blanks around the unit are ignored.

/// Parses a byte size: a whole number with an optional unit (see the module
/// docs).
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err("expected a number of bytes, like 2147483648, 512MiB or 2G".into());
    }
    let n: u64 = digits.parse().map_err(|_| "number too large".to_string())?;
    let unit = unit.trim().to_ascii_lowercase();
    let mult: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} (use K, M, G, T, KiB, MB, ...)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| "number too large".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse_with_units() {
        assert_eq!(parse_byte_size("123"), Ok(123));
        assert_eq!(parse_byte_size("2G"), Ok(2 << 30));
        assert_eq!(parse_byte_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_byte_size("1kb"), Ok(1000));
        assert_eq!(parse_byte_size("0"), Ok(0));
        assert!(parse_byte_size("").is_err());
        assert!(parse_byte_size("-1").is_err());
        assert!(parse_byte_size("1.5G").is_err());
        assert!(parse_byte_size("1X").is_err());
        assert!(parse_byte_size("99999999999T").is_err());
    }
}
