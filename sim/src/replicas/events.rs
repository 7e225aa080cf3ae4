//! One replica run in virtual time: Poisson arrivals, each sent to a random
//! replica whose handle books a worker in its own pool; workers serve `slots`
//! requests at once and queue the rest, as in the fleet run; and once a period,
//! staggered, each worker reports or each replica publishes its summary.

use super::{Outcome, Scenario, Sharing};
use crate::engine::{Fleet, GOLDEN};
use crate::stats;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;
use workerpick::{Handle, Pool, Reservation, Rng, Selector};

/// How long a report counts. The limit is on the wall clock and meant for
/// reporters that die; none does here, and a run takes far less than this.
const REPORT_MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The next request arrives.
    Arrive,
    /// Worker `worker` finishes request `ticket`.
    Done { worker: u32, ticket: u32 },
    /// Worker `worker` reports its load to every replica.
    Report { worker: u32 },
    /// Replica `replica` sends its summary to the others.
    Sync { replica: u32 },
}

/// Events by virtual time in ns, then in the order they were scheduled.
#[derive(Default)]
struct Clock {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    scheduled: u64,
}

impl Clock {
    fn at(&mut self, t: u64, e: Event) {
        self.scheduled += 1;
        self.heap.push(Reverse((t, self.scheduled, e)));
    }

    fn next(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }
}

struct Job<'p> {
    reservation: Reservation<'p, u32>,
    ticket: u32,
    arrived: u64,
}

/// A worker: requests in service (at most `slots`), and those waiting for a slot.
#[derive(Default)]
struct Worker<'p> {
    serving: Vec<Job<'p>>,
    waiting: VecDeque<Job<'p>>,
    /// Requests it holds, serving and queued.
    held: u32,
}

struct State<'s, 'p> {
    scenario: &'s Scenario,
    fleet: &'s Fleet,
    pools: &'p [Pool<u32>],
    clock: Clock,
    workers: Vec<Worker<'p>>,
    latency_us: Vec<u64>,
    outcome: Outcome,
}

/// Runs `scenario`'s requests through `replicas` routers sharing as `sharing` says.
pub(super) fn run(
    scenario: &Scenario,
    fleet: &Fleet,
    selector: &dyn Selector,
    replicas: usize,
    sharing: Sharing,
) -> Outcome {
    let n = fleet.speeds.len();
    assert!(replicas > 0 && n > 0 && (0..n).all(|w| fleet.slots_of(w) > 0));
    assert!(u32::try_from(scenario.requests).is_ok(), "tickets are u32");
    let pools: Vec<Pool<u32>> = (0..replicas).map(|_| fleet.pool()).collect();
    for p in &pools {
        p.set_report_max_age(REPORT_MAX_AGE);
    }
    let mut routers: Vec<Handle<'_, u32>> = pools
        .iter()
        .enumerate()
        .map(|(r, p)| {
            p.handle_with_rng(Rng::with_seed(
                scenario.seed ^ (r as u64 + 1).wrapping_mul(GOLDEN),
            ))
        })
        .collect();
    // The fleet serves at most Σ slots × speed / service requests per ns.
    let per_ns = (0..n)
        .map(|w| fleet.slots_of(w) as f64 * fleet.speeds[w])
        .sum::<f64>()
        / fleet.service.as_nanos() as f64;
    let rate = scenario.utilization * per_ns;
    let mut s = State {
        scenario,
        fleet,
        pools: &pools,
        clock: Clock::default(),
        workers: (0..n).map(|_| Worker::default()).collect(),
        latency_us: Vec::with_capacity(scenario.requests),
        outcome: Outcome {
            requests: scenario.requests,
            served: vec![0; n],
            peak_in_flight: vec![0; n],
            ..Outcome::default()
        },
    };
    // Periodic events start staggered over the first period: neither the
    // workers nor the replicas keep time together.
    match sharing {
        Sharing::Local => {}
        Sharing::Reported(p) => {
            for w in 0..n {
                s.clock.at(stagger(p, w, n), Event::Report { worker: w as u32 });
            }
        }
        Sharing::Synced(p) => {
            for r in 0..replicas {
                s.clock
                    .at(stagger(p, r, replicas), Event::Sync { replica: r as u32 });
            }
        }
    }
    // Arrivals, and which replica each goes to, draw from a generator of their own.
    let mut arrivals = Rng::with_seed(scenario.seed);
    let mut issued = 0usize;
    let mut completed = 0usize;
    if scenario.requests > 0 {
        s.clock.at(exponential(&mut arrivals, rate), Event::Arrive);
    }
    let mut now = 0;
    while completed < scenario.requests {
        let (t, event) = s.clock.next().expect("a request is pending");
        now = t;
        match event {
            Event::Arrive => {
                let r = arrivals.below(replicas as u32) as usize;
                if s.arrive(t, issued as u32, &mut routers[r], selector) {
                    // Its pick failed: counted as done, as the fleet run does.
                    completed += 1;
                }
                issued += 1;
                if issued < scenario.requests {
                    s.clock.at(t + exponential(&mut arrivals, rate), Event::Arrive);
                }
            }
            Event::Done { worker, ticket } => {
                s.done(t, worker as usize, ticket);
                completed += 1;
            }
            Event::Report { worker } => {
                s.report(worker);
                if let Sharing::Reported(p) = sharing {
                    s.clock.at(t + nanos(p), event);
                }
            }
            Event::Sync { replica } => {
                let summary = pools[replica as usize].summary();
                for (o, pool) in pools.iter().enumerate() {
                    if o != replica as usize {
                        pool.apply_summary(&summary);
                    }
                }
                if let Sharing::Synced(p) = sharing {
                    s.clock.at(t + nanos(p), event);
                }
            }
        }
    }
    s.finish(now)
}

