//! CUDA architectures in every spelling NVRTC users write them.

use std::ffi::c_int;

/// An architecture: `90` and an optional feature suffix (`a` or `f`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Arch {
    pub(super) number: c_int,
    pub(super) suffix: String,
}

impl Arch {
    pub(super) fn parse(text: &str) -> Option<Arch> {
        let text = text.trim();
        let rest = text
            .strip_prefix("sm_")
            .or_else(|| text.strip_prefix("compute_"))
            .unwrap_or(text);
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let suffix = &rest[digits..];
        if digits == 0 || !matches!(suffix, "" | "a" | "f") {
            return None;
        }
        Some(Arch {
            number: rest[..digits].parse().ok()?,
            suffix: suffix.to_string(),
        })
    }

    pub(super) fn real(&self) -> String {
        format!("sm_{}{}", self.number, self.suffix)
    }

    pub(super) fn virtual_(&self) -> String {
        format!("compute_{}{}", self.number, self.suffix)
    }
}

// -------------------------------------------------------------- backend ----
