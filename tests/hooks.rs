//! Cache hooks: teardown notifications, their counts, failures and nesting.
//!
//! Every test builds its own `Hooks` (tests run in parallel threads), except
//! `global_registry_backs_the_free_functions`, the only user of the global one
//! in this process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use kcache::cache::hooks::{self, family_matches, Event, HookError, Hooks, Registration};

#[derive(Debug, thiserror::Error)]
enum ClearError {
    #[error("the clear itself failed")]
    Own,
    #[error(transparent)]
    Hook(#[from] HookError),
}

/// A clear-all listener counting its calls.
fn counting(hooks: &Hooks) -> (Arc<AtomicUsize>, Registration) {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let reg = hooks.on_clear_all(move || {
        m.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    (n, reg)
}

fn failing(message: &'static str) -> impl Fn() -> Result<(), HookError> + Send + Sync {
    move || Err(HookError::listener(message))
}

#[test]
fn around_clear_notifies_before_and_after() {
    let hooks = Hooks::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let _reg = hooks.on_clear_all(move || {
        l.lock().unwrap().push("notified");
        Ok(())
    });
    let v = hooks
        .around_clear(|| {
            log.lock().unwrap().push("cleared");
            Ok::<_, HookError>(7)
        })
        .unwrap();
    assert_eq!(v, 7);
    assert_eq!(*log.lock().unwrap(), ["notified", "cleared", "notified"]);
}

#[test]
fn nested_around_clear_notifies_twice_not_four_times() {
    let hooks = Hooks::new();
    let (n, _reg) = counting(&hooks);
    let inner_ran = hooks
        .around_clear(|| hooks.around_clear(|| hooks.around_clear(|| Ok::<_, HookError>(true))))
        .unwrap();
    assert!(inner_ran);
    assert_eq!(n.load(Ordering::SeqCst), 2);
    // The nesting mark is gone: the next clear notifies again.
    hooks.around_clear(|| Ok::<_, HookError>(())).unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 4);
}

#[test]
fn nesting_is_tracked_per_registry() {
    let (outer, inner) = (Hooks::new(), Hooks::new());
    let (n_outer, _a) = counting(&outer);
    let (n_inner, _b) = counting(&inner);
    outer
        .around_clear(|| inner.around_clear(|| Ok::<_, HookError>(())))
        .unwrap();
    assert_eq!(n_outer.load(Ordering::SeqCst), 2);
    assert_eq!(n_inner.load(Ordering::SeqCst), 2);
}

#[test]
fn clear_on_another_thread_still_notifies() {
    let hooks = Hooks::new();
    let (n, _reg) = counting(&hooks);
    let (inside_tx, inside_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let h = &hooks;
        let first = s.spawn(move || {
            h.around_clear(|| {
                // Hold this clear open until the other thread's clear is done.
                inside_tx.send(()).unwrap();
                done_rx.recv().unwrap();
                Ok::<_, HookError>(())
            })
        });
        inside_rx.recv().unwrap();
        assert_eq!(n.load(Ordering::SeqCst), 1);
        let second = s.spawn(move || h.around_clear(|| Ok::<_, HookError>(())));
        second.join().unwrap().unwrap();
        assert_eq!(
            n.load(Ordering::SeqCst),
            3,
            "the concurrent clear notified twice"
        );
        done_tx.send(()).unwrap();
        first.join().unwrap().unwrap();
    });
    assert_eq!(n.load(Ordering::SeqCst), 4);
}

#[test]
fn first_listener_failure_is_reported_after_the_clear_completed() {
    let hooks = Hooks::new();
    let _a = hooks.on_clear_all(failing("first"));
    let _b = hooks.on_clear_all(failing("second"));
    let (n, _c) = counting(&hooks);
    let cleared = AtomicUsize::new(0);
    let r = hooks.around_clear(|| {
        cleared.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ClearError>(())
    });
    assert_eq!(
        cleared.load(Ordering::SeqCst),
        1,
        "the clear ran despite failures"
    );
    assert_eq!(n.load(Ordering::SeqCst), 2, "both notifications ran");
    match r {
        Err(ClearError::Hook(HookError::Listener(e))) => assert_eq!(e.to_string(), "first"),
        other => panic!("expected the first listener failure, got {other:?}"),
    }
}

#[test]
fn a_listener_failing_only_after_the_clear_is_reported() {
    let hooks = Hooks::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let _reg = hooks.on_clear_all(move || {
        if c.fetch_add(1, Ordering::SeqCst) == 1 {
            Err(HookError::listener("after"))
        } else {
            Ok(())
        }
    });
    let r = hooks.around_clear(|| Ok::<_, ClearError>(()));
    assert!(matches!(r, Err(ClearError::Hook(HookError::Listener(e))) if e.to_string() == "after"));
}

#[test]
fn the_clears_own_failure_wins() {
    let hooks = Hooks::new();
    let _a = hooks.on_clear_all(failing("listener"));
    let (n, _b) = counting(&hooks);
    let r: Result<(), ClearError> = hooks.around_clear(|| Err(ClearError::Own));
    assert!(matches!(r, Err(ClearError::Own)), "got {r:?}");
    assert_eq!(
        n.load(Ordering::SeqCst),
        2,
        "a failed clear still notifies after"
    );
}

#[test]
fn a_panicking_clear_still_notifies_after_and_resumes() {
    let hooks = Hooks::new();
    let (n, _reg) = counting(&hooks);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        hooks.around_clear(|| -> Result<(), HookError> { panic!("clear blew up") })
    }));
    assert!(r.is_err());
    assert_eq!(n.load(Ordering::SeqCst), 2);
    hooks.around_clear(|| Ok::<_, HookError>(())).unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 4, "the nesting mark unwound");
}

