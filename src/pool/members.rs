//! Membership: the writer calls that change the set.

use super::Pool;
use crate::device::WorkerInfo;
use crate::error::Error;
use crate::sync::lock;
use core::hash::Hash;

/// # Membership
///
/// Writers are serialised among themselves and publish a new snapshot; a
/// pick that starts after one returns sees it.
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Adds `worker` (an accelerator in group 0).
    pub fn insert(&self, worker: W) -> Result<(), Error> {
        self.insert_with(worker, WorkerInfo::default())
    }

    /// Adds `worker` with attributes `info`. A worker removed while its
    /// reservations are alive comes back with that load.
    pub fn insert_with(&self, worker: W, info: WorkerInfo) -> Result<(), Error> {
        let info = Self::checked(info)?;
        self.raw
            .write(|w, slots, current| w.insert(worker, info, slots, current))
    }

    /// Removes `worker`. Picks that start after this returns never choose it;
    /// its reservations stay valid and its slot is reused after the last one.
    pub fn remove(&self, worker: &W) -> Result<(), Error> {
        self.raw
            .write(|w, slots, current| w.remove(worker, slots, current))
    }

    /// Replaces the whole set with `workers`, in order. Workers that stay
    /// keep their load and attributes; a repeated worker is an error and
    /// changes nothing.
    pub fn replace(&self, workers: impl IntoIterator<Item = W>) -> Result<(), Error> {
        let workers: Vec<W> = workers.into_iter().collect();
        self.raw
            .write(|w, slots, current| w.replace(workers, slots, current))
    }

    /// Changes `worker`'s attributes (its device kind, its group, its
    /// capacity): a new snapshot, not a membership change.
    pub fn set_info(&self, worker: &W, info: WorkerInfo) -> Result<(), Error> {
        let info = Self::checked(info)?;
        self.raw
            .write(|w, slots, current| w.set_info(worker, info, slots, current))
    }

    /// Changes the attributes of every worker in `changes` in one snapshot,
    /// where [`set_info`](Self::set_info) publishes one each: setting up a
    /// large fleet with attributes of its own costs one snapshot, not one
    /// per worker. Checked whole first: an unknown worker, one named twice
    /// or a rank count that differs from the worker's is an error and
    /// changes nothing.
    ///
    /// ```
    /// use workerpick::{DeviceKind, Pool, WorkerInfo};
    /// let pool = Pool::from_workers(0..1000u32).unwrap();
    /// let cpu = WorkerInfo::new().device(DeviceKind::Cpu);
    /// pool.set_infos((0..1000).step_by(4).map(|w| (w, cpu))).unwrap();
    /// assert!(pool.set_infos([(5, cpu), (5, cpu)]).is_err());
    /// ```
    pub fn set_infos(&self, changes: impl IntoIterator<Item = (W, WorkerInfo)>) -> Result<(), Error> {
        let changes = changes
            .into_iter()
            .map(|(w, info)| Ok((w, Self::checked(info)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        self.raw
            .write(|w, slots, current| w.set_infos(changes, slots, current))
    }

    /// Reuses the slots of removed workers that have drained; returns how many.
    /// Writers do this on their own; call it to reclaim storage sooner.
    pub fn reclaim(&self) -> usize {
        lock(&self.raw.writer).reclaim(&self.raw.slots)
    }

    /// Checks `info` before it joins the set.
    pub(crate) fn checked(info: WorkerInfo) -> Result<WorkerInfo, Error> {
        info.check().map(|()| info)
    }
}
