//! The owned path's extra cost: a reservation through an `OwnedHandle` (on an
//! `Arc<Pool>`) beside the same through a borrowed `Handle`, at 1 and 2
//! threads, each thread with its own handle, reserve + release per operation.
//! A third line books through a borrowed handle and also clones and drops the
//! pool's own `Arc` per reservation: the design the owned handle avoids (every
//! thread writing one shared count).
//!
//! Groups are `mode/workers`; the function says threads and path:
//! `power-of-two/64/threads2/owned`. Wall time per operation, summed over
//! threads (throughput is `threads / time`).

mod common;

use common::settings;
use criterion::measurement::WallTime;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use workerpick::{Mode, Pool, Rng, Selector};

const WORKERS: usize = 64;

/// Runs `op` `ops` times on each of `threads` threads (each with its own
/// state from `setup`), and returns the wall time from the first start to the
/// last end.
fn timed<T>(
    threads: usize,
    ops: u64,
    setup: impl Fn(u64) -> T + Sync,
    op: impl Fn(&mut T) + Sync,
) -> Duration {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let spans: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (setup, op, start) = (&setup, &op, &start);
                s.spawn(move || {
                    let mut state = setup(t);
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..ops {
                        op(&mut state);
                    }
                    (t0, Instant::now())
                })
            })
            .collect();
        let spans: Vec<_> = spans.into_iter().map(|h| h.join().unwrap()).collect();
        spans.iter().map(|s| s.1).max().unwrap() - spans.iter().map(|s| s.0).min().unwrap()
    })
}

fn mode<S: Selector>(c: &mut Criterion, name: &str, selector: S) {
    let pool = Arc::new(Pool::from_workers(0..WORKERS as u64).unwrap());
    let mut group = c.benchmark_group(format!("{name}/{WORKERS}"));
    group.sample_size(settings::samples(20));
    let selector = &selector;
    for threads in [1, 2] {
        let id = |path: &str| BenchmarkId::new(format!("threads{threads}"), path);
        group.bench_function(id("borrowed"), |b| {
            b.iter_custom(|ops| {
                timed(
                    threads,
                    ops,
                    |t| pool.handle_with_rng(Rng::with_seed(t)),
                    |h| drop(black_box(h.reserve(selector).unwrap())),
                )
            })
        });
        group.bench_function(id("owned"), |b| {
            b.iter_custom(|ops| {
                timed(
                    threads,
                    ops,
                    |t| pool.owned_handle_with_rng(Rng::with_seed(t)),
                    |h| drop(black_box(h.reserve(selector).unwrap())),
                )
            })
        });
        group.bench_function(id("pool-arc-per-pick"), |b| {
            b.iter_custom(|ops| {
                timed(
                    threads,
                    ops,
                    |t| pool.handle_with_rng(Rng::with_seed(t)),
                    |h| {
                        let keep = Arc::clone(&pool);
                        drop(black_box((h.reserve(selector).unwrap(), keep)));
                    },
                )
            })
        });
    }
    group.finish();
}

fn owned(c: &mut Criterion) {
    for m in [Mode::Random, Mode::PowerOfTwo, Mode::LeastLoaded] {
        with_selector!(m, |sel| mode(c, m.name(), sel));
    }
}

criterion_group! {
    name = benches;
    config = settings::criterion(WallTime);
    targets = owned
}
criterion_main!(benches);
