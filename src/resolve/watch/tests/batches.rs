//! Validations across keying batches: what one thread's batch learned early
//! must not vouch for a later batch of another, and a validation whose arms
//! ran out is stat-ed every batch.

use super::*;
use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
use crate::backend::cc::includes::memo::{self, StatId, Validation};
use std::sync::mpsc::channel;
use std::time::Duration;

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

/// How many stats one batch's `holds` took, and its answer.
fn stats_in(v: &Validation) -> (bool, u64) {
    use crate::backend::cc::includes::memo::test_hooks::STATS;
    let before = STATS.with(std::cell::Cell::get);
    let ok = memo::batch(|| v.holds());
    (ok, STATS.with(std::cell::Cell::get) - before)
}

/// A validation over `h`, re-validated once, then armed and trusted on its
/// flag.
fn armed_over(h: &Path) -> Validation {
    let v = Validation::new(vec![(h.to_path_buf(), StatId::of(h))], memo::now());
    for _ in 0..2 {
        assert!(memo::batch(|| v.holds()));
    }
    assert_eq!(stats_in(&v), (true, 0), "armed");
    v
}

#[test]
fn a_change_no_watch_reports_is_seen_once_the_trust_bound_passes() {
    use crate::backend::cc::includes::memo::test_hooks::advance;
    use crate::resolve::watch::SCRIPTED;
    ALL_OLD.with(|o| o.set(true));
    // The scripted feed reports nothing the test does not queue: a writer
    // the kernel does not report (an AIO write before its close).
    SCRIPTED.with(|s| *s.borrow_mut() = Some(Watcher::new(Box::new(Script::default()))));
    let (_dir, _inc, h) = tree();
    let v = armed_over(&h);
    fs::write(&h, "#define V 22\n").unwrap();
    advance(Duration::from_millis(999));
    assert_eq!(stats_in(&v), (true, 0), "within the bound: trusted unseen");
    advance(Duration::from_millis(1));
    assert!(
        !memo::batch(|| v.holds()),
        "the bound passed: stat-ed, seen"
    );
    assert!(!memo::batch(|| v.holds()), "and not trusted again");
    SCRIPTED.with(|s| *s.borrow_mut() = None);
}

#[test]
fn an_armed_validation_that_passes_its_time_bound_stat_stays_armed() {
    use crate::backend::cc::includes::memo::test_hooks::advance;
    ALL_OLD.with(|o| o.set(true));
    let (_dir, _inc, h) = tree();
    let v = armed_over(&h);
    for _ in 0..2 {
        advance(Duration::from_secs(1));
        assert_eq!(
            stats_in(&v),
            (true, 1),
            "the bound passed: every entry stat-ed"
        );
        assert_eq!(stats_in(&v), (true, 0), "still armed: no re-arm, no stat");
    }
    // Still on its flag: a reported change ends the trust within the bound.
    fs::write(&h, "#define V 22\n").unwrap();
    assert!(!memo::batch(|| v.holds()));
}
