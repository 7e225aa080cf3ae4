//! Model 4: storage grows while reservations are live; no decrement is lost.
//!
//! The in-flight counters are one array allocated for the pool's worker limit
//! (it never grows or moves); the key and pin storage is allocated in chunks as
//! the set grows (under loom a chunk holds 2 slots). Here worker 4 joins, which
//! allocates a new chunk, while a charged and an uncharged (pinned) guard on
//! the existing chunks are released: every count and pin comes back to 0, and
//! a worker removed afterwards is reclaimed (which needs its pins at 0).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{LeastLoaded, Pool};

#[test]
fn growing_storage_loses_no_decrement() {
    model("growth", || {
        // Four workers fill the first two chunks exactly.
        let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
        let charged = pool.reserve_worker(&1, 1).unwrap();
        let pinned = pool.reserve_worker(&2, 0).unwrap();
        let user = {
            let pool = pool.clone();
            thread::spawn(move || drop(pool.reserve_worker(&3, 1).unwrap()))
        };
        let grower = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.insert(4).unwrap(); // allocates the third chunk
                let r = pool.reserve(&LeastLoaded::new()).unwrap();
                assert!(pool.in_flight(r.worker()).unwrap() >= 1);
            })
        };
        drop(charged);
        drop(pinned);
        user.join().unwrap();
        grower.join().unwrap();
        assert_idle(&pool, 0..5);
        assert_eq!(pool.stats().capacity, 5);
        // Removed workers are reclaimed only with no pin and no load left.
        for w in 1..4 {
            pool.remove(&w).unwrap();
        }
        assert_storage_settled(&pool);
    });
}
