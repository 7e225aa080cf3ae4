//! The scale-up: a busy fleet of equal workers gets one more mid-run, cold
//! (its service time starts at `cold` times the usual and falls linearly to
//! it over `window`), once without slow start and once with a slow start of
//! that window. Least-loaded sees a worker with no load and sends it all it
//! can hold, at once; slow start holds its weight down while it warms.

use super::super::Progress;
use super::super::engine::{Fleet, Load};
use super::super::join::{Join, JoinOutcome};
use super::super::outcome::Outcome;
use std::time::Duration;
use workerpick::{DeviceKind, SlowStart};

/// The modes that look at load, where slow start has something to hold back
/// (random and round-robin give a newcomer its share from the first pick
/// either way; slow start weighs those too).
pub const MODES: [&str; 2] = ["least-loaded", "power-of-two"];

/// The scenario's shape.
#[derive(Clone, Debug)]
pub struct ScaleUp {
    /// Workers before the join (the newcomer is one more).
    pub workers: usize,
    /// Requests each worker serves at once.
    pub slots: usize,
    /// Service time of one request on a warm worker (±50%).
    pub service: Duration,
    /// Requests in flight at once (a closed loop).
    pub concurrency: usize,
    /// The newcomer's service time when it joins, as a multiple of the usual.
    pub cold: f64,
    /// Its warm-up, the slow-start window, and the window the report looks at.
    pub window: Duration,
    /// When it joins, from the start of the run.
    pub before: Duration,
    /// Router threads.
    pub threads: usize,
    /// Seeds the routers' draws and the service times.
    pub seed: u64,
    /// The modes to run (those of [`MODES`]).
    pub modes: Vec<String>,
}

/// One mode's scale-up, without slow start and with it.
#[derive(Clone, Debug)]
pub struct ScaleUpRun {
    /// The mode's name.
    pub mode: String,
    /// No slow start: the newcomer gets its full weight at once.
    pub without: Outcome,
    /// Slow start over the warm-up window.
    pub with: Outcome,
}

impl ScaleUpRun {
    /// The newcomer's first window without slow start and with it (`None`
    /// where the run ended before it joined).
    pub fn windows(&self) -> (Option<&JoinOutcome>, Option<&JoinOutcome>) {
        (self.without.join.as_ref(), self.with.join.as_ref())
    }
}

impl ScaleUp {
    /// 4 workers of 2 slots with 16 requests in flight (twice what they
    /// serve at once: a fleet that needs one more), a 5th joining after 50
    /// service times, 4 times slower at first, warm after `window`; the modes
    /// of `modes` among [`MODES`].
    pub fn new(
        service: Duration,
        window: Duration,
        threads: usize,
        seed: u64,
        modes: &[String],
    ) -> Result<Self, String> {
        Ok(Self {
            workers: 4,
            slots: 2,
            service,
            concurrency: 16,
            cold: 4.0,
            window,
            before: service * 50,
            threads,
            seed,
            modes: super::among(modes, &MODES)?,
        })
    }

    /// The newcomer's index.
    pub fn newcomer(&self) -> u32 {
        self.workers as u32
    }

    /// Requests per run: enough to last past the window at the most the
    /// fleet could serve (every slot busy, the newcomer warm from the start),
    /// with a quarter of the window to spare.
    pub fn requests(&self) -> usize {
        let slots = ((self.workers + 1) * self.slots).min(self.concurrency);
        let per_s = slots as f64 / self.service.as_secs_f64().max(1e-9);
        let run = self.before + self.window + self.window / 4;
        (per_s * run.as_secs_f64()).ceil() as usize
    }

    pub(super) fn progress_total(&self) -> u64 {
        (2 * self.requests() * self.modes.len()) as u64
    }

    fn load(&self, slow_start: bool) -> Load {
        let workers = self.workers + 1;
        Load {
            fleet: Fleet {
                speeds: vec![1.0; workers],
                devices: vec![DeviceKind::Accelerator; workers],
                slots: self.slots,
                service: self.service,
                flat_scan: false,
                capacities: Vec::new(),
                weighted: false,
            },
            concurrency: self.concurrency,
            requests: self.requests(),
            threads: self.threads,
            seed: self.seed,
            churn: None,
            sample_every: Duration::from_millis(1),
            join: Some(Join {
                worker: self.newcomer(),
                after: self.before,
                cold: self.cold,
                warm_up: self.window,
                slow_start: slow_start.then(|| SlowStart::new(self.window)),
                window: self.window,
            }),
        }
    }

    /// Runs every mode, without slow start then with it.
    pub(super) fn run(&self, progress: &dyn Progress) -> Result<Vec<ScaleUpRun>, String> {
        let stage = |mode: &str, slow_start: bool| match slow_start {
            false => format!("{mode}: scale-up, no slow start"),
            true => format!("{mode}: scale-up, slow start"),
        };
        let runs = super::each_mode_twice(&self.modes, false, |s| self.load(s), stage, progress)?;
        Ok(runs
            .into_iter()
            .map(|(mode, without, with)| ScaleUpRun { mode, without, with })
            .collect())
    }
}
