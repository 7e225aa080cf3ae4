//! A backend checked against the CPU once, and the scans it runs.

use super::backend::Backend;
use super::credit::Credit;
use super::dispatch;
use super::draw::{self, Cut, FEW_LANES, SAMPLES, SMALL_LANES, draw_among, sample};
use super::outcome::{Drawn, FewAt, Least, MinTies};
use super::scalar;
use super::simd;
use super::vector::{Op, Vector};
use super::weighting::Weighting;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// A [`Backend`] this CPU runs: checked once when made, so that a scan through it
/// dispatches on the backend alone, with no feature test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Backend);

impl Kernel {
    /// The portable scan, which every CPU runs.
    pub(crate) const SCALAR: Kernel = Kernel(Backend::Scalar);

    /// `backend` if this CPU runs it, else scalar.
    #[inline]
    pub fn of(backend: Backend) -> Kernel {
        if dispatch::supports(backend) {
            Kernel(backend)
        } else {
            Kernel(Backend::Scalar)
        }
    }

    /// The kernel of [`Backend::detect`].
    pub fn detect() -> Kernel {
        Kernel::of(Backend::detect())
    }

    /// The backend that runs.
    #[inline]
    pub fn backend(self) -> Backend {
        self.0
    }

    /// Runs `op` on this kernel's backend.
    #[inline(always)]
    fn run<O: Op>(self, op: O) -> O::Out {
        // SAFETY: a `Kernel` holds only a backend `dispatch::supports` confirmed.
        unsafe { dispatch::run(self.0, op) }
    }

    /// See [`super::min_ties`]; `None` scans every lane.
    #[inline]
    pub(super) fn min_ties(self, counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
        self.run(MinTiesOp { counters, excluded })
    }

    /// The least of `counters` (`u32::MAX` for none): one pass, no tie count.
    #[inline(always)]
    pub(crate) fn least_of(self, counters: &[AtomicU32]) -> u32 {
        self.run(LeastOfOp(counters))
    }

    /// Where the counters equal to `target` lie, if at most
    /// [`FewAt::MAX`] do: one pass, which stops when more are found.
    #[inline]
    pub(crate) fn few_at(self, counters: &[AtomicU32], target: u32) -> FewAt {
        self.run(FewAtOp { counters, target })
    }

    /// How many lanes have the effective value `target`: one pass, no minimum.
    #[inline]
    pub(crate) fn count(self, counters: &[AtomicU32], excluded: Option<&[u32]>, target: u32) -> u32 {
        self.run(CountOp {
            counters,
            excluded,
            target,
        })
    }

    /// One lane drawn uniformly with `draw` among those at `target` in `blocks`
    /// (up to [`FewAt::MAX`]) of `cut`: `count` on each, one draw, `nth_tie` in the
    /// block holding the drawn lane, in one call to the backend (see
    /// [`Drawn`]).
    #[inline]
    pub(crate) fn draw_in_blocks(
        self,
        cut: Cut<'_>,
        blocks: &[u32],
        target: u32,
        draw: impl FnOnce(u32) -> u32,
    ) -> Drawn {
        self.run(DrawInBlocksOp {
            cut,
            blocks,
            target,
            draw,
        })
    }

    /// See [`super::nth_tie`]; `None` scans every lane.
    #[inline]
    pub(crate) fn nth_tie(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        min: u32,
        k: u32,
    ) -> Result<usize, u32> {
        self.run(NthTieOp {
            counters,
            excluded,
            min,
            k,
        })
    }

    /// See [`super::least`].
    #[inline(always)]
    pub(super) fn least(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        if lanes(counters, excluded) <= FEW_LANES {
            return scalar::least_few(counters, excluded, draw);
        }
        self.run(LeastOp {
            counters,
            excluded,
            draw,
        })
    }

    /// See [`super::least_weighted`].
    #[inline(always)]
    pub(super) fn least_weighted(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        weights: Weighting<'_>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        if lanes(counters, excluded).min(weights.lanes()) <= FEW_LANES {
            return scalar::least_few_weighted(counters, excluded, weights, draw);
        }
        self.run(LeastWeightedOp {
            counters,
            excluded,
            weights,
            draw,
        })
    }
}

impl Kernel {
    /// See [`super::least_credited`].
    #[inline(always)]
    pub(super) fn least_credited(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        credit: Credit<'_>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        if lanes(counters, excluded).min(credit.lanes()) <= FEW_LANES {
            return scalar::least_few_credited(counters, excluded, credit, draw);
        }
        self.run(LeastCreditedOp {
            counters,
            excluded,
            credit,
            draw,
        })
    }
}

/// [`super::least_credited`] over more than [`FEW_LANES`] lanes.
struct LeastCreditedOp<'a, D> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    credit: Credit<'a>,
    draw: D,
}

