//! The `kcache` command line: see `kcache --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
