//! The classic validation scenario, and the back-to-back selection rate.

use super::engine;
use super::{CLASSIC_CONCURRENCY, CLASSIC_WORKERS, Progress};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use workerpick::{Pool, Reservation, Rng, Selector};

/// How bursts of reservations held together split over 4 idle workers.
#[derive(Clone, Debug, Default)]
pub struct Bursts {
    /// Bursts run.
    pub bursts: usize,
    /// Bursts that split exactly evenly (8/8/8/8).
    pub even: usize,
    /// The most reservations on one worker in any burst.
    pub max_on_one: u32,
    /// Bursts where the pool's counts differed from the reservations held.
    pub mismatched: usize,
    /// In-flight counts after the last burst.
    pub end_in_flight: Vec<u32>,
    /// The first error a reservation returned (none expected).
    pub pick_error: Option<String>,
}

impl Bursts {
    /// The invariants, each broken one as a sentence.
    pub fn violations(&self, mode: &str) -> Vec<String> {
        let mut v = Vec::new();
        if self.end_in_flight.iter().any(|&c| c != 0) {
            v.push(format!(
                "in-flight counts after the bursts are {:?}",
                self.end_in_flight
            ));
        }
        if let Some(e) = &self.pick_error {
            v.push(format!("a reservation failed: {e}"));
        }
        if self.mismatched != 0 {
            v.push(format!(
                "{} bursts where the pool's counts differ from the reservations held",
                self.mismatched
            ));
        }
        if super::modes::splits_exactly(mode) && self.even != self.bursts {
            v.push(format!(
                "only {} of {} bursts split evenly",
                self.even, self.bursts
            ));
        }
        v
    }
}

/// Runs `bursts` bursts: `threads` threads together take 32 reservations over
/// 4 idle workers and hold them all; the split is counted from the
/// reservations and checked against the pool; then all are released.
pub fn run(
    selector: &dyn Selector,
    bursts: usize,
    threads: usize,
    seed: u64,
    progress: &dyn Progress,
) -> Bursts {
    let pool = Pool::from_workers(0..CLASSIC_WORKERS as u32).expect("distinct keys");
    let threads = threads.clamp(1, CLASSIC_CONCURRENCY);
    let barrier = Barrier::new(threads);
    // Per burst and worker: reservations held, as the threads counted them.
    let held: Vec<AtomicU32> = (0..bursts * CLASSIC_WORKERS).map(|_| AtomicU32::new(0)).collect();
    let seen = Mutex::new(Vec::with_capacity(bursts));
    let failed = Mutex::new(None);
    thread::scope(|s| {
        for t in 0..threads {
            let (pool, barrier, held, seen, failed) = (&pool, &barrier, &held, &seen, &failed);
            s.spawn(move || {
                let mut handle = pool.handle_with_rng(Rng::with_seed(seed ^ t as u64));
                let share = CLASSIC_CONCURRENCY / threads + usize::from(t < CLASSIC_CONCURRENCY % threads);
                let mut mine: Vec<Reservation<'_, u32>> = Vec::with_capacity(share);
                for b in 0..bursts {
                    for _ in 0..share {
                        // An error is recorded, not panicked on: a panic here would
                        // leave the other threads waiting at the barrier.
                        match handle.reserve(selector) {
                            Ok(r) => {
                                held[b * CLASSIC_WORKERS + *r.worker() as usize].fetch_add(1, Relaxed);
                                mine.push(r);
                            }
                            Err(e) => {
                                failed.lock().unwrap().get_or_insert(e.to_string());
                            }
                        }
                    }
                    barrier.wait(); // all 32 held
                    if t == 0 {
                        seen.lock().unwrap().push(pool.loads());
                        progress.advance(1);
                    }
                    barrier.wait(); // counted
                    mine.clear(); // released
                    barrier.wait(); // all released: the next burst starts idle
                }
            });
        }
    });
    let seen = seen.into_inner().unwrap();
    let mut out = Bursts {
        bursts,
        end_in_flight: pool.loads().into_iter().map(|(_, c)| c).collect(),
        pick_error: failed.into_inner().unwrap(),
        ..Bursts::default()
    };
    let even = (CLASSIC_CONCURRENCY / CLASSIC_WORKERS) as u32;
    for (b, loads) in seen.iter().enumerate() {
        let counts: Vec<u32> = held[b * CLASSIC_WORKERS..][..CLASSIC_WORKERS]
            .iter()
            .map(|c| c.load(Relaxed))
            .collect();
        if loads
            .iter()
            .map(|&(w, c)| (w as usize, c))
            .any(|(w, c)| counts[w] != c)
        {
            out.mismatched += 1;
        }
        out.even += usize::from(counts.iter().all(|&c| c == even));
        out.max_on_one = out.max_on_one.max(counts.into_iter().max().unwrap_or(0));
    }
    out
}

/// Reserve + release pairs per second on `workers` idle workers, `threads`
/// threads back to back for `window`: the crate's ceiling, no service time.
/// The pool is sized as the load run's ([`engine::pool_limit`]); `flat_scan`
/// as there.
pub fn selection_rate(
    selector: &dyn Selector,
    workers: usize,
    flat_scan: bool,
    threads: usize,
    window: Duration,
) -> f64 {
    let pool = Pool::with_max_workers(engine::pool_limit(workers)).expect("a limit within MAX_WORKERS_LIMIT");
    let pool = if flat_scan { pool.with_flat_scan() } else { pool };
    pool.replace(0..workers as u32).expect("distinct keys");
    let total = AtomicU64::new(0);
    let start = Instant::now();
    thread::scope(|s| {
        for t in 0..threads {
            let (pool, total) = (&pool, &total);
            s.spawn(move || {
                let mut handle = pool.handle_with_rng(Rng::with_seed(t as u64));
                let mut n = 0u64;
                // At least one batch, even for a thread that started late.
                loop {
                    for _ in 0..256 {
                        drop(handle.reserve(selector).expect("idle fleet"));
                    }
                    n += 256;
                    if start.elapsed() >= window {
                        break;
                    }
                }
                total.fetch_add(n, Relaxed);
            });
        }
    });
    total.into_inner() as f64 / start.elapsed().as_secs_f64()
}
