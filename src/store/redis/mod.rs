//! A tier shared by many machines: a Redis server.
//!
//! [`RedisStore`] is a [`Store`] like the others, meant to sit last in a
//! [`super::Tiered`] (memory → file or SQLite → Redis): a hit there is copied
//! into the local tiers, and a compile is written through to it. Its
//! [leases](Store::lease) make a compile single-flight across every machine
//! sharing the server.
//!
//! # It never slows, fails or poisons a compile
//!
//! * Every call has a read and write timeout (`KCACHE_REDIS_TIMEOUT_MS`,
//!   50 ms) and a connect timeout (`KCACHE_REDIS_CONNECT_TIMEOUT_MS`, 100 ms).
//! * A circuit breaker opens after three consecutive failed calls, or one
//!   failed connect: while it is open no call is made (a read is a miss, a
//!   write is skipped, a lease falls back to the local tier's). After a
//!   cooldown (`KCACHE_REDIS_COOLDOWN_MS`, 1 s, doubling up to 30 s) one call
//!   probes the server; success closes the breaker. Opening and closing each
//!   log one warning.
//! * `get` and `put` never return an error: a failure is counted
//!   ([`RemoteStats`]) and the compile goes on with the local tiers.
//! * Values are framed: an 88-byte header (magic `kcRedis\x01`, flags, the
//!   store key's and the payload's lengths, the payload's blake3, a MAC or
//!   zeros), then the store key and the payload; lengths, store key and
//!   checksum are all checked on every read. With `KCACHE_REDIS_SECRET` (or
//!   `KCACHE_REDIS_SECRET_FILE`), a keyed blake3 MAC over the frame and the
//!   Redis key name, compared in constant time; entries without one are then
//!   refused. A refused entry is a miss, counted, and never deleted by the
//!   reader (a reader with a wrong secret would otherwise erase everyone's
//!   entries); the next write replaces it. Without a secret, the checksum and
//!   key check reject torn, damaged and moved entries but not forgeries:
//!   Redis ACLs are then the only access control.
//!
//! # Keys
//!
//! `{prefix}:k1:{<h>}:v` holds a value and `{prefix}:k1:{<h>}:l` its compile
//! lease, where `h` is the hex blake3 digest of the store key: no caller
//! string becomes a Redis key, and the `{h}` hash tag keeps both in one
//! cluster slot. `{prefix}:stats` holds the counters. A new key version
//! orphans old entries, which the server's LRU then reaps.
//!
//! # Configuration
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `KCACHE_REDIS_URL` | `redis://[user:pass@]host[:port][/db]` or `redis+unix:///path`; a comma-separated list is a cluster's seeds | off |
//! | `KCACHE_REDIS_CLUSTER` | a Redis Cluster's seeds, comma-separated `redis://` URLs (instead of `KCACHE_REDIS_URL`) | off |
//! | `KCACHE_REDIS_PREFIX` | the key prefix | `kcache` |
//! | `KCACHE_REDIS_SECRET`, `KCACHE_REDIS_SECRET_FILE` | the MAC secret (the file's bytes) | none |
//! | `KCACHE_REDIS_TTL` | seconds an entry lives after its last hit (refreshed on each); `0` = forever | `0` |
//! | `KCACHE_REDIS_TIMEOUT_MS` | the read and write timeout of a call | `50` |
//! | `KCACHE_REDIS_CONNECT_TIMEOUT_MS` | the connect timeout | `100` |
//! | `KCACHE_REDIS_COOLDOWN_MS` | the first cooldown of an open breaker | `1000` |
//! | `KCACHE_REDIS_LEASE_MS` | a compile lease's lifetime, extended while the holder lives | `30000` |
//! | `KCACHE_REDIS_MAX_VALUE` | the largest frame written or read (bytes, units allowed) | `64MiB` |
//!
//! `rediss://` (TLS) is not built in: it is refused with an error saying so
//! (put a TLS tunnel such as stunnel in front of the server, or use a unix
//! socket).
//!
//! # Redis Cluster
//!
//! With seeds instead of a server, the crate's cluster client routes each
//! command to its key's node. Nothing here needs two keys in one command
//! except a lease's `SET NX` and its value's `EXISTS`, which share a hash
//! tag (one slot). Pipelines go through `Conn::pipe`, which sends them a
//! command at a time there; `SCAN` runs on every master in turn; `clear`
//! unlinks a key a command. One breaker guards the whole cluster.

