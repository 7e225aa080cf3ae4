//! The scan as functions: for the crate's least-loaded picks, and for its fuzz
//! targets, benchmarks and CI scripts (hidden from the API docs; not part of the API).
//!
//! If the slices differ in length, the shorter one decides how many lanes there are.

use super::backend::Backend;
use super::credit::Credit;
use super::kernel::Kernel;
use super::outcome::{Least, MinTies, Range};
use super::weighting::Weighting;
use crate::sync::atomic::AtomicU32;

/// Scans the lanes: the minimum of `counters[i] | excluded[i]` and its tie count.
///
/// `excluded[i]` must be `0` (candidate) or `u32::MAX` (skipped) for the result to mean
/// "least-loaded candidate"; other values are simply ORed in. The result is a snapshot
/// of lanes read at slightly different times: validate it with a compare-and-swap.
/// Never allocates and never panics. A backend the CPU cannot run runs as scalar.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [2, 0, 5, 0].into_iter().map(AtomicU32::new).collect();
/// // Lane 1 is not a candidate for this request.
/// let excluded = [0, u32::MAX, 0, 0];
/// let got = scan::min_ties(Backend::detect(), &counters, &excluded);
/// assert_eq!(got, MinTies { min: 0, ties: 1 });
/// ```
#[inline]
pub fn min_ties(backend: Backend, counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    let n = counters.len().min(excluded.len());
    Kernel::of(backend).min_ties(&counters[..n], Some(&excluded[..n]))
}

/// [`min_ties`] with every lane a candidate: the minimum counter and how many share it.
/// Reads only the counters, so it is faster than passing an all-zero `excluded`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1].into_iter().map(AtomicU32::new).collect();
/// let got = scan::min_ties_all(Backend::detect(), &counters);
/// assert_eq!(got, MinTies { min: 1, ties: 2 });
/// ```
#[inline]
pub fn min_ties_all(backend: Backend, counters: &[AtomicU32]) -> MinTies {
    Kernel::of(backend).min_ties(counters, None)
}

/// The index of the `k`-th lane (0-based, in index order) whose effective value equals
/// `min`, or `Err(found)` with the number of such lanes when there are `k` or fewer.
///
/// Stops at the lane it returns. `Err` after a [`min_ties`] that reported more ties
/// means lanes changed in between: scan again.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend};
///
/// let counters: Vec<AtomicU32> = [1, 0, 7, 0, 0].into_iter().map(AtomicU32::new).collect();
/// let excluded = [0; 5];
/// let backend = Backend::detect();
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 0), Ok(1));
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 2), Ok(4));
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 3), Err(3));
/// ```
#[inline]
pub fn nth_tie(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: &[u32],
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    let n = counters.len().min(excluded.len());
    Kernel::of(backend).nth_tie(&counters[..n], Some(&excluded[..n]), min, k)
}

/// [`nth_tie`] with every lane a candidate (the companion of [`min_ties_all`]).
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend};
///
/// let counters: Vec<AtomicU32> = [1, 0, 7, 0].into_iter().map(AtomicU32::new).collect();
/// assert_eq!(scan::nth_tie_all(Backend::detect(), &counters, 0, 1), Ok(3));
/// ```
#[inline]
pub fn nth_tie_all(backend: Backend, counters: &[AtomicU32], min: u32, k: u32) -> Result<usize, u32> {
    Kernel::of(backend).nth_tie(counters, None, min, k)
}

/// The least-loaded pick over the lanes (every counter when `excluded` is `None`): the
/// minimum, and one lane holding it, chosen uniformly at random when several do: the
/// tie-break of [`LeastLoaded`](crate::LeastLoaded), which this is.
///
/// `draw(m)` must return a uniform random value below `m` (a larger one is clamped or
/// ignored). Over two lanes or more, `least` first tries lanes drawn out of all of them
/// (`m` = the number of lanes) and takes the first that holds the minimum: one try
/// over up to 32 lanes, which it reads once into registers, and up to 8 beyond. When
/// many lanes tie, as in an idle or balanced pool, that is one draw and no second
/// look at the lanes. Each draw is uniform, so a lane it accepts is uniform among the
/// ties. If the tries miss, it counts the ties and draws once among them (`m` = the
/// number of ties, counted in index order from 0); no draw is made for a single tie.
///
/// Faster than [`min_ties`] then [`nth_tie`]: besides the tries, up to 32 lanes are
/// read once, and beyond that the vector backends count ties per segment of the lanes
/// and search only the segment holding the drawn tie. Lanes that other threads change
/// during the scan can make it answer [`Least::Moved`]: scan again, and validate a
/// [`Least::Found`] with a compare-and-swap from `min`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Least};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1, 5].into_iter().map(AtomicU32::new).collect();
/// // Two lanes hold 1. The try over all 5 lanes names lane 4 (it holds 5, a miss),
/// // then the draw among the 2 ties names the second of them.
/// let got = scan::least(Backend::detect(), &counters, None, |m| m - 1);
/// assert_eq!(got, Least::Found { index: 3, min: 1 });
/// // A try that names a lane at the minimum is taken.
/// let got = scan::least(Backend::detect(), &counters, None, |_| 1);
/// assert_eq!(got, Least::Found { index: 1, min: 1 });
/// // Lane 3 excluded: the try names lane 4 again, then a single minimum is left,
/// // taken with no draw.
/// let excluded = [0, 0, 0, u32::MAX, 0];
/// let mut draws = 0;
/// let got = scan::least(Backend::detect(), &counters, Some(&excluded), |m| {
///     draws += 1;
///     m - 1
/// });
/// assert_eq!(got, Least::Found { index: 1, min: 1 });
/// assert_eq!(draws, 1);
/// ```
///
/// `kernel` is a [`Backend`] (checked against the CPU on each call; one it cannot run
/// runs as scalar) or a [`Kernel`], checked once when it was made.
#[inline(always)]
pub fn least(
    kernel: impl Into<Kernel>,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    kernel.into().least(counters, excluded, draw)
}

