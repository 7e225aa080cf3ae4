//! AVX2 backend: 8 lanes per vector, four independent accumulators (32 lanes) per
//! loop step, the last 1-7 lanes read with one masked load (no scalar tail).

use super::MinTies;
use crate::sync::atomic::AtomicU32;
use core::arch::asm;
use core::arch::x86_64::*;

/// Loads the 8 counters at `$p` with one `vmovdqu`, or with a lane mask `$m` (all-ones
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

/// The effective values `counters[i] | excluded[i]` of lanes `$i..$i + 8`, or of the
/// lanes selected by mask `$m` (others 0). Needs `unsafe`: the lanes read must be in
/// bounds of both slices.
macro_rules! lanes {
    ($c:expr, $e:expr, $i:expr) => {
        _mm256_or_si256(load_counters!($c.add($i)), _mm256_loadu_si256($e.add($i).cast()))
    };
    ($c:expr, $e:expr, $i:expr, $m:expr) => {
        _mm256_or_si256(
            load_counters!($c.add($i), $m),
            _mm256_maskload_epi32($e.add($i).cast(), $m),
        )
    };
}

/// [`lanes!`] for the four vectors from `$i`: lanes `$i..$i + 32`, same requirement.
macro_rules! block {
    ($c:expr, $e:expr, $i:expr) => {
        (
            lanes!($c, $e, $i),
            lanes!($c, $e, $i + 8),
            lanes!($c, $e, $i + 16),
            lanes!($c, $e, $i + 24),
        )
    };
}

/// The first `len` lanes (`len <= 8`), as a vector mask (all-ones lanes) and as bits.
#[inline]
#[target_feature(enable = "avx2")]
fn first_lanes(len: usize) -> (__m256i, u32) {
    static WINDOW: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
    let len = len.min(8);
    // SAFETY: 8 - len <= 8, so the 8 lanes read lie inside the 16 of WINDOW.
    let mask = unsafe { _mm256_loadu_si256(WINDOW.as_ptr().add(8 - len).cast()) };
    (mask, (1 << len) - 1)
}

/// Per lane: the running minimum and how many values seen in that lane equal it.
#[derive(Clone, Copy)]
struct Acc {
    min: __m256i,
    ties: __m256i,
}

impl Acc {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new() -> Acc {
        Acc {
            min: _mm256_set1_epi32(-1),
            ties: _mm256_setzero_si256(),
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn step(self, v: __m256i) -> Acc {
        let min = _mm256_min_epu32(self.min, v);
        // All-ones where the minimum did not drop / where `v` equals the new minimum.
        let kept = _mm256_cmpeq_epi32(min, self.min);
        let hit = _mm256_cmpeq_epi32(v, min);
        // A drop restarts the count; a hit adds one (minus all-ones).
        let ties = _mm256_sub_epi32(_mm256_and_si256(self.ties, kept), hit);
        Acc { min, ties }
    }

    /// [`Acc::step`] for the lanes of `v` selected by the vector mask `valid` only.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn step_masked(self, v: __m256i, valid: __m256i) -> Acc {
        // Other lanes become u32::MAX, so they never lower the minimum, and never hit.
        let v = _mm256_or_si256(v, _mm256_xor_si256(valid, _mm256_set1_epi32(-1)));
        let min = _mm256_min_epu32(self.min, v);
        let kept = _mm256_cmpeq_epi32(min, self.min);
        let hit = _mm256_and_si256(_mm256_cmpeq_epi32(v, min), valid);
        let ties = _mm256_sub_epi32(_mm256_and_si256(self.ties, kept), hit);
        Acc { min, ties }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn merge(self, other: Acc) -> Acc {
        let min = _mm256_min_epu32(self.min, other.min);
        let mine = _mm256_and_si256(self.ties, _mm256_cmpeq_epi32(self.min, min));
        let theirs = _mm256_and_si256(other.ties, _mm256_cmpeq_epi32(other.min, min));
        Acc {
            min,
            ties: _mm256_add_epi32(mine, theirs),
        }
    }

    /// Reduces the 8 lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn finish(self) -> MinTies {
        let min = hmin(self.min);
        let at_min = _mm256_cmpeq_epi32(self.min, _mm256_set1_epi32(min as i32));
        let t = _mm256_and_si256(self.ties, at_min);
        let t = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
        let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b01_00_11_10>(t));
        let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b10_11_00_01>(t));
        MinTies {
            min,
            ties: _mm_cvtsi128_si32(t) as u32,
        }
    }
}

