//! Connections to the server, every call bounded by a timeout and guarded by
//! a circuit breaker, and the counters of what the calls did.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Consecutive failed calls that open the breaker (a failed connect opens it
/// at once).
const FAILURES_TO_OPEN: u32 = 3;
/// The longest the breaker stays open before probing again.
const MAX_COOLDOWN: Duration = Duration::from_secs(30);
/// Idle connections kept for reuse.
const MAX_IDLE: usize = 8;

/// What the remote tier did, for `kcache cache stats`. Each process counts
/// its own and adds them to a hash in the server on flush (and drop), so the
/// figures are the cluster's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemoteStats {
    /// Calls made to the server (each a connect, a round trip, or both).
    pub calls: u64,
    /// Reads that found a valid entry.
    pub hits: u64,
    /// Reads that found nothing usable (absent, refused, or not asked because
    /// the breaker was open).
    pub misses: u64,
    /// Calls that failed (timeouts included).
    pub errors: u64,
    /// Calls that ran past the timeout.
    pub timeouts: u64,
    /// Times the breaker opened.
    pub breaker_trips: u64,
    /// Calls not made because the breaker was open.
    pub skipped: u64,
    /// Entries refused as damaged, truncated or another key's.
    pub corrupt: u64,
    /// Entries refused for a missing or wrong MAC (a secret is set).
    pub unauthenticated: u64,
    /// Compile leases taken.
    pub leases_won: u64,
    /// Leases another worker held that were waited for until its value was
    /// published (taken or not once it was).
    pub leases_waited: u64,
    /// Leases whose holder vanished (expired, or released without
    /// publishing) and that this worker then took over.
    pub leases_expired: u64,
}

/// The names of the counters, in the server's hash and in JSON.
pub(super) const FIELDS: [&str; 12] = [
    "calls",
    "hits",
    "misses",
    "errors",
    "timeouts",
    "breaker_trips",
    "skipped",
    "corrupt",
    "unauthenticated",
    "leases_won",
    "leases_waited",
    "leases_expired",
];

impl RemoteStats {
    pub(super) fn values(&self) -> [u64; 12] {
        [
            self.calls,
            self.hits,
            self.misses,
            self.errors,
            self.timeouts,
            self.breaker_trips,
            self.skipped,
            self.corrupt,
            self.unauthenticated,
            self.leases_won,
            self.leases_waited,
            self.leases_expired,
        ]
    }

    pub(super) fn from_values(v: [u64; 12]) -> Self {
        RemoteStats {
            calls: v[0],
            hits: v[1],
            misses: v[2],
            errors: v[3],
            timeouts: v[4],
            breaker_trips: v[5],
            skipped: v[6],
            corrupt: v[7],
            unauthenticated: v[8],
            leases_won: v[9],
            leases_waited: v[10],
            leases_expired: v[11],
        }
    }

    /// Field-wise sum.
    pub fn add(&self, o: &RemoteStats) -> RemoteStats {
        let (a, b) = (self.values(), o.values());
        RemoteStats::from_values(std::array::from_fn(|i| a[i] + b[i]))
    }
}

/// The counters, one atomic per [`FIELDS`] entry.
#[derive(Debug, Default)]
pub(super) struct Counters([AtomicU64; 12]);

#[derive(Clone, Copy)]
pub(super) enum C {
    Calls = 0,
    Hits,
    Misses,
    Errors,
    Timeouts,
    Trips,
    Skipped,
    Corrupt,
    Unauthenticated,
    LeasesWon,
    LeasesWaited,
    LeasesExpired,
}

