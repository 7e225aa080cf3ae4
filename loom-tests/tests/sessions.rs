//! Model: a session binding racing its worker's removal, and the reuse of
//! the worker's slot by a worker inserted after it.
//!
//! What is modelled is the decision `Sessions::reserve` makes once it has
//! looked the session up (`affinity::binding`, through the hidden
//! `Handle::reserve_bound`): the binding names a slot and an identity
//! generation, and the snapshot the handle holds for the request decides.
//! The map that stores bindings (`papaya`) is not loom-aware and is left
//! out: its operations are linearizable on their own, and the decision
//! reads nothing from it but the binding.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{Error, LeastLoaded, Pool, Request};

/// A hard-bound request for worker 0 races a thread that removes 0 and
/// inserts 2 (which may take 0's slot once nothing names it). The request
/// books 0 itself, or fails as gone; it never books 2 through 0's binding,
/// and after the removal returned no request books 0.
#[test]
fn a_binding_racing_its_workers_removal_books_it_or_finds_it_gone() {
    model("session_removal", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let bound = pool.binding_target(&0).unwrap();
        let swapper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&0).unwrap();
                pool.insert(2).unwrap();
            })
        };
        // Made here, the handle may hold the set from before the removal,
        // from between it and the insert, or from after both.
        let mut h = pool.handle();
        let (picked, outcome) = h.reserve_bound(&LeastLoaded::new(), &Request::new(), Some(bound), true);
        match picked {
            Ok(r) => {
                assert_eq!(*r.worker(), 0, "a binding booked another worker");
                assert_eq!((outcome.gone, outcome.chosen), (false, Some(bound)));
                assert_eq!(pool.in_flight(&2).unwrap_or(0), 0, "charged 0's successor");
            }
            Err(e) => {
                assert_eq!(e, Error::SessionWorkerGone);
                assert!(outcome.gone);
            }
        }
        swapper.join().unwrap();
        let (after, outcome) = h.reserve_bound(&LeastLoaded::new(), &Request::new(), Some(bound), true);
        assert_eq!(
            after.err(),
            Some(Error::SessionWorkerGone),
            "booked after its removal returned"
        );
        assert!(outcome.gone);
        // Soft: the selector's pick, noted for the session to bind to.
        let (soft, outcome) = h.reserve_bound(&LeastLoaded::new(), &Request::new(), Some(bound), false);
        let r = soft.unwrap();
        assert_ne!(*r.worker(), 0);
        assert_eq!(outcome.chosen, pool.binding_target(r.worker()));
        drop(r);
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}

/// Two requests of one session, each on its own thread and handle, race
/// the removal of their worker: each books 0 or finds it gone, every
/// booking on 0 is released once, and nothing is left in flight.
#[test]
fn bound_requests_on_two_threads_lose_no_booking_to_a_removal() {
    model("session_threads", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let bound = pool.binding_target(&0).unwrap();
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut h = pool.handle();
                let (picked, _) = h.reserve_bound(&LeastLoaded::new(), &Request::new(), Some(bound), false);
                let r = picked.unwrap();
                assert!(*r.worker() == 0 || *r.worker() == 1);
            })
        };
        let mut h = pool.handle();
        let (picked, outcome) = h.reserve_bound(&LeastLoaded::new(), &Request::new(), Some(bound), true);
        pool.remove(&0).unwrap();
        match &picked {
            Ok(r) => assert_eq!(*r.worker(), 0),
            Err(_) => assert!(outcome.gone),
        }
        drop((picked, h));
        other.join().unwrap();
        assert_idle(&pool, [0, 1]);
        assert_storage_settled(&pool);
    });
}
