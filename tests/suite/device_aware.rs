//! The device-aware mode against its documented rule, example by example, and against
//! a sequential reference model.

use proptest::prelude::*;
use std::collections::HashMap;
use workerpick::{CacheHits, DeviceAware, DeviceKind, Error, Pool, Request, Reservation, Rng, WorkerInfo};

use crate::common::counting::allocations;

const CPU: WorkerInfo = WorkerInfo::new().device(DeviceKind::Cpu);
const ACC: WorkerInfo = WorkerInfo::new();

/// A pool of workers named by their index, with the given kinds.
fn pool_of(kinds: &[WorkerInfo]) -> Pool<usize> {
    let pool = Pool::new();
    for (i, &info) in kinds.iter().enumerate() {
        pool.insert_with(i, info).unwrap();
    }
    pool
}

fn kind(pool: &Pool<usize>, w: usize) -> DeviceKind {
    pool.info(&w).unwrap().device_kind()
}

#[test]
fn all_idle_the_first_request_goes_to_an_accelerator() {
    let layouts: [&[WorkerInfo]; 4] = [
        &[CPU, ACC],
        &[CPU, CPU, CPU, ACC],
        &[ACC, CPU],
        &[CPU, ACC, CPU, ACC, CPU],
    ];
    for kinds in layouts {
        for r in [1, 2, 8, 100] {
            for seed in 0..20 {
                let pool = pool_of(kinds);
                let mode = DeviceAware::with_cpu_ratio(r).unwrap();
                let mut h = pool.handle_with_rng(Rng::with_seed(seed));
                assert_eq!(kind(&pool, *h.preview(&mode).unwrap()), DeviceKind::Accelerator);
                let first = h.reserve(&mode).unwrap();
                assert_eq!(kind(&pool, *first.worker()), DeviceKind::Accelerator);
            }
        }
    }
}

#[test]
fn one_cpu_one_accelerator_ratio_1_alternates() {
    let pool = pool_of(&[CPU, ACC]);
    let mode = DeviceAware::with_cpu_ratio(1).unwrap();
    let held: Vec<_> = (0..10).map(|_| pool.reserve(&mode).unwrap()).collect();
    let kinds: Vec<_> = held.iter().map(|r| kind(&pool, *r.worker())).collect();
    let expected: Vec<_> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                DeviceKind::Accelerator
            } else {
                DeviceKind::Cpu
            }
        })
        .collect();
    assert_eq!(kinds, expected);
}

#[test]
fn ratio_8_the_accelerator_takes_8_in_flight_before_the_cpu_its_first() {
    for mode in [DeviceAware::new(), DeviceAware::with_cpu_ratio(8).unwrap()] {
        let pool = pool_of(&[ACC, CPU]);
        let held: Vec<_> = (0..18).map(|_| pool.reserve(&mode).unwrap()).collect();
        let order: Vec<_> = held.iter().map(|r| *r.worker()).collect();
        let mut expected = vec![0; 8];
        expected.push(1);
        expected.extend([0; 8]);
        expected.push(1);
        assert_eq!(order, expected);
        assert_eq!(pool.in_flight(&0), Some(16));
        assert_eq!(pool.in_flight(&1), Some(2));
    }
}

#[test]
fn ratio_scales_with_group_sizes_and_weights() {
    // 2 CPUs, 4 accelerators, r = 2: allowed = acc_total * 2 / 8.
    let pool = pool_of(&[ACC, ACC, CPU, ACC, CPU, ACC]);
    let mode = DeviceAware::with_cpu_ratio(2).unwrap();
    let _acc = [0, 1, 3, 5].map(|w| pool.reserve_worker(&w, 10).unwrap());
    // acc_total 40 → allowed 10: CPUs take load until their total reaches 10.
    let cpu_load = |pool: &Pool<usize>| pool.in_flight(&2).unwrap() + pool.in_flight(&4).unwrap();
    let mut held = Vec::new();
    while cpu_load(&pool) < 10 {
        let r = pool.reserve_with(&mode, &Request::new().weight(3)).unwrap();
        assert_eq!(kind(&pool, *r.worker()), DeviceKind::Cpu);
        held.push(r);
    }
    let r = pool.reserve(&mode).unwrap();
    assert_eq!(kind(&pool, *r.worker()), DeviceKind::Accelerator);
}

