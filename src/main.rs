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

// The three C math functions the binary calls (indicatif's rate estimate,
// `kcache tune`'s reference softmax, SQLite's FTS5 rank), defined here in
// pure Rust so that `--as-needed` drops `libm.so.6`: mapping and relocating
// it cost every short command about 0.07 ms here. GNU ld would export them
// (libm.so.6 on the link line defines them too), so a kernel the CLI loads
// would bind its `exp` to these; `build.rs` links the binary with a version
// script that exports nothing, so a library loaded later binds its own
// libm's (`tests/cli_warm_hit.rs` checks the loader's bindings).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod math {
    #[unsafe(no_mangle)]
    extern "C" fn exp(x: f64) -> f64 {
        libm::exp(x)
    }

    #[unsafe(no_mangle)]
    extern "C" fn log(x: f64) -> f64 {
        libm::log(x)
    }

    #[unsafe(no_mangle)]
    extern "C" fn pow(x: f64, y: f64) -> f64 {
        libm::pow(x, y)
    }

    #[cfg(test)]
    mod tests {
        // These calls bind the definitions above, as every caller in the
        // binary does: each must be the function its name says.
        #[test]
        fn the_math_functions_are_the_ones_named() {
            let close = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs();
            assert!(close(
                std::hint::black_box(1.0f64).exp(),
                std::f64::consts::E
            ));
            assert!(close(std::hint::black_box(std::f64::consts::E).ln(), 1.0));
            assert!(close(std::hint::black_box(2.0f64).powf(10.0), 1024.0));
            assert!(close(
                std::hint::black_box(10.0f64).powf(-0.5),
                0.31622776601683794
            ));
        }
    }
}