mod conn;
pub(crate) mod frame;
mod lease;
mod scan;

use std::ffi::OsString;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use conn::RemoteStats;
use conn::{CallError, Client, Conn, Remote, State, C};
use frame::{MacKey, Refused};

use super::{
    EntryInfo, LeaseGrant, Origin, PruneReport, Store, StoreError, StoreStats, VerifyReport,
};
use crate::bytes::parse_byte_size;

/// The variable naming the server; the tier is off without it.
pub const ENV_URL: &str = "KCACHE_REDIS_URL";
/// The variable naming a Redis Cluster's seed nodes, instead of a server.
pub const ENV_CLUSTER: &str = "KCACHE_REDIS_CLUSTER";
const ENV_PREFIX: &str = "KCACHE_REDIS_PREFIX";
const ENV_SECRET: &str = "KCACHE_REDIS_SECRET";
const ENV_SECRET_FILE: &str = "KCACHE_REDIS_SECRET_FILE";
const ENV_TTL: &str = "KCACHE_REDIS_TTL";
const ENV_TIMEOUT: &str = "KCACHE_REDIS_TIMEOUT_MS";
const ENV_CONNECT_TIMEOUT: &str = "KCACHE_REDIS_CONNECT_TIMEOUT_MS";
const ENV_COOLDOWN: &str = "KCACHE_REDIS_COOLDOWN_MS";
const ENV_LEASE: &str = "KCACHE_REDIS_LEASE_MS";
const ENV_MAX_VALUE: &str = "KCACHE_REDIS_MAX_VALUE";

/// Bumped when the key layout or the frame changes: old entries are then
/// never read, only reaped by the server's LRU.
const KEY_VERSION: u32 = 1;

/// How to reach the server and what to do there.
#[derive(Clone)]
pub struct RedisOptions {
    /// The server's URL; with `cluster`, the comma-separated `redis://`
    /// URLs of some of a Redis Cluster's nodes (the seeds).
    pub url: String,
    /// Whether `url` names a Redis Cluster.
    pub cluster: bool,
    /// The key prefix.
    pub prefix: String,
    /// The timeout of each read and write.
    pub op_timeout: Duration,
    /// The timeout of a connect.
    pub connect_timeout: Duration,
    /// The first cooldown of an open breaker.
    pub cooldown: Duration,
    /// An entry's lifetime after its last hit; `None` = until evicted.
    pub ttl: Option<Duration>,
    /// A compile lease's lifetime (extended while its holder lives).
    pub lease: Duration,
    /// The largest frame written: a larger value is not stored (and the
    /// previous value of its key is removed).
    pub max_value: u64,
    mac: Option<MacKey>,
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &redact(&self.url))
            .field("cluster", &self.cluster)
            .field("prefix", &self.prefix)
            .field("mac", &self.mac.is_some())
            .finish_non_exhaustive()
    }
}

