//! Throughput under threads: selections per second summed over threads, ours
//! beside the lock-based reference.
//!
//! Each thread keeps `R` reservations in flight (a ring: every operation books
//! a new one and gives back the oldest) while it selects; `R = 0` reserves and
//! releases at once. Groups are `mode/workers`, the function says the threads
//! and `R`, the parameter the implementation:
//! `power-of-two/64/threads2-held64/workerpick-handle`.
//!
//! Every reservation's worker is read (`*r.worker()`), as a router must.
//!
//! Thread counts come from `WORKERPICK_BENCH_THREADS` (default `1,2`, this
//! machine's cores); on a larger machine run e.g. `1,2,4,8,16`.

mod common;

use common::reference::Reference;
use common::thread_counts::thread_counts;
use common::{reference_policy, settings};
use criterion::measurement::WallTime;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use workerpick::{Mode, Pool, Rng, Selector};

const WORKERS: [usize; 2] = [64, 1024];
const MODES: [Mode; 3] = [Mode::PowerOfTwo, Mode::LeastLoaded, Mode::RoundRobin];

/// Operations per thread in one criterion iteration: enough that a sample of
/// the slowest case (the reference least-loaded over 1024 workers) is not one
/// barrier wake-up.
const BATCH: u64 = 16;

/// Runs `threads` copies of a loop of `ops` operations, each thread keeping
/// `held` results alive in a ring, and returns the wall time from the first
/// thread's start to the last thread's end. Each thread stamps its own span
/// after the common start barrier, so neither set-up (the ring's prefill, the
/// final releases) nor a late-scheduled coordinating thread is in the figure.
fn timed<G, F: FnMut() -> G>(threads: usize, ops: u64, held: usize, op: impl Fn() -> F + Sync) -> Duration {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let spans: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut next = op();
                    let mut ring: Vec<G> = (0..held).map(|_| next()).collect();
                    start.wait();
                    let t0 = Instant::now();
                    if held == 0 {
                        for _ in 0..ops {
                            drop(black_box(next()));
                        }
                    } else {
                        let mut i = 0;
                        for _ in 0..ops {
                            ring[i] = next();
                            i += 1;
                            if i == held {
                                i = 0;
                            }
                        }
                    }
                    let t1 = Instant::now();
                    drop(ring);
                    (t0, t1)
                })
            })
            .collect();
        let spans: Vec<(Instant, Instant)> = spans.into_iter().map(|h| h.join().unwrap()).collect();
        let first = spans.iter().map(|s| s.0).min().unwrap();
        let last = spans.iter().map(|s| s.1).max().unwrap();
        last - first
    })
}

/// Reads the worker a reservation names, as a router does before it sends.
fn read<'p>(r: workerpick::Reservation<'p, u64>) -> workerpick::Reservation<'p, u64> {
    black_box(*r.worker());
    r
}

fn threads(c: &mut Criterion) {
    let counts = thread_counts();
    for mode in MODES {
        for n in WORKERS {
            with_selector!(mode, |sel| group(c, mode, n, &sel, &counts));
        }
    }
}

fn group<S: Selector>(c: &mut Criterion, mode: Mode, n: usize, sel: &S, counts: &[usize]) {
    let pool = Pool::from_workers(0..n as u64).unwrap();
    let reference = Reference::new(0..n as u64, 1);
    let policy = reference_policy(mode);
    let mut g = c.benchmark_group(format!("{}/{}", mode.name(), n));
    // Every sample runs the same number of operations per thread, so thread
    // start-up is amortised alike in each.
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(settings::samples(10));
    for held in [0, n] {
        for &t in counts {
            let f = format!("threads{t}-held{held}");
            g.throughput(Throughput::Elements(t as u64 * BATCH));
            g.bench_function(BenchmarkId::new(&f, "workerpick-handle"), |b| {
                b.iter_custom(|iters| {
                    timed(t, iters * BATCH, held, || {
                        let mut h = pool.handle_with_rng(Rng::new());
                        move || read(h.reserve(sel).unwrap())
                    })
                })
            });
            g.bench_function(BenchmarkId::new(&f, "reference"), |b| {
                b.iter_custom(|iters| {
                    timed(t, iters * BATCH, held, || {
                        || {
                            let r = reference.reserve(policy, None).unwrap();
                            black_box(r.worker());
                            r
                        }
                    })
                })
            });
        }
    }
    g.finish();
    assert!(
        pool.loads().iter().all(|&(_, l)| l == 0),
        "a bench leaked a reservation"
    );
}

fn config() -> Criterion {
    settings::criterion(WallTime)
}

criterion_group! {
    name = benches;
    config = config();
    targets = threads
}
criterion_main!(benches);
