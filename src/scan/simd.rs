//! The vector scan, written once over [`Vector`]: up to three simple passes, each a
//! loop of four independent vector chains with no branch but the loop's: the minimum,
//! then how many lanes equal it, then where the k-th of them lies. Three cheap passes
//! over data that sits in L1 beat one fused pass that keeps a per-lane tie count beside
//! a per-lane minimum (about 3 vector operations per 8 lanes against 8, measured with
//! AVX2). The last lanes of a pass are read with one tail load (no scalar loop).
//!
//! Every function is `#[inline(always)]`: each compiles into the entry function of the
//! backend that runs it, with that backend's target features. A scan without an
//! exclusion array (`ALL`) reads the counters alone: half the loads.

use super::draw::{Cut, SAMPLES, SMALL_LANES, draw_among, drawn_lane, in_blocks, sample};
use super::outcome::{Drawn, FewAt, Least, MinTies, Range};
use super::credit::Credit;
use super::vector::{Credited, Lanes, Source, Vector, Weighted, with_lanes};
use super::weighting::Weighting;
use crate::sync::atomic::AtomicU32;

/// See [`super::min_ties`].
#[inline(always)]
pub(super) fn min_ties<V: Vector>(v: V, counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
    with_lanes!(v, counters, excluded, |l| {
        let min = min(&l);
        MinTies {
            min,
            ties: count(&l, min),
        }
    })
}

/// See [`super::range`]: one pass, two chains of minimums per vector (the values
/// and their complements), so each lane is loaded once.
#[inline(always)]
pub(super) fn range<V: Vector>(v: V, counters: &[AtomicU32], excluded: Option<&[u32]>) -> Range {
    with_lanes!(v, counters, excluded, |l| range_of(&l))
}

#[inline(always)]
fn range_of<V: Vector, const ALL: bool>(l: &Lanes<V, ALL>) -> Range {
    let (s, step) = (l.v, 4 * V::LANES);
    let mut lo = [s.splat(u32::MAX); 4];
    let mut inv = lo;
    let mut i = 0;
    while i + step <= l.n {
        // SAFETY: i + step <= n.
        let (a, b) = unsafe { l.get4_both(i) };
        for j in 0..4 {
            lo[j] = s.min(lo[j], a[j]);
            inv[j] = s.min(inv[j], b[j]);
        }
        i += step;
    }
    while i + V::LANES <= l.n {
        // SAFETY: i + LANES <= n.
        let (a, b) = unsafe { l.get_both(i) };
        lo[0] = s.min(lo[0], a);
        inv[0] = s.min(inv[0], b);
        i += V::LANES;
    }
    if i < l.n {
        // SAFETY: i < n < i + LANES.
        let (a, b) = unsafe { l.tail_both(i) };
        lo[1] = s.min(lo[1], a);
        inv[1] = s.min(inv[1], b);
    }
    let hmin = |m: [V::V; 4]| s.hmin(s.min(s.min(m[0], m[1]), s.min(m[2], m[3])));
    Range {
        min: hmin(lo),
        max: !hmin(inv),
    }
}

/// See `Kernel::few_at`: one pass that notes the lanes equal to `target`,
/// stopping once more than [`FewAt::MAX`] are found.
#[inline(always)]
pub(super) fn few_at<V: Vector>(v: V, counters: &[AtomicU32], target: u32) -> FewAt {
    let l = Lanes::all(v, counters);
    let mut at = FewAt {
        found: 0,
        first: [0; FewAt::MAX],
    };
    let (s, step) = (v, 4 * V::LANES);
    let t = s.splat(target);
    let mut i = 0;
    while i + step <= l.n() {
        // SAFETY: i + step <= n.
        if !at.note(i, s.eq_bits4(unsafe { l.get4(i) }, t)) {
            return at;
        }
        i += step;
    }
    while i + V::LANES <= l.n() {
        // SAFETY: i + LANES <= n.
        if !at.note(i, s.eq_bits(unsafe { l.get(i) }, t)) {
            return at;
        }
        i += V::LANES;
    }
    if i < l.n() {
        // SAFETY: i < n < i + LANES. Lanes past the end read as u32::MAX: mask them.
        let (v, real) = unsafe { l.tail(i) };
        at.note(i, s.eq_bits(v, t) & real);
    }
    at
}

