//! What a GPU kernel's key takes from outside its text
//! ([`super::Backend::key_extras`] for OpenCL, CUDA and Vulkan).
//!
//! # Headers
//!
//! Each driver's own search order, by contents (`cc/includes.rs` scans):
//!
//! * **OpenCL** (PoCL's clang) and **CUDA** (NVRTC): a quoted include of the
//!   kernel is looked up in the process's working directory first (the
//!   program's source has no directory of its own; NVRTC documents the
//!   working directory and its `-I`/`--include-path` directories for quoted
//!   includes), then in the `-I` / `--include-path` directories, relative
//!   ones taken against the working directory; a bracketed one in the `-I`
//!   directories, for OpenCL after the working directory (PoCL hands clang
//!   `-I.` before the program's options). A header found nowhere is
//!   digested as absent (it is the driver's own, covered by its identity, or
//!   the compile fails), so one appearing later changes the key.
//! * **Vulkan** (glslang): every reference is refused, under a conditional
//!   too. glslang looks a quoted include up in the directory of each file on
//!   the include stack, the kernel's being the backend's private compile
//!   directory (the group's other kernels are there, and `..` leads out of
//!   it), opens no absolute name, and gets no `-I` (the backend refuses
//!   it): nothing a kernel could include is a file the key can see.
//!
//! # Macro names
//!
//! A driver cannot be asked for its predefined macros the way `cc -dM` can:
//! each backend lists its language's documented ones (OpenCL C's
//! `CL_VERSION_*`; NVRTC's `__CUDACC__`, `__CUDA_ARCH__` and its built-in
//! header's qualifiers; GLSL's `GL_*`, `VULKAN`), every name the driver may
//! define unasked (`implicit/*.txt`, from its own headers and by probing
//! it: `scripts/gpu-macros`; `tests/gpu_implicit_macros.rs` checks them
//! against the installed driver), the host-target names a clang-based
//! driver may define (`linux`, `unix`; `i386` and its kin on a 32-bit x86
//! host only), plus every name an option defines or undefines, every
//! `#define` of every header read and of the kernel. NVRTC's `assert` is
//! positional. The reserved namespace needs no list: no name there is
//! renamed.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::implicit;
use crate::backend::cc::includes::{self, Define};
use crate::backend::cc::macros::{self, Seed};
use crate::backend::{BackendError, KernelSource, KeyExtras};

/// Host-target names a clang-based driver compiling for this host may
/// predefine without underscores. Only the ones this host's target has: a
/// renderer's loop variables are called `i486` and the like, and a name
/// kept as written where it is no macro only costs reuse.
#[cfg(target_arch = "x86")]
const HOST_NAMES: &[&str] = &["linux", "unix", "i386", "i486", "i586", "i686"];
#[cfg(not(target_arch = "x86"))]
const HOST_NAMES: &[&str] = &["linux", "unix"];

