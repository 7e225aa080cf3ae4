//! Regression tests for bugs the fuzz targets (`fuzz/`) found, one per bug.

use workerpick::{Eligibility, Error, LeastLoaded, Pool, PowerOfTwo, Random, Request, RoundRobin};

/// `fuzz/artifacts/ops/crash-71cfa3b7…`: a mask from `Eligibility::new()`
/// ("admits nothing until rebuilt") was refused as built for another pool.
#[test]
fn an_unbuilt_mask_admits_nothing() {
    let unbuilt = Eligibility::new();
    let req = Request::new().eligible(&unbuilt);

    let empty: Pool<u8> = Pool::new();
    assert_eq!(empty.select_with(&RoundRobin::new(), &req), Err(Error::NoWorkers));

    let pool = Pool::from_workers([1u8, 2, 3]).unwrap();
    assert_eq!(
        pool.select_with(&Random::new(), &req),
        Err(Error::NoEligibleWorker)
    );
    assert_eq!(
        pool.preview_with(&RoundRobin::new(), &req),
        Err(Error::NoEligibleWorker)
    );
    assert!(matches!(
        pool.reserve_with(&LeastLoaded::new(), &req),
        Err(Error::NoEligibleWorker)
    ));
    assert_eq!(
        pool.handle().select_with(&Random::new(), &req),
        Err(Error::NoEligibleWorker)
    );

    // Once built it admits what it was built with.
    let mut mask = Eligibility::new();
    mask.rebuild(&pool, |&w| w == 2);
    assert_eq!(
        pool.select_with(&Random::new(), &Request::new().eligible(&mask)),
        Ok(2)
    );
}

/// `fuzz/artifacts/ops/crash-2bd80fbd…`: two bookings whose weights summed past
/// `u32::MAX` wrapped the worker's count. A count that wraps to 0 under live
/// reservations lets a removed worker's slot be reused while they still name it.
#[test]
fn a_booking_never_wraps_the_load() {
    let pool = Pool::from_workers([7u8, 8]).unwrap();
    let big = pool.reserve_worker(&7, 3_318_072_773).unwrap();
    assert_eq!(
        pool.reserve_worker(&7, 1_271_252_421).err(),
        Some(Error::LoadOverflow)
    );
    assert_eq!(pool.in_flight(&7), Some(3_318_072_773));

    // Every booking path refuses, and books nothing.
    let heavy = Request::new().weight(u32::MAX);
    let on_7 = pool.eligibility(|&w| w == 7);
    let only_7 = Request::new().weight(u32::MAX).eligible(&on_7);
    assert_eq!(
        pool.reserve_with(&RoundRobin::new(), &only_7).err(),
        Some(Error::LoadOverflow)
    );
    assert_eq!(
        pool.reserve_with(&Random::new(), &only_7).err(),
        Some(Error::LoadOverflow)
    );
    assert_eq!(
        pool.reserve_with(&LeastLoaded::new(), &only_7).err(),
        Some(Error::LoadOverflow)
    );
    assert_eq!(
        pool.handle().reserve_with(&PowerOfTwo::new(), &only_7).err(),
        Some(Error::LoadOverflow)
    );
    let mut full = pool.reserve_with(&LeastLoaded::new(), &heavy).unwrap();
    assert_eq!(*full.worker(), 8);
    assert_eq!(full.retarget(&7), Err(Error::LoadOverflow));
    assert_eq!(
        (pool.in_flight(&7), pool.in_flight(&8)),
        (Some(3_318_072_773), Some(u32::MAX))
    );

    // Up to exactly u32::MAX is fine, and a load at u32::MAX is still least-loaded-comparable.
    let rest = pool.reserve_worker(&7, u32::MAX - 3_318_072_773).unwrap();
    assert_eq!(pool.in_flight(&7), Some(u32::MAX));
    assert_eq!(
        pool.reserve_with(&LeastLoaded::new(), &Request::new().weight(0))
            .map(|r| r.weight()),
        Ok(0)
    );

    // Removed while loaded, the worker drains and disappears.
    pool.remove(&7).unwrap();
    drop((big, rest, full));
    assert_eq!(pool.in_flight(&7), None);
    assert_eq!(pool.in_flight(&8), Some(0));
    assert_eq!(pool.reclaim(), 1);
    assert_eq!(pool.stats().draining, 0);
}

/// `fuzz/artifacts/ops/crash-2daf911a…`: `replace` counted the slots it needed
/// before reclaiming, and reclaiming can turn a draining worker it names into a
/// fresh one. It then ran out of slots half-way, returned `CapacityExceeded`
/// with its member list emptied and two slots assigned to nobody, and every
/// later insert failed.
#[test]
fn a_refused_replace_changes_nothing() {
    let pool = Pool::with_max_workers(2).unwrap();
    pool.insert(5u8).unwrap();
    let old = pool.handle(); // caches a snapshot naming 5
    pool.remove(&5).unwrap(); // 5 drains until that snapshot is gone
    drop(old);
    assert_eq!(pool.stats().draining, 1);

    // 5 is reclaimed on the way and needs a fresh slot too: 3 > 2.
    assert_eq!(pool.replace([5, 2, 0]), Err(Error::CapacityExceeded { limit: 2 }));
    assert!(pool.is_empty());
    let stats = pool.stats();
    assert_eq!((stats.draining, stats.free_slots, stats.capacity), (0, 1, 1));

    pool.insert(1).unwrap();
    pool.insert(2).unwrap();
    assert_eq!(pool.loads(), [(1, 0), (2, 0)]);
    pool.remove(&1).unwrap();
    pool.insert(0).unwrap();
    assert_eq!(pool.loads(), [(2, 0), (0, 0)]);
}

/// CI's fuzz run of `ranks` (round-robin's ticket, a stale mask): a mask
/// built before `replace` reordered the set goes round its workers in its
/// own order (the set's when it was built), not the new set's; the fuzz
/// model expected the new order. The rule, pinned: each still-current
/// worker of the mask once per turn, in the mask's order, and a worker that
/// left and came back is not the mask's any more.
#[test]
fn round_robin_over_a_stale_mask_keeps_the_masks_order() {
    let pool = Pool::from_workers([0u8, 1, 2, 3]).unwrap();
    let mask = pool.eligibility(|&k| k != 3);
    pool.replace([2u8, 1, 0, 3]).unwrap();
    let rr = RoundRobin::new();
    let req = Request::new().eligible(&mask);
    let picks: Vec<u8> = (0..6).map(|_| pool.select_with(&rr, &req).unwrap()).collect();
    assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
    pool.remove(&1).unwrap();
    pool.insert(1).unwrap();
    let picks: Vec<u8> = (0..4).map(|_| pool.select_with(&rr, &req).unwrap()).collect();
    assert_eq!(picks.iter().filter(|&&k| k == 1).count(), 0, "{picks:?}");
    assert_eq!(picks.iter().filter(|&&k| k == 0).count(), 2, "{picks:?}");
}
