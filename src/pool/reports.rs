//! Reports and replica sync: workers' own reports, replicas' summaries, ageing.

use super::Pool;
use crate::load::reports::{Applied, Summary};
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
    ///
    /// A worker with data-parallel ranks reports per rank
    /// ([`report_rank_load`](Self::report_rank_load)); a figure for the whole
    /// worker given here is spread evenly over its ranks (the remainder on the
    /// lowest ones).
    pub fn report_load(&self, worker: &W, load: u32) -> bool {
        self.report_loads([(worker, load)]) == 1
    }

    /// [`report_load`](Self::report_load) for many workers under one lock (a
    /// metrics message); returns how many were members.
    pub fn report_loads<'w>(&self, reports: impl IntoIterator<Item = (&'w W, u32)>) -> usize
    where
        W: 'w,
    {
        self.raw
            .reported
            .with(&self.raw.slots.counters, |state, cells, now| {
                // Loaded under the lock: see `forget_departed`.
                let snap = self.raw.snapshot();
                let mut members = 0;
                for (worker, load) in reports {
                    if let Some(ranks) = snap.ranks_of(worker) {
                        let (share, rest) = (load / ranks.count, load % ranks.count);
                        for (slot, rank) in ranks.slots().zip(0..) {
                            let load = share + u32::from(rank < rest);
                            state.report(cells, slot, snap.view.gens[slot as usize], load, now);
                        }
                        members += 1;
                    }
                }
                members
            })
    }

    /// Sets rank `rank` of `worker`'s own reported load (see
    /// [`report_load`](Self::report_load)): what that data-parallel rank says
    /// it runs, as Dynamo's and SGLang's workers report it per rank. Returns
    /// `false`, changing nothing, if `worker` is not in the set or has no
    /// such rank (rank 0 is a worker without ranks).
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(2)).unwrap();
    /// assert!(pool.report_rank_load(&"node", 0, 7));
    /// assert_eq!(pool.reserve(&LeastLoaded::new()).unwrap().rank(), 1);
    /// assert_eq!(pool.reported_rank_load(&"node", 0), Some(7));
    /// assert!(!pool.report_rank_load(&"node", 2, 1));
    /// ```
    pub fn report_rank_load(&self, worker: &W, rank: u32, load: u32) -> bool {
        self.report_rank_loads([(worker, rank, load)]) == 1
    }

    /// [`report_rank_load`](Self::report_rank_load) for many ranks under one
    /// lock; returns how many named a rank of a member.
    pub fn report_rank_loads<'w>(&self, reports: impl IntoIterator<Item = (&'w W, u32, u32)>) -> usize
    where
        W: 'w,
    {
        self.raw
            .reported
            .with(&self.raw.slots.counters, |state, cells, now| {
                // Loaded under the lock: see `forget_departed`.
                let snap = self.raw.snapshot();
                let mut members = 0;
                for (worker, rank, load) in reports {
                    if let Some(slot) = snap.ranks_of(worker).and_then(|r| r.slot(rank).ok()) {
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
    /// `u32::MAX` beside its bookings (summed over its ranks). `None` if it is
    /// not in the set.
    pub fn reported_load(&self, worker: &W) -> Option<u32> {
        let snap = self.raw.snapshot();
        let board = self.raw.reported.board();
        let ranks = snap.ranks_of(worker)?;
        Some(
            ranks
                .slots()
                .fold(0u32, |sum, slot| sum.saturating_add(board.get(slot))),
        )
    }

    /// [`reported_load`](Self::reported_load) of rank `rank` of `worker`;
    /// `None` if it is not in the set or has no such rank.
    pub fn reported_rank_load(&self, worker: &W, rank: u32) -> Option<u32> {
        let snap = self.raw.snapshot();
        let slot = snap.ranks_of(worker)?.slot(rank).ok()?;
        Some(self.raw.reported.board().get(slot))
    }

    /// What this router has booked, to send to the other replicas: every worker
    /// with load in flight here, its load, and a number one above the last
    /// summary's. Only this pool's own bookings: load reported to it is left out,
    /// so replicas never echo one another's reports back. The ranks of a worker
    /// with data-parallel ranks are listed one by one
    /// ([`Summary::rank_loads`]), and applied per rank.
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
        let snap = self.raw.snapshot();
        let booked = self.raw.reported.booked();
        let mut loads = Vec::new();
        let mut rank_loads = Vec::new();
        for &slot in snap.view.members.iter() {
            let load = booked.of(slot, self.raw.slots.counters.get(slot));
            if load == 0 {
                continue;
            }
            let key = snap.key(slot).clone();
            if snap.view.info[slot as usize].rank_count() == 1 {
                loads.push((key, load));
            } else {
                rank_loads.push((key, self.raw.slots.keys.rank(slot), load));
            }
        }
        Summary {
            origin: self.raw.reported.origin,
            seq: self.raw.reported.seq.fetch_add(1, Relaxed) + 1,
            loads,
            rank_loads,
            bindings: Vec::new(),
            shares: None,
        }
    }

    /// Takes another replica's summary as that replica's reported load,
    /// replacing what it reported before. Workers not in this set are skipped.
    /// Returns `false`, changing nothing, for a summary this pool made itself (a
    /// bus that echoes to the sender) and for one older than, or the same as, the
    /// last applied from that replica (a late or repeated message).
    pub fn apply_summary(&self, summary: &Summary<W>) -> bool {
        if summary.origin == self.raw.reported.origin {
            return false;
        }
        self.raw
            .reported
            .with(&self.raw.slots.counters, |state, cells, now| {
                let snap = self.raw.snapshot();
                let (origin, seq) = (summary.origin, summary.seq);
                if snap.ranked.is_empty() && summary.rank_loads.is_empty() {
                    // No ranks on either side: a slot holding the worker's key is
                    // its only one.
                    let resolve = |worker: &W, hint: Option<u32>| {
                        // The slot it had in the replica's last summary, if still its:
                        // one comparison instead of a hash lookup for a steady fleet.
                        let slot = match hint {
                            Some(slot)
                                if snap.keys.get(slot as usize).and_then(Option::as_ref) == Some(worker) =>
                            {
                                slot
                            }
                            _ => *snap.index.get(worker)?,
                        };
                        Some((slot, snap.view.gens[slot as usize]))
                    };
                    return state.apply(cells, origin, seq, &summary.loads, resolve, now)
                        == Applied::Replaced;
                }
                // A worker without ranks in the summary is rank 0 here.
                let entries: Vec<((&W, u32), u32)> = summary
                    .loads
                    .iter()
                    .map(|(w, load)| ((w, 0), *load))
                    .chain(
                        summary
                            .rank_loads
                            .iter()
                            .map(|(w, rank, load)| ((w, *rank), *load)),
                    )
                    .collect();
                let resolve = |&(worker, rank): &(&W, u32), hint: Option<u32>| {
                    let slot = match hint {
                        Some(slot)
                            if snap.keys.get(slot as usize).and_then(Option::as_ref) == Some(worker)
                                && self.raw.slots.keys.rank(slot) == rank =>
                        {
                            slot
                        }
                        _ => snap.ranks_of(worker)?.slot(rank).ok()?,
                    };
                    Some((slot, snap.view.gens[slot as usize]))
                };
                state.apply(cells, origin, seq, &entries, resolve, now) == Applied::Replaced
            })
    }

    /// Drops every report older than the age limit now, rather than at the next
    /// report or the next pick that checks; returns how many sources aged out.
    pub fn expire_reports(&self) -> usize {
        let mut state = lock(&self.raw.reported.state);
        self.raw
            .reported
            .expire(&mut state, &self.raw.slots.counters, Instant::now())
    }

    /// Sets how long a report counts after it arrives (default
    /// [`DEFAULT_REPORT_MAX_AGE`](crate::DEFAULT_REPORT_MAX_AGE)). A shorter limit applies to reports already
    /// held, at the next check.
    pub fn set_report_max_age(&self, max_age: Duration) {
        let mut state = lock(&self.raw.reported.state);
        state.set_max_age(max_age);
        self.raw.reported.store_due(&state);
    }

    /// How long a report counts after it arrives.
    pub fn report_max_age(&self) -> Duration {
        lock(&self.raw.reported.state).max_age
    }

    /// How many peer replicas have a live summary here.
    pub fn reporting_peers(&self) -> usize {
        lock(&self.raw.reported.state).peers()
    }
}
