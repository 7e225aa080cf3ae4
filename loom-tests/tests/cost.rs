//! The cost model: the cost pick's CAS-validated booking, and phased load (a
//! reservation giving back parts of its charge) racing picks, the final
//! release and a removal.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model, spawn_pickers};
use workerpick::{CacheHits, Cost, Pool, Request, WorkerToken};

/// Two threads each book once with the cost mode over two idle workers,
/// worker 0 credited one block (α = 1: costs −1 and 0), releasing nothing.
/// Whatever the interleaving, the first booking to land had the loads
/// (0, 0) validated, so it is on worker 0; the second on a least cost then
/// (a tie at 0): worker 1 never takes both.
#[test]
fn cost_bookings_land_on_a_least_cost() {
    model("cost_exact", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 2, |pool, h, _| {
            let hits = CacheHits::build(pool, 1, |w| u32::from(*w == 0));
            let req = Request::new().cache_hits(&hits);
            core::mem::forget(h.reserve_with(&Cost::new(), &req).unwrap());
        });
        for t in threads {
            t.join().unwrap();
        }
        let (l0, l1) = (pool.in_flight(&0).unwrap(), pool.in_flight(&1).unwrap());
        assert_eq!(l0 + l1, 2);
        assert!(l0 >= 1, "a booking skipped the least cost: loads {l0}, {l1}");
        assert_eq!(pool.stats().fallbacks, 0);
    });
}

/// The sparse path (credit from a token, one worker of four): two threads
/// each book once, worker 3 credited two blocks (costs −2 and −1 after one
/// booking, below every uncredited 0, so no scan is made). Whatever the
/// interleaving, both land on 3: a booking whose compare-and-swap lost to the
/// other re-reads 3's load and still finds it cheapest.
#[test]
fn sparse_cost_bookings_validate_the_credited_load() {
    model("cost_sparse", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2, 3]).unwrap());
        let token = WorkerToken::of(&pool, &3).unwrap();
        let threads = spawn_pickers(&pool, 2, move |pool, h, _| {
            let mut hits = CacheHits::new();
            hits.rebuild_tokens(pool, 2, [(token, 2)]);
            let req = Request::new().cache_hits(&hits);
            core::mem::forget(h.reserve_with(&Cost::new(), &req).unwrap());
        });
        for t in threads {
            t.join().unwrap();
        }
        let loads: Vec<u32> = (0..4).map(|w| pool.in_flight(&w).unwrap()).collect();
        assert_eq!(loads, [0, 0, 0, 2]);
        assert_eq!(pool.stats().fallbacks, 0);
    });
}

/// A reservation of 3 gives back 2 (prefill done), then more than it holds,
/// then drops, while another thread books and releases through the cost
/// mode: each part leaves once, no count is ever seen below zero (it would
/// wrap past 4), and everything is back to 0 at the end.
#[test]
fn parts_race_picks_and_leave_exactly_once() {
    model("phased_release", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let mut r = pool.reserve_worker(&0, 3).unwrap();
        let picker = {
            let pool = pool.clone();
            thread::spawn(move || {
                let got = pool.reserve(&Cost::new()).unwrap();
                let seen = pool.in_flight(got.worker()).unwrap();
                assert!((1..=4).contains(&seen), "load {seen} on {}", got.worker());
            })
        };
        assert_eq!(r.release_part(2), 2);
        assert!(pool.in_flight(&0).unwrap() <= 2);
        assert_eq!(r.release_part(5), 1);
        drop(r);
        picker.join().unwrap();
        assert_idle(&pool, [0, 1]);
    });
}

/// A guard emptied by parts keeps its worker's storage: worker 0 is removed
/// and 2 inserted while the guard lives; 2 never takes 0's slot before the
/// guard drops, and 0's storage is free after.
#[test]
fn an_emptied_guard_keeps_its_slot() {
    model("phased_pin", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let mut r = pool.reserve_worker(&0, 1).unwrap();
        let churn = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&0).unwrap();
                pool.insert(2).unwrap();
                assert_eq!(pool.in_flight(&2), Some(0), "2 inherited someone's load");
            })
        };
        assert_eq!(r.release_part(1), 1);
        assert_eq!(*r.worker(), 0, "the emptied guard's slot was reused");
        drop(r);
        churn.join().unwrap();
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}
