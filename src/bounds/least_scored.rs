//! The weighted summarised least-loaded pick: the weighted scan's answer for
//! a request of weight 1, reading the bounds on scores (`bounds::scores`) and
//! only the blocks at the least of them. The argument is `bounds::least`'s,
//! over scores; it draws only among candidates whose factor is at most the
//! least bound. It answers `None` (the caller scans flat) when the bounds
//! cannot settle the pick. The walk, step by step:
//! [`docs::internal::bounds`](crate::docs::internal::bounds), "The weighted summarised pick".

use super::loads::SUMMARISED_LANES;
use super::scores::{self, Scores, Tagged};
use super::tied::Tied;
use crate::rng::Rng;
use crate::scan::{Kernel, Weighting, draw_among, score};
use crate::sync::atomic::Ordering::{Acquire, Relaxed};
use crate::sync::atomic::{AtomicU32, AtomicU64};

/// How many times the pick starts over after raising stale bounds.
const PASSES: usize = 3;

/// Tries per batch, and batches, before the pick counts the ties: with a
/// fraction `p` of the lanes at `lo`, all 16 miss with probability
/// `(1 - p)^16`: 1% at a quarter (an idle pool of capacities 4:2:1:1, where
/// the capacity-4 workers tie).
const TRIES: usize = 8;
const BATCHES: usize = 2;

/// How many blocks at `lo` the pick counts ties in; beyond, the flat scan.
const MAX_BLOCKS: usize = 16;

/// What the pick scores: the factors of version `version`, whose least score
/// below `exact_below` is exact (see `weights::scale`).
#[derive(Clone, Copy)]
pub(crate) struct Scored<'a> {
    /// Scores for a request of weight 1: `add` is 1.
    pub(crate) weighting: Weighting<'a>,
    pub(crate) exact_below: u32,
    pub(crate) version: u32,
    /// The candidates' lanes by factor, ascending.
    pub(crate) by_factor: &'a [u32],
    /// Per distinct factor, ascending: the factor and where its lanes end in
    /// `by_factor`.
    pub(crate) classes: &'a [(u32, u32)],
}

impl Scored<'_> {
    /// The candidates' lanes whose factor is at most `lo`: a lane of factor
    /// `f` scores `(load + 1) · f >= f`, so every lane that can score `lo` is
    /// among them. In an idle pool that is the lanes of the least factor (the
    /// largest capacity) alone, which all score `lo`.
    #[inline(always)]
    fn up_to(&self, lo: u32) -> &[u32] {
        // A linear walk: there are few factors, and in an idle pool the
        // first one is the answer.
        let mut end = 0;
        for &(f, e) in self.classes {
            if f > lo {
                break;
            }
            end = e as usize;
        }
        self.by_factor.get(..end).unwrap_or(self.by_factor)
    }
}

/// The weighted least-loaded pick over lanes `0..n` of `all` (each ORed with
/// `excluded`'s entry, when given; `excluded` and the factors have at least
/// `n`) through `scores`, the bounds of `all`: a lane at the least
/// score and its load, ties drawn uniformly with `rng`. `None` when the caller
/// should scan flat: fewer than [`SUMMARISED_LANES`] lanes, or no settled
/// answer (see the module's text).
///
/// Inlined into its one caller, itself out of line; its own fast path, the
/// bounds and one try, keeps a small frame: the rest is out of line again
/// (`View::settle_all`).
#[inline(always)]
pub(crate) fn least_scored(
    kernel: Kernel,
    scores: &Scores,
    all: &[AtomicU32],
    n: usize,
    excluded: Option<&[u32]>,
    scored: Scored<'_>,
    rng: &mut Rng,
) -> Option<(u32, u32)> {
    let factors = scored.weighting.scale.len();
    if n < SUMMARISED_LANES
        || n > factors
        || excluded.is_some_and(|e| e.len() < n)
        || scored.weighting.add != 1
    {
        return None;
    }
    let width = scores.block_lanes();
    let blocks = n.div_ceil(width);
    // Every lane with a factor in a block the pick reads: the bounds are over
    // these (a block may reach past `n`).
    let all = &all[..(blocks * width).min(factors).min(all.len())];
    let excluded = excluded.map(|e| &e[..n]);
    // One try first, at the floor (at most every bound): in an idle or
    // balanced pool it is the pick, without a look at the bounds.
    let floor = scores.floor();
    let at = floor.bound(scored.version);
    if at > 0 && at < scored.exact_below {
        let from = scored.up_to(at);
        if let Some(&i) = from.get(draw_below(rng.next_u64(), from.len()))
            && let Some(load) = load_scoring(all, excluded, scored.weighting, i as usize, at)
        {
            return Some((i, load));
        }
    }
    let view = View {
        kernel,
        all,
        n,
        excluded,
        width,
        scored,
    };
    // The floor bounds every block of the version's lanes (the same for all
    // its picks), which may be more than this pick's.
    view.settle_all(scores, blocks, factors.div_ceil(width), floor, rng)
}

