//! Model 10: the heterogeneous-fleet controls (health marks, drains, capacity
//! changes) racing picks, bookings, releases and membership changes.
//!
//! A health mark is load added to the worker's counter under the report lock,
//! while picks and releases move the same counter without it: marking and
//! unmarking take out exactly what they added (no booking lost, none left
//! behind), a pick that starts after a mark passes the marked worker over
//! while the other is healthy, and a departed worker's mark is not inherited
//! by whoever takes its slot. A drain stops new picks at once, lets the held
//! reservations finish, and says it is over only once the last one is gone.
#![cfg(loom)]

use loom::sync::Arc;
use loom_tests::{assert_idle, assert_storage_settled, model, spawn_pickers};
use workerpick::{LeastLoaded, Pool, PowerOfTwo, Random, RoundRobin};

/// Marks worker 0 unhealthy and healthy again while another thread books
/// with `reserve`'s mode and releases, and a booking of the main thread's own
/// is held across the toggle: every booking is counted once (the mark is
/// never read as load, nor left behind), and no booking gives up.
fn toggle_health_racing(
    name: &'static str,
    reserve: for<'p> fn(&mut workerpick::Handle<'p, u32>) -> workerpick::Reservation<'p, u32>,
) {
    model(name, move || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 1, move |pool, h, _| {
            let r = reserve(h);
            let load = pool.in_flight(r.worker()).unwrap();
            assert!((1..=2).contains(&load), "load {load} under one guard");
            // Worker 0, which the mark targets, whichever worker was booked.
            let load = pool.in_flight(&0).unwrap();
            assert!(load <= 2, "load {load} on 0 with two guards alive");
            drop(r);
        });
        let held = pool.reserve_worker(&0, 1).unwrap();
        assert_eq!(pool.set_healthy(&0, false), Ok(true));
        assert_eq!(pool.set_healthy(&0, true), Ok(false));
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(pool.is_healthy(&0), Some(true));
        assert_eq!(pool.stats().fallbacks, 0, "a health mark made a booking give up");
        assert_idle(&pool, [0, 1]);
    });
}

#[test]
fn fleet_health_toggle_racing_least_loaded_leaks_nothing() {
    toggle_health_racing("fleet_health_toggle_ll", |h| {
        h.reserve(&LeastLoaded::new()).unwrap()
    });
}

#[test]
fn fleet_health_toggle_racing_two_choice_leaks_nothing() {
    toggle_health_racing("fleet_health_toggle_p2c", |h| {
        h.reserve(&PowerOfTwo::new()).unwrap()
    });
}

#[test]
fn fleet_health_toggle_racing_round_robin_leaks_nothing() {
    toggle_health_racing("fleet_health_toggle_rr", |h| {
        h.reserve(&RoundRobin::new()).unwrap()
    });
}

/// Once `set_healthy(&0, false)` has returned, a pick that starts after it (in
/// the same thread) never chooses 0 while 1 is healthy, in a load-aware mode
/// or a load-blind one, whatever a concurrent booker does to 1's load.
#[test]
fn fleet_a_pick_after_the_mark_passes_the_unhealthy_worker_over() {
    model("fleet_health_mark_seen", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 1, |_, h, _| {
            h.reserve(&PowerOfTwo::new()).unwrap().release();
        });
        pool.set_healthy(&0, false).unwrap();
        let r = pool.reserve(&LeastLoaded::new()).unwrap();
        assert_eq!(*r.worker(), 1, "least-loaded booked the unhealthy worker");
        assert_eq!(
            pool.select(&Random).unwrap(),
            1,
            "random chose the unhealthy worker"
        );
        let rr = RoundRobin::new();
        for _ in 0..2 {
            assert_eq!(
                pool.select(&rr).unwrap(),
                1,
                "round-robin chose the unhealthy worker"
            );
        }
        drop(r);
        for t in threads {
            t.join().unwrap();
        }
        pool.set_healthy(&0, true).unwrap();
        assert_idle(&pool, [0, 1]);
    });
}

