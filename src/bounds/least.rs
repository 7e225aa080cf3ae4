//! The summarised least-loaded pick: the flat scan's answer, reading the
//! per-block lower bounds (`bounds::loads`) and only the blocks at the least
//! of them. Every lane is at least its block's bound, so every lane at the
//! global minimum lies in a block at the least bound. An idle or balanced
//! pool's pick is one try at the floor; otherwise it reads the bounds,
//! raises stale ones, and counts and draws the ties. `None` sends the caller
//! to the flat scan. The walk, step by step:
//! [`docs::internal::bounds`](crate::docs::internal::bounds), "The summarised pick".

use super::loads::{Floor, LoadBounds, SUMMARISED_LANES};
use super::tied::Tied;
use crate::rng::Rng;
use crate::scan::{Cut, Kernel, Least, SAMPLES, draw_among, sample};
use crate::sync::atomic::Ordering::{Acquire, Relaxed};
use crate::sync::atomic::{AtomicU32, fence};

/// How many times the pick starts over after raising stale bounds.
const PASSES: usize = 3;

/// The least-loaded pick over `counters` (each ORed with `excluded`'s entry,
/// when given) through `bounds`, the bounds of `all` (of which `counters` is
/// the start): a lane at the minimum and the minimum, ties drawn uniformly
/// with `rng`. `None` when the caller should scan flat: fewer than
/// [`SUMMARISED_LANES`] lanes, or no settled answer (lanes kept moving, or no
/// tie found without raising a bound). A `masked` pick (an eligibility
/// mask, not only draining workers, narrows `excluded`) stops before it
/// would count the ties over many blocks: the bounds are over every lane, so
/// where the mask left out the lanes at the least bound, counting would read
/// them all and find none; the caller's flat scan answers at once instead.
///
/// Out of line, with the retries: a pool without a bounds, or a small one,
/// pays only its caller's test.
#[inline(never)]
pub(crate) fn least_summarised(
    kernel: Kernel,
    bounds: &LoadBounds,
    all: &[AtomicU32],
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    masked: bool,
    rng: &mut Rng,
) -> Option<(u32, u32)> {
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    if n < SUMMARISED_LANES {
        return None;
    }
    for _ in 0..4 {
        match pick(kernel, bounds, all, n, excluded, masked, |m| rng.below(m))? {
            Least::Found { index, min } => return Some((index as u32, min)),
            Least::Moved => {}
            _ => return None,
        }
    }
    None
}

/// The summarised pick over `n >= SUMMARISED_LANES` lanes; `None` when
/// the caller should scan flat (no tie found without raising a bound).
#[inline(always)]
fn pick(
    kernel: Kernel,
    bounds: &LoadBounds,
    counters: &[AtomicU32],
    n: usize,
    excluded: Option<&[u32]>,
    masked: bool,
    mut draw: impl FnMut(u32) -> u32,
) -> Option<Least> {
    let width = bounds.block_lanes();
    let blocks = n.div_ceil(width);
    let l = View {
        kernel,
        all: &counters[..(blocks * width).min(counters.len())],
        n,
        excluded: excluded.map(|e| &e[..n]),
        width,
    };
    let cells = bounds.cells(blocks);
    // One try first, at the floor (at most every counter it covers): in an
    // idle or balanced pool it lands on a tie without a look at the bounds.
    let floor = bounds.floor();
    if floor.covers(blocks)
        && let Some(index) = l.try_at(floor.value(), &mut draw)
    {
        return Some(Least::Found {
            index,
            min: floor.value(),
        });
    }
    l.settle(bounds, cells, floor, masked, draw)
}

