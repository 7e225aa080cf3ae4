//! Slow, not busy: a fleet where one worker's latency spikes 10× for
//! stretches ([`Scenario::spiking`]), and one where a worker fails half its
//! requests fast ([`Scenario::failing`]). In-flight counts see neither (the
//! slow worker still completes, the failing one looks idle); the
//! latency-aware modes rank by peak-EWMA estimate × (load + 1).
//!
//! Both at once in one fleet (the `Default`) shows the limit of two choices:
//! when the spiking and the penalised worker are the pair drawn, the spiking
//! one wins, and latency-aware power-of-two's p999 is then above
//! least-loaded's; latency-aware least-loaded, which sees every worker, is not.
//!
//! A discrete-event run on one thread with seeded draws (the same numbers on
//! any machine): Poisson arrivals, each worker serving `slots` at once with a
//! FIFO queue behind them. A failed attempt is retried through a new pick (up
//! to 4 times); a request's latency runs from its arrival to its success.
//! Every attempt's time, from booking to end, is fed to the pool's latency
//! signal on the simulated timeline (`Pool::record_latency_at`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;
use workerpick::{LatencyConfig, Pool, Reservation, Rng, Selector};

/// The scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Workers in the fleet; worker 0 spikes, worker 1 fails fast.
    pub workers: u32,
    /// Requests a worker serves at once.
    pub slots: u32,
    /// Mean service time, µs (each draw uniform in ±50 %).
    pub service_us: u64,
    /// Offered load as a share of the fleet's nominal capacity.
    pub utilisation: f64,
    /// Requests per mode.
    pub requests: usize,
    /// Worker 0's spikes: every `.0` µs, for `.1` µs, service `.2`× slower.
    pub spike: (u64, u64, u64),
    /// Worker 1 fails this share of its attempts, after `.1` µs.
    pub failing: (f64, u64),
    /// The latency signal's τ, ms.
    pub tau_ms: u64,
    /// Seeds every draw.
    pub seed: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            workers: 8,
            slots: 4,
            service_us: 2_000,
            utilisation: 0.6,
            requests: 80_000,
            spike: (2_000_000, 500_000, 10),
            failing: (0.5, 100),
            tau_ms: 1_000,
            seed: 42,
        }
    }
}

impl Scenario {
    /// Worker 0 spikes; nobody fails.
    pub fn spiking() -> Self {
        Self {
            failing: (0.0, 100),
            ..Self::default()
        }
    }

    /// Worker 1 fails half its attempts fast; nobody spikes.
    pub fn failing() -> Self {
        Self {
            spike: (2_000_000, 0, 1),
            ..Self::default()
        }
    }
}

/// The modes compared, in the table's order.
pub const MODES: [&str; 5] = [
    "round-robin",
    "least-loaded",
    "power-of-two",
    "latency-least-loaded",
    "latency-power-of-two",
];

/// What one mode did.
#[derive(Clone, Debug)]
pub struct Run {
    /// The mode.
    pub mode: String,
    /// Request latency percentiles, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Share of all attempts sent to the spiking worker.
    pub spiking_share: f64,
    /// Share of all attempts sent to the failing worker.
    pub failing_share: f64,
    /// Requests that failed every attempt.
    pub gave_up: usize,
}

const MAX_ATTEMPTS: u32 = 5;

enum Event {
    Arrive(usize),
    Done(usize),
}

struct Attempt<'p> {
    request: usize,
    reservation: Option<Reservation<'p, u32>>,
    worker: u32,
    booked: u64,
    fails: bool,
    tries: u32,
}

impl Scenario {
    /// Runs every mode of [`MODES`].
    pub fn run_all(&self) -> Vec<Run> {
        MODES
            .iter()
            .map(|m| self.run(m, &*crate::modes::selector(m).expect("a built-in")))
            .collect()
    }

