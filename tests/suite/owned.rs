//! The owned forms: `'static` handles and reservations on an `Arc<Pool<W>>`
//! that move across threads and outlive every other reference to the pool.
//! Small enough to run under Miri (ci/miri.sh), which checks the releases made
//! on other threads for data races.

use std::sync::Arc;
use std::sync::mpsc;
use workerpick::{
    Error, LeastLoaded, OwnedHandle, OwnedReservation, Pool, PowerOfTwo, Random, Request, Rng, RoundRobin,
};

fn rounds(n: usize) -> usize {
    if cfg!(miri) { n.min(8) } else { n }
}

fn all_idle<W: Clone + Eq + std::hash::Hash + Send + Sync>(pool: &Pool<W>) -> bool {
    pool.loads().iter().all(|&(_, load)| load == 0)
}

#[test]
fn owned_forms_are_static_send_and_the_reservation_sync() {
    fn static_send<T: Send + 'static>() {}
    fn sync<T: Sync>() {}
    static_send::<OwnedHandle<String>>();
    static_send::<OwnedReservation<String>>();
    sync::<OwnedReservation<String>>();
}

#[test]
fn reservations_move_to_other_threads_and_release_there() {
    let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
    let mut handle = pool.owned_handle_with_rng(Rng::with_seed(7));
    let (tx, rx) = mpsc::channel::<OwnedReservation<u32>>();
    let releaser = std::thread::spawn(move || rx.into_iter().count());
    let n = rounds(400);
    for _ in 0..n {
        tx.send(handle.reserve(&PowerOfTwo::new()).unwrap()).unwrap();
    }
    drop(tx);
    assert_eq!(releaser.join().unwrap(), n);
    assert!(all_idle(&pool));
}

#[test]
fn handles_on_several_threads_book_exactly() {
    let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
    let per_thread = rounds(200);
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let mut handle = pool.owned_handle_with_rng(Rng::with_seed(t));
            std::thread::spawn(move || {
                // Held until the end: least-loaded with no releases is exact.
                (0..per_thread)
                    .map(|_| handle.reserve(&LeastLoaded::new()).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let held: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let each = (2 * per_thread / 4) as u32;
    assert!(
        pool.loads().iter().all(|&(_, load)| load == each),
        "{:?}",
        pool.loads()
    );
    drop(held);
    assert!(all_idle(&pool));
}

#[test]
fn a_reservation_outlives_every_other_reference_to_the_pool() {
    let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
    let weak = Arc::downgrade(&pool);
    let mut handle = pool.owned_handle();
    let r = handle
        .reserve_with(&Random::new(), &Request::new().weight(3))
        .unwrap();
    drop((pool, handle));
    assert!(weak.upgrade().is_some(), "the reservation keeps the pool");
    assert_eq!(r.pool().in_flight(r.worker()), Some(3));
    r.release();
    assert!(weak.upgrade().is_none(), "the last reservation frees it");
}

#[test]
fn a_removed_worker_keeps_its_owned_load_and_is_never_picked_again() {
    let pool = Arc::new(Pool::from_workers([1, 2]).unwrap());
    let mut handle = pool.owned_handle();
    let r = handle.reserve_worker(&1, 1).unwrap();
    pool.remove(&1).unwrap();
    for _ in 0..rounds(50) {
        assert_eq!(*handle.select(&RoundRobin::new()).unwrap(), 2);
    }
    assert_eq!(handle.reserve_worker(&1, 1).unwrap_err(), Error::UnknownWorker);
    assert_eq!(pool.in_flight(&1), Some(1), "still draining");
    drop(r);
    assert_eq!(pool.in_flight(&1), None);
}

#[test]
fn retarget_moves_one_booking_and_an_uncharged_one_pins() {
    let pool = Arc::new(Pool::from_workers([1, 2, 3]).unwrap());
    let mut handle = pool.owned_handle();
    let mut r = handle.reserve_worker(&1, 2).unwrap();
    r.retarget(&3).unwrap();
    assert_eq!((pool.in_flight(&1), pool.in_flight(&3)), (Some(0), Some(2)));
    assert_eq!(r.retarget(&9), Err(Error::UnknownWorker));
    assert_eq!((*r.worker(), r.weight()), (3, 2));
    let pin = handle.reserve_worker(&2, 0).unwrap();
    pool.remove(&2).unwrap();
    assert_eq!(pool.reclaim(), 0, "a pinned slot is not reused");
    assert_eq!(*pin.worker(), 2);
    drop((r, pin));
    assert!(all_idle(&pool));
}

#[test]
fn cloned_handles_pick_from_the_same_pool() {
    let pool = Arc::new(Pool::from_workers([1, 2]).unwrap());
    let a = pool.owned_handle();
    let mut b = a.clone();
    assert!(Arc::ptr_eq(a.pool(), b.pool()));
    let r = b.reserve(&LeastLoaded::new()).unwrap();
    assert_eq!(pool.in_flight(r.worker()), Some(1));
    assert_eq!(pool.select(&LeastLoaded::new()).ok(), Some(3 - *r.worker()));
}
