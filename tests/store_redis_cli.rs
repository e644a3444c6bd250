//! The Redis tier through `kcache compile`: processes with separate cache
//! directories (separate machines, as far as kcache can tell) sharing one
//! server share their compiles, and compile each distinct kernel once; a
//! lease holder killed mid-compile blocks the others for one lease only; a
//! server down at start costs one warning and no failure.
//!
//! Interleavings are forced, never hoped for: the compiler is a wrapper
//! script whose first compile says so on a FIFO and then blocks on another,
//! and a waiting process is known to wait by its debug log line.

mod cli_support;
use cli_support::have_cc;
#[path = "store_redis_support/mod.rs"]
mod redis_support;

mod gated_cc;

use std::process::{Child, Command, Stdio};

use gated_cc::{Gated, Running};
use redis_support::{RedisCluster, RedisServer};

const KERNELS: usize = 6;

/// The gated compiler's scratch directory, and the Redis it shares.
struct Bench {
    gated: Gated,
    url: String,
    /// The variable `url` goes in: `KCACHE_REDIS_URL` or
    /// `KCACHE_REDIS_CLUSTER`.
    var: &'static str,
}

impl std::ops::Deref for Bench {
    type Target = Gated;
    fn deref(&self) -> &Gated {
        &self.gated
    }
}

impl Bench {
    /// With `block`, the first compile (only) blocks on the gate.
    fn new(url: String, block: bool) -> Bench {
        Bench {
            gated: Gated::new(KERNELS, "2.0f", block),
            url,
            var: "KCACHE_REDIS_URL",
        }
    }

    /// A bench on the cluster `seeds` names, given in `var`.
    fn cluster(seeds: String, var: &'static str, block: bool) -> Bench {
        Bench {
            var,
            ..Bench::new(seeds, block)
        }
    }

    fn command(&self, machine: usize, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kcache"));
        c.args(args)
            .env("KCACHE_DIR", self.path(&format!("machine{machine}")))
            .env_remove("KCACHE_REDIS_URL")
            .env_remove("KCACHE_REDIS_CLUSTER")
            .env(self.var, &self.url)
            // Generous: a loaded test machine must not trip the breaker.
            .env("KCACHE_REDIS_TIMEOUT_MS", "5000")
            .env("KCACHE_REDIS_CONNECT_TIMEOUT_MS", "5000")
            .env("CC", self.path("cc.sh"))
            .env_remove("KCACHE_STORE")
            .env_remove("KCACHE_MAX_BYTES")
            .env_remove("KCACHE_REDIS_SECRET")
            .env_remove("KCACHE_REDIS_SECRET_FILE");
        c
    }

