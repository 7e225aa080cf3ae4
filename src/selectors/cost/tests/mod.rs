//! The cost rule against an oracle written from its definition, the sparse
//! `T = 0` path against the reference pass, and the softmax's distribution
//! against its formula.

mod distribution;

use super::pass::{self, Rule};
use crate::credit::tuning::{CreditWeight, Temperature};
use super::Cost;
use crate::candidates::Candidates;
use crate::context::{Context, Intent};
use crate::pool::Pool;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::Choice;
use crate::credit::CacheHits;
use crate::Selector;
use proptest::prelude::*;

/// What the oracle and the passes see: per worker its load, credit,
/// health, reported load and candidacy.
#[derive(Clone, Debug)]
struct Fleet {
    loads: Vec<u32>,
    credits: Vec<u32>,
    sick: Vec<bool>,
    reported: Vec<u32>,
    admitted: Vec<bool>,
}

fn pool_of(f: &Fleet) -> Pool<u32> {
    let pool = Pool::from_workers(0..f.loads.len() as u32).unwrap();
    for (w, &load) in f.loads.iter().enumerate() {
        let w = w as u32;
        let booked = load - f.reported[w as usize];
        if booked > 0 {
            core::mem::forget(pool.reserve_worker(&w, booked).unwrap());
        }
        if f.reported[w as usize] > 0 {
            assert!(pool.report_load(&w, f.reported[w as usize]));
        }
        if f.sick[w as usize] {
            pool.set_healthy(&w, false).unwrap();
        }
    }
    pool
}

/// Runs `f` on a context over `pool` for `req`.
fn with_cx<R>(pool: &Pool<u32>, req: &Request<'_>, rng: &mut Rng, f: impl FnOnce(&mut Context<'_>) -> R) -> R {
    let snap = pool.snapshot();
    let candidates = Candidates::of(&snap.view, pool.id(), req).unwrap();
    let mut cx = Context::new(
        &snap.view,
        (&pool.raw.slots.counters, &pool.raw.reported),
        candidates,
        rng,
        Intent::Select,
        req,
        &pool.raw.backend,
    );
    f(&mut cx)
}

fn slot_of(c: Option<Choice<'_>>) -> Option<u32> {
    c.map(|c| c.slot.index())
}

/// The oracle's keys: `None` for a worker the pick may not return, else
/// (unhealthy, 1000·load − α·credit), loads as the pool counts them.
fn oracle_keys(pool: &Pool<u32>, f: &Fleet, weight: u32, busy: Option<u32>) -> Vec<Option<(bool, i64)>> {
    (0..f.loads.len())
        .map(|w| {
            if !f.admitted[w] || busy.is_some_and(|b| f.reported[w] > b) {
                return None;
            }
            let load = pool.in_flight(&(w as u32)).unwrap() as i64
                + i64::from(f.reported[w])
                + if f.sick[w] { i64::from(crate::UNHEALTHY_LOAD) } else { 0 };
            Some((f.sick[w], 1000 * load - i64::from(weight) * i64::from(f.credits[w])))
        })
        .collect()
}

