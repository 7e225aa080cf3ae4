//! Heterogeneous fleets: capacity weights in every mode, health, draining and
//! slow start.

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use workerpick::{
    DeviceAware, DeviceKind, Error, LeastLoaded, Pool, PowerOfTwo, Random, Request, Rng, RoundRobin,
    Selector, SlowStart, WorkerInfo,
};

/// A pool of workers 0..n with the given capacities.
fn weighted(capacities: &[u32]) -> Pool<u32> {
    let pool = Pool::new();
    for (i, &c) in capacities.iter().enumerate() {
        pool.insert_with(i as u32, WorkerInfo::new().capacity(c)).unwrap();
    }
    pool
}

fn shares(pool: &Pool<u32>, selector: &(impl Selector + ?Sized), picks: u32) -> HashMap<u32, u32> {
    // Seeded: a run is repeatable, and a failure is a fact about the code.
    let mut h = pool.handle_with_rng(Rng::with_seed(0x5eed));
    let mut got = HashMap::new();
    for _ in 0..picks {
        *got.entry(*h.select(selector).unwrap()).or_insert(0) += 1;
    }
    got
}

fn assert_proportional(got: &HashMap<u32, u32>, capacities: &[u32], picks: u32, tolerance: f64) {
    let total: u32 = capacities.iter().sum();
    for (i, &c) in capacities.iter().enumerate() {
        let share = f64::from(got.get(&(i as u32)).copied().unwrap_or(0)) / f64::from(picks);
        let want = f64::from(c) / f64::from(total);
        assert!(
            (share - want).abs() <= tolerance * want,
            "worker {i}: share {share:.4}, capacity share {want:.4} ({got:?})"
        );
    }
}

#[test]
fn random_picks_in_proportion_to_capacity() {
    // The smallest share below is 1/27: over n picks its count has a relative
    // standard deviation of sqrt(26 / n), 0.51 % at 10^6, so a 1 % bound there
    // fails about one run in twenty even when the draw is exact. At 4 * 10^6
    // picks 1 % is 3.9 standard deviations.
    let caps = [4, 2, 1, 1];
    let picks = 4_000_000;
    assert_proportional(&shares(&weighted(&caps), &Random, picks), &caps, picks, 0.01);
    let caps = [7, 1, 3, 13, 1, 2];
    assert_proportional(&shares(&weighted(&caps), &Random, picks), &caps, picks, 0.01);
}

#[test]
fn round_robin_is_proportional_and_smooth() {
    for caps in [vec![4, 2, 1, 1], vec![5, 3, 3, 1, 2], vec![1, 1000, 7]] {
        let pool = weighted(&caps);
        let rr = RoundRobin::new();
        let mut h = pool.handle();
        let picks = 1_000_000;
        let seq: Vec<u32> = (0..picks).map(|_| *h.select(&rr).unwrap()).collect();
        let mut got = HashMap::new();
        for &w in &seq {
            *got.entry(w).or_insert(0u32) += 1;
        }
        assert_proportional(&got, &caps, picks, 0.01);
        let min = *caps.iter().min().unwrap();
        for (i, &c) in caps.iter().enumerate() {
            let bound = c.div_ceil(min) as usize;
            let longest = seq
                .chunk_by(|a, b| a == b)
                .filter(|run| run[0] == i as u32)
                .map(<[u32]>::len)
                .max()
                .unwrap_or(0);
            assert!(
                longest <= bound,
                "{caps:?}: worker {i} picked {longest} times in a row (bound {bound})"
            );
        }
    }
}

#[test]
fn equal_capacities_pick_exactly_as_unweighted() {
    let plain = Pool::from_workers(0..16u32).unwrap();
    let equal = weighted(&[3; 16]);
    for selector in [&Random as &dyn Selector, &PowerOfTwo, &LeastLoaded] {
        let mut a = plain.handle_with_rng(Rng::with_seed(9));
        let mut b = equal.handle_with_rng(Rng::with_seed(9));
        let held_a: Vec<_> = (0..200).map(|_| *a.reserve(selector).unwrap().worker()).collect();
        let held_b: Vec<_> = (0..200).map(|_| *b.reserve(selector).unwrap().worker()).collect();
        assert_eq!(held_a, held_b, "{}", selector.name());
    }
}