/// OpenCL C's documented predefined macros (OpenCL C specification,
/// "Preprocessor Directives and Macros", math constants, limits).
const OPENCL: &[&str] = &[
    "__OPENCL_VERSION__",
    "__OPENCL_C_VERSION__",
    "CL_VERSION_1_0",
    "CL_VERSION_1_1",
    "CL_VERSION_1_2",
    "CL_VERSION_2_0",
    "CL_VERSION_2_1",
    "CL_VERSION_2_2",
    "CL_VERSION_3_0",
    "__ENDIAN_LITTLE__",
    "__IMAGE_SUPPORT__",
    "__FAST_RELAXED_MATH__",
    "__ROUNDING_MODE__",
    "__kernel_exec",
    "kernel_exec",
    "FP_FAST_FMA",
    "FP_FAST_FMAF",
    "FP_FAST_FMA_HALF",
    "FP_ILOGB0",
    "FP_ILOGBNAN",
    "MAXFLOAT",
    "HUGE_VALF",
    "HUGE_VAL",
    "HUGE_VALH",
    "INFINITY",
    "NAN",
    "FLT_DIG",
    "FLT_MANT_DIG",
    "FLT_MAX_10_EXP",
    "FLT_MAX_EXP",
    "FLT_MIN_10_EXP",
    "FLT_MIN_EXP",
    "FLT_RADIX",
    "FLT_MAX",
    "FLT_MIN",
    "FLT_EPSILON",
    "DBL_DIG",
    "DBL_MANT_DIG",
    "DBL_MAX_10_EXP",
    "DBL_MAX_EXP",
    "DBL_MIN_10_EXP",
    "DBL_MIN_EXP",
    "DBL_MAX",
    "DBL_MIN",
    "DBL_EPSILON",
    "HALF_DIG",
    "HALF_MANT_DIG",
    "HALF_MAX",
    "HALF_MIN",
    "HALF_EPSILON",
    "CHAR_BIT",
    "CHAR_MAX",
    "CHAR_MIN",
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "SCHAR_MAX",
    "SCHAR_MIN",
    "SHRT_MAX",
    "SHRT_MIN",
    "UCHAR_MAX",
    "USHRT_MAX",
    "UINT_MAX",
    "ULONG_MAX",
    "M_E",
    "M_LOG2E",
    "M_LOG10E",
    "M_LN2",
    "M_LN10",
    "M_PI",
    "M_PI_2",
    "M_PI_4",
    "M_1_PI",
    "M_2_PI",
    "M_2_SQRTPI",
    "M_SQRT2",
    "M_SQRT1_2",
    "M_E_F",
    "M_LOG2E_F",
    "M_LOG10E_F",
    "M_LN2_F",
    "M_LN10_F",
    "M_PI_F",
    "M_PI_2_F",
    "M_PI_4_F",
    "M_1_PI_F",
    "M_2_PI_F",
    "M_2_SQRTPI_F",
    "M_SQRT2_F",
    "M_SQRT1_2_F",
    "M_E_H",
    "M_LOG2E_H",
    "M_LOG10E_H",
    "M_LN2_H",
    "M_LN10_H",
    "M_PI_H",
    "M_PI_2_H",
    "M_PI_4_H",
    "M_1_PI_H",
    "M_2_PI_H",
    "M_2_SQRTPI_H",
    "M_SQRT2_H",
    "M_SQRT1_2_H",
    "CLK_LOCAL_MEM_FENCE",
    "CLK_GLOBAL_MEM_FENCE",
    "CLK_IMAGE_MEM_FENCE",
    "CLK_NORMALIZED_COORDS_TRUE",
    "CLK_NORMALIZED_COORDS_FALSE",
    "CLK_ADDRESS_NONE",
    "CLK_ADDRESS_CLAMP",
    "CLK_ADDRESS_CLAMP_TO_EDGE",
    "CLK_ADDRESS_REPEAT",
    "CLK_ADDRESS_MIRRORED_REPEAT",
    "CLK_FILTER_NEAREST",
    "CLK_FILTER_LINEAR",
    "cl_khr_fp64",
    "cl_khr_fp16",
    "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
    "cl_khr_byte_addressable_store",
    "cl_khr_3d_image_writes",
    "cl_khr_subgroups",
    "cl_khr_images",
    "cl_khr_depth_images",
    "__SPIR__",
    "__SPIR32__",
    "__SPIR64__",
    "__kernel",
    "kernel",
    "__global",
    "global",
    "__local",
    "local",
    "__constant",
    "constant",
    "__private",
    "private",
    "__read_only",
    "read_only",
    "__write_only",
    "write_only",
    "__read_write",
    "read_write",
    "__generic",
    "generic",
    "uniform",
    "pipe",
];

/// NVRTC's built-in macros and what its built-in headers define.
const CUDA: &[&str] = &[
    "__CUDACC__",
    "__CUDACC_RTC__",
    "__CUDA_ARCH__",
    "__CUDA_ARCH_LIST__",
    "__CUDA_ARCH_SPECIFIC__",
    "__CUDA_ARCH_FAMILY_SPECIFIC__",
    "__CUDACC_VER_MAJOR__",
    "__CUDACC_VER_MINOR__",
    "__CUDACC_VER_BUILD__",
    "__CUDACC_RDC__",
    "__CUDACC_EWP__",
    "__CUDACC_DEBUG__",
    "__CUDACC_RELAXED_CONSTEXPR__",
    "__CUDACC_EXTENDED_LAMBDA__",
    "__CUDACC_RTC_INT128__",
    "__CUDACC_RTC_FLOAT128__",
    "__NVCC_DIAG_PRAGMA_SUPPORT__",
    "__cplusplus",
    "__global__",
    "__device__",
    "__host__",
    "__shared__",
    "__constant__",
    "__managed__",
    "__launch_bounds__",
    "__forceinline__",
    "__noinline__",
    "__restrict__",
    "__align__",
    "__grid_constant__",
    "__cluster_dims__",
    "__builtin_align__",
    "NULL",
    "CUDART_VERSION",
    "__CUDA_API_VERSION",
];

