//! `kcache compile`: resolve one batch of kernel files through the cache.

use super::backend::{dispatch, BackendFlags, Choice, Job};
use super::cache::StoreFlags;
use super::canon::RenameFlags;
use super::{write_stdout, Failure};
use clap::{ArgAction, Args};
use kcache::backend::Backend;
use kcache::canon::bind::neutral;
use kcache::canon::{CanonOptions, Derivation};
use kcache::resolve::Kernel;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// A compiler option for every file (repeatable), e.g. --option=-O3.
    #[arg(long = "option", value_name = "FLAG", action = ArgAction::Append, allow_hyphen_values = true)]
    options: Vec<String>,
    /// A JSON list of {"file", "kernel_name", "bound", "keep", "free",
    /// "derivations", "options", "infer"}
    /// (paths relative to the manifest) instead of FILE arguments.
    #[arg(long, value_name = "M.json", conflicts_with = "files")]
    manifest: Option<PathBuf>,
    /// Print one JSON object: kernels (file, symbol, outcome: compiled, reused,
    /// stored, shared (from the Redis tier) or uncacheable), kernels_compiled,
    /// programs_compiled, kernels_reused, kernels_stored, kernels_shared (of
    /// kernels_stored, those from the Redis tier), kernels_uncacheable, kernels_waited
    /// (kernels another process sharing the store compiled while this one waited).
    #[arg(long)]
    json: bool,
    /// Replace each kernel's function name by a neutral symbol derived from
    /// the rest of its canonical text, in the text compiled too, so kernels
    /// differing only in their function name compile once; the answer names
    /// the neutral symbol. A name that also stands outside code (a directive,
    /// string, comment, attribute) stays.
    #[arg(long)]
    neutral_name: bool,
    /// Kernel files, one kernel each; a kernel's name is --kernel-name, else
    /// the one function the file defines, else the file's stem.
    #[arg(value_name = "FILE", required_unless_present = "manifest")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    rename: RenameFlags,
    #[command(flatten)]
    backend: BackendFlags,
    /// cc: where quoted includes resolve and the compiler runs [default: the
    /// manifest's directory, or the one directory every FILE is in, else the
    /// current one].
    #[arg(long, value_name = "DIR", help_heading = "Backend")]
    source_dir: Option<PathBuf>,
    #[command(flatten)]
    store: StoreFlags,
}

impl CompileArgs {
    /// `FILE... [--json]` (the words after `compile`) as clap parses them,
    /// without building clap's tree: the command line a build runs for
    /// every kernel. `None` for any other (a flag, a word starting with
    /// `-`, no file, `--json` twice): clap parses those. `mod.rs`'s tests
    /// hold the two to the same answer.
    pub fn plain(words: &[std::ffi::OsString]) -> Option<CompileArgs> {
        let mut json = false;
        let mut files = Vec::new();
        for w in words {
            if w == "--json" && !json {
                json = true;
            } else if w.as_encoded_bytes().first().is_some_and(|b| *b != b'-') {
                files.push(PathBuf::from(w));
            } else {
                return None;
            }
        }
        (!files.is_empty()).then(|| CompileArgs {
            options: Vec::new(),
            manifest: None,
            json,
            neutral_name: false,
            files,
            rename: RenameFlags::default(),
            backend: BackendFlags::default(),
            source_dir: None,
            store: StoreFlags::default(),
        })
    }
}

/// One entry of a manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestEntry {
    file: PathBuf,
    kernel_name: Option<String>,
    #[serde(default)]
    bound: Vec<String>,
    #[serde(default)]
    keep: Vec<String>,
    #[serde(default)]
    free: Vec<String>,
    #[serde(default)]
    derivations: Vec<String>,
    #[serde(default)]
    options: Vec<String>,
    /// Rename every name the kernel declares that the binder verifies
    /// (`--infer` for this entry; the flag's value when absent).
    infer: Option<bool>,
    /// Compile under a neutral symbol (`--neutral-name` for this entry; the
    /// flag's value when absent).
    neutral_name: Option<bool>,
}

/// A kernel to compile, and the file it came from (as the user named it).
struct Input {
    file: PathBuf,
    kernel: Kernel,
}

