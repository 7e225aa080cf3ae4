//! Membership changes while reservations are in flight.

use workerpick::{LeastLoaded, Pool, PowerOfTwo, Random, RoundRobin, Selector};

#[test]
fn a_removed_worker_keeps_its_load_until_released() {
    let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
    let held: Vec<_> = (0..3).map(|_| pool.reserve_worker(&"b", 1).unwrap()).collect();
    pool.remove(&"b").unwrap();
    assert!(!pool.contains(&"b"));
    assert_eq!(pool.in_flight(&"b"), Some(3));
    assert_eq!(pool.stats().draining, 1);
    // No pick after the removal returns chooses it.
    let rr = RoundRobin::new();
    let mut h = pool.handle();
    for mode in [&Random as &dyn Selector, &rr, &PowerOfTwo, &LeastLoaded] {
        for _ in 0..50 {
            assert_ne!(*h.select(mode).unwrap(), "b");
        }
    }
    assert!(held.iter().all(|r| *r.worker() == "b"));
    drop(held);
    assert_eq!(pool.in_flight(&"b"), None);
    assert_eq!(pool.reclaim(), 1);
    assert_eq!(pool.stats().draining, 0);
}

#[test]
fn re_adding_a_draining_worker_shows_its_retained_load() {
    let pool = Pool::from_workers([1u32, 2]).unwrap();
    let r = pool.reserve_worker(&1, 5).unwrap();
    pool.remove(&1).unwrap();
    pool.insert(1).unwrap(); // rollback: the same id registers again
    assert_eq!(pool.in_flight(&1), Some(5));
    // Least-loaded sees the retained load.
    assert_eq!(*pool.reserve(&LeastLoaded).unwrap().worker(), 2);
    drop(r);
    assert_eq!(pool.in_flight(&1), Some(0));
    assert_eq!(pool.stats().capacity, 2, "the same slot came back");
}

#[test]
fn storage_is_reused_after_the_last_release() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let r = pool.reserve_worker(&0, 1).unwrap();
    pool.remove(&0).unwrap();
    pool.insert(10).unwrap();
    assert_eq!(
        pool.stats().capacity,
        5,
        "slot 0 still draining: a new one was taken"
    );
    r.release();
    pool.remove(&10).unwrap(); // a writer reclaims drained slots
    let stats = pool.stats();
    assert_eq!((stats.draining, stats.free_slots), (0, 2));
    pool.insert(11).unwrap();
    pool.insert(12).unwrap();
    assert_eq!(pool.stats().capacity, 5, "both freed slots reused");
    assert_eq!(pool.in_flight(&11), Some(0), "a reused slot starts idle");
    assert_eq!(pool.in_flight(&12), Some(0));
}

#[test]
fn replace_keeps_the_load_of_workers_that_stay() {
    let pool = Pool::from_workers([1u32, 2, 3]).unwrap();
    let a = pool.reserve_worker(&2, 2).unwrap();
    let b = pool.reserve_worker(&3, 1).unwrap();
    pool.replace([4, 2, 5]).unwrap();
    assert_eq!(pool.loads(), vec![(4, 0), (2, 2), (5, 0)]);
    assert_eq!(pool.in_flight(&3), Some(1), "3 left but drains");
    assert_eq!(pool.in_flight(&1), None);
    drop((a, b));
    assert!(pool.loads().iter().all(|l| l.1 == 0));
}

#[test]
fn a_cached_handle_sees_every_change_at_its_next_pick() {
    let pool = Pool::from_workers([1u32]).unwrap();
    let mut h = pool.handle();
    assert_eq!(*h.select(&Random).unwrap(), 1);
    pool.replace([2]).unwrap();
    assert_eq!(*h.select(&Random).unwrap(), 2);
    pool.remove(&2).unwrap();
    assert!(h.select(&Random).is_err());
}

#[test]
fn growing_storage_keeps_live_bookings() {
    let pool = Pool::from_workers(0..3u32).unwrap();
    let held: Vec<_> = (0..3).map(|w| pool.reserve_worker(&w, 1).unwrap()).collect();
    for w in 3..2100 {
        pool.insert(w).unwrap(); // several new chunks of counters
    }
    assert_eq!(pool.in_flight(&1), Some(1));
    drop(held);
    assert!(pool.loads().iter().all(|l| l.1 == 0));
    let r = pool.reserve(&LeastLoaded).unwrap();
    assert_eq!(pool.in_flight(r.worker()), Some(1));
}