/// GLSL's predefined macros (GLSL 4.60 and GL_KHR_vulkan_glsl) and what
/// glslang defines.
const GLSL: &[&str] = &[
    "__VERSION__",
    "GL_ES",
    "GL_core_profile",
    "GL_compatibility_profile",
    "GL_es_profile",
    "GL_SPIRV",
    "VULKAN",
    "GL_KHR_vulkan_glsl",
    "GL_GOOGLE_include_directive",
    "GL_GOOGLE_cpp_style_line_directive",
    "GL_FRAGMENT_PRECISION_HIGH",
];

/// Where a driver looks for a kernel's quoted includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Toolchain {
    /// PoCL: the working directory, then `-I`.
    OpenCl,
    /// NVRTC: the working directory, then `-I` / `--include-path`.
    Cuda,
    /// glslang in a private directory, no `-I`.
    Vulkan,
}

/// A driver's documented and implicit predefined names, bodiless.
fn predefined_defines(driver: Toolchain) -> Vec<Define> {
    let names = match driver {
        Toolchain::OpenCl => OPENCL,
        Toolchain::Cuda => CUDA,
        Toolchain::Vulkan => GLSL,
    };
    // A keyword a driver's header may define (PoCL's `#define double
    // error_undefined_type_double` on a device without doubles) is never
    // renamed anyway, and listed as a macro it would give up every kernel's
    // names (`keyword_macro`).
    let implicit = (implicit::of(driver).macros.iter().copied())
        .filter(|n| !crate::canon::rename::is_keyword(n.as_bytes()));
    let all = (names
        .iter()
        .chain(HOST_NAMES)
        .chain(macros::POSITIONAL)
        .copied())
    .chain(implicit);
    let mut defines: Vec<Define> = all.map(macros::bare).collect();
    if driver == Toolchain::Cuda {
        defines.extend(
            includes::parse_directive(NVRTC_ASSERT.as_bytes())
                .ok()
                .and_then(|d| d.define),
        );
    }
    defines
}

/// NVRTC's `assert`, as its built-in header has it in effect: it spells its
/// argument and the function's name into the message a failing assertion
/// prints (review 2026-12-02, GPU F7), so it is positional and a kernel
/// that uses it is keyed on its raw text.
const NVRTC_ASSERT: &str = "#define assert(e) __assertfail(#e, __FILE__, __LINE__, __func__, 1)";

/// The driver's aliases as macros (see [`implicit`]'s docs: for when a
/// definition reaches what they expand to).
fn aliases_as_macros(driver: Toolchain) -> impl Iterator<Item = Define> {
    implicit::of(driver).aliases.iter().map(|n| macros::bare(n))
}

fn predefined(driver: Toolchain) -> &'static Arc<Seed> {
    static SETS: [OnceLock<Arc<Seed>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    SETS[driver as usize].get_or_init(|| {
        Arc::new(Seed::new(predefined_defines(driver)).keeping(&implicit::of(driver).kept))
    })
}

/// The predefined names with `options`' own, memoized per option list.
fn seed(driver: Toolchain, options: &[String]) -> Arc<Seed> {
    let own = macros::option_defines(options);
    if own.is_empty() {
        return Arc::clone(predefined(driver));
    }
    type Seeds = std::sync::Mutex<rustc_hash::FxHashMap<(Toolchain, Vec<String>), Arc<Seed>>>;
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    let mut seeds = SEEDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    Arc::clone(seeds.entry((driver, options.to_vec())).or_insert_with(|| {
        let mut all = predefined_defines(driver);
        if implicit::of(driver).reached_by(&own) {
            all.extend(aliases_as_macros(driver));
        }
        all.extend(own);
        Arc::new(Seed::new(all).keeping(&implicit::of(driver).kept))
    }))
}

