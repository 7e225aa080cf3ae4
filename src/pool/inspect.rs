//! Inspection: the set, its loads and its storage.

use super::{Pool, PoolStats};
use crate::device::WorkerInfo;
use crate::scan::Backend;
use crate::sync::atomic::Ordering;
use crate::sync::lock;
use core::hash::Hash;

/// # Inspection
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Number of workers in the set (draining ones included).
    pub fn len(&self) -> usize {
        let snap = self.snapshot();
        snap.view.members.len() + snap.view.draining.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `worker` is in the set.
    pub fn contains(&self, worker: &W) -> bool {
        self.snapshot().index.contains_key(worker)
    }

    /// The in-flight load of `worker`: for a member, and for a removed worker
    /// whose reservations are still alive; `None` otherwise.
    pub fn in_flight(&self, worker: &W) -> Option<u32> {
        let snap = self.snapshot();
        match snap.index.get(worker) {
            Some(&slot) => {
                let booked = self.reported.booked();
                Some(booked.of(slot, self.slots.counters.get(slot)))
            }
            None => lock(&self.writer).draining_load(worker, &self.slots),
        }
    }

    /// The attributes of `worker`, if it is in the set.
    pub fn info(&self, worker: &W) -> Option<WorkerInfo> {
        let snap = self.snapshot();
        snap.index.get(worker).map(|&slot| snap.view.info[slot as usize])
    }

    /// Every worker in the set with its in-flight load: the candidates in set
    /// order, then the draining workers.
    pub fn loads(&self) -> Vec<(W, u32)> {
        let snap = self.snapshot();
        let booked = self.reported.booked();
        snap.view
            .members
            .iter()
            .chain(snap.view.draining.iter())
            .map(|&slot| {
                (
                    snap.key(slot).clone(),
                    booked.of(slot, self.slots.counters.get(slot)),
                )
            })
            .collect()
    }

    /// Storage counters.
    pub fn stats(&self) -> PoolStats {
        let (draining, free_slots, capacity, snapshots) = lock(&self.writer).stats();
        PoolStats {
            workers: self.len(),
            draining,
            free_slots,
            capacity,
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            snapshots,
        }
    }

    /// The scan backend in use: [`Backend::Scalar`] where the one asked for
    /// is not available on this CPU.
    pub fn scan_backend(&self) -> Backend {
        self.backend.backend()
    }
}