impl RedisOptions {
    /// The defaults for `url`: a Redis Cluster if it is a comma-separated
    /// list of URLs.
    pub fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        RedisOptions {
            cluster: url.contains(','),
            url,
            prefix: "kcache".into(),
            op_timeout: Duration::from_millis(50),
            connect_timeout: Duration::from_millis(100),
            cooldown: Duration::from_secs(1),
            ttl: None,
            lease: Duration::from_secs(30),
            max_value: 64 << 20,
            mac: None,
        }
    }

    /// The defaults for the Redis Cluster that `seeds` (`redis://` URLs of
    /// some of its nodes) belong to.
    pub fn cluster<S: AsRef<str>>(seeds: &[S]) -> Self {
        let mut o = Self::new(
            seeds
                .iter()
                .map(|s| s.as_ref().trim())
                .collect::<Vec<_>>()
                .join(","),
        );
        o.cluster = true;
        o
    }

    /// Authenticates entries with a MAC keyed by `secret`; entries without
    /// a valid one are refused.
    pub fn secret(mut self, secret: &[u8]) -> Self {
        self.mac = Some(MacKey::derive(secret));
        self
    }

    /// The options the process environment asks for; `None` without
    /// `KCACHE_REDIS_URL`.
    pub fn from_env() -> Result<Option<Self>, StoreError> {
        Self::from_lookup(|n| std::env::var_os(n))
    }

    /// [`RedisOptions::from_env`] with a variable lookup (tests pass a map).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<Self>, StoreError> {
        let var = |name: &str| -> Result<Option<String>, StoreError> {
            match lookup(name).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(Some)
                    .map_err(|v| bad(name, &v.to_string_lossy(), "not valid UTF-8")),
            }
        };
        let mut o = match (var(ENV_URL)?, var(ENV_CLUSTER)?) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(bad(
                    ENV_CLUSTER,
                    "…",
                    "set only one of KCACHE_REDIS_URL and KCACHE_REDIS_CLUSTER",
                ))
            }
            (Some(url), None) => RedisOptions::new(url),
            (None, Some(seeds)) => RedisOptions::cluster(&seeds.split(',').collect::<Vec<_>>()),
        };
        if let Some(p) = var(ENV_PREFIX)? {
            o.prefix = p;
        }
        let ms = |name: &str, zero_ok: bool| -> Result<Option<Duration>, StoreError> {
            let Some(v) = var(name)? else { return Ok(None) };
            match v.trim().parse::<u64>() {
                Ok(0) if !zero_ok => Err(bad(name, &v, "must be at least 1")),
                Ok(n) => Ok(Some(Duration::from_millis(n))),
                Err(_) => Err(bad(name, &v, "expected a whole number of milliseconds")),
            }
        };
        o.op_timeout = ms(ENV_TIMEOUT, false)?.unwrap_or(o.op_timeout);
        o.connect_timeout = ms(ENV_CONNECT_TIMEOUT, false)?.unwrap_or(o.connect_timeout);
        o.cooldown = ms(ENV_COOLDOWN, false)?.unwrap_or(o.cooldown);
        o.lease = ms(ENV_LEASE, false)?.unwrap_or(o.lease);
        if let Some(v) = var(ENV_TTL)? {
            let secs: u64 = v
                .trim()
                .parse()
                .map_err(|_| bad(ENV_TTL, &v, "expected a whole number of seconds"))?;
            o.ttl = (secs > 0).then(|| Duration::from_secs(secs));
        }
        if let Some(v) = var(ENV_MAX_VALUE)? {
            o.max_value = parse_byte_size(&v).map_err(|why| bad(ENV_MAX_VALUE, &v, &why))?;
        }
        match (
            lookup(ENV_SECRET).filter(|v| !v.is_empty()),
            var(ENV_SECRET_FILE)?,
        ) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    ENV_SECRET_FILE,
                    "…",
                    "set only one of KCACHE_REDIS_SECRET and KCACHE_REDIS_SECRET_FILE",
                ))
            }
            (Some(s), None) => o = o.secret(s.as_encoded_bytes()),
            (None, Some(path)) => {
                let bytes = std::fs::read(&path)
                    .map_err(|e| bad(ENV_SECRET_FILE, &path, &format!("cannot read it: {e}")))?;
                // A trailing newline from an editor or `echo` is not secret.
                let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                if trimmed.is_empty() {
                    return Err(bad(ENV_SECRET_FILE, &path, "the file is empty"));
                }
                o = o.secret(trimmed);
            }
            (None, None) => {}
        }
        Ok(Some(o))
    }
}

fn bad(name: &str, value: &str, reason: &str) -> StoreError {
    StoreError::Config {
        name: name.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// `url` (or each URL of a list) with any password replaced, for messages.
fn redact(url: &str) -> String {
    if url.contains(',') {
        return url.split(',').map(redact).collect::<Vec<_>>().join(",");
    }
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// The Redis tier (see the module docs).
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    remote: Remote,
    opts: RedisOptions,
    leases: lease::Held,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "redis store at {}", self.inner.remote.name)
    }
}

