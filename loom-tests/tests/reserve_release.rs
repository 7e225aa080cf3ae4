//! Model 1: reservations booked and released from several threads.
//!
//! Every count returns to 0, never underflows while a guard holds it, and no
//! release is lost or applied twice.
#![cfg(loom)]

use loom::sync::Arc;
use loom_tests::{assert_idle, model, spawn_pickers};
use workerpick::{LeastLoaded, Pool, PowerOfTwo};

#[test]
fn reserve_release_returns_every_count_to_zero() {
    model("reserve_release", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 2, |pool, h, t| {
            let r = if t == 0 {
                h.reserve(&PowerOfTwo::new()).unwrap()
            } else {
                h.reserve(&LeastLoaded::new()).unwrap()
            };
            let load = pool.in_flight(r.worker()).unwrap();
            assert!((1..=4).contains(&load), "load {load} while a guard holds one");
            r.release();
        });
        // A pinned booking of weight 2, released while the others run.
        let r = pool.reserve_worker(&1, 2).unwrap();
        let load = pool.in_flight(&1).unwrap();
        assert!((2..=4).contains(&load), "load {load} under a weight-2 guard");
        drop(r);
        for t in threads {
            t.join().unwrap();
        }
        assert_idle(&pool, [0, 1]);
    });
}