/// Why a Vulkan kernel may include nothing (review 2026-12-02, GPU F12).
/// glslang resolves a quoted include against the directory of each file on
/// the include stack, the kernel's being kcache's private compile
/// directory, and cannot open an absolute name at all: an include finds the
/// group's other kernels there (`k2.comp`, `k2.spv`), or, through `..`,
/// files anyone may write in `/tmp`, none of which the key could see.
const NO_GLSL_INCLUDE: &str = "glslang looks for includes in kcache's private compile \
    directory (and through `..` out of it) and the Vulkan backend takes no `-I`: a Vulkan \
    kernel cannot include files; paste the header into its text";

/// The `-I` / `--include-path` directories of `options`, against `cwd`.
fn include_dirs(options: &[String], cwd: &std::path::Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut options = options.iter();
    while let Some(o) = options.next() {
        let dir = if o == "-I" || o == "--include-path" {
            options.next().map(String::as_str)
        } else {
            o.strip_prefix("--include-path=")
                .or_else(|| o.strip_prefix("-I"))
        };
        if let Some(d) = dir {
            dirs.push(cwd.join(d.trim()));
        }
    }
    dirs
}

/// [`super::Backend::key_extras`] for a GPU backend (see the module docs).
pub(crate) fn key_extras(
    family: &'static str,
    driver: Toolchain,
    kernel: &KernelSource<'_>,
    options: &[String],
) -> Result<KeyExtras, BackendError> {
    // OpenCL hands the driver one string, the options joined by blanks:
    // `-DZZ=1 -Dr=q` in one option is two defines to it (review
    // 2026-12-02), so they are read word by word here as well.
    let words: Vec<String>;
    let options = if driver == Toolchain::OpenCl {
        words = options
            .iter()
            .flat_map(|o| o.split_ascii_whitespace())
            .map(str::to_string)
            .collect();
        &words[..]
    } else {
        options
    };
    let seed = seed(driver, options);
    let uncacheable = options
        .iter()
        .find_map(|o| includes::time_macro(o.as_bytes()))
        .map(|m| format!("an option uses {m}"));
    let cwd = std::env::current_dir().map_err(|source| BackendError::Io {
        backend: family,
        path: PathBuf::from("."),
        source,
    })?;
    let search = match driver {
        // PoCL passes clang `-I.` before the program's options: a
        // bracketed include is found in the working directory first
        // (review 2026-12-02, GPU F16). NVRTC searches no such directory.
        Toolchain::OpenCl => {
            let dirs: Vec<PathBuf> = std::iter::once(cwd.clone())
                .chain(include_dirs(options, &cwd))
                .collect();
            includes::search_in_dirs(&dirs, &cwd)
        }
        Toolchain::Cuda => includes::search_in_dirs(&include_dirs(options, &cwd), &cwd),
        Toolchain::Vulkan => {
            includes::search_in_dirs(&[], &cwd).refusing_references(NO_GLSL_INCLUDE)
        }
    };
    let label = format!("kernel `{}`", kernel.symbol);
    let scanned = includes::scan_text(&search, &label, kernel.text.as_bytes(), true)
        .map_err(|e| crate::backend::cc::scan_error_for(family, e))?;
    let mut merged = macros::merge(&seed, &scanned.closure, &scanned.defines);
    let list = implicit::of(driver);
    if list.reached_by(&scanned.closure.defines) || list.reached_by(&scanned.defines) {
        let mut all = (*merged.macros).clone();
        all.extend(list.aliases.iter());
        merged.macros = Arc::new(all);
    }
    // The Vulkan backend compiles the kernel under `#define <symbol> main`:
    // a local spelled `main` is what the symbol's uses read (review
    // 2026-12-02, GPU F4), so it keeps its name.
    let reached = if driver == Toolchain::Vulkan {
        let mut r = (*merged.reached).clone();
        r.insert(b"main");
        Arc::new(r)
    } else {
        merged.reached
    };
    Ok(KeyExtras {
        digests: vec![scanned.closure.digest],
        macros: merged.macros,
        position_macros: merged.positional,
        pasting: merged.pasting,
        reached,
        uncacheable: uncacheable.or_else(|| scanned.closure.uncacheable.clone()),
        records_names: crate::backend::records_names(family, options),
        // The search depends on the working directory, read per call: asked
        // again on every keying.
        validity: None,
    })
}

