//! What the weighted least-loaded scan compares: a score per lane, one `u32`,
//! `(min(x, limit) + add) · scale[i]` with `scale[i] = L / c_i`, whose order
//! is the lanes' load per unit of capacity. A least score below the clamp's
//! bound is exact; the caller handles the others on an exact path. Why one
//! clamp for all lanes: [`docs::internal::scan`](crate::docs::internal::scan), "The weighted scan".

/// How [`least_weighted`](super::least_weighted) scores each lane: the factors of its
/// lanes, the bound on the values, and the request's weight.
///
/// The score of lane `i`, whose effective value is `x` (the counter ORed with its
/// exclusion), is
///
/// ```text
/// (min(x, limit) + add).wrapping_mul(scale[i])        (the add wrapping too)
/// ```
///
/// exact (no wrap) when `(limit + add) * scale[i] <= u32::MAX`; other factors are
/// not refused, only scored as written. An excluded lane (`x = u32::MAX`) scores
/// `(limit + add) * scale[i]`: not `u32::MAX`, so a scan whose lanes are all excluded
/// answers [`Least::Saturated`](super::Least::Saturated) only where those products are
/// `u32::MAX`, and otherwise a lane with a score that high, which the caller's
/// exactness bound rejects.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Least, Weighting};
///
/// // Capacities 2 and 1: L = 2, so the factors are 1 and 2, and values up to
/// // u32::MAX / 2 - 1 score exactly for a request of weight 1.
/// let counters: Vec<AtomicU32> = [3, 1].into_iter().map(AtomicU32::new).collect();
/// let w = Weighting { scale: &[1, 2], limit: u32::MAX / 2 - 1, add: 1 };
/// // (3 + 1) / 2 = 2 against (1 + 1) / 1 = 2: scores 4 and 4, a tie.
/// let got = scan::least_weighted(Backend::detect(), &counters, None, w, |_| 0);
/// assert_eq!(got, Least::Found { index: 0, min: 4 });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Weighting<'a> {
    /// Per lane the factor of its score, at least 1: `L / c_i`.
    pub scale: &'a [u32],
    /// The largest value scored as it is: larger values (an excluded lane's among
    /// them) score as `limit`. At most `u32::MAX / max(scale) - add` for exact scores.
    pub limit: u32,
    /// The request's weight, added to every lane's clamped value: lanes are compared
    /// by their load after booking the request.
    pub add: u32,
}

/// The score of a lane of effective value `x` and factor `scale`, under the bound
/// `limit`, for a request of weight `add` (see [`Weighting`]): the specification
/// every backend computes, lane for lane.
#[inline(always)]
pub(crate) fn score(x: u32, scale: u32, limit: u32, add: u32) -> u32 {
    x.min(limit).wrapping_add(add).wrapping_mul(scale)
}
