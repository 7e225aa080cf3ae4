//! The weighted fleet: workers of capacities 4:2:1:1, where a capacity-c
//! worker serves c times as many requests at once (`slots` per unit of
//! capacity, each at the same speed), so it really is c times a 1. Every mode
//! runs twice over the same fleet: once with the capacities set in the pool,
//! once without (every worker looks alike to the picks).

use super::super::Progress;
use super::super::engine::{Fleet, Load};
use super::super::outcome::Outcome;
use std::time::Duration;
use workerpick::DeviceKind;

/// The modes with a weighted rule (see the crate's `weights` module).
pub const MODES: [&str; 4] = ["random", "round-robin", "power-of-two", "least-loaded"];

/// The scenario's shape.
#[derive(Clone, Debug)]
pub struct Weighted {
    /// Per worker, its capacity.
    pub capacities: Vec<u32>,
    /// Requests served at once per unit of capacity.
    pub slots: usize,
    /// Service time of one request (±50%), the same on every worker.
    pub service: Duration,
    /// Requests in flight at once (a closed loop).
    pub concurrency: usize,
    /// Requests per run.
    pub requests: usize,
    /// Router threads.
    pub threads: usize,
    /// Seeds the routers' draws and the service times.
    pub seed: u64,
    /// The modes to run (those of [`MODES`]).
    pub modes: Vec<String>,
}

/// One mode on the fleet, weighted and not.
#[derive(Clone, Debug)]
pub struct WeightedRun {
    /// The mode's name.
    pub mode: String,
    /// The pool knows the capacities.
    pub weighted: Outcome,
    /// The pool does not.
    pub unweighted: Outcome,
}

impl Weighted {
    /// Capacities 4:2:1:1 at 8 slots per unit (64 slots), 48 requests in
    /// flight (3/4 of them); the modes of `modes` that have a weighted rule.
    pub fn new(
        service: Duration,
        requests: usize,
        threads: usize,
        seed: u64,
        modes: &[String],
    ) -> Result<Self, String> {
        Ok(Self {
            capacities: vec![4, 2, 1, 1],
            slots: 8,
            service,
            concurrency: 48,
            requests,
            threads,
            seed,
            modes: super::among(modes, &MODES)?,
        })
    }

    /// Each worker's share of the fleet's capacity.
    pub fn capacity_shares(&self) -> Vec<f64> {
        let total: u32 = self.capacities.iter().sum();
        self.capacities
            .iter()
            .map(|&c| f64::from(c) / f64::from(total.max(1)))
            .collect()
    }

    /// Requests served at once by the whole fleet.
    pub fn fleet_slots(&self) -> usize {
        self.capacities.iter().map(|&c| c as usize * self.slots).sum()
    }

    pub(super) fn progress_total(&self) -> u64 {
        (2 * self.requests * self.modes.len()) as u64
    }

    fn load(&self, weighted: bool) -> Load {
        let workers = self.capacities.len();
        Load {
            fleet: Fleet {
                speeds: vec![1.0; workers],
                devices: vec![DeviceKind::Accelerator; workers],
                slots: self.slots,
                service: self.service,
                flat_scan: false,
                capacities: self.capacities.clone(),
                weighted,
            },
            concurrency: self.concurrency,
            requests: self.requests,
            threads: self.threads,
            seed: self.seed,
            churn: None,
            sample_every: Duration::from_millis(1),
            join: None,
        }
    }

    /// Runs every mode, weighted then unweighted.
    pub(super) fn run(&self, progress: &dyn Progress) -> Result<Vec<WeightedRun>, String> {
        let stage = |mode: &str, weighted: bool| match weighted {
            true => format!("{mode}: weighted fleet"),
            false => format!("{mode}: the same fleet, unweighted"),
        };
        let runs = super::each_mode_twice(&self.modes, true, |w| self.load(w), stage, progress)?;
        Ok(runs
            .into_iter()
            .map(|(mode, weighted, unweighted)| WeightedRun {
                mode,
                weighted,
                unweighted,
            })
            .collect())
    }
}

/// Each worker's share of the requests `o` served.
pub fn shares(o: &Outcome) -> Vec<f64> {
    let total: u64 = o.workers.iter().map(|w| w.requests).sum();
    o.workers
        .iter()
        .map(|w| w.requests as f64 / total.max(1) as f64)
        .collect()
}

/// The largest gap between a worker's share of `o`'s requests and its share
/// of capacity (`want`), as a fraction of all requests.
pub fn off_by(o: &Outcome, want: &[f64]) -> f64 {
    shares(o)
        .iter()
        .zip(want)
        .map(|(got, want)| (got - want).abs())
        .fold(0.0, f64::max)
}