#[test]
fn one_group_picks_its_least_loaded() {
    let pool = pool_of(&[CPU, CPU, CPU]);
    let _busy = [
        pool.reserve_worker(&0, 3).unwrap(),
        pool.reserve_worker(&2, 1).unwrap(),
    ];
    let mode = DeviceAware::with_cpu_ratio(1).unwrap();
    assert_eq!(pool.select(&mode).unwrap(), 1);

    let pool = pool_of(&[ACC, ACC]);
    let _busy = pool.reserve_worker(&0, 5).unwrap();
    assert_eq!(pool.select(&mode).unwrap(), 1);
}

#[test]
fn full_hit_goes_to_the_least_loaded_holder_and_charges_nothing() {
    let pool = pool_of(&[ACC, CPU, ACC, CPU]);
    let _busy = [
        pool.reserve_worker(&1, 50).unwrap(),
        pool.reserve_worker(&3, 40).unwrap(),
    ];
    // Workers 1 and 3 hold all 3 keys; 0 holds 2 (not a full hit).
    let hits = CacheHits::build(&pool, 3, |&w| match w {
        1 | 3 => 3,
        0 => 2,
        _ => 0,
    });
    let req = Request::new().cache_hits(&hits).weight(7);
    let mode = DeviceAware::new();
    for _ in 0..10 {
        let r = pool.reserve_with(&mode, &req).unwrap();
        assert_eq!(*r.worker(), 3);
        assert_eq!(r.weight(), 0);
        assert_eq!(pool.in_flight(&3), Some(40));
        drop(r);
    }
    assert_eq!(pool.select_with(&mode, &req).unwrap(), 3);
    assert_eq!(pool.preview_with(&mode, &req).unwrap(), 3);
}

#[test]
fn partial_hits_and_nothing_needed_are_not_full_hits() {
    let pool = pool_of(&[ACC, ACC]);
    let _busy = pool.reserve_worker(&1, 9).unwrap();
    let mode = DeviceAware::new();
    // Worker 1 holds 3 of 4 keys: not full; the ordinary rule picks 0.
    let partial = CacheHits::build(&pool, 4, |&w| if w == 1 { 3 } else { 0 });
    assert_eq!(
        pool.select_with(&mode, &Request::new().cache_hits(&partial))
            .unwrap(),
        0
    );
    // Nothing needed: no worker "holds all of nothing".
    let nothing = CacheHits::build(&pool, 0, |&w| if w == 1 { 5 } else { 0 });
    let r = pool
        .reserve_with(&mode, &Request::new().cache_hits(&nothing))
        .unwrap();
    assert_eq!((*r.worker(), r.weight()), (0, 1));
}

#[test]
fn only_eligible_workers_are_picked() {
    let pool = pool_of(&[ACC, CPU, ACC, CPU]);
    let mode = DeviceAware::new();
    // Idle, but the accelerators are masked out: a CPU.
    let cpus = pool.eligibility(|&w| w % 2 == 1);
    for _ in 0..20 {
        let r = pool.reserve_with(&mode, &Request::new().eligible(&cpus)).unwrap();
        assert_eq!(kind(&pool, *r.worker()), DeviceKind::Cpu);
    }
    // The full hit is masked out: no full hit among the candidates.
    let hits = CacheHits::build(&pool, 1, |&w| u32::from(w == 0));
    let not_0 = pool.eligibility(|&w| w != 0);
    let req = Request::new().eligible(&not_0).cache_hits(&hits);
    for _ in 0..20 {
        let r = pool.reserve_with(&mode, &req).unwrap();
        assert_eq!(*r.worker(), 2);
        assert_eq!(r.weight(), 1);
    }
    let none = pool.eligibility(|_| false);
    assert_eq!(
        pool.select_with(&mode, &Request::new().eligible(&none)),
        Err(Error::NoEligibleWorker)
    );
    assert_eq!(Pool::<u8>::new().select(&mode), Err(Error::NoWorkers));
}

fn assert_uniform(counts: &HashMap<usize, u32>, expected: &[usize], draws: u32) {
    let mut seen: Vec<_> = counts.keys().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, expected, "picked outside the tied workers");
    let share = f64::from(draws) / expected.len() as f64;
    for (&w, &n) in counts {
        let off = (f64::from(n) - share).abs() / share;
        assert!(off < 0.06, "worker {w} picked {n} times, expected about {share}");
    }
}

