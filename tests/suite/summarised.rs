//! The summarised least-loaded pick (pools with a slot limit of 1 024 or
//! more, the default among them; picks over 1 024 lanes or more): the same
//! answers as the flat scan — exact under reservation-only concurrency, ties
//! uniform across blocks, masks and holes honoured, right through membership
//! churn — and a 100 000-worker stress run.

use crate::common::stats::chi_square;
use std::collections::HashMap;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use workerpick::{DEFAULT_MAX_WORKERS, LeastLoaded, Pool, Request, Rng};

/// The default limit keeps the bounds.
const SUMMARISED: usize = DEFAULT_MAX_WORKERS;

fn pool_of(workers: u32, max: usize) -> Pool<u32> {
    let pool = Pool::with_max_workers(max.max(SUMMARISED)).unwrap();
    pool.replace(0..workers).unwrap();
    pool
}

/// The least load among the members, read from the pool.
fn true_min(pool: &Pool<u32>) -> u32 {
    pool.loads().iter().map(|&(_, l)| l).min().unwrap()
}

#[test]
fn threads_reserving_end_level() {
    const W: u32 = 10_000;
    const T: u32 = 4;
    const K: u32 = 5_000; // kT/W = 2 each
    let pool = pool_of(W, 1 << 16);
    let start = Barrier::new(T as usize);
    let held: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..T)
            .map(|_| {
                s.spawn(|| {
                    let mut h = pool.handle();
                    start.wait();
                    (0..K)
                        .map(|_| h.reserve(&LeastLoaded::new()).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(held.len(), (T * K) as usize);
    for (w, load) in pool.loads() {
        assert_eq!(load, K * T / W, "worker {w}");
    }
    assert_eq!(pool.stats().fallbacks, 0);
    drop(held);
    assert_eq!(true_min(&pool), 0);
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
}

/// Chi-square over the tied workers: 64 of 8192 at load 0, one in each block
/// of 128, the rest at 1; and over an idle pool's blocks.
#[test]
fn ties_are_uniform_across_blocks() {
    const W: u32 = 8192;
    let pool = pool_of(W, 1 << 16);
    let tied: Vec<u32> = (0..64).map(|i| i * 128 + (i * 37) % 128).collect();
    let _busy: Vec<_> = (0..W)
        .filter(|w| !tied.contains(w))
        .map(|w| pool.reserve_worker(&w, 1).unwrap())
        .collect();
    let mut h = pool.handle_with_rng(Rng::with_seed(19));
    let draws = 64 * 400;
    let mut hits: HashMap<u32, u32> = HashMap::new();
    for _ in 0..draws {
        *hits.entry(*h.select(&LeastLoaded::new()).unwrap()).or_default() += 1;
    }
    let mut seen: Vec<_> = hits.keys().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, tied, "picked outside the tied workers");
    // 63 degrees of freedom: the 99.9% quantile is about 103.4.
    let chi2 = chi_square(hits.values().copied(), draws);
    assert!(chi2 < 103.4, "chi-square {chi2:.1} over 64 ties");

    // Idle: every worker ties; count picks per block of 256 (32 blocks).
    let idle = pool_of(W, 1 << 16);
    let mut h = idle.handle_with_rng(Rng::with_seed(7));
    let mut per_block = [0u32; 32];
    let draws = 32 * 500;
    for _ in 0..draws {
        per_block[(*h.select(&LeastLoaded::new()).unwrap() / 256) as usize] += 1;
    }
    let chi2 = chi_square(per_block.iter().copied(), draws);
    // 31 degrees of freedom: the 99.9% quantile is about 61.1.
    assert!(chi2 < 61.1, "chi-square {chi2:.1} over 32 blocks: {per_block:?}");
}

#[test]
fn every_pick_is_at_the_minimum_while_loads_move() {
    let pool = pool_of(20_000, 1 << 16);
    let mut h = pool.handle_with_rng(Rng::with_seed(3));
    let mut rng = Rng::with_seed(4);
    // Everyone at 1, so that picks raise the bounds and releases must lower them.
    let mut held: Vec<_> = (0..20_000).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
    for round in 0..3_000 {
        let min = true_min(&pool);
        let r = h.reserve(&LeastLoaded::new()).unwrap();
        assert_eq!(pool.in_flight(r.worker()), Some(min + 1), "round {round}");
        held.push(r);
        // Release a random half of the time: lowers a block's bound.
        if rng.below(2) == 0 && !held.is_empty() {
            let i = rng.below(held.len() as u32) as usize;
            drop(held.swap_remove(i));
        }
    }
}

#[test]
fn a_worker_marked_healthy_again_is_picked_next() {
    // Marking a worker healthy lowers its counter by the penalty, as a release
    // does: the block's bound and the floor must come down with it, or picks
    // trust bounds raised while the worker carried the mark.
    let pool = pool_of(1_024, SUMMARISED);
    pool.set_healthy(&0, false).unwrap();
    let mut h = pool.handle_with_rng(Rng::with_seed(6));
    // Everyone else at 1: the picks raise the bounds (and the floor) to 1.
    let mut held: Vec<_> = (0..1_023).map(|_| h.reserve(&LeastLoaded).unwrap()).collect();
    assert_eq!(pool.in_flight(&0), Some(0));
    pool.set_healthy(&0, true).unwrap();
    let first = h.reserve(&LeastLoaded).unwrap();
    assert_eq!(
        *first.worker(),
        0,
        "the worker marked healthy again (load 0) was skipped for one at 1"
    );
    held.push(first);
    // Then every pick is at the true minimum again.
    for _ in 0..64 {
        let min = true_min(&pool);
        let r = h.reserve(&LeastLoaded).unwrap();
        assert_eq!(
            pool.in_flight(r.worker()),
            Some(min + 1),
            "a pick off the minimum"
        );
        held.push(r);
    }
}

#[test]
fn masked_picks_find_the_admitted_minimum_above_an_excluded_one() {
    const W: u32 = 8192;
    let pool = pool_of(W, 1 << 16);
    // The mask admits the even workers; the odd ones, left idle, hold the
    // least bound of every block. Even workers are at 2 but for 32 at 1,
    // spread over the blocks: the admitted minimum and its ties.
    let tied: Vec<u32> = (0..32).map(|i| i * 256 + 2 * ((i * 37) % 128)).collect();
    let _busy: Vec<_> = (0..W)
        .filter(|w| w % 2 == 0)
        .map(|w| {
            pool.reserve_worker(&w, if tied.contains(&w) { 1 } else { 2 })
                .unwrap()
        })
        .collect();
    let mask = pool.eligibility(|&w| w % 2 == 0);
    let req = Request::new().eligible(&mask);
    let mut h = pool.handle_with_rng(Rng::with_seed(23));
    let draws = 32 * 400;
    let mut hits: HashMap<u32, u32> = HashMap::new();
    for _ in 0..draws {
        *hits
            .entry(*h.select_with(&LeastLoaded::new(), &req).unwrap())
            .or_default() += 1;
    }
    let mut seen: Vec<_> = hits.keys().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, tied, "picked outside the admitted ties");
    // 31 degrees of freedom: the 99.9% quantile is about 61.1.
    let chi2 = chi_square(hits.values().copied(), draws);
    assert!(chi2 < 61.1, "chi-square {chi2:.1} over 32 admitted ties");
    // Reservations book the admitted minimum until it rises past 1.
    let held: Vec<_> = (0..32)
        .map(|_| h.reserve_with(&LeastLoaded::new(), &req).unwrap())
        .collect();
    assert!(tied.iter().all(|w| pool.in_flight(w) == Some(2)));
    drop(held);
}

#[test]
fn masked_picks_agree_with_the_reference_on_random_loads() {
    const W: u32 = 4096;
    let pool = pool_of(W, 1 << 16);
    let mut rng = Rng::with_seed(29);
    let mut h = pool.handle_with_rng(Rng::with_seed(31));
    let mut held = Vec::new();
    for round in 0..40 {
        // Loads 0..4 at random; a mask admitting a random share of the workers.
        held.clear();
        for w in 0..W {
            let load = rng.below(4);
            if load > 0 {
                held.push(pool.reserve_worker(&w, load).unwrap());
            }
        }
        let share = 1 + rng.below(4); // admits about 1/share of the workers
        let salt = rng.next_u64();
        let admitted = |w: &u32| (u64::from(*w) ^ salt).is_multiple_of(u64::from(share));
        let mask = pool.eligibility(admitted);
        let least = pool
            .loads()
            .iter()
            .filter(|(w, _)| admitted(w))
            .map(|&(_, l)| l)
            .min()
            .unwrap();
        let req = Request::new().eligible(&mask);
        for _ in 0..20 {
            let w = *h.select_with(&LeastLoaded::new(), &req).unwrap();
            assert!(admitted(&w), "round {round}: {w} is not admitted");
            assert_eq!(
                pool.in_flight(&w),
                Some(least),
                "round {round}: {w} is not at the least admitted load"
            );
        }
    }
}

#[test]
fn masks_and_holes_are_honoured() {
    let pool = pool_of(10_000, 1 << 16);
    // Holes: every 7th worker removed while loaded (draining), then freed.
    let draining: Vec<_> = (0..10_000)
        .step_by(7)
        .map(|w| pool.reserve_worker(&w, 1).unwrap())
        .collect();
    for w in (0..10_000).step_by(7) {
        pool.remove(&w).unwrap();
    }
    // Everyone else at 2, one worker at 1: the draining ones (at 1) must not
    // be picked, nor hold the pick away from the true minimum.
    let _busy: Vec<_> = (0..10_000u32)
        .filter(|w| w % 7 != 0)
        .map(|w| pool.reserve_worker(&w, if w == 5_001 { 1 } else { 2 }).unwrap())
        .collect();
    for _ in 0..50 {
        assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 5_001);
    }
    drop(draining);
    pool.reclaim();
    assert!(pool.stats().free_slots > 0);
    for _ in 0..50 {
        assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 5_001);
    }
    // A mask without 5001: the least among the rest (all at 2).
    let mask = pool.eligibility(|&w| w != 5_001 && w % 2 == 0);
    for _ in 0..20 {
        let w = pool
            .select_with(&LeastLoaded::new(), &Request::new().eligible(&mask))
            .unwrap();
        assert!(w != 5_001 && w.is_multiple_of(2) && !w.is_multiple_of(7));
        assert_eq!(pool.in_flight(&w), Some(2));
    }
    // New workers take the freed slots at load 0 and are picked first.
    pool.insert(50_000).unwrap();
    assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 50_000);
}

