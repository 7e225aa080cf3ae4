//! One load run: router threads pick a worker per request through the crate,
//! worker threads serve the requests, and a monitor thread samples the load
//! and changes the fleet mid-run.
//!
//! Every worker has `slots` slots: it serves at most that many requests at
//! once and queues the rest (server threads are shared by the fleet, as many
//! as can be busy at once), so a request's latency is its pick,
//! its wait in the worker's queue and its service time. The reservation is
//! held for all of it, which is what an in-flight count means to a router.

use super::Progress;
use super::outcome::{ChurnOutcome, Outcome, Sample, WorkerOutcome};
use super::queue::{Permits, Servers};
use super::stats::{self, ms};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};
use workerpick::{DeviceKind, Pool, Reservation, Rng, Selector, WorkerInfo};

/// The workers: their relative speeds and how many requests each serves at once.
pub struct Fleet {
    /// Relative speed per worker (1.0 = base; 0.5 takes twice as long).
    pub speeds: Vec<f64>,
    /// What each worker runs on (device-aware balances CPUs against accelerators).
    pub devices: Vec<DeviceKind>,
    /// Requests a worker serves at once; more wait in its queue.
    pub slots: usize,
    /// Service time of one request at speed 1.0 (each request draws ±50%).
    pub service: Duration,
    /// Scan every counter on least-loaded picks even where the pool's limit
    /// would keep per-block bounds (for contrast with the summarised pick).
    pub flat_scan: bool,
}

/// The slot limit a pool for `workers` workers is built with: the default
/// below it, else the next power of two (2^17 for 100 000 workers).
pub fn pool_limit(workers: usize) -> usize {
    workers.next_power_of_two().max(workerpick::DEFAULT_MAX_WORKERS)
}

/// Whether least-loaded picks on a pool with `limit` slots and `workers`
/// workers read the per-block bounds ("summarised") or every counter
/// ("flat"). The library does not expose it: this restates its rule (bounds
/// kept from a limit of 2^17 slots, used from 1 024 workers).
pub fn scan_kind(limit: usize, workers: usize, flat_scan: bool) -> &'static str {
    if !flat_scan && limit > workerpick::DEFAULT_MAX_WORKERS && workers >= 1024 {
        "summarised"
    } else {
        "flat"
    }
}

impl Fleet {
    /// Worker `w`'s attributes in the pool.
    fn info(&self, w: u32) -> WorkerInfo {
        WorkerInfo::new().device(self.devices[w as usize])
    }

    /// A pool over the fleet, workers `0..n` with their attributes.
    pub(crate) fn pool(&self) -> Pool<u32> {
        let workers = self.speeds.len() as u32;
        // One snapshot for the whole fleet, then one per worker whose attributes
        // differ from the default: inserting one by one would publish one per
        // worker, quadratic in a large fleet.
        let limit = pool_limit(workers as usize);
        let pool = if limit > workerpick::DEFAULT_MAX_WORKERS {
            Pool::with_max_workers(limit).expect("a fleet within MAX_WORKERS_LIMIT")
        } else {
            Pool::new()
        };
        let pool = if self.flat_scan {
            pool.with_flat_scan()
        } else {
            pool
        };
        pool.replace(0..workers).expect("a fleet within the pool limit");
        for w in 0..workers {
            let info = self.info(w);
            if info != WorkerInfo::new() {
                pool.set_info(&w, info).expect("a member");
            }
        }
        pool
    }

    /// Request `ticket`'s service time on worker `w`: base / speed, ±50% drawn
    /// from the run's `seed` and the ticket.
    pub(crate) fn service_time(&self, w: usize, seed: u64, ticket: usize) -> Duration {
        let mut rng = Rng::with_seed(seed ^ (ticket as u64).wrapping_mul(GOLDEN));
        let jitter = 0.5 + f64::from(rng.below(1001)) / 1000.0;
        self.service.mul_f64(jitter / self.speeds[w])
    }
}

/// One run's shape.
pub struct Load {
    /// The workers.
    pub fleet: Fleet,
    /// Requests in flight at once (a closed loop: a new one starts when one ends).
    pub concurrency: usize,
    /// Requests in the run.
    pub requests: usize,
    /// Router threads, each with its own `pool.handle()`.
    pub threads: usize,
    /// Seeds the routers' random draws and the service-time jitter.
    pub seed: u64,
    /// A worker removed mid-run and re-added, if any.
    pub churn: Option<Churn>,
    /// How often the monitor samples every worker's in-flight count.
    pub sample_every: Duration,
}

/// Removes `worker` once `at` of the requests have started, while it is
/// serving, and inserts the same key again `out_for` later.
#[derive(Clone, Copy, Debug)]
pub struct Churn {
    /// The worker's index.
    pub worker: u32,
    /// Fraction of the requests started before the removal.
    pub at: f64,
    /// How long it stays out.
    pub out_for: Duration,
}

