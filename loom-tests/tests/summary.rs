//! Model 8: the per-block lower bounds of the summarised least-loaded pick.
//!
//! Under loom a pool of 8 slots keeps bounds over blocks of 2 lanes, and an
//! unmasked pick over 8 lanes reads them (`bounds::loads`, `bounds::least`).
//! Three races:
//!
//! - `summary_race`: a release lowering a block's bound races a pick raising
//!   it. A pick that starts after the release returned must see the released
//!   worker (its bound never ends above the block's least counter). With the
//!   raise as a plain store (`--cfg workerpick_plain_raise`) this fails: the
//!   store overwrites the lowered bound.
//! - `summary_bookings`: least-loaded bookings racing each other across
//!   blocks, no release: the counts end exactly level.
//! - `summary_growth`: the pool grows (a new slot in the last block, whose
//!   unallocated lane is parked at `u32::MAX`) while a pick raises that
//!   block's bound: the new worker, at load 0, is the next pick.
//! - `summary_floor_growth`: the pool grows past the blocks a pick of the old
//!   snapshot reads while that pick raises the floor (the bound above the
//!   blocks' bounds) over them: the new worker, at load 0 in a new block, is
//!   the next pick. This fails when a pick trusts a floor raised over fewer
//!   blocks than its own (`Floor::covers` always true): the floor says 1 and
//!   the try takes a worker at 1.
//! - `summary_arming`: the pool's first summarised pick, which arms the
//!   bounds (until then a release reads one flag and stops), races a
//!   release. Once both are done, a pick sees the released worker. This
//!   fails when the pick does not arm before it raises (`Counters::bounds_for_pick`
//!   returning the summary unarmed): the release skips the lowering its
//!   bound needs.
//! - `summary_unmark`: marking a worker healthy again (its counter drops by
//!   the health penalty) races a pick that may raise the bounds; a pick after
//!   both must see the worker. This fails when the un-marking does not lower
//!   the block's bound and the floor as a release does: they stay at 1 and
//!   the pick takes a worker at 1.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{model, spawn_pickers};
use workerpick::{LeastLoaded, Pool};

#[test]
fn summary_race() {
    model("summary_race", || {
        // A std `Arc`: owned reservations hold one (loom need not see it).
        let pool = std::sync::Arc::new(Pool::from_workers(0u32..8).unwrap());
        // Everyone at 2, then a pick raises every bound from 0 to 2.
        let lowered = pool.owned_handle().reserve_worker(&0, 2).unwrap();
        let mut held: Vec<_> = (1..8).map(|w| pool.reserve_worker(&w, 2).unwrap()).collect();
        pool.select(&LeastLoaded::new()).unwrap();
        // Workers 0-3 at 3, 4-7 at 4: the bounds (2) are stale.
        held.extend((0..8).map(|w| pool.reserve_worker(&w, if w < 4 { 1 } else { 2 }).unwrap()));
        let releaser = {
            let pool = pool.clone();
            thread::spawn(move || {
                drop(lowered); // worker 0 at 1 (2 of its 3): the only one below 3
                assert_eq!(
                    pool.select(&LeastLoaded::new()).unwrap(),
                    0,
                    "a pick after the release missed it: a raise overwrote the lowered bound"
                );
            })
        };
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        releaser.join().unwrap();
        raiser.join().unwrap();
        assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 0);
        assert_eq!(pool.in_flight(&0), Some(1));
        drop(held);
    });
}

#[test]
fn summary_bookings() {
    model("summary_bookings", || {
        let pool = Arc::new(Pool::from_workers(0u32..8).unwrap());
        // Workers 1-7 at 1: bounds raised to 1 but worker 0's block's.
        let held: Vec<_> = (1..8).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
        pool.select(&LeastLoaded::new()).unwrap();
        let threads = spawn_pickers(&pool, 2, |_, h, _| {
            // Kept booked: the bookings under test are the only load that moves.
            core::mem::forget(h.reserve(&LeastLoaded::new()).unwrap());
        });
        for t in threads {
            t.join().unwrap();
        }
        // Two bookings: worker 0 (the minimum) first, then one at 1 -> 2 or
        // worker 0 again (tied at 1): never one at 2 while one is at 1 was skipped.
        let loads: Vec<u32> = (0..8).map(|w| pool.in_flight(&w).unwrap()).collect();
        assert_eq!(loads.iter().sum::<u32>(), 9, "{loads:?}");
        assert!(
            loads.iter().all(|&l| l <= 2) && loads.iter().filter(|&&l| l == 2).count() == 1,
            "{loads:?}"
        );
        drop(held);
    });
}

#[test]
fn summary_growth() {
    model("summary_growth", || {
        // Slots 0-5; worker 0 removed while loaded (its slot drains), so the
        // set is not dense and the scan covers 8 lanes: 6 and 7 unallocated.
        let pool = Arc::new(Pool::from_workers(0u32..6).unwrap());
        let draining = pool.reserve_worker(&0, 1).unwrap();
        pool.remove(&0).unwrap();
        let held: Vec<_> = (1..6).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        // A new worker takes slot 6, in the block whose bound the raiser may
        // be lifting over the parked lanes.
        pool.insert(10).unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            10,
            "the new worker was hidden"
        );
        raiser.join().unwrap();
        assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 10);
        drop((held, draining));
    });
}

#[test]
fn summary_floor_growth() {
    model("summary_floor_growth", || {
        // Room for 16 slots (8 blocks of 2 under loom); 8 workers at 1, so
        // the old snapshot's picks read 4 blocks.
        let pool = Arc::new(Pool::with_max_workers(16).unwrap());
        pool.replace(0u32..8).unwrap();
        let held: Vec<_> = (0..8).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        // Slot 8, a block no pick of the old snapshot reads, at load 0.
        pool.insert(8).unwrap();
        raiser.join().unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            8,
            "the new worker was hidden by a floor raised over fewer blocks"
        );
        drop(held);
    });
}

#[test]
fn summary_arming() {
    model("summary_arming", || {
        // No summarised pick yet: the bounds are unarmed (and all 0).
        let pool = std::sync::Arc::new(Pool::from_workers(0u32..8).unwrap());
        // Everyone at 2; worker 0's load is the one released below.
        let lowered = pool.owned_handle().reserve_worker(&0, 2).unwrap();
        let held: Vec<_> = (1..8).map(|w| pool.reserve_worker(&w, 2).unwrap()).collect();
        // Worker 0 to 0, the only one below 2.
        let releaser = thread::spawn(move || drop(lowered));
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                // The first summarised pick: arms the bounds, then may raise
                // worker 0's from 0 to 2.
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        releaser.join().unwrap();
        raiser.join().unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            0,
            "the released worker is hidden: the release skipped a raised bound"
        );
        drop(held);
    });
}

#[test]
fn summary_unmark() {
    model("summary_unmark", || {
        let pool = Arc::new(Pool::from_workers(0u32..8).unwrap());
        // Worker 0 unhealthy, the others at 1: a pick raises every bound
        // (and the floor) to 1, worker 0's block's over its penalty.
        pool.set_healthy(&0, false).unwrap();
        let held: Vec<_> = (1..8).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
        assert_ne!(pool.select(&LeastLoaded::new()).unwrap(), 0);
        let healer = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.set_healthy(&0, true).unwrap();
            })
        };
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        healer.join().unwrap();
        raiser.join().unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            0,
            "a pick after the un-marking missed the worker: its bound stayed raised"
        );
        drop(held);
    });
}
