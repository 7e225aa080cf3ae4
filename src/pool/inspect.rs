//! Inspection: the set, its loads and its storage.

use super::{Pool, PoolStats};
use crate::device::WorkerInfo;
use crate::scan::Backend;
use crate::sync::atomic::Ordering;
use crate::sync::lock;
use core::hash::Hash;

/// # Inspection
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Number of workers in the set (draining ones included; a worker with
    /// ranks counts once).
    pub fn len(&self) -> usize {
        self.raw.snapshot().workers()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `worker` is in the set.
    pub fn contains(&self, worker: &W) -> bool {
        self.raw.snapshot().ranks_of(worker).is_some()
    }

    /// The in-flight load of `worker` (the sum over its ranks): for a
    /// member, and for a removed worker whose reservations are still alive;
    /// `None` otherwise.
    pub fn in_flight(&self, worker: &W) -> Option<u32> {
        let snap = self.raw.snapshot();
        match snap.ranks_of(worker) {
            Some(ranks) => {
                let booked = self.raw.reported.booked();
                let of = |slot| booked.of(slot, self.raw.slots.counters.get(slot));
                Some(ranks.slots().fold(0u32, |sum, slot| sum.saturating_add(of(slot))))
            }
            None => lock(&self.raw.writer).draining_load(worker, None, &self.raw.slots),
        }
    }

    /// The in-flight load of rank `rank` of `worker` (rank 0 is the whole of
    /// a worker without ranks): for a member, and for a removed worker whose
    /// reservations are still alive; `None` otherwise, or for a rank the
    /// worker does not have.
    ///
    /// ```
    /// use workerpick::{Pool, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(2)).unwrap();
    /// let _r = pool.reserve_rank(&"node", 1, 3).unwrap();
    /// assert_eq!(pool.in_flight_rank(&"node", 0), Some(0));
    /// assert_eq!(pool.in_flight_rank(&"node", 1), Some(3));
    /// assert_eq!(pool.in_flight_rank(&"node", 2), None);
    /// assert_eq!(pool.in_flight(&"node"), Some(3));
    /// ```
    pub fn in_flight_rank(&self, worker: &W, rank: u32) -> Option<u32> {
        let snap = self.raw.snapshot();
        match snap.ranks_of(worker) {
            Some(ranks) => Some(self.raw.booked_load(ranks.slot(rank).ok()?)),
            None => lock(&self.raw.writer).draining_load(worker, Some(rank), &self.raw.slots),
        }
    }

    /// The attributes of `worker`, if it is in the set.
    pub fn info(&self, worker: &W) -> Option<WorkerInfo> {
        let snap = self.raw.snapshot();
        snap.ranks_of(worker)
            .map(|ranks| snap.view.info[ranks.first as usize])
    }

    /// Every worker in the set with its in-flight load (the sum over its
    /// ranks): the candidates in set order, then the draining workers.
    pub fn loads(&self) -> Vec<(W, u32)> {
        let snap = self.raw.snapshot();
        let booked = self.raw.reported.booked();
        let mut loads: Vec<(W, u32)> = Vec::with_capacity(snap.workers());
        for &slot in snap.view.members.iter().chain(snap.view.draining.iter()) {
            let load = booked.of(slot, self.raw.slots.counters.get(slot));
            // A worker's ranks are side by side, rank 0 first.
            if self.raw.slots.keys.rank(slot) > 0
                && let Some(last) = loads.last_mut()
            {
                last.1 = last.1.saturating_add(load);
            } else {
                loads.push((snap.key(slot).clone(), load));
            }
        }
        loads
    }

    /// Every candidate rank of the set with its in-flight load: `(worker,
    /// rank, load)`, the candidates in set order, a worker's ranks side by
    /// side (a worker without ranks is its rank 0), then the draining
    /// workers' ranks.
    ///
    /// ```
    /// use workerpick::{Pool, WorkerInfo};
    /// let pool = Pool::from_workers(["a"]).unwrap();
    /// pool.insert_with("b", WorkerInfo::new().ranks(2)).unwrap();
    /// let _r = pool.reserve_rank(&"b", 1, 5).unwrap();
    /// assert_eq!(pool.rank_loads(), [("a", 0, 0), ("b", 0, 0), ("b", 1, 5)]);
    /// ```
    pub fn rank_loads(&self) -> Vec<(W, u32, u32)> {
        let snap = self.raw.snapshot();
        let booked = self.raw.reported.booked();
        snap.view
            .members
            .iter()
            .chain(snap.view.draining.iter())
            .map(|&slot| {
                (
                    snap.key(slot).clone(),
                    self.raw.slots.keys.rank(slot),
                    booked.of(slot, self.raw.slots.counters.get(slot)),
                )
            })
            .collect()
    }

    /// Storage counters.
    pub fn stats(&self) -> PoolStats {
        let (draining, free_slots, capacity, snapshots, slots) = lock(&self.raw.writer).stats();
        PoolStats {
            workers: self.len(),
            draining,
            free_slots,
            slots,
            capacity,
            fallbacks: self.raw.fallbacks.load(Ordering::Relaxed),
            snapshots,
        }
    }

    /// The scan backend in use: [`Backend::Scalar`] where the one asked for
    /// is not available on this CPU.
    pub fn scan_backend(&self) -> Backend {
        self.raw.backend.backend()
    }
}
