//! The admission queue: a waiter blocked on a saturated pool, a release that
//! makes room, and a second waiter cancelled meanwhile (before or after a
//! pump admitted it). Every waiter is admitted exactly once or cancelled with
//! nothing booked, and none is stranded while room exists: a lost wake-up
//! leaves the blocked waiter parked forever, which loom reports as a deadlock.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use loom_tests::{assert_idle, model};
use workerpick::queue::{Entry, Queue, QueueConfig};
use workerpick::{LeastLoaded, Pool};

fn saturated_queue() -> Queue<u32, LeastLoaded> {
    // The queue holds its pool in a std `Arc` (its owned admissions' anchor
    // is one); the pool's own count is not what this model checks.
    let pool = std::sync::Arc::new(Pool::from_workers([0u32]).unwrap());
    let config = QueueConfig::new().capacity(2).tenants(&[1, 1]).in_flight_limit(1);
    Queue::new(pool, LeastLoaded::new(), config).unwrap()
}

#[test]
fn admit_cancel_release_admits_each_waiter_once_and_strands_none() {
    model("queue", || {
        let queue = Arc::new(saturated_queue());
        // Admissions held now: at most the limit, 1 (a booking that raced
        // for the last room and gave it back is not one).
        let holding = Arc::new(AtomicUsize::new(1));
        let held = queue.enqueue(Entry::new()).unwrap().wait().unwrap();
        let hold = |holding: &AtomicUsize| assert_eq!(holding.fetch_add(1, SeqCst), 0, "two admissions held");
        let waiter = {
            let (queue, holding) = (queue.clone(), holding.clone());
            thread::spawn(move || {
                let admitted = queue.enqueue(Entry::new().tenant(0)).unwrap().wait().unwrap();
                hold(&holding);
                holding.fetch_sub(1, SeqCst);
                drop(admitted);
            })
        };
        let canceller = {
            let (queue, holding) = (queue.clone(), holding.clone());
            thread::spawn(move || {
                // Booked at once, or queued: asked once, then dropped (a
                // pump may admit it between the two).
                let mut ticket = queue.enqueue(Entry::new().tenant(1)).unwrap();
                if let Some(admitted) = ticket.try_admit().unwrap() {
                    hold(&holding);
                    holding.fetch_sub(1, SeqCst);
                    drop(admitted);
                }
                drop(ticket);
            })
        };
        holding.fetch_sub(1, SeqCst);
        drop(held);
        waiter.join().unwrap();
        canceller.join().unwrap();
        assert_eq!(queue.waiting(), 0, "a waiter left behind");
        assert_idle(queue.pool(), [0]);
    });
}

/// The same race through the `'static` forms a server's tasks hold: owned
/// tickets and admissions (each holds the queue's `Arc`; an admission
/// releases through the queue's anchor). Each is admitted once or
/// cancelled, and once all are gone nothing still holds the queue.
#[test]
fn owned_tickets_admit_once_and_leave_no_reference() {
    model("queue_owned", || {
        // `enqueue_owned` takes a std `Arc` (the model's atomics are inside).
        let queue = std::sync::Arc::new(saturated_queue());
        let holding = Arc::new(AtomicUsize::new(1));
        let held = queue.enqueue_owned(Entry::new()).unwrap().wait().unwrap();
        let hold = |holding: &AtomicUsize| assert_eq!(holding.fetch_add(1, SeqCst), 0, "two admissions held");
        let waiter = {
            let (queue, holding) = (queue.clone(), holding.clone());
            thread::spawn(move || {
                let ticket = queue.enqueue_owned(Entry::new().tenant(0)).unwrap();
                drop(queue); // only the ticket, then the admission, holds it now
                let admitted = ticket.wait().unwrap();
                hold(&holding);
                holding.fetch_sub(1, SeqCst);
                drop(admitted);
            })
        };
        let canceller = {
            let (queue, holding) = (queue.clone(), holding.clone());
            thread::spawn(move || {
                let mut ticket = queue.enqueue_owned(Entry::new().tenant(1)).unwrap();
                drop(queue);
                if let Some(admitted) = ticket.try_admit().unwrap() {
                    hold(&holding);
                    holding.fetch_sub(1, SeqCst);
                    drop(admitted);
                }
                drop(ticket);
            })
        };
        holding.fetch_sub(1, SeqCst);
        drop(held);
        waiter.join().unwrap();
        canceller.join().unwrap();
        assert_eq!(queue.waiting(), 0, "a waiter left behind");
        assert_eq!(
            std::sync::Arc::strong_count(&queue),
            1,
            "a ticket or an admission still holds the queue"
        );
        assert_idle(queue.pool(), [0]);
    });
}
