//! Storage that outlives every reservation: per-slot in-flight counters
//! ([`counters`]), the key that owns each slot and a pin count ([`keys`]),
//! the pool's feature word ([`features`]), and the bookings made on them.
//! The counters are one array for the pool's limit, never moved or freed,
//! so growing the set cannot lose a decrement; slots are reused, never freed
//! (the writer decides when: `membership::Writer::reclaim`). See
//! [`docs::internal::sets`](crate::docs::internal::sets).

pub(crate) mod counters;
pub(crate) mod features;
pub(crate) mod keys;
pub(crate) mod latency;
mod phased;

use crate::error::Error;
use crate::snapshot::padded;
use crate::sync::KEY_CHUNK;
use crate::sync::atomic::Ordering;
use counters::{Counters, add_load};
use keys::{KeyPtr, Keys};

/// The default limit on worker slots in one pool: live workers plus removed
/// workers whose reservations are still alive. [`Pool::with_max_workers`]
/// sets another.
///
/// [`Pool::with_max_workers`]: crate::Pool::with_max_workers
pub const DEFAULT_MAX_WORKERS: usize = 1 << 16;

/// The largest limit a pool accepts.
pub const MAX_WORKERS_LIMIT: usize = 1 << 26;

/// Counter and key storage for a pool.
pub(crate) struct Slots<W> {
    pub(crate) counters: Counters,
    pub(crate) keys: Keys<W>,
    max: usize,
}

