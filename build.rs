//! Generates the kernel declaration parser from `grammar/kernel.lalrpop`
//! into `OUT_DIR`, so no generated code is committed.

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .set_out_dir(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .emit_rerun_directives(true)
        .process()
        .expect("grammar/kernel.lalrpop generates");
    // The `kcache` binary is a short-lived process: linked at a fixed
    // address on Linux, its start-up skips ~9000 relocations, a third of
    // `kcache --version`. The library and test binaries stay
    // position-independent.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
