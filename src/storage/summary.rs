//! Per-block lower bounds on the in-flight counters, for the summarised
//! least-loaded pick (`scan::blocks`).
//!
//! The counters are cut into blocks of `1 << shift` lanes; cell `b` holds a
//! value that is never above the least counter of block `b` (the invariant,
//! with its proof, is in [`docs::design`](crate::docs::design)). Releases lower
//! a cell ([`Summary::lowered`]); bookings never touch it; a pick that finds a
//! block's least counter above its cell raises the cell by compare-and-swap
//! from the value it read ([`Summary::raise`]). Only pools with room for
//! [`SUMMARISED_SLOTS`] slots or more keep a summary; the others pay nothing
//! on release but a branch on the pool's constant.

use crate::sync::AtomicArray;
use crate::sync::atomic::{AtomicU32, Ordering, fence};

/// The scan length from which a pick uses the summary (below it, the flat scan
/// is faster; see `docs::design` for the measurements). Under loom, the
/// 8-slot model pools.
pub(crate) const SUMMARISED_LANES: usize = if cfg!(loom) { 8 } else { 1024 };

/// The smallest counter array (a pool's slot limit, padded) that keeps a
/// summary: one that can ever hold a pick of [`SUMMARISED_LANES`] lanes. So
/// every pool built with the default limit keeps one, and only pools built
/// `with_max_workers` below 1 024 pay nothing on release.
pub(crate) const SUMMARISED_SLOTS: usize = SUMMARISED_LANES;

/// Block sizes, as shifts: `sqrt(lanes)` rounded down to a power of two,
/// within these bounds (a pick reads about `lanes / block + block` lanes).
const MIN_SHIFT: u32 = if cfg!(loom) { 1 } else { 6 };
const MAX_SHIFT: u32 = if cfg!(loom) { 1 } else { 10 };

/// The per-block lower bounds of one counter array.
pub(crate) struct Summary {
    shift: u32,
    cells: AtomicArray,
}

impl Summary {
    /// A summary for `lanes` counters, or `None` below [`SUMMARISED_SLOTS`].
    /// Every cell starts at 0, a lower bound of anything.
    pub(crate) fn for_lanes(lanes: usize) -> Option<Self> {
        if lanes < SUMMARISED_SLOTS {
            return None;
        }
        let shift = (lanes.ilog2() / 2).clamp(MIN_SHIFT, MAX_SHIFT);
        Some(Self {
            shift,
            cells: AtomicArray::new(lanes.div_ceil(1 << shift)),
        })
    }

    /// Lanes per block.
    #[inline(always)]
    pub(crate) fn block_lanes(&self) -> usize {
        1 << self.shift
    }

    /// The cells of blocks `0..blocks`.
    #[inline(always)]
    pub(crate) fn cells(&self, blocks: usize) -> &[AtomicU32] {
        self.cells.prefix(blocks)
    }

    /// The cell of the block holding `slot` (every slot of the counter array
    /// has one).
    #[inline(always)]
    fn cell(&self, slot: u32) -> &AtomicU32 {
        match self.cells.get(slot as usize >> self.shift) {
            Some(cell) => cell,
            None => unreachable!("workerpick: slot outside the summarised counters (internal bug)"),
        }
    }

    /// `slot`'s counter was just lowered to `now` (a release, or a free slot
    /// reused): lowers its block's cell to `now` if it is above.
    ///
    /// The counter's decrement must be `SeqCst`; with the `SeqCst` load here it
    /// pairs with the fence in [`raise`](Self::raise): either this load sees
    /// the raise, or the raiser's second look sees the decrement.
    #[inline(always)]
    pub(crate) fn lowered(&self, slot: u32, now: u32) {
        // Loom models `SeqCst` loads as acquire loads, which would allow what
        // the C++20 rules for `SeqCst` forbid here; a fence is what it models.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        let cell = self.cell(slot);
        if now < cell.load(Ordering::SeqCst) {
            cell.fetch_min(now, Ordering::SeqCst);
        }
    }

    /// Raises block `block`'s cell from `seen` (the value the caller read) to
    /// `to` (the least counter of the block, as the caller read them, `> seen`),
    /// then looks at the block's counters again with `least` and lowers the
    /// cell to what it finds if that is below `to`. Whether the cell was
    /// raised: not when it moved since `seen` was read (a release lowered it,
    /// or another pick raised it).
    ///
    /// The compare-and-swap keeps a release that lowered the cell after `seen`
    /// was read from being overwritten; the second look catches a release
    /// whose decrement the first look missed and whose load of the cell came
    /// before the swap (it then saw no reason to lower it).
    pub(crate) fn raise(&self, block: usize, seen: u32, to: u32, least: impl FnOnce() -> u32) -> bool {
        let Some(cell) = self.cells.get(block) else {
            return false;
        };
        if !swap(cell, seen, to) {
            return false;
        }
        fence(Ordering::SeqCst);
        let now = least();
        if now < to {
            cell.fetch_min(now, Ordering::SeqCst);
        }
        true
    }
}

/// The raise itself: a compare-and-swap from `seen`.
#[cfg(not(workerpick_plain_raise))]
#[inline(always)]
fn swap(cell: &AtomicU32, seen: u32, to: u32) -> bool {
    cell.compare_exchange(seen, to, Ordering::SeqCst, Ordering::Relaxed)
        .is_ok()
}

/// The raise as a plain store: WRONG, kept only to show that the loom model
/// `summary_race` fails without the compare-and-swap
/// (`RUSTFLAGS="--cfg loom --cfg workerpick_plain_raise"`).
#[cfg(workerpick_plain_raise)]
#[inline(always)]
fn swap(cell: &AtomicU32, seen: u32, to: u32) -> bool {
    let _ = seen;
    cell.store(to, Ordering::SeqCst);
    true
}
