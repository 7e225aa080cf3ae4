//! Each mode's rule, its random draws and its load reads, against a
//! sequential reference that replays the same draws.

use crate::candidates::Candidates;
use crate::context::{Context, Intent};
use crate::eligibility::Eligibility;
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::rng::Rng;
use crate::selectors::{Choice, Selector};
use crate::selectors::{LeastLoaded, PowerOfTwo, Random, RoundRobin};

/// Runs one `choose` on `pool`'s current set; returns the chosen worker and
/// how many loads the selector read.
fn choose<S: Selector>(
    pool: &Pool<u32>,
    sel: &S,
    rng: &mut Rng,
    intent: Intent,
    req: &Request<'_>,
) -> (Option<u32>, u32) {
    let snap = pool.snapshot();
    let candidates = Candidates::of(&snap.view, pool.id(), req).unwrap();
    let mut cx = Context::new(
        &snap.view,
        (&pool.raw.slots.counters, &pool.raw.reported),
        candidates,
        rng,
        intent,
        req,
        &pool.raw.backend,
    );
    let choice: Option<Choice> = sel.choose(&mut cx);
    let reads = cx.reads.get();
    (choice.map(|c| *snap.key(c.slot.index())), reads)
}

fn select<S: Selector>(pool: &Pool<u32>, sel: &S, rng: &mut Rng) -> (Option<u32>, u32) {
    choose(pool, sel, rng, Intent::Select, &Request::new())
}

/// A pool of `n` workers `0..n` with the given loads booked (and kept).
fn loaded(loads: &[u32]) -> Pool<u32> {
    let pool = Pool::from_workers(0..loads.len() as u32).unwrap();
    for (w, &load) in loads.iter().enumerate() {
        if load > 0 {
            core::mem::forget(pool.reserve_worker(&(w as u32), load).unwrap());
        }
    }
    pool
}

#[test]
fn empty_sets_yield_no_choice() {
    let pool = loaded(&[]);
    let mut rng = Rng::with_seed(1);
    assert_eq!(select(&pool, &Random::new(), &mut rng).0, None);
    assert_eq!(select(&pool, &RoundRobin::new(), &mut rng).0, None);
    assert_eq!(select(&pool, &PowerOfTwo::new(), &mut rng).0, None);
    assert_eq!(select(&pool, &LeastLoaded::new(), &mut rng).0, None);
}

#[test]
fn random_draws_once_and_reads_nothing() {
    for n in 1..=5u32 {
        let pool = loaded(&vec![0; n as usize]);
        for seed in 0..50 {
            let mut rng = Rng::with_seed(seed);
            let mut reference = Rng::with_seed(seed);
            let (got, reads) = select(&pool, &Random::new(), &mut rng);
            assert_eq!(got, Some(reference.below(n)));
            assert_eq!(rng.state(), reference.state(), "exactly one draw");
            assert_eq!(reads, 0);
        }
    }
}

#[test]
fn round_robin_walks_the_set_and_preview_stays_put() {
    let pool = loaded(&[0, 0, 0]);
    let rr = RoundRobin::new();
    let mut rng = Rng::with_seed(1);
    let before = rng.state();
    let (p, _) = choose(&pool, &rr, &mut rng, Intent::Preview, &Request::new());
    assert_eq!((p, rr.cursor()), (Some(0), 0));
    let picks: Vec<_> = (0..7).map(|_| select(&pool, &rr, &mut rng)).collect();
    assert_eq!(
        picks.iter().map(|p| p.0.unwrap()).collect::<Vec<_>>(),
        [0, 1, 2, 0, 1, 2, 0]
    );
    assert!(picks.iter().all(|p| p.1 == 0), "round-robin reads no load");
    assert_eq!(rng.state(), before, "round-robin draws nothing");
    assert_eq!(rr.cursor(), 7);
    assert_eq!(
        choose(&pool, &rr, &mut rng, Intent::Preview, &Request::new()).0,
        Some(1)
    );
    assert_eq!(rr.cursor(), 7);
}

#[test]
fn power_of_two_follows_its_rule() {
    for loads in [
        vec![3],
        vec![1, 0],
        vec![0, 1],
        vec![2, 2],
        vec![5, 1, 4, 1, 0, 9],
    ] {
        let pool = loaded(&loads);
        let n = loads.len() as u32;
        for seed in 0..200 {
            let mut rng = Rng::with_seed(seed);
            let mut reference = Rng::with_seed(seed);
            let (got, reads) = select(&pool, &PowerOfTwo::new(), &mut rng);
            let a = reference.below(n);
            let expected = if n == 1 {
                assert_eq!(reads, 1);
                a
            } else {
                let b = (a + 1 + reference.below(n - 1)) % n;
                assert_ne!(a, b);
                assert_eq!(reads, 2);
                if loads[a as usize] <= loads[b as usize] {
                    a
                } else {
                    b
                }
            };
            assert_eq!(got, Some(expected), "loads {loads:?} seed {seed}");
            assert_eq!(rng.state(), reference.state(), "draws: one per candidate");
        }
    }
}

