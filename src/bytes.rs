//! Byte counts as people write them (`2G`, `512MiB`, `1.5GB`), for every size
//! kcache reads from its environment or command line
//! (`KCACHE_MAX_BYTES`, `KCACHE_CODE_CACHE_BYTES`, `--max-bytes`), and as
//! kcache prints them (`2.0 GiB`).
//!
//! A number, whole or with a decimal fraction, then optionally a unit: `K`,
//! `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024; `KB`,
//! `MB`, `GB`, `TB` powers of 1000; `B` or nothing is bytes. Case and blanks
//! around the unit are ignored. A fraction that does not come to whole bytes
//! is rounded down (`1.3K` is 1331 bytes).

/// The most fraction digits read; more could not change a byte count under
/// 2^64 by a whole byte at a unit of at most 2^40.
const MAX_FRACTION_DIGITS: usize = 18;

/// Parses a byte size: a number with an optional unit (see the module docs).
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err("expected a number of bytes, like 2147483648, 512MiB, 2G or 1.5G".into());
    }
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
    let too_large = || "number too large".to_string();
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut bytes = whole.checked_mul(mult).ok_or_else(too_large)?;
    let digits = &fraction[..fraction.len().min(MAX_FRACTION_DIGITS)];
    if !digits.is_empty() {
        // Exact: digits * mult / 10^len in 128 bits, rounded down.
        let num: u128 = digits.parse().map_err(|_| too_large())?;
        let part = num * u128::from(mult) / 10u128.pow(digits.len() as u32);
        bytes = u64::try_from(part)
            .ok()
            .and_then(|p| bytes.checked_add(p))
            .ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// `n` bytes for people: `512 B`, `1.5 KiB`, `2.0 GiB` (powers of 1024, one
/// decimal).
pub fn format_byte_size(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
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
        assert!(parse_byte_size("1X").is_err());
        assert!(parse_byte_size("99999999999T").is_err());
    }

    #[test]
    fn fractional_sizes_round_down_to_whole_bytes() {
        assert_eq!(parse_byte_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_byte_size("0.5K"), Ok(512));
        assert_eq!(parse_byte_size(".5K"), Ok(512));
        assert_eq!(parse_byte_size("1.3K"), Ok(1331));
        assert_eq!(parse_byte_size("2.5"), Ok(2));
        assert_eq!(parse_byte_size("1.25 GB"), Ok(1_250_000_000));
        assert!(parse_byte_size(".").is_err());
        assert!(parse_byte_size("1.2.3G").is_err());
        assert!(parse_byte_size("16777216.5T").is_err());
        assert_eq!(parse_byte_size("16777215.5T"), Ok(u64::MAX - (1 << 39) + 1));
    }

    #[test]
    fn byte_sizes_format_for_people() {
        assert_eq!(format_byte_size(0), "0 B");
        assert_eq!(format_byte_size(1023), "1023 B");
        assert_eq!(format_byte_size(1536), "1.5 KiB");
        assert_eq!(format_byte_size(2 << 30), "2.0 GiB");
        assert_eq!(format_byte_size(u64::MAX), "16.0 EiB");
    }
}
