//! Real threads. Every loop is bounded by a count and by a deadline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use workerpick::{LeastLoaded, Pool, PowerOfTwo, Random, Request, Rng, RoundRobin, Selector};

const DEADLINE: Duration = Duration::from_secs(5);

#[test]
fn least_loaded_is_exact_without_releases() {
    for (threads, per_thread, workers) in [(2u64, 400usize, 8u64), (4, 256, 16), (3, 100, 3)] {
        let pool = Pool::from_workers(0..workers).unwrap();
        std::thread::scope(|s| {
            for t in 0..threads {
                let pool = &pool;
                s.spawn(move || {
                    let mut h = pool.handle_with_rng(Rng::with_seed(t));
                    let held: Vec<_> = (0..per_thread)
                        .map(|_| h.reserve(&LeastLoaded).unwrap())
                        .collect();
                    // Hold them until every thread is done.
                    std::mem::forget(held);
                });
            }
        });
        let expected = (threads * per_thread as u64 / workers) as u32;
        for (w, load) in pool.loads() {
            assert_eq!(
                load, expected,
                "worker {w} ({threads} threads x {per_thread} over {workers})"
            );
        }
        assert_eq!(pool.stats().fallbacks, 0);
    }
}

#[test]
fn mixed_reserve_release_and_swaps_end_idle() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    let rr = RoundRobin::new();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (pool, done, rr) = (&pool, &done, &rr);
            s.spawn(move || {
                let modes: [&dyn Selector; 4] = [&Random, rr, &PowerOfTwo, &LeastLoaded];
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                let mut held = Vec::new();
                for i in 0..20_000u32 {
                    if start.elapsed() > DEADLINE {
                        break;
                    }
                    let req = Request::new().weight(1 + i % 3);
                    if let Ok(mut r) = h.reserve_with(modes[(i % 4) as usize], &req) {
                        if i % 7 == 0 {
                            let _ = r.retarget(&(i % 8)); // may be absent right now
                        }
                        held.push(r);
                    }
                    if held.len() > 16 {
                        drop(held.swap_remove((i as usize * 7) % held.len()));
                    }
                }
                drop(held);
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        let (pool, done) = (&pool, &done);
        s.spawn(move || {
            // Churn until the pickers finish (bounded by count and deadline).
            for i in 0..1_000_000u32 {
                if done.load(Ordering::Relaxed) == 3 || start.elapsed() > DEADLINE {
                    break;
                }
                let w = i % 8;
                let _ = pool.remove(&w);
                let _ = pool.insert(w);
                if i % 50 == 0 {
                    pool.replace((0..8).chain([100 + i % 3])).unwrap();
                }
            }
        });
    });
    pool.replace(0..8).unwrap();
    pool.reclaim();
    assert!(
        pool.loads().iter().all(|&(_, load)| load == 0),
        "{:?}",
        pool.loads()
    );
    for w in 100..103 {
        assert_eq!(pool.in_flight(&w), None);
    }
    let stats = pool.stats();
    assert_eq!((stats.workers, stats.draining), (8, 0), "{stats:?}");
}
