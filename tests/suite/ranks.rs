//! Data-parallel ranks: a worker with R ranks is R candidates that share its
//! identity, membership, health and drain, each with its own load, reported
//! load and cache credit.

use crate::common::counting::allocations;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use workerpick::{
    Affinity, CacheHits, Cost, Decider, Error, LeastLoaded, MAX_RANKS, PairRequest, Pairs, Plan, Pool,
    PowerOfTwo, Random, Request, Rng, RoundRobin, Selector, WorkerInfo,
};

/// "plain" (one rank) and "dp" (`ranks` ranks), in that order.
fn fleet(ranks: u32) -> Pool<&'static str> {
    let pool = Pool::from_workers(["plain"]).unwrap();
    pool.insert_with("dp", WorkerInfo::new().ranks(ranks)).unwrap();
    pool
}

/// Every candidate `(worker, rank)` a pick can name in `fleet(ranks)`.
fn candidates(ranks: u32) -> BTreeSet<(&'static str, u32)> {
    std::iter::once(("plain", 0))
        .chain((0..ranks).map(|r| ("dp", r)))
        .collect()
}

#[test]
fn a_worker_with_ranks_is_one_worker_and_several_candidates() {
    let pool = fleet(4);
    assert_eq!(pool.len(), 2);
    assert!(pool.contains(&"dp"));
    assert_eq!(pool.info(&"dp").unwrap().rank_count(), 4);
    assert_eq!(pool.info(&"plain").unwrap().rank_count(), 1);
    assert_eq!(pool.loads(), [("plain", 0), ("dp", 0)]);
    let ranks: Vec<_> = pool.rank_loads().into_iter().map(|(w, r, _)| (w, r)).collect();
    assert_eq!(ranks, [("plain", 0), ("dp", 0), ("dp", 1), ("dp", 2), ("dp", 3)]);
    // One slot per rank.
    assert_eq!(pool.stats().capacity, 5);
}

#[test]
fn least_loaded_fills_every_rank_before_doubling_any() {
    let pool = fleet(4);
    let mut h = pool.handle_with_rng(Rng::with_seed(7));
    let held: Vec<_> = (0..10).map(|_| h.reserve(&LeastLoaded::new()).unwrap()).collect();
    // 10 bookings over 5 candidates: exactly 2 each.
    let mut per: BTreeMap<(&str, u32), u32> = BTreeMap::new();
    for r in &held {
        *per.entry((*r.worker(), r.rank())).or_default() += 1;
    }
    assert_eq!(per.keys().copied().collect::<BTreeSet<_>>(), candidates(4));
    assert!(per.values().all(|&n| n == 2), "{per:?}");
    assert_eq!(pool.in_flight(&"dp"), Some(8));
    for r in 0..4 {
        assert_eq!(pool.in_flight_rank(&"dp", r), Some(2));
    }
    drop(held);
    assert!(pool.rank_loads().iter().all(|&(_, _, l)| l == 0));
}

#[test]
fn every_mode_picks_among_the_ranks() {
    let pool = fleet(3);
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 5] = [&Random, &rr, &PowerOfTwo, &LeastLoaded, &Cost::new()];
    for mode in modes {
        let mut h = pool.handle_with_rng(Rng::with_seed(3));
        let mut seen = BTreeSet::new();
        for _ in 0..400 {
            let r = h.reserve(mode).unwrap();
            seen.insert((*r.worker(), r.rank()));
            let (w, rank) = h.select_ranked(mode, &Request::new()).unwrap();
            seen.insert((*w, rank));
        }
        assert_eq!(seen, candidates(3), "{}", mode.name());
    }
}

#[test]
fn round_robin_takes_each_rank_in_turn() {
    let pool = fleet(3);
    let rr = RoundRobin::new();
    let order: Vec<_> = (0..8)
        .map(|_| pool.select_ranked(&rr, &Request::new()).unwrap())
        .collect();
    assert_eq!(
        order,
        [
            ("plain", 0),
            ("dp", 0),
            ("dp", 1),
            ("dp", 2),
            ("plain", 0),
            ("dp", 0),
            ("dp", 1),
            ("dp", 2)
        ]
    );
    // A preview names the rank the next pick takes, and moves nothing.
    assert_eq!(pool.preview_ranked(&rr, &Request::new()), Ok(("plain", 0)));
    assert_eq!(pool.preview_ranked(&rr, &Request::new()), Ok(("plain", 0)));
}