#[target_feature(enable = "avx2,popcnt")]
pub(super) fn min_ties(counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    let n = counters.len().min(excluded.len());
    let (c, e) = (counters.as_ptr(), excluded.as_ptr());
    if n <= 8 {
        // One vector: reduce it directly, no per-lane counts needed.
        let (valid, valid_bits) = first_lanes(n);
        // SAFETY: `valid` selects lanes 0..n, in bounds of both slices.
        let v = unsafe { lanes!(c, e, 0, valid) };
        let v = _mm256_or_si256(v, _mm256_xor_si256(valid, _mm256_set1_epi32(-1)));
        let min = hmin(v);
        let bits = eq_bits(v, _mm256_set1_epi32(min as i32)) & valid_bits;
        return MinTies {
            min,
            ties: bits.count_ones(),
        };
    }
    let (mut a0, mut a1, mut a2, mut a3) = (Acc::new(), Acc::new(), Acc::new(), Acc::new());
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: i + 32 <= n, so lanes i..i + 32 are in bounds of both slices.
        let (v0, v1, v2, v3) = unsafe { block!(c, e, i) };
        a0 = a0.step(v0);
        a1 = a1.step(v1);
        a2 = a2.step(v2);
        a3 = a3.step(v3);
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: i + 8 <= n.
        a0 = a0.step(unsafe { lanes!(c, e, i) });
        i += 8;
    }
    if i < n {
        let (valid, _) = first_lanes(n - i);
        // SAFETY: `valid` selects lanes i..n, in bounds of both slices.
        a1 = a1.step_masked(unsafe { lanes!(c, e, i, valid) }, valid);
    }
    a0.merge(a1).merge(a2.merge(a3)).finish()
}

#[target_feature(enable = "avx2,popcnt")]
pub(super) fn nth_tie(counters: &[AtomicU32], excluded: &[u32], min: u32, k: u32) -> Result<usize, u32> {
    let n = counters.len().min(excluded.len());
    let (c, e) = (counters.as_ptr(), excluded.as_ptr());
    let target = _mm256_set1_epi32(min as i32);
    // Invariant: seen <= k (the search returns as soon as the k-th tie is in a block).
    let mut seen = 0;
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: i + 32 <= n, so lanes i..i + 32 are in bounds of both slices.
        let (v0, v1, v2, v3) = unsafe { block!(c, e, i) };
        let bits = eq_bits(v0, target)
            | eq_bits(v1, target) << 8
            | eq_bits(v2, target) << 16
            | eq_bits(v3, target) << 24;
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: i + 8 <= n.
        let bits = eq_bits(unsafe { lanes!(c, e, i) }, target);
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += 8;
    }
    if i < n {
        let (valid, valid_bits) = first_lanes(n - i);
        // SAFETY: `valid` selects lanes i..n, in bounds of both slices.
        let v = unsafe { lanes!(c, e, i, valid) };
        if let Some(j) = search(eq_bits(v, target) & valid_bits, &mut seen, k) {
            return Ok(i + j);
        }
    }
    Err(seen)
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

/// Looks for tie number `k` in a block whose ties are the set `bits` (bit j = lane j),
/// `seen` ties having come before it: its lane, or `None` after adding the block's ties.
#[inline]
#[target_feature(enable = "popcnt")]
fn search(bits: u32, seen: &mut u32, k: u32) -> Option<usize> {
    let found = bits.count_ones();
    let rank = k - *seen;
    if rank < found {
        Some(nth_set_bit(bits, rank))
    } else {
        *seen += found;
        None
    }
}

/// The position of the set bit of `bits` with `rank` set bits below it
/// (`rank < bits.count_ones()`). Halves by popcount down to a byte, then clears at most
/// 7 bits: no BMI2 `pdep`, which is microcoded on AMD before Zen 3.
#[inline]
#[target_feature(enable = "popcnt")]
fn nth_set_bit(mut bits: u32, mut rank: u32) -> usize {
    let mut pos = 0;
    for width in [16, 8] {
        let low = bits & ((1 << width) - 1);
        let below = low.count_ones();
        if rank >= below {
            rank -= below;
            bits >>= width;
            pos += width;
        } else {
            bits = low;
        }
    }
    for _ in 0..rank {
        bits &= bits - 1;
    }
    (pos + bits.trailing_zeros()) as usize
}
