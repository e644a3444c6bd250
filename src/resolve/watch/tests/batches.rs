//! Validations across keying batches: what one thread's batch learned early
//! must not vouch for a later batch of another, and a validation whose arms
//! ran out is stat-ed every batch.

use super::*;
use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
use crate::backend::cc::includes::memo::{self, StatId, Validation};
use std::sync::mpsc::channel;

#[test]
fn a_stat_taken_early_in_one_batch_does_not_vouch_for_a_later_batch_of_another_thread() {
    // Thread 2 stats the header in its batch; the header changes; thread 1
    // begins a batch; thread 2 checks another validation over the header
    // from its batch's stat (all a batch promises it); thread 1 must not
    // trust that check: the change was made before its batch began.
    ALL_OLD.with(|o| o.set(true));
    let (_dir, _inc, h) = tree();
    let over = || {
        let clock = memo::now();
        Arc::new(Validation::new(vec![(h.clone(), StatId::of(&h))], clock))
    };
    let (early, late) = (over(), over());
    let (to_main, from_t2) = channel();
    let (to_t2, from_main) = channel();
    std::thread::scope(|s| {
        let (early, late) = (&early, &late);
        s.spawn(move || {
            ALL_OLD.with(|o| o.set(true));
            memo::batch(|| {
                assert!(early.holds());
                to_main.send(()).unwrap();
                from_main.recv().unwrap();
                // Its batch's stat predates the change: still holds here.
                assert!(late.holds());
                to_main.send(()).unwrap();
            });
        });
        from_t2.recv().unwrap();
        fs::write(&h, "#define V 22\n").unwrap();
        memo::batch(|| {
            to_t2.send(()).unwrap();
            from_t2.recv().unwrap();
            assert!(!late.holds(), "changed before this batch began");
        });
    });
}

#[test]
fn a_validation_armed_its_last_time_is_stat_ed_every_batch_and_still_sees_a_change() {
    use crate::backend::cc::includes::memo::test_hooks::STATS;
    ALL_OLD.with(|o| o.set(true));
    let (_dir, _inc, h) = tree();
    let v = Validation::new(vec![(h.clone(), StatId::of(&h))], memo::now());
    let stats_in = |f: &dyn Fn() -> bool| {
        let before = STATS.with(std::cell::Cell::get);
        let ok = memo::batch(f);
        (ok, STATS.with(std::cell::Cell::get) - before)
    };
    for _ in 0..3 {
        assert!(memo::batch(|| v.holds()));
    }
    assert_eq!(stats_in(&|| v.holds()), (true, 0), "armed");
    // Reports that change nothing (opened for writing, closed): each ends
    // the trust, and the next batch re-arms, until arms run out.
    for _ in 0..12 {
        drop(fs::File::options().write(true).open(&h).unwrap());
        assert!(memo::batch(|| v.holds()));
    }
    assert_eq!(stats_in(&|| v.holds()), (true, 1), "polled from now on");
    fs::write(&h, "#define V 22\n").unwrap();
    assert!(!memo::batch(|| v.holds()));
}