impl<D: FnMut(u32) -> u32> Op for LeastCreditedOp<'_, D> {
    type Out = Least;

    /// [`LeastOp::scalar`] over the cost keys.
    #[inline(always)]
    fn scalar(self) -> Least {
        let LeastCreditedOp {
            counters,
            excluded,
            credit: c,
            draw,
        } = self;
        let n = lanes(counters, excluded).min(c.lanes());
        if n <= SMALL_LANES {
            return scalar::least_small_credited(counters, excluded, c, draw);
        }
        let value = |i: usize| {
            let x = counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
            c.key_at(i, x)
        };
        least_long(
            n,
            scalar::min_ties_credited(counters, excluded, c),
            value,
            |min, k| scalar::nth_tie_credited(counters, excluded, c, min, k),
            draw,
        )
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Least {
        simd::least_credited(v, self.counters, self.excluded, self.credit, self.draw)
    }
}

/// The scans of the weighted summarised pick (`bounds::least_scored`): over one block's
/// lanes, their scores under a [`Weighting`].
impl Kernel {
    /// The least score of every lane of `counters` (no exclusion: the bound of
    /// a block is over its raw counters).
    #[inline]
    pub(crate) fn min_scored(self, counters: &[AtomicU32], w: Weighting<'_>) -> u32 {
        self.run(ScoredOp {
            counters,
            excluded: None,
            w,
            count: None,
        })
    }

    /// How many lanes score `target`.
    #[inline]
    pub(crate) fn count_scored(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        w: Weighting<'_>,
        target: u32,
    ) -> u32 {
        self.run(ScoredOp {
            counters,
            excluded,
            w,
            count: Some(target),
        })
    }

    /// The `k`-th lane scoring `target`, or `Err` with how many do.
    #[inline]
    pub(crate) fn nth_scored(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        w: Weighting<'_>,
        target: u32,
        k: u32,
    ) -> Result<usize, u32> {
        self.run(NthScoredOp {
            counters,
            excluded,
            w,
            target,
            k,
        })
    }
}

/// The least score of the lanes, or with `count`, how many score that.
struct ScoredOp<'a> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    w: Weighting<'a>,
    count: Option<u32>,
}

impl Op for ScoredOp<'_> {
    type Out = u32;

    #[inline(always)]
    fn scalar(self) -> u32 {
        let ScoredOp {
            counters,
            excluded,
            w,
            count,
        } = self;
        match count {
            None => scalar::min_ties_weighted(counters, excluded, w).min,
            Some(target) => scalar::count_weighted(counters, excluded, w, target),
        }
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> u32 {
        let ScoredOp {
            counters,
            excluded,
            w,
            count,
        } = self;
        match count {
            None => simd::min_scored(v, counters, w),
            Some(target) => simd::count_scored(v, counters, excluded, w, target),
        }
    }
}

struct NthScoredOp<'a> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    w: Weighting<'a>,
    target: u32,
    k: u32,
}

impl Op for NthScoredOp<'_> {
    type Out = Result<usize, u32>;

    #[inline(always)]
    fn scalar(self) -> Self::Out {
        scalar::nth_tie_weighted(self.counters, self.excluded, self.w, self.target, self.k)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Self::Out {
        simd::nth_scored(v, self.counters, self.excluded, self.w, self.target, self.k)
    }
}

/// How many lanes a scan of `counters` with `excluded` has.
#[inline(always)]
fn lanes(counters: &[AtomicU32], excluded: Option<&[u32]>) -> usize {
    excluded.map_or(counters.len(), |e| e.len().min(counters.len()))
}

impl From<Backend> for Kernel {
    /// [`Kernel::of`].
    #[inline]
    fn from(backend: Backend) -> Kernel {
        Kernel::of(backend)
    }
}

struct MinTiesOp<'a> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
}

impl Op for MinTiesOp<'_> {
    type Out = MinTies;

    #[inline(always)]
    fn scalar(self) -> MinTies {
        scalar::min_ties(self.counters, self.excluded)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> MinTies {
        simd::min_ties(v, self.counters, self.excluded)
    }
}

/// [`Kernel::least_of`] as a kernel operation.
struct LeastOfOp<'a>(&'a [AtomicU32]);

impl Op for LeastOfOp<'_> {
    type Out = u32;

    #[inline(always)]
    fn scalar(self) -> u32 {
        scalar::min_ties(self.0, None).min
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> u32 {
        simd::min(&super::vector::Lanes::all(v, self.0))
    }
}

struct FewAtOp<'a> {
    counters: &'a [AtomicU32],
    target: u32,
}

impl Op for FewAtOp<'_> {
    type Out = FewAt;

    #[inline(always)]
    fn scalar(self) -> FewAt {
        scalar::few_at(self.counters, self.target)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> FewAt {
        simd::few_at(v, self.counters, self.target)
    }
}

struct CountOp<'a> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    target: u32,
}

