//! The census: what resolves did while a closure ran, for tests and reports.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the resolves made on one thread did while [`with_census`] ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Census {
    /// Kernels asked for.
    pub kernels_requested: u64,
    /// Kernel keys derived (canonicalized and digested): the others came
    /// from the resolver's key memo, derived by an earlier kernel or batch.
    pub keys_derived: u64,
    /// Kernels answered without compiling them: by the code cache, or by an
    /// identical kernel earlier in the same batch.
    pub kernels_reused: u64,
    /// Kernels answered by a persistent store (shared ones included).
    pub kernels_stored: u64,
    /// Of `kernels_stored`, those a tier shared with other machines answered
    /// (outcome `shared`).
    pub kernels_shared: u64,
    /// Kernels compiled: one representative per distinct key (uncacheable
    /// kernels included, each on its own).
    pub kernels_compiled: u64,
    /// Distinct kernels whose compile lease another process held: waited
    /// for, then looked up in the store again (or compiled here if the
    /// holder kept it past the wait).
    pub kernels_waited: u64,
    /// Kernels answered by a compile that is never published nor stored
    /// (`__TIME__` in the text, or a compile that read what its key missed).
    pub kernels_uncacheable: u64,
    /// Programs compiled.
    pub programs_compiled: u64,
    /// Programs loaded from a persistent store.
    pub programs_loaded: u64,
    /// Programs compiled through the concurrent (split) path.
    pub concurrent_compiles: u64,
    /// Compiles by a backend that can split them, whether or not they split
    /// (also with the code cache disabled): tests gate split claims on this.
    pub split_capable_compiles: u64,
    /// Wall time spent compiling.
    #[serde(serialize_with = "seconds")]
    pub compile_time: Duration,
    /// Wall time spent loading programs from a store.
    #[serde(serialize_with = "seconds")]
    pub load_time: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Census {
    /// Adds `o`'s counts and times to these (to total several batches).
    pub fn add(&mut self, o: &Census) {
        self.kernels_requested += o.kernels_requested;
        self.keys_derived += o.keys_derived;
        self.kernels_reused += o.kernels_reused;
        self.kernels_stored += o.kernels_stored;
        self.kernels_shared += o.kernels_shared;
        self.kernels_compiled += o.kernels_compiled;
        self.kernels_uncacheable += o.kernels_uncacheable;
        self.kernels_waited += o.kernels_waited;
        self.programs_compiled += o.programs_compiled;
        self.programs_loaded += o.programs_loaded;
        self.concurrent_compiles += o.concurrent_compiles;
        self.split_capable_compiles += o.split_capable_compiles;
        self.compile_time += o.compile_time;
        self.load_time += o.load_time;
    }
}

thread_local! {
    static ACTIVE: RefCell<Vec<Census>> = const { RefCell::new(Vec::new()) };
}

static CONCURRENT_COMPILES: AtomicU64 = AtomicU64::new(0);

/// Runs `f` and answers what the resolves it made on this thread did.
/// Censuses nest: an inner one's counts are added to the outer one's too.
pub fn with_census<R>(f: impl FnOnce() -> R) -> (R, Census) {
    /// Ends the census if `f` panics.
    struct Unwind;
    impl Drop for Unwind {
        fn drop(&mut self) {
            finish();
        }
    }
    ACTIVE.with(|a| a.borrow_mut().push(Census::default()));
    let unwind = Unwind;
    let r = f();
    std::mem::forget(unwind);
    (r, finish())
}

/// Ends the innermost census, adding its counts to the enclosing one.
fn finish() -> Census {
    ACTIVE.with(|a| {
        let mut active = a.borrow_mut();
        let done = active.pop().unwrap_or_default();
        if let Some(outer) = active.last_mut() {
            outer.add(&done);
        }
        done
    })
}

/// Adds `c` to the innermost census of this thread, if one is running.
pub(crate) fn record(c: &Census) {
    if c.concurrent_compiles > 0 {
        CONCURRENT_COMPILES.fetch_add(c.concurrent_compiles, Ordering::Relaxed);
    }
    ACTIVE.with(|a| {
        if let Some(inner) = a.borrow_mut().last_mut() {
            inner.add(c);
        }
    });
}

/// Programs resolves have compiled through their concurrent path in this
/// process.
pub fn concurrent_compiles() -> u64 {
    CONCURRENT_COMPILES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(programs: u64) -> Census {
        Census {
            programs_compiled: programs,
            ..Census::default()
        }
    }

    #[test]
    fn censuses_nest() {
        let ((), outer) = with_census(|| {
            record(&one(1));
            let ((), inner) = with_census(|| record(&one(2)));
            assert_eq!(inner.programs_compiled, 2);
            record(&one(4));
        });
        assert_eq!(outer.programs_compiled, 7);
    }

    #[test]
    fn a_panic_inside_pops_the_census() {
        let r = std::panic::catch_unwind(|| with_census(|| panic!("boom")));
        assert!(r.is_err());
        ACTIVE.with(|a| assert!(a.borrow().is_empty()));
    }

    #[test]
    fn recording_outside_a_census_is_dropped() {
        record(&one(3));
        let ((), c) = with_census(|| {});
        assert_eq!(c, Census::default());
    }
}
