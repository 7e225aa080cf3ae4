//! The saturation rule: whether a worker has room, read from the counters.

use super::config::QueueConfig;
use crate::candidates::{Candidates, still_eligible};
use crate::pool::Pool;
use crate::request::Request;
use crate::snapshot::Snapshot;
use crate::sync::atomic::Ordering;
use std::time::Duration;

/// The limits a worker is saturated at (see [`QueueConfig`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gate {
    in_flight: Option<u32>,
    reported: Option<u32>,
    stale_after: Option<Duration>,
}

impl Gate {
    pub(crate) fn new(config: &QueueConfig) -> Self {
        Self {
            in_flight: config.in_flight_limit,
            reported: config.reported_limit,
            stale_after: config.stale_after,
        }
    }

    /// Whether `slot` has room with `extra` of its own load not counted
    /// (a booking just made for the request being admitted).
    #[inline]
    pub(crate) fn is_open<W>(&self, pool: &Pool<W>, snap: &Snapshot<W>, slot: u32, extra: u32) -> bool {
        if let Some(per) = self.in_flight {
            let capacity = snap.view.info[slot as usize].capacity_weight();
            let booked = pool.booked_load(slot).saturating_sub(extra);
            if booked >= per.saturating_mul(capacity) {
                return false;
            }
        }
        if let Some(age) = self.stale_after {
            let fresh = pool.reported.heard(slot).is_some_and(|at| at.elapsed() < age);
            if !fresh {
                return false;
            }
        }
        match self.reported {
            Some(limit) => pool.reported.board().get(slot) < limit,
            None => true,
        }
    }

    /// Whether `slot` had room for a booking of `weight` just made on it,
    /// counting every booking that landed on it before this one. Two
    /// bookings racing for the last room both see each other and both give
    /// back (each caller then queues or retries under the lock), so a limit
    /// holds exactly among the queue's bookings.
    pub(crate) fn kept<W>(&self, pool: &Pool<W>, snap: &Snapshot<W>, slot: u32, weight: u32) -> bool {
        if self.in_flight.is_none() && self.reported.is_none() && self.stale_after.is_none() {
            return true;
        }
        // A read-modify-write reads the last value in the counter's
        // modification order, where a load may read an older one; the load
        // in `is_open` that follows reads no older value than it (coherence).
        // SeqCst for nothing else: no other access pairs with it.
        pool.slots.counters.get(slot).fetch_add(0, Ordering::SeqCst);
        self.is_open(pool, snap, slot, weight)
    }

    /// The candidate of `request` (every member, or its mask's) with room
    /// that is least loaded for its capacity, if any has room.
    pub(crate) fn roomiest<W>(
        &self,
        pool: &Pool<W>,
        snap: &Snapshot<W>,
        request: &Request<'_>,
    ) -> Option<u32> {
        let (slots, stale) = match Candidates::of(&snap.view, pool.id, request).ok()? {
            Candidates::Fresh { slots, .. } => (slots, None),
            Candidates::Stale { mask, .. } => (&mask.slots[..], Some(mask)),
        };
        let mut best: Option<(u32, u64)> = None;
        for (j, &slot) in slots.iter().enumerate() {
            if stale.is_some_and(|mask| !still_eligible(&snap.view, mask, j)) {
                continue;
            }
            if !self.is_open(pool, snap, slot, 0) {
                continue;
            }
            let capacity = u64::from(snap.view.info[slot as usize].capacity_weight().max(1));
            // load ÷ capacity, in fixed point.
            let score = (u64::from(pool.booked_load(slot)) << 20) / capacity;
            if best.is_none_or(|(_, s)| score < s) {
                best = Some((slot, score));
            }
        }
        best.map(|(slot, _)| slot)
    }
}
