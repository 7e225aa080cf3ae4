//! Data-parallel ranks: a worker's ranks are slots of their own, freed only
//! together. A booking on one rank, made by a pick that loaded a snapshot
//! before the worker's removal, lands on that worker's rank and on no other
//! worker's slot, and the worker's slots are reused only once every rank is
//! quiet.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{Error, LeastLoaded, Pool, Request, WorkerInfo};

/// Worker 0 (ranks 0 and 1) and worker 1.
fn pool() -> Arc<Pool<u32>> {
    let pool = Pool::from_workers([1u32]).unwrap();
    pool.insert_with(0, WorkerInfo::new().ranks(2)).unwrap();
    Arc::new(pool)
}

/// A least-loaded pick masked to worker 0, whose rank 0 the main thread
/// holds, books rank 1 while one thread removes 0 and another inserts 2 (two
/// ranks, which may take 0's slots once they are free). The booking lands on
/// 0's rank 1 or the pick finds no eligible worker; 2 never inherits load.
#[test]
fn a_stale_rank_booking_never_charges_the_slots_next_owner() {
    model("ranks_stale_pick", || {
        let pool = pool();
        let only_0 = pool.eligibility(|w| *w == 0);
        let held = pool.reserve_rank(&0, 0, 1).unwrap();
        let remover = {
            let pool = pool.clone();
            thread::spawn(move || pool.remove(&0).unwrap())
        };
        let inserter = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.insert_with(2, WorkerInfo::new().ranks(2)).unwrap();
                assert_eq!(pool.in_flight(&2), Some(0), "2 inherited someone's load");
            })
        };
        let req = Request::new().eligible(&only_0);
        match pool.reserve_with(&LeastLoaded::new(), &req) {
            Ok(r) => {
                assert_eq!(
                    (*r.worker(), r.rank()),
                    (0, 1),
                    "booked outside the mask or on a held rank"
                );
                assert_eq!(
                    pool.in_flight_rank(&0, 1),
                    Some(1),
                    "the booking on 0's rank 1 is gone"
                );
                assert_eq!(pool.in_flight(&2).unwrap_or(0), 0, "charged 0's successor");
            }
            Err(e) => assert_eq!(e, Error::NoEligibleWorker),
        }
        assert_eq!((*held.worker(), held.rank()), (0, 0));
        drop(held);
        remover.join().unwrap();
        inserter.join().unwrap();
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}

/// Worker 0 is removed while a charged guard on its rank 1 (one thread)
/// and a pin on its rank 0 (the main thread) hold it, and 2 (two ranks) is
/// inserted: no slot of 0 goes to 2 while either guard lives (each guard
/// still names 0 and its rank), and 0's slots are free after both.
#[test]
fn a_workers_slots_are_reused_only_after_its_last_rank_is_released() {
    model("ranks_reuse_after_release", || {
        let pool = pool();
        let holder = {
            let pool = pool.clone();
            thread::spawn(move || {
                if let Ok(r) = pool.reserve_rank(&0, 1, 1) {
                    assert_eq!(
                        pool.in_flight_rank(&0, 1),
                        Some(1),
                        "a removed rank lost its load"
                    );
                    // The guard's last reads of its slot's key and rank: only
                    // the release orders them before a reuse.
                    assert_eq!((*r.worker(), r.rank()), (0, 1));
                }
            })
        };
        let swapper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&0).unwrap();
                pool.insert_with(2, WorkerInfo::new().ranks(2)).unwrap();
                assert_eq!(pool.in_flight(&2), Some(0), "2 inherited 0's load");
            })
        };
        if let Ok(pin) = pool.reserve_rank(&0, 0, 0) {
            assert_eq!(
                (*pin.worker(), pin.rank()),
                (0, 0),
                "a pinned guard changed owner"
            );
        }
        holder.join().unwrap();
        swapper.join().unwrap();
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}
