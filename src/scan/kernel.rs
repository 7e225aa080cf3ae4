//! A backend checked against the CPU once, and the scans it runs.

use super::backend::Backend;
use super::dispatch;
use super::draw::{FEW_LANES, SAMPLES, SMALL_LANES, draw_among, sample};
use super::outcome::{Least, MinTies};
use super::scalar;
use super::simd;
use super::vector::{Op, Vector};
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// A [`Backend`] this CPU runs: checked once when made, so that a scan through it
/// dispatches on the backend alone, with no feature test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Backend);

impl Kernel {
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

    /// See [`super::nth_tie`]; `None` scans every lane.
    #[inline]
    pub(super) fn nth_tie(
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
        let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
        if n <= FEW_LANES {
            return scalar::least_few(counters, excluded, draw);
        }
        self.run(LeastOp {
            counters,
            excluded,
            draw,
        })
    }
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
            mut draw,
        } = self;
        let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
        if n <= SMALL_LANES {
            return scalar::least_small(counters, excluded, draw);
        }
        let found = scalar::min_ties(counters, excluded);
        if found.min == u32::MAX {
            return Least::Saturated;
        }
        let value = |i: usize| counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
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
        match scalar::nth_tie(counters, excluded, found.min, k) {
            Ok(index) => Least::Found {
                index,
                min: found.min,
            },
            Err(_) => Least::Moved,
        }
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Least {
        simd::least(v, self.counters, self.excluded, self.draw)
    }
}
