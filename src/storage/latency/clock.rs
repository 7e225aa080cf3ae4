//! The clock latency samples are timed with: the CPU's time-stamp counter
//! through `quanta` (one `rdtsc`, calibrated once per process), because
//! `std::time::Instant::now()` costs several times as much and a timed
//! reservation reads a clock twice (see the `latency` bench group). Ticks
//! become microseconds and milliseconds by one 64×64-bit multiply each, with
//! factors taken from quanta's calibration when the pool is built (to about
//! 10^−10 relative, far below a tick). Under Miri, which cannot run
//! `rdtsc`, the standard clock; under loom a clock that stands still (every
//! sample 0 µs long, at millisecond 0).

/// The fixed-point shift of [`Clock`]'s conversion factors.
#[cfg(not(any(miri, loom)))]
const SHIFT: u32 = 56;

/// A monotonic clock with a per-pool epoch.
pub(crate) struct Clock {
    #[cfg(not(any(miri, loom)))]
    inner: quanta::Clock,
    #[cfg(not(any(miri, loom)))]
    epoch: u64,
    /// Microseconds per tick, and milliseconds per tick, in units of 2^−56.
    #[cfg(not(any(miri, loom)))]
    per_tick: (u64, u64),
    #[cfg(miri)]
    epoch: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        #[cfg(not(any(miri, loom)))]
        {
            let inner = quanta::Clock::new();
            let epoch = inner.raw();
            // Nanoseconds in 2^40 ticks (about 6 minutes at 3 GHz): the
            // calibration at full precision. Over 1000 and 10^6 at a 2^56
            // scale, both factors stay below 2^64 for any tick under 16 ns.
            let ns = u128::from(inner.delta_as_nanos(0, 1 << 40));
            let factor = |per: u128| u64::try_from((ns << (SHIFT - 40)) / per).unwrap_or(u64::MAX);
            Self {
                inner,
                epoch,
                per_tick: (factor(1_000), factor(1_000_000)),
            }
        }
        #[cfg(miri)]
        return Self {
            epoch: std::time::Instant::now(),
        };
        #[cfg(loom)]
        Self {}
    }

    /// A raw reading, to give back to [`micros`](Self::micros) and
    /// [`millis`](Self::millis).
    #[inline(always)]
    pub(crate) fn raw(&self) -> u64 {
        #[cfg(test)]
        READS.with(|r| r.set(r.get() + 1));
        #[cfg(not(any(miri, loom)))]
        return self.inner.raw();
        #[cfg(miri)]
        return self.epoch.elapsed().as_nanos() as u64;
        // A fixed reading: a model's iterations must take the same branches.
        #[cfg(loom)]
        return 0;
    }

    /// Whole microseconds from raw reading `start` to raw reading `end` (0 if
    /// `end` is not later), saturating at `u32::MAX` (71 minutes).
    #[inline(always)]
    pub(crate) fn micros(&self, start: u64, end: u64) -> u32 {
        let ticks = end.saturating_sub(start);
        #[cfg(not(any(miri, loom)))]
        let us = scale(ticks, self.per_tick.0);
        #[cfg(any(miri, loom))]
        let us = ticks / 1000;
        u32::try_from(us).unwrap_or(u32::MAX)
    }

    /// Milliseconds since the epoch at raw reading `raw`, wrapping at 2^32.
    #[inline(always)]
    pub(crate) fn millis(&self, raw: u64) -> u32 {
        #[cfg(not(any(miri, loom)))]
        return scale(raw.saturating_sub(self.epoch), self.per_tick.1) as u32;
        #[cfg(any(miri, loom))]
        return (raw / 1_000_000) as u32;
    }
}

/// `ticks · factor / 2^SHIFT`, in one widening multiply.
#[cfg(not(any(miri, loom)))]
#[inline(always)]
fn scale(ticks: u64, factor: u64) -> u64 {
    ((u128::from(ticks) * u128::from(factor)) >> SHIFT) as u64
}

#[cfg(test)]
std::thread_local! {
    /// Clock reads on this thread, for the tests that plain pools read none.
    pub(crate) static READS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

#[cfg(all(test, not(any(miri, loom))))]
mod tests {
    use super::*;

    /// The factors agree with quanta's own conversion of the same ticks.
    #[test]
    fn conversions_match_quanta() {
        let c = Clock::new();
        for ticks in [0u64, 1, 999, 123_456, 3_000_000, 987_654_321, 1 << 36, 1 << 44] {
            let ns = c.inner.delta_as_nanos(0, ticks);
            let us = u64::from(c.micros(c.epoch, c.epoch + ticks));
            let want = (ns / 1000).min(u64::from(u32::MAX));
            assert!(us.abs_diff(want) <= 1, "{ticks} ticks: {us} µs, quanta {ns} ns");
            let ms = u64::from(c.millis(c.epoch + ticks));
            assert!(
                ms.abs_diff(ns / 1_000_000) <= 1,
                "{ticks} ticks: {ms} ms, quanta {ns} ns"
            );
        }
        assert_eq!(c.micros(10, 5), 0);
    }
}
