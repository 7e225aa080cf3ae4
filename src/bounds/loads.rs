//! Per-block lower bounds on the in-flight counters, for the summarised
//! least-loaded pick (`bounds::least`): a cell per block of `1 << shift`
//! lanes, never above its block's least counter, and a floor above the cells.
//! Releases lower them ([`LoadBounds::lowered`]), picks raise them by
//! compare-and-swap ([`LoadBounds::raise`], [`LoadBounds::raise_floor`]).
//! Only pools with room for [`SUMMARISED_SLOTS`] slots keep them. The
//! invariant and its proof: [`docs::internal::bounds`](crate::docs::internal::bounds).

use super::raise::{second_look, swap, swap_wide};
use super::scores::Scores;
#[cfg(loom)]
use crate::sync::atomic::fence;
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use crate::sync::{AtomicArray, CachePadded};

/// The scan length from which a pick uses the bounds (below it, the flat scan
/// is faster; see `docs::internal::bounds` for the measurements). Under loom, the
/// 8-slot model pools.
pub(crate) const SUMMARISED_LANES: usize = if cfg!(loom) { 8 } else { 1024 };

/// The smallest counter array (a pool's slot limit, padded) that keeps a
/// bounds: one that can ever hold a pick of [`SUMMARISED_LANES`] lanes. So
/// every pool built with the default limit keeps one, and only pools built
/// `with_max_workers` below 1 024 pay nothing on release.
pub(crate) const SUMMARISED_SLOTS: usize = SUMMARISED_LANES;

/// Block sizes, as shifts: `sqrt(lanes)` rounded down to a power of two,
/// within these bounds (a pick reads about `lanes / block + block` lanes).
const MIN_SHIFT: u32 = if cfg!(loom) { 1 } else { 6 };
const MAX_SHIFT: u32 = if cfg!(loom) { 1 } else { 10 };

/// The per-block lower bounds of one counter array.
pub(crate) struct LoadBounds {
    shift: u32,
    cells: AtomicArray,
    /// A [`Floor`]: never above the least counter of the blocks it covers.
    /// Read by every pick, written when a release takes a counter below it
    /// and when a pick raises it; on a line of its own, so that those writes
    /// do not evict `shift` and `cells`.
    floor: CachePadded<AtomicU64>,
    /// The bounds on weighted scores ([`Scores`]), made by the first writer
    /// that installs factors, freed with the bounds; null before.
    scores: AtomicPtr<Scores>,
    /// How many counters the bounds covers.
    lanes: usize,
}

/// The floor as read: a value, and how many blocks (from the first) it is a
/// lower bound of. A pick trusts it only when it covers all the pick's
/// blocks: a pick of an older snapshot, with fewer lanes, raises it over its
/// own blocks only, and a worker added since in a block past them may be
/// lower.
///
/// One more bit, the top one, says the pool keeps bounds on weighted scores
/// too ([`Scores`]), so that a release learns from the load of the floor it
/// makes anyway whether it must lower those: bit 63 the flag, bits 31-62 the
/// value, bits 0-30 the blocks. Then one comparison, [`Floor::below`], tells
/// a release whether it has anything more to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Floor(u64);

/// The floor's flag for a pool that keeps bounds on weighted scores.
const WEIGHTED: u64 = 1 << 63;

/// The most blocks a floor counts, covering every block, and its mask.
const ALL_BLOCKS: u32 = (1 << 31) - 1;

impl Floor {
    fn new(value: u32, blocks: u32) -> Self {
        Floor(u64::from(value) << 31 | u64::from(blocks.min(ALL_BLOCKS)))
    }

    /// The same floor (blocks and flag) at `value`.
    fn at(self, value: u32) -> Self {
        Floor(u64::from(value) << 31 | (self.0 & (WEIGHTED | u64::from(ALL_BLOCKS))))
    }

    /// Whether the pool keeps bounds on weighted scores.
    #[inline(always)]
    fn weighted(self) -> bool {
        self.0 & WEIGHTED != 0
    }

    /// Whether a release that took a counter to `now` must do more: `now`
    /// below the value, or the pool keeps bounds on scores. One comparison:
    /// the flag makes the floor above any `now` shifted in.
    #[inline(always)]
    fn below(self, now: u32) -> bool {
        (u64::from(now) << 31 | u64::from(ALL_BLOCKS)) < self.0
    }

    /// The bound.
    #[inline(always)]
    pub(crate) fn value(self) -> u32 {
        (self.0 >> 31) as u32
    }

    /// Whether it bounds the counters of blocks `0..blocks`.
    #[inline(always)]
    pub(crate) fn covers(self, blocks: usize) -> bool {
        self.blocks() as usize >= blocks
    }

    /// How many blocks it covers.
    #[inline(always)]
    fn blocks(self) -> u32 {
        self.0 as u32 & ALL_BLOCKS
    }
}

