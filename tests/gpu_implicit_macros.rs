//! The lists of names each GPU driver defines unasked
//! (`src/backend/gpu/implicit/*.txt`, written by `scripts/gpu-macros`)
//! against the installed drivers (review 2026-12-02, GPU F1, F2, F3): a
//! local spelled like a driver's macro is read as the macro, so a name
//! missing from a list can be renamed into a wrong hit.
//!
//! For each driver two checks: every name a `#define` of its own headers
//! defines is listed (a newer driver's header fails this until the list is
//! written again), and a probe kernel that asks `#ifdef` of every other
//! word of those headers compiles, so the driver defines none of them by
//! itself. The reserved namespace (`__x`, `_X`) is left out: kcache never
//! renames a name there. A driver that is missing skips with the reason,
//! unless `KCACHE_TEST_REQUIRE` names its backend.

mod backend_support;

use std::collections::BTreeSet;
use std::path::PathBuf;

use backend_support::{available, required};
use kcache::backend::{Backend, CompileJob, KernelSource};

const NVRTC: &str = include_str!("../src/backend/gpu/implicit/nvrtc.txt");
const POCL: &str = include_str!("../src/backend/gpu/implicit/pocl.txt");
const GLSLANG: &str = include_str!("../src/backend/gpu/implicit/glslang.txt");

/// Every name of a list (`NAME` or `NAME = WORDS` lines).
fn listed(list: &str) -> BTreeSet<String> {
    lines(list).map(|(n, _)| n.to_string()).collect()
}

/// A list's lines: each name, and whether it is an alias.
fn lines(list: &str) -> impl Iterator<Item = (&str, bool)> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('=') {
            Some((n, _)) => (n.trim(), true),
            None => (l, false),
        })
}

/// The list's aliases that `function_like` holds: each must be a macro.
fn misread_aliases(list: &str, function_like: &BTreeSet<String>) -> Vec<String> {
    lines(list)
        .filter(|(n, alias)| *alias && function_like.contains(*n))
        .map(|(n, _)| n.to_string())
        .collect()
}

/// The reserved namespace, as the renamer reads it (never renamed).
fn reserved(name: &str) -> bool {
    kcache::canon::rename::is_reserved(name.as_bytes())
}

/// The printable runs of `data` (what `strings` shows of a binary).
fn printable(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| !(b == b'\t' || (0x20..0x7f).contains(&b)))
        .filter(|r| r.len() >= 3)
        .collect()
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Every identifier of `text`, up to 120 bytes long.
fn words(text: &[u8], into: &mut BTreeSet<String>) {
    let mut i = 0;
    while i < text.len() {
        if ident_start(text[i]) && (i == 0 || !ident(text[i - 1])) {
            let end = text[i..]
                .iter()
                .position(|&b| !ident(b))
                .map_or(text.len(), |n| i + n);
            if end - i <= 120 {
                into.insert(String::from_utf8_lossy(&text[i..end]).into_owned());
            }
            i = end;
        } else {
            i += 1;
        }
    }
}

/// The names `#define` lines of `text` define, and those of them defined
/// function-like somewhere (a `(` right after the name).
fn defines(text: &[u8], into: &mut BTreeSet<String>, function_like: &mut BTreeSet<String>) {
    for line in text.split(|&b| b == b'\n') {
        let line = line.trim_ascii_start();
        let Some(rest) = line.strip_prefix(b"#") else {
            continue;
        };
        let Some(rest) = rest.trim_ascii_start().strip_prefix(b"define") else {
            continue;
        };
        let rest = rest.trim_ascii_start();
        let end = rest.iter().position(|&b| !ident(b)).unwrap_or(rest.len());
        if end > 0 && ident_start(rest[0]) {
            let name = String::from_utf8_lossy(&rest[..end]).into_owned();
            if rest.get(end) == Some(&b'(') {
                function_like.insert(name.clone());
            }
            into.insert(name);
        }
    }
}

/// The names `defined` has that `list` lacks, the reserved aside.
fn unlisted(defined: &BTreeSet<String>, list: &BTreeSet<String>) -> Vec<String> {
    defined
        .iter()
        .filter(|n| !reserved(n) && !list.contains(*n))
        .cloned()
        .collect()
}

/// A probe that fails to compile, naming them, if any of `names` is a
/// macro where it is compiled (`#error` directives in the language's
/// preprocessor), then `body`.
fn probe(names: &BTreeSet<String>, list: &BTreeSet<String>, head: &str, body: &str) -> String {
    let mut text = String::from(head);
    for n in names {
        // `k`, the probe's symbol, the Vulkan backend defines as `main`.
        if !reserved(n) && !list.contains(n) && n != "defined" && n != "k" {
            text.push_str(&format!("#ifdef {n}\n#error kcache-unlisted {n}\n#endif\n"));
        }
    }
    text.push_str(body);
    text
}

