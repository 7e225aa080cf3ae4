//! A worker that joins a run mid-way, cold: the scale-up scenario's fleet
//! change, and what its first window showed.
//!
//! A cold worker (a JIT still compiling, caches still empty) serves its first
//! requests slowly: a request that starts service at the moment it joins
//! takes `cold` times its usual time, and the factor falls linearly to 1 over
//! `warm_up`.

use super::stats::Summary;
use std::time::Duration;
use workerpick::SlowStart;

/// Inserts `worker`, absent from the pool until then, `after` into the run.
#[derive(Clone, Copy, Debug)]
pub struct Join {
    /// The worker's index (the fleet's last, typically).
    pub worker: u32,
    /// When it joins, from the start of the run.
    pub after: Duration,
    /// Its service time at the moment it joins, as a multiple of its warm one.
    pub cold: f64,
    /// How long it takes to warm up (linearly) to its usual speed.
    pub warm_up: Duration,
    /// The pool's slow start, set before the run (`None`: off).
    pub slow_start: Option<SlowStart>,
    /// How long after the join the outcome looks at.
    pub window: Duration,
}

impl Join {
    /// The slowdown of a request that starts service `age` after the join.
    pub fn slowdown(&self, age: Duration) -> f64 {
        let warm = self.warm_up.as_secs_f64();
        let left = if warm > 0.0 {
            1.0 - age.as_secs_f64() / warm
        } else {
            0.0
        };
        1.0 + (self.cold - 1.0).max(0.0) * left.clamp(0.0, 1.0)
    }
}

/// What the requests picked in the joined worker's first window showed.
#[derive(Clone, Debug, Default)]
pub struct JoinOutcome {
    /// The worker that joined.
    pub worker: u32,
    /// When it joined, ms into the run.
    pub joined_ms: f64,
    /// The window measured, ms (shorter than asked if the run ended first).
    pub window_ms: f64,
    /// Requests picked in the window, on any worker.
    pub window_requests: usize,
    /// Of them, those picked for the worker that joined.
    pub joined_requests: usize,
    /// Requests picked in the window's first quarter, on any worker.
    pub early_requests: usize,
    /// Of them, those picked for the worker that joined.
    pub early_joined: usize,
    /// Their latencies (µs): pick, queueing and service.
    pub joined_latency_us: Summary,
    /// The latencies of every request picked in the window.
    pub fleet_latency_us: Summary,
    /// The latencies of those picked in the window for the other workers.
    pub others_latency_us: Summary,
}

impl JoinOutcome {
    /// The joined worker's share of the window's requests.
    pub fn share(&self) -> f64 {
        self.joined_requests as f64 / self.window_requests.max(1) as f64
    }

    /// Its share of the requests picked in the window's first quarter,
    /// where it is coldest.
    pub fn early_share(&self) -> f64 {
        self.early_joined as f64 / self.early_requests.max(1) as f64
    }
}