impl RedisStore {
    /// A store on the server `opts` names. Nothing is sent yet: a server
    /// that is down is found out (and survived) on the first call. Only a
    /// URL that cannot be used is an error.
    pub fn open(opts: RedisOptions) -> Result<Self, StoreError> {
        let var = if opts.cluster { ENV_CLUSTER } else { ENV_URL };
        if opts.cluster {
            let seeds: Vec<&str> = opts.url.split(',').map(str::trim).collect();
            if let Some(s) = seeds.iter().find(|s| !s.starts_with("redis://")) {
                return Err(bad(
                    var,
                    &redact(s),
                    "a Redis Cluster is reached over redis:// (TCP) URLs only",
                ));
            }
        }
        let scheme = opts.url.split("://").next().unwrap_or_default();
        if matches!(scheme, "rediss" | "valkeys") {
            return Err(bad(
                var,
                &redact(&opts.url),
                "TLS (rediss://) is not built into this kcache; use a TLS tunnel (stunnel) to a redis:// address, or redis+unix://",
            ));
        }
        if !matches!(
            scheme,
            "redis" | "redis+unix" | "unix" | "valkey" | "valkey+unix"
        ) {
            return Err(bad(
                var,
                &redact(&opts.url),
                "expected a redis:// or redis+unix:// URL",
            ));
        }
        let client = if opts.cluster {
            Self::cluster_client(&opts)?
        } else {
            Client::Single(
                redis::Client::open(opts.url.as_str())
                    .map_err(|e| bad(ENV_URL, &redact(&opts.url), &e.to_string()))?,
            )
        };
        let remote = Remote::new(
            client,
            redact(&opts.url),
            opts.op_timeout,
            opts.connect_timeout,
            opts.cooldown,
        );
        Ok(RedisStore {
            inner: Arc::new(Inner {
                remote,
                opts,
                leases: lease::Held::default(),
            }),
        })
    }

    /// The client of a Redis Cluster: every node connection bounded by the
    /// timeouts, and few retries (each may wait), enough to follow a
    /// `MOVED` after a resharding and an `ASK` during one.
    fn cluster_client(opts: &RedisOptions) -> Result<Client, StoreError> {
        let seeds: Vec<&str> = opts.url.split(',').map(str::trim).collect();
        redis::cluster::ClusterClientBuilder::new(seeds)
            .connection_timeout(opts.connect_timeout)
            .response_timeout(opts.op_timeout)
            .retries(2)
            .min_retry_wait(1)
            .max_retry_wait(20)
            .build()
            .map(Client::Cluster)
            .map_err(|e| bad(ENV_CLUSTER, &redact(&opts.url), &e.to_string()))
    }

    /// The store `KCACHE_REDIS_URL` and the other variables ask for; `None`
    /// when the variable is unset.
    pub fn from_env() -> Result<Option<Self>, StoreError> {
        RedisOptions::from_env()?.map(Self::open).transpose()
    }

    /// This process's counters, not yet added to the server's.
    pub fn local_stats(&self) -> RemoteStats {
        self.inner.remote.counters.snapshot()
    }

    /// Whether the breaker is closed (calls go through).
    pub fn is_closed(&self) -> bool {
        matches!(self.inner.remote.state(), State::Closed { .. })
    }