#[test]
fn a_rank_carries_its_own_load() {
    let pool = fleet(4);
    let busy = pool.reserve_rank(&"dp", 2, 10).unwrap();
    assert_eq!((*busy.worker(), busy.rank(), busy.weight()), ("dp", 2, 10));
    let mut h = pool.handle();
    for _ in 0..50 {
        let r = h.reserve(&LeastLoaded::new()).unwrap();
        assert_ne!((*r.worker(), r.rank()), ("dp", 2));
    }
    assert_eq!(pool.in_flight_rank(&"dp", 2), Some(10));
    assert_eq!(pool.in_flight(&"dp"), Some(10));
    assert_eq!(
        h.reserve_rank(&"dp", 4, 1).unwrap_err(),
        Error::UnknownRank { rank: 4, ranks: 4 }
    );
    assert_eq!(
        pool.reserve_rank(&"gone", 0, 1).unwrap_err(),
        Error::UnknownWorker
    );
    assert_eq!(pool.in_flight_rank(&"plain", 1), None);
}

#[test]
fn a_pinned_booking_on_a_worker_with_ranks_takes_its_least_loaded_rank() {
    let pool = fleet(3);
    let _a = pool.reserve_rank(&"dp", 0, 2).unwrap();
    let _b = pool.reserve_rank(&"dp", 2, 1).unwrap();
    let r = pool.reserve_worker(&"dp", 1).unwrap();
    assert_eq!(r.rank(), 1);
    // A retarget onto it too.
    let mut m = pool.reserve_worker(&"plain", 1).unwrap();
    m.retarget(&"dp").unwrap();
    assert_eq!((*m.worker(), m.rank()), ("dp", 1));
    assert_eq!(pool.in_flight_rank(&"dp", 1), Some(2));
    assert_eq!(pool.in_flight(&"plain"), Some(0));
}

#[test]
fn reported_load_is_per_rank() {
    let pool = fleet(4);
    assert!(pool.report_rank_load(&"dp", 1, 50));
    assert!(!pool.report_rank_load(&"dp", 4, 1));
    assert!(!pool.report_rank_load(&"nope", 0, 1));
    assert_eq!(pool.reported_rank_load(&"dp", 1), Some(50));
    assert_eq!(pool.reported_rank_load(&"dp", 0), Some(0));
    assert_eq!(pool.reported_load(&"dp"), Some(50));
    // Reported load is not this pool's own.
    assert_eq!(pool.in_flight(&"dp"), Some(0));
    let mut h = pool.handle();
    for _ in 0..20 {
        let r = h.reserve(&LeastLoaded::new()).unwrap();
        assert_ne!((*r.worker(), r.rank()), ("dp", 1));
    }
    // A whole-worker figure is spread over the ranks, the remainder low.
    assert!(pool.report_load(&"dp", 10));
    let spread: Vec<_> = (0..4)
        .map(|r| pool.reported_rank_load(&"dp", r).unwrap())
        .collect();
    assert_eq!(spread, [3, 3, 2, 2]);
    assert_eq!(
        pool.report_rank_loads([(&"dp", 0, 1), (&"dp", 9, 1), (&"plain", 0, 4)]),
        2
    );
    assert_eq!(pool.reported_load(&"plain"), Some(4));
}

