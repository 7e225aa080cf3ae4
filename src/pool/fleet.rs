//! Fleet controls: capacities, draining, health and slow start.

use super::Pool;
use crate::error::Error;
use crate::fleet::slow_start::{Ramp, SlowStart};
use crate::sync::atomic::Ordering;
use crate::sync::lock;
use core::hash::Hash;
use std::time::Instant;

/// # Fleet controls
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Sets `worker`'s capacity weight (see [`WorkerInfo::capacity`](crate::WorkerInfo::capacity)): a new
    /// snapshot, not a membership change (its load, reports and eligibility
    /// masks are untouched).
    ///
    /// ```
    /// use workerpick::{Pool, Random};
    /// let pool = Pool::from_workers(["big", "small"]).unwrap();
    /// pool.set_capacity(&"big", 3).unwrap();
    /// let big = (0..4000).filter(|_| pool.select(&Random).unwrap() == "big").count();
    /// assert!((2800..3200).contains(&big), "{big}");
    /// ```
    pub fn set_capacity(&self, worker: &W, capacity: u32) -> Result<(), Error> {
        let info = self.info(worker).ok_or(Error::UnknownWorker)?;
        self.set_info(worker, info.capacity(capacity))
    }

    /// Starts draining `worker`: from now on no pick chooses it, while it
    /// stays in the set with its reservations, load, attributes and health.
    /// Poll [`drained`](Self::drained) to learn when its last reservation
    /// is gone, then [`remove`](Self::remove) it, or [`resume`](Self::resume)
    /// it. Draining a draining worker changes nothing.
    ///
    /// Why a poll and not a callback or a future: a release would have to
    /// check for a waiter, and every release in every pool would pay for it
    /// (a release is one atomic decrement and nothing else); a drain lasts as
    /// long as the longest response, seconds to minutes, which a poll every
    /// few hundred milliseconds from the deployment loop sees in time at no
    /// cost to anyone else.
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let held = pool.reserve_worker(&"a", 1).unwrap();
    /// pool.drain(&"a").unwrap();
    /// assert_eq!(pool.drained(&"a"), Some(false)); // a request still runs
    /// for _ in 0..10 {
    ///     assert_eq!(*pool.reserve(&LeastLoaded::new()).unwrap().worker(), "b");
    /// }
    /// drop(held);
    /// assert_eq!(pool.drained(&"a"), Some(true));
    /// pool.remove(&"a").unwrap();
    /// ```
    pub fn drain(&self, worker: &W) -> Result<(), Error> {
        self.raw
            .write(|w, slots, current| w.set_draining(worker, true, slots, current))
            .map(drop)
    }

    /// Ends `worker`'s drain: it is a candidate again, and ramps up to its
    /// capacity if slow start is on. Resuming a worker that is not draining
    /// changes nothing.
    pub fn resume(&self, worker: &W) -> Result<(), Error> {
        self.raw
            .write(|w, slots, current| w.set_draining(worker, false, slots, current))
            .map(drop)
    }

    /// Whether `worker` is draining: `None` if it is not in the set.
    pub fn is_draining(&self, worker: &W) -> Option<bool> {
        lock(&self.raw.writer).is_draining(worker)
    }

    /// For a draining worker, whether its drain is over: no reservation of
    /// this pool holds load on it (reported load from other routers does not
    /// count). `None` if `worker` is not a draining member.
    pub fn drained(&self, worker: &W) -> Option<bool> {
        if self.is_draining(worker) != Some(true) {
            return None;
        }
        let snap = self.raw.snapshot();
        let ranks = snap.ranks_of(worker)?;
        // Pins (zero-weight reservations) hold the worker too, on any rank.
        let pinned = ranks
            .slots()
            .any(|slot| self.raw.slots.keys.pins(slot).load(Ordering::Acquire) != 0);
        Some(self.in_flight(worker) == Some(0) && !pinned)
    }

    /// Marks `worker` healthy or unhealthy, every one of its ranks; returns
    /// whether it was healthy.
    /// No new snapshot and no membership change: cheap enough to call on
    /// every failed request (marking an unhealthy worker unhealthy again is
    /// one load). Unhealthy workers are passed over by every mode while any
    /// candidate is healthy; when none is, picks go to all of them (see
    /// [`docs::fleets`](crate::docs::fleets), "Health").
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool, RoundRobin};
    /// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
    /// assert_eq!(pool.set_healthy(&"b", false), Ok(true));
    /// let rr = RoundRobin::new();
    /// for _ in 0..6 {
    ///     assert_ne!(pool.select(&rr).unwrap(), "b");
    /// }
    /// assert_eq!(pool.in_flight(&"b"), Some(0)); // the mark is not load
    /// pool.set_healthy(&"b", true).unwrap();
    /// assert_eq!(pool.is_healthy(&"b"), Some(true));
    /// ```
    pub fn set_healthy(&self, worker: &W, healthy: bool) -> Result<bool, Error> {
        let snap = self.raw.snapshot();
        let ranks = snap.ranks_of(worker).ok_or(Error::UnknownWorker)?;
        let health = &self.raw.reported.health;
        // Already so (marked means unhealthy): no lock, unless the mark is
        // still short of its penalty (see `load::health`).
        if ranks
            .slots()
            .all(|slot| health.is_marked(slot) != healthy && (healthy || !health.is_short(slot)))
        {
            return Ok(healthy);
        }
        let _held = self.raw.reported.lock_for_change();
        // Under the lock, against a membership change that forgets the slot:
        // resolve the worker again.
        let snap = self.raw.snapshot();
        let ranks = snap.ranks_of(worker).ok_or(Error::UnknownWorker)?;
        let counters = &self.raw.slots.counters;
        // Every rank changes under the one lock; the answer is rank 0's
        // (the ranks are marked together, so they agree).
        let mut was = healthy;
        for slot in ranks.slots().rev() {
            was = if healthy {
                !health.unmark(counters, slot)
            } else {
                health.mark(counters, slot)
            };
        }
        Ok(was)
    }

    /// Whether `worker` is healthy: `None` if it is not in the set.
    pub fn is_healthy(&self, worker: &W) -> Option<bool> {
        let snap = self.raw.snapshot();
        let ranks = snap.ranks_of(worker)?;
        Some(!self.raw.reported.health.is_marked(ranks.first))
    }

    /// Sets the slow start of workers that join or resume from now on
    /// (`None`: none, and workers ramping now get their full capacity at
    /// once). Off by default.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::{Pool, SlowStart};
    /// let pool = Pool::from_workers(["warm"]).unwrap();
    /// pool.set_slow_start(Some(SlowStart::new(Duration::from_secs(60))));
    /// pool.insert("cold").unwrap(); // starts at 1/8 of its capacity
    /// ```
    pub fn set_slow_start(&self, slow_start: Option<SlowStart>) {
        let ramp = Ramp::new(slow_start);
        let _ = self.raw.write(|w, slots, current| {
            w.set_ramp(ramp, slots, current);
            Ok(())
        });
    }

    /// Publishes the slow-start step that is due, if one is: reservations do
    /// this now and then on their own, and so does every change to the set;
    /// call it from a timer to move the ramp on in a pool with no traffic.
    pub fn advance_slow_start(&self) {
        if self.raw.ramp.is_due(Instant::now()) {
            let _ = self.raw.write(|w, slots, current| {
                w.republish(slots, current);
                Ok(())
            });
        }
    }
}
