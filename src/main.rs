//! The `kcache` command line: see `kcache --help`.
//!
//! The C `main` is the entry point, not Rust's: std's runtime set-up
//! (reading `/proc/self/maps` to place the main thread's stack guard, the
//! stack-overflow signal handler, ignoring `SIGPIPE`, which the CLI undoes
//! anyway) costs a short command more than the rest of its start-up, and
//! on Linux std still captures the arguments and environment without it.
//! A stack overflow then dies of `SIGSEGV` without std's message.
// The test harness brings its own `main`, so the unit tests of `cli` keep it.
#![cfg_attr(not(test), no_main)]

mod cli;

// libgcc's unwinder linked in (`build.rs` says when it is there), so the
// loader need not map `libgcc_s.so.1` and run its constructor, which probes
// the CPU (`cpuid`, slow under a hypervisor) for every short command. std
// asks for `-lgcc_s` after this, which `--as-needed` then drops. Panics
// still unwind (`catch_unwind` guards the GPU drivers' calls); a library
// loaded later that needs `libgcc_s` loads its own copy, as it would in a
// program linked with `-static-libgcc`.
#[cfg(kcache_static_libgcc)]
#[link(name = "gcc_eh", kind = "static")]
unsafe extern "C" {}

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    let code = cli::main();
    // `ExitCode` has no accessor for its value; the CLI's are u8 codes.
    (0..=u8::MAX)
        .find(|&c| std::process::ExitCode::from(c) == code)
        .map_or(1, std::ffi::c_int::from)
}

// Under test the harness's `main` runs; this one keeps the CLI reachable, as
// an ordinary binary's `main` does.
#[cfg(test)]
fn main() -> std::process::ExitCode {
    cli::main()
}
