//! Reports and replica sync: workers' own reports, replicas' summaries, ageing.

use super::Pool;
use crate::reports::{Applied, Summary};
use crate::sync::atomic::Ordering::Relaxed;
use crate::sync::lock;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// # Reports and replica sync
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Sets `worker`'s own reported load: what it says it is running or queueing
    /// (requests, KV-cache blocks, whatever the router's loads count), replacing its
    /// earlier report. Load-aware picks then compare this pool's in-flight count
    /// for it plus `load`. `0` withdraws the report. Returns `false`, changing
    /// nothing, if `worker` is not in the set.
    ///
    /// Cheap enough for a background task to call thousands of times a second:
    /// it takes the report lock (never taken by picks), one hash lookup, and one
    /// compare-and-swap on the worker's counter when its reported load moves.
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let _mine = pool.reserve_worker(&"a", 1).unwrap(); // a: 1 here
    /// assert!(pool.report_load(&"b", 3)); // b: 0 here, 3 reported
    /// assert_eq!(*pool.reserve(&LeastLoaded::new()).unwrap().worker(), "a");
    /// assert!(!pool.report_load(&"c", 1)); // not a member
    /// ```
    ///
    /// If the worker's figure counts this router's own requests too, they are
    /// counted twice; report what the others send it (its total minus
    /// [`in_flight`](Self::in_flight)) where that matters.
    pub fn report_load(&self, worker: &W, load: u32) -> bool {
        self.report_loads([(worker, load)]) == 1
    }

    /// [`report_load`](Self::report_load) for many workers under one lock (a
    /// metrics message); returns how many were members.
    pub fn report_loads<'w>(&self, reports: impl IntoIterator<Item = (&'w W, u32)>) -> usize
    where
        W: 'w,
    {
        self.reported.with(&self.slots.counters, |state, cells, now| {
            // Loaded under the lock: see `forget_departed`.
            let snap = self.snapshot();
            let mut members = 0;
            for (worker, load) in reports {
                if let Some(&slot) = snap.index.get(worker) {
                    state.report(cells, slot, snap.view.gens[slot as usize], load, now);
                    members += 1;
                }
            }
            members
        })
    }

    /// The load reported for `worker` from outside as its picks count it: its own
    /// report plus every live peer's, capped at
    /// [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD) and at what fits below
    /// `u32::MAX` beside its bookings. `None` if it is not in the set.
    pub fn reported_load(&self, worker: &W) -> Option<u32> {
        let snap = self.snapshot();
        let &slot = snap.index.get(worker)?;
        Some(self.reported.board().get(slot))
    }

    /// What this router has booked, to send to the other replicas: every worker
    /// with load in flight here, its load, and a number one above the last
    /// summary's. Only this pool's own bookings: load reported to it is left out,
    /// so replicas never echo one another's reports back.
    ///
    /// ```
    /// use workerpick::Pool;
    /// let (a, b) = (Pool::from_workers(["w0", "w1"]).unwrap(), Pool::from_workers(["w0", "w1"]).unwrap());
    /// let _r = a.reserve_worker(&"w1", 2).unwrap();
    /// let summary = a.summary();
    /// assert_eq!(summary.loads(), &[("w1", 2)]);
    /// assert!(b.apply_summary(&summary));
    /// assert_eq!(b.reported_load(&"w1"), Some(2));
    /// assert!(!b.apply_summary(&summary)); // already applied
    /// ```
    pub fn summary(&self) -> Summary<W> {
        let snap = self.snapshot();
        let booked = self.reported.booked();
        let loads = snap
            .view
            .members
            .iter()
            .filter_map(|&slot| {
                let load = booked.of(slot, self.slots.counters.get(slot));
                (load > 0).then(|| (snap.key(slot).clone(), load))
            })
            .collect();
        Summary {
            origin: self.reported.origin,
            seq: self.reported.seq.fetch_add(1, Relaxed) + 1,
            loads,
        }
    }

    /// Takes another replica's summary as that replica's reported load,
    /// replacing what it reported before. Workers not in this set are skipped.
    /// Returns `false`, changing nothing, for a summary this pool made itself (a
    /// bus that echoes to the sender) and for one older than, or the same as, the
    /// last applied from that replica (a late or repeated message).
    pub fn apply_summary(&self, summary: &Summary<W>) -> bool {
        if summary.origin == self.reported.origin {
            return false;
        }
        self.reported.with(&self.slots.counters, |state, cells, now| {
            let snap = self.snapshot();
            let resolve = |worker: &W, hint: Option<u32>| {
                // The slot it had in the replica's last summary, if still its:
                // one comparison instead of a hash lookup for a steady fleet.
                let slot = match hint {
                    Some(slot) if snap.keys.get(slot as usize).and_then(Option::as_ref) == Some(worker) => {
                        slot
                    }
                    _ => *snap.index.get(worker)?,
                };
                Some((slot, snap.view.gens[slot as usize]))
            };
            state.apply(cells, summary.origin, summary.seq, &summary.loads, resolve, now) == Applied::Replaced
        })
    }

    /// Drops every report older than the age limit now, rather than at the next
    /// report or the next pick that checks; returns how many sources aged out.
    pub fn expire_reports(&self) -> usize {
        let mut state = lock(&self.reported.state);
        self.reported
            .expire(&mut state, &self.slots.counters, Instant::now())
    }

    /// Sets how long a report counts after it arrives (default
    /// [`DEFAULT_REPORT_MAX_AGE`](crate::DEFAULT_REPORT_MAX_AGE)). A shorter limit applies to reports already
    /// held, at the next check.
    pub fn set_report_max_age(&self, max_age: Duration) {
        let mut state = lock(&self.reported.state);
        state.set_max_age(max_age);
        self.reported.store_due(&state);
    }

    /// How long a report counts after it arrives.
    pub fn report_max_age(&self) -> Duration {
        lock(&self.reported.state).max_age
    }

    /// How many peer replicas have a live summary here.
    pub fn reporting_peers(&self) -> usize {
        lock(&self.reported.state).peers()
    }

    /// Drops reports kept for workers that left the set (called after every
    /// membership change). The snapshot is loaded under the report lock, here and
    /// wherever reports are resolved to slots: a report resolved with a snapshot
    /// from before a change was applied before this runs, and is dropped by it.
    pub(crate) fn forget_departed(&self) {
        // SeqCst, after the publish: see `Reported::with`.
        if self.reported.used.load(crate::sync::atomic::Ordering::SeqCst) == 0 {
            return;
        }
        let mut state = lock(&self.reported.state);
        let snap = self.snapshot();
        let view = &snap.view;
        state.retain_members(self.reported.cells(&self.slots.counters), |slot| {
            snap.holds(slot).then(|| view.gens[slot as usize])
        });
        // A departed worker's health mark would keep its slot from draining.
        self.reported
            .health
            .forget(&self.slots.counters, view.scan_len(), |slot| snap.holds(slot));
    }
}
