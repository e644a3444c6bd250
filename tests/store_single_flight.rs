//! Single-flight across processes: `kcache compile` processes sharing one
//! store compile each distinct kernel once; a holder killed mid-compile, or
//! one that hangs past the wait, never blocks the others; a store that cannot
//! lease still compiles. Both persistent stores.
//!
//! Every interleaving is forced, never hoped for: the compiler is a wrapper
//! script whose first compile says so on a FIFO and then blocks on another,
//! and a waiting process is known to wait by its debug log line.

mod cli_support;
use cli_support::have_cc;
mod gated_cc;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};

use gated_cc::{Gated, Running};

const KINDS: [&str; 2] = ["file", "sqlite"];
const KERNELS: usize = 8;

/// The gated compiler's scratch directory, with this file's kernels.
struct Bench(Gated);

impl std::ops::Deref for Bench {
    type Target = Gated;
    fn deref(&self) -> &Gated {
        &self.0
    }
}

impl Bench {
    /// With `block`, the first compile (only) blocks on the gate.
    fn new(block: bool) -> Bench {
        Bench(Gated::new(KERNELS, "1.0f", block))
    }

    /// `kcache compile --json` of every kernel on the `kind` store, logging
    /// at debug level (for the waiting line) with `wait` as the lease bound.
    fn spawn(&self, kind: &str, wait: &str) -> Child {
        Command::new(env!("CARGO_BIN_EXE_kcache"))
            .args([
                "compile",
                "--json",
                "--backend",
                "cc",
                "--store",
                kind,
                "--dir",
            ])
            .arg(self.path("store"))
            .args(&self.kernels)
            .env("CC", self.path("cc.sh"))
            .env("KCACHE_LOG", "kcache=debug")
            .env("KCACHE_LEASE_WAIT", wait)
            .env_remove("KCACHE_STORE")
            .env_remove("KCACHE_MAX_BYTES")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `kcache cache stats --json` of the `kind` store.
    fn stats(&self, kind: &str) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_kcache"))
            .args(["cache", "stats", "--json", "--store", kind, "--dir"])
            .arg(self.path("store"))
            .env_remove("KCACHE_STORE")
            .env_remove("KCACHE_MAX_BYTES")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

trait Finish {
    fn finish(self) -> serde_json::Value;
}

impl Finish for Running {
    /// Its JSON report, after checking it exited 0 with every kernel answered.
    fn finish(self) -> serde_json::Value {
        let (v, _) = self.report(KERNELS);
        for k in v["kernels"].as_array().unwrap() {
            let o = k["outcome"].as_str().unwrap();
            assert!(matches!(o, "compiled" | "stored"), "{k}");
        }
        v
    }
}

fn compiled(v: &serde_json::Value) -> u64 {
    v["kernels_compiled"].as_u64().unwrap()
}

#[test]
fn six_processes_on_one_store_compile_each_distinct_kernel_once() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        let b = Bench::new(true);
        let holder = Running::new(b.spawn(kind, "600"), false);
        b.await_started();
        // Five more, each known to be waiting on the holder's lease.
        let waiters: Vec<Running> = (0..5)
            .map(|_| Running::new(b.spawn(kind, "600"), true))
            .collect();
        b.open_gate();
        let mut total = compiled(&holder.finish());
        assert_eq!(
            total, KERNELS as u64,
            "{kind}: the holder compiled the batch"
        );
        for w in waiters {
            let v = w.finish();
            assert_eq!(
                v["kernels_stored"].as_u64(),
                Some(KERNELS as u64),
                "{kind}: {v}"
            );
            total += compiled(&v);
        }
        assert_eq!(total, KERNELS as u64, "{kind}: compiles by all six");
        assert_eq!(b.compiles(), 1, "{kind}: compiler runs by all six");
        // Per kernel: the holder's misses; each waiter's kernels found after
        // the wait are hits only, not a miss first.
        let st = b.stats(kind);
        assert_eq!(
            (st["hits"].as_u64(), st["misses"].as_u64()),
            (Some(5 * KERNELS as u64), Some(KERNELS as u64)),
            "{kind}: {st}"
        );
    }
}

#[test]
fn a_holder_killed_mid_compile_leaves_its_kernels_to_the_next_process() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        let b = Bench::new(true);
        let mut holder = Running::new(b.spawn(kind, "600"), false);
        b.await_started();
        let waiter = Running::new(b.spawn(kind, "600"), true);
        holder.child.kill().unwrap();
        holder.child.wait().unwrap();
        // The wait bound is ten minutes: only the lease dying with its
        // holder lets the waiter go on now.
        let v = waiter.finish();
        assert_eq!(compiled(&v), KERNELS as u64, "{kind}: {v}");
        // Lets the killed holder's orphaned compiler finish, closing the
        // holder's stderr.
        b.open_gate();
        holder.stderr.join().unwrap();
        assert_eq!(b.compiles(), 2, "{kind}");
    }
}

#[test]
fn a_holder_that_hangs_past_the_wait_does_not_block_the_others() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        let b = Bench::new(true);
        let holder = Running::new(b.spawn(kind, "600"), false);
        b.await_started();
        let waiter = Running::new(b.spawn(kind, "0.2"), true);
        let v = waiter.finish();
        assert_eq!(
            compiled(&v),
            KERNELS as u64,
            "{kind}: compiled after the wait"
        );
        b.open_gate();
        holder.finish();
        assert_eq!(b.compiles(), 2, "{kind}");
    }
}

#[test]
fn a_store_that_cannot_lease_still_compiles_and_stores() {
    if !have_cc() {
        return;
    }
    for kind in KINDS {
        let b = Bench::new(false);
        // Where the lock files would go is a regular file: no lease can be
        // taken, and every other store operation still works.
        let v1 = b.path("store").join("v1");
        fs::create_dir_all(&v1).unwrap();
        fs::set_permissions(b.path("store"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(&v1, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(v1.join("leases"), b"").unwrap();
        let first = Running::new(b.spawn(kind, "600"), false).finish();
        assert_eq!(compiled(&first), KERNELS as u64, "{kind}: {first}");
        let second = Running::new(b.spawn(kind, "600"), false).finish();
        assert_eq!(
            second["kernels_stored"].as_u64(),
            Some(KERNELS as u64),
            "{kind}"
        );
        assert_eq!(b.compiles(), 1, "{kind}");
    }
}