/// What the monitor saw.
struct Monitored {
    samples: Vec<Sample>,
    churn: Option<ChurnOutcome>,
    elapsed: Duration,
}

struct Job<'p> {
    reservation: Reservation<'p, u32>,
    ticket: usize,
    started: Instant,
}

/// State shared by every thread of one run.
struct Run<'p> {
    load: &'p Load,
    pool: &'p Pool<u32>,
    servers: Servers<Job<'p>>,
    permits: Permits,
    closed: AtomicBool,
    issued: AtomicUsize,
    completed: AtomicUsize,
    /// The simulator's own in-flight count per worker (for the peak).
    held: Vec<AtomicU32>,
    peak: Vec<AtomicU32>,
    served: Vec<AtomicU64>,
    /// Per ticket: the worker that served it (`u32::MAX`: not yet).
    served_by: Vec<AtomicU32>,
    twice: AtomicUsize,
    /// The first error a pick returned, if any.
    failed: Mutex<Option<String>>,
    select_ns: Vec<AtomicU64>,
    latency_ns: Vec<AtomicU64>,
}

fn atomics<T>(n: usize, f: impl Fn() -> T) -> Vec<T> {
    (0..n).map(|_| f()).collect()
}

/// Runs `load` with `selector` and reports what happened.
pub fn run(load: &Load, selector: &dyn Selector, progress: &dyn Progress) -> Outcome {
    let workers = load.fleet.speeds.len();
    assert!(workers > 0 && load.fleet.slots > 0 && load.concurrency > 0 && load.threads > 0);
    assert_eq!(load.fleet.devices.len(), workers, "one device kind per worker");
    let pool = load.fleet.pool();
    let n = load.requests;
    let run = Run {
        load,
        pool: &pool,
        servers: Servers::new(workers, load.fleet.slots),
        permits: Permits::new(load.concurrency),
        closed: AtomicBool::new(false),
        issued: AtomicUsize::new(0),
        completed: AtomicUsize::new(0),
        held: atomics(workers, || AtomicU32::new(0)),
        peak: atomics(workers, || AtomicU32::new(0)),
        served: atomics(workers, || AtomicU64::new(0)),
        served_by: atomics(n, || AtomicU32::new(u32::MAX)),
        twice: AtomicUsize::new(0),
        failed: Mutex::new(None),
        select_ns: atomics(n, || AtomicU64::new(0)),
        latency_ns: atomics(n, || AtomicU64::new(0)),
    };
    let start = Instant::now();
    let monitored = thread::scope(|s| {
        // No more can be busy at once: every job holds one of `concurrency`
        // permits and one of its worker's slots.
        for _ in 0..workers.saturating_mul(load.fleet.slots).min(load.concurrency) {
            let run = &run;
            s.spawn(move || run.serve());
        }
        let routers: Vec<_> = (0..load.threads)
            .map(|t| {
                let run = &run;
                s.spawn(move || run.route(selector, t as u64))
            })
            .collect();
        let monitored = run.monitor(start, progress);
        for r in routers {
            r.join().expect("router thread");
        }
        run.closed.store(true, Relaxed);
        run.servers.close();
        monitored
    });
    run.outcome(monitored)
}

impl<'p> Run<'p> {
    /// A router thread: admit, pick through the crate, hand to the worker.
    fn route(&self, selector: &dyn Selector, t: u64) {
        let mut handle = self
            .pool
            .handle_with_rng(Rng::with_seed(self.load.seed ^ (t + 1).wrapping_mul(GOLDEN)));
        loop {
            self.permits.acquire();
            let ticket = self.issued.fetch_add(1, Relaxed);
            if ticket >= self.load.requests {
                self.permits.release();
                return;
            }
            let started = Instant::now();
            let reservation = match handle.reserve(selector) {
                Ok(r) => r,
                Err(e) => {
                    // Reported, not panicked on: the run goes on and the report says so.
                    self.failed.lock().unwrap().get_or_insert(e.to_string());
                    self.completed.fetch_add(1, Relaxed);
                    self.permits.release();
                    continue;
                }
            };
            let picked = started.elapsed();
            self.select_ns[ticket].store(picked.as_nanos() as u64, Relaxed);
            let w = *reservation.worker() as usize;
            let held = self.held[w].fetch_add(1, Relaxed) + 1;
            self.peak[w].fetch_max(held, Relaxed);
            self.servers.push(
                w,
                Job {
                    reservation,
                    ticket,
                    started,
                },
            );
        }
    }

    /// A server thread: serves whichever worker's job has started next.
    fn serve(&self) {
        while let Some((w, job)) = self.servers.next(&self.closed) {
            thread::sleep(self.service_time(w, job.ticket));
            let latency = job.started.elapsed();
            self.latency_ns[job.ticket].store(latency.as_nanos() as u64, Relaxed);
            if self.served_by[job.ticket].swap(w as u32, Relaxed) != u32::MAX {
                self.twice.fetch_add(1, Relaxed);
            }
            self.served[w].fetch_add(1, Relaxed);
            self.held[w].fetch_sub(1, Relaxed);
            drop(job.reservation);
            self.servers.done(w);
            self.completed.fetch_add(1, Relaxed);
            self.permits.release();
        }
    }

