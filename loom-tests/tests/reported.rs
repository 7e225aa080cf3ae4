//! Model 8: reported load (workers' own reports, replicas' summaries) racing picks,
//! bookings, releases and membership changes. Reported load shares each worker's
//! counter with its bookings, moved by compare-and-swap: whatever order reports,
//! bookings and releases land in, no count is lost or overwritten, the pool's own
//! bookings come back to zero, a pick never books a worker removed before it
//! started, and a departed worker's report is never inherited by whoever takes its
//! slot.
#![cfg(loom)]

use loom::sync::Arc;
use loom_tests::{assert_idle, model, spawn_pickers};
use workerpick::{LeastLoaded, Pool, PowerOfTwo};

/// A reporter raising and withdrawing load while two threads book and release:
/// counts equal the guards outstanding, and every pick's validation still holds.
#[test]
fn reports_racing_bookings_leak_nothing() {
    model("reported_bookings", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let reporter = {
            let pool = pool.clone();
            loom::thread::spawn(move || {
                pool.report_load(&0, 2);
                pool.report_load(&0, 0);
            })
        };
        let threads = spawn_pickers(&pool, 1, |_, h, _| {
            drop(h.reserve(&PowerOfTwo::new()).unwrap());
        });
        let held = pool.reserve(&LeastLoaded::new()).unwrap();
        reporter.join().unwrap();
        assert_eq!(pool.stats().fallbacks, 0, "a report made a booking give up");
        for t in threads {
            t.join().unwrap();
        }
        let w = *held.worker();
        assert_eq!(pool.in_flight(&w), Some(1), "the held guard's worker");
        assert_eq!(pool.in_flight(&(1 - w)), Some(0), "the other worker");
        assert_eq!(pool.reported_load(&0), Some(0), "withdrawn");
        drop(held);
        assert_idle(&pool, [0, 1]);
    });
}

/// Workers reported past the cap (half the counter's range): the bookings racing
/// on them land exactly beside the capped reports (no wrap, no lost count).
#[test]
fn capped_reports_never_wrap_a_count() {
    model("reported_capped", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        pool.report_load(&0, u32::MAX);
        pool.report_load(&1, u32::MAX - 1);
        let threads = spawn_pickers(&pool, 2, |_, h, _| {
            core::mem::forget(h.reserve(&LeastLoaded::new()).unwrap());
        });
        for t in threads {
            t.join().unwrap();
        }
        let total = pool.in_flight(&0).unwrap() + pool.in_flight(&1).unwrap();
        assert_eq!(total, 2, "each booking counted once");
        assert_eq!(pool.reported_load(&0), Some(workerpick::MAX_REPORTED_LOAD));
    });
}

/// A removal racing a replica's summary naming the removed worker, then a pick
/// that starts after the removal: the pick never books the removed worker, and
/// once the worker is back (in its old slot, the only free one) it has nothing
/// reported, whichever way the race went.
#[test]
fn a_departed_worker_never_keeps_or_passes_on_a_report() {
    model("reported_departure", || {
        let pool = Arc::new(Pool::with_max_workers(2).unwrap());
        pool.replace([0u32, 1]).unwrap();
        let peer = Pool::from_workers([0u32, 1]).unwrap();
        let _booked = peer.reserve_worker(&1, 3).unwrap();
        let summary = peer.summary();
        let applier = {
            let pool = pool.clone();
            loom::thread::spawn(move || {
                pool.apply_summary(&summary);
            })
        };
        pool.remove(&1).unwrap();
        let r = pool.reserve(&LeastLoaded::new()).unwrap();
        assert_eq!(*r.worker(), 0, "booked a worker removed before the pick began");
        drop(r);
        applier.join().unwrap();
        assert_eq!(pool.reported_load(&1), None);
        pool.insert(2).unwrap();
        assert_eq!(pool.reported_load(&2), Some(0), "a newcomer inherited a report");
        assert_idle(&pool, [0, 1, 2]);
    });
}
