//! Argument parsing and output. Exit codes: 0 success, 1 failure (one line on
//! stderr), 2 usage error.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod backend;
mod backends;
mod cache;
mod canon;
mod compile;
mod input;
mod progress;
mod tune;
mod unloaded;

/// Compile GPU/CPU kernels once per search: caches keyed on a canonical text
/// of each kernel, up to a renaming of the names it binds.
#[derive(Parser)]
#[command(name = "kcache", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The main job: an autotuning search through the cache, with a table of what it reused.
    Tune(tune::TuneArgs),
    /// Resolve kernel files through the cache as one batch.
    Compile(compile::CompileArgs),
    /// List the backends, their devices and versions, and why one is unavailable.
    Backends(backends::BackendsArgs),
    /// Print a kernel's canonical text (exactly, byte for byte).
    Canon(canon::CanonArgs),
    /// Print the per-device cache key of a kernel source.
    Key(canon::KeyArgs),
    /// Print the hex digest of length-prefixed parts.
    Digest(canon::DigestArgs),
    /// Look after the persistent program store: stats, ls, verify, prune, clear, zero, set-cap, export.
    Cache(cache::CacheArgs),
}

/// A failure to report on one line and exit 1.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(error_chain(&e))
    }
}

/// An error and its sources, joined by `: `.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        // Many messages already quote their source; say each thing once.
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

/// A resolve failure for people: a compile failure names its kernels and
/// the backend, then gives the compiler's log on the lines below.
pub fn resolve_failure(e: &kcache::resolve::ResolveError) -> Failure {
    use kcache::backend::BackendError;
    use kcache::resolve::ResolveError;
    let ResolveError::Compile {
        kernels, source, ..
    } = e
    else {
        return Failure(error_chain(e));
    };
    let names: Vec<String> = kernels.iter().map(|k| format!("`{k}`")).collect();
    let names = names.join(", ");
    if let BackendError::Compile { backend, log, .. } = source {
        let log = log.trim_end();
        let sep = if log.is_empty() { "" } else { ":\n" };
        return Failure(format!("compile of {names} failed ({backend}){sep}{log}"));
    }
    Failure(format!(
        "compile of {names} failed: {}",
        error_chain(source)
    ))
}

/// Exits 2 with clap's usage error `message` for `kcache SUBCOMMAND`.
pub fn usage_error(subcommand: &str, message: impl std::fmt::Display) -> ! {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    let mut cmd = cli
        .find_subcommand(subcommand)
        .cloned()
        .unwrap_or_else(Cli::command);
    cmd.error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        Command::Tune(args) => tune::tune_command(args),
        Command::Compile(args) => compile::compile(args),
        Command::Backends(args) => backends::backends(args),
        Command::Canon(args) => canon::canon(args),
        Command::Key(args) => canon::key(args),
        Command::Digest(args) => canon::digest(args),
        Command::Cache(args) => cache::cache(args),
    };
    match result {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprintln!("kcache: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Dies of SIGPIPE like other Unix filters when a reader goes away early
/// (`kcache canon big.c | head`), instead of failing the write.
fn restore_sigpipe() {
    // SAFETY: resetting a signal disposition to its default before any thread
    // starts has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Logs to stderr, filtered by `KCACHE_LOG` (default: warnings); in colour
/// only on a terminal, and never when `NO_COLOR` is set.
fn init_logging() {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    // Without KCACHE_LOG a level is the whole filter: no directive parsing
    // or per-callsite filter state on every start.
    let _ = match std::env::var_os("KCACHE_LOG") {
        None => builder.with_max_level(tracing::Level::WARN).try_init(),
        Some(_) => builder
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("KCACHE_LOG")
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .try_init(),
    };
}

/// Whether stderr may carry colour escapes: a terminal, and `NO_COLOR`
/// unset or empty (<https://no-color.org>).
pub fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Reads FILE, or standard input when it is absent or `-` (see
/// [`input::read_file`] for the limits).
pub fn read_input(file: &Option<PathBuf>) -> Result<Vec<u8>, Failure> {
    match file {
        Some(p) if p.as_os_str() != "-" => input::read_file(p),
        _ => input::read_stdin(),
    }
}

/// Writes `bytes` to standard output and flushes.
pub fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Failure(format!("cannot write standard output: {e}")))
}