impl<W> Slots<W> {
    /// Storage for up to `max` slots (`1..=MAX_WORKERS_LIMIT`, checked by the pool).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            counters: Counters::new(padded(max)),
            keys: Keys::new(max),
            max,
        }
    }

    /// The most slots this storage holds.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Allocates key storage for slots `from..end`, where every slot below
    /// `from` has its storage already: only the chunks those slots reach, so
    /// that adding n workers one by one costs O(n), not a walk over every
    /// chunk per worker. Writers only.
    pub(crate) fn ensure(&self, from: usize, end: usize) {
        for i in from / KEY_CHUNK..end.div_ceil(KEY_CHUNK) {
            self.keys.grow(i);
        }
    }

    /// `slot` was freed (nothing can reach it until it is reused): with a
    /// bounds, its counter is parked at `u32::MAX`, so that a free slot never
    /// holds its block's lower bound at 0. Writers only.
    pub(crate) fn freed(&self, slot: u32) {
        if self.counters.bounds().is_some() {
            self.counters.get(slot).store(u32::MAX, Ordering::Relaxed);
        }
    }

    /// Slots `old..new` were just allocated (the capacity grew): their
    /// counters start at 0 like a reused slot's, and with a bounds the not
    /// yet allocated lanes of the last block they reach are parked at
    /// `u32::MAX`, so that the block's bound is the least of its allocated
    /// counters. Writers only, before a snapshot names the new slots.
    pub(crate) fn grown(&self, old: usize, new: usize) {
        for slot in old..new {
            self.reused(slot as u32);
        }
        if let Some(bounds) = self.counters.bounds() {
            let end = new.div_ceil(bounds.block_lanes()) * bounds.block_lanes();
            for lane in self.counters.slice(end).iter().skip(new) {
                lane.store(u32::MAX, Ordering::Relaxed);
            }
        }
    }

    /// Free `slot` is about to be handed to a new worker: its counter is
    /// back at 0 (parked at `u32::MAX` while free, in a pool that kept a
    /// bounds then), and its block's lower bound with it, before any
    /// snapshot names it. Writers only.
    pub(crate) fn reused(&self, slot: u32) {
        // SeqCst, as a release's decrement (see `LoadBounds::lowered`).
        self.counters.get(slot).store(0, Ordering::SeqCst);
        self.counters.lowered(slot, 0);
        if let Some(latency) = self.counters.latency() {
            latency.forget(slot);
        }
    }

    /// Books `weight` on `slot`, whose key is `key`: a pin for `0`.
    #[inline(always)]
    pub(crate) fn book(&self, slot: u32, key: KeyPtr<W>, weight: u32) -> Result<Booked<W>, Error> {
        if weight == 0 {
            return Ok(self.pin(slot, key));
        }
        self.charge(slot, key, weight)
    }

    /// An uncharged booking on `slot`: a pin, so the slot is not reused
    /// while it lives.
    #[inline(always)]
    pub(crate) fn pin(&self, slot: u32, key: KeyPtr<W>) -> Booked<W> {
        // Relaxed: taken while the caller holds a snapshot naming `slot`, which
        // orders it before any reuse check (see `membership::Writer::reclaim`).
        self.keys.pins(slot).fetch_add(1, Ordering::Relaxed);
        Booked { key, slot, weight: 0 }
    }

    /// Books `weight > 0` on `slot`, whatever its load.
    #[inline(always)]
    pub(crate) fn charge(&self, slot: u32, key: KeyPtr<W>, weight: u32) -> Result<Booked<W>, Error> {
        add_load(self.counters.get(slot), weight)?;
        Ok(Booked { key, slot, weight })
    }

    /// Books `weight > 0` on `slot` if its load is still `seen`.
    #[inline(always)]
    pub(crate) fn charge_if(
        &self,
        slot: u32,
        key: KeyPtr<W>,
        seen: u32,
        weight: u32,
    ) -> Result<Booked<W>, Missed> {
        let Some(booked) = seen.checked_add(weight) else {
            return Err(Missed::Overflow);
        };
        // Relaxed bookings: the count itself is the only datum. Slot reuse is
        // ordered by the snapshot the caller holds.
        let counter = self.counters.get(slot);
        match counter.compare_exchange(seen, booked, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => Ok(Booked { key, slot, weight }),
            Err(_) => Err(Missed::Moved),
        }
    }

    /// Gives back a pin on `slot`. Out of line: pins are the rare kind of
    /// booking, and keeping them out of [`release`](Self::release) keeps that
    /// small enough to inline where reservations drop.
    #[inline(never)]
    fn unpin(&self, slot: u32) {
        self.keys.pins(slot).fetch_sub(1, Ordering::Release);
    }

    /// Gives `booked` back. Its owner calls this exactly once per booking.
    #[inline(always)]
    pub(crate) fn release(&self, booked: &Booked<W>) {
        // Release pairs with the Acquire loads in `membership::Writer::reclaim`:
        // the owner's reads of the key happen-before the slot is handed to
        // another worker.
        if booked.weight == 0 {
            self.unpin(booked.slot);
        } else {
            // SeqCst (which includes Release) for the block bounds, see
            // `LoadBounds::lowered`; on x86-64 the same instruction as Release.
            let before = self
                .counters
                .get(booked.slot)
                .fetch_sub(booked.weight, Ordering::SeqCst);
            debug_assert!(before >= booked.weight, "workerpick: in-flight count underflow");
            self.counters
                .lowered(booked.slot, before.wrapping_sub(booked.weight));
        }
    }
}

/// Why [`Slots::charge_if`] booked nothing.
pub(crate) enum Missed {
    /// The load is no longer the one seen: another booking or release landed.
    Moved,
    /// The load would pass `u32::MAX`.
    Overflow,
}

/// One booking on one slot: `weight` on its counter, or a pin for weight 0,
/// and where the slot's key lives. Made only by [`Slots`] once the booking has
/// landed; its owner (a reservation) gives it back with [`Slots::release`],
/// once, and reads the key only while it holds it.
pub(crate) struct Booked<W> {
    key: KeyPtr<W>,
    slot: u32,
    weight: u32,
}

impl<W> Booked<W> {
    /// The booked slot.
    #[inline(always)]
    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }

    /// The load booked; `0` for a pin.
    #[inline(always)]
    pub(crate) fn weight(&self) -> u32 {
        self.weight
    }

    /// Where the booked worker's key lives.
    #[inline(always)]
    pub(crate) fn key(&self) -> &KeyPtr<W> {
        &self.key
    }
}