impl Counters {
    pub(super) fn bump(&self, c: C) {
        self.0[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> RemoteStats {
        RemoteStats::from_values(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }

    pub(super) fn take(&self) -> RemoteStats {
        RemoteStats::from_values(std::array::from_fn(|i| {
            self.0[i].swap(0, Ordering::Relaxed)
        }))
    }

    pub(super) fn restore(&self, s: &RemoteStats) {
        for (c, v) in self.0.iter().zip(s.values()) {
            c.fetch_add(v, Ordering::Relaxed);
        }
    }
}

/// The breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Calls go through; `failures` consecutive ones failed.
    Closed { failures: u32 },
    /// No call goes through before `until`; the next one after it probes.
    Open { until: Instant, cooldown: Duration },
    /// One call is probing the server; the others are skipped.
    HalfOpen { cooldown: Duration },
}

/// Why a call returned nothing.
#[derive(Debug)]
pub(super) enum CallError {
    /// The breaker is open: nothing was sent.
    Skipped,
    /// The call failed (or the server answered with an error).
    Failed(redis::RedisError),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Skipped => {
                f.write_str("the Redis tier is unreachable (circuit breaker open)")
            }
            CallError::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// How to reach the tier: one server, or a Redis Cluster through its seeds.
pub(super) enum Client {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A node of a cluster, as `CLUSTER NODES` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Node {
    pub host: String,
    pub port: u16,
}

/// A connection to a cluster node whose reads and writes are bounded from
/// its first command on. The crate bounds a connect's own handshake, then
/// clears the timeouts, and its cluster client pings the new connection
/// before setting the call timeouts: with a plain connection, a node that
/// hangs (`SIGSTOP`: the kernel still accepts) after the handshake and
/// before that ping, or one reached without a handshake command, would hold
/// the ping, and the compile, forever.
pub(super) struct Bounded(redis::Connection);

impl redis::ConnectionLike for Bounded {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.0.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.0.check_connection()
    }

    fn is_open(&self) -> bool {
        self.0.is_open()
    }
}

impl redis::cluster::Connect for Bounded {
    fn connect<T: redis::IntoConnectionInfo>(
        info: T,
        timeout: Option<Duration>,
    ) -> redis::RedisResult<Self> {
        let client = redis::Client::open(info)?;
        let c = match timeout {
            Some(t) => client.get_connection_with_timeout(t)?,
            None => client.get_connection()?,
        };
        // Until the cluster client sets the call timeouts, the connect
        // timeout bounds its ping.
        c.set_read_timeout(timeout)?;
        c.set_write_timeout(timeout)?;
        Ok(Bounded(c))
    }

    fn send_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<()> {
        self.0.send_packed_command(cmd)
    }

    fn set_write_timeout(&self, dur: Option<Duration>) -> redis::RedisResult<()> {
        self.0.set_write_timeout(dur)
    }

    fn set_read_timeout(&self, dur: Option<Duration>) -> redis::RedisResult<()> {
        self.0.set_read_timeout(dur)
    }

    fn recv_response(&mut self) -> redis::RedisResult<redis::Value> {
        self.0.recv_response()
    }
}

type ClusterConnection = redis::cluster::ClusterConnection<Bounded>;

/// A connection: to one server, or to a cluster (one socket per node it
/// has talked to; it routes each command to the node serving its key's
/// slot, following `MOVED` and `ASK`).
pub(super) enum Conn {
    Single(redis::Connection),
    Cluster(Box<ClusterConnection>),
}

impl Conn {
    /// For one command, routed by its key on a cluster.
    pub(super) fn one(&mut self) -> &mut dyn redis::ConnectionLike {
        match self {
            Conn::Single(c) => c,
            Conn::Cluster(c) => &mut **c,
        }
    }

    /// Runs a pipeline: one round trip to a server; on a cluster, one
    /// command at a time, each to its key's node (a plain pipeline would go
    /// whole to the node of its first key). The replies of commands marked
    /// ignored are kept on a cluster: only `()` may be asked of such
    /// pipelines.
    pub(super) fn pipe<T: redis::FromRedisValue>(
        &mut self,
        p: &redis::Pipeline,
    ) -> redis::RedisResult<T> {
        match self {
            Conn::Single(c) => p.query(c),
            Conn::Cluster(c) => {
                let replies = p
                    .cmd_iter()
                    .map(|cmd| cmd.query::<redis::Value>(&mut **c))
                    .collect::<redis::RedisResult<Vec<_>>>()?;
                Ok(redis::from_redis_value(redis::Value::Array(replies))?)
            }
        }
    }

    /// Where a `SCAN` must go to see every key: the server (`None`), or
    /// each master of the cluster that has an address and is not failed.
    pub(super) fn scan_targets(&mut self) -> redis::RedisResult<Vec<Option<Node>>> {
        let Conn::Cluster(c) = self else {
            return Ok(vec![None]);
        };
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        let v = c.route_command(
            redis::cmd("CLUSTER").arg("NODES"),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
        )?;
        let text: String = redis::from_redis_value(v)?;
        Ok(masters(&text).into_iter().map(Some).collect())
    }

    /// One `SCAN` page on `node` (see [`Conn::scan_targets`]).
    pub(super) fn scan(
        &mut self,
        node: &Option<Node>,
        cmd: &redis::Cmd,
    ) -> redis::RedisResult<(u64, Vec<String>)> {
        match (self, node) {
            (Conn::Cluster(c), Some(n)) => {
                use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
                let v = c.route_command(
                    cmd,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                        host: n.host.clone(),
                        port: n.port,
                    }),
                )?;
                Ok(redis::from_redis_value(v)?)
            }
            (c, _) => cmd.query(c.one()),
        }
    }

    fn set_timeouts(&self, t: Duration) -> redis::RedisResult<()> {
        match self {
            Conn::Single(c) => {
                c.set_read_timeout(Some(t))?;
                c.set_write_timeout(Some(t))
            }
            Conn::Cluster(c) => {
                c.set_read_timeout(Some(t))?;
                c.set_write_timeout(Some(t))
            }
        }
    }
}

/// The masters in a `CLUSTER NODES` reply (`<id> <ip:port@cport[,host]>
/// <flags> ...` a line), skipping failed ones and ones without an address.
pub(super) fn masters(nodes: &str) -> Vec<Node> {
    let mut out = Vec::new();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(addr), Some(flags)) = (f.get(1), f.get(2)) else {
            continue;
        };
        let flags: Vec<&str> = flags.split(',').collect();
        if !flags.contains(&"master") || flags.iter().any(|f| matches!(*f, "fail" | "noaddr")) {
            continue;
        }
        let hostport = addr.split(['@', ',']).next().unwrap_or_default();
        let Some((host, port)) = hostport.rsplit_once(':') else {
            continue;
        };
        let (Ok(port), false) = (port.parse::<u16>(), host.is_empty()) else {
            continue;
        };
        let node = Node {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        };
        if !out.contains(&node) {
            out.push(node);
        }
    }
    out
}