/// A draw below `m` from the high half of `x`: within 2^-32 of uniform
/// (relative), as `Rng::below`.
#[inline(always)]
fn draw_below(x: u64, m: usize) -> usize {
    (((x >> 32) * m as u64) >> 32) as usize
}

/// Lane `i`'s load, if it scores `lo` under `w` (with `excluded`'s entry).
#[inline(always)]
fn load_scoring(
    all: &[AtomicU32],
    excluded: Option<&[u32]>,
    w: Weighting<'_>,
    i: usize,
    lo: u32,
) -> Option<u32> {
    let load = all.get(i)?.load(Relaxed);
    let x = load | excluded.map_or(Some(0), |e| e.get(i).copied())?;
    (score(x, *w.scale.get(i)?, w.limit, w.add) == lo).then_some(load)
}

/// The least bound over `cells` under `version` (0 if one is unknown).
#[inline(always)]
fn least_bound(cells: &[AtomicU64], version: u32) -> u32 {
    let mut lo = u32::MAX;
    for cell in cells {
        lo = lo.min(scores::read(cell, Relaxed).bound(version));
    }
    lo
}

/// Which of `lanes` score `lo` (bit `k` for `lanes[k]`), where `lane(i)` is
/// lane `i`'s effective value and factor: all read, no branch per lane. The
/// score in 64 bits, `(x + 1) · factor`, exact for any `x`, so no lane above
/// the clamp (nor an excluded one, at `u32::MAX`) can meet `lo` by wrapping.
#[inline(always)]
fn hits(lanes: [usize; TRIES], lo: u32, lane: impl Fn(usize) -> Option<(u32, u32)>) -> u32 {
    let mut hits = 0;
    for (k, &i) in lanes.iter().enumerate() {
        if let Some((x, factor)) = lane(i) {
            let score = (u64::from(x) + 1) * u64::from(factor);
            hits |= u32::from(score == u64::from(lo)) << k;
        }
    }
    hits
}

/// What a pick's look at the blocks at `lo` came to.
enum Settled {
    /// A tie at `lo`: its lane and load.
    Found((u32, u32)),
    /// No tie, but a stale bound was raised, or the lanes moved: read the
    /// bounds again.
    Again,
    /// No answer here: the caller scans flat.
    Flat,
}

/// The lanes of one pick.
struct View<'a> {
    kernel: Kernel,
    /// The counters of every lane with a factor in a block the pick reads.
    all: &'a [AtomicU32],
    /// The lanes the pick may return are `0..n`.
    n: usize,
    excluded: Option<&'a [u32]>,
    /// Lanes per block.
    width: usize,
    scored: Scored<'a>,
}

