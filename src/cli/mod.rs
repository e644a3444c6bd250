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
mod logging;
mod progress;
mod tune;
mod unloaded;

/// Compile GPU/CPU kernels once per search: caches keyed on a canonical text
/// of each kernel, up to a renaming of the names it binds.
#[derive(Parser, Debug)]
#[command(name = "kcache", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// The one-line helps are named so that [`only`] gives its subcommand the
// same (a doc comment here would be the derive's alone).
#[derive(Subcommand, Debug)]
enum Command {
    #[command(about = about::TUNE, long_about = None)]
    Tune(tune::TuneArgs),
    #[command(about = about::COMPILE, long_about = None)]
    Compile(compile::CompileArgs),
    #[command(about = about::BACKENDS, long_about = None)]
    Backends(backends::BackendsArgs),
    #[command(about = about::CANON, long_about = None)]
    Canon(canon::CanonArgs),
    #[command(about = about::KEY, long_about = None)]
    Key(canon::KeyArgs),
    #[command(about = about::DIGEST, long_about = None)]
    Digest(canon::DigestArgs),
    #[command(about = about::CACHE, long_about = None)]
    Cache(cache::CacheArgs),
}

/// What `kcache help` says of each subcommand.
mod about {
    pub const TUNE: &str =
        "The main job: an autotuning search through the cache, with a table of what it reused";
    pub const COMPILE: &str = "Resolve kernel files through the cache as one batch";
    pub const BACKENDS: &str =
        "List the backends, their devices and versions, and why one is unavailable";
    pub const CANON: &str = "Print a kernel's canonical text (exactly, byte for byte)";
    pub const KEY: &str = "Print the per-device cache key of a kernel source";
    pub const DIGEST: &str = "Print the hex digest of length-prefixed parts";
    pub const CACHE: &str = "Look after the persistent program store: stats, ls, verify, prune, clear, zero, set-cap, export";
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
    let cli = parse(std::env::args_os().collect());
    logging::init();
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

/// Parses `args` as [`Cli::parse`] does, building clap's tree for the
/// named subcommand only when the command line parses: the whole tree
/// (every subcommand's flags, help and defaults) costs a short command more
/// than its own work. Anything else (help, version, a usage error, another
/// first word) goes to the whole tree, so what is printed is unchanged.
fn parse(args: Vec<std::ffi::OsString>) -> Cli {
    use clap::FromArgMatches;
    if args.get(1).is_some_and(|a| a == "compile") {
        if let Some(c) = compile::CompileArgs::plain(&args[2..]) {
            return Cli {
                command: Command::Compile(c),
            };
        }
    }
    if args.len() == 2 && (args[1] == "--version" || args[1] == "-V") {
        if let Err(e) = top().try_get_matches_from(&args) {
            if e.kind() == clap::error::ErrorKind::DisplayVersion {
                e.exit();
            }
        }
    }
    let one = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(only)
        .and_then(|cmd| cmd.try_get_matches_from(&args).ok())
        .and_then(|m| Cli::from_arg_matches(&m).ok());
    one.unwrap_or_else(|| Cli::parse_from(args))
}

/// The top-level command with the one subcommand `name`, as the derived
/// tree has it (`tests::one_subcommand_parses_as_the_whole_tree` holds the
/// two together); `None` for a name that is no subcommand.
fn only(name: &str) -> Option<clap::Command> {
    use clap::{Args, Command};
    let (sub, about) = match name {
        "tune" => (
            tune::TuneArgs::augment_args(Command::new("tune")),
            about::TUNE,
        ),
        "compile" => (
            compile::CompileArgs::augment_args(Command::new("compile")),
            about::COMPILE,
        ),
        "backends" => (
            backends::BackendsArgs::augment_args(Command::new("backends")),
            about::BACKENDS,
        ),
        "canon" => (
            canon::CanonArgs::augment_args(Command::new("canon")),
            about::CANON,
        ),
        "key" => (
            canon::KeyArgs::augment_args(Command::new("key")),
            about::KEY,
        ),
        "digest" => (
            canon::DigestArgs::augment_args(Command::new("digest")),
            about::DIGEST,
        ),
        "cache" => (
            cache::CacheArgs::augment_args(Command::new("cache")),
            about::CACHE,
        ),
        _ => return None,
    };
    let sub = sub.about(about).long_about(None);
    Some(top().subcommand_required(true).subcommand(sub))
}

/// The top-level command as far as `--version` needs it.
fn top() -> clap::Command {
    clap::Command::new("kcache").version(env!("CARGO_PKG_VERSION"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand's arguments, recursively, as clap built them.
    fn shape(cmd: &clap::Command, out: &mut Vec<String>) {
        let mut args: Vec<String> = cmd.get_arguments().map(|a| format!("{a:?}")).collect();
        args.sort();
        out.push(format!("{}: {}", cmd.get_name(), args.join("\n")));
        for sub in cmd.get_subcommands() {
            shape(sub, out);
        }
    }

    #[test]
    fn one_subcommand_is_built_as_the_whole_tree_builds_it() {
        let mut whole = Cli::command();
        whole.build();
        for sub in whole.get_subcommands() {
            let name = sub.get_name();
            if name == "help" {
                assert!(only(name).is_none());
                continue;
            }
            let mut one = only(name).unwrap_or_else(|| panic!("`{name}` is not in `only`"));
            one.build();
            let built = one.find_subcommand(name).expect("the one subcommand");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            shape(sub, &mut a);
            shape(built, &mut b);
            assert_eq!(a, b, "`{name}`");
            let (mut w, mut o) = (sub.clone(), built.clone());
            assert_eq!(
                w.render_long_help().to_string(),
                o.render_long_help().to_string(),
                "`{name}`"
            );
        }
    }

    #[test]
    fn the_version_is_the_whole_trees() {
        assert_eq!(top().render_version(), Cli::command().render_version());
        for flag in ["--version", "-V"] {
            let e = top().try_get_matches_from(["kcache", flag]).unwrap_err();
            let w = Cli::try_parse_from(["kcache", flag]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
            assert_eq!(e.to_string(), w.to_string());
        }
    }

    #[test]
    fn one_subcommand_parses_as_the_whole_tree() {
        let lines = [
            "kcache compile k.c",
            "kcache compile --json --option=-O3 --option -g a.c b.c --store file --dir /d",
            "kcache compile --manifest m.json --neutral-name --infer --backend opencl --device 1",
            "kcache compile --split 4 --min-kernels 2 --threads os --source-dir s k.c",
            "kcache tune --candidates 3 --json",
            "kcache backends --json",
            "kcache canon k.c --bound n --keep x",
            "kcache key k.c --device-id d --name k --option O=2",
            "kcache digest a b c",
            "kcache cache stats --json",
            "kcache cache --dir /d ls",
            "kcache cache prune --max-bytes 1G --store sqlite",
            "kcache cache set-cap none",
            "kcache cache export abc -",
        ];
        for line in lines {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            let whole = Cli::try_parse_from(&args);
            let one = only(line.split(' ').nth(1).unwrap())
                .unwrap()
                .try_get_matches_from(&args)
                .map(|m| {
                    use clap::FromArgMatches;
                    Cli::from_arg_matches(&m).unwrap()
                });
            match (whole, one) {
                (Ok(w), Ok(o)) => assert_eq!(format!("{w:?}"), format!("{o:?}"), "{line}"),
                (w, o) => panic!("{line}: whole {:?}, one {:?}", w.err(), o.err()),
            }
        }
    }

    #[test]
    fn a_plain_compile_parses_as_clap_does() {
        use std::os::unix::ffi::OsStringExt;
        let words =
            |line: &str| -> Vec<std::ffi::OsString> { line.split(' ').map(Into::into).collect() };
        let mut lines: Vec<Vec<std::ffi::OsString>> = [
            "kcache compile k.c",
            "kcache compile a.c b.c dir/c.cl",
            "kcache compile --json k.c",
            "kcache compile k.c --json",
            "kcache compile a.c --json b.c",
            "kcache compile help",
            "kcache compile compile",
            "kcache compile ké.c",
        ]
        .iter()
        .map(|l| words(l))
        .collect();
        let mut odd = words("kcache compile");
        odd.push(std::ffi::OsString::from_vec(b"\xffk.c".to_vec()));
        lines.push(odd);
        for args in lines {
            let plain = compile::CompileArgs::plain(&args[2..]).expect("plain");
            let clap = Cli::try_parse_from(&args).expect("clap parses it");
            let plain = Cli {
                command: Command::Compile(plain),
            };
            assert_eq!(format!("{plain:?}"), format!("{clap:?}"), "{args:?}");
            assert_eq!(format!("{:?}", parse(args.clone())), format!("{clap:?}"));
        }
        for line in [
            "kcache compile",
            "kcache compile --json",
            "kcache compile --json --json k.c",
            "kcache compile -",
            "kcache compile -- k.c",
            "kcache compile --neutral-name k.c",
            "kcache compile k.c --store none",
            "kcache compile -h",
            "kcache compile --help k.c",
        ] {
            assert!(
                compile::CompileArgs::plain(&words(line)[2..]).is_none(),
                "{line}"
            );
        }
        let empty: Vec<std::ffi::OsString> = vec!["kcache".into(), "compile".into(), "".into()];
        assert!(compile::CompileArgs::plain(&empty[2..]).is_none());
    }

    #[test]
    fn what_one_subcommand_refuses_the_whole_tree_refuses() {
        for line in [
            "kcache compile --help",
            "kcache compile --version",
            "kcache compile",
            "kcache compile --no-such-flag k.c",
            "kcache cache",
            "kcache cache stats --help",
            "kcache tune --candidates 2000000",
        ] {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            let one = only(line.split(' ').nth(1).unwrap())
                .unwrap()
                .try_get_matches_from(&args);
            assert!(one.is_err(), "{line}");
            // So the whole tree's error (or help) is what is printed.
            assert!(Cli::try_parse_from(&args).is_err(), "{line}");
        }
    }
}
