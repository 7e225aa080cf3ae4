//! Picks, previews, reservations and releases never touch the heap.

use crate::common::counting::allocations;
use workerpick::{LeastLoaded, Pool, PowerOfTwo, Random, Request, RoundRobin, Selector};

#[test]
fn the_counter_sees_allocations() {
    assert_eq!(allocations(|| drop(std::hint::black_box(vec![1u8; 16]))), 1);
}

#[test]
fn the_hot_path_allocates_nothing() {
    for (workers, reported) in [1u64, 8, 1024, 5000]
        .into_iter()
        .flat_map(|n| [(n, false), (n, true)])
    {
        let pool = Pool::from_workers(0..workers).unwrap();
        if reported {
            // Load reported from outside: every load-aware pick reads it too.
            let ids: Vec<u64> = (0..workers).collect();
            pool.report_loads(ids.iter().map(|w| (w, (w % 3) as u32)));
        }
        let half = pool.eligibility(|w| w % 2 == 0);
        let masked = Request::new().eligible(&half);
        let heavy = Request::new().weight(7);
        let rr = RoundRobin::new();
        let modes: [&dyn Selector; 4] = [&Random, &rr, &PowerOfTwo, &LeastLoaded];
        let mut h = pool.handle();
        let mut run = || {
            for mode in modes {
                for req in [&Request::new(), &masked, &heavy] {
                    let _ = h.select_with(mode, req).unwrap();
                    let _ = h.preview_with(mode, req).unwrap();
                    let r = h.reserve_with(mode, req).unwrap();
                    let mut pinned = h.reserve_worker(&0, 1).unwrap();
                    pinned.retarget(r.worker()).unwrap();
                    drop((r, pinned));
                    let _ = pool.select_with(mode, req).unwrap();
                    drop(pool.reserve_with(mode, req).unwrap());
                }
            }
        };
        run(); // first use of thread-locals may set them up
        let n = allocations(|| {
            for _ in 0..100 {
                run();
            }
        });
        assert_eq!(
            n, 0,
            "{workers} workers, reported load {reported}: {n} allocations"
        );
    }
}

#[test]
fn the_owned_path_allocates_nothing() {
    let pool = std::sync::Arc::new(Pool::from_workers(0u64..64).unwrap());
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 4] = [&Random, &rr, &PowerOfTwo, &LeastLoaded];
    let mut h = pool.owned_handle();
    let mut run = || {
        for mode in modes {
            let _ = h.select(mode).unwrap();
            let r = h.reserve(mode).unwrap();
            let mut pinned = h.reserve_worker(&0, 1).unwrap();
            pinned.retarget(r.worker()).unwrap();
            drop((r, pinned));
        }
    };
    run();
    let n = allocations(|| {
        for _ in 0..100 {
            run();
        }
    });
    assert_eq!(n, 0, "{n} allocations");
}

#[test]
fn string_keys_a_handle_lends_and_the_pool_clones() {
    let pool = Pool::from_workers((0..64).map(|i| format!("worker-{i}"))).unwrap();
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 4] = [&Random, &rr, &PowerOfTwo, &LeastLoaded];
    let mut h = pool.handle();
    let mut lend = || {
        for mode in modes {
            let _ = h.select(mode).unwrap();
            let _ = h.preview(mode).unwrap();
            drop(h.reserve(mode).unwrap());
            drop(pool.reserve(mode).unwrap());
        }
    };
    lend();
    assert_eq!(
        allocations(|| (0..100).for_each(|_| lend())),
        0,
        "handle picks and reservations"
    );
    // `Pool::select`/`preview` return the worker by value: one `String` clone each.
    for mode in modes {
        let n = allocations(|| drop(std::hint::black_box(pool.select(mode).unwrap())));
        assert_eq!(n, 1, "Pool::select with {}", mode.name());
        let n = allocations(|| drop(std::hint::black_box(pool.preview(mode).unwrap())));
        assert_eq!(n, 1, "Pool::preview with {}", mode.name());
    }
}

#[test]
fn a_stale_mask_allocates_once_per_set_then_never() {
    let pool = Pool::from_workers(0..1024u64).unwrap();
    let half = pool.eligibility(|w| w % 2 == 0);
    let masked = Request::new().eligible(&half);
    let rr = RoundRobin::new();
    let modes: [&dyn Selector; 4] = [&Random, &rr, &PowerOfTwo, &LeastLoaded];
    let mut h = pool.handle();
    let mut run = || {
        for mode in modes {
            let _ = h.select_with(mode, &masked).unwrap();
            drop(h.reserve_with(mode, &masked).unwrap());
        }
    };
    pool.insert(5000).unwrap(); // no departure: the mask is used as it is
    assert_eq!(allocations(&mut run), 0, "after an insert");
    pool.remove(&0).unwrap(); // a departure: translated once for this set
    assert!(allocations(&mut run) <= 3, "the first picks after a removal");
    assert_eq!(allocations(|| (0..100).for_each(|_| run())), 0, "later picks");
}

