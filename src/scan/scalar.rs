//! The reference scan: one Relaxed load per lane. The vector backends must return
//! exactly what these functions return. Plain loops, sharing no code with the vector
//! scan (`simd.rs`), so that the tests compare two independent implementations.

use super::draw::{FEW_LANES, SMALL_LANES, drawn_lane, sample};
use super::keys::LaneKeys;
use super::outcome::{FewAt, Least, MinTies, Range};
use super::weighting::Weighting;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Runs `$body` with `$values` an iterator over the effective value of each lane, in
/// order: every counter when `$excluded` is `None`, else as many lanes as both slices
/// have. (A macro, so that each case is its own tight loop.)
macro_rules! with_values {
    ($counters:expr, $excluded:expr, |$values:ident| $body:expr) => {
        match $excluded {
            None => {
                let $values = $counters.iter().map(|c| c.load(Relaxed));
                $body
            }
            Some(e) => {
                let $values = $counters.iter().zip(e).map(|(c, &e)| c.load(Relaxed) | e);
                $body
            }
        }
    };
}

/// Runs `$body` with `$n` the number of lanes, at most `$cap` (every counter when
/// `$excluded` is `None`, else as many lanes as both slices have), and `$value` the
/// effective value of lane `i < $n`. The slices are cut to `$n` first, so the reads
/// need no bounds check.
macro_rules! with_value {
    ($counters:expr, $excluded:expr, $cap:expr, |$n:ident, $value:ident| $body:expr) => {
        match $excluded {
            None => {
                let c = &$counters[..$counters.len().min($cap)];
                let $n = c.len();
                let $value = |i: usize| c[i].load(Relaxed);
                $body
            }
            Some(e) => {
                let $n = $counters.len().min(e.len()).min($cap);
                let (c, e) = (&$counters[..$n], &e[..$n]);
                let $value = |i: usize| c[i].load(Relaxed) | e[i];
                $body
            }
        }
    };
}

#[inline]
pub(super) fn min_ties(counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
    with_values!(counters, excluded, |values| min_ties_of(values))
}

/// See [`super::range`]: the least effective value, and the least complemented
/// one (`!c | e`, which excludes a lane just as `c | e` does), complemented back.
#[inline]
pub(super) fn range(counters: &[AtomicU32], excluded: Option<&[u32]>) -> Range {
    let (mut lo, mut inv) = (u32::MAX, u32::MAX);
    match excluded {
        None => {
            for c in counters {
                let c = c.load(Relaxed);
                lo = lo.min(c);
                inv = inv.min(!c);
            }
        }
        Some(e) => {
            for (c, &e) in counters.iter().zip(e) {
                let c = c.load(Relaxed);
                lo = lo.min(c | e);
                inv = inv.min(!c | e);
            }
        }
    }
    Range { min: lo, max: !inv }
}

/// Where the counters equal to `target` lie, up to [`FewAt::MAX`] of them.
#[inline]
pub(super) fn few_at(counters: &[AtomicU32], target: u32) -> FewAt {
    let mut at = FewAt {
        found: 0,
        first: [0; FewAt::MAX],
    };
    for (i, c) in counters.iter().enumerate() {
        if c.load(Relaxed) == target && !at.note(i, 1) {
            break;
        }
    }
    at
}

/// How many lanes have the effective value `target`.
#[inline]
pub(super) fn count(counters: &[AtomicU32], excluded: Option<&[u32]>, target: u32) -> u32 {
    with_values!(counters, excluded, |values| {
        values.fold(0u32, |n, v| n.wrapping_add(u32::from(v == target)))
    })
}

#[inline]
pub(super) fn nth_tie(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    with_values!(counters, excluded, |values| nth_of(values, min, k))
}

/// [`min_ties`] over the lanes' keys under `k` (scores under a [`Weighting`],
/// cost keys under a [`Credit`](super::credit::Credit)): as many lanes as the counters, `excluded` if
/// given, and the keys have.
#[inline]
pub(super) fn min_ties_keyed(counters: &[AtomicU32], excluded: Option<&[u32]>, k: impl LaneKeys) -> MinTies {
    with_values!(counters, excluded, |values| min_ties_of(keyed(values, k)))
}

/// How many lanes score `target` under `w`.
#[inline]
pub(super) fn count_weighted(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    w: Weighting<'_>,
    target: u32,
) -> u32 {
    with_values!(counters, excluded, |values| {
        keyed(values, w).fold(0u32, |n, v| n.wrapping_add(u32::from(v == target)))
    })
}

/// [`nth_tie`] over the lanes' keys under `k`.
#[inline]
pub(super) fn nth_tie_keyed(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    k: impl LaneKeys,
    min: u32,
    nth: u32,
) -> Result<usize, u32> {
    with_values!(counters, excluded, |values| nth_of(keyed(values, k), min, nth))
}

/// The keys under `k` of the effective values `values`, as long as both run.
#[inline(always)]
fn keyed(values: impl Iterator<Item = u32>, k: impl LaneKeys) -> impl Iterator<Item = u32> {
    values
        .enumerate()
        .take(k.lanes())
        .map(move |(i, x)| k.key_at(i, x))
}

/// [`least_few`] over the lanes' keys under `k`, for at most [`FEW_LANES`]
/// lanes. Out of line and packed, for the same reasons.
#[inline(always)]
pub(super) fn least_few_keyed<K: LaneKeys>(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    k: K,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    Least::unpack(least_few_keyed_packed(counters, excluded, k, draw))
}