/// [`least`] over the lanes' scores under `weights` (see [`Weighting`]) instead of
/// their effective values: the least-loaded pick by load per unit of capacity. The
/// lanes are as many as `counters`, `excluded` (if given) and the factors
/// have; the tries, the draws and the answers are those of [`least`], with `min` the
/// least score (`Saturated` when it is `u32::MAX`).
///
/// The answer is a hint as for [`least`], and more: a minimum above
/// `(limit + add) * min(scale)` may come from a clamped lane (see [`Weighting`]),
/// which the caller must check exactly.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Least, Weighting};
///
/// // Capacities 4, 2, 1, 1 (L = 4): factors 1, 2, 4, 4.
/// let counters: Vec<AtomicU32> = [6, 3, 1, 2].into_iter().map(AtomicU32::new).collect();
/// let w = Weighting { scale: &[1, 2, 4, 4], limit: u32::MAX / 4 - 1, add: 1 };
/// // (6 + 1) / 4, (3 + 1) / 2, (1 + 1) / 1, (2 + 1) / 1: scores 7, 8, 8, 12.
/// let got = scan::least_weighted(Backend::detect(), &counters, None, w, |_| 0);
/// assert_eq!(got, Least::Found { index: 0, min: 7 });
/// ```
#[inline(always)]
pub fn least_weighted(
    kernel: impl Into<Kernel>,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    weights: Weighting<'_>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    kernel.into().least_keyed(counters, excluded, weights, draw)
}

/// [`least`] over the lanes' cost keys under `credit` (see [`Credit`]): the cost
/// mode's minimum of `1000·load − α·credit`, ties uniform, in one pass per step of
/// [`least`]'s (the tries, the draws and the answers are its own, with `min` the
/// least key). The lanes are as many as `counters`, `excluded` (if given) and
/// `credit.held` have.
///
/// A hint as for [`least`], and more: only a minimum below
/// [`Credit::exact_below`] is exact, with exactly its lanes tied; the caller checks
/// others with an exact path of its own.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Credit, Least};
///
/// // Loads 3, 1, 2; credits 5, 0, 2 at α = 1: costs −2, 1, 0.
/// let counters: Vec<AtomicU32> = [3, 1, 2].into_iter().map(AtomicU32::new).collect();
/// let c = Credit::new(&[5, 0, 2], 1000, 5).unwrap();
/// let Least::Found { index, min } = scan::least_credited(Backend::detect(), &counters, None, c, |_| 0)
/// else { unreachable!() };
/// assert_eq!(index, 0);
/// assert!(min < c.exact_below());
/// assert_eq!(c.load_of(min, 5), 3);
/// ```
#[inline(always)]
pub fn least_credited(
    kernel: impl Into<Kernel>,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    credit: Credit<'_>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    kernel.into().least_keyed(counters, excluded, credit, draw)
}

/// The least effective value and the largest candidate counter in one pass (see
/// [`Range`]): where the cost mode's softmax finds the span of the loads.
///
/// Lanes are as for [`min_ties`]: `excluded[i]` is `0` for a candidate and `u32::MAX`
/// for a lane to skip (other values are ORed into the minimum and into the
/// complement the maximum is read from), every counter when it is `None`. A snapshot
/// of lanes read at slightly different times; never allocates, never panics.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Range};
///
/// let counters: Vec<AtomicU32> = [5, 2, 7].into_iter().map(AtomicU32::new).collect();
/// assert_eq!(scan::range(Backend::detect(), &counters, None), Range { min: 2, max: 7 });
/// ```
#[inline]
pub fn range(kernel: impl Into<Kernel>, counters: &[AtomicU32], excluded: Option<&[u32]>) -> Range {
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    kernel.into().range(&counters[..n], excluded.map(|e| &e[..n]))
}
