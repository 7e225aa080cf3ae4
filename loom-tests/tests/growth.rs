//! Model 4: the counter storage grows (a new chunk: under loom a chunk holds 4
//! slots) while reservations on the old chunk are live; no decrement is lost.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{LeastLoaded, Pool};

#[test]
fn growing_storage_loses_no_decrement() {
    model("growth", || {
        // Four workers fill the first chunk exactly.
        let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
        let held = pool.reserve_worker(&1, 1).unwrap();
        let user = {
            let pool = pool.clone();
            thread::spawn(move || {
                let r = pool.reserve_worker(&2, 1).unwrap();
                drop(r);
            })
        };
        let grower = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.insert(4).unwrap(); // allocates the second chunk
                let r = pool.reserve(&LeastLoaded::new()).unwrap();
                assert!(pool.in_flight(r.worker()).unwrap() >= 1);
            })
        };
        drop(held);
        user.join().unwrap();
        grower.join().unwrap();
        assert_idle(&pool, 0..5);
        assert_storage_settled(&pool);
        assert_eq!(pool.stats().capacity, 5);
    });
}
