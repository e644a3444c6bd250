//! A private `redis-server` per test: on a unix socket in a tempdir, with no
//! persistence, killed (and reaped) when dropped. Absent `redis-server`, a
//! test skips with a reason, unless `KCACHE_TEST_REQUIRE` names `redis`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub struct RedisServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub sock: PathBuf,
    /// A loopback TCP port it listens on too, when asked for one.
    pub port: Option<u16>,
}

fn required() -> bool {
    std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "redis"))
}

impl RedisServer {
    /// A fresh server, or `None` (said on stderr) where none can run.
    pub fn start() -> Option<RedisServer> {
        Self::start_with(false)
    }

    /// [`RedisServer::start`], also listening on a free loopback port.
    pub fn start_tcp() -> Option<RedisServer> {
        Self::start_with(true)
    }

    fn start_with(tcp: bool) -> Option<RedisServer> {
        let present = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            present || !required(),
            "redis is required here, and redis-server does not run"
        );
        if !present {
            eprintln!("skipped: no redis-server on PATH");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("r.sock");
        // A port the kernel just handed out and nobody holds: free, barring
        // a race with another process binding one the same instant.
        let port = tcp.then(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
        let mut s = RedisServer {
            child: None,
            dir,
            sock,
            port,
        };
        s.spawn();
        Some(s)
    }

    /// Starts the server on the socket, returning once it says it is ready
    /// (read from its log, never waited for by time).
    fn spawn(&mut self) {
        let port = self.port.unwrap_or(0).to_string();
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port, "--unixsocket"])
            .arg(&self.sock)
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"])
            .args(["--daemonize", "no", "--logfile", "", "--dir"])
            .arg(self.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            let n = out.read_line(&mut line).unwrap();
            assert!(n > 0, "redis-server exited before it was ready:\n{seen}");
            seen.push_str(&line);
            if line
                .to_ascii_lowercase()
                .contains("ready to accept connections")
            {
                break;
            }
        }
        // Keeps draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while out.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        self.child = Some(child);
    }

    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.sock.display())
    }

    /// The loopback TCP URL, for a server started with [`RedisServer::start_tcp`].
    pub fn tcp_url(&self) -> String {
        format!(
            "redis://127.0.0.1:{}",
            self.port.expect("started with a port")
        )
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: signalling our own child, by its pid.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    /// Freezes the server (SIGSTOP): connections are accepted, nothing answered.
    pub fn hang(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// SIGKILL, reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            self.resume();
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.sock);
    }

    /// A new server on the same socket, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// A raw connection, for planting and reading entries behind the store.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// The keys matching `pattern`.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut c = self.conn();
        let mut out: Vec<String> = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, ks): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .query(&mut c)
                .unwrap();
            out.extend(ks);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        out.sort();
        out
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A three-master Redis Cluster on loopback, no replicas, each node in its
/// own tempdir; every node killed (and reaped) when dropped.
pub struct RedisCluster {
    nodes: Vec<Child>,
    _dir: tempfile::TempDir,
    pub ports: Vec<u16>,
}

/// A loopback port free now whose cluster-bus port (+10000) is free too.
fn free_cluster_port(taken: &[u16]) -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p > 55_000 || taken.contains(&p) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return p;
        }
    }
}

impl RedisCluster {
    /// A fresh cluster whose every node says `cluster_state:ok`, or `None`
    /// (said on stderr) where none can run.
    pub fn start() -> Option<RedisCluster> {
        let present = ["redis-server", "redis-cli"].iter().all(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(
            present || !required(),
            "redis is required here, and redis-server or redis-cli does not run"
        );
        if !present {
            eprintln!("skipped: no redis-server or redis-cli on PATH");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut ports = Vec::new();
        for _ in 0..3 {
            let p = free_cluster_port(&ports);
            ports.push(p);
        }
        let mut c = RedisCluster {
            nodes: Vec::new(),
            _dir: dir,
            ports,
        };
        for i in 0..3 {
            let p = c.ports[i];
            let d = c._dir.path().join(format!("node-{p}"));
            std::fs::create_dir(&d).unwrap();
            let mut child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &p.to_string()])
                .args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(d.join(format!("nodes-{p}.conf")))
                .args(["--save", "", "--appendonly", "no"])
                .args(["--daemonize", "no", "--logfile", "", "--dir"])
                .arg(&d)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            c.nodes.push(child);
            await_ready(out);
        }
        let addrs: Vec<String> = c.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(out.status.success(), "redis-cli --cluster create: {out:?}");
        // Polled: the nodes agree on the slots a gossip round or two later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !c.ports.iter().all(|p| c.state_ok(*p)) {
            assert!(
                std::time::Instant::now() < deadline,
                "the cluster never reached cluster_state:ok"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(c)
    }

    fn state_ok(&self, port: u16) -> bool {
        let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
            return false;
        };
        let Ok(mut conn) = client.get_connection() else {
            return false;
        };
        redis::cmd("CLUSTER")
            .arg("INFO")
            .query::<String>(&mut conn)
            .is_ok_and(|i| i.lines().any(|l| l.trim() == "cluster_state:ok"))
    }

    /// Freezes node `i` (SIGSTOP): its kernel still accepts connections,
    /// nothing is answered. Resumed on drop.
    pub fn hang(&self, i: usize) {
        // SAFETY: signalling our own child, by its pid.
        unsafe { libc::kill(self.nodes[i].id() as i32, libc::SIGSTOP) };
    }

    /// The seeds, comma-separated `redis://` URLs.
    pub fn seeds(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The keys matching `pattern` on each node (each holds its slots' only).
    pub fn keys_per_node(&self, pattern: &str) -> Vec<Vec<String>> {
        self.ports
            .iter()
            .map(|p| {
                let mut c = redis::Client::open(format!("redis://127.0.0.1:{p}"))
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let mut out: Vec<String> = Vec::new();
                let mut cursor = 0u64;
                loop {
                    let (next, ks): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .query(&mut c)
                        .unwrap();
                    out.extend(ks);
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
                out.sort();
                out
            })
            .collect()
    }
}

/// Reads a server's log until it is ready, then keeps draining it.
fn await_ready(out: std::process::ChildStdout) {
    let mut out = BufReader::new(out);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "redis-server exited before it was ready:\n{seen}");
        seen.push_str(&line);
        if line
            .to_ascii_lowercase()
            .contains("ready to accept connections")
        {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut sink = String::new();
        while out.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            // SAFETY: signalling our own child, by its pid.
            unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
