//! The latency signal under real threads: timed reservations by both latency
//! modes from four threads for a bounded time, one worker failing every
//! request: no count leaks, the failing worker carries the penalty and draws
//! the least traffic.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use workerpick::{LatencyConfig, LatencyLeastLoaded, LatencyPowerOfTwo, Pool};

#[test]
fn timed_reservations_from_threads_leak_nothing_and_shun_a_failing_worker() {
    let pool = Arc::new(
        Pool::from_workers(0..4u32)
            .unwrap()
            .with_latency(LatencyConfig::new())
            .unwrap(),
    );
    // Every worker starts at the default RTT (30 ms) until sampled, and the
    // others' samples here are microseconds: a worker no thread happens to
    // draw first is never drawn after. So each is sampled once up front,
    // worker 3 by a failure, and the threads then see what a router sees.
    for w in 0..4 {
        let r = pool.reserve_worker(&w, 1).unwrap().timed();
        if w == 3 {
            r.end_failed();
        }
    }
    let hits: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let deadline = Instant::now() + Duration::from_millis(150);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (pool, hits) = (pool.clone(), hits.clone());
            std::thread::spawn(move || {
                let mut h = pool.handle();
                let mut n = 0u64;
                while Instant::now() < deadline && n < 200_000 {
                    let r = if t % 2 == 0 {
                        h.reserve(&LatencyPowerOfTwo::new())
                    } else {
                        h.reserve(&LatencyLeastLoaded::new())
                    };
                    let mut r = r.unwrap().timed();
                    hits[*r.worker() as usize].fetch_add(1, Relaxed);
                    if *r.worker() == 3 {
                        r.fail();
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for w in 0..4 {
        assert_eq!(pool.in_flight(&w), Some(0), "worker {w}");
    }
    let hits: Vec<u64> = hits.iter().map(|h| h.load(Relaxed)).collect();
    let penalised = pool.latency(&3).unwrap();
    assert!(
        penalised >= Duration::from_millis(900),
        "worker 3 reads {penalised:?}, hits {hits:?}"
    );
    let least_other = hits[..3].iter().min().unwrap();
    assert!(hits[3] * 10 < *least_other, "the failing worker drew {hits:?}");
}
