//! Segment kernel names and kernel tokens.
//!
//! A fissioned routine's segment kernels are named by position, so a candidate
//! that adds or removes a segment shifts every later one's name. The index can
//! never decide whether a text compiles, so it stays out of the key; the
//! routine's name stays in, because it can (a routine named after a declaration
//! the prelude makes is refused by the compiler).

/// The name of segment `index` of `routine`: `<routine>__seg<index>`.
pub fn segment_kernel_name(routine: &str, index: usize) -> String {
    format!("{routine}{SEGMENT_MARK}{index}")
}

/// What a kernel's own name contributes to its canonical text: a segment
/// kernel's name without its index (`<routine>__seg<i>` becomes
/// `<routine>__seg`), any other name as it is.
pub fn kernel_token(name: &str) -> &str {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let stem = &name[..name.len() - digits];
    if digits > 0 && stem.ends_with(SEGMENT_MARK) {
        stem
    } else {
        name
    }
}

const SEGMENT_MARK: &str = "__seg";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip_to_their_token() {
        assert_eq!(segment_kernel_name("matmul", 3), "matmul__seg3");
        assert_eq!(kernel_token("matmul__seg3"), "matmul__seg");
        assert_eq!(kernel_token("matmul__seg12"), "matmul__seg");
        assert_eq!(kernel_token(&segment_kernel_name("r", 0)), "r__seg");
    }

    #[test]
    fn other_names_stay_as_they_are() {
        for n in [
            "matmul",
            "matmul__seg",
            "seg3",
            "matmul_seg3",
            "a__segx3",
            "",
            "3",
        ] {
            assert_eq!(kernel_token(n), n);
        }
    }
}
