//! Health, without a new snapshot: an unhealthy worker's counter carries
//! [`UNHEALTHY_LOAD`] more load, so every load-aware pick (the SIMD scan, the
//! two-choice comparison, custom selectors reading `Context::load`) passes it
//! over in the pass it already makes, and the pick paths pay nothing. Random
//! and round-robin, which read no load, check a worker's mark only while some
//! worker is marked (one load of a pool-wide count otherwise).
//!
//! When every candidate is unhealthy, picks go to all of them as if none were
//! (the least loaded among them, for load-aware modes): Envoy's panic routing,
//! the choice that keeps serving when the health signal is what failed.
//!
//! The penalty is kept per slot beside the counter (as reported load is), so
//! the pool's views of its own bookings subtract it, and marking healthy takes
//! out exactly what marking added. Transitions hold the report lock (they
//! change the counter's non-booked part, as reports do); marking a worker that
//! is already marked is one load and returns.

use crate::storage::counters::Counters;
use crate::sync::AtomicArray;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed, Ordering::Release, Ordering::SeqCst};

/// The load an unhealthy worker's counter carries on top of its own, as
/// [`Context::load`](crate::Context::load) and the scan see it: half the
/// counter's range (less, if its load leaves less room below `u32::MAX`).
pub const UNHEALTHY_LOAD: u32 = 1 << 31;

/// Per slot, the load added for ill health (0: healthy), and how many are marked.
pub(crate) struct Health {
    penalty: AtomicArray,
    marked: AtomicU32,
}

impl Health {
    pub(crate) fn new(len: usize) -> Self {
        Self {
            penalty: AtomicArray::new(len),
            marked: AtomicU32::new(0),
        }
    }

    /// Whether some worker is marked unhealthy.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        self.marked.load(Relaxed) != 0
    }

    /// The load added to `slot`'s counter for ill health.
    #[inline(always)]
    pub(crate) fn penalty(&self, slot: u32) -> u32 {
        self.penalty.get(slot as usize).map_or(0, |p| p.load(Relaxed))
    }

    /// Whether `slot` is marked unhealthy.
    #[inline(always)]
    pub(crate) fn is_marked(&self, slot: u32) -> bool {
        self.penalty(slot) != 0
    }

    /// Marks `slot` unhealthy; `false` if it already was. The caller holds the
    /// report lock.
    pub(crate) fn mark(&self, counters: &Counters, slot: u32) -> bool {
        let Some(cell) = self.penalty.get(slot as usize) else {
            return false;
        };
        if cell.load(Relaxed) != 0 {
            return false;
        }
        let counter = counters.get(slot);
        let mut seen = counter.load(Relaxed);
        loop {
            // A counter at u32::MAX (which refuses every booking already)
            // has no room for the mark.
            let add = UNHEALTHY_LOAD.min(u32::MAX - seen);
            if add == 0 {
                return false;
            }
            // Release: a view of the bookings that loads this value without
            // the report lock (`OwnBookings::of`) then sees `used` set.
            match counter.compare_exchange_weak(seen, seen + add, Release, Relaxed) {
                Ok(_) => {
                    cell.store(add, Relaxed);
                    // Relaxed is enough for the count: it only says "look".
                    self.marked.fetch_add(1, Relaxed);
                    return true;
                }
                Err(now) => seen = now,
            }
        }
    }

    /// Marks `slot` healthy; `false` if it was not marked. The caller holds
    /// the report lock.
    pub(crate) fn unmark(&self, counters: &Counters, slot: u32) -> bool {
        let Some(cell) = self.penalty.get(slot as usize) else {
            return false;
        };
        let add = cell.swap(0, Relaxed);
        if add == 0 {
            return false;
        }
        // SeqCst, as a release (see `Summary::lowered`): it lowers the counter.
        let before = counters.get(slot).fetch_sub(add, SeqCst);
        if let Some(summary) = counters.summary() {
            summary.lowered(slot, before - add);
        }
        self.marked.fetch_sub(1, Relaxed);
        true
    }

    /// Marks healthy every marked slot below `lanes` that `holds` no longer admits (its
    /// worker left the set). The caller holds the report lock.
    pub(crate) fn forget(&self, counters: &Counters, lanes: usize, holds: impl Fn(u32) -> bool) {
        if !self.any() {
            return;
        }
        for slot in 0..lanes as u32 {
            if self.is_marked(slot) && !holds(slot) {
                self.unmark(counters, slot);
            }
        }
    }
}