    /// Runs one mode.
    pub fn run(&self, mode: &str, selector: &dyn Selector) -> Run {
        let config = LatencyConfig::new()
            .tau(Duration::from_millis(self.tau_ms))
            .default_rtt(Duration::from_micros(self.service_us));
        let pool = Pool::from_workers(0..self.workers)
            .expect("fleet fits")
            .with_latency(config)
            .expect("valid τ");
        let mut h = pool.handle_with_rng(Rng::with_seed(self.seed));
        let mut rng = Rng::with_seed(self.seed ^ 0x1a7e);
        let mut busy = vec![0u32; self.workers as usize];
        let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); self.workers as usize];
        let mut attempts: Vec<Attempt<'_>> = Vec::new();
        let mut arrived = vec![0u64; self.requests];
        let mut latencies = Vec::with_capacity(self.requests);
        let mut sent = vec![0u64; self.workers as usize];
        let mut gave_up = 0;
        let mut events = BinaryHeap::new();
        let mut seq = 0u64;
        let mut push = |events: &mut BinaryHeap<_>, at: u64, e: Event| {
            seq += 1;
            events.push(Reverse((at, seq, EventBox(e))));
        };
        let rate_per_us = self.utilisation * f64::from(self.workers * self.slots) / self.service_us as f64;
        let mut t = 0.0f64;
        for (r, at) in arrived.iter_mut().enumerate() {
            // Exponential gaps: −ln(u)/λ, u in (0, 1].
            let u = f64::from(rng.below(1 << 24) + 1) / f64::from(1u32 << 24);
            t += -u.ln() / rate_per_us;
            *at = t as u64;
            push(&mut events, *at, Event::Arrive(r));
        }
        while let Some(Reverse((now, _, EventBox(e)))) = events.pop() {
            let (request, tries) = match e {
                Event::Arrive(r) => (r, 0),
                Event::Done(a) => {
                    let at = &mut attempts[a];
                    let w = at.worker as usize;
                    busy[w] -= 1;
                    pool.record_latency_at(
                        &at.worker,
                        Duration::from_micros(now),
                        Duration::from_micros(now - at.booked),
                        at.fails,
                    );
                    drop(at.reservation.take());
                    let (request, fails, tries) = (at.request, at.fails, at.tries);
                    if let Some(next) = queues[w].pop_front() {
                        busy[w] += 1;
                        let d = self.service(&mut rng, &mut attempts[next], now);
                        push(&mut events, now + d, Event::Done(next));
                    }
                    if !fails {
                        latencies.push(now - arrived[request]);
                        continue;
                    }
                    if tries + 1 >= MAX_ATTEMPTS {
                        gave_up += 1;
                        continue;
                    }
                    (request, tries + 1)
                }
            };
            let reservation = h.reserve(selector).expect("a worker");
            let worker = *reservation.worker();
            sent[worker as usize] += 1;
            let id = attempts.len();
            attempts.push(Attempt {
                request,
                reservation: Some(reservation),
                worker,
                booked: now,
                fails: false,
                tries,
            });
            let w = worker as usize;
            if busy[w] < self.slots {
                busy[w] += 1;
                let d = self.service(&mut rng, &mut attempts[id], now);
                push(&mut events, now + d, Event::Done(id));
            } else {
                queues[w].push_back(id);
            }
        }
        let total: u64 = sent.iter().sum();
        latencies.sort_unstable();
        let q = |p: f64| {
            let i = ((p * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1;
            latencies[i] as f64 / 1e3
        };
        Run {
            mode: mode.to_owned(),
            p50_ms: q(0.50),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            spiking_share: sent[0] as f64 / total as f64,
            failing_share: sent[1] as f64 / total as f64,
            gave_up,
        }
    }

    /// Starts `a` at `now`: how long it runs, and whether it fails.
    fn service(&self, rng: &mut Rng, a: &mut Attempt<'_>, now: u64) -> u64 {
        if a.worker == 1 && f64::from(rng.below(1 << 16)) < self.failing.0 * 65536.0 {
            a.fails = true;
            return self.failing.1;
        }
        let base = self.service_us / 2 + u64::from(rng.below(self.service_us as u32 + 1));
        let (period, length, factor) = self.spike;
        if a.worker == 0 && now % period < length {
            base * factor
        } else {
            base
        }
    }
}

/// Orders events by time and sequence only.
struct EventBox(Event);

impl PartialEq for EventBox {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for EventBox {}
impl PartialOrd for EventBox {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for EventBox {
    fn cmp(&self, _: &Self) -> core::cmp::Ordering {
        core::cmp::Ordering::Equal
    }
}

/// The scenario's table.
pub fn table(s: &Scenario, runs: &[Run]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "Slow, not busy: {} workers x {} slots, {} ms service, {:.0} % load, {} requests;",
        s.workers,
        s.slots,
        s.service_us as f64 / 1e3,
        s.utilisation * 100.0,
        s.requests,
    );
    if s.spike.1 > 0 && s.spike.2 > 1 {
        let _ = write!(
            out,
            " worker 0 {}x slower for {} ms of every {} ms;",
            s.spike.2,
            s.spike.1 / 1000,
            s.spike.0 / 1000
        );
    }
    if s.failing.0 > 0.0 {
        let _ = write!(
            out,
            " worker 1 fails {:.0} % of attempts in {} us (retried);",
            s.failing.0 * 100.0,
            s.failing.1
        );
    }
    let _ = writeln!(out, " latency tau {} ms", s.tau_ms);
    let _ = writeln!(
        out,
        "{:<22} {:>9} {:>9} {:>9} {:>14} {:>14} {:>8}",
        "mode", "p50 ms", "p99 ms", "p999 ms", "to spiking", "to failing", "gave up"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:<22} {:>9.2} {:>9.2} {:>9.2} {:>13.1}% {:>13.1}% {:>8}",
            r.mode,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.spiking_share * 100.0,
            r.failing_share * 100.0,
            r.gave_up
        );
    }
    out
}
