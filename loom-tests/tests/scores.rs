//! Model 9: the per-block lower bounds on weighted scores of the weighted
//! summarised least-loaded pick (`bounds::scores`, `bounds::least_scored`).
//!
//! Under loom a pool of 8 slots keeps bounds over blocks of 2 lanes, and an
//! unmasked least-loaded pick of weight 1 over 8 weighted lanes reads them.
//! Workers 0-3 have capacity 2, workers 4-7 capacity 1: factors 1 and 2.
//!
//! - `scores_race`: a release lowering a block's bound on scores races a
//!   pick raising it (the stale bound from its old value). A pick that starts
//!   after the release returned must see the released worker. With the raise
//!   as a plain store (`--cfg workerpick_plain_raise`) this fails: the store
//!   overwrites the lowered bound. (A release that does not lower the bound,
//!   its worker's score still at or above it, leaves the window that
//!   `docs::design` describes: until the raiser's second look, a raise based
//!   on a scan that missed the release may stand above it.)
//! - `scores_second_look`: the same race, but the release leaves the bound
//!   alone (its worker still scores at or above it) while the raiser's scan
//!   may miss it. Once both are done, a pick sees the released worker: the
//!   raiser's second look repairs the raise. Without the second look this
//!   fails.
//! - `scores_version_race`: a capacity change (new factors, a new version of
//!   the bounds) races a pick of the old snapshot raising bounds under the
//!   old factors: a pick after the change is exact under the new ones.
#![cfg(loom)]

use loom::thread;
use loom_tests::model;
use workerpick::{LeastLoaded, OwnedReservation, Pool, Reservation};

/// Workers 0-3 at capacity 2, 4-7 at 1 (factors 1 and 2).
fn weighted_pool() -> std::sync::Arc<Pool<u32>> {
    let pool = std::sync::Arc::new(Pool::from_workers(0u32..8).unwrap());
    for w in 0..4 {
        pool.set_capacity(&w, 2).unwrap();
    }
    pool
}

/// Stale bounds: workers 0-3 at 3 and 4-7 at 1 all score 4 ((load + 1) · L /
/// c), and a pick raises every bound from unknown to 4; then workers 0-3 at 5
/// and 4-7 at 2, all scoring 6. `lowered` (held apart) is `w0` of worker 0's
/// load; the rest is returned held.
fn stale_bounds(
    pool: &std::sync::Arc<Pool<u32>>,
    w0: u32,
) -> (OwnedReservation<u32>, Vec<Reservation<'_, u32>>) {
    let lowered = pool.owned_handle().reserve_worker(&0, w0).unwrap();
    let first = |w: u32| {
        if w == 0 {
            3 - w0
        } else if w < 4 {
            3
        } else {
            1
        }
    };
    let mut held: Vec<_> = (0..8)
        .filter(|&w| first(w) > 0)
        .map(|w| pool.reserve_worker(&w, first(w)).unwrap())
        .collect();
    pool.select(&LeastLoaded::new()).unwrap();
    held.extend((0..8).map(|w| pool.reserve_worker(&w, if w < 4 { 2 } else { 1 }).unwrap()));
    (lowered, held)
}

#[test]
fn scores_race() {
    model("scores_race", || {
        let pool = weighted_pool();
        let (lowered, held) = stale_bounds(&pool, 3);
        let releaser = {
            let pool = pool.clone();
            thread::spawn(move || {
                // Worker 0 at 2: it scores 3, below its block's bound (so the
                // release lowers it) and the only one below 6.
                drop(lowered);
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
        drop(held);
    });
}

#[test]
fn scores_second_look() {
    model("scores_second_look", || {
        let pool = weighted_pool();
        let (lowered, held) = stale_bounds(&pool, 1);
        let releaser = {
            // Worker 0 at 4: it scores 5, above its block's bound (4), so the
            // release stores nothing; the only one below 6.
            thread::spawn(move || drop(lowered))
        };
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        releaser.join().unwrap();
        raiser.join().unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            0,
            "a raise based on a scan that missed the release stood"
        );
        drop(held);
    });
}

#[test]
fn scores_version_race() {
    model("scores_version_race", || {
        let pool = weighted_pool();
        // Workers 0-3 at 5 (score 6), worker 0 at 4 (score 5), 4-7 at 2
        // (score 6); no bound raised yet.
        let held: Vec<_> = (0..8)
            .map(|w| {
                pool.reserve_worker(&w, if w < 4 { 5 - u32::from(w == 0) } else { 2 })
                    .unwrap()
            })
            .collect();
        let raiser = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.select(&LeastLoaded::new()).unwrap();
            })
        };
        // Worker 3 to capacity 4: L = 4, and it alone scores least,
        // (5 + 1) · 1 = 6 against worker 0's (4 + 1) · 2 = 10.
        pool.set_capacity(&3, 4).unwrap();
        assert_eq!(
            pool.select(&LeastLoaded::new()).unwrap(),
            3,
            "a pick after the change trusted a bound of the old factors"
        );
        raiser.join().unwrap();
        assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 3);
        drop(held);
    });
}
