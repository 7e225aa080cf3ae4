use crate::booking;
use crate::error::Error;
use crate::pool::Pool;
use crate::storage::Booked;
use crate::storage::latency::{Latency, Timeable, Timed, sealed};
use core::fmt;
use core::hash::Hash;

/// One booking of load on one worker, released exactly once when dropped
/// (normally or by unwinding) or by [`release`](Self::release).
///
/// It borrows the pool, whose counter storage outlives it by construction, so
/// neither booking nor releasing touches a shared reference count.
///
/// ```
/// use workerpick::{LeastLoaded, Pool};
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let r = pool.reserve(&LeastLoaded::new()).unwrap();
/// assert_eq!(pool.in_flight(r.worker()), Some(1));
/// let w = *r.worker();
/// r.release();
/// assert_eq!(pool.in_flight(&w), Some(0));
/// ```
#[must_use = "dropping a Reservation releases its load at once; hold it while the request is in flight"]
pub struct Reservation<'p, W> {
    pool: &'p Pool<W>,
    /// The booking, with the address of the worker's key in the pool's slot
    /// storage, found while the pick still held its snapshot: reading it back
    /// is one load, not a walk through the key chunks after the booking's
    /// compare-and-swap.
    booked: Booked<W>,
}

impl<'p, W> Reservation<'p, W> {
    /// Takes over `booked`, made on `pool`'s storage.
    #[inline(always)]
    pub(crate) fn new(pool: &'p Pool<W>, booked: Booked<W>) -> Self {
        Self { pool, booked }
    }

    /// The worker this reservation is booked on.
    #[inline]
    pub fn worker(&self) -> &W {
        // SAFETY: the key lives in the pool's slot storage, which the borrow
        // `'p` keeps alive, and this reservation holds its booking until it
        // drops, which the returned borrow of `self` outlasts, so the writer
        // cannot reassign the slot meanwhile. Not safe code: a reservation
        // holds no copy of the key (a clone per booking, an allocation for
        // `String` keys, or an `Arc` with a locked increment); its booking
        // is what keeps the slot's key.
        unsafe { self.booked.key().get() }
    }

    /// The load this reservation booked and will give back.
    pub fn weight(&self) -> u32 {
        self.booked.weight()
    }

    /// The data-parallel rank of [`worker`](Self::worker) this reservation
    /// is booked on: 0 for a worker without ranks (see
    /// [`WorkerInfo::ranks`](crate::WorkerInfo::ranks)).
    ///
    /// ```
    /// use workerpick::{Pool, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(8)).unwrap();
    /// let r = pool.reserve_rank(&"node", 5, 1).unwrap();
    /// assert_eq!((*r.worker(), r.rank()), ("node", 5));
    /// ```
    pub fn rank(&self) -> u32 {
        // The booking keeps the slot from being reassigned (as for `worker`).
        self.pool.raw.slots.keys.rank(self.booked.slot())
    }

    /// Releases now (the same as dropping it).
    pub fn release(self) {
        drop(self);
    }

    /// Gives back `n` of the load this reservation booked now, and keeps the
    /// rest until it drops (phased load: the prefill's share at the first
    /// token, the decode's at the end). Gives back at most what it still
    /// holds and returns how much that was; each unit is given back once,
    /// here or on drop, never twice, so no count goes below zero.
    ///
    /// ```
    /// use workerpick::Pool;
    /// let pool = Pool::from_workers(["a"]).unwrap();
    /// let mut r = pool.reserve_worker(&"a", 600).unwrap(); // 512 prefill + 88 decode
    /// assert_eq!(r.release_part(512), 512);
    /// assert_eq!((r.weight(), pool.in_flight(&"a")), (88, Some(88)));
    /// assert_eq!(r.release_part(1000), 88); // only what is left
    /// assert_eq!(pool.in_flight(&"a"), Some(0));
    /// drop(r); // gives back nothing more
    /// assert_eq!(pool.in_flight(&"a"), Some(0));
    /// ```
    pub fn release_part(&mut self, n: u32) -> u32 {
        self.pool.raw.slots.release_part(&mut self.booked, n)
    }

    /// Times this reservation from now to its end, a latency sample of its
    /// worker (see [`Timed`]); free on a pool without a latency table.
    #[inline(always)]
    pub fn timed(self) -> Timed<Self> {
        Timed::new(self)
    }
}