#[test]
fn least_loaded_fills_capacity_exactly() {
    // Held reservations: the least (load + 1) / capacity each time, so the
    // loads end exactly proportional to capacity.
    let caps = [4, 2, 1, 1];
    let pool = weighted(&caps);
    let held: Vec<_> = (0..800)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    let loads: Vec<u32> = (0..4).map(|w| pool.in_flight(&w).unwrap()).collect();
    assert_eq!(loads, [400, 200, 100, 100]);
    drop(held);
    // An idle fleet: the heaviest worker first ((0 + 1) / 4 is the least).
    assert_eq!(*pool.reserve(&LeastLoaded::new()).unwrap().worker(), 0);
}

#[test]
fn least_loaded_fills_a_large_mixed_fleet_exactly() {
    // 300 workers of capacities 1..=6: the vector scan's path, with a drained
    // worker and a mask in the lanes, against the exact rule's outcome.
    let caps: Vec<u32> = (0..300).map(|i| i % 6 + 1).collect();
    let pool = weighted(&caps);
    pool.drain(&7).unwrap();
    let mask = pool.eligibility(|w| w % 5 != 0);
    let req = Request::new().eligible(&mask);
    fn fill<'p>(
        pool: &'p Pool<u32>,
        caps: &[u32],
        req: &Request<'_>,
        keep: impl Fn(u32) -> bool,
        per: u32,
    ) -> Vec<workerpick::Reservation<'p, u32>> {
        let total: u32 = (0..300)
            .filter(|&w| keep(w))
            .map(|w| caps[w as usize] * per)
            .sum();
        (0..total)
            .map(|_| pool.reserve_with(&LeastLoaded::new(), req).unwrap())
            .collect()
    }
    let unmasked = |w: u32| w != 7;
    let held = fill(&pool, &caps, &Request::new(), unmasked, 3);
    for w in 0..300u32 {
        let want = if unmasked(w) { caps[w as usize] * 3 } else { 0 };
        assert_eq!(pool.in_flight(&w), Some(want), "worker {w}");
    }
    let masked = |w: u32| w != 7 && !w.is_multiple_of(5);
    let more = fill(&pool, &caps, &req, masked, 2);
    for w in 0..300u32 {
        let want = caps[w as usize] * (3 * u32::from(unmasked(w)) + 2 * u32::from(masked(w)));
        assert_eq!(pool.in_flight(&w), Some(want), "worker {w}");
    }
    drop((held, more));
}