fn read_kernel(
    path: &Path,
    canon: CanonOptions,
    options: Vec<String>,
    neutral: bool,
) -> Result<Input, Failure> {
    let mut text = super::input::read_text(path)?;
    let stem = || {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut symbol = canon
        .kernel_name
        .clone()
        .or_else(|| neutral::defined_function(text.as_bytes()))
        .unwrap_or_else(stem);
    if neutral {
        if let Some((s, t)) = neutral::neutral_symbol(text.as_bytes(), &symbol, &canon) {
            // The replacement swaps one identifier for another: still UTF-8.
            text = String::from_utf8(t).expect("an identifier replaced in UTF-8 text");
            symbol = s;
        }
    }
    let canon = CanonOptions {
        kernel_name: Some(symbol.clone()),
        ..canon
    };
    Ok(Input {
        file: path.to_path_buf(),
        kernel: Kernel::new(symbol, text).canon(canon).options(options),
    })
}

fn inputs(args: &CompileArgs) -> Result<Vec<Input>, Failure> {
    let Some(manifest) = &args.manifest else {
        return args
            .files
            .iter()
            .map(|f| {
                read_kernel(
                    f,
                    args.rename.options(),
                    args.options.clone(),
                    args.neutral_name,
                )
            })
            .collect();
    };
    let text = super::input::read_file(manifest)?;
    let entries: Vec<ManifestEntry> = serde_json::from_slice(&text)
        .map_err(|e| Failure(format!("{}: {e}", manifest.display())))?;
    let base = manifest.parent().unwrap_or(Path::new("."));
    entries
        .into_iter()
        .map(|e| {
            let derivations = e
                .derivations
                .iter()
                .map(|d| {
                    Derivation::parse(d).ok_or_else(|| {
                        Failure(format!(
                            "{}: derivation `{d}` is not PREFIX*SUFFIX",
                            manifest.display()
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
            let canon = CanonOptions {
                kernel_name: e.kernel_name,
                bound: e.bound,
                keep: e.keep,
                free: e.free,
                derivations,
                infer: e.infer.unwrap_or(args.rename.infer),
                ..CanonOptions::default()
            };
            let neutral = e.neutral_name.unwrap_or(args.neutral_name);
            let mut input = read_kernel(&base.join(&e.file), canon, e.options, neutral)?;
            input.file = e.file;
            Ok(input)
        })
        .collect()
}

pub fn compile(args: CompileArgs) -> Result<ExitCode, Failure> {
    let mut flags = args.backend.clone();
    flags.source_dir = args.source_dir.clone().or_else(|| common_dir(&args));
    flags.compilers_dir = args.store.compilers_dir();
    // Inputs first: a bad file is reported whatever the backend.
    let inputs = inputs(&args)?;
    if flags.backend == Choice::Cuda {
        let options = inputs.iter().flat_map(|i| &i.kernel.options);
        if let Some(o) = options.into_iter().find(|o| sets_cuda_arch(o)) {
            super::usage_error(
                "compile",
                format!("`--option={o}`: the CUDA architecture is not an option; pass --arch (e.g. --arch sm_80)"),
            );
        }
    }
    dispatch(&flags, CompileJob(args, inputs))
}

/// Whether a CUDA option sets the architecture (tinygrad passes
/// `--gpu-architecture=sm_80`), which the backend sets from `--arch`.
fn sets_cuda_arch(option: &str) -> bool {
    ["-arch", "--gpu-architecture"]
        .iter()
        .any(|flag| option == *flag || option.starts_with(&format!("{flag}=")))
}

/// The directory quoted includes resolve against by default: the manifest's,
/// or the one directory every kernel file is in (else the current one).
fn common_dir(args: &CompileArgs) -> Option<PathBuf> {
    let dir = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(m) = &args.manifest {
        return Some(dir(m));
    }
    let mut dirs = args.files.iter().map(|f| dir(f));
    let first = dirs.next()?;
    dirs.all(|d| d == first).then_some(first)
}

struct CompileJob(CompileArgs, Vec<Input>);

impl Job for CompileJob {
    fn run<B: Backend + 'static>(self, backend: Arc<B>) -> Result<ExitCode, Failure> {
        let CompileJob(args, inputs) = self;
        let store = args.store.open(None)?;
        // Outcomes are all it prints: a stored program is not loaded.
        let backend = Arc::new(super::unloaded::reporting(backend));
        let resolver = args.backend.resolver(backend).with_store(store);
        let batch: Vec<Kernel> = inputs.iter().map(|i| i.kernel.clone()).collect();
        let spinner = super::progress::Spinner::after_a_second(
            format!("resolving {}", plural(batch.len() as u64, "kernel")),
            !args.json,
        );
        let counted = resolver.resolve_counted(&batch);
        drop(spinner);
        let counted = counted.map_err(|e| super::resolve_failure(&e))?;
        let (resolved, census) = (counted.answers, counted.census);
        let out = if args.json {
            let kernels: Vec<serde_json::Value> = inputs
                .iter()
                .zip(&resolved)
                .map(|(i, r)| {
                    serde_json::json!({
                        "file": i.file.display().to_string(),
                        "symbol": &*r.symbol,
                        "outcome": r.outcome,
                    })
                })
                .collect();
            let v = serde_json::json!({
                "kernels": kernels,
                "kernels_compiled": census.kernels_compiled,
                "programs_compiled": census.programs_compiled,
                "kernels_reused": census.kernels_reused,
                "kernels_stored": census.kernels_stored,
                "kernels_shared": census.kernels_shared,
                "kernels_uncacheable": census.kernels_uncacheable,
                "kernels_waited": census.kernels_waited,
            });
            format!("{v}\n")
        } else {
            let mut s = String::new();
            for (i, r) in inputs.iter().zip(&resolved) {
                s.push_str(&format!(
                    "{:<9} {}  ({})\n",
                    serde_json::to_value(r.outcome)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    i.file.display(),
                    r.symbol
                ));
            }
            s.push_str(&format!(
                "{}: {} compiled into {}, {} reused, {} from the store\n",
                plural(resolved.len() as u64, "kernel"),
                census.kernels_compiled,
                plural(census.programs_compiled, "program"),
                census.kernels_reused,
                census.kernels_stored
            ));
            if census.kernels_shared > 0 {
                s.push_str(&format!(
                    "{} of them from the Redis tier (shared by another machine)\n",
                    plural(census.kernels_shared, "kernel")
                ));
            }
            if census.kernels_uncacheable > 0 {
                s.push_str(&format!(
                    "{} uncacheable: compiled every time, never stored\n",
                    plural(census.kernels_uncacheable, "kernel")
                ));
            }
            s
        };
        write_stdout(out.as_bytes())?;
        Ok(ExitCode::SUCCESS)
    }
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
