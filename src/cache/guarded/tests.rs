//! Unit tests of the guarded cache.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn ok<V>(v: V) -> impl FnOnce() -> Result<V, GuardedError> {
    move || Ok(v)
}

#[test]
fn keys_are_scoped_per_device() {
    let c: GuardedCache<&str, u32> = GuardedCache::new(Handles::Owned);
    let a = c.find_or_build("k", 0, ok(1)).unwrap();
    let b = c.find_or_build("k", 1, ok(2)).unwrap();
    assert_eq!((*a, *b), (1, 2));
    assert_eq!(c.len(), 2);
    assert_eq!(c.evict_device(0).unwrap(), 1);
    assert!(!c.contains_key("k", 0));
    assert!(c.contains_key("k", 1));
}

#[test]
fn evict_bumps_the_epoch_of_an_empty_device() {
    let c: GuardedCache<&str, u32> = GuardedCache::new(Handles::Owned);
    assert_eq!(c.epoch(3), 0);
    assert_eq!(c.evict_device(3).unwrap(), 0);
    assert_eq!(c.epoch(3), 1);
    assert_eq!(c.generation(), 0);
    c.clear().unwrap();
    assert_eq!(c.generation(), 1);
    assert_eq!(c.epoch(3), 1, "a clear leaves epochs alone");
}

#[test]
fn build_failure_caches_nothing() {
    let c: GuardedCache<&str, u32> = GuardedCache::new(Handles::Owned);
    let r = c.find_or_build("k", 0, || {
        Err(GuardedError::Destroy {
            victims: 0,
            failed: 0,
            source: "stand-in build error".into(),
        })
    });
    assert!(r.is_err());
    assert!(c.is_empty());
    let s = c.stats();
    assert_eq!((s.builds, s.build_failures, s.destroys), (0, 1, 0));
}

#[test]
fn drop_destroys_what_is_left() {
    let destroyed = Arc::new(AtomicUsize::new(0));
    let d = destroyed.clone();
    let c: GuardedCache<u32, u32> = GuardedCache::with_destroy(Handles::Owned, move |_| {
        d.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    for k in 0..3 {
        c.find_or_build(k, 0, ok(k)).unwrap();
    }
    drop(c);
    assert_eq!(destroyed.load(Ordering::SeqCst), 3);
}

#[test]
fn hits_are_counted_and_share_the_value() {
    let c: GuardedCache<String, u32> = GuardedCache::new(Handles::Owned);
    let a = c.find_or_build("k".to_string(), 0, ok(1)).unwrap();
    let b = c
        .find_or_build("k".to_string(), 0, || -> Result<u32, GuardedError> {
            panic!("a hit must not build")
        })
        .unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(c.get("k", 0).as_deref(), Some(&1));
    let s = c.stats();
    assert_eq!((s.hits, s.builds), (1, 1));
}

#[test]
fn unheld_values_are_let_go_and_held_ones_kept() {
    let destroyed = Arc::new(AtomicUsize::new(0));
    let d = destroyed.clone();
    let c: GuardedCache<u32, u32> = GuardedCache::with_destroy(Handles::Owned, move |_| {
        d.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .sweep_unheld(|v| Arc::strong_count(v) > 1);
    let mut kept = Vec::new();
    for k in 0..2000 {
        let v = c.find_or_build(k, 0, ok(k)).unwrap();
        if k % 100 == 0 {
            kept.push(v);
        }
        assert!(
            c.len() <= 2 * SWEEP_MIN.max(2 * kept.len()) + 1,
            "{}",
            c.len()
        );
    }
    for v in &kept {
        let again = c
            .find_or_build(*v.as_ref(), 0, || -> Result<u32, GuardedError> {
                panic!("a held value was let go")
            })
            .unwrap();
        assert!(Arc::ptr_eq(v, &again));
    }
    let s = c.stats();
    assert_eq!(s.builds - s.destroys, c.len() as u64);
    assert_eq!(destroyed.load(Ordering::SeqCst) as u64, s.destroys);
    assert!(s.destroys >= 2000 - 2 * SWEEP_MIN as u64 - kept.len() as u64);
    drop(kept);
    assert_eq!(c.sweep().unwrap() as u64 + s.destroys, c.stats().destroys);
    assert!(c.is_empty());
}

#[test]
fn without_sweep_unheld_nothing_is_let_go() {
    let c: GuardedCache<u32, u32> = GuardedCache::new(Handles::Owned);
    for k in 0..200 {
        c.find_or_build(k, 0, ok(k)).unwrap();
    }
    assert_eq!(c.sweep().unwrap(), 0);
    assert_eq!(c.len(), 200);
}