#[test]
fn least_loaded_is_exact_under_threads() {
    let caps = [4, 2, 1, 1, 2, 6];
    let pool = Arc::new(weighted(&caps));
    let threads = 4;
    let per = 400; // 1600 in all over 16 units of capacity: 100 per unit
    let barrier = Arc::new(Barrier::new(threads));
    let held: Vec<_> = (0..threads)
        .map(|_| {
            let (pool, barrier) = (pool.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut h = pool.owned_handle();
                barrier.wait();
                (0..per)
                    .map(|_| h.reserve(&LeastLoaded::new()).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    for (w, &c) in caps.iter().enumerate() {
        assert_eq!(pool.in_flight(&(w as u32)), Some(100 * c), "worker {w}");
    }
    assert_eq!(pool.stats().fallbacks, 0);
    drop(held);
}

#[test]
fn power_of_two_weighs_load_by_capacity() {
    let pool = weighted(&[3, 1]);
    let _a = pool.reserve_worker(&0, 5).unwrap(); // (5 + 1) / 3 = 2
    let _b = pool.reserve_worker(&1, 2).unwrap(); // (2 + 1) / 1 = 3
    assert_eq!(*pool.reserve(&PowerOfTwo::new()).unwrap().worker(), 0);
    // And weighted by the request: r = 10 gives 15/3 = 5 against 12 / 1.
    let r = pool
        .reserve_with(&PowerOfTwo::new(), &Request::new().weight(10))
        .unwrap();
    assert_eq!(*r.worker(), 0);
}

/// Held reservations pile up in proportion to capacity: the big worker is
/// drawn in proportion to its capacity, so it is in enough pairs to take its
/// share (uniform draws put a capacity-8 worker of 8:1:1:1 in only half the
/// pairs, which caps it at half the load, not its 8/11).
#[test]
fn power_of_two_fills_in_proportion_to_capacity() {
    let caps = [8, 1, 1, 1];
    let pool = weighted(&caps);
    let mut h = pool.handle_with_rng(Rng::with_seed(11));
    let held: Vec<_> = (0..11_000)
        .map(|_| h.reserve(&PowerOfTwo::new()).unwrap())
        .collect();
    for (i, &c) in caps.iter().enumerate() {
        let load = f64::from(pool.in_flight(&(i as u32)).unwrap());
        let want = 1000.0 * f64::from(c);
        assert!((load - want).abs() <= 0.02 * want, "worker {i}: {load} of {want}");
    }
    drop(held);
}

#[test]
fn capacities_change_at_run_time() {
    let pool = weighted(&[1, 1]);
    pool.set_capacity(&1, 3).unwrap();
    let picks = 200_000;
    assert_proportional(&shares(&pool, &Random, picks), &[1, 3], picks, 0.02);
    assert_eq!(pool.info(&1).unwrap().capacity_weight(), 3);
    assert!(matches!(
        pool.set_capacity(&1, 0),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(matches!(
        pool.insert_with(9, WorkerInfo::new().capacity(workerpick::MAX_CAPACITY + 1)),
        Err(Error::InvalidConfig { .. })
    ));
    assert_eq!(pool.set_capacity(&7, 2), Err(Error::UnknownWorker));
}

#[test]
fn unhealthy_workers_get_no_picks_in_any_mode() {
    for caps in [vec![1, 1, 1, 1], vec![4, 2, 1, 1]] {
        let pool = weighted(&caps);
        assert_eq!(pool.set_healthy(&0, false), Ok(true));
        assert_eq!(pool.set_healthy(&0, false), Ok(false)); // already
        assert_eq!(pool.is_healthy(&0), Some(false));
        let rr = RoundRobin::new();
        for selector in [&Random as &dyn Selector, &rr, &PowerOfTwo, &LeastLoaded] {
            let mut h = pool.handle();
            for _ in 0..500 {
                let r = h.reserve(selector).unwrap();
                assert_ne!(
                    *r.worker(),
                    0,
                    "{} picked the unhealthy worker ({caps:?})",
                    selector.name()
                );
            }
        }
        // The mark is not load: the pool's own views leave it out.
        assert_eq!(pool.in_flight(&0), Some(0));
        assert!(pool.loads().iter().all(|&(_, l)| l == 0));
        pool.set_healthy(&0, true).unwrap();
        assert_eq!(pool.is_healthy(&0), Some(true));
        let got = shares(&pool, &Random, 10_000);
        assert!(got.get(&0).copied().unwrap_or(0) > 0);
    }
}

#[test]
fn every_worker_unhealthy_routes_to_all() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    for w in 0..4 {
        pool.set_healthy(&w, false).unwrap();
    }
    let rr = RoundRobin::new();
    for selector in [&Random as &dyn Selector, &rr, &PowerOfTwo, &LeastLoaded] {
        let got = shares(&pool, selector, 4_000);
        assert_eq!(got.len(), 4, "{}: {got:?}", selector.name());
    }
    // Least-loaded still balances among them.
    let held: Vec<_> = (0..8)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    assert!((0..4).all(|w| pool.in_flight(&w) == Some(2)));
    drop(held);
}

#[test]
fn a_removed_unhealthy_worker_still_drains_and_frees_its_slot() {
    let pool = Pool::from_workers(0..3u32).unwrap();
    pool.set_healthy(&1, false).unwrap();
    pool.remove(&1).unwrap();
    pool.reclaim();
    assert_eq!(pool.stats().free_slots, 1, "{:?}", pool.stats());
    pool.insert(1).unwrap(); // a new identity: healthy
    assert_eq!(pool.is_healthy(&1), Some(true));
}

#[test]
fn draining_takes_no_picks_and_reports_when_done() {
    let pool = Pool::from_workers(0..3u32).unwrap();
    let held = pool.reserve_worker(&1, 2).unwrap();
    pool.drain(&1).unwrap();
    assert_eq!(pool.is_draining(&1), Some(true));
    assert_eq!(pool.len(), 3);
    assert!(pool.contains(&1));
    let rr = RoundRobin::new();
    for selector in [&Random as &dyn Selector, &rr, &PowerOfTwo, &LeastLoaded] {
        for _ in 0..300 {
            assert_ne!(
                *pool.reserve(selector).unwrap().worker(),
                1,
                "{}",
                selector.name()
            );
        }
    }
    assert_eq!(pool.reserve_worker(&1, 1).err(), Some(Error::Draining));
    assert_eq!(pool.drained(&1), Some(false));
    assert_eq!(pool.in_flight(&1), Some(2));
    assert!(pool.loads().contains(&(1, 2)));
    drop(held);
    assert_eq!(pool.drained(&1), Some(true));
    assert_eq!(pool.drained(&0), None); // not draining
    pool.resume(&1).unwrap();
    assert_eq!(pool.is_draining(&1), Some(false));
    assert!(shares(&pool, &Random, 3000).contains_key(&1));
    assert_eq!(pool.drain(&9), Err(Error::UnknownWorker));
}

#[test]
fn a_mask_built_before_a_drain_leaves_the_draining_worker_out() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let mask = pool.eligibility(|w| *w < 2);
    pool.drain(&0).unwrap();
    let req = Request::new().eligible(&mask);
    for selector in [&Random as &dyn Selector, &LeastLoaded] {
        for _ in 0..100 {
            assert_eq!(pool.select_with(selector, &req).unwrap(), 1);
        }
    }
}

#[test]
fn slow_start_ramps_a_new_worker_up() {
    let pool = weighted(&[1]);
    pool.set_slow_start(Some(SlowStart::new(Duration::from_millis(400))));
    pool.insert(1).unwrap();
    // At first 1/8 of a capacity against the warm worker's full one.
    let picks = 90_000;
    let early = shares(&pool, &Random, picks);
    let share = f64::from(early[&1]) / f64::from(picks);
    assert!((share - 1.0 / 9.0).abs() < 0.01, "{share}");
    std::thread::sleep(Duration::from_millis(450));
    pool.advance_slow_start();
    let late = shares(&pool, &Random, picks);
    let share = f64::from(late[&1]) / f64::from(picks);
    assert!((share - 0.5).abs() < 0.01, "{share}");
}

#[test]
fn reservations_move_the_ramp_on() {
    let pool = weighted(&[1]);
    pool.set_slow_start(Some(SlowStart::new(Duration::from_millis(200))));
    pool.insert(1).unwrap();
    std::thread::sleep(Duration::from_millis(250));
    // No writer call: 1 in 1024 reservations per thread checks the clock.
    for _ in 0..2048 {
        drop(pool.reserve(&Random).unwrap());
    }
    let picks = 40_000;
    let got = shares(&pool, &Random, picks);
    let share = f64::from(got[&1]) / f64::from(picks);
    assert!((share - 0.5).abs() < 0.02, "{share}");
}

/// Ramps whose window runs past the clock's range: the worker stays at its
/// first level (it never reaches its window), and no writer call panics.
fn endless_ramps() -> [SlowStart; 3] {
    [
        SlowStart::new(Duration::MAX)
            .aggression(0.01)
            .min_weight_percent(1),
        SlowStart::new(Duration::from_secs(10u64.pow(19))).min_weight_percent(1),
        // An aggression so low that a level's share of the window rounds to 1.
        SlowStart::new(Duration::MAX)
            .aggression(1e-30)
            .min_weight_percent(1),
    ]
}

#[test]
fn a_ramp_past_the_clock_never_makes_a_writer_panic() {
    for ramp in endless_ramps() {
        let pool = weighted(&[1]);
        pool.set_slow_start(Some(ramp));
        pool.insert(1).unwrap();
        pool.insert_with(2, WorkerInfo::new().capacity(2)).unwrap();
        pool.drain(&1).unwrap();
        pool.resume(&1).unwrap();
        pool.replace(0..4).unwrap();
        pool.advance_slow_start();
        for _ in 0..2048 {
            drop(pool.reserve(&Random).unwrap());
        }
        assert_eq!(pool.len(), 4, "{ramp:?}");
        // The warm worker keeps its full capacity (8 eighths); the cold ones
        // hold their first level (1 eighth of capacities 1, 2, 1): 8 of 12.
        let got = shares(&pool, &Random, 24_000);
        assert!((15_000..17_000).contains(&got[&0]), "{ramp:?}: {got:?}");
        pool.set_slow_start(None);
    }
}

#[test]
fn a_fresh_pool_with_an_endless_ramp_takes_its_workers() {
    for ramp in endless_ramps() {
        let pool: Pool<u32> = Pool::new();
        pool.set_slow_start(Some(ramp));
        pool.replace(0..1024).unwrap();
        assert_eq!(pool.len(), 1024, "{ramp:?}");
        assert!(pool.reserve(&LeastLoaded::new()).is_ok());
    }
}

#[test]
fn slow_start_keeps_least_loaded_off_a_cold_worker() {
    let pool = weighted(&[1, 1]);
    let _busy: Vec<_> = (0..16)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    pool.set_slow_start(Some(SlowStart::new(Duration::from_secs(60))));
    pool.insert(2).unwrap();
    // Warm workers hold 8 each; the cold one at 1/8 capacity is "full" at 1.
    let held: Vec<_> = (0..4)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    assert_eq!(pool.in_flight(&2), Some(1), "{:?}", pool.loads());
    drop(held);
    pool.set_slow_start(None); // ramping workers get their capacity at once
    let held: Vec<_> = (0..8)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    assert_eq!(pool.in_flight(&2), Some(8), "{:?}", pool.loads());
    drop(held);
}

#[test]
fn an_all_draining_pool_says_so_not_that_it_is_empty() {
    let pool = Pool::from_workers(0..2u32).unwrap();
    pool.drain(&0).unwrap();
    pool.drain(&1).unwrap();
    let rr = RoundRobin::new();
    for selector in [&Random as &dyn Selector, &rr, &PowerOfTwo, &LeastLoaded] {
        let err = pool.select(selector).unwrap_err();
        assert_eq!(err, Error::AllDraining, "{}", selector.name());
        assert!(!err.to_string().contains("empty"), "{err}");
        assert!(err.to_string().contains("resume"), "{err}");
        assert_eq!(pool.reserve(selector).err(), Some(Error::AllDraining));
    }
    // A mask over the draining workers says the same.
    let mask = pool.eligibility(|_| true);
    let req = Request::new().eligible(&mask);
    assert_eq!(pool.select_with(&LeastLoaded, &req), Err(Error::AllDraining));
    pool.resume(&1).unwrap();
    assert_eq!(pool.select(&LeastLoaded), Ok(1));
    assert_eq!(Pool::<u32>::new().select(&Random), Err(Error::NoWorkers));
}

/// Every mode, the load-aware ones first.
fn every_mode() -> Vec<Box<dyn Selector>> {
    vec![
        Box::new(PowerOfTwo),
        Box::new(LeastLoaded),
        Box::new(DeviceAware::new()),
        Box::new(Random),
        Box::new(RoundRobin::new()),
    ]
}

#[test]
fn power_of_two_never_picks_an_unhealthy_worker_while_one_is_healthy() {
    // Two of eight unhealthy, the other six one reservation each: the two
    // draws are both unhealthy in 1 pick of 28 (unweighted).
    for caps in [
        vec![1; 8],
        vec![4, 2, 1, 1, 4, 2, 1, 1],
        [vec![1; 2047], vec![3]].concat(),
    ] {
        let pool = weighted(&caps);
        let n = caps.len() as u32;
        let sick: Vec<u32> = if n == 8 {
            vec![0, 5]
        } else {
            (0..n).step_by(97).collect()
        };
        for w in &sick {
            pool.set_healthy(w, false).unwrap();
        }
        let _held: Vec<_> = (0..n)
            .filter(|w| !sick.contains(w))
            .map(|w| pool.reserve_worker(&w, 1).unwrap())
            .collect();
        for selector in every_mode() {
            let mut h = pool.handle_with_rng(Rng::with_seed(29));
            for _ in 0..20_000 {
                let w = *h.select(&*selector).unwrap();
                assert!(
                    !sick.contains(&w),
                    "{} picked unhealthy {w} ({n} workers)",
                    selector.name()
                );
            }
        }
        // A mask of three unhealthy candidates and one healthy: only the healthy one.
        let healthy = (0..n).find(|w| !sick.contains(w)).unwrap();
        let mask = pool.eligibility(|w| sick.contains(w) || *w == healthy);
        let req = Request::new().eligible(&mask);
        for selector in every_mode() {
            let mut h = pool.handle_with_rng(Rng::with_seed(7));
            for _ in 0..2_000 {
                assert_eq!(
                    *h.select_with(&*selector, &req).unwrap(),
                    healthy,
                    "{} masked",
                    selector.name()
                );
            }
        }
    }
}

#[test]
fn device_aware_passes_over_an_unhealthy_group() {
    // A healthy CPU beside an unhealthy one, and the only accelerator
    // unhealthy: the healthy CPU takes every pick.
    let pool = Pool::new();
    pool.insert_with(0u32, WorkerInfo::new().device(DeviceKind::Cpu))
        .unwrap();
    pool.insert_with(1, WorkerInfo::new().device(DeviceKind::Cpu))
        .unwrap();
    pool.insert_with(2, WorkerInfo::new()).unwrap();
    pool.set_healthy(&1, false).unwrap();
    pool.set_healthy(&2, false).unwrap();
    let held: Vec<_> = (0..50)
        .map(|_| pool.reserve(&DeviceAware::new()).unwrap())
        .collect();
    assert!(held.iter().all(|r| *r.worker() == 0));
}

/// The held picks per worker of `picks` reservations in `mode`, seeded.
fn held_counts(pool: &Pool<u32>, mode: &dyn Selector, picks: usize) -> Vec<u32> {
    let mut h = pool.handle_with_rng(Rng::with_seed(0xfa11));
    let held: Vec<_> = (0..picks).map(|_| h.reserve(mode).unwrap()).collect();
    let mut counts = vec![0; pool.len()];
    for r in &held {
        counts[*r.worker() as usize] += 1;
    }
    counts
}

#[test]
fn a_fleet_all_unhealthy_picks_exactly_as_the_same_fleet_healthy() {
    // 4:2:1:1, then the same pattern over 2 048 workers (a summarised pool).
    for caps in [vec![4, 2, 1, 1], [4, 2, 1, 1].repeat(512)] {
        let pool = weighted(&caps);
        let n = caps.len() as u32;
        // Enough held picks to fill every worker of the large pool a few times.
        let picks = if n == 4 { 800 } else { 4 * caps.len() };
        for selector in every_mode() {
            let name = selector.name();
            let random = matches!(name, "random" | "round-robin");
            if random && n > 4 {
                continue;
            }
            let healthy = held_counts(&pool, &*selector, picks);
            for w in 0..n {
                pool.set_healthy(&w, false).unwrap();
            }
            let sick = held_counts(&pool, &*selector, picks);
            for w in 0..n {
                pool.set_healthy(&w, true).unwrap();
            }
            if random {
                // Their draws differ once every candidate is unhealthy; their shares do not.
                let total: u32 = caps.iter().sum();
                for (w, &c) in caps.iter().enumerate() {
                    let want = picks as f64 * f64::from(c) / f64::from(total);
                    let got = f64::from(sick[w]);
                    assert!((got - want).abs() <= 0.2 * want, "{name} {w}: {got} vs {want}");
                }
            } else {
                assert_eq!(sick, healthy, "{name} on {n} workers");
            }
        }
    }
}

#[test]
fn a_mark_on_a_full_counter_is_kept_and_passes_the_worker_over_once_room_appears() {
    // Worker 0's counter at u32::MAX: a report of 1 000 and a booking of the rest.
    let pool = Pool::from_workers(0..2u32).unwrap();
    assert!(pool.report_load(&0, 1_000));
    let full = pool.reserve_worker(&0, u32::MAX - 1_000).unwrap();
    assert_eq!(pool.set_healthy(&0, false), Ok(true), "the mark was lost");
    assert_eq!(pool.is_healthy(&0), Some(false));
    drop(full);
    // Worker 1 is healthy but busier than 0's own load.
    let _busy = pool.reserve_worker(&1, 2_000).unwrap();
    let rr = RoundRobin::new();
    for selector in [
        &LeastLoaded as &dyn Selector,
        &PowerOfTwo,
        &DeviceAware::new(),
        &Random,
        &rr,
    ] {
        let mut h = pool.handle_with_rng(Rng::with_seed(4));
        for _ in 0..100 {
            assert_eq!(*h.reserve(selector).unwrap().worker(), 1, "{}", selector.name());
        }
    }
    assert_eq!(pool.in_flight(&0), Some(0));
    // Marking it again now adds the rest of the penalty: still passed over.
    assert_eq!(pool.set_healthy(&0, false), Ok(false));
    assert_eq!(*pool.reserve(&LeastLoaded).unwrap().worker(), 1);
    assert_eq!(pool.in_flight(&0), Some(0));
    // Marking healthy again takes out exactly what the mark holds.
    assert_eq!(pool.set_healthy(&0, true), Ok(false));
    assert_eq!(pool.in_flight(&0), Some(0));
    assert_eq!(*pool.reserve(&LeastLoaded).unwrap().worker(), 0);
}