/// How many lanes have the effective value `target` (see [`count`]).
#[inline(always)]
pub(super) fn count_of<V: Vector>(v: V, counters: &[AtomicU32], excluded: Option<&[u32]>, target: u32) -> u32 {
    with_lanes!(v, counters, excluded, |l| count(&l, target))
}

/// The least score of every lane of `counters` under `w` (see `Kernel::min_scored`).
#[inline(always)]
pub(super) fn min_scored<V: Vector>(v: V, counters: &[AtomicU32], w: Weighting<'_>) -> u32 {
    min(&Weighted::new(Lanes::all(v, counters), w))
}

/// How many lanes score `target` under `w` (see `Kernel::count_scored`).
#[inline(always)]
pub(super) fn count_scored<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    w: Weighting<'_>,
    target: u32,
) -> u32 {
    with_lanes!(v, counters, excluded, |l| count(&Weighted::new(l, w), target))
}

/// [`nth_tie`] over the lanes' scores under `w`.
#[inline(always)]
pub(super) fn nth_scored<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    w: Weighting<'_>,
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    with_lanes!(v, counters, excluded, |l| nth(&Weighted::new(l, w), min, k))
}

/// See `Kernel::draw_in_blocks`: the lanes matched against the exclusions once,
/// each block a part of them.
#[inline(always)]
pub(super) fn draw_in_blocks<V: Vector>(
    v: V,
    cut: Cut<'_>,
    blocks: &[u32],
    target: u32,
    draw: impl FnOnce(u32) -> u32,
) -> Drawn {
    with_lanes!(v, cut.counters, cut.excluded, |l| {
        // SAFETY: a block's span lies within the lanes.
        let block = |b: usize| {
            let (start, len) = cut.span(b);
            (start, unsafe { l.sub(start, len) })
        };
        in_blocks(
            blocks,
            |b| count(&block(b).1, target),
            |b, k| {
                let (start, lanes) = block(b);
                nth(&lanes, target, k).map(|i| start + i)
            },
            draw,
        )
    })
}

/// See [`super::nth_tie`].
#[inline(always)]
pub(super) fn nth_tie<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    with_lanes!(v, counters, excluded, |l| nth(&l, min, k))
}

/// See [`super::least`]: more than [`FEW_LANES`](super::draw::FEW_LANES) lanes.
#[inline(always)]
pub(super) fn least<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    with_lanes!(v, counters, excluded, |l| least_in(&l, draw))
}

/// See [`super::least_weighted`]: more than [`FEW_LANES`](super::draw::FEW_LANES)
/// lanes. The same scan as [`least`], over the lanes' scores.
#[inline(always)]
pub(super) fn least_weighted<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    weights: Weighting<'_>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    with_lanes!(v, counters, excluded, |l| least_in(&Weighted::new(l, weights), draw))
}

/// See [`super::least_credited`]: more than [`FEW_LANES`](super::draw::FEW_LANES)
/// lanes. The same scan as [`least`], over the lanes' cost keys.
#[inline(always)]
pub(super) fn least_credited<V: Vector>(
    v: V,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    credit: Credit<'_>,
    draw: impl FnMut(u32) -> u32,
) -> Least {
    with_lanes!(v, counters, excluded, |l| least_in(&Credited::new(l, credit), draw))
}

/// From this many lanes on, [`min`] prefetches ahead of its loads: 16 KB of
/// counters, half the L1 data cache of the CPUs this was measured on (beyond it the
/// pass streams from L2, below it the prefetches would be pure overhead).
const PREFETCH_LANES: usize = 4096;

/// How far ahead of its loads [`min`] prefetches, in lanes (2 KB).
const PREFETCH_AHEAD: usize = 512;

/// The smallest effective value (`u32::MAX` for no lanes).
#[inline(always)]
pub(super) fn min<V: Vector, L: Source<V>>(l: &L) -> u32 {
    if l.n() >= PREFETCH_LANES {
        min_pass::<V, L, true>(l)
    } else {
        min_pass::<V, L, false>(l)
    }
}

