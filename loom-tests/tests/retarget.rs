//! Model 6: a retarget races the release of another reservation and a swap
//! that removes its target and inserts a worker that may reuse the storage.
//! The booking moves exactly once, onto the worker the guard then names.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{Error, Pool};

#[test]
fn retarget_moves_one_booking_under_releases_and_swaps() {
    model("retarget", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2]).unwrap());
        let other = pool.reserve_worker(&1, 1).unwrap();
        let mover = {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut r = pool.reserve_worker(&0, 1).unwrap();
                match r.retarget(&1) {
                    Ok(()) => {
                        assert_eq!(*r.worker(), 1, "retargeted onto another worker");
                        assert!(pool.in_flight(&1).unwrap() >= 1, "the moved booking is missing");
                    }
                    Err(e) => {
                        assert_eq!(e, Error::UnknownWorker);
                        assert_eq!(*r.worker(), 0, "a failed retarget moved the guard");
                    }
                }
                assert_eq!(pool.in_flight(&3).unwrap_or(0), 0, "charged 1's successor");
            })
        };
        let swapper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&1).unwrap();
                pool.insert(3).unwrap();
                assert_eq!(pool.in_flight(&3), Some(0), "3 inherited 1's load");
            })
        };
        drop(other);
        mover.join().unwrap();
        swapper.join().unwrap();
        assert_idle(&pool, 0..4);
        assert_storage_settled(&pool);
    });
}