fn fleet(max_n: usize, sick: bool) -> impl Strategy<Value = Fleet> {
    (1..=max_n).prop_flat_map(move |n| {
        (
            proptest::collection::vec(0u32..6, n),
            proptest::collection::vec(prop_oneof![3 => Just(0u32), 1 => 0u32..8], n),
            proptest::collection::vec(proptest::bool::weighted(if sick { 0.3 } else { 0.0 }), n),
            proptest::collection::vec(prop_oneof![3 => Just(0u32), 1 => 0u32..4], n),
            proptest::collection::vec(proptest::bool::weighted(0.8), n),
        )
            .prop_map(|(booked, credits, sick, reported, admitted)| Fleet {
                loads: booked.iter().zip(&reported).map(|(b, r)| b + r).collect(),
                credits,
                sick,
                reported,
                admitted,
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The reference pass returns a candidate at the oracle's least key.
    #[test]
    fn minimum_is_the_least_key(f in fleet(24, true), weight in 0u32..3000, busy in proptest::option::of(0u32..3), seed: u64) {
        let pool = pool_of(&f);
        let hits = CacheHits::build(&pool, 8, |w| f.credits[*w as usize]);
        let mask = pool.eligibility(|w| f.admitted[*w as usize]);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let keys = oracle_keys(&pool, &f, weight, busy);
        let least = keys.iter().flatten().min().copied();
        let mut sel = Cost::new().with_weight(CreditWeight::from_milli(weight).unwrap());
        if let Some(b) = busy { sel = sel.with_busy_threshold(b); }
        let got = with_cx(&pool, &req, &mut Rng::with_seed(seed), |cx| slot_of(sel.choose(cx)));
        match least {
            None => prop_assert_eq!(got, None),
            Some(least) => prop_assert_eq!(keys[got.unwrap() as usize], Some(least)),
        }
    }

    /// The sparse path, when it answers, answers with the reference's least
    /// cost (whole set and masked, few workers credited).
    #[test]
    fn sparse_matches_reference(f in fleet(64, false), weight in 0u32..3000, masked: bool, seed: u64) {
        let pool = pool_of(&f);
        let hits = CacheHits::build(&pool, 8, |w| f.credits[*w as usize]);
        let mask = pool.eligibility(|w| !masked || f.admitted[*w as usize]);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let rule = Rule { weight: CreditWeight::from_milli(weight).unwrap(), busy: None, health: false };
        let mut rng = Rng::with_seed(seed);
        let sparse = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of));
        let reference = with_cx(&pool, &req, &mut rng, |cx| slot_of(pass::minimum(cx, rule)));
        if let Some(sparse) = sparse {
            let f = Fleet { admitted: (0..f.loads.len()).map(|w| !masked || f.admitted[w]).collect(), ..f };
            let keys = oracle_keys(&pool, &f, weight, None);
            prop_assert_eq!(sparse.map(|s| keys[s as usize]), reference.map(|s| keys[s as usize]));
        }
    }

    /// The dense SIMD path, when it answers, answers with the reference's
    /// least cost (whole set and masked, any share of workers credited).
    #[test]
    fn dense_matches_reference(f in fleet(96, false), weight in 0u32..3000, masked: bool, seed: u64) {
        let pool = pool_of(&f);
        let hits = CacheHits::build(&pool, 8, |w| f.credits[*w as usize]);
        let mask = pool.eligibility(|w| !masked || f.admitted[*w as usize]);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let rule = Rule { weight: CreditWeight::from_milli(weight).unwrap(), busy: None, health: false };
        let mut rng = Rng::with_seed(seed);
        let dense = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_dense(cx, rule).map(|c| c.map(|c| (c.slot.index(), c.seen.unwrap()))));
        let reference = with_cx(&pool, &req, &mut rng, |cx| slot_of(pass::minimum(cx, rule)));
        let f = Fleet { admitted: (0..f.loads.len()).map(|w| !masked || f.admitted[w]).collect(), ..f };
        // With no candidate every lane is excluded, and the scan defers.
        let Some(dense) = dense else {
            prop_assert_eq!(reference, None);
            return Ok(());
        };
        let keys = oracle_keys(&pool, &f, weight, None);
        prop_assert_eq!(dense.map(|(s, _)| keys[s as usize]), reference.map(|s| keys[s as usize]));
        if let Some((s, load)) = dense {
            prop_assert_eq!(load, f.loads[s as usize], "validated on the load it compared");
        }
    }

    /// At `T > 0` every answer is in the best tier and not busy.
    #[test]
    fn softmax_stays_in_the_best_tier(f in fleet(24, true), busy in proptest::option::of(0u32..3), seed: u64) {
        let pool = pool_of(&f);
        let hits = CacheHits::build(&pool, 8, |w| f.credits[*w as usize]);
        let mask = pool.eligibility(|w| f.admitted[*w as usize]);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let keys = oracle_keys(&pool, &f, 1000, busy);
        let tier = keys.iter().flatten().map(|k| k.0).min();
        let mut sel = Cost::new().with_temperature(Temperature::new(0.7).unwrap());
        if let Some(b) = busy { sel = sel.with_busy_threshold(b); }
        let got = with_cx(&pool, &req, &mut Rng::with_seed(seed), |cx| slot_of(sel.choose(cx)));
        prop_assert_eq!(got.map(|s| keys[s as usize].map(|k| k.0)), tier.map(Some));
    }
}

#[test]
fn credit_outweighs_load_and_sickness_outweighs_credit() {
    let pool = Pool::from_workers(0u32..3).unwrap();
    let _l = pool.reserve_worker(&1, 10).unwrap();
    let hits = CacheHits::build(&pool, 64, |w| if *w == 1 { 64 } else { 0 });
    let req = Request::new().cache_hits(&hits);
    assert_eq!(pool.select_with(&Cost::new(), &req).unwrap(), 1);
    // α = 0: the least loaded, 0 or 2.
    let zero = Cost::new().with_weight(CreditWeight::from_milli(0).unwrap());
    assert_ne!(pool.select_with(&zero, &req).unwrap(), 1);
    // A huge credit does not make an unhealthy worker win over a healthy one.
    let huge = CacheHits::build(&pool, 64, |w| if *w == 1 { u32::MAX } else { 0 });
    let max = Cost::new().with_weight(CreditWeight::from_milli(CreditWeight::MAX_MILLI).unwrap());
    pool.set_healthy(&1, false).unwrap();
    let req = Request::new().cache_hits(&huge);
    for _ in 0..50 {
        assert_ne!(pool.select_with(&max, &req).unwrap(), 1);
        let soft = max.with_temperature(Temperature::new(5.0).unwrap());
        assert_ne!(pool.select_with(&soft, &req).unwrap(), 1);
    }
    // ... unless it is the only one left.
    pool.set_healthy(&0, false).unwrap();
    pool.set_healthy(&2, false).unwrap();
    assert_eq!(pool.select_with(&max, &req).unwrap(), 1);
}

#[test]
fn busy_workers_are_left_out() {
    let pool = Pool::from_workers(0u32..3).unwrap();
    pool.report_load(&0, 5);
    pool.report_load(&1, 9);
    pool.report_load(&2, 9);
    let hits = CacheHits::build(&pool, 64, |w| if *w == 1 { 64 } else { 0 });
    let req = Request::new().cache_hits(&hits);
    let sel = Cost::new().with_busy_threshold(8);
    for _ in 0..20 {
        assert_eq!(pool.select_with(&sel, &req).unwrap(), 0);
    }
    let all_busy = Cost::new().with_busy_threshold(4);
    assert_eq!(pool.select_with(&all_busy, &req), Err(crate::Error::NoAcceptableWorker));
}

#[test]
fn reservations_book_the_minimum_and_stay_exact() {
    // No credit: the cost mode is least-loaded, exact under repeated picks.
    let pool = Pool::from_workers(0u32..4).unwrap();
    let held: Vec<_> = (0..12).map(|_| pool.reserve(&Cost::new()).unwrap()).collect();
    for w in 0..4 {
        assert_eq!(pool.in_flight(&w), Some(3));
    }
    drop(held);
    // Credit on 3 (α = 1, 2 blocks): it takes loads until it costs as much
    // as the others, then all tie.
    let hits = CacheHits::build(&pool, 8, |w| if *w == 3 { 2 } else { 0 });
    let req = Request::new().cache_hits(&hits);
    let held: Vec<_> = (0..2).map(|_| pool.reserve_with(&Cost::new(), &req).unwrap()).collect();
    assert!(held.iter().all(|r| *r.worker() == 3));
}

/// The sample counts of `draws` picks per worker.
fn counts(pool: &Pool<u32>, sel: &Cost, req: &Request<'_>, draws: u32) -> Vec<u32> {
    let mut h = pool.handle_with_rng(Rng::with_seed(42));
    let mut n = vec![0u32; pool.len()];
    for _ in 0..draws {
        n[*h.select_with(sel, req).unwrap() as usize] += 1;
    }
    n
}

fn chi_square(counts: &[u32], probs: &[f64], draws: u32) -> f64 {
    counts
        .iter()
        .zip(probs)
        .map(|(&n, &p)| {
            let e = p * f64::from(draws);
            (f64::from(n) - e).powi(2) / e
        })
        .sum()
}

#[test]
fn softmax_samples_the_formula() {
    let loads = [0u32, 2, 5, 9, 3, 7];
    let credits = [0u32, 3, 1, 8, 0, 0];
    let pool = Pool::from_workers(0..6u32).unwrap();
    for (w, &l) in loads.iter().enumerate() {
        if l > 0 {
            core::mem::forget(pool.reserve_worker(&(w as u32), l).unwrap());
        }
    }
    let hits = CacheHits::build(&pool, 8, |w| credits[*w as usize]);
    let req = Request::new().cache_hits(&hits);
    for t in [0.25, 1.0, 3.0] {
        let sel = Cost::new().with_temperature(Temperature::new(t).unwrap());
        let c: Vec<f64> = loads.iter().zip(&credits).map(|(&l, &o)| f64::from(l) - f64::from(o)).collect();
        let (lo, hi) = c.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let w: Vec<f64> = c.iter().map(|x| (-(x - lo) / ((hi - lo) * t)).exp()).collect();
        let sum: f64 = w.iter().sum();
        let probs: Vec<f64> = w.iter().map(|x| x / sum).collect();
        let draws = 60_000;
        let n = counts(&pool, &sel, &req, draws);
        let chi2 = chi_square(&n, &probs, draws);
        // 5 degrees of freedom: p = 0.001 at 20.5.
        assert!(chi2 < 20.5, "T = {t}: chi-square {chi2:.1}, counts {n:?}, expected {probs:?}");
    }
    // All costs equal: uniform.
    let flat = CacheHits::build(&pool, 8, |w| loads[*w as usize]);
    let req = Request::new().cache_hits(&flat);
    let sel = Cost::new().with_temperature(Temperature::new(1.0).unwrap());
    let n = counts(&pool, &sel, &req, 30_000);
    let chi2 = chi_square(&n, &[1.0 / 6.0; 6], 30_000);
    assert!(chi2 < 20.5, "uniform: chi-square {chi2:.1}, counts {n:?}");
}

#[test]
fn minimum_ties_are_uniform() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    // Costs: 0, 1 − 1 = 0, 2 − 2 = 0, 3 (no credit) ... four tie at 0.
    for (w, l) in [(1u32, 1u32), (2, 2), (3, 3), (4, 1), (5, 1), (6, 1), (7, 1)] {
        core::mem::forget(pool.reserve_worker(&w, l).unwrap());
    }
    let hits = CacheHits::build(&pool, 8, |w| match *w {
        1 => 1,
        2 => 2,
        7 => 1,
        _ => 0,
    });
    let req = Request::new().cache_hits(&hits);
    let n = counts(&pool, &Cost::new(), &req, 40_000);
    assert_eq!(n[3] + n[4] + n[5] + n[6], 0, "{n:?}");
    let ties = [n[0], n[1], n[2], n[7]];
    let chi2 = chi_square(&ties, &[0.25; 4], 40_000);
    assert!(chi2 < 16.3, "chi-square {chi2:.1}: {ties:?}");
}