impl View<'_> {
    /// One uniform try over the lanes for one holding `lo` (none at
    /// `u32::MAX`, which marks lanes no pick may return).
    #[inline(always)]
    fn try_at(&self, lo: u32, draw: &mut impl FnMut(u32) -> u32) -> Option<usize> {
        if lo == u32::MAX {
            return None;
        }
        sample::<1>(self.n, |i| self.value(i), lo, draw)
    }

    /// The rest of the pick after the try at the floor missed (or was not
    /// made: the floor did not cover the pick's blocks): out of line, so that
    /// the path of an idle or balanced pool (one load of the floor, one try)
    /// keeps a small frame. Reads the bounds for `lo`, their least, and raises
    /// the floor to it (over the pick's blocks) if it was below or did not
    /// cover them.
    #[inline(never)]
    fn settle(
        &self,
        bounds: &LoadBounds,
        cells: &[AtomicU32],
        floor: Floor,
        masked: bool,
        mut draw: impl FnMut(u32) -> u32,
    ) -> Option<Least> {
        let (l, kernel, n, blocks) = (self, self.kernel, self.n, cells.len());
        let tried = floor.covers(blocks).then(|| floor.value());
        for pass in 0..PASSES {
            let lo = kernel.least_of(cells);
            if lo == u32::MAX {
                return None;
            }
            let seen = if pass == 0 { floor } else { bounds.floor() };
            if lo > seen.value() || !seen.covers(blocks) {
                bounds.raise_floor(seen, lo, blocks, || kernel.least_of(cells));
            }
            // A try at `lo`, unless the one at the floor was that.
            if (pass > 0 || tried != Some(lo))
                && let Some(index) = l.try_at(lo, &mut draw)
            {
                return Some(Least::Found { index, min: lo });
            }
            // The blocks at `lo`, while there are few (one pass over the bounds).
            // More tries only if they are many (more than fit) or an eighth of
            // the blocks or more: then the ties may be dense, as the flat scan
            // finds them. With few blocks at `lo` among many the ties are few,
            // and counting them there costs less than tries that miss (each a
            // load anywhere in the array).
            let at = kernel.few_at(cells, lo);
            let few = at.few();
            if few.is_none_or(|f| 8 * f.len() >= blocks)
                && let Some(index) = sample::<{ SAMPLES - 1 }>(n, |i| l.value(i), lo, &mut draw)
            {
                return Some(Least::Found { index, min: lo });
            }
            // Count the ties at `lo`, raising stale bounds on the way. Acquire:
            // if `lo` was written by a release's lowering, the block scans below
            // see that release's decrement, so a raise from `lo` cannot be based
            // on the counter it lowered from.
            fence(Acquire);
            if let Some(blocks) = few {
                // Few blocks: counted, drawn among and searched in one call.
                let drawn = kernel.draw_in_blocks(l.cut(), blocks, lo, &mut draw);
                let mut raised = false;
                for (j, &b) in blocks.iter().enumerate() {
                    if drawn.empty >> j & 1 == 1 {
                        raised |= l.raise_stale(bounds, b as usize, lo);
                    }
                }
                match drawn.lane {
                    Ok(index) => return Some(Least::Found { index, min: lo }),
                    Err(0) if raised => continue,
                    Err(0) => return None,
                    Err(_) => return Some(Least::Moved),
                }
            }
            if masked {
                // Ties the mask admits may be sparse among those at `lo`:
                // more tries, each uniform among them, before the flat scan.
                return sample::<{ 3 * SAMPLES }>(n, |i| l.value(i), lo, &mut draw)
                    .map(|index| Least::Found { index, min: lo });
            }
            let Counted { ties, raised, tied } = l.count(bounds, AtLo::new(kernel, cells, lo), lo);
            if ties == 0 {
                if raised {
                    continue;
                }
                return None;
            }
            let k = draw_among(ties, &mut draw);
            return Some(match tied.blocks() {
                Some(blocks) => l.find(blocks.iter().map(|&(b, ties)| (b as usize, Some(ties))), lo, k),
                None => l.find(AtLo::new(kernel, cells, lo).map(|b| (b, None)), lo, k),
            });
        }
        None
    }
}

/// The lanes of one summarised pick.
struct View<'a> {
    kernel: Kernel,
    /// The counters of every lane in a block the pick reads.
    all: &'a [AtomicU32],
    /// The lanes the pick may return are `0..n`.
    n: usize,
    excluded: Option<&'a [u32]>,
    /// Lanes per block.
    width: usize,
}

impl View<'_> {
    /// The effective value of lane `i < n`.
    #[inline(always)]
    fn value(&self, i: usize) -> u32 {
        self.all[i].load(Relaxed) | self.excluded.map_or(0, |e| e[i])
    }

    /// The lanes that the pick may return, in blocks.
    #[inline(always)]
    fn cut(&self) -> Cut<'_> {
        Cut {
            counters: &self.all[..self.n],
            excluded: self.excluded,
            width: self.width,
        }
    }

    /// How many lanes of block `b` the pick may return hold the effective
    /// value `lo`: one pass. Every lane is at least its block's bound, so at
    /// least `lo`: the count alone tells whether the block's least is `lo`.
    fn ties_at(&self, b: usize, lo: u32) -> u32 {
        let (_, c, e) = self.cut().block(b);
        self.kernel.count(c, e, lo)
    }

    /// The least counter of block `b`: every lane of it, also past `n`.
    fn block_counter_min(&self, b: usize) -> u32 {
        let (start, end) = (b * self.width, ((b + 1) * self.width).min(self.all.len()));
        self.kernel.least_of(&self.all[start..end])
    }

    /// The ties at `lo` in `blocks` (those whose bound is `lo`), raising the
    /// bound of each that holds none and whose least counter is higher.
    fn count(&self, bounds: &LoadBounds, blocks: impl Iterator<Item = usize>, lo: u32) -> Counted {
        let mut counted = Counted::default();
        for b in blocks {
            let ties = self.ties_at(b, lo);
            if ties > 0 {
                counted.ties = counted.ties.wrapping_add(ties);
                counted.tied.push(b, ties);
                continue;
            }
            counted.raised |= self.raise_stale(bounds, b, lo);
        }
        counted
    }

    /// Raises block `b`'s bound from `lo` if its least counter is higher
    /// (a block at `lo` that holds no tie); whether it was raised.
    fn raise_stale(&self, bounds: &LoadBounds, b: usize, lo: u32) -> bool {
        let least = self.block_counter_min(b);
        least > lo && bounds.raise(b, lo, least, || self.block_counter_min(b))
    }

    /// Tie `k` at `lo`, in index order over `blocks` (those holding the ties
    /// counted, each with how many it held when counted, if known); `Moved`
    /// if lanes moved and there are no longer that many.
    fn find(&self, blocks: impl Iterator<Item = (usize, Option<u32>)>, lo: u32, mut k: u32) -> Least {
        for (b, ties) in blocks {
            if let Some(ties) = ties
                && k >= ties
            {
                // Not in this block: skip it unread.
                k -= ties;
                continue;
            }
            let (start, c, e) = self.cut().block(b);
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
        Least::Moved
    }
}

/// What [`View::count`] found.
#[derive(Default)]
struct Counted {
    /// Lanes at `lo`.
    ties: u32,
    /// Whether a bound was raised.
    raised: bool,
    /// The blocks holding them.
    tied: Tied<8>,
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
