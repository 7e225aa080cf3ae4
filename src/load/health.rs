//! Health, without a new snapshot: an unhealthy worker's counter carries
//! [`UNHEALTHY_LOAD`] more load, so scans and comparisons pass it over in the
//! pass they already make; each mode checks its answer's mark while some
//! worker is marked (the feature word's `MARKED` bit). When every candidate
//! is unhealthy, picks go to all of them as if none were (panic routing).
//! The penalty is kept per slot beside the counter, so own bookings stay
//! exact. Marks, short marks and transitions:
//! [`docs::fleets`](crate::docs::fleets), "Health marks in the counter".

use crate::storage::counters::Counters;
use crate::storage::features::Features;
use crate::sync::AtomicArray;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed, Ordering::Release, Ordering::SeqCst};

/// The load an unhealthy worker's counter carries on top of its own, as
/// [`Context::load`](crate::Context::load) and the scan see it: half the
/// counter's range (less, if its load leaves less room below `u32::MAX`).
pub const UNHEALTHY_LOAD: u32 = 1 << 31;

/// Per slot, the mark and the load it added; how many are marked, and how
/// many of those are short of their penalty.
pub(crate) struct Health {
    /// 0: healthy; else 1 + the penalty now in the slot's counter (at most
    /// [`UNHEALTHY_LOAD`], less while the counter had no room for it all).
    cells: AtomicArray,
    marked: AtomicU32,
    short: AtomicU32,
}

impl Health {
    pub(crate) fn new(len: usize) -> Self {
        Self {
            cells: AtomicArray::new(len),
            marked: AtomicU32::new(0),
            short: AtomicU32::new(0),
        }
    }

    /// Whether some worker is marked unhealthy.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        self.marked.load(Relaxed) != 0
    }

    /// How many slots are marked unhealthy.
    #[inline(always)]
    pub(crate) fn marked(&self) -> u32 {
        self.marked.load(Relaxed)
    }

    /// Whether some marked slot's counter holds less than [`UNHEALTHY_LOAD`]
    /// of penalty.
    #[inline(always)]
    pub(crate) fn any_short(&self) -> bool {
        self.short.load(Relaxed) != 0
    }

    #[inline(always)]
    fn cell(&self, slot: u32) -> u32 {
        self.cells.get(slot as usize).map_or(0, |c| c.load(Relaxed))
    }

    /// The load added to `slot`'s counter for ill health.
    #[inline(always)]
    pub(crate) fn penalty(&self, slot: u32) -> u32 {
        self.cell(slot).saturating_sub(1)
    }

    /// Whether `slot` is marked unhealthy.
    #[inline(always)]
    pub(crate) fn is_marked(&self, slot: u32) -> bool {
        self.cell(slot) != 0
    }

    /// Whether `slot` is marked and short of its penalty.
    pub(crate) fn is_short(&self, slot: u32) -> bool {
        let cell = self.cell(slot);
        cell != 0 && cell - 1 < UNHEALTHY_LOAD
    }

    /// Marks `slot` unhealthy; `false` if it already was (then adds what is
    /// missing of its penalty, if there is room now). The caller holds the
    /// report lock.
    pub(crate) fn mark(&self, counters: &Counters, slot: u32) -> bool {
        let Some(cell) = self.cells.get(slot as usize) else {
            return false;
        };
        if cell.load(Relaxed) != 0 {
            self.top_up(counters, slot);
            return false;
        }
        // Marked before any penalty is in: a short mark is a mark too.
        cell.store(1, Relaxed);
        self.short.fetch_add(1, Relaxed);
        // Relaxed is enough for the counts: they only say "look".
        if self.marked.fetch_add(1, Relaxed) == 0 {
            counters.features.set(Features::MARKED, true);
        }
        self.top_up(counters, slot);
        true
    }

    /// Adds to marked `slot`'s counter what fits of the penalty it lacks. The
    /// caller holds the report lock.
    pub(crate) fn top_up(&self, counters: &Counters, slot: u32) {
        let Some(cell) = self.cells.get(slot as usize) else {
            return;
        };
        let have = cell.load(Relaxed);
        if have == 0 || have - 1 == UNHEALTHY_LOAD {
            return;
        }
        let missing = UNHEALTHY_LOAD - (have - 1);
        let counter = counters.get(slot);
        let mut seen = counter.load(Relaxed);
        loop {
            // A counter at u32::MAX (which refuses every booking already)
            // has no room: the rest waits for a later top-up.
            let add = missing.min(u32::MAX - seen);
            if add == 0 {
                return;
            }
            // Release: a view of the bookings that loads this value without
            // the report lock (`OwnBookings::of`) then sees `used` set.
            match counter.compare_exchange_weak(seen, seen + add, Release, Relaxed) {
                Ok(_) => {
                    cell.store(have + add, Relaxed);
                    if add == missing {
                        self.short.fetch_sub(1, Relaxed);
                    }
                    return;
                }
                Err(now) => seen = now,
            }
        }
    }

    /// Marks `slot` healthy; `false` if it was not marked. The caller holds
    /// the report lock.
    pub(crate) fn unmark(&self, counters: &Counters, slot: u32) -> bool {
        let Some(cell) = self.cells.get(slot as usize) else {
            return false;
        };
        let had = cell.swap(0, Relaxed);
        if had == 0 {
            return false;
        }
        let add = had - 1;
        if add < UNHEALTHY_LOAD {
            self.short.fetch_sub(1, Relaxed);
        }
        if add > 0 {
            // SeqCst, as a release (see `LoadBounds::lowered`): it lowers the counter.
            let before = counters.get(slot).fetch_sub(add, SeqCst);
            counters.lowered(slot, before - add);
        }
        if self.marked.fetch_sub(1, Relaxed) == 1 {
            counters.features.set(Features::MARKED, false);
        }
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
