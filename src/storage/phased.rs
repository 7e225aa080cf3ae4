//! Phased load: a booking that gives back part of its charge (prefill done)
//! and keeps the rest, or adds to it (tokens generated). Apart from plain
//! release, so the drop path is unchanged.

use super::counters::add_load;
use super::{Booked, Slots};
use crate::error::Error;
use crate::sync::atomic::Ordering;

impl<W> Slots<W> {
    /// Gives back `n` of `booked`'s charge, at most what it holds, and
    /// returns how much that was. The counter never goes below what other
    /// bookings hold: each unit leaves once, from this booking's own share.
    /// A booking left with nothing becomes a pin, taken before its last unit
    /// goes, so its slot stays held until it drops.
    pub(crate) fn release_part(&self, booked: &mut Booked<W>, n: u32) -> u32 {
        let n = n.min(booked.weight);
        if n == 0 {
            return 0;
        }
        if n == booked.weight {
            // Relaxed: the SeqCst decrement below releases it, and `reclaim`
            // reads the counter (Acquire) before the pins, so a reclaim that
            // sees this charge gone sees the pin.
            self.keys.pins(booked.slot).fetch_add(1, Ordering::Relaxed);
        }
        // SeqCst as in `release`: it pairs with `reclaim`'s Acquire load and
        // orders the block bounds (see `LoadBounds::lowered`).
        let before = self.counters.get(booked.slot).fetch_sub(n, Ordering::SeqCst);
        debug_assert!(before >= n, "workerpick: in-flight count underflow");
        self.counters.lowered(booked.slot, before.wrapping_sub(n));
        booked.weight -= n;
        n
    }

    /// Adds `n` to `booked`'s charge. A pin (weight 0) is charged and then
    /// unpinned, so the caller must hold a snapshot naming the slot: that,
    /// not the pin, keeps the slot from being reclaimed in between.
    pub(crate) fn add_charge(&self, booked: &mut Booked<W>, n: u32) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        // The counter holds at least this booking's weight, so a total past
        // `u32::MAX` is refused by `add_load` first; the check is for clarity.
        let total = booked.weight.checked_add(n).ok_or(Error::LoadOverflow)?;
        add_load(self.counters.get(booked.slot), n)?;
        if booked.weight == 0 {
            self.unpin(booked.slot);
        }
        booked.weight = total;
        Ok(())
    }
}