/// [`min`], with software prefetches `PREFETCH_AHEAD` lanes ahead if `PREFETCH`.
/// Measured with AVX2 on a 10 000-lane reserve + release loop (40 KB, beyond L1): 7%
/// faster than the hardware prefetcher alone, as long as the prefetches stop at the
/// last lane (prefetching past it, into the unused counters, made it 19% slower).
#[inline(always)]
fn min_pass<V: Vector, L: Source<V>, const PREFETCH: bool>(l: &L) -> u32 {
    let (s, step) = (l.v(), 4 * V::LANES);
    let mut m = [s.splat(u32::MAX); 4];
    let mut i = 0;
    while i + 2 * step <= l.n() {
        // SAFETY: i + 2 * step <= n.
        let (a, b) = unsafe { (l.get4(i), l.get4(i + step)) };
        if PREFETCH {
            // The 64 lanes (four cache lines) PREFETCH_AHEAD on, or the last 64.
            l.prefetch((i + PREFETCH_AHEAD).min(l.n() - 64));
        }
        for j in 0..4 {
            m[j] = s.min(m[j], s.min(a[j], b[j]));
        }
        i += 2 * step;
    }
    while i + V::LANES <= l.n() {
        // SAFETY: i + LANES <= n.
        m[0] = s.min(m[0], unsafe { l.get(i) });
        i += V::LANES;
    }
    if i < l.n() {
        // SAFETY: i < n < i + LANES.
        m[1] = s.min(m[1], unsafe { l.tail(i) }.0);
    }
    s.hmin(s.min(s.min(m[0], m[1]), s.min(m[2], m[3])))
}

/// How many lanes have the effective value `target` (wrapping, like the scalar count).
#[inline(always)]
pub(super) fn count<V: Vector, L: Source<V>>(l: &L, target: u32) -> u32 {
    let (s, step) = (l.v(), 4 * V::LANES);
    let t = s.splat(target);
    let mut c = [s.splat(0); 4];
    let mut i = 0;
    while i + 2 * step <= l.n() {
        // SAFETY: i + 2 * step <= n.
        let (a, b) = unsafe { (l.get4(i), l.get4(i + step)) };
        for j in 0..4 {
            c[j] = s.count_eq2(c[j], a[j], b[j], t);
        }
        i += 2 * step;
    }
    while i + V::LANES <= l.n() {
        // SAFETY: i + LANES <= n.
        c[0] = s.count_eq(c[0], unsafe { l.get(i) }, t);
        i += V::LANES;
    }
    let mut tail = 0;
    if i < l.n() {
        // SAFETY: i < n < i + LANES. Lanes past the end read as u32::MAX: mask them.
        let (v, real) = unsafe { l.tail(i) };
        tail = (s.eq_bits(v, t) & real).count_ones();
    }
    s.hsum(s.add(s.add(c[0], c[1]), s.add(c[2], c[3]))).wrapping_add(tail)
}

/// Looks for tie number `k` in a block whose ties are the set `bits` (bit j = lane j),
/// `seen` ties having come before it: its lane, or `None` after adding the block's ties.
#[inline(always)]
fn search<V: Vector>(v: V, bits: u64, seen: &mut u32, k: u32) -> Option<usize> {
    let found = bits.count_ones();
    let rank = k - *seen;
    if rank < found {
        Some(v.nth_set_bit(bits, rank))
    } else {
        *seen += found;
        None
    }
}