#[test]
fn ties_are_uniform_in_every_group() {
    const DRAWS: u32 = 20_000;
    let pool = pool_of(&[CPU, ACC, ACC, CPU, ACC, CPU, ACC]);
    let mode = DeviceAware::new();
    let mut h = pool.handle_with_rng(Rng::with_seed(7));

    // All idle: accelerators 1, 2, 4, 6 tie.
    let mut counts = HashMap::new();
    for _ in 0..DRAWS {
        *counts.entry(*h.preview(&mode).unwrap()).or_insert(0) += 1;
    }
    assert_uniform(&counts, &[1, 2, 4, 6], DRAWS);

    // Accelerators loaded past the ratio: CPUs 0, 3, 5 tie.
    let _busy = [1, 2, 4, 6].map(|w| pool.reserve_worker(&w, 100).unwrap());
    let mut counts = HashMap::new();
    for _ in 0..DRAWS {
        *counts.entry(*h.preview(&mode).unwrap()).or_insert(0) += 1;
    }
    assert_uniform(&counts, &[0, 3, 5], DRAWS);

    // Full hits on 2, 3 and 6; 2 and 6 are equally loaded, 3 is not.
    let _more = pool.reserve_worker(&3, 500).unwrap();
    let hits = CacheHits::build(&pool, 2, |&w| if [2, 3, 6].contains(&w) { 2 } else { 0 });
    let req = Request::new().cache_hits(&hits);
    let mut counts = HashMap::new();
    for _ in 0..DRAWS {
        *counts.entry(*h.preview_with(&mode, &req).unwrap()).or_insert(0) += 1;
    }
    assert_uniform(&counts, &[2, 6], DRAWS);
}

#[test]
fn set_info_changes_the_device_kind_in_place() {
    let pool = pool_of(&[ACC, ACC]);
    let mode = DeviceAware::with_cpu_ratio(1).unwrap();
    let _busy = pool.reserve_worker(&0, 1).unwrap();
    // Both accelerators: the idle one.
    assert_eq!(pool.select(&mode).unwrap(), 1);
    // Make worker 1 a CPU: acc_total 1, allowed 1, CPU total 0 → the CPU.
    pool.set_info(&1, CPU).unwrap();
    assert_eq!(pool.select(&mode).unwrap(), 1);
    // Make worker 0 the CPU instead: acc_total 0 → allowed 0 → accelerator 1.
    pool.set_info(&1, ACC).unwrap();
    pool.set_info(&0, CPU).unwrap();
    assert_eq!(pool.select(&mode).unwrap(), 1);
    assert_eq!(pool.in_flight(&0), Some(1));
}

