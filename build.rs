//! Generates the kernel declaration parser from `grammar/kernel.lalrpop`
//! into `OUT_DIR`, so no generated code is committed.

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .set_out_dir(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .emit_rerun_directives(true)
        .process()
        .expect("grammar/kernel.lalrpop generates");
}
