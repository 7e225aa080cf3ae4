//! The simulator's core, shared by the `simulate` binary (the command line)
//! and `tests/simulate.rs` (its invariants on a small configuration).

pub mod admission;
pub mod bursts;
pub mod disagg;
pub mod engine;
pub mod fleet;
pub mod join;
pub mod latency;
pub mod llm;
pub mod llm_plot;
pub mod modes;
pub mod mooncake;
pub mod outcome;
pub mod plot;
mod queue;
pub mod replicas;
pub mod report;
pub mod sessions;
pub mod shares;
pub mod stats;
mod table;

use std::time::Duration;
use workerpick::DeviceKind;

pub use engine::{Churn, Fleet, Load};
pub use outcome::Outcome;

/// What to run for every mode.
pub struct Config {
    /// Mode names, resolved by [`modes::selector`].
    pub modes: Vec<String>,
    /// The main run: a heterogeneous fleet under a closed loop of requests.
    pub load: Load,
    /// Bursts in the classic check (4 equal workers, 32 reservations held together).
    pub bursts: usize,
    /// Requests in the classic 400-requests-at-concurrency-32 check.
    pub classic_requests: usize,
    /// How long each mode picks back to back to measure selections/s.
    pub rate_window: Duration,
    /// Router replicas in front of the fleet, run for every mode that looks at
    /// load; `None` skips them.
    pub replicas: Option<replicas::Scenario>,
}

/// The classic checks' fleet: 4 equal workers, 32 requests at once.
pub const CLASSIC_WORKERS: usize = 4;
/// Requests in flight (and reservations per burst) in the classic checks.
pub const CLASSIC_CONCURRENCY: usize = 32;

/// Everything measured for one mode.
pub struct ModeReport {
    /// The mode's name.
    pub mode: String,
    /// The main run on the heterogeneous fleet.
    pub load: Outcome,
    /// Reserve + release pairs per second, back to back on an idle fleet.
    pub selections_per_s: f64,
    /// The classic burst check.
    pub bursts: bursts::Bursts,
    /// The classic 400 requests at concurrency 32.
    pub classic: Outcome,
    /// The replica scenario's runs (none for a mode that does not look at load).
    pub replicas: Vec<replicas::Run>,
}

/// Where a long run reports how far it got.
pub trait Progress: Sync {
    /// A new stage starts (a mode's name and what it runs).
    fn stage(&self, what: &str);
    /// `n` more units (requests or bursts) are done.
    fn advance(&self, n: u64);
}

/// No progress reporting.
impl Progress for () {
    fn stage(&self, _: &str) {}
    fn advance(&self, _: u64) {}
}

impl Config {
    /// Units of progress a full run reports.
    pub fn progress_total(&self) -> u64 {
        let per_mode = self.load.requests + self.classic_requests + self.bursts;
        let replicas = self.replicas.as_ref().map_or(0, |s| {
            let aware = self.modes.iter().filter(|m| modes::looks_at_load(m)).count();
            s.progress_total() * aware as u64
        });
        (per_mode * self.modes.len()) as u64 + replicas
    }

    /// The classic 400-requests check: 4 equal workers, no queueing.
    fn classic_load(&self) -> Load {
        Load {
            fleet: Fleet {
                speeds: vec![1.0; CLASSIC_WORKERS],
                devices: vec![DeviceKind::Accelerator; CLASSIC_WORKERS],
                slots: CLASSIC_CONCURRENCY,
                service: self.load.fleet.service,
                flat_scan: self.load.fleet.flat_scan,
                capacities: Vec::new(),
                weighted: false,
            },
            concurrency: CLASSIC_CONCURRENCY,
            requests: self.classic_requests,
            threads: self.load.threads,
            seed: self.load.seed,
            churn: None,
            sample_every: self.load.sample_every,
            join: None,
        }
    }
}

/// Runs every scenario for every mode, in order.
pub fn run(config: &Config, progress: &dyn Progress) -> Result<Vec<ModeReport>, String> {
    let classic = config.classic_load();
    config
        .modes
        .iter()
        .map(|mode| {
            let selector = modes::selector(mode)?;
            progress.stage(&format!("{mode}: fleet run"));
            let load = engine::run(&config.load, &*selector, progress);
            progress.stage(&format!("{mode}: classic checks"));
            let bursts = bursts::run(
                &*selector,
                config.bursts,
                config.load.threads,
                config.load.seed,
                progress,
            );
            let classic = engine::run(&classic, &*selector, progress);
            let selections_per_s = bursts::selection_rate(
                &*selector,
                config.load.fleet.speeds.len(),
                config.load.fleet.flat_scan,
                config.load.threads,
                config.rate_window,
            );
            let replicas = match &config.replicas {
                Some(scenario) if modes::looks_at_load(mode) => {
                    progress.stage(&format!("{mode}: router replicas"));
                    scenario.run(&config.load.fleet, &*selector, progress)
                }
                _ => Vec::new(),
            };
            Ok(ModeReport {
                mode: selector.name().to_owned(),
                load,
                selections_per_s,
                bursts,
                classic,
                replicas,
            })
        })
        .collect()
}

/// The invariants every run must keep; each broken one as a sentence.
pub fn violations(reports: &[ModeReport]) -> Vec<String> {
    let mut out = Vec::new();
    for r in reports {
        for (what, o) in [("fleet run", &r.load), ("400-request check", &r.classic)] {
            out.extend(
                o.violations()
                    .into_iter()
                    .map(|v| format!("{}, {what}: {v}", r.mode)),
            );
        }
        out.extend(
            r.bursts
                .violations(&r.mode)
                .into_iter()
                .map(|v| format!("{}, bursts: {v}", r.mode)),
        );
        for run in &r.replicas {
            out.extend(run.violations().into_iter().map(|v| format!("{}, {v}", r.mode)));
        }
    }
    out
}