#[test]
fn affinity_picks_allocate_nothing() {
    use workerpick::Affinity;
    for workers in [8u64, 200] {
        let pool = Pool::from_workers(0..workers).unwrap();
        pool.enable_affinity();
        pool.set_capacity(&1, 2).unwrap();
        let half = pool.eligibility(|w| w % 2 == 0);
        let (bounded, plain) = (Affinity::new(), Affinity::unbounded());
        let mut h = pool.handle();
        let mut run = |k: u64| {
            for mode in [&bounded, &plain] {
                for req in [
                    Request::new().key(k),
                    Request::new().key(k).eligible(&half),
                    Request::new(),
                ] {
                    let _ = h.select_with(mode, &req).unwrap();
                    let _ = h.preview_with(mode, &req).unwrap();
                    drop(h.reserve_with(mode, &req).unwrap());
                    drop(pool.reserve_with(mode, &req).unwrap());
                }
            }
        };
        run(0);
        let n = allocations(|| (0..300).for_each(&mut run));
        assert_eq!(n, 0, "{workers} workers: {n} allocations");
    }
}

#[test]
fn cost_picks_allocate_nothing() {
    use workerpick::{CacheHits, Cost, Temperature};
    for workers in [1u64, 8, 1024, 5000] {
        let pool = Pool::from_workers(0..workers).unwrap();
        pool.report_loads(
            (0..workers)
                .collect::<Vec<_>>()
                .iter()
                .map(|w| (w, (w % 3) as u32)),
        );
        let sparse = CacheHits::build(&pool, 16, |w| if w % 97 == 1 { 9 } else { 0 });
        let dense = CacheHits::build(&pool, 16, |w| (w % 5) as u32);
        let half = pool.eligibility(|w| w % 2 == 0);
        let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
        let busy = Cost::new().with_busy_threshold(1);
        let modes = [Cost::new(), soft, busy];
        let mut h = pool.handle();
        let mut run = || {
            for mode in &modes {
                for hits in [&sparse, &dense] {
                    let plain = Request::new().cache_hits(hits);
                    let masked = plain.eligible(&half);
                    for req in [&plain, &masked] {
                        let _ = h.select_with(mode, req).unwrap();
                        drop(h.reserve_with(mode, req).unwrap());
                    }
                }
            }
        };
        run();
        let n = allocations(|| {
            for _ in 0..20 {
                run();
            }
        });
        assert_eq!(n, 0, "{workers} workers: {n} allocations");
    }
}

/// What a router runs per request with sparse credit: the credit rebuilt from
/// the index's matches (tokens, or worker ids), then the pick, at both
/// temperatures. Once the input's buffers fit the pool, nothing allocates.
#[test]
fn credit_builds_and_picks_allocate_nothing() {
    use workerpick::{CacheHits, Cost, Temperature, WorkerToken};
    for workers in [8u64, 1024, 5000] {
        let pool = Pool::from_workers(0..workers).unwrap();
        let credited: Vec<(u64, u32)> = (0..workers)
            .step_by(100)
            .map(|w| (w, 1 + (w % 7) as u32))
            .collect();
        let tokens: Vec<(WorkerToken, u32)> = credited
            .iter()
            .map(|&(w, o)| (WorkerToken::of(&pool, &w).unwrap(), o))
            .collect();
        let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
        let mut hits = CacheHits::new();
        let mut h = pool.handle();
        let mut run = || {
            for mode in [Cost::new(), soft] {
                hits.rebuild_tokens(&pool, 16, tokens.iter().copied());
                drop(h.reserve_with(&mode, &Request::new().cache_hits(&hits)).unwrap());
                hits.rebuild_sparse(&pool, 16, credited.iter().map(|(w, o)| (w, *o)));
                drop(h.reserve_with(&mode, &Request::new().cache_hits(&hits)).unwrap());
            }
        };
        run();
        let n = allocations(|| (0..50).for_each(|_| run()));
        assert_eq!(n, 0, "{workers} workers: {n} allocations");
    }
}