    /// The breaker's state in a word: `closed`, `open` or `half-open`.
    pub fn breaker(&self) -> &'static str {
        match self.inner.remote.state() {
            State::Closed { .. } => "closed",
            State::Open { .. } => "open",
            State::HalfOpen { .. } => "half-open",
        }
    }

    fn digest_hex(key: &[u8]) -> String {
        blake3::Hasher::new_derive_key("kcache redis tier v1 key name")
            .update(key)
            .finalize()
            .to_hex()
            .to_string()
    }

    fn ns(&self) -> String {
        format!("{}:k{KEY_VERSION}:", self.inner.opts.prefix)
    }

    /// Where `key`'s value lives.
    fn value_key(&self, key: &[u8]) -> String {
        format!("{}{{{}}}:v", self.ns(), Self::digest_hex(key))
    }

    /// Where `key`'s compile lease lives (same cluster slot as its value).
    fn lease_key(&self, key: &[u8]) -> String {
        format!("{}{{{}}}:l", self.ns(), Self::digest_hex(key))
    }

    fn mac(&self) -> Option<&MacKey> {
        self.inner.opts.mac.as_ref()
    }

    fn remote(&self) -> &Remote {
        &self.inner.remote
    }

    fn count(&self, c: C) {
        self.remote().counters.bump(c);
    }

    fn call<T>(&self, f: impl FnOnce(&mut Conn) -> redis::RedisResult<T>) -> Result<T, CallError> {
        self.remote().call(f)
    }

    /// An error for the operations that report one (`ls`, `verify`, ...).
    fn err(&self, op: &'static str, e: CallError) -> StoreError {
        StoreError::Remote {
            store: format!("{self:?}"),
            op,
            reason: e.to_string(),
        }
    }

    /// Checks a frame read from `rk` for `key`, counting a refusal.
    fn check<'a>(&self, rk: &str, key: &[u8], frame: &'a [u8]) -> Option<&'a [u8]> {
        match frame::decode(self.mac(), rk.as_bytes(), Some(key), frame) {
            Ok(d) => Some(d.payload),
            Err(r) => {
                self.count(match r {
                    Refused::Unauthenticated(_) => C::Unauthenticated,
                    _ => C::Corrupt,
                });
                tracing::debug!(
                    entry = rk,
                    "kcache redis tier: refused an entry ({r}); left in place"
                );
                None
            }
        }
    }

    /// The counters of every process, as the server's hash has them, plus
    /// this process's not yet flushed.
    pub fn remote_totals(&self) -> Result<RemoteStats, StoreError> {
        let sk = self.inner.stats_key();
        let fields: Vec<Option<u64>> = self
            .call(|c| {
                redis::cmd("HMGET")
                    .arg(&sk)
                    .arg(&conn::FIELDS[..])
                    .query(c.one())
            })
            .map_err(|e| self.err("read counters", e))?;
        let mut v = [0u64; 12];
        for (slot, f) in v.iter_mut().zip(fields) {
            *slot = f.unwrap_or(0);
        }
        Ok(RemoteStats::from_values(v).add(&self.local_stats()))
    }

    fn get_frame(&self, rk: &str) -> Result<Option<Vec<u8>>, CallError> {
        let ttl = self.inner.opts.ttl;
        self.call(|c| match ttl {
            // A hit refreshes the TTL: a fixed one would expire hot entries.
            Some(t) => redis::cmd("GETEX")
                .arg(rk)
                .arg("PX")
                .arg(t.as_millis() as u64)
                .query(c.one()),
            None => redis::cmd("GET").arg(rk).query(c.one()),
        })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Counts that cannot be written now are lost: they are statistics.
        let _ = self.flush_counters();
    }
}

impl Inner {
    fn stats_key(&self) -> String {
        format!("{}:stats", self.opts.prefix)
    }

    /// Adds this process's counters to the server's hash.
    fn flush_counters(&self) -> Result<(), CallError> {
        let taken = self.remote.counters.take();
        if taken == RemoteStats::default() {
            return Ok(());
        }
        // While the breaker is open the counts stay here, for a later flush.
        if !self.remote.available() {
            self.remote.counters.restore(&taken);
            return Ok(());
        }
        let sk = self.stats_key();
        let r = self.remote.call(|c| {
            let mut p = redis::pipe();
            for (f, v) in conn::FIELDS.iter().zip(taken.values()) {
                if v > 0 {
                    p.cmd("HINCRBY").arg(&sk).arg(*f).arg(v).ignore();
                }
            }
            c.pipe::<()>(&p)
        });
        if r.is_err() {
            self.remote.counters.restore(&taken);
        }
        r
    }
}

