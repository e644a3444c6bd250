//! Helpers shared by the backend test files (`gpu_backends.rs`,
//! `backend_conformance.rs`): which backends a machine requires, and running
//! one test of the current test binary in a fresh process.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::process::Command;

/// Whether `what` (a backend's name, or `<name>-launch`) is listed in
/// `KCACHE_TEST_REQUIRE` (comma-separated), which CI sets so that a missing
/// library fails instead of skipping.
pub fn required(what: &str) -> bool {
    std::env::var("KCACHE_TEST_REQUIRE")
        .is_ok_and(|list| list.split(',').any(|item| item.trim() == what))
}

/// Unwraps a backend, or says why it is skipped (`None`), or fails when the
/// backend is required.
pub fn available<B, E: std::fmt::Display>(what: &str, backend: Result<B, E>) -> Option<B> {
    match backend {
        Ok(backend) => Some(backend),
        Err(err) if required(what) => panic!("{what} is required here but unavailable: {err}"),
        Err(err) => {
            eprintln!("skipped: {err}");
            None
        }
    }
}

/// Runs the `#[ignore]`d test `name` of this test binary in a fresh process,
/// with `var` set to `value` in its environment, and fails with its output
/// unless it passed.
pub fn run_in_fresh_process(name: &str, var: &str, value: impl AsRef<OsStr>) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(exe)
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value)
        .output()
        .expect("spawn the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the fresh process failed:\n{text}"
    );
}