#[test]
fn requests_override_the_mode() {
    let pool = Pool::from_workers(0..2u32).unwrap();
    let _l = pool.reserve_worker(&1, 4).unwrap();
    let hits = CacheHits::build(&pool, 8, |w| if *w == 1 { 3 } else { 0 });
    let req = Request::new().cache_hits(&hits);
    assert_eq!(pool.select_with(&Cost::new(), &req).unwrap(), 0);
    let heavy = req.credit_weight(CreditWeight::from_milli(1500).unwrap());
    assert_eq!(pool.select_with(&Cost::new(), &heavy).unwrap(), 1);
    // A request at T > 0 samples both; the mode's T = 0 never would.
    let soft = req.temperature(Temperature::new(10.0).unwrap());
    let n = counts(&pool, &Cost::new(), &soft, 2000);
    assert!(n[0] > 0 && n[1] > 0, "{n:?}");
}

#[test]
fn parameters_and_errors() {
    use crate::{Mode, Params, Registry};
    let reg = Registry::new();
    assert_eq!(reg.resolve("kv-cost").unwrap().name(), "cost");
    assert!(Mode::ALL.contains(&Mode::Cost));
    assert_eq!(Mode::Cost.parameters(), ["credit-weight-milli", "temperature-milli", "busy-threshold"]);
    let p: Params = "credit-weight-milli=2500, temperature-milli=500, busy-threshold=7".parse().unwrap();
    assert!(reg.resolve_with("cost", &p).is_ok());
    let bad: Params = "credit-weight-milli=1000001".parse().unwrap();
    assert!(reg.resolve_with("cost", &bad).unwrap_err().to_string().contains("credit-weight-milli"));
    assert!(Temperature::new(-0.5).is_err());
    assert!(Temperature::new(f64::NAN).is_err());
    assert!(Temperature::new(f64::INFINITY).is_err());
    assert_eq!(Temperature::new(-0.0).unwrap(), Temperature::ZERO);
    assert_eq!(Temperature::from_milli(250).get(), 0.25);
}