#[test]
fn churn_keeps_picks_exact() {
    let pool = pool_of(6_000, 1 << 16);
    let mut rng = Rng::with_seed(11);
    let mut h = pool.handle_with_rng(Rng::with_seed(12));
    let mut held = Vec::new();
    let mut next = 6_000u32;
    for round in 0..2_000 {
        match rng.below(8) {
            0 => {
                let victim = rng.below(next);
                let _ = pool.remove(&victim);
            }
            1 => {
                pool.insert(next).unwrap();
                next += 1;
            }
            2 if !held.is_empty() => {
                let i = rng.below(held.len() as u32) as usize;
                drop(held.swap_remove(i));
            }
            3 => {
                pool.reclaim();
            }
            _ => {
                let min = true_min(&pool);
                let r = h.reserve(&LeastLoaded::new()).unwrap();
                assert_eq!(pool.in_flight(r.worker()), Some(min + 1), "round {round}");
                held.push(r);
            }
        }
    }
}

/// Real threads on a 100 000-worker pool: reserves and releases for a bounded
/// time, then every count is back at zero and a pick is exact again.
#[test]
fn stress_on_a_hundred_thousand_workers() {
    const W: u32 = 100_000;
    let pool = pool_of(W, 1 << 17);
    let deadline = Instant::now() + Duration::from_millis(1500);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let pool = &pool;
            s.spawn(move || {
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                let mut held = Vec::new();
                while Instant::now() < deadline {
                    for _ in 0..64 {
                        held.push(h.reserve(&LeastLoaded::new()).unwrap());
                    }
                    held.truncate(32);
                }
            });
        }
    });
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
    let _one = pool.reserve_worker(&77, 1).unwrap();
    for _ in 0..20 {
        assert_ne!(pool.select(&LeastLoaded::new()).unwrap(), 77);
    }
    let busy: Vec<_> = (0..W)
        .filter(|&w| w != 99_999)
        .map(|w| pool.reserve_worker(&w, 1).unwrap())
        .collect();
    assert_eq!(pool.select(&LeastLoaded::new()).unwrap(), 99_999);
    drop(busy);
}
