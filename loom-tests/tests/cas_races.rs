//! Model 2: compare-and-swap bookings (power-of-two, least-loaded) racing each
//! other and racing releases; and least-loaded exactness with no releases.
#![cfg(loom)]

use loom::sync::Arc;
use loom_tests::{assert_idle, model, spawn_pickers};
use workerpick::{LeastLoaded, Pool, PowerOfTwo};

/// Counts equal the guards outstanding at the end, whatever the races.
#[test]
fn cas_bookings_racing_releases_match_outstanding_guards() {
    model("cas_races", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 2, |_, h, t| {
            let r = if t == 0 {
                h.reserve(&LeastLoaded::new()).unwrap()
            } else {
                h.reserve(&PowerOfTwo::new()).unwrap()
            };
            drop(r);
        });
        // The guard still outstanding when the model ends.
        let held = pool.reserve(&LeastLoaded::new()).unwrap();
        for t in threads {
            t.join().unwrap();
        }
        let w = *held.worker();
        assert_eq!(pool.in_flight(&w), Some(1), "the held guard's worker");
        assert_eq!(pool.in_flight(&(1 - w)), Some(0), "the other worker");
        drop(held);
        assert_idle(&pool, [0, 1]);
        assert_eq!(pool.stats().fallbacks, 0);
    });
}

/// Two threads each reserve twice over two idle workers with least-loaded and
/// release nothing: the workers end at exactly 2 and 2 (a booking never skips
/// the minimum).
#[test]
fn least_loaded_is_exact_without_releases() {
    model("least_loaded_exact", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 2, |_, h, _| {
            for _ in 0..2 {
                // Kept booked to the end of the model: the bookings under test
                // are the only load there is.
                core::mem::forget(h.reserve(&LeastLoaded::new()).unwrap());
            }
        });
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            (pool.in_flight(&0), pool.in_flight(&1)),
            (Some(2), Some(2)),
            "least-loaded skipped the minimum"
        );
    });
}
