//! [`Timed`]: a reservation whose end is a latency sample.

use super::Latency;
use core::ops::{Deref, DerefMut};

/// A reservation timed from its booking to its end: when it drops (or
/// [`release`](Self::release)s), the time it was held is a sample of its
/// worker's latency, and one that ends [`fail`](Self::fail)ed counts as at
/// least the pool's failure penalty. The sample lands before the load is given
/// back. On a pool without [`with_latency`](crate::Pool::with_latency) it reads
/// no clock and records nothing.
///
/// ```
/// use std::time::Duration;
/// use workerpick::latency::LatencyConfig;
/// use workerpick::{LatencyPowerOfTwo, Pool};
/// let pool = Pool::from_workers(["a", "b"]).unwrap().with_latency(LatencyConfig::new()).unwrap();
/// let mut r = pool.reserve(&LatencyPowerOfTwo::new()).unwrap().timed();
/// let w = *r.worker();
/// r.fail(); // e.g. the worker answered 503
/// drop(r);
/// assert!(pool.latency(&w).unwrap() > Duration::from_millis(900)); // the 1 s penalty, decaying
/// ```
#[must_use = "dropping a Timed reservation ends it at once: its sample is recorded and its load released"]
pub struct Timed<R: Timeable> {
    inner: R,
    started: u64,
    failed: bool,
}

/// The reservations [`Timed`] can wrap: [`Reservation`](crate::Reservation)
/// and [`OwnedReservation`](crate::OwnedReservation).
pub trait Timeable: sealed::Sealed {}

pub(crate) mod sealed {
    use super::Latency;

    /// Where a reservation's sample goes.
    pub trait Sealed {
        /// The pool's latency table, if it keeps one, and the booked slot.
        fn latency_slot(&self) -> Option<(&Latency, u32)>;
    }
}

impl<R: Timeable> Timed<R> {
    /// Starts timing `inner` now.
    #[inline(always)]
    pub(crate) fn new(inner: R) -> Self {
        let started = inner.latency_slot().map_or(0, |(l, _)| l.start());
        Self {
            inner,
            started,
            failed: false,
        }
    }

    /// Marks it failed: its sample will be at least the failure penalty.
    pub fn fail(&mut self) {
        self.failed = true;
    }

    /// Ends it now, as failed.
    pub fn end_failed(mut self) {
        self.fail();
    }

    /// Ends it now (the same as dropping it).
    pub fn release(self) {
        drop(self);
    }

    /// Whether it will end as failed.
    pub fn is_failed(&self) -> bool {
        self.failed
    }
}

impl<R: Timeable> Deref for Timed<R> {
    type Target = R;
    fn deref(&self) -> &R {
        &self.inner
    }
}

impl<R: Timeable> DerefMut for Timed<R> {
    fn deref_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Timeable> Drop for Timed<R> {
    #[inline(always)]
    fn drop(&mut self) {
        // The sample lands while the booking still keeps the slot (the
        // field drops after this body), so it cannot reach a reused slot.
        if let Some((latency, slot)) = self.inner.latency_slot() {
            latency.end(slot, self.started, self.failed);
        }
    }
}

impl<R: Timeable + core::fmt::Debug> core::fmt::Debug for Timed<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timed")
            .field("reservation", &self.inner)
            .field("failed", &self.failed)
            .finish()
    }
}
