//! The summarised least-loaded pick: the flat scan's answer, reading the
//! per-block lower bounds (`storage::summary`) and only the blocks at the
//! least of them, instead of every counter.
//!
//! The lanes `0..n` are cut into `nb` whole blocks, followed by a tail that is
//! scanned in full on every pick. Only blocks whose lanes all lie below
//! `n - LANE_PAD` are summarised: every slot of a snapshot's scan range up to
//! there is allocated (the range is the allocated slots, padded), so a
//! summarised block never holds a lane that a later, larger snapshot could hand
//! to a new worker at load 0 (the growth of the summary with the pool).
//!
//! Let `lo` be the least of the block bounds and of the tail's effective
//! values. Every lane's effective value (counter `|` exclusion) is at least
//! `lo`, so a lane holding `lo` is at the global minimum, and every lane at the
//! global minimum lies in the tail or in a block whose bound is `lo`. The pick
//! first tries up to [`SAMPLES`] lanes drawn uniformly over all `n`; one that
//! holds `lo` is uniform among the ties. If every try misses, it counts the
//! ties at `lo` in the blocks whose bound is `lo` and in the tail, draws one,
//! and finds it. A block at `lo` whose least counter is higher gets its bound
//! raised on the way; if no tie was found but a bound was raised, `lo` was
//! stale and the pick starts over (a few times). If no tie is found and no
//! bound could be raised, a block at `lo` owes its bound to a lane the pick may
//! not return (a draining worker, or one outside the request's candidates):
//! the caller scans flat.

use super::draw::{SAMPLES, draw_among, sample};
use super::kernel::Kernel;
use super::outcome::Least;
use crate::storage::summary::{SUMMARISED_LANES, Summary};
use crate::sync::LANE_PAD;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// How many times the pick starts over after raising stale bounds.
const PASSES: usize = 3;

/// The least-loaded pick over `counters` (each ORed with `excluded`'s entry,
/// when given), as [`least`](super::least) answers it, through `summary`; `None`
/// when the caller should scan flat (too few lanes, or no tie found without
/// raising a bound).
#[inline]
pub(crate) fn least_summarised(
    kernel: Kernel,
    summary: &Summary,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    mut draw: impl FnMut(u32) -> u32,
) -> Option<Least> {
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    if n < SUMMARISED_LANES {
        return None;
    }
    let width = summary.block_lanes();
    let blocks = (n - LANE_PAD) / width;
    if blocks == 0 {
        return None;
    }
    let l = Lanes {
        kernel,
        counters: &counters[..n],
        excluded: excluded.map(|e| &e[..n]),
        width,
        split: blocks * width,
    };
    let cells = summary.cells(blocks);
    for _ in 0..PASSES {
        let bound = kernel.min_ties(cells, None).min;
        let tail = l.tail_min_ties();
        let lo = bound.min(tail.min);
        if lo == u32::MAX {
            return None;
        }
        if let Some(index) = sample::<SAMPLES>(n, |i| l.value(i), lo, &mut draw) {
            return Some(Least::Found { index, min: lo });
        }
        // Count the ties at `lo`, raising stale bounds on the way.
        let mut ties = if tail.min == lo { tail.ties } else { 0 };
        let mut raised = false;
        if bound == lo {
            for b in AtLo::new(kernel, cells, lo) {
                let found = l.block_min_ties(b);
                if found.min == lo {
                    ties = ties.wrapping_add(found.ties);
                    continue;
                }
                let least = l.block_counter_min(b, found.min);
                if least > lo {
                    raised |= summary.raise(b, lo, least, || l.block_counter_min(b, u32::MAX));
                }
            }
        }
        if ties == 0 {
            if raised {
                continue;
            }
            return None;
        }
        return Some(l.find(cells, bound, lo, draw_among(ties, &mut draw)));
    }
    None
}

/// The lanes of one summarised pick.
struct Lanes<'a> {
    kernel: Kernel,
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    /// Lanes per block.
    width: usize,
    /// Where the tail starts (the end of the last summarised block).
    split: usize,
}

impl Lanes<'_> {
    /// The effective value of lane `i < n`.
    #[inline(always)]
    fn value(&self, i: usize) -> u32 {
        self.counters[i].load(Relaxed) | self.excluded.map_or(0, |e| e[i])
    }

    /// The lanes `start..end` as the kernel takes them.
    #[inline(always)]
    fn range(&self, start: usize, end: usize) -> (&[AtomicU32], Option<&[u32]>) {
        (&self.counters[start..end], self.excluded.map(|e| &e[start..end]))
    }

    fn block(&self, b: usize) -> (usize, usize) {
        (b * self.width, (b + 1) * self.width)
    }

    fn tail_min_ties(&self) -> super::MinTies {
        let (c, e) = self.range(self.split, self.counters.len());
        self.kernel.min_ties(c, e)
    }

    fn block_min_ties(&self, b: usize) -> super::MinTies {
        let (start, end) = self.block(b);
        let (c, e) = self.range(start, end);
        self.kernel.min_ties(c, e)
    }

    /// The least counter of block `b`, whose least effective value is
    /// `effective` (the same with no exclusion array: no second scan).
    fn block_counter_min(&self, b: usize, effective: u32) -> u32 {
        if self.excluded.is_none() && effective != u32::MAX {
            return effective;
        }
        let (start, end) = self.block(b);
        self.kernel.min_ties(&self.counters[start..end], None).min
    }

    /// Tie `k` at `lo`, in index order over the blocks whose bound is `lo`
    /// (when `bound` is `lo`) and then the tail; `Moved` if lanes moved and
    /// there are no longer that many.
    fn find(&self, cells: &[AtomicU32], bound: u32, lo: u32, mut k: u32) -> Least {
        if bound == lo {
            for b in AtLo::new(self.kernel, cells, lo) {
                let (start, end) = self.block(b);
                let (c, e) = self.range(start, end);
                match self.kernel.nth_tie(c, e, lo, k) {
                    Ok(i) => {
                        return Least::Found {
                            index: start + i,
                            min: lo,
                        };
                    }
                    Err(found) => k -= found.min(k),
                }
            }
        }
        let (c, e) = self.range(self.split, self.counters.len());
        match self.kernel.nth_tie(c, e, lo, k) {
            Ok(i) => Least::Found {
                index: self.split + i,
                min: lo,
            },
            Err(_) => Least::Moved,
        }
    }
}

/// The blocks whose bound is `lo`, in index order, found with the kernel.
struct AtLo<'a> {
    kernel: Kernel,
    cells: &'a [AtomicU32],
    lo: u32,
    next: usize,
}

impl<'a> AtLo<'a> {
    fn new(kernel: Kernel, cells: &'a [AtomicU32], lo: u32) -> Self {
        Self {
            kernel,
            cells,
            lo,
            next: 0,
        }
    }
}

impl Iterator for AtLo<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let rest = self.cells.get(self.next..)?;
        let at = self.kernel.nth_tie(rest, None, self.lo, 0).ok()?;
        let b = self.next + at;
        self.next = b + 1;
        Some(b)
    }
}