impl Op for CountOp<'_> {
    type Out = u32;

    #[inline(always)]
    fn scalar(self) -> u32 {
        scalar::count(self.counters, self.excluded, self.target)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> u32 {
        simd::count_of(v, self.counters, self.excluded, self.target)
    }
}

struct NthTieOp<'a> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    min: u32,
    k: u32,
}

impl Op for NthTieOp<'_> {
    type Out = Result<usize, u32>;

    #[inline(always)]
    fn scalar(self) -> Self::Out {
        scalar::nth_tie(self.counters, self.excluded, self.min, self.k)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Self::Out {
        simd::nth_tie(v, self.counters, self.excluded, self.min, self.k)
    }
}

struct DrawInBlocksOp<'a, D> {
    cut: Cut<'a>,
    blocks: &'a [u32],
    target: u32,
    draw: D,
}

impl<D: FnOnce(u32) -> u32> Op for DrawInBlocksOp<'_, D> {
    type Out = Drawn;

    #[inline(always)]
    fn scalar(self) -> Drawn {
        let DrawInBlocksOp {
            cut,
            blocks,
            target,
            draw,
        } = self;
        draw::in_blocks(
            blocks,
            |b| {
                let (_, c, e) = cut.block(b);
                scalar::count(c, e, target)
            },
            |b, k| {
                let (start, c, e) = cut.block(b);
                scalar::nth_tie(c, e, target, k).map(|i| start + i)
            },
            draw,
        )
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Drawn {
        simd::draw_in_blocks(v, self.cut, self.blocks, self.target, self.draw)
    }
}

/// [`super::least`] over more than [`FEW_LANES`] lanes.
struct LeastOp<'a, D> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    draw: D,
}

impl<D: FnMut(u32) -> u32> Op for LeastOp<'_, D> {
    type Out = Least;

    /// The path is decided by the length alone, as in `simd::least`: one pass and one
    /// try up to `SMALL_LANES` lanes, else up to `SAMPLES` tries, then the count.
    /// Another path would make other draws than the vector backends, and so pick
    /// another lane for the same draws.
    #[inline(always)]
    fn scalar(self) -> Least {
        let LeastOp {
            counters,
            excluded,
            draw,
        } = self;
        let n = lanes(counters, excluded);
        if n <= SMALL_LANES {
            return scalar::least_small(counters, excluded, draw);
        }
        let value = |i: usize| counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
        least_long(
            n,
            scalar::min_ties(counters, excluded),
            value,
            |min, k| scalar::nth_tie(counters, excluded, min, k),
            draw,
        )
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Least {
        simd::least(v, self.counters, self.excluded, self.draw)
    }
}

/// The scalar [`super::least`] over `n > SMALL_LANES` lanes of effective values
/// `value`, whose minimum and ties are `found` and whose `k`-th lane at `min` is
/// `nth(min, k)`: up to `SAMPLES` tries, then one draw among the ties. The path of
/// `simd::least_in`, draw for draw, for the plain and the weighted scan alike.
#[inline(always)]
fn least_long(
    n: usize,
    found: MinTies,
    value: impl Fn(usize) -> u32,
    nth: impl FnOnce(u32, u32) -> Result<usize, u32>,
    mut draw: impl FnMut(u32) -> u32,
) -> Least {
    if found.min == u32::MAX {
        return Least::Saturated;
    }
    if let Some(index) = sample::<SAMPLES>(n, value, found.min, &mut draw) {
        return Least::Found {
            index,
            min: found.min,
        };
    }
    let k = match found.ties {
        0 => return Least::Moved,
        ties => draw_among(ties, &mut draw),
    };
    match nth(found.min, k) {
        Ok(index) => Least::Found {
            index,
            min: found.min,
        },
        Err(_) => Least::Moved,
    }
}

/// [`super::least_weighted`] over more than [`FEW_LANES`] lanes.
struct LeastWeightedOp<'a, D> {
    counters: &'a [AtomicU32],
    excluded: Option<&'a [u32]>,
    weights: Weighting<'a>,
    draw: D,
}

impl<D: FnMut(u32) -> u32> Op for LeastWeightedOp<'_, D> {
    type Out = Least;

    /// [`LeastOp::scalar`] over the scores.
    #[inline(always)]
    fn scalar(self) -> Least {
        let LeastWeightedOp {
            counters,
            excluded,
            weights: w,
            draw,
        } = self;
        let n = lanes(counters, excluded).min(w.lanes());
        if n <= SMALL_LANES {
            return scalar::least_small_weighted(counters, excluded, w, draw);
        }
        let value = |i: usize| {
            let x = counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
            w.score_at(i, x)
        };
        least_long(
            n,
            scalar::min_ties_weighted(counters, excluded, w),
            value,
            |min, k| scalar::nth_tie_weighted(counters, excluded, w, min, k),
            draw,
        )
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Least {
        simd::least_weighted(v, self.counters, self.excluded, self.weights, self.draw)
    }
}