fn compile(backend: &impl Backend, symbol: &str, text: &str) -> Result<(), String> {
    let kernels = [KernelSource { symbol, text }];
    let job = CompileJob {
        kernels: &kernels,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh: true,
    };
    backend.compile(&job).map(drop).map_err(|e| e.to_string())
}

/// Checks that `backend` compiles `body` under a probe of `all`'s words
/// outside `list`, after checking the probe catches a word defined in it.
fn check_probe(
    backend: &impl Backend,
    all: &BTreeSet<String>,
    list: &BTreeSet<String>,
    head: &str,
    body: &str,
) {
    let mut planted = BTreeSet::new();
    planted.insert("kc_planted".to_string());
    let caught = compile(
        backend,
        "k",
        &probe(
            &planted,
            list,
            &format!("{head}#define kc_planted 1\n"),
            body,
        ),
    );
    assert!(
        caught.as_ref().is_err_and(|e| e.contains("kc_planted")),
        "the probe must catch a defined word: {caught:?}"
    );
    if let Err(e) = compile(backend, "k", &probe(all, list, head, body)) {
        panic!("the driver defines a word its list lacks (run scripts/gpu-macros): {e}");
    }
}

#[test]
fn nvrtcs_built_in_headers_define_only_listed_names() {
    use kcache::backend::cuda::{Cuda, CudaConfig, CudaTarget};
    let config = CudaConfig {
        target: CudaTarget::Ptx,
        compile_only: true,
        ..CudaConfig::default()
    };
    let Some(cuda) = available("cuda", Cuda::new(&config)) else {
        return;
    };
    let dir = cuda.nvrtc_path().parent().unwrap().to_path_buf();
    let builtins: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc-builtins.so"))
        })
        .collect();
    assert!(
        !builtins.is_empty(),
        "no libnvrtc-builtins.so in {}",
        dir.display()
    );
    let (mut defined, mut all, mut function_like) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for b in &builtins {
        let data = std::fs::read(b).unwrap();
        for run in printable(&data) {
            defines(run, &mut defined, &mut function_like);
            words(run, &mut all);
        }
    }
    let list = listed(NVRTC);
    assert!(defined.len() > 100, "{} defines found", defined.len());
    assert_eq!(unlisted(&defined, &list), Vec::<String>::new());
    assert_eq!(misread_aliases(NVRTC, &function_like), Vec::<String>::new());
    let body = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
    check_probe(&cuda, &all, &list, "", body);
}

/// PoCL's kernel headers: where Debian's package puts them.
fn pocl_include() -> Option<PathBuf> {
    ["/usr/share/pocl/include", "/usr/local/share/pocl/include"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("_kernel.h").is_file())
}

#[test]
fn pocls_headers_define_only_listed_names() {
    use kcache::backend::opencl::{OpenCl, OpenClConfig};
    let Some(cl) = available("opencl", OpenCl::new(&OpenClConfig::default())) else {
        return;
    };
    let Some(include) = pocl_include() else {
        assert!(!required("opencl"), "PoCL's include directory not found");
        eprintln!("skipped: PoCL's include directory not found");
        return;
    };
    let (mut defined, mut all, mut function_like) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for e in std::fs::read_dir(&include).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "h") {
            let data = std::fs::read(&p).unwrap();
            defines(&data, &mut defined, &mut function_like);
            words(&data, &mut all);
        }
    }
    let list = listed(POCL);
    assert!(defined.len() > 1000, "{} defines found", defined.len());
    assert_eq!(unlisted(&defined, &list), Vec::<String>::new());
    assert_eq!(misread_aliases(POCL, &function_like), Vec::<String>::new());
    let body = "__kernel void k(__global float* x) { x[0] = 1.0f; }\n";
    check_probe(&cl, &all, &list, "", body);
}

#[test]
fn glslang_defines_only_listed_names() {
    use kcache::backend::vulkan::{Vulkan, VulkanConfig};
    let Some(vk) = available("vulkan", Vulkan::new(&VulkanConfig::default())) else {
        return;
    };
    let exe = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("glslangValidator"))
        .find(|p| p.is_file())
        .expect("the Vulkan backend found glslangValidator on PATH");
    let data = std::fs::read(std::fs::canonicalize(&exe).unwrap()).unwrap();
    let mut all = BTreeSet::new();
    for run in printable(&data) {
        words(run, &mut all);
    }
    let extensions: BTreeSet<String> = all
        .iter()
        .filter(|w| w.starts_with("GL_"))
        .cloned()
        .collect();
    let list = listed(GLSLANG);
    assert!(
        extensions.len() > 50,
        "{} extension names found",
        extensions.len()
    );
    assert_eq!(unlisted(&extensions, &list), Vec::<String>::new());
    let body = "layout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { float x[]; };\nvoid k() { x[0] = 1.0; }\n";
    check_probe(&vk, &all, &list, "#version 450\n", body);
}