/// A server: its client, idle connections, breaker and counters.
pub(super) struct Remote {
    client: Client,
    pool: Mutex<Vec<Conn>>,
    state: Mutex<State>,
    pub(super) counters: Counters,
    op_timeout: Duration,
    connect_timeout: Duration,
    cooldown: Duration,
    /// How the server is named in messages (the URL without a password).
    pub(super) name: String,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("name", &self.name)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Remote {
    pub(super) fn new(
        client: Client,
        name: String,
        op_timeout: Duration,
        connect_timeout: Duration,
        cooldown: Duration,
    ) -> Self {
        Remote {
            client,
            pool: Mutex::new(Vec::new()),
            state: Mutex::new(State::Closed { failures: 0 }),
            counters: Counters::default(),
            op_timeout,
            connect_timeout,
            cooldown,
            name,
        }
    }

    pub(super) fn state(&self) -> State {
        *lock(&self.state)
    }

    /// Whether calls may go through now (a closed breaker, or one due for
    /// its probe); nothing changes.
    pub(super) fn available(&self) -> bool {
        match self.state() {
            State::Closed { .. } => true,
            State::Open { until, .. } => Instant::now() >= until,
            State::HalfOpen { .. } => false,
        }
    }

    /// Runs `f` on a connection, within the timeouts, unless the breaker is
    /// open. A connection that saw any error is dropped, never reused: a
    /// late reply to a timed-out call would otherwise answer the next one.
    pub(super) fn call<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<T>,
    ) -> Result<T, CallError> {
        self.admit()?;
        self.counters.bump(C::Calls);
        let mut conn = match self.connection() {
            Ok(c) => c,
            Err(e) => {
                self.failed(&e, true);
                return Err(CallError::Failed(e));
            }
        };
        match f(&mut conn) {
            Ok(v) => {
                self.succeeded();
                let mut pool = lock(&self.pool);
                if pool.len() < MAX_IDLE {
                    pool.push(conn);
                }
                Ok(v)
            }
            Err(e) => {
                // The server answered (a script or type error): it is up.
                let reached = !(e.is_io_error() || e.is_timeout() || e.is_connection_dropped());
                if reached {
                    self.counters.bump(C::Errors);
                    self.succeeded();
                } else {
                    self.failed(&e, false);
                }
                Err(CallError::Failed(e))
            }
        }
    }