impl View<'_> {
    /// The pick after its try at the floor missed (or was not made: the
    /// floor, `floor` as read, was unknown or not exact): reads the bounds of
    /// its `blocks` for their least `lo`, raises the floor if it was below the
    /// least over all `floored` blocks, then tries more lanes at `lo` and
    /// looks at the blocks there, over up to [`PASSES`] readings.
    #[inline(never)]
    fn settle_all(
        &self,
        scores: &Scores,
        blocks: usize,
        floored: usize,
        mut floor: Tagged,
        rng: &mut Rng,
    ) -> Option<(u32, u32)> {
        let version = self.scored.version;
        let (cells, all_cells) = (scores.cells(blocks), scores.cells(floored.max(blocks)));
        for pass in 0..PASSES {
            if pass > 0 {
                floor = scores.floor();
            }
            let lo = least_bound(cells, version);
            let least = match all_cells.get(cells.len()..) {
                Some(more) if !more.is_empty() => lo.min(least_bound(more, version)),
                _ => lo,
            };
            if least > floor.bound(version) {
                scores.raise_floor(floor, version, least, || least_bound(all_cells, version));
            }
            if lo >= self.scored.exact_below {
                return None;
            }
            if lo > 0
                && let Some(found) = self.try_at(lo, rng)
            {
                return Some(found);
            }
            match self.settle(scores, cells, lo, &mut |m| rng.below(m)) {
                Settled::Found(found) => return Some(found),
                Settled::Again => {}
                Settled::Flat => return None,
            }
        }
        None
    }

    /// Up to [`BATCHES`] batches of [`TRIES`] uniform tries over the
    /// candidates whose factor is at most `lo` (every lane that can score
    /// `lo`) for one scoring `lo`: its lane and load. A batch draws its lanes two
    /// to a 64-bit draw and reads them all without a branch (the loads
    /// overlap, and no mispredicted branch follows each), then takes the
    /// first that scores `lo`: each accepted try is uniform among the ties,
    /// as one at a time.
    #[inline(always)]
    fn try_at(&self, lo: u32, rng: &mut Rng) -> Option<(u32, u32)> {
        let w = self.scored.weighting;
        let (all, scale) = (&self.all[..self.n], &w.scale[..self.n]);
        let from = self.scored.up_to(lo);
        if from.is_empty() {
            return None;
        }
        for _ in 0..BATCHES {
            let draws: [u64; TRIES / 2] = core::array::from_fn(|_| rng.next_u64());
            // Each within 2^-32 of uniform (relative), as `Rng::below`.
            let lanes: [usize; TRIES] = core::array::from_fn(|k| {
                let x = draws[k / 2] << (32 * (k % 2));
                from.get(draw_below(x, from.len()))
                    .map_or(usize::MAX, |&i| i as usize)
            });
            let hits = match self.excluded {
                None => hits(lanes, lo, |i| Some((all.get(i)?.load(Relaxed), *scale.get(i)?))),
                Some(e) => hits(lanes, lo, |i| {
                    Some((all.get(i)?.load(Relaxed) | e.get(i)?, *scale.get(i)?))
                }),
            };
            if hits != 0 {
                // Read again for the booking's compare-and-swap, and checked.
                let i = lanes[hits.trailing_zeros() as usize];
                if let Some(load) = self.load_scoring(i, lo) {
                    return Some((i as u32, load));
                }
            }
        }
        None
    }

    /// Lane `i`'s load, if it scores `lo`.
    fn load_scoring(&self, i: usize, lo: u32) -> Option<u32> {
        load_scoring(self.all, self.excluded, self.scored.weighting, i, lo)
    }

    /// Block `b`'s lanes up to lane `end`: the first, their counters, and
    /// the weighting with their factors.
    fn block(&self, b: usize, end: usize) -> (usize, &[AtomicU32], Weighting<'_>) {
        let start = b * self.width;
        let end = (start + self.width).min(end);
        let w = self.scored.weighting;
        let block = Weighting {
            scale: &w.scale[start..end],
            ..w
        };
        (start, &self.all[start..end], block)
    }

    /// Block `b`'s lanes that the pick may return: the first, their counters,
    /// exclusions and factors.
    fn pickable(&self, b: usize) -> (usize, &[AtomicU32], Option<&[u32]>, Weighting<'_>) {
        let (start, c, w) = self.block(b, self.n);
        (start, c, self.excluded.map(|e| &e[start..start + c.len()]), w)
    }

    /// Block `b`'s least score over every lane with a factor (also past `n`).
    fn block_min(&self, b: usize) -> u32 {
        let (_, c, w) = self.block(b, self.all.len());
        self.kernel.min_scored(c, w)
    }

    /// Out of line, after the tries missed: counts the ties at `lo` in the
    /// blocks whose bound is `lo` or unknown, raising the bound of those that
    /// hold none; draws one tie if any.
    #[inline(never)]
    fn settle(
        &self,
        scores: &Scores,
        cells: &[AtomicU64],
        lo: u32,
        draw: &mut impl FnMut(u32) -> u32,
    ) -> Settled {
        let version = self.scored.version;
        let mut tied = Tied::<MAX_BLOCKS>::default();
        let (mut ties, mut raised) = (0u32, false);
        for (b, cell) in cells.iter().enumerate() {
            // Acquire: if the bound was written by a release's lowering, the
            // block scans below see that release's decrement, so a raise
            // cannot be based on the counter it lowered from.
            let seen = scores::read(cell, Acquire);
            let bound = seen.bound(version);
            if bound > lo {
                continue;
            }
            // A block at `lo` holds ties, or its bound is stale: raise it.
            let (_, c, e, w) = self.pickable(b);
            let found = if bound == lo && lo > 0 {
                self.kernel.count_scored(c, e, w, lo)
            } else {
                0
            };
            if found > 0 {
                if tied.is_full() {
                    return if raised { Settled::Again } else { Settled::Flat };
                }
                tied.push(b, found);
                ties = ties.wrapping_add(found);
                continue;
            }
            raised |= self.raise(scores, b, seen, bound);
        }
        if ties == 0 {
            return if raised { Settled::Again } else { Settled::Flat };
        }
        let mut k = draw_among(ties, &mut *draw);
        for &(b, found) in tied.blocks().unwrap_or_default() {
            if k >= found {
                k -= found;
                continue;
            }
            let (start, c, e, w) = self.pickable(b as usize);
            // The booking's compare-and-swap needs the load behind the score:
            // read again, and checked (else the lanes moved since they were
            // counted).
            if let Ok(i) = self.kernel.nth_scored(c, e, w, lo, k)
                && let Some(load) = self.load_scoring(start + i, lo)
            {
                return Settled::Found(((start + i) as u32, load));
            }
            return Settled::Again;
        }
        Settled::Again
    }

    /// Raises block `b`'s bound from `seen` (bounding `bound`) if its least
    /// score is higher; whether it was raised.
    fn raise(&self, scores: &Scores, b: usize, seen: Tagged, bound: u32) -> bool {
        let least = self.block_min(b);
        least > bound && scores.raise(b, seen, self.scored.version, least, || self.block_min(b))
    }
}
