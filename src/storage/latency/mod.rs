//! Latency: a per-worker peak-EWMA round-trip estimate, the load signal that
//! sees a worker that is slow rather than busy. Opt-in per pool
//! ([`Pool::with_latency`](crate::Pool::with_latency)); samples come from
//! [`Timed`] reservations, lock-free; picks read without writing. The
//! latency modes rank by `estimate × (load + 1)`. See
//! [`docs::load`](crate::docs::load#latency).
//!
//! [`Pool::with_latency`]: crate::Pool::with_latency

mod clock;
mod config;
pub(crate) mod ewma;
mod timed;

#[cfg(test)]
mod tests;

pub use config::LatencyConfig;
pub(crate) use timed::sealed;
pub use timed::{Timeable, Timed};

use crate::sync::CachePadded;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use clock::Clock;
use ewma::Decay;

/// A pool's latency table: one packed peak-EWMA cell per slot.
pub struct Latency {
    cells: Box<[AtomicU64]>,
    decay: Decay,
    default_us: u32,
    penalty_us: u32,
    clock: Clock,
    /// The latest millisecond a sample ended at: picks decay estimates to
    /// it rather than reading the clock (at most one gap between two
    /// completions in the pool old; an old `now` only decays less).
    recent: CachePadded<AtomicU32>,
}

impl Latency {
    /// A table for `len` slots.
    pub(crate) fn new(len: usize, config: LatencyConfig) -> Result<Self, crate::error::Error> {
        let tau = config.tau_ms()?;
        Ok(Self {
            cells: (0..len).map(|_| AtomicU64::new(0)).collect(),
            decay: Decay::new(tau),
            default_us: config::micros(config.default_rtt_value()).max(1),
            penalty_us: config::micros(config.failure_penalty_value()),
            clock: Clock::new(),
            recent: CachePadded::new(AtomicU32::new(0)),
        })
    }

    /// The clock reading a timed reservation starts from.
    #[inline(always)]
    pub(crate) fn start(&self) -> u64 {
        self.clock.raw()
    }

    /// Ends a timed reservation on `slot` that started at `started`. Out of
    /// line: inlined, its body made `Timed` on a plain pool (which never runs
    /// it) cost 51 instructions a reservation more than a plain reservation
    /// (callgrind gate, `power_of_two_reserve_timed_plain_1024`).
    #[inline(never)]
    pub(crate) fn end(&self, slot: u32, started: u64, failed: bool) {
        let now = self.clock.raw();
        let rtt = self.clock.micros(started, now);
        let rtt = if failed { rtt.max(self.penalty_us) } else { rtt };
        self.sample(slot, self.clock.millis(now), rtt);
    }

    /// [`end`](Self::end) on a caller's timeline (`Pool::record_latency_at`).
    pub(crate) fn sample_as(
        &self,
        slot: u32,
        at: std::time::Duration,
        rtt: std::time::Duration,
        failed: bool,
    ) {
        let rtt = config::micros(rtt);
        let rtt = if failed { rtt.max(self.penalty_us) } else { rtt };
        self.sample(slot, at.as_millis() as u32, rtt);
    }

    /// Folds a sample of `rtt_us` at `now_ms` into `slot`'s cell.
    #[inline]
    pub(crate) fn sample(&self, slot: u32, now_ms: u32, rtt_us: u32) {
        if let Some(cell) = self.cells.get(slot as usize) {
            ewma::record(cell, now_ms, rtt_us, &self.decay);
        }
        // Written only when the millisecond changed: the line stays shared.
        if self.recent.load(Relaxed) != now_ms {
            self.recent.store(now_ms, Relaxed);
        }
    }

    /// The millisecond picks read estimates at.
    #[inline(always)]
    pub(crate) fn now(&self) -> u32 {
        self.recent.load(Relaxed)
    }

    /// `slot`'s estimate in µs at `now_ms` (the default for no history).
    #[inline(always)]
    pub(crate) fn estimate(&self, slot: u32, now_ms: u32) -> u32 {
        let cell = self.cells.get(slot as usize).map_or(0, |c| c.load(Relaxed));
        ewma::read(cell, now_ms, &self.decay).unwrap_or(self.default_us)
    }

    /// `slot` goes to a new worker: no history. Writers only.
    pub(crate) fn forget(&self, slot: u32) {
        if let Some(cell) = self.cells.get(slot as usize) {
            cell.store(0, Relaxed);
        }
    }

    /// The estimate of `slot` read now.
    pub(crate) fn estimate_now(&self, slot: u32) -> std::time::Duration {
        let now = self.clock.millis(self.clock.raw());
        std::time::Duration::from_micros(u64::from(self.estimate(slot, now)))
    }
}

/// The latency-aware cost of a candidate: `estimate × (load + 1)`, exact in
/// `u64` (both factors are below 2^32).
#[inline(always)]
pub(crate) fn cost(estimate_us: u32, load: u32) -> u64 {
    u64::from(estimate_us) * (u64::from(load) + 1)
}