#[test]
fn set_infos_changes_many_at_once_or_none() {
    let pool = pool_of(&[ACC, ACC, ACC, ACC]);
    let _busy = pool.reserve_worker(&0, 2).unwrap();
    pool.set_infos([(1, CPU), (3, CPU.group(2))]).unwrap();
    let infos: Vec<_> = (0..4).map(|w| pool.info(&w).unwrap()).collect();
    assert_eq!(infos, [ACC, CPU, ACC, CPU.group(2)]);
    assert_eq!(pool.in_flight(&0), Some(2));
    // Refused whole: an unknown worker, one named twice, a rank count
    // changed, bad attributes; the set keeps its attributes.
    assert_eq!(pool.set_infos([(0, CPU), (9, CPU)]), Err(Error::UnknownWorker));
    assert_eq!(pool.set_infos([(0, CPU), (0, ACC)]), Err(Error::DuplicateWorker));
    assert!(matches!(
        pool.set_infos([(0, CPU), (2, ACC.ranks(2))]),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(pool.set_infos([(0, CPU), (2, ACC.capacity(0))]).is_err());
    assert_eq!((0..4).map(|w| pool.info(&w).unwrap()).collect::<Vec<_>>(), infos);
    // Nothing to change is no error.
    pool.set_infos([]).unwrap();
}

#[test]
fn cache_hits_follow_worker_identity_across_set_changes() {
    let pool = pool_of(&[ACC, ACC, ACC]);
    let mode = DeviceAware::new();
    let hits = CacheHits::build(&pool, 1, |&w| u32::from(w == 2));
    let req = Request::new().cache_hits(&hits);
    assert_eq!(pool.select_with(&mode, &req).unwrap(), 2);

    // Worker 2 leaves; worker 9 takes its slot (nothing in flight on 2).
    pool.remove(&2).unwrap();
    pool.reclaim();
    pool.insert(9).unwrap();
    assert_eq!(pool.stats().capacity, 3, "worker 9 should reuse worker 2's slot");
    let _busy = [0, 1].map(|w| pool.reserve_worker(&w, 1).unwrap());
    for _ in 0..20 {
        let r = pool.reserve_with(&mode, &req).unwrap();
        assert_eq!(*r.worker(), 9);
        assert_eq!(r.weight(), 1, "the new worker inherited the old one's hits");
    }

    // A worker that stays keeps its hits through unrelated changes.
    let hits = CacheHits::build(&pool, 1, |&w| u32::from(w == 0));
    pool.insert(10).unwrap();
    pool.remove(&1).unwrap();
    let r = pool
        .reserve_with(&mode, &Request::new().cache_hits(&hits))
        .unwrap();
    assert_eq!((*r.worker(), r.weight()), (0, 0));
}

#[test]
fn cache_hits_from_another_pool_are_refused() {
    let a = pool_of(&[ACC]);
    let b = pool_of(&[ACC]);
    let hits = CacheHits::build(&a, 1, |_| 1);
    let err = b
        .select_with(&DeviceAware::new(), &Request::new().cache_hits(&hits))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidConfig {
                what: "cache hits",
                ..
            }
        ),
        "{err}"
    );
    // A never-built input carries no hits and fits any pool.
    let empty = CacheHits::new();
    let r = b
        .reserve_with(&DeviceAware::new(), &Request::new().cache_hits(&empty))
        .unwrap();
    assert_eq!(r.weight(), 1);
}

#[test]
fn sparse_and_dense_builds_agree() {
    let pool = pool_of(&[ACC, CPU, ACC, CPU, ACC]);
    let mut sparse = CacheHits::new();
    sparse.rebuild_sparse(&pool, 2, [(&1, 2), (&4, 1), (&77, 2)]);
    let dense = CacheHits::build(&pool, 2, |&w| match w {
        1 => 2,
        4 => 1,
        _ => 0,
    });
    let mode = DeviceAware::new();
    for hits in [&sparse, &dense] {
        let r = pool
            .reserve_with(&mode, &Request::new().cache_hits(hits))
            .unwrap();
        assert_eq!((*r.worker(), r.weight()), (1, 0));
        assert_eq!(hits.needed(), 2);
    }
}

#[test]
fn zero_ratio_is_an_error_not_a_default() {
    let err = DeviceAware::with_cpu_ratio(0).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }));
    assert!(err.to_string().contains("cpu-ratio"), "{err}");
    assert_eq!(DeviceAware::default().cpu_ratio(), 8);
    assert_eq!(
        DeviceAware::with_cpu_ratio(u32::MAX).unwrap().cpu_ratio(),
        u32::MAX
    );
}

#[test]
fn huge_loads_do_not_overflow() {
    let pool = pool_of(&[CPU, ACC, ACC]);
    let _busy = [1, 2].map(|w| pool.reserve_worker(&w, u32::MAX - 1).unwrap());
    for r in [1, u32::MAX] {
        let mode = DeviceAware::with_cpu_ratio(r).unwrap();
        let expected = if r == 1 { 0 } else { 1 };
        let w = pool.select(&mode).unwrap();
        assert!(w == expected || (r != 1 && w == 2), "ratio {r} picked {w}");
    }
}