impl Store for RedisStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.get_traced(key)?.map(|(v, _)| v))
    }

    fn get_traced(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Origin)>, StoreError> {
        let rk = self.value_key(key);
        let found = match self.get_frame(&rk) {
            Ok(Some(frame)) if frame.len() as u64 > self.inner.opts.max_value => {
                // No kcache wrote it: refused like any other damage.
                self.count(C::Corrupt);
                None
            }
            Ok(Some(frame)) => self.check(&rk, key, &frame).map(<[u8]>::to_vec),
            Ok(None) | Err(_) => None,
        };
        self.count(if found.is_some() { C::Hits } else { C::Misses });
        Ok(found.map(|v| (v, Origin::Remote)))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let rk = self.value_key(key);
        let frame = frame::encode(self.mac(), rk.as_bytes(), key, value);
        let ttl = self.inner.opts.ttl;
        let _ = if frame.len() as u64 > self.inner.opts.max_value {
            // Never keep a stale value for a key whose new one is refused.
            self.call(|c| redis::cmd("UNLINK").arg(&rk).exec(c.one()))
        } else {
            self.call(|c| {
                let mut cmd = redis::cmd("SET");
                cmd.arg(&rk).arg(&frame);
                if let Some(t) = ttl {
                    cmd.arg("PX").arg(t.as_millis() as u64);
                }
                cmd.exec(c.one())
            })
        };
        Ok(())
    }

    fn remove(&self, key: &[u8]) -> Result<bool, StoreError> {
        let rk = self.value_key(key);
        let n: u64 = self
            .call(|c| redis::cmd("UNLINK").arg(&rk).query(c.one()))
            .map_err(|e| self.err("remove", e))?;
        Ok(n > 0)
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.scan_clear()
    }

    fn len(&self) -> Result<usize, StoreError> {
        Ok(self.scan_entries(false)?.len())
    }

    fn describe(&self) -> String {
        format!("{self:?}")
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn remote_stats(&self) -> Option<Result<RemoteStats, StoreError>> {
        Some(self.remote_totals())
    }

    /// Entries and bytes on the server; hits, misses, corrupt and errors as
    /// every process counted them.
    fn stats(&self) -> Result<StoreStats, StoreError> {
        let entries = self.scan_entries(false)?;
        let r = self.remote_totals()?;
        Ok(StoreStats {
            entries: entries.len() as u64,
            bytes: entries.iter().map(|e| e.stored_bytes).sum(),
            hits: r.hits,
            misses: r.misses,
            evictions: 0,
            errors: r.errors,
            corrupt: r.corrupt + r.unauthenticated,
        })
    }

    fn size_bytes(&self) -> Result<u64, StoreError> {
        Ok(self
            .scan_entries(false)?
            .iter()
            .map(|e| e.stored_bytes)
            .sum())
    }

    fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        self.scan_entries(true)
    }

    fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.scan_verify()
    }

    /// The server evicts (`maxmemory-policy allkeys-lru`): nothing to do.
    fn prune(&self, _max_bytes: u64) -> Result<PruneReport, StoreError> {
        Ok(PruneReport {
            remaining_bytes: self.size_bytes()?,
            ..PruneReport::default()
        })
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.inner
            .flush_counters()
            .map_err(|e| self.err("flush counters", e))
    }

    fn lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        self.take_lease(key, wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_environment_configures_the_tier() {
        assert!(RedisOptions::from_lookup(env(&[])).unwrap().is_none());
        let o = RedisOptions::from_lookup(env(&[
            ("KCACHE_REDIS_URL", "redis://127.0.0.1:6379"),
            ("KCACHE_REDIS_PREFIX", "team"),
            ("KCACHE_REDIS_TTL", "3600"),
            ("KCACHE_REDIS_TIMEOUT_MS", "20"),
            ("KCACHE_REDIS_LEASE_MS", "5000"),
            ("KCACHE_REDIS_MAX_VALUE", "1M"),
            ("KCACHE_REDIS_SECRET", "s"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.prefix, "team");
        assert_eq!(o.ttl, Some(Duration::from_secs(3600)));
        assert_eq!(o.op_timeout, Duration::from_millis(20));
        assert_eq!(o.lease, Duration::from_millis(5000));
        assert_eq!(o.max_value, 1 << 20);
        assert!(o.mac.is_some());
        let zero_ttl = RedisOptions::from_lookup(env(&[
            ("KCACHE_REDIS_URL", "redis://h"),
            ("KCACHE_REDIS_TTL", "0"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(zero_ttl.ttl, None);
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (name, value) in [
            ("KCACHE_REDIS_TIMEOUT_MS", "0"),
            ("KCACHE_REDIS_TIMEOUT_MS", "soon"),
            ("KCACHE_REDIS_TTL", "-1"),
            ("KCACHE_REDIS_MAX_VALUE", "lots"),
        ] {
            let e =
                RedisOptions::from_lookup(env(&[("KCACHE_REDIS_URL", "redis://h"), (name, value)]))
                    .unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
        let both = RedisOptions::from_lookup(env(&[
            ("KCACHE_REDIS_URL", "redis://h"),
            ("KCACHE_REDIS_SECRET", "a"),
            ("KCACHE_REDIS_SECRET_FILE", "/f"),
        ]));
        assert!(both.is_err());
    }

    #[test]
    fn a_secret_file_is_read_without_its_trailing_newline() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("secret");
        std::fs::write(&f, "s\n").unwrap();
        let from_file = RedisOptions::from_lookup(env(&[
            ("KCACHE_REDIS_URL", "redis://h"),
            ("KCACHE_REDIS_SECRET_FILE", f.to_str().unwrap()),
        ]))
        .unwrap()
        .unwrap();
        let inline = RedisOptions::new("redis://h").secret(b"s");
        let frame = |o: &RedisOptions| frame::encode(o.mac.as_ref(), b"rk", b"k", b"v");
        assert_eq!(frame(&from_file), frame(&inline));
    }

    #[test]
    fn a_cluster_is_named_by_its_seeds_in_either_variable() {
        let seeds = "redis://127.0.0.1:7001, redis://127.0.0.1:7002";
        let o = RedisOptions::from_lookup(env(&[("KCACHE_REDIS_CLUSTER", seeds)]))
            .unwrap()
            .unwrap();
        assert!(o.cluster);
        assert_eq!(o.url, "redis://127.0.0.1:7001,redis://127.0.0.1:7002");
        let listed = RedisOptions::from_lookup(env(&[("KCACHE_REDIS_URL", seeds)]))
            .unwrap()
            .unwrap();
        assert!(listed.cluster);
        assert!(!RedisOptions::new("redis://h:1").cluster);
        assert!(RedisOptions::from_lookup(env(&[
            ("KCACHE_REDIS_URL", "redis://h"),
            ("KCACHE_REDIS_CLUSTER", seeds)
        ]))
        .is_err());
        // Opening sends nothing: no server needs to be there.
        assert!(RedisStore::open(o).is_ok());
        let e = RedisStore::open(RedisOptions::cluster(&["redis://h:1", "redis+unix:///s"]))
            .unwrap_err();
        assert!(e.to_string().contains("KCACHE_REDIS_CLUSTER"), "{e}");
    }

    #[test]
    fn passwords_are_kept_out_of_messages() {
        assert_eq!(redact("redis://u:hunter2@h:1/0"), "redis://…@h:1/0");
        assert_eq!(redact("redis+unix:///s"), "redis+unix:///s");
        assert_eq!(
            redact("redis://:pw@a:1,redis://b:2"),
            "redis://…@a:1,redis://b:2"
        );
        let o = RedisOptions::new("redis://u:hunter2@h").secret(b"x");
        assert!(!format!("{o:?}").contains("hunter2"));
    }

    #[test]
    fn key_names_hash_the_store_key_and_share_a_slot_with_their_lease() {
        let s = RedisStore::open(RedisOptions::new("redis://127.0.0.1:1")).unwrap();
        let v = s.value_key(b"kcache/kernel/../x");
        let l = s.lease_key(b"kcache/kernel/../x");
        assert!(v.starts_with("kcache:k1:{") && v.ends_with("}:v"), "{v}");
        assert!(!v.contains("kernel"), "{v}");
        let tag = |k: &str| k[k.find('{').unwrap()..=k.find('}').unwrap()].to_string();
        assert_eq!(tag(&v), tag(&l));
        assert_ne!(v, s.value_key(b"kcache/kernel/../y"));
    }
}
