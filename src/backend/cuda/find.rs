//! Finding NVRTC: the places it is looked for, in the order the module docs
//! of `backend::cuda` give.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::nvrtc::Nvrtc;
use super::CudaConfig;
use crate::backend::gpu;

/// The places NVRTC is looked for, in order, when nothing names it (see the
/// module docs). Candidates are files that exist, except the bare names that
/// stand for the default library search.
pub(super) fn nvrtc_candidates() -> Vec<PathBuf> {
    const NAMES: [&str; 2] = ["libnvrtc.so.12", "libnvrtc.so"];
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");

    let mut python_roots: Vec<PathBuf> = Vec::new();
    python_roots.extend(env("VIRTUAL_ENV"));
    python_roots.extend(env("CONDA_PREFIX"));
    if let Some(home) = &home {
        python_roots.push(home.join(".local"));
    }
    let pyenv = env("PYENV_ROOT").or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    if let Some(pyenv) = pyenv {
        python_roots.extend(subdirs(&pyenv.join("versions"), ""));
    }
    python_roots.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));

    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in &python_roots {
        for python in subdirs(&root.join("lib"), "python3") {
            for packages in ["site-packages", "dist-packages"] {
                dirs.push(python.join(packages).join("nvidia/cuda_nvrtc/lib"));
            }
        }
    }
    let mut candidates: Vec<PathBuf> = in_dirs(&dirs, &NAMES);
    candidates.extend(NAMES.map(PathBuf::from));

    let mut toolkits: Vec<PathBuf> = Vec::new();
    toolkits.extend(env("CUDA_HOME"));
    toolkits.extend(env("CUDA_PATH"));
    toolkits.push(PathBuf::from("/usr/local/cuda"));
    toolkits.extend(subdirs(Path::new("/usr/local"), "cuda-"));
    let toolkit_dirs: Vec<PathBuf> = toolkits
        .iter()
        .flat_map(|t| [t.join("lib64"), t.join("lib")])
        .collect();
    candidates.extend(in_dirs(&toolkit_dirs, &NAMES));
    candidates
}

/// `dir`'s subdirectories whose names start with `prefix`, newest version
/// first (descending by name, numbers compared as numbers).
pub(super) fn subdirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(version_key(p.file_name().unwrap_or_default())));
    found
}

/// Sorts `python3.9` before `python3.11` and `cuda-12.9` before `cuda-12.10`.
pub(super) fn version_key(name: &OsStr) -> Vec<(u64, String)> {
    let name = name.to_string_lossy();
    let mut key = Vec::new();
    let mut rest = name.as_ref();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            key.push((0, rest[..text].to_string()));
            rest = &rest[text..];
        }
    }
    key
}

pub(super) fn in_dirs(dirs: &[PathBuf], names: &[&str]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .filter(|p| p.is_file())
        .collect()
}

/// The `nvidia/cuda_nvrtc/lib` directories under `python3`'s `sys.path`.
pub(super) fn nvrtc_dirs_from_python() -> Vec<PathBuf> {
    let Some(python) = gpu::find_on_path("python3") else {
        return Vec::new();
    };
    let output = std::process::Command::new(python)
        .args(["-I", "-c", "import sys\nfor p in sys.path: print(p)"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| Path::new(l).join("nvidia/cuda_nvrtc/lib"))
        .collect()
}

/// Loads NVRTC from `explicit` (a file or a directory), or else from the
/// first candidate that loads. The error says where it looked.
pub(super) fn open_nvrtc(explicit: Option<&Path>) -> Result<Nvrtc, String> {
    if let Some(path) = explicit {
        let file = if path.is_dir() {
            ["libnvrtc.so.12", "libnvrtc.so"]
                .iter()
                .map(|n| path.join(n))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!("{}: no libnvrtc.so.12 or libnvrtc.so in it", path.display())
                })?
        } else {
            path.to_path_buf()
        };
        return Nvrtc::open(&file);
    }
    let mut failed = Vec::new();
    let python = || {
        in_dirs(
            &nvrtc_dirs_from_python(),
            &["libnvrtc.so.12", "libnvrtc.so"],
        )
    };
    for candidate in nvrtc_candidates().into_iter().chain(
        std::iter::from_fn({
            let mut python = Some(python);
            move || python.take().map(|p| p())
        })
        .flatten(),
    ) {
        match Nvrtc::open(&candidate) {
            Ok(nvrtc) => return Ok(nvrtc),
            // A bare name that does not load is only "not on the default
            // library path"; a file that exists but does not load is news.
            Err(e) if candidate.is_absolute() => failed.push(e),
            Err(_) => {}
        }
    }
    Err(format!(
        "NVRTC (libnvrtc.so.12) not found in the pip wheel's place under any Python \
         site-packages, on the default library path, or under CUDA_HOME, CUDA_PATH or \
         /usr/local/cuda*: `pip install nvidia-cuda-nvrtc-cu12`, install the CUDA toolkit, \
         or set KCACHE_NVRTC_LIB to the library or its directory{}",
        if failed.is_empty() {
            String::new()
        } else {
            format!(" (found but not loadable: {})", failed.join("; "))
        }
    ))
}

/// NVRTC as found by the search (or `KCACHE_NVRTC_LIB`), loaded once per
/// process.
pub(super) fn default_nvrtc() -> Result<Arc<Nvrtc>, String> {
    static NVRTC: OnceLock<Result<Arc<Nvrtc>, String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            let explicit = std::env::var_os("KCACHE_NVRTC_LIB")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from);
            open_nvrtc(explicit.as_deref())
                .map(Arc::new)
                .map_err(|e| match explicit {
                    Some(_) => format!("KCACHE_NVRTC_LIB: {e}"),
                    None => e,
                })
        })
        .clone()
}

pub(super) fn nvrtc_for(config: &CudaConfig) -> Result<Arc<Nvrtc>, String> {
    match &config.nvrtc {
        Some(path) => open_nvrtc(Some(path)).map(Arc::new),
        None => default_nvrtc(),
    }
}

// --------------------------------------------------------------- driver ----
