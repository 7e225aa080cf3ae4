//! Slow start: the ramp of a new worker's capacity, and the pool's clock
//! for its steps (the pool's methods for capacities, slow start, draining and
//! health are in `pool/fleet.rs`; health itself is a load signal, `load::health`).

pub(crate) mod slow_start;

use crate::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// The pool's clock for slow start: when the published snapshot's effective
/// capacities are next due to change.
pub(crate) struct RampClock {
    /// Nanoseconds after `epoch` (`u64::MAX`: nothing ramps).
    due: AtomicU64,
    epoch: Instant,
}

impl RampClock {
    pub(crate) fn new() -> Self {
        Self {
            due: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
        }
    }

    /// Whether some worker ramps (a step will be due).
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.due.load(Relaxed) != u64::MAX
    }

    /// Whether a step is due now.
    pub(crate) fn is_due(&self, now: Instant) -> bool {
        self.nanos(now) >= self.due.load(Relaxed)
    }

    /// Records when the next step is due.
    pub(crate) fn set(&self, due: Option<Instant>) {
        self.due.store(due.map_or(u64::MAX, |at| self.nanos(at)), Relaxed);
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX - 1)
    }
}
