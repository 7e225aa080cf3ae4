//! The weighted summarised least-loaded pick (weighted pools of 1 024 lanes or
//! more, requests of weight 1): per-block bounds on `(load + 1) / capacity`
//! give the flat weighted scan's answers — exact while loads and capacities
//! move, a release behind a raised bound picked next, ties uniform across
//! blocks — and real threads end level.

use crate::common::stats::chi_square;
use std::collections::HashMap;
use workerpick::{LeastLoaded, Pool, Request, Rng, WorkerInfo};

/// 4 096 slots: bounds over blocks of 64 lanes.
const MAX: usize = 4096;

/// `workers` workers of capacities `capacity(w)`.
fn pool_of(workers: u32, capacity: impl Fn(u32) -> u32) -> Pool<u32> {
    let pool = Pool::with_max_workers(MAX).unwrap();
    for w in 0..workers {
        pool.insert_with(w, WorkerInfo::new().capacity(capacity(w)))
            .unwrap();
    }
    pool
}

/// Capacities 4:2:1:1 repeated.
fn mixed(w: u32) -> u32 {
    [4, 2, 1, 1][w as usize % 4]
}

/// `(load + r) / capacity` of every member, as fractions.
fn ratios(pool: &Pool<u32>, r: u32) -> HashMap<u32, (u64, u64)> {
    pool.loads()
        .into_iter()
        .map(|(w, load)| {
            let c = pool.info(&w).unwrap().capacity_weight();
            (w, (u64::from(load) + u64::from(r), u64::from(c)))
        })
        .collect()
}

fn below(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 * b.1 < b.0 * a.1
}

/// Panics unless `got` holds the least ratio of `before`.
fn assert_least(before: &HashMap<u32, (u64, u64)>, got: u32, what: &str) {
    let least = before
        .values()
        .copied()
        .reduce(|a, b| if below(b, a) { b } else { a })
        .unwrap();
    assert!(
        !below(least, before[&got]),
        "{what}: chose {got} at {:?}, the least is {least:?}",
        before[&got]
    );
}

#[test]
fn every_pick_is_at_the_least_ratio_while_loads_and_capacities_move() {
    let pool = pool_of(2048, mixed);
    let mut h = pool.handle_with_rng(Rng::with_seed(3));
    let mut rng = Rng::with_seed(4);
    // Every worker loaded in proportion to its capacity, so that picks raise
    // the bounds and releases must lower them.
    let mut held: Vec<_> = (0..2048)
        .map(|w| pool.reserve_worker(&w, 2 * mixed(w)).unwrap())
        .collect();
    for round in 0..4_000 {
        let before = ratios(&pool, 1);
        let r = h.reserve(&LeastLoaded::new()).unwrap();
        assert_least(&before, *r.worker(), &format!("round {round}"));
        held.push(r);
        if rng.below(2) == 0 {
            let i = rng.below(held.len() as u32) as usize;
            drop(held.swap_remove(i));
        }
        // Now and then a capacity changes: a new version of the factors.
        if round % 500 == 499 {
            let w = rng.below(2048);
            pool.set_capacity(&w, 1 + rng.below(6)).unwrap();
        }
    }
    // Heavier requests take the flat path: exact too.
    let before = ratios(&pool, 3);
    let r = h
        .reserve_with(&LeastLoaded::new(), &Request::new().weight(3))
        .unwrap();
    assert_least(&before, *r.worker(), "weight 3");
}

/// Everyone at twice its capacity; the first picks raise every bound. Then
/// one worker in each of several blocks is released: each is, alone, at the
/// least ratio behind a raised bound, and the next pick must find it.
#[test]
fn a_release_behind_a_raised_bound_is_picked_next() {
    let pool = pool_of(2048, mixed);
    let mut held: HashMap<u32, _> = (0..2048)
        .map(|w| (w, pool.reserve_worker(&w, 2 * mixed(w)).unwrap()))
        .collect();
    let ll = LeastLoaded::new();
    for _ in 0..3 {
        pool.select(&ll).unwrap();
    }
    for w in [1500, 7, 900, 2047, 64] {
        // Back to 0 (capacity 1 or more): (0 + 1) / c < (2c + 1) / c everywhere.
        drop(held.remove(&w));
        assert_eq!(pool.select(&ll).unwrap(), w, "released {w}");
        held.insert(w, pool.reserve_worker(&w, 2 * mixed(w)).unwrap());
        pool.select(&ll).unwrap();
    }
}

/// Ties in few blocks (16 workers of capacity 2, one per block, among 2 048
/// of capacity 1, idle: they alone score least) and in every block (an idle
/// pool of 4:2:1:1, where the capacity-4 workers tie): picks uniform over them.
#[test]
fn ties_are_uniform_across_blocks() {
    let tied: Vec<u32> = (0..16).map(|i| i * 128 + (i * 37) % 64).collect();
    let pool = pool_of(2048, |w| if tied.contains(&w) { 2 } else { 1 });
    let mut h = pool.handle_with_rng(Rng::with_seed(19));
    let draws = 16 * 500;
    let mut hits: HashMap<u32, u32> = HashMap::new();
    for _ in 0..draws {
        *hits.entry(*h.select(&LeastLoaded::new()).unwrap()).or_default() += 1;
    }
    let mut seen: Vec<_> = hits.keys().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, tied, "picked outside the tied workers");
    // 15 degrees of freedom: the 99.9% quantile is about 37.7.
    let chi2 = chi_square(hits.values().copied(), draws);
    assert!(chi2 < 37.7, "chi-square {chi2:.1} over 16 ties");

    let idle = pool_of(2048, mixed);
    let mut h = idle.handle_with_rng(Rng::with_seed(7));
    let mut per_block = [0u32; 32];
    let draws = 32 * 500;
    for _ in 0..draws {
        let w = *h.select(&LeastLoaded::new()).unwrap();
        assert_eq!(mixed(w), 4, "picked {w}, of capacity {}", mixed(w));
        per_block[(w / 64) as usize] += 1;
    }
    // 31 degrees of freedom: the 99.9% quantile is about 61.1.
    let chi2 = chi_square(per_block.iter().copied(), draws);
    assert!(chi2 < 61.1, "chi-square {chi2:.1} over 32 blocks: {per_block:?}");
}

/// Real threads reserving and releasing on a weighted pool while a writer
/// changes capacities: they end by themselves, every count is back at zero,
/// and a pick is exact again.
#[test]
fn threads_and_capacity_changes_end_level() {
    let pool = pool_of(2048, mixed);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let pool = &pool;
            s.spawn(move || {
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                let mut held = Vec::new();
                for i in 0..20_000u32 {
                    held.push(h.reserve(&LeastLoaded::new()).unwrap());
                    if i % 3 != 0 || held.len() > 512 {
                        let at = (i as usize * 7919) % held.len();
                        drop(held.swap_remove(at));
                    }
                }
            });
        }
        let pool = &pool;
        s.spawn(move || {
            for i in 0..200u32 {
                pool.set_capacity(&(i * 97 % 2048), 1 + i % 5).unwrap();
            }
        });
    });
    assert!(pool.loads().iter().all(|&(_, l)| l == 0), "load left");
    let before = ratios(&pool, 1);
    let got = pool.select(&LeastLoaded::new()).unwrap();
    assert_least(&before, got, "after the threads");
}
