//! What the GPU backends (OpenCL, CUDA, Vulkan) share: checking a compile job
//! before it reaches a driver, the work-size rules of [`Launch`], finding a
//! tool on `PATH`, the shapes of their errors and probe records, and the
//! teardown contract ([`Lifecycle`]).
//!
//! # Work sizes
//!
//! Every GPU backend reads [`Launch::global`] and [`Launch::local`] the same
//! way, so one kernel text behaves alike on all of them:
//! * a zero in either counts as 1 (so `[n, 0, 0]` is a 1-D launch of `n`);
//! * `local` all ones (or zeros) lets the backend pick the work-group size;
//! * the number of work-groups in each dimension is `ceil(global / local)`, so
//!   a kernel may see more threads than `global` and must guard its index
//!   (`if (i < n)`), as CUDA kernels always do.

use super::{BackendError, BackendInfo, CompileJob, Launch};

mod backend;
mod implicit;
pub(crate) use super::shared::{find_on_path, is_identifier};
pub(crate) mod keys;
mod lifecycle;

pub use backend::{Driver, GpuBackend, Opened};
pub use keys::Toolchain;
pub(crate) use lifecycle::{opened, Lifecycle};

/// [`BackendError::Unavailable`] for `family`.
pub(crate) fn unavailable(family: &'static str, reason: impl Into<String>) -> BackendError {
    BackendError::Unavailable {
        backend: family,
        reason: reason.into(),
    }
}

/// A probe's record before it found anything: unavailable, no reason yet.
pub(crate) fn info(family: &str) -> BackendInfo {
    BackendInfo {
        backend: family.into(),
        available: false,
        version: None,
        devices: Vec::new(),
        reason: None,
    }
}

/// Checks what every GPU compile needs before a driver sees it: at least one
/// kernel, symbols that are identifiers and distinct, and no NUL byte in a
/// text or an option (C strings cannot carry it, and some bindings panic).
pub(crate) fn check_job(family: &'static str, job: &CompileJob<'_>) -> Result<(), BackendError> {
    let fail = compile_error(family, job);
    if job.kernels.is_empty() {
        return Err(fail("the group has no kernels".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for kernel in job.kernels {
        if !is_identifier(kernel.symbol) {
            return Err(fail(format!(
                "`{}` is not a valid kernel symbol (an identifier: letters, digits, `_`, not starting with a digit)",
                kernel.symbol.escape_debug()
            )));
        }
        if !seen.insert(kernel.symbol) {
            return Err(fail(format!(
                "the symbol `{}` appears twice in the group",
                kernel.symbol
            )));
        }
        if kernel.text.contains('\0') {
            return Err(fail(format!(
                "the text of `{}` contains a NUL byte",
                kernel.symbol
            )));
        }
    }
    if let Some(option) = job.options.iter().find(|o| o.contains('\0')) {
        return Err(fail(format!(
            "the option {:?} contains a NUL byte",
            option.escape_debug().to_string()
        )));
    }
    Ok(())
}

/// Makes the [`BackendError::Compile`] of `job`'s group from a log.
pub(crate) fn compile_error<'a>(
    family: &'static str,
    job: &'a CompileJob<'_>,
) -> impl Fn(String) -> BackendError + Copy + 'a {
    move |log| BackendError::Compile {
        backend: family,
        kernels: kernel_names(job),
        log,
    }
}

/// Makes the [`BackendError::Launch`] of `symbol` from a reason.
pub(crate) fn launch_error<'a>(
    family: &'static str,
    symbol: &'a str,
) -> impl Fn(String) -> BackendError + Copy + 'a {
    move |reason| BackendError::Launch {
        backend: family,
        symbol: symbol.to_string(),
        reason,
    }
}

/// The symbols of a job's kernels, for [`BackendError::Compile`].
pub(crate) fn kernel_names(job: &CompileJob<'_>) -> Vec<String> {
    job.kernels.iter().map(|k| k.symbol.to_string()).collect()
}

/// Concatenates a group's kernels into one translation unit. Each kernel is
/// preceded by a `#line 1 "<symbol>"` directive, so a compiler's diagnostics
/// name the kernel and the line within it rather than a line of the
/// concatenation.
pub(crate) fn concatenate(job: &CompileJob<'_>) -> String {
    let mut source = String::new();
    for kernel in job.kernels {
        source.push_str(&format!("#line 1 \"{}\"\n", kernel.symbol));
        source.push_str(kernel.text);
        if !kernel.text.ends_with('\n') {
            source.push('\n');
        }
    }
    source
}

