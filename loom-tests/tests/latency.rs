//! Model 14: a latency sample racing another and a latency-aware pick. A
//! sample is one compare-and-swap on a packed cell, a pick one load of it: under
//! loom the clock stands still, so a success is a 1 µs sample and a failure the
//! 1 s penalty. Whatever the order, the pick sees a whole estimate (the
//! default, the success or the penalty, never a mix of two cells' halves), no
//! sample is lost (the peak survives a later, lower one in the same
//! millisecond), and every booking is given back.
#![cfg(loom)]

use loom::sync::Arc;
use loom_tests::{assert_idle, model};
use std::time::Duration;
use workerpick::{LatencyConfig, LatencyPowerOfTwo, Pool};

#[test]
fn samples_racing_a_pick_land_whole() {
    model("latency_update_pick", || {
        let pool = Arc::new(
            Pool::from_workers([0u32, 1])
                .unwrap()
                .with_latency(LatencyConfig::new())
                .unwrap(),
        );
        let failing = {
            let pool = pool.clone();
            loom::thread::spawn(move || pool.reserve_worker(&0, 1).unwrap().timed().end_failed())
        };
        // A success on 0 and the pick, racing the failure.
        drop(pool.reserve_worker(&0, 1).unwrap().timed());
        let seen = pool.latency(&0).unwrap();
        assert!(
            [
                Duration::from_millis(30),
                Duration::from_micros(1),
                Duration::from_secs(1)
            ]
            .contains(&seen),
            "a torn estimate: {seen:?}"
        );
        drop(pool.reserve(&LatencyPowerOfTwo::new()).unwrap().timed());
        failing.join().unwrap();
        assert!(
            pool.latency(&0).unwrap() >= Duration::from_secs(1),
            "the penalty was lost"
        );
        assert_idle(&pool, [0, 1]);
    });
}