#[test]
fn costs_are_exact_at_the_bounds() {
    use crate::credit::tuning::cost;
    let max = CreditWeight::from_milli(CreditWeight::MAX_MILLI).unwrap();
    assert_eq!(cost(u32::MAX, 0, max), 1000 * i64::from(u32::MAX));
    assert_eq!(cost(0, u32::MAX, max), -1_000_000 * i64::from(u32::MAX));
    assert!(cost(u32::MAX, 0, max) - cost(0, u32::MAX, max) < 1 << 53);
}

#[test]
fn sparse_answers_when_few_are_credited() {
    let pool = Pool::from_workers(0..64u32).unwrap();
    for w in 0..64u32 {
        core::mem::forget(pool.reserve_worker(&w, 2 + w % 3).unwrap());
    }
    let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
    let mut rng = Rng::with_seed(3);
    let mut hits = CacheHits::new();
    // 9 holds 4 blocks: cost 2 − 4 < 2, the least load.
    hits.rebuild_sparse(&pool, 8, [(&9, 4), (&40, 1)]);
    let req = Request::new().cache_hits(&hits);
    let got = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of));
    assert_eq!(got, Some(Some(9)));
    // 9 holds 1 block: 2 − 1 = 1, still below the least load 2.
    hits.rebuild_sparse(&pool, 8, [(&9, 1)]);
    let req = Request::new().cache_hits(&hits);
    let got = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of));
    assert_eq!(got, Some(Some(9)));
    // 10 (load 3) holds 1 block: ties with the uncredited at 2, which are
    // the workers w ≡ 0 (mod 3) but 9: 21 of them, and 10, one draw among 22.
    hits.rebuild_sparse(&pool, 8, [(&10, 1)]);
    let req = Request::new().cache_hits(&hits);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let got = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of));
        seen.insert(got.unwrap().unwrap());
    }
    let ties: Vec<u32> = (0..64).filter(|w| w % 3 == 0 || *w == 10).collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ties);
    // 11 (load 4) holds 1: above the least load, the scan's answer stands.
    hits.rebuild_sparse(&pool, 8, [(&11, 1), (&11, 1)]);
    assert_eq!(hits.entries().len(), 1);
    let req = Request::new().cache_hits(&hits);
    let got = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of)).unwrap().unwrap();
    assert_eq!(pool.in_flight(&got), Some(2));
}

