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

fn saturated_queue() -> Arc<Queue<u32, LeastLoaded>> {
    // The queue holds its pool in a std `Arc` (its owned admissions' anchor
    // is one); the pool's own count is not what this model checks.
    let pool = std::sync::Arc::new(Pool::from_workers([0u32]).unwrap());
    let config = QueueConfig::new().capacity(2).tenants(&[1, 1]).in_flight_limit(1);
    Arc::new(Queue::new(pool, LeastLoaded::new(), config).unwrap())
}

#[test]
fn admit_cancel_release_admits_each_waiter_once_and_strands_none() {
    model("queue", || {
        let queue = saturated_queue();
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