#[test]
fn a_panicking_listener_does_not_stop_the_others() {
    let hooks = Hooks::new();
    let _p = hooks.on_clear_all(|| panic!("listener blew up"));
    let (n, _c) = counting(&hooks);
    let _q = hooks.on_device_destroy(|_, _| panic!("destroy listener blew up"));
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let _r = hooks.on_device_destroy(move |_, _| {
        s.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });

    match hooks.notify_clear_all() {
        Err(HookError::Panicked { event, message }) => {
            assert_eq!(event, Event::ClearAll);
            assert_eq!(message, "listener blew up");
        }
        other => panic!("expected a caught panic, got {other:?}"),
    }
    assert_eq!(n.load(Ordering::SeqCst), 1);

    match hooks.notify_device_destroy("cuda/ptx", 2) {
        Err(HookError::Panicked { event, message }) => {
            assert_eq!(
                event,
                Event::DeviceDestroy {
                    backend: "cuda/ptx".into(),
                    index: 2
                }
            );
            assert_eq!(message, "destroy listener blew up");
        }
        other => panic!("expected a caught panic, got {other:?}"),
    }
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn every_device_destroy_listener_runs_and_the_first_failure_is_returned() {
    let hooks = Hooks::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut regs = Vec::new();
    for i in 0..4 {
        let o = order.clone();
        regs.push(hooks.on_device_destroy(move |_, _| {
            o.lock().unwrap().push(i);
            if i % 2 == 1 {
                Err(HookError::listener(format!("listener {i}")))
            } else {
                Ok(())
            }
        }));
    }
    let e = hooks.notify_device_destroy("cc", 0).unwrap_err();
    assert_eq!(e.to_string(), "cache listener failed: listener 1");
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3], "registration order");
}

