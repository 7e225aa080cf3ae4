//! Model: affinity bookings race one another and a removal of the key's
//! home worker.
//!
//! Each booking is validated on the load its bound was checked on: no
//! booking is lost and the bound holds for what stays booked; and a pick
//! that starts after the removal returned never chooses the removed worker.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, model};
use workerpick::{Affinity, Pool, Request};

#[test]
fn concurrent_affinity_bookings_lose_nothing_and_keep_the_bound() {
    model("affinity_bound", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        pool.enable_affinity();
        let mode = Affinity::with_balance_factor(100).unwrap();
        let req = Request::new().key(7);
        let first = pool.reserve_with(&mode, &req).unwrap();
        let racer = {
            let pool = pool.clone();
            thread::spawn(move || {
                let r = pool.reserve_with(&mode, &Request::new().key(7)).unwrap();
                *r.worker()
            })
        };
        let mine = pool.reserve_with(&mode, &req).unwrap();
        let _theirs = racer.join().unwrap();
        // Two held (the racer's is given back): max ≤ ⌈2/2⌉ + 1.
        let max = pool.loads().iter().map(|&(_, l)| l).max().unwrap();
        assert!(max <= 2, "{max}");
        assert_eq!(
            pool.loads().iter().map(|&(_, l)| l).sum::<u32>(),
            2,
            "a booking was lost"
        );
        drop((first, mine));
        assert_idle(&pool, [0, 1]);
    });
}

#[test]
fn no_affinity_pick_after_a_removal_returned_chooses_the_removed_worker() {
    model("affinity_removal", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2]).unwrap());
        pool.enable_affinity();
        let mode = Affinity::unbounded();
        let req = Request::new().key(11);
        let home = pool.preview_with(&mode, &req).unwrap();
        let remover = {
            let pool = pool.clone();
            thread::spawn(move || pool.remove(&home).unwrap())
        };
        let r = pool.reserve_with(&mode, &req).unwrap();
        let during = *r.worker();
        remover.join().unwrap();
        let after = pool.select_with(&mode, &req).unwrap();
        assert_ne!(after, home, "picked after its removal returned");
        if during == home {
            // Booked before the removal was seen: its load stays counted.
            drop(r);
        } else {
            assert_eq!(during, after, "the key's next worker changed");
            drop(r);
        }
        pool.reclaim();
        assert_idle(&pool, [0, 1, 2]);
    });
}