#[test]
fn no_allocation_per_pick() {
    let pool = pool_of(&[CPU, ACC, CPU, ACC, ACC, CPU, ACC, ACC]);
    let mode = DeviceAware::with_cpu_ratio(2).unwrap();
    let mask = pool.eligibility(|&w| w != 3);
    let mut hits = CacheHits::new();
    hits.rebuild_sparse(&pool, 4, [(&2, 4), (&5, 4)]);
    let mut h = pool.handle();
    // Warm the handle's cache.
    drop(h.reserve(&mode).unwrap());
    let mut held: [Option<Reservation<'_, usize>>; 16] = Default::default();
    let n = allocations(|| {
        for i in 0..4096 {
            let full = Request::new().eligible(&mask).cache_hits(&hits);
            let req = if i % 3 == 0 { full } else { Request::new() };
            held[i % 16] = Some(h.reserve_with(&mode, &req).unwrap());
            let _ = h.preview_with(&mode, &req).unwrap();
            if i % 64 == 0 {
                // Refill the reusable input: no allocation once it fits.
                hits.rebuild_sparse(&pool, 4, [(&2, 4), (&5, 4)]);
            }
        }
        drop(held);
    });
    assert_eq!(n, 0);
}

#[test]
fn least_loaded_within_a_group_is_exact_under_threads() {
    const THREADS: u64 = 4;
    const EACH: usize = 400;
    let pool = pool_of(&[ACC; 8]);
    let mode = DeviceAware::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let pool = &pool;
                s.spawn(move || {
                    let mut h = pool.handle_with_rng(Rng::with_seed(t));
                    (0..EACH).map(|_| h.reserve(&mode).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        let held: Vec<_> = handles.into_iter().map(|t| t.join().unwrap()).collect();
        for w in 0..8 {
            assert_eq!(pool.in_flight(&w), Some(200));
        }
        drop(held);
    });
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
}

/// One worker as the reference model sees it.
#[derive(Clone, Debug)]
struct Model {
    cpu: bool,
    load: u32,
    held: u32,
    eligible: bool,
}

/// The workers the device-aware rule allows, and whether the pick is charged.
fn reference(ws: &[Model], needed: u32, r: u32) -> (Vec<usize>, bool) {
    let cands: Vec<usize> = (0..ws.len()).filter(|&i| ws[i].eligible).collect();
    let least = |keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
        let group: Vec<usize> = cands.iter().copied().filter(|&i| keep(i)).collect();
        let min = group.iter().map(|&i| ws[i].load).min();
        group.into_iter().filter(|&i| Some(ws[i].load) == min).collect()
    };
    if needed > 0 {
        let full = least(&|i| ws[i].held >= needed);
        if !full.is_empty() {
            return (full, false);
        }
    }
    let cpus = least(&|i| ws[i].cpu);
    let accs = least(&|i| !ws[i].cpu);
    if cpus.is_empty() || accs.is_empty() {
        return (least(&|_| true), true);
    }
    let total = |cpu: bool| -> u64 {
        cands
            .iter()
            .filter(|&&i| ws[i].cpu == cpu)
            .map(|&i| u64::from(ws[i].load))
            .sum()
    };
    let count = |cpu: bool| cands.iter().filter(|&&i| ws[i].cpu == cpu).count() as u64;
    let allowed = total(false).saturating_mul(count(true)) / (u64::from(r) * count(false));
    if total(true) < allowed {
        (cpus, true)
    } else {
        (accs, true)
    }
}

fn model_strategy() -> impl Strategy<Value = (Vec<Model>, u32, u32, u64)> {
    let worker = (any::<bool>(), 0u32..12, 0u32..4, prop::bool::weighted(0.8)).prop_map(
        |(cpu, load, held, eligible)| Model {
            cpu,
            load,
            held,
            eligible,
        },
    );
    (
        prop::collection::vec(worker, 1..12),
        0u32..4,
        1u32..10,
        any::<u64>(),
    )
}

proptest! {
    #[test]
    fn matches_the_reference((ws, needed, r, seed) in model_strategy()) {
        let pool = Pool::new();
        for (i, w) in ws.iter().enumerate() {
            pool.insert_with(i, if w.cpu { CPU } else { ACC }).unwrap();
        }
        let _loads: Vec<_> = ws
            .iter()
            .enumerate()
            .filter(|(_, w)| w.load > 0)
            .map(|(i, w)| pool.reserve_worker(&i, w.load).unwrap())
            .collect();
        let mask = pool.eligibility(|&i| ws[i].eligible);
        let hits = CacheHits::build(&pool, needed, |&i| ws[i].held);
        let req = Request::new().eligible(&mask).cache_hits(&hits);
        let mode = DeviceAware::with_cpu_ratio(r).unwrap();
        let mut h = pool.handle_with_rng(Rng::with_seed(seed));
        if ws.iter().all(|w| !w.eligible) {
            prop_assert_eq!(h.select_with(&mode, &req), Err(Error::NoEligibleWorker));
            return Ok(());
        }
        let (allowed, charged) = reference(&ws, needed, r);
        for _ in 0..4 {
            let w = *h.preview_with(&mode, &req).unwrap();
            prop_assert!(allowed.contains(&w), "preview {} not in {:?}", w, allowed);
        }
        let res = h.reserve_with(&mode, &req).unwrap();
        let w = *res.worker();
        prop_assert!(allowed.contains(&w), "reserve {} not in {:?}", w, allowed);
        prop_assert_eq!(res.weight(), u32::from(charged));
        prop_assert_eq!(pool.in_flight(&w), Some(ws[w].load + u32::from(charged)));
    }
}

proptest! {
    /// No mask, no cache hits: the path that reads the groups as scan masks
    /// (one kind, or a mixed fleet), on fleets past the scan's few-lane cut.
    #[test]
    fn matches_the_reference_unmasked_without_hits(
        (mut ws, _, r, seed) in model_strategy(),
        more in prop::collection::vec((any::<bool>(), 0u32..3), 0..90),
    ) {
        ws.extend(more.into_iter().map(|(cpu, load)| Model { cpu, load, held: 0, eligible: true }));
        for w in &mut ws {
            w.eligible = true;
        }
        let pool = Pool::new();
        for (i, w) in ws.iter().enumerate() {
            pool.insert_with(i, if w.cpu { CPU } else { ACC }).unwrap();
        }
        let _loads: Vec<_> = ws
            .iter()
            .enumerate()
            .filter(|(_, w)| w.load > 0)
            .map(|(i, w)| pool.reserve_worker(&i, w.load).unwrap())
            .collect();
        let mode = DeviceAware::with_cpu_ratio(r).unwrap();
        let mut h = pool.handle_with_rng(Rng::with_seed(seed));
        let (allowed, charged) = reference(&ws, 0, r);
        prop_assert!(charged);
        for _ in 0..4 {
            let w = h.select(&mode).unwrap();
            prop_assert!(allowed.contains(w), "select {} not in {:?}", w, allowed);
        }
        let res = h.reserve(&mode).unwrap();
        let w = *res.worker();
        prop_assert!(allowed.contains(&w), "reserve {} not in {:?}", w, allowed);
        prop_assert_eq!(pool.in_flight(&w), Some(ws[w].load + 1));
    }
}

/// One kind of device, no cache hits, equal capacities: rule 2 over every
/// candidate is least-loaded's pick, and takes least-loaded's scan (SIMD, the
/// per-block bounds from 1 024 workers), so the same random stream gives the
/// same answers pick for pick, health marks and masks included. Where the
/// fleet mixes kinds, or the request carries hits, the rule's own pass runs.
#[test]
fn one_kind_without_hits_picks_as_least_loaded_does() {
    use workerpick::LeastLoaded;
    for (n, kind) in [(8usize, ACC), (2048, ACC), (4096, CPU)] {
        let pool = pool_of(&vec![kind; n]);
        let held: Vec<Reservation<'_, usize>> = (0..n)
            .filter(|w| w % 3 != 0)
            .flat_map(|w| (0..1 + w % 4).map(move |_| w))
            .map(|w| {
                pool.reserve_with(
                    &LeastLoaded,
                    &Request::new().eligible(&pool.eligibility(|&x| x == w)),
                )
                .unwrap()
            })
            .collect();
        for w in (0..n).step_by(7) {
            pool.set_healthy(&w, false).unwrap();
        }
        let odd = pool.eligibility(|w| w % 2 == 1);
        for request in [Request::new(), Request::new().eligible(&odd)] {
            let mut a = pool.handle_with_rng(Rng::with_seed(7));
            let mut b = pool.handle_with_rng(Rng::with_seed(7));
            // Each pick sees the same loads: device-aware's booking is
            // released before least-loaded's, which stays held.
            let mut kept = Vec::new();
            for _ in 0..200 {
                let da = *a.reserve_with(&DeviceAware::new(), &request).unwrap().worker();
                let ll = b.reserve_with(&LeastLoaded, &request).unwrap();
                assert_eq!(da, *ll.worker(), "{n} workers");
                kept.push(ll);
            }
        }
        drop(held);
    }
}