/// A drain of 0 while it holds a reservation and another thread books: picks
/// after the drain go to 1, a reservation on 0 runs to its end, and `drained`
/// is never `Some(true)` while one is held, and is once they are all gone.
#[test]
fn fleet_a_drain_ends_exactly_when_its_last_reservation_does() {
    model("fleet_drain", || {
        // A std `Arc`, for the owned guard that moves to another thread.
        let pool = std::sync::Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let held = pool.owned_handle().reserve_worker(&0, 1).unwrap();
        let picker = {
            let pool = pool.clone();
            loom::thread::spawn(move || {
                let r = pool.reserve(&LeastLoaded::new()).unwrap();
                if *r.worker() == 0 {
                    assert_ne!(pool.drained(&0), Some(true), "drained while a guard holds 0");
                }
                drop(r);
            })
        };
        pool.drain(&0).unwrap();
        assert_eq!(pool.drained(&0), Some(false), "drained while a guard holds 0");
        let r = pool.reserve(&LeastLoaded::new()).unwrap();
        assert_eq!(*r.worker(), 1, "a pick after the drain chose the drained worker");
        drop(r);
        let releaser = loom::thread::spawn(move || held.release());
        releaser.join().unwrap();
        picker.join().unwrap();
        assert_eq!(pool.drained(&0), Some(true), "every guard on 0 is gone");
        pool.remove(&0).unwrap();
        assert_idle(&pool, [0, 1]);
        assert_storage_settled(&pool);
    });
}

/// Capacity changes (new snapshots) racing a weighted least-loaded booking and
/// a weighted random one: each booking lands on one worker and is released
/// there, whichever snapshot it picked with.
#[test]
fn fleet_capacity_changes_racing_bookings_leak_nothing() {
    model("fleet_set_capacity", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let threads = spawn_pickers(&pool, 2, |pool, h, t| {
            let r = if t == 0 {
                h.reserve(&LeastLoaded::new()).unwrap()
            } else {
                h.reserve(&Random).unwrap()
            };
            let load = pool.in_flight(r.worker()).unwrap();
            assert!((1..=2).contains(&load), "load {load} under one guard");
            drop(r);
        });
        pool.set_capacity(&0, 3).unwrap();
        pool.set_capacity(&1, 2).unwrap();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(pool.info(&0).unwrap().capacity_weight(), 3);
        assert_idle(&pool, [0, 1]);
    });
}

/// An unhealthy worker removed while a reservation on it is released on
/// another thread: the slot drains and is reclaimed, and the worker inserted
/// into it afterwards is healthy and idle (neither the mark nor the booking is
/// passed on).
#[test]
fn fleet_a_removed_unhealthy_worker_passes_on_neither_mark_nor_load() {
    model("fleet_remove_unhealthy", || {
        let pool = std::sync::Arc::new(Pool::with_max_workers(2).unwrap());
        pool.replace([0u32, 1]).unwrap();
        let held = pool.owned_handle().reserve_worker(&1, 1).unwrap();
        pool.set_healthy(&1, false).unwrap();
        let releaser = loom::thread::spawn(move || held.release());
        pool.remove(&1).unwrap();
        releaser.join().unwrap();
        assert_idle(&pool, [1]);
        pool.insert(2).unwrap();
        assert_eq!(pool.is_healthy(&2), Some(true), "a newcomer inherited a mark");
        assert_eq!(pool.in_flight(&2), Some(0), "a newcomer inherited load");
        let r = pool.reserve_worker(&2, 1).unwrap();
        assert_eq!(pool.in_flight(&2), Some(1));
        drop(r);
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}

/// A health mark racing the removal of its worker (the mark resolves the
/// worker again under the report lock; the removal forgets departed workers'
/// marks under it): whichever wins, the slot is reclaimed, and the worker
/// inserted into it is healthy and idle.
#[test]
fn fleet_a_mark_racing_removal_is_not_inherited() {
    model("fleet_mark_racing_remove", || {
        let pool = Arc::new(Pool::with_max_workers(2).unwrap());
        pool.replace([0u32, 1]).unwrap();
        let marker = {
            let pool = pool.clone();
            loom::thread::spawn(move || {
                let got = pool.set_healthy(&1, false);
                assert!(
                    matches!(got, Ok(true) | Err(workerpick::Error::UnknownWorker)),
                    "{got:?}"
                );
            })
        };
        pool.remove(&1).unwrap();
        marker.join().unwrap();
        pool.insert(2).unwrap();
        assert_eq!(pool.is_healthy(&2), Some(true), "a newcomer inherited a mark");
        assert_eq!(pool.in_flight(&2), Some(0), "a newcomer inherited load");
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}