#[test]
fn softmax_samples_the_formula_over_runs_of_candidates() {
    // 70 candidates: pass 2 keeps sums of runs of 2, and pass 3 walks them.
    let n = 70u32;
    let pool = Pool::from_workers(0..n).unwrap();
    for w in 0..n {
        if w % 5 > 0 {
            core::mem::forget(pool.reserve_worker(&w, w % 5).unwrap());
        }
    }
    let hits = CacheHits::build(&pool, 8, |w| w % 3);
    let req = Request::new().cache_hits(&hits);
    let t = 0.6;
    let c: Vec<f64> = (0..n).map(|w| f64::from(w % 5) - f64::from(w % 3)).collect();
    let (lo, hi) = c.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let w: Vec<f64> = c.iter().map(|x| (-(x - lo) / ((hi - lo) * t)).exp()).collect();
    let sum: f64 = w.iter().sum();
    let probs: Vec<f64> = w.iter().map(|x| x / sum).collect();
    let draws = 100_000;
    let sel = Cost::new().with_temperature(Temperature::new(t).unwrap());
    let got = counts(&pool, &sel, &req, draws);
    let chi2 = chi_square(&got, &probs, draws);
    // 69 degrees of freedom: p = 0.001 at 111.1.
    assert!(chi2 < 111.1, "chi-square {chi2:.1}: {got:?}");
}

#[test]
fn exact_under_threads_without_releases() {
    // 4 threads × 64 reservations over 8 idle workers, worker 3 credited 2
    // blocks: every booking lands on a least cost, so the loads end with
    // costs within one of each other (3 holds about 2 more than the rest).
    let pool = Pool::from_workers(0..8u32).unwrap();
    let hits = CacheHits::build(&pool, 8, |w| if *w == 3 { 2 } else { 0 });
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut h = pool.handle();
                let req = Request::new().cache_hits(&hits);
                for _ in 0..64 {
                    core::mem::forget(h.reserve_with(&Cost::new(), &req).unwrap());
                }
            });
        }
    });
    let costs: Vec<i64> = (0..8u32)
        .map(|w| i64::from(pool.in_flight(&w).unwrap()) - if w == 3 { 2 } else { 0 })
        .collect();
    let total: u32 = (0..8u32).map(|w| pool.in_flight(&w).unwrap()).sum();
    assert_eq!(total, 256);
    let (lo, hi) = (costs.iter().min().unwrap(), costs.iter().max().unwrap());
    assert!(hi - lo <= 1, "costs {costs:?}");
    assert_eq!(pool.stats().fallbacks, 0);
}