/// The draws of a least-loaded pick over a few workers: one try over all of
/// them, taken if it names a minimum; else one draw among the ties, none for a
/// single one.
#[test]
fn least_loaded_takes_the_minimum_and_draws_only_on_a_missed_try() {
    // Selects book nothing: the pools keep their loads across the seeds.
    let unique = loaded(&[4, 2, 7, 3]);
    let loads = [1, 0, 5, 0, 0];
    let tied = loaded(&loads);
    for seed in 0..50 {
        let mut rng = Rng::with_seed(seed);
        let mut reference = Rng::with_seed(seed);
        assert_eq!(select(&unique, &LeastLoaded::new(), &mut rng).0, Some(1));
        reference.below(4);
        assert_eq!(
            rng.state(),
            reference.state(),
            "the try, and no draw for a unique minimum"
        );

        let mut rng = Rng::with_seed(seed);
        let mut reference = Rng::with_seed(seed);
        let got = select(&tied, &LeastLoaded::new(), &mut rng).0;
        let tried = reference.below(5);
        let want = if loads[tried as usize] == 0 {
            tried
        } else {
            [1, 3, 4][reference.below(3) as usize]
        };
        assert_eq!(got, Some(want), "seed {seed}");
        assert_eq!(
            rng.state(),
            reference.state(),
            "seed {seed}: the try, then one draw among ties"
        );
    }
}

#[test]
fn least_loaded_breaks_ties_uniformly() {
    // Fixed seed: the counts are deterministic, the bound cannot flake.
    let pool = loaded(&[2, 0, 0, 1, 0, 3, 0]);
    let mut rng = Rng::with_seed(42);
    let mut hits = [0u32; 7];
    let rounds = 7000;
    for _ in 0..rounds {
        hits[select(&pool, &LeastLoaded::new(), &mut rng).0.unwrap() as usize] += 1;
    }
    for w in [0, 3, 5] {
        assert_eq!(hits[w], 0);
    }
    for w in [1, 2, 4, 6] {
        let share = f64::from(hits[w]) / f64::from(rounds);
        assert!((0.22..0.28).contains(&share), "worker {w}: {hits:?}");
    }
}

#[test]
fn random_is_uniform() {
    let pool = loaded(&[0; 5]);
    let mut rng = Rng::with_seed(7);
    let mut hits = [0u32; 5];
    for _ in 0..5000 {
        hits[select(&pool, &Random::new(), &mut rng).0.unwrap() as usize] += 1;
    }
    assert!(hits.iter().all(|&h| (900..1100).contains(&h)), "{hits:?}");
}

#[test]
fn masks_narrow_every_mode() {
    let pool = loaded(&[0, 9, 0, 9, 0, 9]);
    let odd = pool.eligibility(|w| w % 2 == 1);
    let req = Request::new().eligible(&odd);
    let selectors: [&dyn Selector; 4] = [
        &Random::new(),
        &RoundRobin::new(),
        &PowerOfTwo::new(),
        &LeastLoaded::new(),
    ];
    let mut rng = Rng::with_seed(3);
    for sel in selectors {
        for intent in [Intent::Select, Intent::Preview, Intent::Reserve] {
            for _ in 0..50 {
                let got = choose(&pool, &sel, &mut rng, intent, &req).0.unwrap();
                assert_eq!(got % 2, 1, "{} chose {got}", sel.name());
            }
        }
    }
}

#[test]
fn a_stale_mask_keeps_its_surviving_workers_only() {
    let pool = loaded(&[0, 0, 0, 0]);
    let mask = pool.eligibility(|w| *w >= 2);
    pool.remove(&3).unwrap();
    pool.insert(3).unwrap(); // same key, but a new identity: its slot drained
    pool.insert(7).unwrap();
    let req = Request::new().eligible(&mask);
    let mut rng = Rng::with_seed(5);
    for sel in [
        &Random::new() as &dyn Selector,
        &RoundRobin::new(),
        &PowerOfTwo::new(),
        &LeastLoaded::new(),
    ] {
        for _ in 0..30 {
            assert_eq!(
                choose(&pool, &sel, &mut rng, Intent::Select, &req).0,
                Some(2),
                "{}",
                sel.name()
            );
        }
    }
    let mut fresh = Eligibility::new();
    fresh.rebuild(&pool, |w| *w >= 2);
    assert_eq!(fresh.len(), 3);
}

#[test]
fn a_pick_from_an_old_snapshot_charges_the_worker_it_names() {
    let pool = Pool::from_workers([1u32, 2]).unwrap();
    let old = pool.snapshot();
    pool.remove(&1).unwrap();
    pool.insert(3).unwrap(); // must not take worker 1's slot while `old` lives
    let req = Request::new();
    let keep = |booked| Reservation::new(&pool, booked);
    let r = crate::booking::reserve(
        &pool.raw,
        &old,
        &mut Rng::with_seed(1),
        &req,
        &RoundRobin::new(),
        keep,
    )
    .unwrap();
    assert_eq!(*r.worker(), 1);
    assert_eq!(pool.in_flight(&1), Some(1));
    assert_eq!(pool.in_flight(&3), Some(0));
    drop(r);
    drop(old);
    assert_eq!(pool.reclaim(), 1);
    pool.insert(4).unwrap(); // now the drained slot is reused
    assert_eq!(pool.stats().capacity, 3);
}
