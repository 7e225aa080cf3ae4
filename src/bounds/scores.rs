//! Per-block lower bounds on the weighted least-loaded scores
//! `(load + 1) · L / c`, whose order is not the counters': for the weighted
//! summarised pick (`bounds::least_scored`). Each bound and each slot's
//! factor carries the *version* of the factors it was computed under, so a
//! capacity change never makes a stale bound look valid; a pick trusts only
//! its own version's bounds, a release lowers to 0 on a mismatch. The rules
//! and their proof: [`docs::internal::bounds`](crate::docs::internal::bounds), "Bounds on weighted
//! scores".

use super::raise::{second_look, swap_wide};
use crate::sync::CachePadded;
#[cfg(loom)]
use crate::sync::atomic::fence;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A value tagged with the version of the factors it belongs to: a bound, or
/// a slot's factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tagged(u64);

impl Tagged {
    fn new(version: u32, value: u32) -> Self {
        Tagged(u64::from(version) << 32 | u64::from(value))
    }

    fn version(self) -> u32 {
        (self.0 >> 32) as u32
    }

    fn value(self) -> u32 {
        self.0 as u32
    }

    /// What it bounds under `version`: its value if tagged so, else 0.
    #[inline(always)]
    pub(crate) fn bound(self, version: u32) -> u32 {
        if self.version() == version {
            self.value()
        } else {
            0
        }
    }
}

/// The bounds of one counter array, over the blocks of its `LoadBounds`.
pub(crate) struct Scores {
    shift: u32,
    /// Per slot: its factor, tagged.
    factors: Box<[AtomicU64]>,
    /// Per block: a lower bound on its lanes' scores, tagged.
    cells: Box<[AtomicU64]>,
    /// The floor: tagged, never above a bound of its version over every
    /// block of that version's lanes (outside the windows of the protocol),
    /// kept by the rules of the counters' floor. A pick tries a lane at it
    /// before it reads any bound. On a line of its own.
    floor: CachePadded<AtomicU64>,
    /// The version last installed; writers only.
    last: AtomicU32,
}

impl Scores {
    /// Bounds for `slots` counters in blocks of `1 << shift`, nothing known.
    pub(crate) fn new(shift: u32, slots: usize) -> Self {
        let atomics = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect();
        Self {
            shift,
            factors: atomics(slots),
            cells: atomics(slots.div_ceil(1 << shift)),
            floor: CachePadded::new(AtomicU64::new(0)),
            last: AtomicU32::new(0),
        }
    }

    /// Installs `scale` (lane `i`'s factor at `i`) and returns its version:
    /// the last one if the factors are those already installed, else a new
    /// one. Writers only, before they publish a snapshot that uses it.
    pub(crate) fn install(&self, scale: &[u32]) -> u32 {
        let last = self.last.load(Ordering::Relaxed);
        let installed =
            |(t, &f): (&AtomicU64, &u32)| Tagged(t.load(Ordering::Relaxed)) == Tagged::new(last, f);
        if last != 0 && scale.len() <= self.factors.len() && self.factors.iter().zip(scale).all(installed) {
            return last;
        }
        let version = last.wrapping_add(1).max(1);
        for (t, &f) in self.factors.iter().zip(scale) {
            t.store(Tagged::new(version, f).0, Ordering::SeqCst);
        }
        self.last.store(version, Ordering::Relaxed);
        version
    }

    /// Lanes per block.
    #[inline(always)]
    pub(crate) fn block_lanes(&self) -> usize {
        1 << self.shift
    }

    /// The bounds of blocks `0..blocks`.
    #[inline(always)]
    pub(crate) fn cells(&self, blocks: usize) -> &[AtomicU64] {
        &self.cells[..blocks.min(self.cells.len())]
    }

    /// The floor, as last settled.
    #[inline(always)]
    pub(crate) fn floor(&self) -> Tagged {
        Tagged(self.floor.load(Ordering::Relaxed))
    }

    /// `slot`'s counter was just lowered to `now` (see `LoadBounds::lowered`,
    /// which calls this after the counters' own bounds and the floor): lowers
    /// its block's bound, then the floor, to the slot's score under the
    /// factor it reads, or to 0 where they are of another version than that
    /// factor.
    #[inline(always)]
    pub(crate) fn lowered(&self, slot: u32, now: u32) {
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        let (Some(factor), Some(cell)) = (
            self.factors.get(slot as usize),
            self.cells.get(slot as usize >> self.shift),
        ) else {
            return;
        };
        let factor = Tagged(factor.load(Ordering::SeqCst));
        let score = (u64::from(now) + 1) * u64::from(factor.value());
        let score = u32::try_from(score).unwrap_or(u32::MAX);
        lower(cell, factor.version(), score);
        lower(&self.floor, factor.version(), score);
    }

    /// Raises the floor from `seen` (as the caller read it, before the
    /// bounds) to `to` under `version` (the least bound over every block of
    /// the version's lanes, as the caller read them), then looks at the
    /// bounds again with `least` and lowers the floor to what it finds if
    /// that is below `to`: the protocol of `LoadBounds::raise_floor`.
    pub(crate) fn raise_floor(&self, seen: Tagged, version: u32, to: u32, least: impl FnOnce() -> u32) {
        let swapped = swap_wide(&self.floor, seen.0, Tagged::new(version, to).0);
        second_look(swapped, to, least, |now| lower(&self.floor, version, now));
    }

    /// Raises block `block`'s bound from `seen` (as the caller read it) to
    /// `to` under `version` (the block's least score, as the caller read the
    /// counters, above what `seen` bounds), then looks at the block again with
    /// `least` and lowers the bound to what it finds if that is below `to`:
    /// the protocol of `LoadBounds::raise`. Whether it was raised: not when the
    /// bound moved since `seen` was read.
    pub(crate) fn raise(
        &self,
        block: usize,
        seen: Tagged,
        version: u32,
        to: u32,
        least: impl FnOnce() -> u32,
    ) -> bool {
        let Some(cell) = self.cells.get(block) else {
            return false;
        };
        second_look(
            swap_wide(cell, seen.0, Tagged::new(version, to).0),
            to,
            least,
            |now| {
                lower(cell, version, now);
                lower(&self.floor, version, now);
            },
        )
    }
}

/// Lowers `cell` to `to` under `version` if it is tagged so and above, or to
/// 0 if it is tagged otherwise: a compare-and-swap loop, since raises move it.
#[inline(always)]
fn lower(cell: &AtomicU64, version: u32, to: u32) {
    // Loom models the `SeqCst` load that starts the loop as an acquire load;
    // a fence is what it models of the C++20 rules (see `LoadBounds::lowered`).
    #[cfg(loom)]
    fence(Ordering::SeqCst);
    let lowered = |raw| {
        let c = Tagged(raw);
        if c.version() == version {
            (to < c.value()).then(|| Tagged::new(version, to).0)
        } else {
            (c.value() != 0).then(|| Tagged::new(c.version(), 0).0)
        }
    };
    let _ = cell.fetch_update(Ordering::SeqCst, Ordering::SeqCst, lowered);
}

/// Reads `cell` as a tagged bound.
#[inline(always)]
pub(crate) fn read(cell: &AtomicU64, order: Ordering) -> Tagged {
    Tagged(cell.load(order))
}