/// See [`super::nth_tie`].
#[inline(always)]
fn nth<V: Vector, L: Source<V>>(l: &L, min: u32, k: u32) -> Result<usize, u32> {
    let (s, step) = (l.v(), 4 * V::LANES);
    let target = s.splat(min);
    // Invariant: seen <= k (the search returns as soon as the k-th tie is in a block).
    let mut seen = 0;
    let mut i = 0;
    while i + step <= l.n() {
        // SAFETY: i + step <= n.
        let bits = s.eq_bits4(unsafe { l.get4(i) }, target);
        if let Some(j) = search(s, bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += step;
    }
    while i + V::LANES <= l.n() {
        // SAFETY: i + LANES <= n.
        if let Some(j) = search(s, s.eq_bits(unsafe { l.get(i) }, target), &mut seen, k) {
            return Ok(i + j);
        }
        i += V::LANES;
    }
    if i < l.n() {
        // SAFETY: i < n < i + LANES. Lanes past the end read as u32::MAX: mask them.
        let (v, real) = unsafe { l.tail(i) };
        if let Some(j) = search(s, s.eq_bits(v, target) & real, &mut seen, k) {
            return Ok(i + j);
        }
    }
    Err(seen)
}

/// How many segments [`least_in`] counts ties in, at most.
const SEGMENTS: usize = 128;

/// The least-loaded pick: the minimum, the ties counted per segment of the lanes, one
/// draw, then a search of the one segment that holds the drawn tie. The segments bound
/// that search to 512 lanes up to 65 536 lanes (and to 1/128 of the lanes beyond).
#[inline(always)]
fn least_in<V: Vector, L: Source<V>>(l: &L, mut draw: impl FnMut(u32) -> u32) -> Least {
    // SAFETY (of `value`): both callers ask only for lanes below n.
    let value = |i: usize| unsafe { l.value(i) };
    if l.n() <= SMALL_LANES {
        return least_short(l, value, draw);
    }
    let min = min(l);
    if min == u32::MAX {
        return Least::Saturated;
    }
    if let Some(index) = sample::<SAMPLES>(l.n(), value, min, &mut draw) {
        return Least::Found { index, min };
    }
    let seg = l.n().div_ceil(SEGMENTS).next_multiple_of(64).max(512);
    let mut per = [0u32; SEGMENTS];
    let mut ties = 0u32;
    for (s, per) in per.iter_mut().enumerate() {
        let start = s * seg;
        if start >= l.n() {
            break;
        }
        // SAFETY: start < n, and the length stops at n.
        *per = count(&unsafe { l.sub(start, seg.min(l.n() - start)) }, min);
        ties = ties.wrapping_add(*per);
    }
    if ties == 0 {
        // The lanes at the minimum moved since the min pass.
        return Least::Moved;
    }
    let mut k = draw_among(ties, draw);
    for (s, &here) in per.iter().enumerate() {
        if k < here {
            let start = s * seg;
            // SAFETY: a segment with ties starts below n; the length stops at n.
            let lanes = unsafe { l.sub(start, seg.min(l.n() - start)) };
            return match nth(&lanes, min, k) {
                Ok(i) => Least::Found {
                    index: start + i,
                    min,
                },
                Err(_) => Least::Moved,
            };
        }
        k -= here;
    }
    // k < ties, the sum of `per`: not reached.
    Least::Moved
}

/// The most vectors [`least_short`] holds: `SMALL_LANES` lanes of the narrowest
/// backend (4 lanes).
const SHORT_VECTORS: usize = SMALL_LANES / 4;

/// [`least_in`] for up to 32 lanes: one read into registers, one random try, and if it
/// misses the ties taken from the registers as a bit set, so no second pass (and no
/// `Moved`). Besides saving work, this keeps short the chain from the counters to the
/// chosen lane, which in a loop of reservations is latency the next locked booking
/// waits for.
#[inline(always)]
fn least_short<V: Vector, L: Source<V>>(
    l: &L,
    value: impl Fn(usize) -> u32,
    mut draw: impl FnMut(u32) -> u32,
) -> Least {
    let s = l.v();
    // Vector j holds lanes j * LANES..(j + 1) * LANES; lanes past n, and vectors past
    // SMALL_LANES lanes (constant for a backend), read as u32::MAX.
    let vectors = SMALL_LANES.div_ceil(V::LANES).min(SHORT_VECTORS);
    let mut v = [s.splat(u32::MAX); SHORT_VECTORS];
    for (j, v) in v.iter_mut().enumerate().take(vectors) {
        let i = j * V::LANES;
        if i + V::LANES <= l.n() {
            // SAFETY: i + LANES <= n.
            *v = unsafe { l.get(i) };
        } else if i < l.n() {
            // SAFETY: i < n < i + LANES.
            *v = unsafe { l.tail(i) }.0;
        }
    }
    // A tree of minimums over the vectors in use.
    let mut m = v;
    let mut width = SHORT_VECTORS / 2;
    while width > 0 {
        for j in 0..width {
            m[j] = s.min(m[j], m[j + width]);
        }
        width /= 2;
    }
    let min = s.hmin(m[0]);
    if min == u32::MAX {
        return if l.n() == 0 { Least::Empty } else { Least::Saturated };
    }
    if let Some(index) = sample::<1>(l.n(), value, min, &mut draw) {
        return Least::Found { index, min };
    }
    // Only lanes below n can equal a minimum below u32::MAX, and n <= 32.
    let target = s.splat(min);
    let mut bits = 0u64;
    for (j, &v) in v.iter().enumerate().take(vectors) {
        bits |= s.eq_bits(v, target) << (j * V::LANES);
    }
    let bits = bits as u32;
    Least::Found {
        index: drawn_lane(bits, bits.count_ones(), l.n(), draw),
        min,
    }
}
