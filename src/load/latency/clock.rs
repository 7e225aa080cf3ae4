//! The clock latency samples are timed with: the CPU's time-stamp counter
//! through `quanta` (one `rdtsc`, calibrated once per process), because
//! `std::time::Instant::now()` costs several times as much and a timed
//! reservation reads a clock twice (see the `latency` bench group). Under
//! Miri, which cannot run `rdtsc`, the standard clock; under loom a clock that
//! stands still (every sample 0 µs long, at millisecond 0).

/// A monotonic clock with a per-pool epoch.
pub(crate) struct Clock {
    #[cfg(not(any(miri, loom)))]
    inner: quanta::Clock,
    #[cfg(not(any(miri, loom)))]
    epoch: u64,
    #[cfg(any(miri, loom))]
    epoch: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        #[cfg(not(any(miri, loom)))]
        {
            let inner = quanta::Clock::new();
            let epoch = inner.raw();
            Self { inner, epoch }
        }
        #[cfg(any(miri, loom))]
        Self {
            epoch: std::time::Instant::now(),
        }
    }

    /// A raw reading, to give back to [`nanos`](Self::nanos).
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

    /// Nanoseconds from raw reading `start` to raw reading `end` (0 if `end`
    /// is not later).
    #[inline(always)]
    pub(crate) fn nanos(&self, start: u64, end: u64) -> u64 {
        #[cfg(not(any(miri, loom)))]
        return self.inner.delta_as_nanos(start, end);
        #[cfg(any(miri, loom))]
        return end.saturating_sub(start);
    }

    /// Milliseconds since the epoch at raw reading `raw`, wrapping at 2^32.
    #[inline(always)]
    pub(crate) fn millis(&self, raw: u64) -> u32 {
        #[cfg(not(any(miri, loom)))]
        let since = self.nanos(self.epoch, raw);
        #[cfg(any(miri, loom))]
        let since = raw;
        (since / 1_000_000) as u32
    }
}

#[cfg(test)]
std::thread_local! {
    /// Clock reads on this thread, for the tests that plain pools read none.
    pub(crate) static READS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}
