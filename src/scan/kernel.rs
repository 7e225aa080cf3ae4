//! A backend checked against the CPU once, and the scans it runs.

use super::backend::Backend;
use super::dispatch;
use super::draw::{self, Cut, FEW_LANES, SAMPLES, SMALL_LANES, draw_among, sample};
use super::keys::LaneKeys;
use super::outcome::{Drawn, FewAt, Least, MinTies, Range};
use super::scalar;
use super::simd;
use super::vector::{Op, Vector};
use super::weighting::Weighting;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// A kernel operation: a struct of its arguments, and its two bodies, the
/// scalar specification and the vector algorithm over any backend's
/// primitives (`Op`), each always inlined into the backend's entry.
macro_rules! op {
    (
        $(#[$sdoc:meta])*
        $name:ident $(<$($d:ident: $bound:path),+>)? { $($field:ident: $ty:ty),* $(,)? } -> $out:ty;
        $(#[$doc:meta])*
        scalar($s:ident) $scalar:block
        vector($vs:ident, $v:ident) $vector:block
    ) => {
        $(#[$sdoc])*
        struct $name<'a $($(, $d)+)?> {
            $($field: $ty),*
        }

        impl<$($($d: $bound),+)?> Op for $name<'_ $($(, $d)+)?> {
            type Out = $out;

            $(#[$doc])*
            #[inline(always)]
            fn scalar(self) -> $out {
                let $s = self;
                $scalar
            }

            #[inline(always)]
            fn vector<V: Vector>(self, $v: V) -> $out {
                let $vs = self;
                $vector
            }
        }
    };
}

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

    /// See [`super::range`]; `None` scans every lane.
    #[inline]
    pub(crate) fn range(self, counters: &[AtomicU32], excluded: Option<&[u32]>) -> Range {
        self.run(RangeOp { counters, excluded })
    }

    /// The least of `counters` (`u32::MAX` for none): one pass, no tie count.
    #[inline(always)]
    pub(crate) fn least_of(self, counters: &[AtomicU32]) -> u32 {
        self.run(LeastOfOp { counters })
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

    /// See [`super::least_weighted`] and [`super::least_credited`]: the
    /// least key under `keys` (scores or cost keys), one body for both.
    #[inline(always)]
    pub(super) fn least_keyed<K: LaneKeys>(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        keys: K,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        if lanes(counters, excluded).min(keys.lanes()) <= FEW_LANES {
            return scalar::least_few_keyed(counters, excluded, keys, draw);
        }
        self.run(LeastKeyedOp {
            counters,
            excluded,
            keys,
            draw,
        })
    }
}

op! {
    /// [`Kernel::least_keyed`] over more than [`FEW_LANES`] lanes.
    LeastKeyedOp<K: LaneKeys, D: FnMut(u32) -> u32> { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, keys: K, draw: D } -> Least;
    /// [`LeastOp::scalar`] over the keys.
    scalar(op) {
        let LeastKeyedOp {
            counters,
            excluded,
            keys,
            draw,
        } = op;
        let n = lanes(counters, excluded).min(keys.lanes());
        if n <= SMALL_LANES {
            return scalar::least_small_keyed(counters, excluded, keys, draw);
        }
        let value = |i: usize| {
            let x = counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
            keys.key_at(i, x)
        };
        least_long(
            n,
            scalar::min_ties_keyed(counters, excluded, keys),
            value,
            |min, k| scalar::nth_tie_keyed(counters, excluded, keys, min, k),
            draw,
        )
    }
    vector(op, v) { op.keys.least_vector(v, op.counters, op.excluded, op.draw) }
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

op! {
    /// The least score of the lanes, or with `count`, how many score that.
    ScoredOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, w: Weighting<'a>, count: Option<u32> } -> u32;
    scalar(op) {
        let ScoredOp {
            counters,
            excluded,
            w,
            count,
        } = op;
        match count {
            None => scalar::min_ties_keyed(counters, excluded, w).min,
            Some(target) => scalar::count_weighted(counters, excluded, w, target),
        }
    }
    vector(op, v) {
        let ScoredOp {
            counters,
            excluded,
            w,
            count,
        } = op;
        match count {
            None => simd::min_scored(v, counters, w),
            Some(target) => simd::count_scored(v, counters, excluded, w, target),
        }
    }
}

op! {
    NthScoredOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, w: Weighting<'a>, target: u32, k: u32 } -> Result<usize, u32>;
    scalar(op) { scalar::nth_tie_keyed(op.counters, op.excluded, op.w, op.target, op.k) }
    vector(op, v) { simd::nth_scored(v, op.counters, op.excluded, op.w, op.target, op.k) }
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

op! {
    MinTiesOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]> } -> MinTies;
    scalar(op) { scalar::min_ties(op.counters, op.excluded) }
    vector(op, v) { simd::min_ties(v, op.counters, op.excluded) }
}

op! {
    RangeOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]> } -> Range;
    scalar(op) { scalar::range(op.counters, op.excluded) }
    vector(op, v) { simd::range(v, op.counters, op.excluded) }
}

op! {
    /// [`Kernel::least_of`] as a kernel operation.
    LeastOfOp { counters: &'a [AtomicU32] } -> u32;
    scalar(op) { scalar::min_ties(op.counters, None).min }
    vector(op, v) { simd::min(&super::vector::Lanes::all(v, op.counters)) }
}

op! {
    FewAtOp { counters: &'a [AtomicU32], target: u32 } -> FewAt;
    scalar(op) { scalar::few_at(op.counters, op.target) }
    vector(op, v) { simd::few_at(v, op.counters, op.target) }
}

op! {
    CountOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, target: u32 } -> u32;
    scalar(op) { scalar::count(op.counters, op.excluded, op.target) }
    vector(op, v) { simd::count_of(v, op.counters, op.excluded, op.target) }
}

op! {
    NthTieOp { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, min: u32, k: u32 } -> Result<usize, u32>;
    scalar(op) { scalar::nth_tie(op.counters, op.excluded, op.min, op.k) }
    vector(op, v) { simd::nth_tie(v, op.counters, op.excluded, op.min, op.k) }
}

op! {
    DrawInBlocksOp<D: FnOnce(u32) -> u32> { cut: Cut<'a>, blocks: &'a [u32], target: u32, draw: D } -> Drawn;
    scalar(op) {
        let DrawInBlocksOp {
            cut,
            blocks,
            target,
            draw,
        } = op;
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
    vector(op, v) { simd::draw_in_blocks(v, op.cut, op.blocks, op.target, op.draw) }
}

op! {
    /// [`super::least`] over more than [`FEW_LANES`] lanes.
    LeastOp<D: FnMut(u32) -> u32> { counters: &'a [AtomicU32], excluded: Option<&'a [u32]>, draw: D } -> Least;
    /// The path is decided by the length alone, as in `simd::least`: one pass and one
    /// try up to `SMALL_LANES` lanes, else up to `SAMPLES` tries, then the count.
    /// Another path would make other draws than the vector backends, and so pick
    /// another lane for the same draws.
    scalar(op) {
        let LeastOp {
            counters,
            excluded,
            draw,
        } = op;
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
    vector(op, v) { simd::least(v, op.counters, op.excluded, op.draw) }
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
