//! Generates the kernel declaration parser from `grammar/kernel.lalrpop`
//! into `OUT_DIR`, so no generated code is committed; finds whether the
//! linker has libgcc's static unwinder (see `src/main.rs`); links the
//! `kcache` binary as a position-dependent executable unless told not to,
//! so that it exports no symbol, and with a warm hit's code laid out
//! together.

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .set_out_dir(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .emit_rerun_directives(true)
        .process()
        .expect("grammar/kernel.lalrpop generates");
    static_libgcc();
    position_dependent_cli();
    cli_exports_nothing();
    hit_path_order();
}

/// Lays out the functions a warm `kcache compile` runs (`link/hit.order`,
/// written by `scripts/hot-order`) together at the start of the `kcache`
/// binary's text, so that a hit faults in a few contiguous pages of code
/// rather than pages spread over 6 MiB (149 -> 123 page faults a hit).
/// Only where the linker is rust-lld, which rustc links x86_64 Linux with
/// from 1.90 on unless told otherwise (GNU ld has no such option): not with
/// a linker or linker flavour chosen, nor with `KCACHE_NO_HOT_ORDER=1`. A
/// name the binary lacks (a stale file, another toolchain) orders nothing.
fn hit_path_order() {
    println!("cargo::rerun-if-changed=link/hit.order");
    println!("cargo::rerun-if-env-changed=KCACHE_NO_HOT_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || !matches!(var("KCACHE_NO_HOT_ORDER").as_str(), "" | "0")
        || std::env::var_os("RUSTC_LINKER").is_some()
        || var("CARGO_ENCODED_RUSTFLAGS").contains("link")
    {
        return;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let minor = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut parts = v.split_whitespace().nth(1)?.split('.');
            (parts.next()? == "1").then(|| parts.next()?.parse::<u32>().ok())?
        });
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hit.order");
    if minor.is_some_and(|m| m >= 90) && order.is_file() {
        println!(
            "cargo::rustc-link-arg-bin=kcache=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo::rustc-link-arg-bin=kcache=-Wl,--no-warn-symbol-ordering");
    }
}

/// Links the `kcache` binary with a version script that makes every symbol
/// it defines local (glibc Linux). The binary defines `exp`, `log` and `pow`
/// itself (`src/main.rs`), and GNU ld exports an executable's definition of
/// any symbol a shared library on the link line also defines (here
/// `libm.so.6`, even when `--as-needed` then drops it). Exported, they came
/// first in the loader's search: a kernel the C backend compiled and the CLI
/// then loaded bound its `exp@GLIBC_2.29` to kcache's own, so it computed
/// with other code than the libm it was linked against. Nothing is meant to
/// bind to the executable, so nothing is exported.
fn cli_exports_nothing() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let glibc_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !glibc_linux {
        return;
    }
    let script = std::path::Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("kcache-exports-nothing.ver");
    std::fs::write(&script, "{ local: *; };\n").expect("OUT_DIR is writable");
    println!(
        "cargo::rustc-link-arg-bin=kcache=-Wl,--version-script={}",
        script.display()
    );
}

/// Links the `kcache` binary with `-no-pie` on glibc Linux (the library,
/// the Python extension and the tests are untouched): a PIE `kcache` carries
/// about 18,000 relative relocations, which the loader applies at every
/// start, faulting in and copying the pages they land on. That was a third
/// of a millisecond of each whole-process hit here (`--version` 0.99 → 0.70
/// ms, a warm `kcache compile k.c` 1.57 → 1.31 ms, hyperfine medians). The
/// price is that the executable's own code and data load at a fixed address
/// (shared libraries and the stack are still randomized). A build that
/// wants a PIE sets `KCACHE_PIE=1` (`KCACHE_PIE=1 cargo install ...`).
fn position_dependent_cli() {
    println!("cargo::rerun-if-env-changed=KCACHE_PIE");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let glibc_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let wants_pie = !matches!(var("KCACHE_PIE").as_str(), "" | "0");
    if glibc_linux && !wants_pie {
        println!("cargo::rustc-link-arg-bin=kcache=-no-pie");
    }
}

/// Sets `kcache_static_libgcc` when the target is glibc Linux without
/// `crt-static` and the linker finds `libgcc_eh.a`: the `kcache` binary then
/// links the unwinder statically instead of loading `libgcc_s.so.1`, whose
/// start-up (its CPU feature probe) costs every short command a tenth of a
/// millisecond. Anything else keeps the default link.
fn static_libgcc() {
    println!("cargo::rustc-check-cfg=cfg(kcache_static_libgcc)");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let glibc_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let crt_static = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    if !glibc_linux || crt_static {
        return;
    }
    let linker = std::env::var_os("RUSTC_LINKER").unwrap_or_else(|| "cc".into());
    let found = std::process::Command::new(linker)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|p| p.is_absolute() && p.is_file());
    if found {
        println!("cargo::rustc-cfg=kcache_static_libgcc");
    }
}