    /// `kcache compile --json` of every kernel on its own cache directory.
    fn spawn(&self, machine: usize, lease_ms: &str) -> Child {
        self.command(machine, &["compile", "--json", "--backend", "cc"])
            .args(&self.kernels)
            .env("KCACHE_LOG", "kcache=debug")
            .env("KCACHE_LEASE_WAIT", "600")
            .env("KCACHE_REDIS_LEASE_MS", lease_ms)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `kcache cache stats --json`, on `machine`'s directory.
    fn stats(&self, machine: usize) -> serde_json::Value {
        let out = self
            .command(machine, &["cache", "stats", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

trait Finish {
    fn finish(self) -> (serde_json::Value, String);
}

impl Finish for Running {
    /// Its JSON report and stderr, after checking it exited 0 with every
    /// kernel answered.
    fn finish(self) -> (serde_json::Value, String) {
        self.report(KERNELS)
    }
}

fn count(v: &serde_json::Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {v}"))
}

fn outcomes(v: &serde_json::Value) -> Vec<String> {
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_second_machine_answers_shared_and_compiles_nothing() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    second_machine_shares(&Bench::new(server.url(), false));
}

fn second_machine_shares(b: &Bench) {
    let (first, _) = Running::new(b.spawn(0, "30000"), false).finish();
    assert_eq!(count(&first, "kernels_compiled"), KERNELS as u64, "{first}");
    let (second, _) = Running::new(b.spawn(1, "30000"), false).finish();
    assert_eq!(count(&second, "kernels_compiled"), 0, "{second}");
    assert_eq!(count(&second, "kernels_shared"), KERNELS as u64, "{second}");
    assert!(outcomes(&second).iter().all(|o| o == "shared"), "{second}");
    assert_eq!(b.compiles(), 1);
    // The remote hits were copied into the second machine's own store: a
    // third run there is local.
    let (third, _) = Running::new(b.spawn(1, "30000"), false).finish();
    assert!(outcomes(&third).iter().all(|o| o == "stored"), "{third}");
    // Remote reads are counted per entry: the second run read each kernel's
    // record and each program once; the third read nothing remote.
    let st = b.stats(1);
    let reads = KERNELS as u64 + count(&first, "programs_compiled");
    assert_eq!(st["remote"]["hits"].as_u64(), Some(reads), "{st}");
}

#[test]
fn six_machines_racing_compile_each_distinct_kernel_once() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    six_machines_race(&Bench::new(server.url(), true));
}

fn six_machines_race(b: &Bench) {
    let holder = Running::new(b.spawn(0, "30000"), false);
    b.await_started();
    let waiters: Vec<Running> = (1..6)
        .map(|m| Running::new(b.spawn(m, "30000"), true))
        .collect();
    b.open_gate();
    let (v, _) = holder.finish();
    let mut total = count(&v, "kernels_compiled");
    assert_eq!(total, KERNELS as u64, "{v}");
    for w in waiters {
        let (v, _) = w.finish();
        assert_eq!(count(&v, "kernels_shared"), KERNELS as u64, "{v}");
        total += count(&v, "kernels_compiled");
    }
    assert_eq!(total, KERNELS as u64, "compiles by all six");
    assert_eq!(b.compiles(), 1, "compiler runs by all six");
    // Each waiter waited for the first key at least; how many more of the
    // holder's keys it found still leased depends on when it looked.
    let st = b.stats(0);
    let waited = count(&st["remote"], "leases_waited");
    assert!((5..=5 * KERNELS as u64).contains(&waited), "{st}");
    assert_eq!(count(&st["remote"], "leases_expired"), 0, "{st}");
}

#[test]
fn a_holder_killed_mid_compile_blocks_the_others_for_one_lease() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::new(server.url(), true);
    let mut holder = Running::new(b.spawn(0, "1000"), false);
    b.await_started();
    let waiter = Running::new(b.spawn(1, "1000"), true);
    holder.child.kill().unwrap();
    holder.child.wait().unwrap();
    // The wait bound is ten minutes: only the dead holder's lease expiring
    // lets the waiter go on.
    let (v, _) = waiter.finish();
    assert_eq!(count(&v, "kernels_compiled"), KERNELS as u64, "{v}");
    b.open_gate();
    holder.stderr.join().unwrap();
    assert_eq!(b.compiles(), 2);
    let st = b.stats(1);
    assert!(st["remote"]["leases_expired"].as_u64() >= Some(1), "{st}");
}

#[test]
fn a_server_down_at_start_costs_one_warning_and_no_failure() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::new(server.url(), false);
    server.kill();
    let child = b
        .command(0, &["compile", "--json", "--backend", "cc"])
        .args(&b.kernels)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (v, stderr) = Running::new(child, false).finish();
    assert_eq!(count(&v, "kernels_compiled"), KERNELS as u64, "{v}");
    let warnings = stderr.lines().filter(|l| l.contains("redis tier")).count();
    assert_eq!(warnings, 1, "{stderr}");
    // The local tier still works: the next run loads it all.
    server.restart();
    let child = b
        .command(0, &["compile", "--json", "--backend", "cc"])
        .args(&b.kernels)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (v, _) = Running::new(child, false).finish();
    assert!(outcomes(&v).iter().all(|o| o == "stored"), "{v}");
    assert_eq!(b.compiles(), 1);
}

#[test]
fn a_server_killed_and_restarted_fails_no_compile_and_later_writes_land() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::new(server.url(), false);
    let (v, _) = Running::new(b.spawn(0, "30000"), false).finish();
    assert_eq!(count(&v, "kernels_compiled"), KERNELS as u64, "{v}");
    server.kill();
    // Another machine, the server gone: it compiles everything itself.
    let (v, _) = Running::new(b.spawn(1, "30000"), false).finish();
    assert_eq!(count(&v, "kernels_compiled"), KERNELS as u64, "{v}");
    // Back, empty: a third machine's compiles land there, and a fourth
    // machine shares them.
    server.restart();
    let (v, _) = Running::new(b.spawn(2, "30000"), false).finish();
    assert_eq!(count(&v, "kernels_compiled"), KERNELS as u64, "{v}");
    let (v, _) = Running::new(b.spawn(3, "30000"), false).finish();
    assert_eq!(count(&v, "kernels_shared"), KERNELS as u64, "{v}");
    assert_eq!(b.compiles(), 3);
}

#[test]
fn cache_ls_verify_and_clear_reach_the_remote_tier() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::new(server.url(), false);
    let (v, _) = Running::new(b.spawn(0, "30000"), false).finish();
    let entries = KERNELS as u64 + count(&v, "programs_compiled");
    let run = |args: &[&str]| {
        let out = b.command(0, args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let ls = run(&["cache", "ls", "--json"]);
    let tiers = |tier: &str| {
        ls.as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tier"] == tier)
            .count() as u64
    };
    assert_eq!(
        (tiers("local"), tiers("remote")),
        (entries, entries),
        "{ls}"
    );
    let verify = run(&["cache", "verify", "--json"]);
    assert_eq!(count(&verify, "checked"), 2 * entries, "{verify}");
    let st = run(&["cache", "stats", "--json"]);
    assert_eq!(count(&st["remote"], "entries"), entries, "{st}");
    let cleared = run(&["cache", "clear", "--json"]);
    assert_eq!(count(&cleared, "removed"), 2 * entries, "{cleared}");
    assert!(server.keys("kcache:k1:*").is_empty());
}

#[test]
fn tune_on_a_second_machine_reports_its_kernels_as_shared() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::new(server.url(), false);
    let tune = |machine: usize, json: bool| {
        let mut c = b.command(
            machine,
            &[
                "tune",
                "--backend",
                "cc",
                "--compile-only",
                "--candidates",
                "4",
                "--batch",
                "4",
            ],
        );
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let first: serde_json::Value = serde_json::from_str(&tune(0, true)).unwrap();
    let compiled = count(&first, "kernels_compiled");
    assert!(compiled > 0, "{first}");
    assert_eq!(count(&first, "kernels_shared"), 0, "{first}");
    let second: serde_json::Value = serde_json::from_str(&tune(1, true)).unwrap();
    assert_eq!(count(&second, "kernels_compiled"), 0, "{second}");
    assert_eq!(count(&second, "kernels_shared"), compiled, "{second}");
    assert_eq!(second["rounds"][0]["kernels_shared"], compiled, "{second}");
    // The table says so too, on a third machine that has nothing locally.
    let table = tune(2, false);
    assert!(table.contains(&format!("shared {compiled} ")), "{table}");
}

#[test]
fn on_a_cluster_a_second_machine_answers_shared_and_cache_ls_and_clear_see_every_node() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    let b = Bench::cluster(cluster.seeds(), "KCACHE_REDIS_CLUSTER", false);
    second_machine_shares(&b);
    let run = |args: &[&str]| {
        let out = b.command(0, args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let on_nodes: usize = cluster
        .keys_per_node("kcache:k1:*:v")
        .iter()
        .map(Vec::len)
        .sum();
    let ls = run(&["cache", "ls", "--json"]);
    let remote = ls
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tier"] == "remote")
        .count();
    assert_eq!(remote, on_nodes, "{ls}");
    assert!(remote > KERNELS, "kernels and their program: {ls}");
    let verify = run(&["cache", "verify", "--json"]);
    assert_eq!(
        verify["corrupt"].as_array().map(Vec::len),
        Some(0),
        "{verify}"
    );
    run(&["cache", "clear", "--json"]);
    assert!(
        cluster
            .keys_per_node("kcache:k1:*")
            .iter()
            .all(Vec::is_empty),
        "clear left keys on some node"
    );
}

#[test]
fn on_a_cluster_six_machines_racing_compile_each_distinct_kernel_once() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    if !have_cc() {
        return;
    }
    // The cluster given as a URL list this time.
    six_machines_race(&Bench::cluster(cluster.seeds(), "KCACHE_REDIS_URL", true));
}
