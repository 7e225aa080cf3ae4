//! Router replicas: several routers in front of one fleet, each with its own
//! pool, so each counts only the requests it booked itself, unless the workers
//! report their load or the replicas exchange summaries.
//!
//! Unlike the fleet run this one is played in virtual time, one event at a
//! time: what it measures is how stale each replica's view of the others is (a
//! period of 1, 10 or 100 ms against a service time of a few), and on a shared
//! machine, sleeping threads would blur a 1 ms period into scheduler noise. The
//! picks, reservations, reports and summaries are the crate's own, on real
//! pools; only the clock is simulated. The same seed gives the same table.

mod events;
pub mod herding;
pub mod table;

use super::Progress;
use super::engine::Fleet;
use super::stats::{Summary, ms};
use std::time::Duration;
use workerpick::Selector;

/// The most workers the scenario runs on: its picks scan the fleet (the
/// replica rule is a scalar pass), and its grid is some ten runs per mode of
/// `requests` picks each, so a fleet of thousands would take minutes. A
/// larger fleet runs it on its first `MAX_WORKERS` (the speeds cycle, so
/// their mix is kept), and the section says so.
pub const MAX_WORKERS: usize = 512;

/// The scenario's shape; it runs on the fleet of the main run (its first
/// [`MAX_WORKERS`]).
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Router replica counts; 1 is the single router every other run is held against.
    pub replicas: Vec<usize>,
    /// Periods of the reports and of the summaries.
    pub periods: Vec<Duration>,
    /// Offered load as a fraction of what the fleet serves at most.
    pub utilization: f64,
    /// Requests per run.
    pub requests: usize,
    /// Seeds the arrivals, the replica each request goes to, the routers'
    /// draws and the service times.
    pub seed: u64,
}

/// What each replica knows of the load the others put on the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Nothing: each counts only its own bookings.
    Local,
    /// Every worker reports its load to every replica once a period; a replica
    /// takes it less what it has booked there itself (`report_load`).
    Reported(Duration),
    /// Every replica sends its `summary()` to every other once a period, which
    /// applies it (`apply_summary`).
    Synced(Duration),
}

impl Sharing {
    /// A short name: `local`, `reported-10ms`, `synced-1ms`.
    pub fn name(&self) -> String {
        match self {
            Sharing::Local => "local".into(),
            Sharing::Reported(p) => format!("reported-{}ms", ms(*p)),
            Sharing::Synced(p) => format!("synced-{}ms", ms(*p)),
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Requests in the run.
    pub requests: usize,
    /// Arrival to end of service (queueing included), virtual microseconds.
    pub latency_us: Summary,
    /// Per worker: requests served.
    pub served: Vec<u64>,
    /// Per worker: the most requests it held at once, from every replica.
    pub peak_in_flight: Vec<u32>,
    /// Per worker: its in-flight count summed over every replica's pool, after the run.
    pub end_in_flight: Vec<u32>,
    /// Times a worker's in-flight count, summed over the replicas' pools, was
    /// not the requests it held (checked at every completion).
    pub mismatched: usize,
    /// Per replica: peers with a live summary in its pool after the run.
    pub peers_at_end: Vec<usize>,
    /// The first error a pick returned, if any.
    pub pick_error: Option<String>,
    /// The run's length in virtual time.
    pub virtual_time: Duration,
}

impl Outcome {
    /// The most requests any one worker held at once.
    pub fn peak(&self) -> u32 {
        self.peak_in_flight.iter().copied().max().unwrap_or(0)
    }
}

/// One run of the grid.
#[derive(Clone, Debug)]
pub struct Run {
    /// Router replicas.
    pub replicas: usize,
    /// What they share.
    pub sharing: Sharing,
    /// What it measured.
    pub outcome: Outcome,
}

impl Run {
    /// The invariants of a run, each broken one as a sentence.
    pub fn violations(&self) -> Vec<String> {
        let o = &self.outcome;
        let mut v = Vec::new();
        if o.end_in_flight.iter().any(|&e| e != 0) {
            v.push(format!(
                "in-flight counts after the run are {:?}, not all 0",
                o.end_in_flight
            ));
        }
        let served: u64 = o.served.iter().sum();
        if served != o.requests as u64 {
            v.push(format!("workers served {served} requests of {}", o.requests));
        }
        if o.mismatched != 0 {
            v.push(format!(
                "the pools' counts differed from the requests held {} time(s)",
                o.mismatched
            ));
        }
        if let Some(e) = &o.pick_error {
            v.push(format!("a pick failed: {e}"));
        }
        // By the end of the first period every replica has sent a summary.
        if let Sharing::Synced(period) = self.sharing
            && o.virtual_time > period
        {
            let peers = self.replicas - 1;
            if o.peers_at_end.iter().any(|&p| p != peers) {
                v.push(format!(
                    "live peers per replica {:?}, not {peers} each",
                    o.peers_at_end
                ));
            }
        }
        v.into_iter()
            .map(|s| format!("{} replica(s), {}: {s}", self.replicas, self.sharing.name()))
            .collect()
    }
}

impl Scenario {
    /// One run: `replicas` routers picking with `selector`, sharing as `sharing` says.
    pub fn run_one(
        &self,
        fleet: &Fleet,
        selector: &dyn Selector,
        replicas: usize,
        sharing: Sharing,
    ) -> Outcome {
        events::run(self, fleet, selector, replicas, sharing)
    }

    /// The runs of the grid: one router alone, then for every other replica
    /// count each way of sharing.
    pub fn grid(&self) -> Vec<(usize, Sharing)> {
        let mut grid = Vec::new();
        for &r in &self.replicas {
            grid.push((r, Sharing::Local));
            if r > 1 {
                grid.extend(self.periods.iter().map(|&p| (r, Sharing::Reported(p))));
                grid.extend(self.periods.iter().map(|&p| (r, Sharing::Synced(p))));
            }
        }
        grid
    }

    /// Requests over the whole grid, for progress.
    pub fn progress_total(&self) -> u64 {
        (self.grid().len() * self.requests) as u64
    }

    /// Runs the grid with `selector` on `fleet`.
    pub fn run(&self, fleet: &Fleet, selector: &dyn Selector, progress: &dyn Progress) -> Vec<Run> {
        let fleet = &fleet.first(MAX_WORKERS);
        self.grid()
            .into_iter()
            .map(|(replicas, sharing)| {
                let outcome = events::run(self, fleet, selector, replicas, sharing);
                progress.advance(self.requests as u64);
                Run {
                    replicas,
                    sharing,
                    outcome,
                }
            })
            .collect()
    }
}
