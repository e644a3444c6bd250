//! What the CLI tests share: running the `kcache` binary on a store
//! directory, reading its `--json`, and whether a C compiler runs here.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub fn kcache(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kcache"))
        .args(args)
        .env("KCACHE_DIR", dir)
        .env_remove("KCACHE_STORE")
        .env_remove("KCACHE_MAX_BYTES")
        .env("POCL_KERNEL_CACHE", "0")
        .output()
        .unwrap()
}

pub fn json(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn have_cc() -> bool {
    let ok = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let required =
        std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"));
    assert!(
        ok || !required,
        "cc is required here, and no C compiler runs"
    );
    if !ok {
        eprintln!("skipped: no C compiler");
    }
    ok
}

/// `kcache compile --json --backend cc` of `file` with the store `kind` at
/// `root`, with no store settings or log filter inherited from the caller.
pub fn compile_command(root: &Path, kind: &str, file: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kcache"));
    cmd.args([
        "compile",
        "--json",
        "--backend",
        "cc",
        "--store",
        kind,
        "--dir",
    ])
    .arg(root)
    .arg(file)
    .env_remove("KCACHE_STORE")
    .env_remove("KCACHE_MAX_BYTES")
    .env_remove("KCACHE_LOG");
    cmd
}