#[test]
fn cache_credit_is_per_rank() {
    let pool = fleet(4);
    let mut hits = CacheHits::new();
    hits.rebuild_sparse_ranked(&pool, 16, [(&"dp", 3, 16), (&"dp", 9, 16), (&"nope", 0, 1)]);
    assert_eq!(hits.held_by_rank(&pool, &"dp", 3), 16);
    assert_eq!(hits.held_by_rank(&pool, &"dp", 0), 0);
    assert_eq!(hits.held_by(&pool, &"dp"), 16);
    assert_eq!(hits.most_held(&pool), 16);
    let req = Request::new().cache_hits(&hits);
    for _ in 0..10 {
        let r = pool.reserve_with(&Cost::new(), &req).unwrap();
        assert_eq!((*r.worker(), r.rank()), ("dp", 3));
    }
    // Built per rank through a closure.
    let hits = CacheHits::build_ranked(&pool, 8, |w, r| if *w == "dp" && r == 1 { 8 } else { 0 });
    let r = pool
        .reserve_with(&Cost::new(), &Request::new().cache_hits(&hits))
        .unwrap();
    assert_eq!((*r.worker(), r.rank()), ("dp", 1));
    // A worker's count given once is every rank's.
    let mut calls = 0;
    let hits = CacheHits::build(&pool, 8, |w| {
        calls += 1;
        if *w == "dp" { 5 } else { 0 }
    });
    assert_eq!(calls, 2, "asked once per worker");
    assert!((0..4).all(|r| hits.held_by_rank(&pool, &"dp", r) == 5));
    let mut sparse = CacheHits::new();
    sparse.rebuild_sparse(&pool, 8, [(&"dp", 5)]);
    assert!((0..4).all(|r| sparse.held_by_rank(&pool, &"dp", r) == 5));
    assert_eq!(sparse.held_by_rank(&pool, &"plain", 0), 0);
    assert_eq!((hits.most_held(&pool), sparse.most_held(&pool)), (5, 5));
}

/// `most_held` is the most any current worker holds, dense or sparse, read
/// without allocating; a departed worker's credit and another pool's build
/// count for nothing.
#[test]
fn most_held_reads_the_best_current_credit_without_allocating() {
    let pool = fleet(4);
    let dense = CacheHits::build(&pool, 8, |w| if *w == "plain" { 7 } else { 2 });
    let mut sparse = CacheHits::new();
    sparse.rebuild_sparse(&pool, 8, [(&"plain", 7), (&"dp", 2)]);
    let mut read = 0;
    let n = allocations(|| read = dense.most_held(&pool) + sparse.most_held(&pool));
    assert_eq!((read, n), (14, 0));
    pool.remove(&"plain").unwrap();
    assert_eq!((dense.most_held(&pool), sparse.most_held(&pool)), (2, 2));
    let other = fleet(4);
    assert_eq!(dense.most_held(&other), 0);
}

#[test]
fn health_is_the_workers_and_covers_every_rank() {
    let pool = fleet(4);
    assert_eq!(pool.set_healthy(&"dp", false), Ok(true));
    assert_eq!(pool.set_healthy(&"dp", false), Ok(false));
    assert_eq!(pool.is_healthy(&"dp"), Some(false));
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 5] = [&Random, &rr, &PowerOfTwo, &LeastLoaded, &Cost::new()];
    for mode in modes {
        for _ in 0..40 {
            assert_eq!(*pool.reserve(mode).unwrap().worker(), "plain", "{}", mode.name());
        }
    }
    // The mark is not load.
    assert_eq!(pool.in_flight(&"dp"), Some(0));
    assert_eq!(pool.set_healthy(&"dp", true), Ok(false));
    let seen: BTreeSet<_> = (0..100)
        .map(|_| pool.select_ranked(&Random, &Request::new()).unwrap())
        .collect();
    assert_eq!(seen, candidates(4));
}

#[test]
fn draining_takes_every_rank_out_until_the_last_reservation_on_any_ends() {
    let pool = fleet(3);
    let r1 = pool.reserve_rank(&"dp", 1, 1).unwrap();
    let pin = pool.reserve_rank(&"dp", 2, 0).unwrap();
    pool.drain(&"dp").unwrap();
    assert_eq!(pool.reserve_rank(&"dp", 0, 1).unwrap_err(), Error::Draining);
    assert_eq!(pool.reserve_worker(&"dp", 1).unwrap_err(), Error::Draining);
    for _ in 0..30 {
        assert_eq!(*pool.reserve(&LeastLoaded::new()).unwrap().worker(), "plain");
    }
    assert_eq!(pool.drained(&"dp"), Some(false));
    drop(r1);
    assert_eq!(pool.drained(&"dp"), Some(false), "a pin on rank 2 still holds it");
    drop(pin);
    assert_eq!(pool.drained(&"dp"), Some(true));
    pool.resume(&"dp").unwrap();
    assert_eq!(pool.reserve_rank(&"dp", 2, 1).unwrap().rank(), 2);
}