    /// The request's service time on worker `w`: base / speed, ±50% per ticket.
    fn service_time(&self, w: usize, ticket: usize) -> Duration {
        self.load.fleet.service_time(w, self.load.seed, ticket)
    }

    /// The monitor: samples every worker's load, reports progress and plays
    /// the control plane (the removal and the re-insert) until the run ends.
    fn monitor(&self, start: Instant, progress: &dyn Progress) -> Monitored {
        let load = self.load;
        let mut samples = Vec::new();
        let mut reported = 0;
        let mut churn = load.churn.map(|c| (c, ChurnOutcome::default(), Phase::In));
        let remove_at = load.churn.map_or(0, |c| (c.at * load.requests as f64) as usize);
        loop {
            let completed = self.completed.load(Relaxed);
            progress.advance((completed - reported) as u64);
            reported = completed;
            let now = start.elapsed();
            if completed >= load.requests {
                if let Some((c, out, phase @ Phase::Out(_))) = &mut churn {
                    // A run too short to re-add in time re-adds at the end.
                    self.readd(c, out, phase, now);
                }
                samples.push((ms(now), self.loads()));
                let churned = churn.and_then(|(_, o, p)| matches!(p, Phase::Back).then_some(o));
                return Monitored {
                    samples,
                    churn: churned,
                    elapsed: now,
                };
            }
            samples.push((ms(now), self.loads()));
            if let Some((c, out, phase)) = &mut churn {
                match *phase {
                    // Remove it while it is serving: that is the hazard to show.
                    Phase::In
                        if self.issued.load(Relaxed) >= remove_at
                            && self.pool.in_flight(&c.worker).unwrap_or(0) > 0 =>
                    {
                        let served = self.served[c.worker as usize].load(Relaxed);
                        self.pool.remove(&c.worker).expect("churned worker is a member");
                        let held = self.pool.in_flight(&c.worker).unwrap_or(0);
                        if held == 0 {
                            // It drained between the look and the removal: try again later.
                            self.pool
                                .insert_with(c.worker, self.load.fleet.info(c.worker))
                                .expect("it was just removed");
                        } else {
                            out.worker = c.worker;
                            out.in_flight_at_removal = held;
                            out.removed_ms = ms(now);
                            out.served_while_out = served;
                            *phase = Phase::Out(now);
                        }
                    }
                    Phase::Out(since) if now - since >= c.out_for => {
                        self.readd(c, out, phase, now);
                    }
                    _ => {}
                }
            }
            thread::sleep(load.sample_every);
        }
    }

    fn readd(&self, c: &Churn, out: &mut ChurnOutcome, phase: &mut Phase, now: Duration) {
        self.pool
            .insert_with(c.worker, self.load.fleet.info(c.worker))
            .expect("churned worker was removed");
        out.kept_at_readd = self.pool.in_flight(&c.worker).unwrap_or(0);
        out.readded_ms = ms(now);
        out.served_while_out = self.served[c.worker as usize].load(Relaxed) - out.served_while_out;
        *phase = Phase::Back;
    }

    /// Every worker's in-flight count in the pool, draining ones included.
    fn loads(&self) -> Vec<u32> {
        (0..self.held.len() as u32)
            .map(|w| self.pool.in_flight(&w).unwrap_or(0))
            .collect()
    }

    fn outcome(self, monitored: Monitored) -> Outcome {
        let ends = self.loads();
        let workers = ends
            .iter()
            .enumerate()
            .map(|(w, &end_in_flight)| WorkerOutcome {
                requests: self.served[w].load(Relaxed),
                peak_in_flight: self.peak[w].load(Relaxed),
                end_in_flight,
            })
            .collect();
        let values = |v: Vec<AtomicU64>| v.into_iter().map(AtomicU64::into_inner).collect();
        let latency_ns: Vec<u64> = values(self.latency_ns);
        Outcome {
            requests: self.load.requests,
            elapsed: monitored.elapsed,
            workers,
            select_ns: stats::summary(values(self.select_ns)),
            latency_us: stats::summary(latency_ns.into_iter().map(|ns| ns / 1000).collect()),
            unserved: self
                .served_by
                .iter()
                .filter(|w| w.load(Relaxed) == u32::MAX)
                .count(),
            served_twice: self.twice.into_inner(),
            pick_error: self.failed.into_inner().unwrap(),
            draining_at_end: self.pool.stats().draining,
            churn: monitored.churn,
            samples: monitored.samples,
        }
    }
}

#[derive(Clone, Copy)]
enum Phase {
    In,
    Out(Duration),
    Back,
}

pub(crate) const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
