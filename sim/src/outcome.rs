//! What a run measured, and the invariants it must keep.

use super::join::JoinOutcome;
use super::stats::Summary;
use std::time::Duration;

/// What the fleet change showed.
#[derive(Clone, Debug, Default)]
pub struct ChurnOutcome {
    /// The worker that left and came back.
    pub worker: u32,
    /// Its load right after the removal (reservations still alive).
    pub in_flight_at_removal: u32,
    /// Requests it finished while out of the set.
    pub served_while_out: u64,
    /// Its load right after the re-insert: what the pool kept counting.
    pub kept_at_readd: u32,
    /// When it left, ms into the run.
    pub removed_ms: f64,
    /// When it came back, ms into the run.
    pub readded_ms: f64,
}

/// One worker's share of a run.
#[derive(Clone, Debug, Default)]
pub struct WorkerOutcome {
    /// Requests it served.
    pub requests: u64,
    /// The most requests it held at once (serving and queued).
    pub peak_in_flight: u32,
    /// Its in-flight count in the pool after the run.
    pub end_in_flight: u32,
}

/// Everything one run measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Requests issued.
    pub requests: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Per worker, in index order.
    pub workers: Vec<WorkerOutcome>,
    /// Nanoseconds per `reserve` call in the request path (timer included).
    pub select_ns: Summary,
    /// Microseconds from pick to the end of service (queueing included).
    pub latency_us: Summary,
    /// Requests never served.
    pub unserved: usize,
    /// Requests served twice or more.
    pub served_twice: usize,
    /// The first error a pick returned (none expected: the fleet is never empty).
    pub pick_error: Option<String>,
    /// Workers the pool still counts as draining after the run.
    pub draining_at_end: usize,
    /// The fleet change, if the run had one and the worker was busy in time.
    pub churn: Option<ChurnOutcome>,
    /// The joined worker's first window, if a worker joined.
    pub join: Option<JoinOutcome>,
    /// One per millisecond or so.
    pub samples: Vec<Sample>,
}

impl Outcome {
    /// Requests per second over the whole run.
    pub fn requests_per_s(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The invariants of a run, each broken one as a sentence.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        let ends: Vec<u32> = self.workers.iter().map(|w| w.end_in_flight).collect();
        if ends.iter().any(|&e| e != 0) {
            v.push(format!("in-flight counts after the run are {ends:?}, not all 0"));
        }
        let total: u64 = self.workers.iter().map(|w| w.requests).sum();
        if total != self.requests as u64 {
            v.push(format!("workers served {total} requests of {}", self.requests));
        }
        if self.unserved != 0 || self.served_twice != 0 {
            v.push(format!(
                "{} requests never served, {} served twice",
                self.unserved, self.served_twice
            ));
        }
        if let Some(e) = &self.pick_error {
            v.push(format!("a pick failed: {e}"));
        }
        if self.draining_at_end != 0 {
            v.push(format!("{} removed workers never drained", self.draining_at_end));
        }
        v
    }
}

/// (ms into the run, in-flight count per worker).
pub type Sample = (f64, Vec<u32>);
