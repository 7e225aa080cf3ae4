//! A backend checked against the CPU once, and the scans it runs.

use super::backend::Backend;
use super::dispatch;
use super::draw::{FEW_LANES, SAMPLES, SMALL_LANES, draw_among, sample};
use super::outcome::{Least, MinTies};
use super::scalar;
use super::simd;
use super::source::Source;
use super::vector::{Op, Vector};

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

    /// See [`super::min_ties`].
    #[inline]
    pub(super) fn min_ties(self, src: Source<'_>) -> MinTies {
        self.run(MinTiesOp { src })
    }

    /// See [`super::nth_tie`].
    #[inline]
    pub(super) fn nth_tie(self, src: Source<'_>, min: u32, k: u32) -> Result<usize, u32> {
        self.run(NthTieOp { src, min, k })
    }

    /// See [`super::least`].
    #[inline(always)]
    pub(super) fn least(self, src: Source<'_>, draw: impl FnMut(u32) -> u32) -> Least {
        if src.len() <= FEW_LANES {
            return scalar::least_few(src.counters, src.excluded, src.reported, draw);
        }
        self.run(LeastOp { src, draw })
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
    src: Source<'a>,
}

impl Op for MinTiesOp<'_> {
    type Out = MinTies;

    #[inline(always)]
    fn scalar(self) -> MinTies {
        scalar::min_ties(self.src)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> MinTies {
        simd::min_ties(v, self.src)
    }
}

struct NthTieOp<'a> {
    src: Source<'a>,
    min: u32,
    k: u32,
}

impl Op for NthTieOp<'_> {
    type Out = Result<usize, u32>;

    #[inline(always)]
    fn scalar(self) -> Self::Out {
        scalar::nth_tie(self.src, self.min, self.k)
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Self::Out {
        simd::nth_tie(v, self.src, self.min, self.k)
    }
}

/// [`super::least`] over more than [`FEW_LANES`] lanes.
struct LeastOp<'a, D> {
    src: Source<'a>,
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
        let LeastOp { src, mut draw } = self;
        let n = src.len();
        if n <= SMALL_LANES {
            return scalar::least_small(src, draw);
        }
        let found = scalar::min_ties(src);
        if found.min == u32::MAX {
            return Least::Saturated;
        }
        if let Some(index) = sample::<SAMPLES>(n, |i| src.value(i), found.min, &mut draw) {
            return Least::Found {
                index,
                min: found.min,
            };
        }
        let k = match found.ties {
            0 => return Least::Moved,
            ties => draw_among(ties, &mut draw),
        };
        match scalar::nth_tie(src, found.min, k) {
            Ok(index) => Least::Found {
                index,
                min: found.min,
            },
            Err(_) => Least::Moved,
        }
    }

    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Least {
        simd::least(v, self.src, self.draw)
    }
}
