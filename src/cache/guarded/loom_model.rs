//! Loom models of the find/evict/clear protocol: two threads, one key.
//!
//! Each build records whether the other thread had *started* its evict or
//! clear when the build ran. A value still cached at the end whose build ran
//! before that start had its epoch/generation noted before the bump, so the
//! protocol must have rejected it.

use super::*;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;

struct Built {
    saw_invalidation_start: bool,
}

fn build(flag: &AtomicBool) -> Result<Built, GuardedError> {
    Ok(Built {
        saw_invalidation_start: flag.load(SeqCst),
    })
}

fn check_accounting(cache: &GuardedCache<u8, Built>) {
    let s = cache.stats();
    assert_eq!(s.builds - s.destroys, cache.len() as u64);
}

#[test]
fn evict_against_build() {
    loom::model(|| {
        let cache = Arc::new(GuardedCache::<u8, Built>::new(Handles::Owned));
        let evicting = Arc::new(AtomicBool::new(false));
        let (c, e) = (cache.clone(), evicting.clone());
        let builder = thread::spawn(move || c.find_or_build(1, 0, || build(&e)));
        evicting.store(true, SeqCst);
        cache.evict_device(0).unwrap();
        let got = builder.join().unwrap();
        if let Some(v) = cache.get(&1, 0) {
            assert!(
                v.saw_invalidation_start,
                "a build noted before the evict was installed"
            );
            assert!(Arc::ptr_eq(&v, got.as_ref().unwrap()));
        }
        match got {
            Ok(_) | Err(GuardedError::DeviceDestroyedDuringBuild { device: 0 }) => {}
            Err(e) => panic!("unexpected {e}"),
        }
        check_accounting(&cache);
    });
}

fn clear_against_build(handles: Handles) {
    loom::model(move || {
        let cache = Arc::new(GuardedCache::<u8, Built>::new(handles));
        let clearing = Arc::new(AtomicBool::new(false));
        let (c, f) = (cache.clone(), clearing.clone());
        let builder = thread::spawn(move || c.find_or_build(1, 0, || build(&f)));
        clearing.store(true, SeqCst);
        cache.clear().unwrap();
        let got = builder.join().unwrap();
        if let Some(v) = cache.get(&1, 0) {
            if handles == Handles::Borrowed {
                assert!(
                    v.saw_invalidation_start,
                    "a build spanning a clear was installed"
                );
            }
            assert!(Arc::ptr_eq(&v, got.as_ref().unwrap()));
        }
        match (handles, got) {
            (_, Ok(_)) | (Handles::Borrowed, Err(GuardedError::ClearedDuringBuild { .. })) => {}
            (_, Err(e)) => panic!("unexpected {e}"),
        }
        check_accounting(&cache);
    });
}

#[test]
fn clear_against_build_borrowed() {
    clear_against_build(Handles::Borrowed);
}

#[test]
fn clear_against_build_owned() {
    clear_against_build(Handles::Owned);
}

#[test]
fn racing_builds_resolve_to_one_value() {
    loom::model(|| {
        let cache = Arc::new(GuardedCache::<u8, u8>::new(Handles::Owned));
        let c = cache.clone();
        let other = thread::spawn(move || c.find_or_build(1, 0, || Ok::<_, GuardedError>(1)));
        let mine = cache
            .find_or_build(1, 0, || Ok::<_, GuardedError>(2))
            .unwrap();
        let theirs = other.join().unwrap().unwrap();
        assert!(Arc::ptr_eq(&mine, &theirs));
        let s = cache.stats();
        assert_eq!(s.builds - s.destroys, 1);
        assert_eq!(s.lost_races, s.builds - 1);
    });
}
