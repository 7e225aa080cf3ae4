//! Reservations book exactly what they say and give it back exactly once.

use std::panic::{AssertUnwindSafe, catch_unwind};
use workerpick::{Error, LeastLoaded, Pool, PowerOfTwo, Random, Request, RoundRobin, Selector};

fn all_idle(pool: &Pool<u32>) -> bool {
    pool.loads().iter().all(|&(_, load)| load == 0)
}

#[test]
fn every_mode_books_one_and_gives_it_back() {
    let pool = Pool::from_workers(0..5u32).unwrap();
    let rr = RoundRobin::new();
    for mode in [&Random as &dyn Selector, &PowerOfTwo, &LeastLoaded, &rr] {
        let r = pool.reserve(mode).unwrap();
        assert_eq!(pool.in_flight(r.worker()), Some(1), "{}", mode.name());
        assert_eq!(pool.loads().iter().map(|l| l.1).sum::<u32>(), 1);
        drop(r);
        assert!(all_idle(&pool));
        let mut h = pool.handle();
        let held: Vec<_> = (0..20).map(|_| h.reserve(mode).unwrap()).collect();
        assert_eq!(pool.loads().iter().map(|l| l.1).sum::<u32>(), 20);
        drop(held);
        assert!(all_idle(&pool));
    }
}

#[test]
fn unwinding_releases_every_reservation() {
    let pool = Pool::from_workers(0..3u32).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut h = pool.handle();
        let _a = h.reserve(&LeastLoaded).unwrap();
        let _b = pool.reserve_worker(&2, 7).unwrap();
        let _c = h.reserve_with(&PowerOfTwo, &Request::new().weight(3)).unwrap();
        assert_eq!(pool.loads().iter().map(|l| l.1).sum::<u32>(), 11);
        panic!("request handler failed");
    }));
    assert!(result.is_err());
    assert!(all_idle(&pool));
}

#[test]
fn retarget_moves_exactly_one_booking() {
    let pool = Pool::from_workers([1u32, 2, 3]).unwrap();
    let mut r = pool.reserve_worker(&1, 4).unwrap();
    r.retarget(&3).unwrap();
    assert_eq!((pool.in_flight(&1), pool.in_flight(&3)), (Some(0), Some(4)));
    assert_eq!(*r.worker(), 3);
    r.retarget(&3).unwrap();
    assert_eq!(pool.in_flight(&3), Some(4));
    assert_eq!(r.retarget(&9), Err(Error::UnknownWorker));
    assert_eq!(pool.in_flight(&3), Some(4), "a failed retarget changes nothing");
    drop(r);
    assert!(all_idle(&pool));
}

#[test]
fn pinned_reservations_name_their_worker() {
    let pool = Pool::from_workers([10u32, 20]).unwrap();
    let r = pool.reserve_worker(&20, 1).unwrap();
    assert_eq!(*r.worker(), 20);
    assert_eq!(pool.in_flight(&20), Some(1));
    assert_eq!(pool.reserve_worker(&30, 1).err(), Some(Error::UnknownWorker));
    let mut h = pool.handle();
    assert_eq!(*h.reserve_worker(&10, 2).unwrap().worker(), 10);
    drop(r);
    assert!(all_idle(&pool));
}

#[test]
fn weighted_charges_come_back_exactly() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let mut h = pool.handle();
    let heavy = h
        .reserve_with(&LeastLoaded, &Request::new().weight(1000))
        .unwrap();
    assert_eq!(heavy.weight(), 1000);
    assert_eq!(pool.in_flight(heavy.worker()), Some(1000));
    // The next least-loaded picks avoid the heavy worker.
    let light: Vec<_> = (0..3).map(|_| h.reserve(&LeastLoaded).unwrap()).collect();
    assert!(light.iter().all(|r| r.worker() != heavy.worker()));
    let free = h.reserve_with(&LeastLoaded, &Request::new().weight(0)).unwrap();
    assert_eq!(free.weight(), 0);
    assert_eq!(pool.loads().iter().map(|l| l.1).sum::<u32>(), 1003);
    drop((heavy, light, free));
    assert!(all_idle(&pool));
}

#[test]
fn select_and_preview_book_nothing() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let rr = RoundRobin::new();
    let mut h = pool.handle();
    for mode in [&Random as &dyn Selector, &PowerOfTwo, &LeastLoaded, &rr] {
        for _ in 0..10 {
            h.select(mode).unwrap();
            h.preview(mode).unwrap();
            pool.preview(mode).unwrap();
        }
    }
    assert!(all_idle(&pool));
    assert_eq!(rr.cursor(), 10, "only selects advance the cursor");
}

#[test]
fn errors_say_what_went_wrong() {
    let pool: Pool<u32> = Pool::new();
    assert_eq!(pool.select(&Random).err(), Some(Error::NoWorkers));
    assert_eq!(pool.reserve(&LeastLoaded).err(), Some(Error::NoWorkers));
    pool.insert(1).unwrap();
    assert_eq!(pool.insert(1), Err(Error::DuplicateWorker));
    assert_eq!(pool.remove(&2), Err(Error::UnknownWorker));
    let none = pool.eligibility(|_| false);
    let req = Request::new().eligible(&none);
    assert_eq!(
        pool.select_with(&PowerOfTwo, &req).err(),
        Some(Error::NoEligibleWorker)
    );
    assert!(Error::NoEligibleWorker.to_string().contains("widen the mask"));
    let other: Pool<u32> = Pool::from_workers([1]).unwrap();
    let foreign = other.eligibility(|_| true);
    assert!(matches!(
        pool.select_with(&Random, &Request::new().eligible(&foreign)),
        Err(Error::InvalidConfig { .. })
    ));
    assert_eq!(pool.replace([1, 2, 1]), Err(Error::DuplicateWorker));
    assert_eq!(pool.len(), 1, "a refused replace changes nothing");
}
