//! The latency signal's readings and its feed from outside the pool's clock.

use super::Pool;
use core::hash::Hash;
use std::time::Duration;

/// # Latency
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// `worker`'s latency estimate now (each data-parallel rank keeps its
    /// own, from its own reservations: this is their mean); `None` if it is
    /// not in the set or the pool keeps no latency signal.
    pub fn latency(&self, worker: &W) -> Option<Duration> {
        let latency = self.raw.slots.counters.latency()?;
        let snap = self.raw.snapshot();
        let ranks = snap.ranks_of(worker)?;
        let sum: Duration = ranks.slots().map(|slot| latency.estimate_now(slot)).sum();
        Some(sum / ranks.count)
    }

    /// Folds a latency sample into `worker`'s estimate with an explicit
    /// timeline: `rtt` long, ending `at` after a zero of the caller's choosing
    /// (wrapping at 2^32 ms). For discrete-event simulators, whose clock is not
    /// the pool's: every sample and pick must then use that timeline. Not part
    /// of the API.
    #[doc(hidden)]
    pub fn record_latency_at(&self, worker: &W, at: Duration, rtt: Duration, failed: bool) {
        let Some(latency) = self.raw.slots.counters.latency() else {
            return;
        };
        let snap = self.raw.snapshot();
        // A worker's sample is every one of its ranks'.
        for slot in snap.ranks_of(worker).into_iter().flat_map(|r| r.slots()) {
            latency.sample_as(slot, at, rtt, failed);
        }
    }
}
