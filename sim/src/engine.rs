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
use super::join::{Join, JoinOutcome};
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
    /// Per worker, its capacity: it serves `slots × capacity` requests at
    /// once, each at its speed (empty: 1 each).
    pub capacities: Vec<u32>,
    /// Whether the pool is told the capacities (`WorkerInfo::capacity`); if
    /// not, every worker looks alike to the picks, whatever it serves.
    pub weighted: bool,
}

impl Fleet {
    /// The first `k` workers of the fleet (all of them if it has no more):
    /// the speeds cycle over the fleet, so a prefix keeps their mix.
    pub fn first(&self, k: usize) -> Fleet {
        let k = k.min(self.speeds.len());
        Fleet {
            speeds: self.speeds[..k].to_vec(),
            devices: self.devices[..k.min(self.devices.len())].to_vec(),
            slots: self.slots,
            service: self.service,
            flat_scan: self.flat_scan,
            capacities: self.capacities[..k.min(self.capacities.len())].to_vec(),
            weighted: self.weighted,
        }
    }
}

/// The slot limit a pool for `workers` workers is built with: the default
/// below it, else the next power of two (2^17 for 100 000 workers).
pub fn pool_limit(workers: usize) -> usize {
    workers.next_power_of_two().max(workerpick::DEFAULT_MAX_WORKERS)
}

/// Whether least-loaded picks on a pool with `limit` slots and `workers`
/// workers read the per-block bounds ("summarised") or every counter
/// ("flat"). The library does not expose it: this restates its rule (bounds
/// kept by every pool with room for 1 024 slots, used from 1 024 workers).
pub fn scan_kind(limit: usize, workers: usize, flat_scan: bool) -> &'static str {
    if !flat_scan && limit >= 1024 && workers >= 1024 {
        "summarised"
    } else {
        "flat"
    }
}

impl Fleet {
    /// Worker `w`'s attributes in the pool.
    fn info(&self, w: u32) -> WorkerInfo {
        let info = WorkerInfo::new().device(self.devices[w as usize]);
        if self.weighted {
            info.capacity(self.capacity(w as usize))
        } else {
            info
        }
    }

    /// Worker `w`'s capacity (1 unless set).
    pub fn capacity(&self, w: usize) -> u32 {
        self.capacities.get(w).copied().unwrap_or(1)
    }

    /// Requests worker `w` serves at once: `slots` per unit of capacity.
    pub fn slots_of(&self, w: usize) -> usize {
        self.slots.saturating_mul(self.capacity(w) as usize)
    }

    /// A pool over the fleet, workers `0..n` with their attributes.
    pub(crate) fn pool(&self) -> Pool<u32> {
        self.pool_without(None)
    }