impl<W> Timeable for Reservation<'_, W> {}

impl<W> sealed::Sealed for Reservation<'_, W> {
    #[inline(always)]
    fn latency_slot(&self) -> Option<(&Latency, u32)> {
        Some((self.pool.raw.slots.counters.latency()?, self.booked.slot()))
    }
}

impl<'p, W: Clone + Eq + Hash + Send + Sync> Reservation<'p, W> {
    /// Moves this booking to `worker`: one booking there, one fewer here
    /// (on its least-loaded rank, if it has ranks; see
    /// [`Pool::reserve_worker`]).
    ///
    /// ```
    /// use workerpick::{Pool, RoundRobin};
    /// let pool = Pool::from_workers([1, 2]).unwrap();
    /// let mut r = pool.reserve(&RoundRobin::new()).unwrap();
    /// assert_eq!(*r.worker(), 1);
    /// r.retarget(&2).unwrap();
    /// assert_eq!((pool.in_flight(&1), pool.in_flight(&2)), (Some(0), Some(1)));
    /// assert!(r.retarget(&3).is_err());
    /// ```
    pub fn retarget(&mut self, worker: &W) -> Result<(), Error> {
        retarget(self.pool, &mut self.booked, worker)
    }

    /// Adds `n` to the load this reservation holds (tokens generated); it is
    /// given back with the rest. Past `u32::MAX` on the worker it is an
    /// [`Error::LoadOverflow`] and nothing changes; a reservation holding no
    /// load whose worker has left the set is an [`Error::UnknownWorker`].
    ///
    /// ```
    /// use workerpick::Pool;
    /// let pool = Pool::from_workers(["a"]).unwrap();
    /// let mut r = pool.reserve_worker(&"a", 4).unwrap();
    /// r.add_charge(3).unwrap();
    /// assert_eq!((r.weight(), pool.in_flight(&"a")), (7, Some(7)));
    /// drop(r);
    /// assert_eq!(pool.in_flight(&"a"), Some(0));
    /// ```
    pub fn add_charge(&mut self, n: u32) -> Result<(), Error> {
        add_charge(self.pool, &mut self.booked, n)
    }
}

/// Adds `n` to `booked`, a booking on `pool`: the `add_charge` of both
/// reservation kinds.
pub(crate) fn add_charge<W: Clone + Eq + Hash + Send + Sync>(
    pool: &Pool<W>,
    booked: &mut Booked<W>,
    n: u32,
) -> Result<(), Error> {
    if booked.weight() > 0 || n == 0 {
        return pool.raw.slots.add_charge(booked, n);
    }
    // A pin turns into a charge while its worker is in the set, a candidate
    // or drained (`Pool::drain` stops new picks, not the requests in
    // flight): the snapshot keeps the slot from being reclaimed between the
    // charge and the unpin. The pin kept the slot from reuse, so a worker
    // there is still this one.
    let snap = pool.snapshot();
    if !snap.holds(booked.slot()) {
        return Err(Error::UnknownWorker);
    }
    pool.raw.slots.add_charge(booked, n)
}

/// Moves `booked`, a booking on `pool`, to `worker`: the retarget of both
/// reservation kinds.
pub(crate) fn retarget<W: Clone + Eq + Hash + Send + Sync>(
    pool: &Pool<W>,
    booked: &mut Booked<W>,
    worker: &W,
) -> Result<(), Error> {
    // Held until the new booking is made: it keeps the new slot from being
    // reassigned while its key is read.
    let snap = pool.snapshot();
    let slot = booking::worker_slot(&pool.raw, &snap, worker)?;
    if slot != booked.slot() {
        // Book the new one before giving back the old: the load never dips,
        // and each side changes exactly once.
        let moved = booking::book(&pool.raw, &snap, slot, booked.weight())?;
        let old = core::mem::replace(booked, moved);
        pool.raw.slots.release(&old);
    }
    Ok(())
}

impl<W> Drop for Reservation<'_, W> {
    // Always inlined: the release is a few instructions, and a call costs as
    // many (measured with the callgrind gate).
    #[inline(always)]
    fn drop(&mut self) {
        self.pool.raw.slots.release(&self.booked);
    }
}

impl<W: fmt::Debug> fmt::Debug for Reservation<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("worker", self.worker())
            .field("weight", &self.weight())
            .finish()
    }
}
