//! The names each GPU driver defines without being asked (review
//! 2026-12-02, GPU F1, F2, F3): NVRTC's runtime header defines
//! `cudaGetDeviceProperties`, PoCL's builtin renames `abs` (to `_cl_abs`),
//! glslang every extension's `GL_*`. A local spelled like one is read as the
//! macro, so none is renamed.
//!
//! The lists (`implicit/*.txt`) are written by `scripts/gpu-macros` from the
//! driver's own headers and by probing the driver, and checked against the
//! installed driver on every test run (`tests/gpu_implicit_macros.rs`). The
//! reserved namespace is left out: no reserved name is ever renamed.
//!
//! A line `NAME` is a macro: the arguments of its calls are kept as written
//! (a body kcache has not seen may paste or spell them). A line `NAME =
//! WORDS` is an object-like macro whose expansion takes no arguments (no
//! definition of it is function-like or positional, and its last token is
//! no function-like macro of the driver's headers): `fmax(a, b)` becomes
//! `_cl_fmax(a, b)`, a plain call. Its name and the words its bodies name
//! are kept as written, but it is no macro to the binder, so a call's
//! arguments are renamed as any call's are. Where an option, a header or
//! the kernel defines one of those words as a macro (`#define _cl_fmax(a,
//! b) a##b`), the expansion may take arguments after all, and every alias
//! is a macro again.

use std::sync::OnceLock;

use super::keys::Toolchain;
use crate::backend::cc::includes::Define;
use crate::canon::rename::is_keyword;
use crate::canon::MacroNames;

const NVRTC: &str = include_str!("implicit/nvrtc.txt");
const POCL: &str = include_str!("implicit/pocl.txt");
const GLSLANG: &str = include_str!("implicit/glslang.txt");

/// One driver's list, read.
pub(crate) struct Implicit {
    /// The `NAME` lines: macros.
    pub macros: Vec<&'static str>,
    /// The `NAME = WORDS` lines' names.
    pub aliases: Vec<&'static str>,
    /// The aliases' names and words, keywords aside: kept as written.
    pub kept: MacroNames,
    /// The aliases' words alone.
    words: MacroNames,
}

impl Implicit {
    fn parse(list: &'static str) -> Implicit {
        let mut i = Implicit {
            macros: Vec::new(),
            aliases: Vec::new(),
            kept: MacroNames::default(),
            words: MacroNames::default(),
        };
        let lines = list.lines().map(str::trim);
        for line in lines.filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let Some((name, words)) = line.split_once('=') else {
                i.macros.push(line);
                continue;
            };
            let name = name.trim();
            i.aliases.push(name);
            i.kept.insert(name.as_bytes());
            for w in words
                .split_ascii_whitespace()
                .filter(|w| !is_keyword(w.as_bytes()))
            {
                i.kept.insert(w.as_bytes());
                i.words.insert(w.as_bytes());
            }
        }
        i
    }

    /// Whether `defines` make a word an alias expands to a macro, so that
    /// the aliases must be taken for macros (see the module docs).
    pub fn reached_by(&self, defines: &[Define]) -> bool {
        defines.iter().any(|d| self.words.contains(&*d.name))
    }

    /// Every name of the list.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.macros.iter().chain(&self.aliases).copied()
    }
}

/// `driver`'s list.
pub(crate) fn of(driver: Toolchain) -> &'static Implicit {
    static LISTS: [OnceLock<Implicit>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    LISTS[driver as usize].get_or_init(|| {
        Implicit::parse(match driver {
            Toolchain::OpenCl => POCL,
            Toolchain::Cuda => NVRTC,
            Toolchain::Vulkan => GLSLANG,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_as_macros_and_aliases_with_their_words() {
        let i = Implicit::parse("# c\nva_start\nfmax = _cl_fmax\nK = \nD = double x\n");
        assert_eq!(i.macros, ["va_start"]);
        assert_eq!(i.aliases, ["fmax", "K", "D"]);
        for w in ["fmax", "_cl_fmax", "K", "D", "x"] {
            assert!(i.kept.contains(w.as_bytes()), "{w}");
        }
        assert!(!i.kept.contains(&b"double"[..]), "keywords need no keeping");
        let d = |n: &str| crate::backend::cc::macros::bare(n);
        assert!(i.reached_by(&[d("_cl_fmax")]));
        assert!(!i.reached_by(&[d("fmax"), d("va_start")]));
    }

    #[test]
    fn each_driver_has_its_list() {
        assert!(of(Toolchain::OpenCl).names().count() > 1000);
        assert!(of(Toolchain::OpenCl).aliases.contains(&"fmax"));
        assert!(of(Toolchain::Cuda).macros.contains(&"assert"));
        assert!(of(Toolchain::Vulkan)
            .names()
            .any(|n| n == "GL_ARB_compute_shader"));
    }
}