#[test]
fn removal_keeps_each_ranks_load_until_it_drains_then_frees_every_slot() {
    let pool = fleet(4);
    let r1 = pool.reserve_rank(&"dp", 1, 3).unwrap();
    let r3 = pool.reserve_rank(&"dp", 3, 5).unwrap();
    pool.remove(&"dp").unwrap();
    assert!(!pool.contains(&"dp"));
    assert_eq!(pool.len(), 1);
    for _ in 0..30 {
        assert_eq!(
            pool.select_ranked(&LeastLoaded::new(), &Request::new()),
            Ok(("plain", 0))
        );
    }
    assert_eq!(pool.in_flight(&"dp"), Some(8));
    assert_eq!(pool.in_flight_rank(&"dp", 3), Some(5));
    assert_eq!(pool.in_flight_rank(&"dp", 0), None, "nothing held there");
    assert_eq!((*r3.worker(), r3.rank()), ("dp", 3));
    let s = pool.stats();
    assert_eq!((s.workers, s.draining, s.capacity, s.free_slots), (1, 1, 5, 0));
    drop(r1);
    assert_eq!(pool.reclaim(), 0, "rank 3 still holds the worker");
    assert_eq!(pool.in_flight(&"dp"), Some(5));
    drop(r3);
    assert_eq!(pool.in_flight(&"dp"), None);
    pool.reclaim();
    let s = pool.stats();
    assert_eq!((s.draining, s.free_slots), (0, 4), "all four slots at once");
    // A new worker with ranks takes the freed slots: the range does not grow.
    pool.insert_with("dp2", WorkerInfo::new().ranks(4)).unwrap();
    assert_eq!(pool.stats().capacity, 5);
}

