//! What the weighted least-loaded scan compares: a score per lane, one `u32`, whose
//! order is the order of the lanes' load per unit of capacity.
//!
//! A caller with capacities `c_i` and `L` their least common multiple gives lane `i`
//! the factor `scale[i] = L / c_i`: then `(load + add) * scale[i]` is
//! `L * (load + add) / c_i`, so equal ratios score equally and the order is exact,
//! with one multiply per lane. For the score to fit 32 bits the operand is clamped to
//! `cap[i] = u32::MAX / scale[i]`; a clamped lane scores above
//! `u32::MAX - scale[i]`, so a minimum at or below `u32::MAX - L` is exact and the
//! caller handles the others (with an exact path of its own).

/// How [`least_weighted`](super::least_weighted) scores each lane: the factors of its
/// lanes and the request's weight.
///
/// The score of lane `i`, whose effective value is `x` (the counter ORed with its
/// exclusion), is
///
/// ```text
/// min(min(x, u32::MAX - add) + add, cap[i]).wrapping_mul(scale[i])
/// ```
///
/// exact (no wrap) when `scale[i] >= 1` and `cap[i] <= u32::MAX / scale[i]`; other
/// factors are not refused, only scored as written. An excluded lane (`x = u32::MAX`)
/// scores `cap[i] * scale[i]`, above `u32::MAX - scale[i]`: not necessarily
/// `u32::MAX`, so a scan whose lanes are all excluded answers
/// [`Least::Saturated`](super::Least::Saturated) only where those products are
/// `u32::MAX`, and otherwise a lane with a score that high, which the caller's
/// exactness bound rejects.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Least, Weighting};
///
/// // Capacities 2 and 1: L = 2, so the factors are 1 and 2.
/// let counters: Vec<AtomicU32> = [3, 1].into_iter().map(AtomicU32::new).collect();
/// let scale = [1, 2];
/// let cap = [u32::MAX, u32::MAX / 2];
/// let w = Weighting { scale: &scale, cap: &cap, add: 1 };
/// // (3 + 1) / 2 = 2 against (1 + 1) / 1 = 2: scores 4 and 4, a tie.
/// let got = scan::least_weighted(Backend::detect(), &counters, None, w, |_| 0);
/// assert_eq!(got, Least::Found { index: 0, min: 4 });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Weighting<'a> {
    /// Per lane the factor of its score, at least 1: `L / c_i`.
    pub scale: &'a [u32],
    /// Per lane the largest operand it scores, at most `u32::MAX / scale[i]`.
    pub cap: &'a [u32],
    /// The request's weight, added to every lane's value (saturating at
    /// `u32::MAX`): lanes are compared by their load after booking the request.
    pub add: u32,
}

impl Weighting<'_> {
    /// How many lanes these factors cover: the shorter of the two arrays.
    #[inline(always)]
    pub(super) fn lanes(&self) -> usize {
        self.scale.len().min(self.cap.len())
    }
}

/// The score of a lane of effective value `x`, factors `scale` and `cap`, for a
/// request of weight `add` (see [`Weighting`]): the specification every backend
/// computes, lane for lane.
#[inline(always)]
pub(super) fn score(x: u32, add: u32, scale: u32, cap: u32) -> u32 {
    (x.min(u32::MAX - add) + add).min(cap).wrapping_mul(scale)
}