#[test]
fn dense_answers_when_many_are_credited() {
    let pool = Pool::from_workers(0..64u32).unwrap();
    for w in 0..64u32 {
        core::mem::forget(pool.reserve_worker(&w, 2 + w % 3).unwrap());
    }
    let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
    let mut rng = Rng::with_seed(5);
    // Every worker credited w % 4 blocks; 47 (load 4, 3 blocks) and 3, 7, ...
    // (load 2 + w % 3, 3 blocks): the least is 2 − 3 at w ≡ 3 (mod 4) and ≡ 0
    // (mod 3): 3, 15, 27, 39, 51, 63.
    let hits = CacheHits::build(&pool, 8, |w| w % 4);
    let req = Request::new().cache_hits(&hits);
    assert_eq!(with_cx(&pool, &req, &mut rng, |cx| pass::minimum_sparse(cx, rule).map(slot_of)), None);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let got = with_cx(&pool, &req, &mut rng, |cx| pass::minimum_dense(cx, rule).map(slot_of));
        seen.insert(got.unwrap().unwrap());
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [3, 15, 27, 39, 51, 63]);
    // Credits from before the set changed: the reference answers.
    pool.insert(64).unwrap();
    assert_eq!(with_cx(&pool, &req, &mut rng, |cx| pass::minimum_dense(cx, rule).map(slot_of)), None);
}

#[test]
fn dense_answers_on_a_large_pool() {
    let pool = Pool::from_workers(0..1024u32).unwrap();
    let hits = CacheHits::build(&pool, 16, |w| w % 8);
    let req = Request::new().cache_hits(&hits);
    let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
    let got = with_cx(&pool, &req, &mut Rng::with_seed(1), |cx| pass::minimum_dense(cx, rule).map(slot_of));
    assert_eq!(got.map(|s| s.map(|s| s % 8)), Some(Some(7)));
}


/// The formula's probabilities over `costs` (`None`: not a candidate).
fn softmax_probs(costs: &[Option<f64>], t: f64) -> Vec<f64> {
    let (lo, hi) = costs
        .iter()
        .flatten()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let w: Vec<f64> = costs
        .iter()
        .map(|c| match c {
            None => 0.0,
            Some(_) if hi == lo => 1.0,
            Some(x) => (-(x - lo) / ((hi - lo) * t)).exp(),
        })
        .collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| x / sum).collect()
}

/// Draws `draws` answers of the sparse softmax (which must answer every time)
/// and checks them against the formula with a chi-square test.
fn check_sparse_softmax(pool: &Pool<u32>, req: &Request<'_>, costs: &[Option<f64>], t: f64, draws: u32) {
    let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
    let mut rng = Rng::with_seed(7);
    let mut n = vec![0u32; costs.len()];
    for _ in 0..draws {
        let got = with_cx(pool, req, &mut rng, |cx| pass::softmax_sparse(cx, rule, t).map(slot_of));
        let slot = got.expect("the sparse softmax answers").expect("a candidate");
        n[slot as usize] += 1;
    }
    let probs = softmax_probs(costs, t);
    let (mut chi2, mut df) = (0.0f64, -1.0f64);
    for (&got, &p) in n.iter().zip(&probs) {
        if p == 0.0 {
            assert_eq!(got, 0, "a non-candidate was drawn");
            continue;
        }
        let e = p * f64::from(draws);
        chi2 += (f64::from(got) - e).powi(2) / e;
        df += 1.0;
    }
    // p = 0.001: about df + 3.1·sqrt(2·df) + 6 for these df (23 at 5, 103 at 63).
    let limit = df + 3.1 * (2.0 * df).sqrt() + 6.0;
    assert!(chi2 < limit, "T = {t}: chi-square {chi2:.1} over {df} df: {n:?}");
}

#[test]
fn sparse_softmax_samples_the_formula() {
    // 64 workers at loads w % 5, three credited (one at the least load, one at
    // the largest), and the same with every third worker masked out.
    let pool = Pool::from_workers(0..64u32).unwrap();
    for w in 0..64u32 {
        if w % 5 > 0 {
            core::mem::forget(pool.reserve_worker(&w, w % 5).unwrap());
        }
    }
    let mut hits = CacheHits::new();
    hits.rebuild_sparse(&pool, 8, [(&5, 3), (&14, 6), (&33, 1)]);
    let credit = |w: u32| match w {
        5 => 3.0,
        14 => 6.0,
        33 => 1.0,
        _ => 0.0,
    };
    for masked in [false, true] {
        let mask = pool.eligibility(|w| !masked || w % 3 != 2);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let costs: Vec<Option<f64>> = (0..64u32)
            .map(|w| (!masked || w % 3 != 2).then(|| f64::from(w % 5) - credit(w)))
            .collect();
        for t in [0.25, 1.0, 3.0] {
            check_sparse_softmax(&pool, &req, &costs, t, 40_000);
        }
    }
    // No credit at all: the loads alone.
    let req = Request::new();
    let costs: Vec<Option<f64>> = (0..64u32).map(|w| Some(f64::from(w % 5))).collect();
    check_sparse_softmax(&pool, &req, &costs, 0.5, 40_000);
}