#[inline(never)]
fn least_few_keyed_packed<K: LaneKeys>(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    k: K,
    draw: impl FnMut(u32) -> u32,
) -> (usize, u32) {
    with_value!(counters, excluded, FEW_LANES.min(k.lanes()), |n, value| {
        let k = k.prefix(n);
        few(n, |i| k.key_at(i, value(i)), draw)
    })
    .pack()
}

/// [`least_small`] over the lanes' keys under `k`.
#[inline]
pub(super) fn least_small_keyed<K: LaneKeys>(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    k: K,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    with_value!(counters, excluded, SMALL_LANES.min(k.lanes()), |n, value| {
        let k = k.prefix(n);
        least_short(n, |i| k.key_at(i, value(i)), draw)
    })
}

/// The smallest of `values` (`u32::MAX` for none) and how many equal it.
#[inline(always)]
fn min_ties_of(values: impl Iterator<Item = u32>) -> MinTies {
    let (mut min, mut ties) = (u32::MAX, 0u32);
    for v in values {
        if v < min {
            min = v;
            ties = 0;
        }
        // Wrapping, like the vector backends' lane counts (only past 2^32 lanes).
        ties = ties.wrapping_add(u32::from(v == min));
    }
    MinTies { min, ties }
}

/// The index of the `k`-th of `values` equal to `min`, or `Err` with how many are.
#[inline(always)]
fn nth_of(values: impl Iterator<Item = u32>, min: u32, k: u32) -> Result<usize, u32> {
    let mut seen = 0;
    for (i, v) in values.enumerate() {
        if v == min {
            if seen == k {
                return Ok(i);
            }
            // No overflow: seen < k here.
            seen += 1;
        }
    }
    Err(seen)
}

/// [`least`](super::least) for at most [`FEW_LANES`] lanes (any further
/// lanes are ignored): each lane read once with a scalar load, the minimum taken as a
/// tree, then one random try over all the lanes; only if it misses are the lanes at
/// the minimum collected as a bit set and one of them drawn. On an idle or balanced
/// pool the try lands on a tie, and the scan is the loads, seven `min`s and a draw.
///
/// Scalar loads, not a vector one: in a loop of reservations and releases the lane
/// just released is still in the store buffer, whence a scalar load takes it, while a
/// vector load covering it waits for it to reach the cache (measured: 34 against 25 ns
/// per reserve + release at 8 lanes). Not inlined: it needs a dozen registers, which
/// the pick loops around it would otherwise spill on every path (measured: 20 more
/// instructions per least-loaded pick at 1024 workers when inlined).
///
/// The outcome comes back [packed](Least::pack), in registers.
#[inline(always)]
pub(super) fn least_few(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    Least::unpack(least_few_packed(counters, excluded, draw))
}

#[inline(never)]
fn least_few_packed(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    draw: impl FnMut(u32) -> u32,
) -> (usize, u32) {
    with_value!(counters, excluded, FEW_LANES, |n, value| few(n, value, draw)).pack()
}

/// [`least_few`] over the effective values `value(0..n)`, `n <= FEW_LANES`.
#[inline(always)]
fn few(n: usize, value: impl Fn(usize) -> u32, mut draw: impl FnMut(u32) -> u32) -> Least {
    // Lanes past n hold u32::MAX: above any minimum that is found.
    let v: [u32; FEW_LANES] = if n == FEW_LANES {
        // A full set, read without a branch per lane.
        core::array::from_fn(&value)
    } else {
        core::array::from_fn(|i| if i < n { value(i) } else { u32::MAX })
    };
    let [a, b, c, d, e, f, g, h] = v;
    let min = a.min(e).min(c.min(g)).min(b.min(f).min(d.min(h)));
    if min == u32::MAX {
        return if n == 0 { Least::Empty } else { Least::Saturated };
    }
    if let Some(index) = sample::<1>(n, &value, min, &mut draw) {
        return Least::Found { index, min };
    }
    let at_min = v
        .iter()
        .enumerate()
        .fold(0u32, |bits, (i, &x)| bits | u32::from(x == min) << i);
    Least::Found {
        index: drawn_lane(at_min, at_min.count_ones(), n, draw),
        min,
    }
}

/// [`least`](super::least) for at most 32 lanes (any further lanes are ignored), in one pass
/// and one random try.
#[inline]
pub(super) fn least_small(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    with_value!(counters, excluded, SMALL_LANES, |n, value| least_short(
        n, value, draw
    ))
}

/// [`least`](super::least) over the effective values `value(0..n)` (`n` at most 32; further
/// lanes are ignored), read once each: the lanes at the minimum are collected as a bit
/// set as the scan goes, so after the random try the draw among the ties needs no
/// second pass. Branch-free but for the loop and the try.
#[inline(always)]
fn least_short(n: usize, value: impl Fn(usize) -> u32, mut draw: impl FnMut(u32) -> u32) -> Least {
    let n = n.min(SMALL_LANES);
    let (mut min, mut ties, mut at_min) = (u32::MAX, 0u32, 0u32);
    for i in 0..n {
        let v = value(i);
        // A new minimum clears the count and the set, then a lane at the minimum
        // joins them.
        let keep = 0u32.wrapping_sub(u32::from(v >= min));
        min = min.min(v);
        let hit = u32::from(v == min);
        ties = (ties & keep) + hit;
        at_min = (at_min & keep) | hit << i;
    }
    match ties {
        0 => Least::Empty,
        _ if min == u32::MAX => Least::Saturated,
        _ => Least::Found {
            index: sample::<1>(n, &value, min, &mut draw)
                .unwrap_or_else(|| drawn_lane(at_min, ties, n, draw)),
            min,
        },
    }
}
