use super::Anchor;
use crate::error::Error;
use crate::pool::Pool;
use crate::reservation;
use crate::storage::Booked;
use crate::storage::latency::{Latency, Timeable, Timed, sealed};
use core::fmt;
use core::hash::Hash;
use std::sync::Arc;

/// A [`Reservation`](crate::Reservation) that owns its share of the pool: `'static + Send + Sync`,
/// so it can move into a spawned task and be released there, exactly once,
/// when it drops (normally, by unwinding, or by [`release`](Self::release)).
///
/// It keeps the pool alive through its handle's anchor, so dropping every
/// `Arc<Pool<W>>` while reservations live frees nothing they need.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::{Pool, RoundRobin};
/// let pool = Arc::new(Pool::from_workers([1, 2]).unwrap());
/// let mut r = pool.owned_handle().reserve(&RoundRobin::new()).unwrap();
/// r.retarget(&2).unwrap();
/// assert_eq!((pool.in_flight(&1), pool.in_flight(&2)), (Some(0), Some(1)));
/// drop(pool); // the reservation still holds the pool
/// assert_eq!(r.pool().in_flight(&2), Some(1));
/// ```
///
/// A borrowed [`Reservation`](crate::Reservation) cannot be sent where `'static` is needed:
///
/// ```compile_fail
/// use workerpick::{Pool, Random};
/// let pool = Pool::from_workers([1, 2]).unwrap();
/// let r = pool.reserve(&Random::new()).unwrap();
/// std::thread::spawn(move || drop(r)); // error: `pool` does not live long enough
/// ```
#[must_use = "dropping an OwnedReservation releases its load at once; hold it while the request is in flight"]
pub struct OwnedReservation<W> {
    anchor: Arc<Anchor<W>>,
    booked: Booked<W>,
}

impl<W> OwnedReservation<W> {
    /// Takes over `booked`, made on `anchor`'s pool.
    #[inline(always)]
    pub(crate) fn new(anchor: &Arc<Anchor<W>>, booked: Booked<W>) -> Self {
        Self {
            anchor: anchor.clone(),
            booked,
        }
    }

    /// The pool this reservation is booked on.
    pub fn pool(&self) -> &Arc<Pool<W>> {
        &self.anchor.pool
    }

    /// The worker this reservation is booked on.
    pub fn worker(&self) -> &W {
        // SAFETY: the key lives in the pool's slot storage, which the anchor
        // keeps alive; `self` holds the booking until it drops, which the
        // returned borrow of `self` outlasts, so the slot cannot be reassigned
        // meanwhile. Not safe code for the reason `Reservation::worker` gives:
        // no copy or count of the key per booking.
        unsafe { self.booked.key().get() }
    }

    /// The load this reservation booked and will give back.
    pub fn weight(&self) -> u32 {
        self.booked.weight()
    }

    /// The data-parallel rank of [`worker`](Self::worker) this reservation
    /// is booked on (see [`Reservation::rank`](crate::Reservation::rank)).
    pub fn rank(&self) -> u32 {
        // The booking keeps the slot from being reassigned (as for `worker`).
        self.anchor.pool.raw.slots.keys.rank(self.booked.slot())
    }

    /// Releases now (the same as dropping it).
    pub fn release(self) {
        drop(self);
    }

    /// Gives back `n` of its load now and keeps the rest (see
    /// [`Reservation::release_part`](crate::Reservation::release_part)).
    pub fn release_part(&mut self, n: u32) -> u32 {
        self.anchor.pool.raw.slots.release_part(&mut self.booked, n)
    }

    /// Times this reservation from now to its end (see
    /// [`Reservation::timed`](crate::Reservation::timed)).
    #[inline(always)]
    pub fn timed(self) -> Timed<Self> {
        Timed::new(self)
    }
}

impl<W> Timeable for OwnedReservation<W> {}

impl<W> sealed::Sealed for OwnedReservation<W> {
    #[inline(always)]
    fn latency_slot(&self) -> Option<(&Latency, u32)> {
        Some((self.anchor.pool.raw.slots.counters.latency()?, self.booked.slot()))
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> OwnedReservation<W> {
    /// Moves this booking to `worker`: one booking there, one fewer here (see
    /// [`Reservation::retarget`](crate::Reservation::retarget)).
    pub fn retarget(&mut self, worker: &W) -> Result<(), Error> {
        reservation::retarget(&self.anchor.pool, &mut self.booked, worker)
    }

    /// Adds `n` to its load (see
    /// [`Reservation::add_charge`](crate::Reservation::add_charge)).
    pub fn add_charge(&mut self, n: u32) -> Result<(), Error> {
        reservation::add_charge(&self.anchor.pool, &mut self.booked, n)
    }
}

impl<W> Drop for OwnedReservation<W> {
    fn drop(&mut self) {
        self.anchor.pool.raw.slots.release(&self.booked);
    }
}

impl<W: fmt::Debug> fmt::Debug for OwnedReservation<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedReservation")
            .field("worker", self.worker())
            .field("weight", &self.weight())
            .finish()
    }
}
