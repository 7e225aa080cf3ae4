//! AVX2 backend: 8 lanes per vector. A scan is up to three simple passes, each a loop of
//! four independent vector chains with no branch but the loop's: the minimum, then how
//! many lanes equal it, then (for [`nth_tie`]) where the k-th of them lies. Three cheap
//! passes over data that sits in L1 beat one fused pass that keeps a per-lane tie count
//! beside a per-lane minimum (about 3 vector operations per 8 lanes against 8).
//! The last 1-7 lanes of a pass are read with one masked load (no scalar tail).
//!
//! With `ALL` the scan covers every lane of `counters` and never reads `excluded` (the
//! caller passes a null pointer): half the loads of a scan with an exclusion array.

use super::{Least, MinTies};
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};
use core::arch::asm;
use core::arch::x86_64::*;

/// Loads the 8 counters at `$p` with one `vmovdqu` (`4 at $p`: the 32 from `$p`, with
/// four, in one asm block so that they share one address register), or with a lane mask `$m` (all-ones
/// lanes) one `vpmaskmovd` that reads only those lanes (the others read as 0 and are not
/// accessed, so they may lie past the slice). Per lane a Relaxed load: see "Soundness of
/// the vector loads" in the parent module. Expands to inline asm, so it needs an `unsafe`
/// block whose caller shows that the loaded lanes are in bounds.
macro_rules! load_counters {
    ($p:expr) => {{
        let v: __m256i;
        asm!(
            "vmovdqu {v}, ymmword ptr [{p}]",
            p = in(reg) $p,
            v = out(ymm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
        v
    }};
    (4 at $p:expr) => {{
        let (v0, v1, v2, v3): (__m256i, __m256i, __m256i, __m256i);
        asm!(
            "vmovdqu {v0}, ymmword ptr [{p}]",
            "vmovdqu {v1}, ymmword ptr [{p} + 32]",
            "vmovdqu {v2}, ymmword ptr [{p} + 64]",
            "vmovdqu {v3}, ymmword ptr [{p} + 96]",
            p = in(reg) $p,
            v0 = out(ymm_reg) v0,
            v1 = out(ymm_reg) v1,
            v2 = out(ymm_reg) v2,
            v3 = out(ymm_reg) v3,
            options(pure, readonly, nostack, preserves_flags),
        );
        [v0, v1, v2, v3]
    }};
    ($p:expr, $m:expr) => {{
        let v: __m256i;
        asm!(
            "vpmaskmovd {v}, {m}, ymmword ptr [{p}]",
            p = in(reg) $p,
            m = in(ymm_reg) $m,
            v = out(ymm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
        v
    }};
}

/// The lanes a scan reads: `n` counters from `c`, each ORed with the matching entry of
/// `e` unless `ALL`.
///
/// Invariant (what the constructor's caller promises): `c` points to `n` live atomics,
/// and unless `ALL`, `e` to `n` readable `u32`s, for as long as the value is used.
struct Lanes<const ALL: bool> {
    c: *const AtomicU32,
    e: *const u32,
    n: usize,
}

impl<const ALL: bool> Lanes<ALL> {
    /// The effective values of lanes `i..i + 32`, as four vectors.
    ///
    /// # Safety
    /// `i + 32 <= self.n`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn get4(&self, i: usize) -> [__m256i; 4] {
        // SAFETY: lanes i..i + 32 are in bounds (the caller's promise and the invariant).
        unsafe {
            let v = load_counters!(4 at self.c.add(i));
            if ALL {
                v
            } else {
                let e = self.e.add(i);
                core::array::from_fn(|j| _mm256_or_si256(v[j], _mm256_loadu_si256(e.add(8 * j).cast())))
            }
        }
    }

    /// The effective values of lanes `i..i + 8`.
    ///
    /// # Safety
    /// `i + 8 <= self.n`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn get(&self, i: usize) -> __m256i {
        // SAFETY: lanes i..i + 8 are in bounds (the caller's promise and the invariant).
        unsafe {
            let v = load_counters!(self.c.add(i));
            if ALL {
                v
            } else {
                _mm256_or_si256(v, _mm256_loadu_si256(self.e.add(i).cast()))
            }
        }
    }

    /// The effective value of lane `i`, read with a scalar load.
    ///
    /// # Safety
    /// `i < self.n`.
    #[inline]
    unsafe fn value(&self, i: usize) -> u32 {
        // SAFETY: lane i is in bounds (the caller's promise and the invariant).
        let v = unsafe { &*self.c.add(i) }.load(Relaxed);
        // SAFETY: as above; `e` is read only when it is not null.
        if ALL { v } else { v | unsafe { *self.e.add(i) } }
    }

    /// Lanes `start..start + len` of these, as lanes `0..len`.
    ///
    /// # Safety
    /// `start + len <= self.n`.
    #[inline]
    unsafe fn sub(&self, start: usize, len: usize) -> Lanes<ALL> {
        Lanes {
            // SAFETY: start <= n, so both stay within (or one past) their arrays.
            c: unsafe { self.c.add(start) },
            // Never read when `ALL` (then it is null): no in-bounds claim is made.
            e: self.e.wrapping_add(start),
            n: len,
        }
    }

    /// The effective values of lanes `i..n` in the low lanes of the result, the others
    /// `u32::MAX`; and the mask of the lanes that are real (all-ones lanes).
    ///
    /// # Safety
    /// `i < self.n`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn tail(&self, i: usize) -> (__m256i, __m256i) {
        let valid = first_lanes(self.n - i);
        // SAFETY: `valid` selects lanes i..min(n, i + 8), in bounds by the invariant;
        // the masked loads do not access the other lanes.
        let v = unsafe {
            let v = load_counters!(self.c.add(i), valid);
            if ALL {
                v
            } else {
                _mm256_or_si256(v, _mm256_maskload_epi32(self.e.add(i).cast(), valid))
            }
        };
        (
            _mm256_or_si256(v, _mm256_andnot_si256(valid, _mm256_set1_epi32(-1))),
            valid,
        )
    }
}

/// Runs `$body` with `$l` bound to the [`Lanes`] of `$counters` (all of them when
/// `$excluded` is `None`, else as many as both slices have).
macro_rules! with_lanes {
    ($counters:expr, $excluded:expr, |$l:ident| $body:expr) => {
        match $excluded {
            None => {
                let $l = Lanes::<true> {
                    c: $counters.as_ptr(),
                    e: core::ptr::null(),
                    n: $counters.len(),
                };
                $body
            }
            Some(e) => {
                let $l = Lanes::<false> {
                    c: $counters.as_ptr(),
                    e: e.as_ptr(),
                    n: $counters.len().min(e.len()),
                };
                $body
            }
        }
    };
}

/// The first `len` lanes (`len` capped at 8) as a vector mask (all-ones lanes).
#[inline]
#[target_feature(enable = "avx2")]
fn first_lanes(len: usize) -> __m256i {
    static WINDOW: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
    let len = len.min(8);
    // SAFETY: 8 - len <= 8, so the 8 lanes read lie inside the 16 of WINDOW.
    unsafe { _mm256_loadu_si256(WINDOW.as_ptr().add(8 - len).cast()) }
}

/// From this many lanes on, [`min`] prefetches ahead of its loads: 16 KB of
/// counters, half the L1 data cache of the CPUs this was measured on (beyond it the
/// pass streams from L2, below it the prefetches would be pure overhead).
const PREFETCH_LANES: usize = 4096;

/// How far ahead of its loads [`min`] prefetches, in lanes (2 KB).
const PREFETCH_AHEAD: usize = 512;

/// The smallest effective value (`u32::MAX` for no lanes).
#[inline]
#[target_feature(enable = "avx2")]
fn min<const ALL: bool>(l: &Lanes<ALL>) -> u32 {
    if l.n >= PREFETCH_LANES {
        min_pass::<ALL, true>(l)
    } else {
        min_pass::<ALL, false>(l)
    }
}

/// [`min`], with software prefetches `PREFETCH_AHEAD` lanes ahead if `PREFETCH`.
/// Measured on a 10 000-lane reserve + release loop (40 KB, beyond L1): 7% faster
/// than the hardware prefetcher alone, as long as the prefetches stop at the last
/// lane (prefetching past it, into the unused counters, made it 19% slower).
#[inline]
#[target_feature(enable = "avx2")]
fn min_pass<const ALL: bool, const PREFETCH: bool>(l: &Lanes<ALL>) -> u32 {
    let mut m = [_mm256_set1_epi32(-1); 4];
    let mut i = 0;
    while i + 64 <= l.n {
        // SAFETY: i + 64 <= n.
        let (v, w) = unsafe { (l.get4(i), l.get4(i + 32)) };
        if PREFETCH {
            // The 64 lanes (four cache lines) PREFETCH_AHEAD on, or the last 64.
            // A prefetch accesses nothing: any address is sound.
            let ahead = (i + PREFETCH_AHEAD).min(l.n - 64);
            for line in 0..4 {
                _mm_prefetch::<_MM_HINT_T0>(l.c.wrapping_add(ahead + 16 * line).cast());
                if !ALL {
                    _mm_prefetch::<_MM_HINT_T0>(l.e.wrapping_add(ahead + 16 * line).cast());
                }
            }
        }
        for j in 0..4 {
            m[j] = _mm256_min_epu32(m[j], _mm256_min_epu32(v[j], w[j]));
        }
        i += 64;
    }
    while i + 8 <= l.n {
        // SAFETY: i + 8 <= n.
        m[0] = _mm256_min_epu32(m[0], unsafe { l.get(i) });
        i += 8;
    }
    if i < l.n {
        // SAFETY: i < n.
        m[1] = _mm256_min_epu32(m[1], unsafe { l.tail(i) }.0);
    }
    hmin(_mm256_min_epu32(
        _mm256_min_epu32(m[0], m[1]),
        _mm256_min_epu32(m[2], m[3]),
    ))
}

/// How many lanes have the effective value `target`.
#[inline]
#[target_feature(enable = "avx2")]
fn count<const ALL: bool>(l: &Lanes<ALL>, target: u32) -> u32 {
    let t = _mm256_set1_epi32(target as i32);
    // Per-lane counts: a match is all-ones, i.e. -1, so subtracting it adds one.
    let mut c = [_mm256_setzero_si256(); 4];
    let mut i = 0;
    while i + 64 <= l.n {
        // SAFETY: i + 64 <= n.
        let (v, w) = unsafe { (l.get4(i), l.get4(i + 32)) };
        for j in 0..4 {
            let hits = _mm256_add_epi32(_mm256_cmpeq_epi32(v[j], t), _mm256_cmpeq_epi32(w[j], t));
            c[j] = _mm256_sub_epi32(c[j], hits);
        }
        i += 64;
    }
    while i + 8 <= l.n {
        // SAFETY: i + 8 <= n.
        c[0] = _mm256_sub_epi32(c[0], _mm256_cmpeq_epi32(unsafe { l.get(i) }, t));
        i += 8;
    }
    if i < l.n {
        // SAFETY: i < n.
        let (v, valid) = unsafe { l.tail(i) };
        c[1] = _mm256_sub_epi32(c[1], _mm256_and_si256(_mm256_cmpeq_epi32(v, t), valid));
    }
    hsum(_mm256_add_epi32(
        _mm256_add_epi32(c[0], c[1]),
        _mm256_add_epi32(c[2], c[3]),
    ))
}

/// See [`super::nth_tie`].
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn nth<const ALL: bool>(l: &Lanes<ALL>, min: u32, k: u32) -> Result<usize, u32> {
    let target = _mm256_set1_epi32(min as i32);
    // Invariant: seen <= k (the search returns as soon as the k-th tie is in a block).
    let mut seen = 0;
    let mut i = 0;
    while i + 32 <= l.n {
        // SAFETY: i + 32 <= n.
        let v = unsafe { l.get4(i) };
        let mut bits = 0;
        for (j, &v) in v.iter().enumerate() {
            bits |= eq_bits(v, target) << (8 * j);
        }
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += 32;
    }
    while i + 8 <= l.n {
        // SAFETY: i + 8 <= n.
        if let Some(j) = search(eq_bits(unsafe { l.get(i) }, target), &mut seen, k) {
            return Ok(i + j);
        }
        i += 8;
    }
    if i < l.n {
        // SAFETY: i < n. Lanes past the end read as u32::MAX: mask them out.
        let (v, valid) = unsafe { l.tail(i) };
        let bits = eq_bits(v, target) & _mm256_movemask_ps(_mm256_castsi256_ps(valid)) as u32;
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
    }
    Err(seen)
}

/// See [`super::least`].
///
/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(super) fn least(counters: &[AtomicU32], excluded: Option<&[u32]>, draw: impl FnMut(u32) -> u32) -> Least {
    with_lanes!(counters, excluded, |l| least_in(&l, draw))
}

/// How many segments [`least_in`] counts ties in, at most.
const SEGMENTS: usize = 128;

/// The least-loaded pick: the minimum, the ties counted per segment of the lanes, one
/// draw, then a search of the one segment that holds the drawn tie. The segments bound
/// that search to 512 lanes up to 65 536 lanes (and to 1/128 of the lanes beyond).
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn least_in<const ALL: bool>(l: &Lanes<ALL>, mut draw: impl FnMut(u32) -> u32) -> Least {
    // SAFETY (of `value`): both callers ask only for lanes below n.
    let value = |i: usize| unsafe { l.value(i) };
    if l.n <= super::SMALL_LANES {
        return least_short(l, value, draw);
    }
    let min = min(l);
    if min == u32::MAX {
        return if l.n == 0 { Least::Empty } else { Least::Saturated };
    }
    if let Some(index) = super::sample::<{ super::SAMPLES }>(l.n, value, min, &mut draw) {
        return Least::Found { index, min };
    }
    let seg = l.n.div_ceil(SEGMENTS).next_multiple_of(64).max(512);
    let mut per = [0u32; SEGMENTS];
    let mut ties = 0u32;
    for (s, per) in per.iter_mut().enumerate() {
        let start = s * seg;
        if start >= l.n {
            break;
        }
        // SAFETY: start < n, and the length stops at n.
        *per = count(&unsafe { l.sub(start, seg.min(l.n - start)) }, min);
        ties = ties.wrapping_add(*per);
    }
    if ties == 0 {
        // The lanes at the minimum moved since the min pass.
        return Least::Moved;
    }
    let mut k = super::draw_among(ties, draw);
    for (s, &here) in per.iter().enumerate() {
        if k < here {
            let start = s * seg;
            // SAFETY: a segment with ties starts below n; the length stops at n.
            let lanes = unsafe { l.sub(start, seg.min(l.n - start)) };
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

/// [`least_in`] for up to 32 lanes: one read into registers, one random try, and if it
/// misses the ties taken from the registers as a bit set, so no second pass (and no
/// `Moved`). Besides saving work, this keeps short the chain from the counters to the
/// chosen lane, which in a loop of reservations is latency the next locked booking
/// waits for.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn least_short<const ALL: bool>(
    l: &Lanes<ALL>,
    value: impl Fn(usize) -> u32,
    mut draw: impl FnMut(u32) -> u32,
) -> Least {
    // Vector j holds lanes 8j..8j + 8; lanes past n read as u32::MAX.
    let vector = |j: usize| {
        let i = 8 * j;
        if i + 8 <= l.n {
            // SAFETY: i + 8 <= n.
            unsafe { l.get(i) }
        } else if i < l.n {
            // SAFETY: i < n.
            unsafe { l.tail(i) }.0
        } else {
            _mm256_set1_epi32(-1)
        }
    };
    let v = [vector(0), vector(1), vector(2), vector(3)];
    let min = hmin(_mm256_min_epu32(
        _mm256_min_epu32(v[0], v[1]),
        _mm256_min_epu32(v[2], v[3]),
    ));
    if min == u32::MAX {
        return if l.n == 0 { Least::Empty } else { Least::Saturated };
    }
    if let Some(index) = super::sample::<1>(l.n, value, min, &mut draw) {
        return Least::Found { index, min };
    }
    // Only lanes below n can equal a minimum below u32::MAX.
    let target = _mm256_set1_epi32(min as i32);
    let mut bits = 0;
    for (j, &v) in v.iter().enumerate() {
        bits |= eq_bits(v, target) << (8 * j);
    }
    Least::Found {
        index: super::drawn_lane(bits, bits.count_ones(), l.n, draw),
        min,
    }
}

/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(super) fn min_ties(counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
    with_lanes!(counters, excluded, |l| {
        let min = min(&l);
        MinTies {
            min,
            ties: count(&l, min),
        }
    })
}

/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(super) fn nth_tie(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    with_lanes!(counters, excluded, |l| nth(&l, min, k))
}

/// Bit j set where lane j of `v` equals `target`.
#[inline]
#[target_feature(enable = "avx2")]
fn eq_bits(v: __m256i, target: __m256i) -> u32 {
    _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, target))) as u32
}

/// The minimum of the 8 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn hmin(v: __m256i) -> u32 {
    let m = _mm_min_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0b01_00_11_10>(m));
    let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0b10_11_00_01>(m));
    _mm_cvtsi128_si32(m) as u32
}

/// The wrapping sum of the 8 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum(v: __m256i) -> u32 {
    let t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b01_00_11_10>(t));
    let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b10_11_00_01>(t));
    _mm_cvtsi128_si32(t) as u32
}

/// Looks for tie number `k` in a block whose ties are the set `bits` (bit j = lane j),
/// `seen` ties having come before it: its lane, or `None` after adding the block's ties.
#[inline]
#[target_feature(enable = "popcnt")]
fn search(bits: u32, seen: &mut u32, k: u32) -> Option<usize> {
    let found = bits.count_ones();
    let rank = k - *seen;
    if rank < found {
        Some(super::nth_set_bit(bits, rank))
    } else {
        *seen += found;
        None
    }
}
