//! Compile leases in Redis: one compile per kernel key across every machine
//! sharing the server.
//!
//! A lease is `SET {..}:l <token> NX PX <lease>`, the token 128 bits no
//! other holder can guess. The holder's process extends every lease it holds
//! every third of a lifetime (compare-and-`PEXPIRE`, one script per key) on
//! a background thread, and releases each with a compare-and-delete script,
//! so a holder whose lease expired never frees another's. A holder killed
//! with SIGKILL stops extending: its lease expires within one lifetime.
//!
//! A waiter polls with a backoff from 10 ms up to 200 ms, each poll one
//! round trip (try the lease again, and ask whether the value exists), until
//! the value is published (the caller looks it up again), the lease is free
//! (the holder failed or died: the waiter takes it and compiles), or the
//! caller's wait is over. Losing a lease is harmless: keys, not locks, make
//! the cache correct, so the worst case is a second compile.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use super::conn::C;
use super::{Inner, RedisStore};
use crate::store::{Lease, LeaseGrant, NoLease, StoreError};

const EXTEND: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// The leases a process holds, by lease key, and whether its heartbeat
/// thread runs.
#[derive(Debug, Default)]
pub(super) struct Held(Mutex<HeldState>);

#[derive(Debug, Default)]
struct HeldState {
    tokens: HashMap<String, String>,
    beating: bool,
}

/// A held Redis lease: released when dropped.
#[derive(Debug)]
struct RedisLease {
    inner: Arc<Inner>,
    key: String,
    token: String,
}

impl Lease for RedisLease {}

impl Drop for RedisLease {
    fn drop(&mut self) {
        self.inner
            .leases
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tokens
            .remove(&self.key);
        // A release that fails leaves the lease to expire.
        let _ = self.inner.remote.call(|c| {
            redis::cmd("EVAL")
                .arg(RELEASE)
                .arg(1)
                .arg(&self.key)
                .arg(&self.token)
                .exec(c.one())
        });
    }
}

/// 128 bits no other holder can predict, and the pid for whoever reads them
/// in the server.
fn token() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new_derive_key("kcache redis lease token");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let local = 0u8;
    h.update(&now.as_nanos().to_le_bytes())
        .update(&std::process::id().to_le_bytes())
        .update(&SEQ.fetch_add(1, Ordering::Relaxed).to_le_bytes())
        .update(&(&local as *const u8 as usize).to_le_bytes())
        .update(format!("{:?}", std::thread::current().id()).as_bytes());
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let mut buf = [0u8; 16];
        if std::io::Read::read_exact(&mut f, &mut buf).is_ok() {
            h.update(&buf);
        }
    }
    let hex = h.finalize().to_hex();
    format!("{}:{}", &hex[..32], std::process::id())
}

impl RedisStore {
    /// Takes `key`'s lease, waiting up to `wait` for another holder (see the
    /// module docs). An error (the server unreachable) means the caller falls
    /// back to a local lease.
    pub(super) fn take_lease(&self, key: &[u8], wait: Duration) -> Result<LeaseGrant, StoreError> {
        let lk = self.lease_key(key);
        let vk = self.value_key(key);
        let token = token();
        let ms = self.inner.opts.lease.as_millis().max(1) as u64;
        let deadline = Instant::now() + wait;
        let mut backoff = FIRST_BACKOFF;
        let mut waited = false;
        loop {
            let (won, published): (bool, bool) = self
                .call(|c| {
                    // One slot (the keys share their hash tag): one node.
                    let mut p = redis::pipe();
                    p.cmd("SET")
                        .arg(&lk)
                        .arg(&token)
                        .arg("NX")
                        .arg("PX")
                        .arg(ms)
                        .cmd("EXISTS")
                        .arg(&vk);
                    c.pipe::<(Option<String>, bool)>(&p)
                        .map(|(set, exists)| (set.is_some(), exists))
                })
                .map_err(|e| self.err("lease", e))?;
            if won {
                self.count(C::LeasesWon);
                match (waited, published) {
                    (true, true) => self.count(C::LeasesWaited),
                    // The holder went away without publishing.
                    (true, false) => self.count(C::LeasesExpired),
                    (false, _) => {}
                }
                let lease = self.hold(lk, token);
                // Published between the caller's miss and now: it looks up
                // again before compiling.
                return Ok(if waited || published {
                    LeaseGrant::AfterWait(lease)
                } else {
                    LeaseGrant::Free(lease)
                });
            }
            if published {
                self.count(C::LeasesWaited);
                return Ok(LeaseGrant::AfterWait(Box::new(NoLease)));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(LeaseGrant::TimedOut);
            }
            if !waited {
                tracing::debug!(lease = %lk,
                    "kcache store: waiting for another process's compile lease");
            }
            waited = true;
            std::thread::sleep(backoff.min(deadline - now));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Records a won lease and makes sure the heartbeat runs.
    fn hold(&self, key: String, token: String) -> Box<dyn Lease> {
        let start = {
            let mut held = self
                .inner
                .leases
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            held.tokens.insert(key.clone(), token.clone());
            !std::mem::replace(&mut held.beating, true)
        };
        if start {
            let weak = Arc::downgrade(&self.inner);
            let period = self.inner.opts.lease / 3;
            let spawned = std::thread::Builder::new()
                .name("kcache-redis-lease".into())
                .spawn(move || heartbeat(weak, period));
            if spawned.is_err() {
                // Without a heartbeat a lease simply expires: a long compile
                // may then be done twice, never wrongly.
                self.inner
                    .leases
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .beating = false;
            }
        }
        Box::new(RedisLease {
            inner: Arc::clone(&self.inner),
            key,
            token,
        })
    }
}

/// Extends the process's leases every `period` while it holds any.
fn heartbeat(weak: Weak<Inner>, period: Duration) {
    loop {
        std::thread::sleep(period);
        let Some(inner) = weak.upgrade() else { return };
        let tokens: Vec<(String, String)> = {
            let mut held = inner.leases.0.lock().unwrap_or_else(|p| p.into_inner());
            if held.tokens.is_empty() {
                held.beating = false;
                return;
            }
            held.tokens
                .iter()
                .map(|(k, t)| (k.clone(), t.clone()))
                .collect()
        };
        let ms = inner.opts.lease.as_millis().max(1) as u64;
        let _ = inner.remote.call(|c| {
            let mut p = redis::pipe();
            for (k, t) in &tokens {
                p.cmd("EVAL")
                    .arg(EXTEND)
                    .arg(1)
                    .arg(k)
                    .arg(t)
                    .arg(ms)
                    .ignore();
            }
            // On a cluster, one pipeline per node holding some of them.
            c.pipe::<()>(&p)
        });
    }
}