    /// A pool over the fleet less `absent` (a worker that joins later).
    fn pool_without(&self, absent: Option<u32>) -> Pool<u32> {
        let workers = self.speeds.len() as u32;
        // One snapshot for the whole fleet, then one for the attributes that
        // differ from the default: inserting or setting them one by one would
        // publish one snapshot per worker, quadratic in a large fleet.
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
        let members = (0..workers).filter(|&w| Some(w) != absent);
        pool.replace(members.clone())
            .expect("a fleet within the pool limit");
        let infos = members
            .map(|w| (w, self.info(w)))
            .filter(|(_, info)| *info != WorkerInfo::new());
        pool.set_infos(infos).expect("members with valid attributes");
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
    /// A worker that joins mid-run, cold, if any.
    pub join: Option<Join>,
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
    start: Instant,
    /// When the joining worker joined, ns after `start` (`u64::MAX`: not yet).
    joined_ns: AtomicU64,
    /// Per ticket, when it was picked, ns after `start` (only with a join).
    picked_ns: Vec<AtomicU64>,
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
    assert!(load.join.is_none_or(|j| (j.worker as usize) < workers));
    let pool = load.fleet.pool_without(load.join.map(|j| j.worker));
    if let Some(j) = &load.join {
        // Before the join: the workers already there do not ramp.
        pool.set_slow_start(j.slow_start);
    }
    let n = load.requests;
    let slots: Vec<usize> = (0..workers).map(|w| load.fleet.slots_of(w)).collect();
    let serving = slots.iter().fold(0usize, |a, &s| a.saturating_add(s));
    let run = Run {
        load,
        pool: &pool,
        start: Instant::now(),
        joined_ns: AtomicU64::new(u64::MAX),
        picked_ns: atomics(if load.join.is_some() { n } else { 0 }, || AtomicU64::new(0)),
        servers: Servers::new(slots),
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
    let start = run.start;
    let monitored = thread::scope(|s| {
        // No more can be busy at once: every job holds one of `concurrency`
        // permits and one of its worker's slots.
        for _ in 0..serving.min(load.concurrency) {
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
            if let Some(at) = self.picked_ns.get(ticket) {
                at.store(started.duration_since(self.start).as_nanos() as u64, Relaxed);
            }
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

    /// The request's service time on worker `w`: base / speed, ±50% per
    /// ticket, times the joined worker's slowdown while it is cold.
    fn service_time(&self, w: usize, ticket: usize) -> Duration {
        let base = self.load.fleet.service_time(w, self.load.seed, ticket);
        match &self.load.join {
            Some(j) if j.worker as usize == w => {
                // Set before the worker joined the pool, so before any pick of it.
                let joined = Duration::from_nanos(self.joined_ns.load(Relaxed));
                base.mul_f64(j.slowdown(self.start.elapsed().saturating_sub(joined)))
            }
            _ => base,
        }
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
            if let Some(j) = &load.join {
                self.join(j, now);
            }
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

    /// Inserts the joining worker once it is due, and moves its slow start
    /// on (the pool's own checks come once in 1024 picks per handle: too
    /// rarely for a window this short).
    fn join(&self, j: &Join, now: Duration) {
        if self.joined_ns.load(Relaxed) == u64::MAX {
            if now >= j.after {
                self.joined_ns.store(now.as_nanos() as u64, Relaxed);
                self.pool
                    .insert_with(j.worker, self.load.fleet.info(j.worker))
                    .expect("the joining worker is not in the pool yet");
            }
        } else if j.slow_start.is_some() {
            self.pool.advance_slow_start();
        }
    }

    /// What the requests picked in the joined worker's first window showed.
    fn join_outcome(&self, j: &Join, elapsed: Duration) -> Option<JoinOutcome> {
        let joined = self.joined_ns.load(Relaxed);
        if joined == u64::MAX {
            return None;
        }
        let end = (joined.saturating_add(j.window.as_nanos() as u64)).min(elapsed.as_nanos() as u64);
        let (mut fleet, mut mine, mut others) = (Vec::new(), Vec::new(), Vec::new());
        let early = joined.saturating_add(j.window.as_nanos() as u64 / 4);
        let (mut early_requests, mut early_joined) = (0, 0);
        for (ticket, at) in self.picked_ns.iter().enumerate() {
            let at = at.load(Relaxed);
            if (joined..end).contains(&at) {
                let us = self.latency_ns[ticket].load(Relaxed) / 1000;
                fleet.push(us);
                let on_it = self.served_by[ticket].load(Relaxed) == j.worker;
                if at < early {
                    early_requests += 1;
                    early_joined += usize::from(on_it);
                }
                if on_it {
                    mine.push(us);
                } else {
                    others.push(us);
                }
            }
        }
        Some(JoinOutcome {
            worker: j.worker,
            joined_ms: joined as f64 / 1e6,
            window_ms: end.saturating_sub(joined) as f64 / 1e6,
            window_requests: fleet.len(),
            joined_requests: mine.len(),
            early_requests,
            early_joined,
            joined_latency_us: stats::summary(mine),
            fleet_latency_us: stats::summary(fleet),
            others_latency_us: stats::summary(others),
        })
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
        let join = self
            .load
            .join
            .as_ref()
            .and_then(|j| self.join_outcome(j, monitored.elapsed));
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
            join,
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