#[test]
fn registering_and_unregistering_from_inside_a_callback_does_not_deadlock() {
    let hooks = Hooks::new();
    let added: Arc<Mutex<Vec<Registration>>> = Arc::default();
    let late_calls = Arc::new(AtomicUsize::new(0));
    let (h, a, late) = (hooks.clone(), added.clone(), late_calls.clone());
    let own: Arc<Mutex<Option<Registration>>> = Arc::default();
    let o = own.clone();
    let reg = hooks.on_clear_all(move || {
        let late = late.clone();
        a.lock().unwrap().push(h.on_clear_all(move || {
            late.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        // Unregister itself while the notification is running.
        drop(o.lock().unwrap().take());
        Ok(())
    });
    *own.lock().unwrap() = Some(reg);

    hooks.notify_clear_all().unwrap();
    assert_eq!(
        late_calls.load(Ordering::SeqCst),
        0,
        "a listener registered during a notification runs from the next one"
    );
    hooks.notify_clear_all().unwrap();
    assert_eq!(late_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        added.lock().unwrap().len(),
        1,
        "the first listener unregistered itself"
    );
}

#[test]
fn dropping_the_registration_unregisters() {
    let hooks = Hooks::new();
    let (n, reg) = counting(&hooks);
    hooks.notify_clear_all().unwrap();
    drop(reg);
    hooks.notify_clear_all().unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 1);

    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let reg = hooks.on_device_destroy(move |_, _| {
        s.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    hooks.notify_device_destroy("cc", 0).unwrap();
    drop(reg);
    hooks.notify_device_destroy("cc", 0).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn a_registration_outliving_its_registry_drops_quietly() {
    let hooks = Hooks::new();
    let reg = hooks.on_clear_all(|| Ok(()));
    drop(hooks);
    drop(reg);
}

#[test]
fn kept_registration_stays_registered() {
    let hooks = Hooks::new();
    let (n, reg) = counting(&hooks);
    reg.keep();
    hooks.notify_clear_all().unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 1);
}

/// A family listener recording the indices it was told about.
fn family_listener(hooks: &Hooks, family: &str) -> (Arc<Mutex<Vec<usize>>>, Registration) {
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let s = seen.clone();
    let reg = hooks.on_device_destroy_for(family, move |index| {
        s.lock().unwrap().push(index);
        Ok(())
    });
    (seen, reg)
}

#[test]
fn a_foreign_family_never_matches_even_on_the_same_index() {
    let hooks = Hooks::new();
    let (seen, _reg) = family_listener(&hooks, "cuda");
    for foreign in ["opencl", "vulkan", "cudax", "cc/cuda", ""] {
        hooks.notify_device_destroy(foreign, 0).unwrap();
    }
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn family_and_variant_notifications_match() {
    let hooks = Hooks::new();
    let (seen, _reg) = family_listener(&hooks, "cuda");
    hooks.notify_device_destroy("cuda", 0).unwrap();
    hooks.notify_device_destroy("cuda/ptx", 1).unwrap();
    assert_eq!(*seen.lock().unwrap(), [0, 1]);
    assert!(family_matches("vulkan", "vulkan/lavapipe"));
}

#[derive(Debug, thiserror::Error)]
enum TeardownError {
    #[error("context release failed")]
    Release,
    #[error(transparent)]
    Hook(#[from] HookError),
}

#[test]
fn device_teardown_completes_despite_a_listener_failure_and_reports_it_after() {
    let hooks = Hooks::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let _reg = hooks.on_device_destroy(move |backend, index| {
        l.lock()
            .unwrap()
            .push(format!("notified {backend} {index}"));
        Err(HookError::listener("listener broke"))
    });
    let r = hooks.around_device_destroy("cuda", 3, || {
        log.lock().unwrap().push("released".to_string());
        Ok::<_, TeardownError>(())
    });
    assert_eq!(*log.lock().unwrap(), ["notified cuda 3", "released"]);
    assert!(matches!(
        r,
        Err(TeardownError::Hook(HookError::Listener(_)))
    ));

    let r: Result<(), TeardownError> =
        hooks.around_device_destroy("cuda", 3, || Err(TeardownError::Release));
    assert!(
        matches!(r, Err(TeardownError::Release)),
        "the teardown's own failure wins"
    );
}

#[test]
fn global_registry_backs_the_free_functions() {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let _clear = hooks::on_clear_all(move || {
        m.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let _destroy = hooks::on_device_destroy_for("opencl", move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let _any = hooks::on_device_destroy(|_, _| Ok(()));
    hooks::around_clear(|| hooks::around_clear(|| Ok::<_, HookError>(()))).unwrap();
    hooks::notify_clear_all().unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 3);
    hooks::notify_device_destroy("opencl/pocl", 0).unwrap();
    hooks::around_device_destroy("opencl", 1, || Ok::<_, HookError>(())).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert!(std::ptr::eq(hooks::global(), hooks::global()));
}
