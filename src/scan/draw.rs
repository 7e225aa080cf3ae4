//! How a least-loaded scan draws among the lanes at the minimum, and the lengths at
//! which it changes path: shared by every backend, so that all make the same draws.

use super::outcome::{Drawn, FewAt};
use crate::sync::atomic::AtomicU32;

/// How many random lanes [`least`](super::least) tries over more than [`SMALL_LANES`] lanes before
/// it counts the ties (up to that many, which it reads in one pass, it tries one). With
/// a fraction `p` of the lanes tying, all tries miss with probability `(1 - p)^8`:
/// 0.4% at a half, 10% at a quarter. A try costs a draw and one load; the count it may
/// save reads every lane.
pub(crate) const SAMPLES: usize = 8;

/// Up to `TRIES` uniform draws over the `n` lanes: the first whose `value` is `min`.
/// Conditioned on acceptance each is uniform among the lanes at `min`. None for fewer
/// than 2 lanes (no draw is made for a single lane).
#[inline(always)]
pub(crate) fn sample<const TRIES: usize>(
    n: usize,
    value: impl Fn(usize) -> u32,
    min: u32,
    draw: &mut impl FnMut(u32) -> u32,
) -> Option<usize> {
    if n < 2 {
        return None;
    }
    let lanes = u32::try_from(n).ok()?;
    for _ in 0..TRIES {
        let i = draw(lanes) as usize;
        if i < n && value(i) == min {
            return Some(i);
        }
    }
    None
}

/// Tie `k` of `ties` (at least 1): `0` with no draw for a single tie, else
/// `draw(ties)`, clamped to the last tie.
#[inline(always)]
pub(crate) fn draw_among(ties: u32, draw: impl FnOnce(u32) -> u32) -> u32 {
    if ties == 1 { 0 } else { draw(ties).min(ties - 1) }
}

/// The lane of a tie drawn with `draw` from `at_min`, the non-empty set of the
/// `ties` lanes (bit i = lane i) at the minimum among `n` lanes.
#[inline(always)]
pub(super) fn drawn_lane(at_min: u32, ties: u32, n: usize, draw: impl FnOnce(u32) -> u32) -> usize {
    match ties {
        1 => at_min.trailing_zeros() as usize,
        // Every lane ties: tie k is lane k.
        _ if ties as usize == n => draw_among(ties, draw) as usize,
        _ => nth_set_bit::<32>(u64::from(at_min), draw_among(ties, draw)),
    }
}

/// The position of the set bit of `bits` with `rank` set bits below it
/// (`rank < bits.count_ones()`), `bits` holding at most `BITS` bits (32 or 64). A
/// binary search by popcount, without branches: the rank is a random draw, so a
/// data-dependent branch here would be mispredicted about once per pick. No BMI2
/// `pdep`, which is microcoded on AMD before Zen 3. Always inlined: a call costs a
/// third of its work, and in the large vector scan functions the compiler would
/// otherwise keep it out of line.
#[inline(always)]
pub(super) fn nth_set_bit<const BITS: u32>(mut bits: u64, mut rank: u32) -> usize {
    let mut pos = 0;
    let mut width = BITS / 2;
    while width > 0 {
        let below = (bits & ((1 << width) - 1)).count_ones();
        // All ones when tie `rank` lies above the low `width` bits.
        let up = 0u32.wrapping_sub(u32::from(rank >= below));
        rank -= below & up;
        bits >>= width & up;
        pos += width & up;
        width /= 2;
    }
    pos as usize
}

/// Up to this many lanes every backend answers [`least`](super::least) with the scalar `least_few`,
/// a small function of its own: calling into a vector kernel (its dispatch and its
/// large frame) costs more than scanning 8 lanes.
pub(super) const FEW_LANES: usize = 8;

/// Up to this many lanes [`least`](super::least) reads each lane once and makes one random try (its
/// bit set of ties is a `u32`).
pub(super) const SMALL_LANES: usize = 32;

/// Lanes cut into blocks of `width`: block `b` is lanes `b * width..(b + 1) * width`,
/// the last one cut at the end of the lanes.
#[derive(Clone, Copy)]
pub(crate) struct Cut<'a> {
    pub(crate) counters: &'a [AtomicU32],
    /// As long as `counters`, when given.
    pub(crate) excluded: Option<&'a [u32]>,
    pub(crate) width: usize,
}

impl<'a> Cut<'a> {
    /// How many lanes there are.
    #[inline(always)]
    pub(crate) fn lanes(&self) -> usize {
        self.counters.len()
    }

    /// Block `b`'s first lane and its length (`0` past the end).
    #[inline(always)]
    pub(crate) fn span(&self, b: usize) -> (usize, usize) {
        let n = self.lanes();
        let start = (b * self.width).min(n);
        (start, ((b + 1) * self.width).min(n) - start)
    }

    /// Block `b`'s first lane, and its counters and exclusions.
    #[inline(always)]
    pub(crate) fn block(&self, b: usize) -> (usize, &'a [AtomicU32], Option<&'a [u32]>) {
        let (start, len) = self.span(b);
        let end = start + len;
        (
            start,
            &self.counters[start..end],
            self.excluded.map(|e| &e[start..end]),
        )
    }
}

/// One lane drawn uniformly among those at a value in `blocks` (the first
/// [`FewAt::MAX`]), with one draw (none for a single one): `count(b)` counts block
/// `b`'s lanes at the value, and `nth(b, k)` finds the `k`-th of them (as
/// `Kernel::count` and `Kernel::nth_tie` do, with the index over all lanes). The path
/// of every backend, so that they all make the same draw.
#[inline(always)]
pub(super) fn in_blocks(
    blocks: &[u32],
    mut count: impl FnMut(usize) -> u32,
    nth: impl FnOnce(usize, u32) -> Result<usize, u32>,
    draw: impl FnOnce(u32) -> u32,
) -> Drawn {
    let blocks = &blocks[..blocks.len().min(FewAt::MAX)];
    let mut per = [0u32; FewAt::MAX];
    let (mut ties, mut empty) = (0u32, 0u32);
    for (j, &b) in blocks.iter().enumerate() {
        per[j] = count(b as usize);
        ties = ties.wrapping_add(per[j]);
        empty |= u32::from(per[j] == 0) << j;
    }
    if ties == 0 {
        return Drawn { lane: Err(0), empty };
    }
    let mut k = draw_among(ties, draw);
    for (j, &b) in blocks.iter().enumerate() {
        if k < per[j] {
            let lane = nth(b as usize, k).map_err(|_| ties);
            return Drawn { lane, empty };
        }
        k -= per[j];
    }
    // k < ties, the sum of `per`: not reached.
    Drawn {
        lane: Err(ties),
        empty,
    }
}