/// Wraps program bytes for a driver that does not survive bad ones (PoCL
/// aborts the process on a truncated program binary): `magic` (8 bytes), the
/// format `version` (`u32`, little-endian), the payload's blake3 digest, then
/// the payload. [`unseal`] checks all three before a driver sees a byte.
pub(crate) fn seal(magic: &[u8; 8], version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 4 + 32 + payload.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload [`seal`] wrapped, or why `bytes` are not such a program.
pub(crate) fn unseal<'a>(
    magic: &[u8; 8],
    version: u32,
    bytes: &'a [u8],
) -> Result<&'a [u8], String> {
    let rest = bytes.strip_prefix(magic.as_slice()).ok_or_else(|| {
        format!(
            "not a kcache program (no `{}` header)",
            String::from_utf8_lossy(magic)
        )
    })?;
    let (found, rest) = rest
        .split_first_chunk::<4>()
        .ok_or("truncated program header")?;
    let found = u32::from_le_bytes(*found);
    if found != version {
        return Err(format!(
            "program format version {found}, expected {version}"
        ));
    }
    let (digest, payload) = rest
        .split_first_chunk::<32>()
        .ok_or("truncated program header")?;
    if blake3::hash(payload).as_bytes() != digest {
        return Err("the program bytes are corrupt or truncated (digest mismatch)".into());
    }
    Ok(payload)
}

/// `global` with zeros counted as ones.
pub(crate) fn global_size(launch: &Launch) -> [usize; 3] {
    launch.global.map(|g| g.max(1))
}

/// `local` with zeros counted as ones, or `None` when the backend picks.
pub(crate) fn local_size(launch: &Launch) -> Option<[usize; 3]> {
    let local = launch.local.map(|l| l.max(1));
    (local != [1, 1, 1]).then_some(local)
}

/// Work-groups per dimension: `ceil(global / local)`.
pub(crate) fn group_count(global: [usize; 3], local: [usize; 3]) -> [usize; 3] {
    [0, 1, 2].map(|d| global[d].div_ceil(local[d].max(1)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::KernelSource;

    /// A one-group job, for the tests of the GPU backends' shared parts.
    pub(crate) fn job<'a>(
        kernels: &'a [KernelSource<'a>],
        options: &'a [String],
    ) -> CompileJob<'a> {
        CompileJob {
            kernels,
            options,
            group: 0,
            n_groups: 1,
            fresh: false,
        }
    }

    #[test]
    fn identifiers_are_what_kernel_languages_accept() {
        assert!(is_identifier("saxpy_2"));
        assert!(is_identifier("_k"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("2k"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier("a\0b"));
    }

    #[test]
    fn check_job_refuses_duplicate_symbols_and_nul_bytes() {
        let dup = [
            KernelSource {
                symbol: "k",
                text: "a",
            },
            KernelSource {
                symbol: "k",
                text: "b",
            },
        ];
        let err = check_job("opencl", &job(&dup, &[])).unwrap_err();
        assert!(err.to_string().contains("appears twice"), "{err}");

        let one = [KernelSource {
            symbol: "k",
            text: "a",
        }];
        let options = ["-DX=\0".to_string()];
        let err = check_job("opencl", &job(&one, &options)).unwrap_err();
        assert!(matches!(err, BackendError::Compile { ref kernels, .. } if kernels == &["k"]));

        assert!(check_job("opencl", &job(&[], &[])).is_err());
        assert!(check_job("opencl", &job(&one, &[])).is_ok());
    }

    #[test]
    fn concatenation_marks_each_kernel_with_its_symbol() {
        let kernels = [
            KernelSource {
                symbol: "a",
                text: "x",
            },
            KernelSource {
                symbol: "b",
                text: "y\n",
            },
        ];
        assert_eq!(
            concatenate(&job(&kernels, &[])),
            "#line 1 \"a\"\nx\n#line 1 \"b\"\ny\n"
        );
    }

    #[test]
    fn sealed_bytes_round_trip_and_any_damage_is_caught() {
        let sealed = seal(b"KCTESTPR", 3, b"payload");
        assert_eq!(unseal(b"KCTESTPR", 3, &sealed), Ok(&b"payload"[..]));
        assert!(unseal(b"KCOTHERS", 3, &sealed).is_err());
        assert!(unseal(b"KCTESTPR", 4, &sealed).is_err());
        for len in 0..sealed.len() {
            assert!(unseal(b"KCTESTPR", 3, &sealed[..len]).is_err(), "{len}");
        }
        for at in 0..sealed.len() {
            let mut flipped = sealed.clone();
            flipped[at] ^= 1;
            assert!(unseal(b"KCTESTPR", 3, &flipped).is_err(), "{at}");
        }
    }

    #[test]
    fn work_sizes_count_zeros_as_ones_and_round_groups_up() {
        let launch = Launch {
            global: [10, 0, 0],
            local: [4, 1, 0],
            ..Launch::default()
        };
        assert_eq!(global_size(&launch), [10, 1, 1]);
        assert_eq!(local_size(&launch), Some([4, 1, 1]));
        assert_eq!(group_count([10, 1, 1], [4, 1, 1]), [3, 1, 1]);
        assert_eq!(local_size(&Launch::default()), None);
    }
}