    fn connection(&self) -> redis::RedisResult<Conn> {
        if let Some(c) = lock(&self.pool).pop() {
            return Ok(c);
        }
        let c = match &self.client {
            Client::Single(client) => {
                Conn::Single(client.get_connection_with_timeout(self.connect_timeout)?)
            }
            // The builder was given the connect and response timeouts.
            Client::Cluster(client) => Conn::Cluster(Box::new(client.get_generic_connection()?)),
        };
        // The crate clears the timeouts after connecting: every call on this
        // connection is bounded only because they are set here.
        c.set_timeouts(self.op_timeout)?;
        Ok(c)
    }

    fn admit(&self) -> Result<(), CallError> {
        let mut s = lock(&self.state);
        match *s {
            State::Closed { .. } => Ok(()),
            State::Open { until, cooldown } if Instant::now() >= until => {
                *s = State::HalfOpen { cooldown };
                tracing::debug!(server = %self.name, "kcache redis tier: probing the server again");
                Ok(())
            }
            State::Open { .. } | State::HalfOpen { .. } => {
                drop(s);
                self.counters.bump(C::Skipped);
                Err(CallError::Skipped)
            }
        }
    }

    fn succeeded(&self) {
        let mut s = lock(&self.state);
        if matches!(*s, State::HalfOpen { .. } | State::Open { .. }) {
            tracing::warn!(server = %self.name, "kcache redis tier: the server answers again; using it");
        }
        *s = State::Closed { failures: 0 };
    }

    fn failed(&self, e: &redis::RedisError, connecting: bool) {
        self.counters.bump(C::Errors);
        if e.is_timeout() {
            self.counters.bump(C::Timeouts);
        }
        // Idle connections to a server that just failed are suspect too.
        lock(&self.pool).clear();
        let mut s = lock(&self.state);
        let now = Instant::now();
        match *s {
            State::Closed { failures } => {
                let failures = failures + 1;
                if connecting || failures >= FAILURES_TO_OPEN {
                    self.counters.bump(C::Trips);
                    tracing::warn!(server = %self.name, error = %e,
                        "kcache redis tier: the server is unreachable; using the local tiers only (retrying in {:?})",
                        self.cooldown);
                    *s = State::Open {
                        until: now + self.cooldown,
                        cooldown: self.cooldown,
                    };
                } else {
                    *s = State::Closed { failures };
                }
            }
            State::HalfOpen { cooldown } | State::Open { cooldown, .. } => {
                let cooldown = (cooldown * 2).min(MAX_COOLDOWN);
                tracing::debug!(server = %self.name, error = %e,
                    "kcache redis tier: the probe failed; retrying in {cooldown:?}");
                *s = State::Open {
                    until: now + cooldown,
                    cooldown,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_visit_live_masters_once_each() {
        let nodes = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7002@17002,host-b master - 0 0 2 connected 5461-10922
c3 127.0.0.1:7003@17003 slave b2 0 0 2 connected
d4 127.0.0.1:7004@17004 master,fail - 0 0 3 disconnected
e5 :0@0 master,noaddr - 0 0 4 disconnected
f6 [::1]:7006@17006 master - 0 0 5 connected 10923-16383
";
        let m = masters(nodes);
        let names: Vec<String> = m.iter().map(|n| format!("{}:{}", n.host, n.port)).collect();
        assert_eq!(names, ["127.0.0.1:7001", "127.0.0.1:7002", "::1:7006"]);
    }
}