impl<'p> State<'_, 'p> {
    /// Request `ticket` arrives at `t`; replica `router` books a worker for it.
    /// Returns whether the pick failed.
    fn arrive(&mut self, t: u64, ticket: u32, router: &mut Handle<'p, u32>, selector: &dyn Selector) -> bool {
        let reservation = match router.reserve(selector) {
            Ok(r) => r,
            Err(e) => {
                self.outcome.pick_error.get_or_insert(e.to_string());
                return true;
            }
        };
        let w = *reservation.worker() as usize;
        let worker = &mut self.workers[w];
        worker.held += 1;
        self.outcome.peak_in_flight[w] = self.outcome.peak_in_flight[w].max(worker.held);
        let job = Job {
            reservation,
            ticket,
            arrived: t,
        };
        if worker.serving.len() < self.fleet.slots_of(w) {
            self.start(t, w, job);
        } else {
            worker.waiting.push_back(job);
        }
        false
    }

    fn start(&mut self, t: u64, w: usize, job: Job<'p>) {
        let service = self
            .fleet
            .service_time(w, self.scenario.seed, job.ticket as usize);
        self.clock.at(
            t + nanos(service),
            Event::Done {
                worker: w as u32,
                ticket: job.ticket,
            },
        );
        self.workers[w].serving.push(job);
    }

    /// Worker `w` finishes request `ticket` at `t`; its slot goes to the next waiting.
    fn done(&mut self, t: u64, w: usize, ticket: u32) {
        let worker = &mut self.workers[w];
        let at = worker.serving.iter().position(|j| j.ticket == ticket);
        let job = worker.serving.swap_remove(at.expect("a request in service"));
        worker.held -= 1;
        let held = worker.held;
        let next = worker.waiting.pop_front();
        self.latency_us.push((t - job.arrived) / 1000);
        drop(job.reservation);
        self.outcome.served[w] += 1;
        if let Some(next) = next {
            self.start(t, w, next);
        }
        let counted: u32 = self
            .pools
            .iter()
            .map(|p| p.in_flight(&(w as u32)).unwrap_or(0))
            .sum();
        if counted != held {
            self.outcome.mismatched += 1;
        }
    }

    /// Worker `w` tells every replica what it holds; each takes it less its own
    /// bookings there, which it counts itself (the crate's advice for a
    /// worker's figure that includes this router's requests).
    fn report(&self, w: u32) {
        let held = self.workers[w as usize].held;
        for pool in self.pools {
            let own = pool.in_flight(&w).unwrap_or(0);
            pool.report_load(&w, held.saturating_sub(own));
        }
    }

    fn finish(mut self, now: u64) -> Outcome {
        let o = &mut self.outcome;
        o.latency_us = stats::summary(std::mem::take(&mut self.latency_us));
        o.end_in_flight = (0..self.workers.len() as u32)
            .map(|w| self.pools.iter().map(|p| p.in_flight(&w).unwrap_or(0)).sum())
            .collect();
        o.peers_at_end = self.pools.iter().map(Pool::reporting_peers).collect();
        o.virtual_time = Duration::from_nanos(now);
        self.outcome
    }
}

/// The first tick of source `i` of `n` with period `p`: spread over the period.
fn stagger(p: Duration, i: usize, n: usize) -> u64 {
    nanos(p) * (i as u64 + 1) / n as u64
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An exponential gap in ns for arrivals at `rate` per ns (at least 1 ns).
fn exponential(rng: &mut Rng, rate: f64) -> u64 {
    // Uniform in (0, 1]: never ln(0).
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    ((-u.ln() / rate) as u64).max(1)
}