#[test]
fn sparse_softmax_declines_when_credit_holds_an_end() {
    // Worker 0 alone holds the least load and is credited: the uncredited
    // least is unknown without another pass, so the reference answers.
    let pool = Pool::from_workers(0..16u32).unwrap();
    for w in 1..16u32 {
        core::mem::forget(pool.reserve_worker(&w, 2).unwrap());
    }
    let mut hits = CacheHits::new();
    hits.rebuild_sparse(&pool, 8, [(&0, 1)]);
    let req = Request::new().cache_hits(&hits);
    let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
    let got = with_cx(&pool, &req, &mut Rng::with_seed(1), |cx| pass::softmax_sparse(cx, rule, 1.0).map(slot_of));
    assert_eq!(got, None);
    // The pick still samples the formula, through the reference.
    let costs: Vec<f64> = (0..16u32).map(|w| if w == 0 { -1.0 } else { 2.0 }).collect();
    let probs = softmax_probs(&costs.iter().copied().map(Some).collect::<Vec<_>>(), 1.0);
    let sel = Cost::new().with_temperature(Temperature::new(1.0).unwrap());
    let n = counts(&pool, &sel, &req, 20_000);
    assert!(chi_square(&n, &probs, 20_000) < 37.7, "{n:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The sparse softmax, when it answers, answers a candidate (never a busy
    /// or masked worker), and declines only for the reasons it states.
    #[test]
    fn sparse_softmax_answers_candidates(f in fleet(64, false), masked: bool, t in 1u32..4000, seed: u64) {
        let pool = pool_of(&f);
        let mut hits = CacheHits::new();
        let few: Vec<(u32, u32)> = (0..f.loads.len() as u32)
            .filter(|&w| f.credits[w as usize] > 0 && w % 5 == 0)
            .map(|w| (w, f.credits[w as usize]))
            .collect();
        hits.rebuild_sparse(&pool, 8, few.iter().map(|(w, o)| (w, *o)));
        let mask = pool.eligibility(|w| !masked || f.admitted[*w as usize]);
        let req = Request::new().cache_hits(&hits).eligible(&mask);
        let rule = Rule { weight: CreditWeight::ONE, busy: None, health: false };
        let t = f64::from(t) / 1000.0;
        let got = with_cx(&pool, &req, &mut Rng::with_seed(seed), |cx| pass::softmax_sparse(cx, rule, t).map(slot_of));
        if let Some(got) = got {
            let any = (0..f.loads.len()).any(|w| !masked || f.admitted[w]);
            prop_assert_eq!(got.is_some(), any);
            if let Some(w) = got {
                prop_assert!(!masked || f.admitted[w as usize]);
            }
        }
    }
}

#[test]
fn tokens_and_worker_ids_build_the_same_credit() {
    use crate::credit::WorkerToken;
    let pool = Pool::from_workers(0..10u32).unwrap();
    let token = |w: u32| WorkerToken::of(&pool, &w).unwrap();
    let mut by_id = CacheHits::new();
    by_id.rebuild_sparse(&pool, 8, [(&2, 5), (&7, 1), (&2, 3), (&99, 4)]);
    let mut by_token = CacheHits::new();
    by_token.rebuild_tokens(&pool, 8, [(token(2), 5), (token(7), 1), (token(2), 3)]);
    for hits in [&by_id, &by_token] {
        // The last count of a worker named twice; unknown workers ignored.
        let held: Vec<u32> = (0..10).map(|w| hits.held_by(&pool, &w)).collect();
        assert_eq!(held, [0, 0, 3, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(hits.entries().len(), 2);
    }
    // A rebuild forgets the previous build's workers in constant time.
    by_token.rebuild_tokens(&pool, 8, [(token(4), 2)]);
    assert_eq!((by_token.held_by(&pool, &2), by_token.held_by(&pool, &4)), (0, 2));
    // A token of a worker that left names nobody, even once it is back.
    let seven = token(7);
    pool.remove(&7).unwrap();
    pool.reclaim();
    pool.insert(7).unwrap();
    by_token.rebuild_tokens(&pool, 8, [(seven, 6)]);
    assert_eq!(by_token.held_by(&pool, &7), 0);
    assert_eq!(WorkerToken::of(&pool, &77), None);
    // Tokens of another pool count for nothing.
    let other = Pool::from_workers(0..10u32).unwrap();
    by_token.rebuild_tokens(&pool, 8, [(WorkerToken::of(&other, &3).unwrap(), 6)]);
    assert_eq!(by_token.held_by(&pool, &3), 0);
    assert!(by_token.entries().is_empty());
}

#[test]
fn many_named_workers_keep_the_dense_form() {
    let pool = Pool::from_workers(0..64u32).unwrap();
    let mut hits = CacheHits::new();
    let named: Vec<(u32, u32)> = (0..20).map(|w| (w, 1 + w % 3)).collect();
    hits.rebuild_sparse(&pool, 8, named.iter().map(|(w, o)| (w, *o)));
    assert!(hits.is_dense());
    hits.rebuild_sparse(&pool, 8, [(&3, 1)]);
    assert!(!hits.is_dense());
    assert_eq!((hits.held_by(&pool, &3), hits.held_by(&pool, &4)), (1, 0));
}

/// Credit is for a worker's stay in the set: a worker removed and inserted
/// again, back in its own slot because a reservation kept the slot from
/// reuse, holds nothing of what was recorded before it left, whichever way
/// the credit was built; draining and resuming keep the stay.
#[test]
fn credit_is_per_incarnation() {
    use crate::credit::WorkerToken;
    let pool = Pool::from_workers(0..8u32).unwrap();
    // Worker 3 at load 1: with 100 blocks of credit it costs the least.
    let held = pool.reserve_worker(&3, 1).unwrap();
    let old_token = WorkerToken::of(&pool, &3).unwrap();
    let mut sparse = CacheHits::new();
    sparse.rebuild_sparse(&pool, 100, [(&3, 100)]);
    let mut tokens = CacheHits::new();
    tokens.rebuild_tokens(&pool, 100, [(old_token, 100)]);
    let dense = CacheHits::build(&pool, 100, |w| if *w == 3 { 100 } else { 0 });
    // Sparse entries and the dense form: every other worker named with 1.
    let mut both = CacheHits::new();
    let named: Vec<u32> = (0..8).collect();
    both.rebuild_sparse(&pool, 100, named.iter().map(|w| (w, if *w == 3 { 100 } else { 1 })));
    assert!(both.is_dense());
    let all = [&sparse, &tokens, &dense, &both];
    let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
    let picks_of_3 = |hits: &CacheHits, sel: &Cost| {
        let mut h = pool.handle_with_rng(Rng::with_seed(5));
        let req = Request::new().cache_hits(hits);
        (0..200).filter(|_| *h.select_with(sel, &req).unwrap() == 3).count()
    };
    for hits in all {
        assert_eq!(hits.held_by(&pool, &3), 100);
        assert_eq!(picks_of_3(hits, &Cost::new()), 200);
    }
    // Draining and resuming keep the stay, and the credit.
    pool.drain(&3).unwrap();
    pool.resume(&3).unwrap();
    for hits in all {
        assert_eq!(hits.held_by(&pool, &3), 100);
    }
    pool.remove(&3).unwrap();
    pool.insert(3).unwrap();
    let new_token = WorkerToken::of(&pool, &3).unwrap();
    assert_eq!(new_token.parts().0, old_token.parts().0, "back in its own slot");
    for hits in all {
        assert_eq!(hits.held_by(&pool, &3), 0);
        // Uncredited, at load 1 against 0: never the minimum, and at T = 0.5
        // drawn with e^(−2) of the others' weight each (about 2 %).
        assert_eq!(picks_of_3(hits, &Cost::new()), 0);
        assert!(picks_of_3(hits, &soft) < 20);
    }
    assert_ne!(new_token, old_token);
    // Credit built for the new stay counts.
    let mut fresh = CacheHits::new();
    fresh.rebuild_tokens(&pool, 100, [(new_token, 100)]);
    assert_eq!(fresh.held_by(&pool, &3), 100);
    assert_eq!(picks_of_3(&fresh, &Cost::new()), 200);
    drop(held);
}