/// What the handle-cache key of a group needs besides its source: every
/// kernel's extras digests (so a header edited between two compiles in one
/// process is compiled afresh), and why the result cannot be cached, if so.
/// A group whose extras cannot be computed gets a key no other compile
/// shares, and is uncacheable.
pub(crate) fn group_key_part(
    family: &'static str,
    driver: Toolchain,
    job: &super::CompileJob<'_>,
) -> (String, Option<String>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let mut h = crate::key::PartsHasher::new();
    h.part("kcache-gpu-group");
    let mut uncacheable = None;
    for k in job.kernels {
        match key_extras(family, driver, k, job.options) {
            Ok(e) => {
                for d in &e.digests {
                    h.part(d.as_bytes());
                }
                uncacheable = uncacheable.or(e.uncacheable);
            }
            Err(e) => {
                uncacheable.get_or_insert(e.to_string());
            }
        }
    }
    if uncacheable.is_some() {
        h.part(UNIQUE.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    }
    (format!("\n// extras {}", h.finish().to_hex()), uncacheable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extras(text: &str, options: &[&str]) -> Result<KeyExtras, BackendError> {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        key_extras(
            "opencl",
            Toolchain::OpenCl,
            &KernelSource { symbol: "k", text },
            &options,
        )
    }

    #[test]
    fn an_included_headers_contents_change_the_extras() {
        let dir = tempfile::tempdir().unwrap();
        let inc = format!("-I{}", dir.path().display());
        std::fs::write(dir.path().join("h.h"), "#define N 4\n").unwrap();
        let text = "#include \"h.h\"\nkernel void k() {}";
        let a = extras(text, &[&inc]).unwrap();
        assert_eq!(a.digests, extras(text, &[&inc]).unwrap().digests);
        assert!(a.macros.contains(&b"N"[..]), "a header's macro is kept");
        std::fs::write(dir.path().join("h.h"), "#define N 88\n").unwrap();
        assert_ne!(a.digests, extras(text, &[&inc]).unwrap().digests);
    }

    #[test]
    fn a_nested_header_and_the_include_path_change_the_extras() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for d in [&one, &two] {
            std::fs::write(d.path().join("h.h"), "#include \"inner.h\"\n").unwrap();
            std::fs::write(d.path().join("inner.h"), "#define X 1\n").unwrap();
        }
        let text = "#include <h.h>\n";
        let (i1, i2) = (
            one.path().display().to_string(),
            two.path().display().to_string(),
        );
        let a = extras(text, &["-I", &i1]).unwrap().digests;
        assert_ne!(
            a,
            extras(text, &[&format!("--include-path={i2}")])
                .unwrap()
                .digests,
            "another directory"
        );
        std::fs::write(one.path().join("inner.h"), "#define X 22\n").unwrap();
        assert_ne!(a, extras(text, &["-I", &i1]).unwrap().digests, "nested");
    }

    #[test]
    fn a_header_found_nowhere_is_digested_as_absent_and_a_computed_one_refused() {
        let none = extras("kernel void k() {}", &[]).unwrap();
        let builtin = extras("#include <cuda_fp16.h>\n", &[]).unwrap();
        assert_ne!(builtin.digests, none.digests, "absence is an input too");
        match extras("#define H \"h.h\"\n#include H\n", &[]) {
            Err(BackendError::Refused { .. }) => {}
            other => panic!("a computed include must be refused: {other:?}"),
        }
    }

    /// Review 2026-12-02, GPU F12: glslang resolved `"../../x.h"` against
    /// the private compile directory, out into `/tmp`, while the key digested
    /// it as absent; a bare name finds the group's other kernels there.
    #[test]
    fn a_vulkan_kernel_including_anything_is_refused() {
        let vulkan = |text: &str| {
            key_extras(
                "vulkan",
                Toolchain::Vulkan,
                &KernelSource { symbol: "k", text },
                &[],
            )
        };
        for text in [
            "#extension GL_GOOGLE_include_directive : require\n#include \"../../x/vh.h\"\n",
            "#extension GL_GOOGLE_include_directive : enable\n#if 0\n#include \"k2.comp\"\n#endif\n",
            "#include \"/etc/hostname\"\n",
        ] {
            match vulkan(text) {
                Err(e @ BackendError::Refused { .. }) => {
                    assert!(e.to_string().contains("cannot include"), "{e}")
                }
                other => panic!("{text:?} must be refused: {other:?}"),
            }
        }
        assert!(vulkan("void main() {}\n").is_ok());
    }

    /// Review 2026-12-02, GPU F1, F2, F3, F7: names each driver defines
    /// unasked, which a local spelled like one is read as.
    #[test]
    fn each_drivers_unasked_macros_are_kept_and_nvrtcs_assert_is_positional() {
        for (family, driver, names) in [
            (
                "cuda",
                Toolchain::Cuda,
                &[
                    "cudaGetDeviceProperties",
                    "assert",
                    "va_start",
                    "NV_IS_DEVICE",
                ][..],
            ),
            (
                "opencl",
                Toolchain::OpenCl,
                &["abs", "cl_khr_fp64", "MAXFLOAT", "CLK_LOCAL_MEM_FENCE"],
            ),
            (
                "vulkan",
                Toolchain::Vulkan,
                &["GL_ARB_compute_shader", "GL_EXT_shader_atomic_float"],
            ),
        ] {
            let k = KernelSource {
                symbol: "k",
                text: "void k() {}",
            };
            let e = key_extras(family, driver, &k, &[]).unwrap();
            for n in names {
                let kept = e.macros.contains(n.as_bytes()) || e.reached.contains(n.as_bytes());
                assert!(kept, "{family}: {n}");
            }
            assert_eq!(
                e.position_macros.contains(&b"assert"[..]),
                driver == Toolchain::Cuda,
                "{family}"
            );
        }
    }

    /// PoCL's `#define fmax _cl_fmax`: `fmax(a, b)` is a plain call, so its
    /// arguments may be renamed, unless something defines `_cl_fmax` as a
    /// macro, which a call of `fmax` would then expand.
    #[test]
    fn an_alias_is_a_macro_only_where_a_definition_reaches_what_it_expands_to() {
        let plain = extras("kernel void k() {}", &[]).unwrap();
        assert!(!plain.macros.contains(&b"fmax"[..]));
        assert!(plain.reached.contains(&b"fmax"[..]) && plain.reached.contains(&b"_cl_fmax"[..]));
        let own = extras("#define _cl_fmax(a, b) a##b\nkernel void k() {}", &[]).unwrap();
        assert!(
            own.macros.contains(&b"fmax"[..]),
            "the kernel's own definition"
        );
        let opt = extras("kernel void k() {}", &["-D_cl_fmax(a,b)=a"]).unwrap();
        assert!(opt.macros.contains(&b"fmax"[..]), "an option's");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("h.h"), "#define _cl_fmax(a, b) a\n").unwrap();
        let inc = format!("-I{}", dir.path().display());
        let header = extras("#include <h.h>\nkernel void k() {}", &[&inc]).unwrap();
        assert!(header.macros.contains(&b"fmax"[..]), "a header's");
    }

    #[test]
    fn predefined_and_option_names_are_macros() {
        let e = extras("kernel void k() {}", &["-Dv1_x=2", "-D", "v2_y"]).unwrap();
        for n in [
            "v1_x",
            "v2_y",
            "M_PI_F",
            "CL_VERSION_1_2",
            "linux",
            "__LINE__",
        ] {
            assert!(e.macros.contains(n.as_bytes()), "{n}");
        }
        let t = extras("kernel void k() {}", &["-DSTAMP=__TIME__"]).unwrap();
        assert!(t.uncacheable.is_some());
    }

    #[test]
    fn a_debug_option_in_a_joined_option_string_is_reported() {
        let plain = extras("kernel void k() {}", &["-cl-fast-relaxed-math"]).unwrap();
        assert_eq!(plain.records_names, None);
        let debug = extras("kernel void k() {}", &["-cl-fast-relaxed-math -g"]).unwrap();
        assert!(debug.records_names.is_some_and(|r| r.contains("`-g`")));
    }
}
