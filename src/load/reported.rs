//! Reported load as picks count it: folded into the slots' counters, with the part
//! of each counter that was reported kept beside it (the [`Board`]).

use crate::storage::counters::Counters;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed, Ordering::SeqCst};

/// The most load a worker can have reported: a larger sum counts as this much.
/// Reported load shares the worker's counter with its in-flight requests, so it
/// is kept to half the counter's range, leaving the other half to bookings.
pub const MAX_REPORTED_LOAD: u32 = (1 << 31) - 1;

/// Reported load as it is counted: per slot, the part of the slot's counter that
/// was reported rather than booked, and whether any slot has some.
///
/// The counters hold `booked + reported`, so every load-aware pick compares
/// effective load with the scan and the compare-and-swap it always made; the
/// cells say how much of each counter is reported, for the pool's views of its
/// own bookings ([`Pool::in_flight`](crate::Pool::in_flight), summaries).
pub(crate) struct Board {
    cells: Counters,
    on: AtomicU32,
}

/// A board and the counters it folds into.
#[derive(Clone, Copy)]
pub(crate) struct Cells<'a> {
    pub(crate) board: &'a Board,
    pub(crate) counters: &'a Counters,
}

impl Board {
    pub(crate) fn set_on(&self, on: bool) {
        if (self.on.load(Relaxed) != 0) != on {
            self.on.store(u32::from(on), Relaxed);
        }
    }

    /// Whether some counter holds reported load.
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Relaxed) != 0
    }

    /// A board for `len` slots, with nothing reported.
    pub(crate) fn new(len: usize) -> Self {
        Self {
            cells: Counters::new(len),
            on: AtomicU32::new(0),
        }
    }

    /// The reported load counted in `slot`'s counter.
    #[inline(always)]
    pub(crate) fn get(&self, slot: u32) -> u32 {
        self.cells.get(slot).load(Relaxed)
    }
}

impl Cells<'_> {
    /// Replaces the reported load `applied` counted in `slot`'s counter with
    /// `target`, or as much of it as fits below `u32::MAX` beside the bookings;
    /// returns what is counted now. Report writers only (under the report lock).
    ///
    /// A compare-and-swap loop, like a booking: bookings and releases landing
    /// meanwhile are kept, never overwritten. The counter is at least `applied`
    /// (releases take back only what bookings added).
    ///
    /// Inline: a summary's flush folds every worker it names in a loop, and
    /// whether the compiler inlined this on its own depended on which
    /// codegen unit the caller landed in (an out-of-line call per worker
    /// cost `apply_summary` 7 % when an unrelated module moved).
    #[inline]
    pub(crate) fn fold(self, slot: u32, applied: u32, target: u32) -> u32 {
        let counter = self.counters.get(slot);
        let mut seen = counter.load(Relaxed);
        loop {
            debug_assert!(seen >= applied, "reported load missing from its counter");
            let booked = seen.wrapping_sub(applied);
            let now = target.min(u32::MAX - booked);
            // SeqCst, like a release, for the block bounds of a summarised pool
            // (see `Summary::lowered`); otherwise the count is the only datum.
            match counter.compare_exchange_weak(seen, booked + now, SeqCst, Relaxed) {
                Ok(_) => {
                    if booked + now < seen {
                        // Lowered, as a release lowers it: so is its block's bound.
                        self.counters.lowered(slot, booked + now);
                    }
                    self.board.cells.get(slot).store(now, Relaxed);
                    return now;
                }
                Err(actual) => seen = actual,
            }
        }
    }
}
