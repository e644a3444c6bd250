//! Single-flight across processes: before compiling what the store missed,
//! the resolver takes each key's [lease](crate::store::lease), so processes
//! sharing a store compile each distinct kernel once.
//!
//! Leases are taken in key order, so two resolves (in any processes) that
//! want overlapping keys never wait on each other in a cycle; every wait is
//! bounded by one deadline per batch (`KCACHE_LEASE_WAIT`, seconds, default
//! 60). A key whose lease was waited for is looked up in the store again
//! before compiling. A key whose holder kept it past the deadline, or a store
//! that cannot lease at all, is compiled anyway: the cache never fails the
//! caller. The leases are held until the resolve's compiles are published and
//! stored, and dropped however it ends; a holder that dies drops them with
//! its descriptors.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::stored::kernel_entry_key;
use super::{Answer, Resolver};
use crate::backend::Backend;
use crate::key::Digest;
use crate::resolve::census::Census;
use crate::store::{Lease, LeaseGrant};

/// The variable bounding how long a batch waits for other processes' leases.
pub const LEASE_WAIT_ENV: &str = "KCACHE_LEASE_WAIT";

const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// The batch's bound on waiting, from [`LEASE_WAIT_ENV`] (read once).
fn lease_wait() -> Duration {
    static WAIT: OnceLock<Duration> = OnceLock::new();
    *WAIT.get_or_init(|| {
        let Ok(text) = std::env::var(LEASE_WAIT_ENV) else {
            return DEFAULT_WAIT;
        };
        match text.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s.min(86_400.0)),
            _ => {
                tracing::warn!(
                    "invalid {LEASE_WAIT_ENV}={text:?} (expected seconds); waiting {}s",
                    DEFAULT_WAIT.as_secs()
                );
                DEFAULT_WAIT
            }
        }
    })
}

impl<B: Backend + 'static> Resolver<B> {
    /// Takes the leases of the distinct keys still missing, in key order,
    /// and looks the store up again if any had to be waited for.
    pub(super) fn take_leases(
        &self,
        keys: &[Digest],
        uncacheable: &[bool],
        answers: &mut [Answer<B::Program>],
        generation: u64,
        census: &mut Census,
    ) -> Vec<Box<dyn Lease>> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        let mut wanted: Vec<Digest> = keys
            .iter()
            .enumerate()
            .filter(|&(i, _)| answers[i].is_none() && !uncacheable[i])
            .map(|(_, k)| *k)
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let deadline = Instant::now() + lease_wait();
        let mut held = Vec::with_capacity(wanted.len());
        let mut waited = 0;
        for key in &wanted {
            let left = deadline.saturating_duration_since(Instant::now());
            match store.lease(&kernel_entry_key(key), left) {
                Ok(LeaseGrant::Free(lease)) => held.push(lease),
                Ok(LeaseGrant::AfterWait(lease)) => {
                    waited += 1;
                    held.push(lease);
                }
                Ok(LeaseGrant::TimedOut) => {
                    waited += 1;
                    tracing::debug!("another process kept a kernel's lease past the wait; compiling it here too");
                }
                Err(e) => {
                    // A store that cannot lease one key cannot lease the
                    // others: compile them all, as without single-flight.
                    self.store_errors
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::debug!(
                        "kcache: cannot take compile leases ({e}); compiling without them"
                    );
                    break;
                }
            }
        }
        census.kernels_waited += waited;
        if waited > 0 {
            let start = Instant::now();
            self.load_stored(keys, uncacheable, answers, generation, census);
            census.load_time += start.elapsed();
        }
        held
    }
}