impl LoadBounds {
    /// A bounds for `lanes` counters, or `None` below [`SUMMARISED_SLOTS`].
    /// Every cell starts at 0, a lower bound of anything.
    pub(crate) fn for_lanes(lanes: usize) -> Option<Self> {
        if lanes < SUMMARISED_SLOTS {
            return None;
        }
        let shift = (lanes.ilog2() / 2).clamp(MIN_SHIFT, MAX_SHIFT);
        Some(Self {
            shift,
            cells: AtomicArray::new(lanes.div_ceil(1 << shift)),
            // 0 bounds everything.
            floor: CachePadded::new(AtomicU64::new(Floor::new(0, ALL_BLOCKS).0)),
            scores: AtomicPtr::new(core::ptr::null_mut()),
            lanes,
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

    /// The floor, as last settled.
    #[inline(always)]
    pub(crate) fn floor(&self) -> Floor {
        Floor(self.floor.load(Ordering::Relaxed))
    }

    /// `slot`'s counter was just lowered to `now` (a release, or a free slot
    /// reused): lowers its block's cell, then the floor, to `now` where they
    /// are above, then the bounds on weighted scores if the pool keeps them.
    ///
    /// The counter's decrement must be `SeqCst`; with the `SeqCst` loads here
    /// it pairs with the fences in [`raise`](Self::raise) and
    /// [`raise_floor`](Self::raise_floor): either a load sees the raise, or
    /// the raiser's second look sees the decrement (or the lowered cell).
    /// The caller checked that the bounds are armed (`Counters::lowered`):
    /// on bounds not yet armed, no bound was ever raised, so nothing to do.
    #[inline(always)]
    pub(crate) fn lowered(&self, slot: u32, now: u32) {
        // Every slot of the counter array has a cell; no panic path here,
        // which would make the release too large to inline where
        // reservations drop (measured with the callgrind gate).
        if let Some(cell) = self.cells.get(slot as usize >> self.shift)
            && now < cell.load(Ordering::SeqCst)
        {
            cell.fetch_min(now, Ordering::SeqCst);
        }
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        // SeqCst also for the flag: a release that does not see it
        // decremented before the writer set it, so before any pick could
        // raise a bound on scores.
        let floor = Floor(self.floor.load(Ordering::SeqCst));
        if floor.below(now) {
            self.lowered_further(slot, now, floor);
        }
    }

    /// The rest of [`lowered`](Self::lowered) when the floor, as read, is
    /// above `now` or flags bounds on scores: out of line, so that the
    /// release stays small enough to inline where reservations drop.
    #[inline(never)]
    fn lowered_further(&self, slot: u32, now: u32, floor: Floor) {
        if now < floor.value() {
            self.lower_floor_slow(now);
        }
        if floor.weighted()
            && let Some(scores) = self.scores()
        {
            scores.lowered(slot, now);
        }
    }

    /// The bounds on weighted scores, once a writer made them.
    #[inline(always)]
    pub(crate) fn scores(&self) -> Option<&Scores> {
        // SAFETY: a non-null pointer came from `Box::into_raw` in
        // `install_scores`, and is freed only when the bounds drops. Not a
        // `OnceLock` (safe code): the pointer is `crate::sync`'s `AtomicPtr`
        // so that loom models its publication against the `WEIGHTED` flag
        // (loom-tests/tests/scores.rs); std's `OnceLock` is invisible to loom.
        unsafe { self.scores.load(Ordering::Acquire).as_ref() }
    }

    /// Installs `scale` as the factors of the weighted scores (making their
    /// bounds, and flagging the floor, at the first call) and returns its
    /// version. Writers only, before they publish the snapshot the factors
    /// belong to.
    pub(crate) fn install_scores(&self, scale: &[u32]) -> u32 {
        let scores = match self.scores() {
            Some(scores) => scores,
            None => {
                let made = Box::into_raw(Box::new(Scores::new(self.shift, self.lanes)));
                self.scores.store(made, Ordering::Release);
                // A release that sees the flag then sees the pointer.
                self.floor.fetch_or(WEIGHTED, Ordering::SeqCst);
                // SAFETY: just made from a box; freed only on drop.
                unsafe { &*made }
            }
        };
        scores.install(scale)
    }

    /// Lowers the floor's value to `now` if it is above, keeping the blocks
    /// it covers (after every lowering of a cell).
    #[inline(always)]
    fn lower_floor(&self, now: u32) {
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        if now < Floor(self.floor.load(Ordering::SeqCst)).value() {
            self.lower_floor_slow(now);
        }
    }

    /// [`lower_floor`](Self::lower_floor)'s store: a compare-and-swap loop
    /// (a raise may change the blocks covered meanwhile).
    #[inline(never)]
    fn lower_floor_slow(&self, now: u32) {
        let lower = |raw| {
            let f = Floor(raw);
            (now < f.value()).then(|| f.at(now).0)
        };
        let _ = self.floor.fetch_update(Ordering::SeqCst, Ordering::SeqCst, lower);
    }

    /// Raises the floor from `seen` (the value the caller read) to `to` (the
    /// least cell, as the caller read them, `> seen`), then looks at the cells
    /// again with `least` and lowers the floor to what it finds if that is
    /// below `to`: the protocol of [`raise`](Self::raise), one level up. A
    /// cell lowered after the caller read it was lowered by a release or a
    /// raise's repair, which then lowers the floor too: either that sees this
    /// raise, or this second look sees the lowered cell.
    /// The floor then covers blocks `0..blocks` (those whose cells the caller
    /// read); `least` must read the same.
    pub(crate) fn raise_floor(&self, seen: Floor, to: u32, blocks: usize, least: impl FnOnce() -> u32) {
        let covered = Floor::new(to, u32::try_from(blocks).unwrap_or(ALL_BLOCKS));
        let to_floor = Floor(covered.0 | (seen.0 & WEIGHTED));
        let swapped = swap_wide(&self.floor, seen.0, to_floor.0);
        second_look(swapped, to, least, |now| self.lower_floor_slow(now));
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
        second_look(swap(cell, seen, to), to, least, |now| {
            cell.fetch_min(now, Ordering::SeqCst);
            self.lower_floor(now);
        })
    }
}

impl Drop for LoadBounds {
    fn drop(&mut self) {
        let scores = self.scores.load(Ordering::Acquire);
        if !scores.is_null() {
            // SAFETY: made by `Box::into_raw` in `install_scores`; nothing
            // borrows the bounds any more.
            drop(unsafe { Box::from_raw(scores) });
        }
    }
}