#[test]
fn a_worker_back_while_its_ranks_drain_keeps_their_load_and_their_count() {
    let pool = fleet(2);
    let held = pool.reserve_rank(&"dp", 1, 4).unwrap();
    pool.remove(&"dp").unwrap();
    match pool.insert_with("dp", WorkerInfo::new().ranks(3)) {
        Err(Error::InvalidConfig {
            what: "worker ranks", ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(!pool.contains(&"dp"));
    pool.insert_with("dp", WorkerInfo::new().ranks(2)).unwrap();
    assert_eq!(pool.in_flight_rank(&"dp", 1), Some(4));
    // `replace` brings it back as it was too.
    pool.replace(["plain"]).unwrap();
    pool.replace(["plain", "dp"]).unwrap();
    assert_eq!(pool.info(&"dp").unwrap().rank_count(), 2);
    assert_eq!(pool.in_flight(&"dp"), Some(4));
    drop(held);
    // Once drained and reclaimed it is a new identity, of any rank count.
    pool.remove(&"dp").unwrap();
    pool.insert_with("dp", WorkerInfo::new().ranks(3)).unwrap();
    assert_eq!(pool.info(&"dp").unwrap().rank_count(), 3);
}

#[test]
fn the_rank_count_is_checked_and_fixed_while_in_the_set() {
    let pool = fleet(2);
    for bad in [0, MAX_RANKS + 1, u32::MAX] {
        match pool.insert_with("x", WorkerInfo::new().ranks(bad)) {
            Err(Error::InvalidConfig {
                what: "worker ranks", ..
            }) => {}
            other => panic!("{bad}: {other:?}"),
        }
    }
    match pool.set_info(&"dp", WorkerInfo::new().ranks(3)) {
        Err(Error::InvalidConfig {
            what: "worker ranks", ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // Other attributes change; the ranks stay.
    pool.set_capacity(&"dp", 3).unwrap();
    assert_eq!(pool.info(&"dp").unwrap(), WorkerInfo::new().ranks(2).capacity(3));
    let limited = Pool::with_max_workers(4).unwrap();
    assert_eq!(
        limited.insert_with(1, WorkerInfo::new().ranks(5)),
        Err(Error::CapacityExceeded { limit: 4 })
    );
    limited.insert_with(1, WorkerInfo::new().ranks(3)).unwrap();
    limited.insert(2).unwrap();
    assert_eq!(limited.insert(3), Err(Error::CapacityExceeded { limit: 4 }));
    assert_eq!(MAX_RANKS, 1024);
    assert_eq!(std::mem::size_of::<WorkerInfo>(), 12, "ranks live in padding");
}

#[test]
fn a_run_of_ranks_reuses_free_slots_that_are_side_by_side() {
    let pool = Pool::with_max_workers(64).unwrap();
    pool.replace(0..8u32).unwrap();
    // Free 2 and 4 (apart), then 5 and 6 (side by side with 4).
    for w in [2, 4, 5, 6] {
        pool.remove(&w).unwrap();
    }
    pool.reclaim();
    assert_eq!((pool.stats().capacity, pool.stats().free_slots), (8, 4));
    pool.insert_with(100, WorkerInfo::new().ranks(3)).unwrap();
    assert_eq!(pool.stats().capacity, 8, "slots 4..7 were free together");
    // A run of 2 does not fit in slot 2 alone: the range grows.
    pool.insert_with(101, WorkerInfo::new().ranks(2)).unwrap();
    assert_eq!(pool.stats().capacity, 10);
    // A single one still takes the lowest free slot.
    pool.insert(102).unwrap();
    assert_eq!((pool.stats().capacity, pool.stats().free_slots), (10, 0));
    // Free slots at the end of the range start a run that goes on past it.
    pool.remove(&101).unwrap();
    pool.reclaim();
    pool.insert_with(103, WorkerInfo::new().ranks(3)).unwrap();
    assert_eq!(pool.stats().capacity, 11);
    for (w, ranks) in [(100, 3), (103, 3)] {
        for r in 0..ranks {
            assert_eq!(pool.reserve_rank(&w, r, 1).unwrap().rank(), r);
        }
    }
}

#[test]
fn a_mask_by_worker_admits_all_of_its_ranks() {
    let pool = fleet(4);
    let mut asked = 0;
    let only_dp = pool.eligibility(|w| {
        asked += 1;
        *w == "dp"
    });
    assert_eq!(asked, 2, "asked once per worker");
    assert_eq!(only_dp.len(), 4);
    let req = Request::new().eligible(&only_dp);
    let mut seen = BTreeSet::new();
    for _ in 0..100 {
        let r = pool.reserve_with(&LeastLoaded::new(), &req).unwrap();
        seen.insert((*r.worker(), r.rank()));
        seen.insert(pool.select_ranked(&Random, &req).unwrap());
    }
    assert_eq!(seen, (0..4).map(|r| ("dp", r)).collect());
    // After the set changes, the translated mask keeps the same ranks.
    pool.insert("late").unwrap();
    pool.remove(&"plain").unwrap();
    for _ in 0..20 {
        assert_eq!(pool.select_ranked(&Random, &req).unwrap().0, "dp");
    }
}

#[test]
fn summaries_carry_and_apply_each_ranks_load() {
    let (a, b) = (fleet(3), fleet(3));
    let _x = a.reserve_rank(&"dp", 2, 6).unwrap();
    let _y = a.reserve_worker(&"plain", 1).unwrap();
    let summary = a.summary();
    assert_eq!(summary.loads(), &[("plain", 1)]);
    assert_eq!(summary.rank_loads(), &[("dp", 2, 6)]);
    assert!(b.apply_summary(&summary));
    assert_eq!(b.reported_rank_load(&"dp", 2), Some(6));
    assert_eq!(b.reported_rank_load(&"dp", 0), Some(0));
    assert_eq!(b.reported_load(&"plain"), Some(1));
    drop(_x);
    let _z = a.reserve_rank(&"dp", 0, 2).unwrap();
    assert!(b.apply_summary(&a.summary()));
    assert_eq!(
        (0..3)
            .map(|r| b.reported_rank_load(&"dp", r).unwrap())
            .collect::<Vec<_>>(),
        [2, 0, 0]
    );
    // A pool where "dp" has no ranks takes rank 0's entry and skips the rest.
    let plain = Pool::from_workers(["plain", "dp"]).unwrap();
    let _w = a.reserve_rank(&"dp", 1, 9).unwrap();
    assert!(plain.apply_summary(&a.summary()));
    assert_eq!(plain.reported_load(&"dp"), Some(2));
}

#[test]
fn pairs_name_and_book_the_decode_rank_that_was_previewed() {
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::new();
    decode.insert_with("d", WorkerInfo::new().ranks(4)).unwrap();
    let _busy: Vec<_> = [0, 1, 3]
        .into_iter()
        .map(|r| decode.reserve_rank(&"d", r, 1).unwrap())
        .collect();
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(8));
    let hits = CacheHits::build_ranked(&decode, 16, |_, r| if r == 2 { 12 } else { 0 });
    let req = PairRequest::new(Request::new().weight(64), Request::new().cache_hits(&hits));
    let ll = LeastLoaded::new();
    let seen = pairs.preview(&ll, &req).unwrap();
    assert_eq!(
        (*seen.decode(), seen.rank(), seen.load(), seen.uncached()),
        ("d", 2, 0, 4)
    );
    assert_eq!(seen.plan(), Plan::Local);
    assert_eq!(decode.in_flight_rank(&"d", 2), Some(0), "a preview books nothing");
    let pair = pairs.admit(&seen, &ll, &ll, &req).unwrap();
    assert_eq!(
        (*pair.decode(), pair.decode_rank(), pair.plan()),
        ("d", 2, Plan::Local)
    );
    assert_eq!(decode.in_flight_rank(&"d", 2), Some(1 + 64));
    drop(pair);
    // Disaggregated: the prefill side's rank is named too.
    let split = PairRequest::new(Request::new().weight(64), Request::new());
    let mut pair = pairs.reserve(&ll, &ll, &split).unwrap();
    assert_eq!(
        (pair.plan(), pair.decode_rank(), pair.prefill_rank()),
        (Plan::Disaggregate, 2, Some(0))
    );
    pair.hand_off();
    assert_eq!(pair.prefill_rank(), None);
    drop(pair);
    assert_eq!(decode.in_flight(&"d"), Some(3));
    assert_eq!(prefill.in_flight(&"p0"), Some(0));
}

#[test]
fn a_stale_pair_preview_is_picked_again_on_another_rank() {
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::new();
    decode.insert_with("d", WorkerInfo::new().ranks(2)).unwrap();
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::never());
    let req = PairRequest::new(Request::new().weight(1), Request::new());
    let ll = LeastLoaded::new();
    let seen = pairs.preview(&ll, &req).unwrap();
    // Its rank's load moved: the admit re-picks, on the other rank.
    let _moved = decode.reserve_rank(&"d", seen.rank(), 1).unwrap();
    let pair = pairs.admit(&seen, &ll, &ll, &req).unwrap();
    assert_eq!(pair.decode_rank(), 1 - seen.rank());
}

#[test]
fn owned_handles_name_ranks_too() {
    let pool = Arc::new(fleet(2));
    let mut h = pool.owned_handle_with_rng(Rng::with_seed(1));
    let r = h.reserve_rank(&"dp", 1, 2).unwrap();
    assert_eq!((*r.worker(), r.rank()), ("dp", 1));
    let (w, rank) = h.preview_ranked(&LeastLoaded::new(), &Request::new()).unwrap();
    assert_ne!((*w, rank), ("dp", 1));
    let moved = std::thread::spawn(move || (r.rank(), r.weight())).join().unwrap();
    assert_eq!(moved, (1, 2));
    assert_eq!(pool.in_flight(&"dp"), Some(0));
    assert_eq!(h.reserve_worker(&"dp", 1).unwrap().rank(), 0);
}

#[test]
fn capacity_weighs_each_rank() {
    let pool = Pool::new();
    pool.insert_with("big", WorkerInfo::new().ranks(2).capacity(3))
        .unwrap();
    pool.insert("small").unwrap();
    let mut counts: BTreeMap<(&str, u32), u32> = BTreeMap::new();
    for _ in 0..7000 {
        *counts
            .entry(pool.select_ranked(&Random, &Request::new()).unwrap())
            .or_default() += 1;
    }
    // Capacities 3, 3 and 1: each rank of "big" draws 3/7 of the picks.
    for rank in 0..2 {
        let n = counts[&("big", rank)];
        assert!((2700..3300).contains(&n), "{counts:?}");
    }
}

#[test]
fn affinity_spreads_keys_over_the_ranks() {
    let pool = Pool::new();
    pool.insert_with("node", WorkerInfo::new().ranks(4)).unwrap();
    pool.enable_affinity();
    let mode = Affinity::new();
    let ranks: BTreeSet<u32> = (0..200u64)
        .map(|k| pool.preview_ranked(&mode, &Request::new().key(k)).unwrap().1)
        .collect();
    assert_eq!(ranks, (0..4).collect());
    // A key stays on its rank.
    let k = Request::new().key(12345);
    let first = pool.preview_ranked(&mode, &k).unwrap();
    assert!((0..20).all(|_| pool.preview_ranked(&mode, &k).unwrap() == first));
}

#[test]
fn ranked_picks_allocate_nothing() {
    let pool = Pool::from_workers(0u64..8).unwrap();
    pool.insert_with(100, WorkerInfo::new().ranks(8)).unwrap();
    pool.report_rank_load(&100, 3, 2);
    let hits = CacheHits::build_ranked(&pool, 4, |w, r| u32::from(*w == 100 && r == 5) * 3);
    let credited = Request::new().cache_hits(&hits);
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 5] = [&Random, &rr, &PowerOfTwo, &LeastLoaded, &Cost::new()];
    let mut h = pool.handle();
    let mut run = || {
        for mode in modes {
            for req in [&Request::new(), &credited] {
                let (_, rank) = h.select_ranked(mode, req).unwrap();
                let r = h.reserve_with(mode, req).unwrap();
                let pinned = h.reserve_rank(&100, rank % 8, 1).unwrap();
                let any = h.reserve_worker(&100, 1).unwrap();
                std::hint::black_box((r.rank(), pinned.rank(), any.rank()));
            }
        }
    };
    run();
    assert_eq!(allocations(|| (0..50).for_each(|_| run())), 0);
}

#[test]
fn threads_booking_ranks_leave_every_count_at_zero() {
    let pool = Pool::new();
    for w in 0..4u32 {
        pool.insert_with(w, WorkerInfo::new().ranks(1 + w)).unwrap();
    }
    std::thread::scope(|s| {
        for t in 0..2 {
            let pool = &pool;
            s.spawn(move || {
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                for i in 0..2000u32 {
                    let a = h.reserve(&LeastLoaded::new()).unwrap();
                    assert!(a.rank() < 1 + *a.worker());
                    // Worker 3 comes and goes.
                    if let Ok(b) = h.reserve_rank(&(i % 4), i % (1 + i % 4), 2) {
                        assert_eq!(b.rank(), i % (1 + i % 4));
                    }
                }
            });
        }
        // A writer removing and re-adding a worker with ranks meanwhile.
        s.spawn(|| {
            for _ in 0..200 {
                let _ = pool.remove(&3);
                let _ = pool.insert_with(3, WorkerInfo::new().ranks(4));
            }
        });
    });
    let _ = pool.insert_with(3, WorkerInfo::new().ranks(4));
    assert!(
        pool.rank_loads().iter().all(|&(_, _, l)| l == 0),
        "{:?}",
        pool.rank_loads()
    );
    pool.reclaim();
    assert_eq!(pool.stats().draining, 0);
}
