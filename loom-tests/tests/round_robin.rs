//! Model 5: concurrent round-robin picks take distinct cursor tickets (none
//! twice, none skipped); a preview never advances the cursor.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::model;
use workerpick::{Pool, RoundRobin};

#[test]
fn round_robin_tickets_are_distinct_and_preview_is_free() {
    model("round_robin", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2]).unwrap());
        let rr = Arc::new(RoundRobin::new());
        let selector = {
            let (pool, rr) = (pool.clone(), rr.clone());
            thread::spawn(move || pool.select(&*rr).unwrap())
        };
        let reserver = {
            let (pool, rr) = (pool.clone(), rr.clone());
            thread::spawn(move || *pool.reserve(&*rr).unwrap().worker())
        };
        let seen = pool.preview(&*rr).unwrap();
        let mut picks = [selector.join().unwrap(), reserver.join().unwrap()];
        picks.sort();
        assert_eq!(picks, [0, 1], "a ticket taken twice or skipped");
        assert!(seen <= 2, "preview saw ticket {seen}");
        assert_eq!(rr.cursor(), 2, "the cursor moved by other than the picks");
        assert_eq!(pool.preview(&*rr).unwrap(), 2);
    });
}
