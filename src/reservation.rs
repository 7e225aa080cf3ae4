use crate::sync::atomic::{AtomicU32, Ordering};
use crate::{Error, Pool};
use core::fmt;
use core::hash::Hash;
use core::ptr::NonNull;

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
    /// The worker's key in the pool's slot storage, found while the pick still
    /// held its snapshot: reading it back is one load, not a walk through the
    /// key chunks after the booking's compare-and-swap. A pointer, not `&'p W`:
    /// the key may be reassigned as soon as `unbook` returns.
    key: NonNull<W>,
    slot: u32,
    /// The load booked; `0` means an uncharged reservation, which holds a pin
    /// instead so that its worker's slot is not reused while it lives.
    weight: u32,
}

impl<'p, W> Reservation<'p, W> {
    /// A reservation whose load `weight > 0` the caller has just booked on
    /// `slot`, whose key is `key` (from [`key_of`]).
    #[inline(always)]
    pub(crate) fn charged(pool: &'p Pool<W>, slot: u32, key: NonNull<W>, weight: u32) -> Self {
        Self {
            pool,
            key,
            slot,
            weight,
        }
    }

    /// An uncharged reservation: takes a pin on `slot`, whose key is `key`.
    pub(crate) fn pinned(pool: &'p Pool<W>, slot: u32, key: NonNull<W>) -> Self {
        // Relaxed: taken while the caller holds a snapshot naming `slot`, which
        // orders it before any reuse check (see `writer::reclaim`).
        pool.slots.keys.pins(slot).fetch_add(1, Ordering::Relaxed);
        Self {
            pool,
            key,
            slot,
            weight: 0,
        }
    }

    /// Books `weight` (or a pin, for `0`) on `slot`, a member of a snapshot
    /// the caller holds.
    pub(crate) fn book(pool: &'p Pool<W>, slot: u32, weight: u32) -> Result<Self, Error> {
        // SAFETY: the caller's snapshot names `slot`; the reservation built
        // here keeps it from being reassigned once that snapshot is gone.
        let key = unsafe { key_of(pool, slot) };
        if weight == 0 {
            return Ok(Self::pinned(pool, slot, key));
        }
        add_load(pool.slots.counters.get(slot), weight)?;
        Ok(Self::charged(pool, slot, key, weight))
    }

    /// A reservation rebuilt from [`into_parts`](Self::into_parts): books
    /// nothing, and releases the booking when dropped.
    ///
    /// # Safety
    /// `parts` must be a booking on `pool` that `into_parts` handed over and
    /// that the caller still holds. Dropping the result gives it back, so the
    /// caller may let it drop at most once per booking; it may keep the
    /// booking instead by consuming the result with `into_parts`.
    pub(crate) unsafe fn from_parts(pool: &'p Pool<W>, parts: Parts<W>) -> Self {
        let Parts { slot, key, weight } = parts;
        Self {
            pool,
            key,
            slot,
            weight,
        }
    }

    /// Hands this booking over without releasing it (to an owned reservation,
    /// which releases it through [`from_parts`](Self::from_parts)).
    pub(crate) fn into_parts(self) -> Parts<W> {
        let this = core::mem::ManuallyDrop::new(self);
        Parts {
            slot: this.slot,
            key: this.key,
            weight: this.weight,
        }
    }

    /// The worker this reservation is booked on.
    #[inline]
    pub fn worker(&self) -> &W {
        // SAFETY: `key` points at the key of `slot` in the pool's slot storage,
        // which never moves while the pool lives (`'p`), and this reservation
        // keeps the slot's counter (or pin) above zero, so the writer cannot
        // reassign the slot while `self` is borrowed.
        unsafe { self.key.as_ref() }
    }

    /// The load this reservation booked and will give back.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// Releases now (the same as dropping it).
    pub fn release(self) {
        drop(self);
    }

    fn unbook(&self) {
        // Release pairs with the Acquire loads in `writer::reclaim`: our reads
        // of the key happen-before the slot is handed to another worker.
        if self.weight == 0 {
            self.pool
                .slots
                .keys
                .pins(self.slot)
                .fetch_sub(1, Ordering::Release);
        } else {
            let before = self
                .pool
                .slots
                .counters
                .get(self.slot)
                .fetch_sub(self.weight, Ordering::Release);
            debug_assert!(before >= self.weight, "workerpick: in-flight count underflow");
        }
    }
}

impl<'p, W: Clone + Eq + Hash + Send + Sync> Reservation<'p, W> {
    /// Moves this booking to `worker`: one booking there, one fewer here.
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
        let snap = self.pool.snapshot();
        let Some(&slot) = snap.index.get(worker) else {
            return Err(Error::UnknownWorker);
        };
        if slot != self.slot {
            // Book the new one before giving back the old: the load never
            // dips, and each side changes exactly once.
            let moved = Reservation::book(self.pool, slot, self.weight)?;
            let old = core::mem::replace(self, moved);
            drop(old);
        }
        Ok(())
    }
}

/// Where the key of `slot` lives in `pool`'s slot storage.
///
/// # Safety
/// The caller must hold a snapshot in which `slot` is a member (every pick
/// does), and may read through the pointer only while that snapshot or a
/// booking on `slot` keeps the slot from being reassigned.
#[inline(always)]
pub(crate) unsafe fn key_of<W>(pool: &Pool<W>, slot: u32) -> NonNull<W> {
    // SAFETY: per this function's contract the caller's snapshot names `slot`,
    // so it is not reassigned while this reference lives.
    NonNull::from(unsafe { pool.slots.keys.get(slot) })
}

// SAFETY: a reservation is a `&Pool<W>` plus a `&W` into that pool's storage
// (the `key` pointer), so it may cross or be shared between threads exactly
// when a `&Pool<W>` may; `Pool<W>: Sync` requires `W: Send + Sync`.
unsafe impl<W> Send for Reservation<'_, W> where Pool<W>: Sync {}
// SAFETY: as above; `&Reservation` hands out only `&W` and `&Pool<W>`.
unsafe impl<W> Sync for Reservation<'_, W> where Pool<W>: Sync {}

/// A booking taken out of a [`Reservation`] by `into_parts`, without the
/// pool borrow: what an owned reservation keeps.
pub(crate) struct Parts<W> {
    pub(crate) slot: u32,
    /// The worker's key in the slot storage (see [`Reservation`]'s field).
    pub(crate) key: NonNull<W>,
    pub(crate) weight: u32,
}

impl<W> Clone for Parts<W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W> Copy for Parts<W> {}

/// Adds `weight` to `counter` unless the load would pass `u32::MAX`.
///
/// Not a `fetch_add`: a count that wrapped would read as a small load, or as
/// zero, and the writer could then reuse the slot under live reservations.
/// Lock-free rather than bounded: an exchange fails only because another
/// booking or release on this counter landed in between.
#[inline(always)]
pub(crate) fn add_load(counter: &AtomicU32, weight: u32) -> Result<(), Error> {
    // Relaxed: the count itself is the only datum (see `pick::reserve`).
    let mut seen = counter.load(Ordering::Relaxed);
    loop {
        let Some(booked) = seen.checked_add(weight) else {
            return Err(Error::LoadOverflow);
        };
        match counter.compare_exchange_weak(seen, booked, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Ok(()),
            Err(now) => seen = now,
        }
    }
}

impl<W> Drop for Reservation<'_, W> {
    fn drop(&mut self) {
        self.unbook();
    }
}

impl<W: fmt::Debug> fmt::Debug for Reservation<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("worker", self.worker())
            .field("weight", &self.weight)
            .finish()
    }
}
