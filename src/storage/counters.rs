//! The in-flight counters: one packed `u32` per slot, the array the
//! least-loaded scan reads, and the arithmetic every booking uses on them.

use super::features::Features;
use crate::bounds::loads::LoadBounds;
use crate::error::Error;
use crate::storage::latency::Latency;
use crate::sync::AtomicArray;
#[cfg(loom)]
use crate::sync::atomic::fence;
use crate::sync::atomic::{AtomicU32, Ordering};

/// The in-flight counters: one packed, cache-line-aligned array.
pub(crate) struct Counters {
    cells: AtomicArray,
    /// Per-block lower bounds, for arrays long enough to use them.
    bounds: Option<LoadBounds>,
    /// The latency table, for pools that opted in (`Pool::with_latency`):
    /// kept here, where a pick's context already points, so that a plain
    /// pick loads nothing more.
    latency: Option<Box<Latency>>,
    /// Which optional signals the pool uses now (unused by a board's cells).
    pub(crate) features: Features,
}

impl Counters {
    /// Counters for slots `0..len`, all zero.
    pub(crate) fn new(len: usize) -> Self {
        Self {
            cells: AtomicArray::new(len),
            bounds: LoadBounds::for_lanes(len),
            latency: None,
            features: Features::new(),
        }
    }

    /// Drops the per-block lower bounds (before the pool is shared): picks
    /// then scan flat, and releases touch only their counter.
    pub(crate) fn drop_bounds(&mut self) {
        self.bounds = None;
    }

    /// Keeps `table` as the pool's latency table (before the pool is shared).
    pub(crate) fn set_latency(&mut self, table: Latency) {
        self.latency = Some(Box::new(table));
    }

    /// The latency table, if the pool keeps one.
    #[inline(always)]
    pub(crate) fn latency(&self) -> Option<&Latency> {
        self.latency.as_deref()
    }

    /// The per-block lower bounds, if this array keeps them.
    #[inline(always)]
    pub(crate) fn bounds(&self) -> Option<&LoadBounds> {
        self.bounds.as_ref()
    }

    /// The per-block lower bounds, for a pick that reads (and may raise)
    /// them or those on weighted scores: armed first, once.
    #[inline(always)]
    pub(crate) fn bounds_for_pick(&self) -> Option<&LoadBounds> {
        let bounds = self.bounds.as_ref()?;
        if self.features.get() & Features::ARMED == 0 {
            self.features.arm();
        }
        Some(bounds)
    }

    /// `slot`'s counter was just lowered to `now` by a `SeqCst` decrement (a
    /// release, a report, a free slot reused): its block's bound follows
    /// ([`LoadBounds::lowered`]), once a pick armed the bounds.
    #[inline(always)]
    pub(crate) fn lowered(&self, slot: u32, now: u32) {
        // Loom models `SeqCst` loads as acquire loads, which would allow what
        // the C++20 rules for `SeqCst` forbid here; a fence is what it models.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        if self.features.armed()
            && let Some(bounds) = &self.bounds
        {
            bounds.lowered(slot, now);
        }
    }

    /// Every counter of the array.
    #[inline(always)]
    pub(crate) fn all(&self) -> &[AtomicU32] {
        self.cells.prefix(usize::MAX)
    }

    /// The counters of slots `0..end` (or fewer, if `end` exceeds the array).
    #[inline(always)]
    pub(crate) fn slice(&self, end: usize) -> &[AtomicU32] {
        self.cells.prefix(end)
    }

    /// The counter of `slot`. Every slot reachable from a snapshot is in range.
    #[inline(always)]
    pub(crate) fn get(&self, slot: u32) -> &AtomicU32 {
        match self.cells.get(slot as usize) {
            Some(counter) => counter,
            None => unreachable_slot(),
        }
    }
}

/// Adds `weight` to `counter` unless the load would pass `u32::MAX`.
///
/// Not a `fetch_add`: a count that wrapped would read as a small load, or as
/// zero, and the writer could then reuse the slot under live reservations.
/// Lock-free rather than bounded: an exchange fails only because another
/// booking or release on this counter landed in between.
#[inline(always)]
pub(crate) fn add_load(counter: &AtomicU32, weight: u32) -> Result<(), Error> {
    // Relaxed: the count itself is the only datum (see `booking::reserve`).
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

#[cold]
#[inline(never)]
pub(super) fn unreachable_slot() -> ! {
    // Only reachable through a bug in this crate: every slot handed to a reader
    // comes from a snapshot published after its storage existed.
    panic!("workerpick: slot outside allocated storage (internal bug)")
}
