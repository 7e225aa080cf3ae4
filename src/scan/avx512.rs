//! AVX-512 backend: 16 lanes per vector, four independent accumulators (64 lanes) per
//! loop step, the last 1-15 lanes read with one masked load (no scalar tail).

use super::MinTies;
use crate::sync::atomic::AtomicU32;
use core::arch::asm;
use core::arch::x86_64::*;

/// Loads the 16 counters at `$p` with one `vmovdqu32`, or with a mask `$k` only the
/// lanes whose bit is set (the others read as 0 and are not accessed, so they may lie
/// past the slice). Per lane a Relaxed load: see "Soundness of the vector loads" in the
/// parent module. Expands to inline asm, so it needs an `unsafe` block whose caller shows
/// that the loaded lanes are in bounds.
macro_rules! load_counters {
    ($p:expr) => {{
        let v: __m512i;
        asm!(
            "vmovdqu32 {v}, zmmword ptr [{p}]",
            p = in(reg) $p,
            v = out(zmm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
        v
    }};
    ($p:expr, $k:expr) => {{
        let v: __m512i;
        asm!(
            "vmovdqu32 {v}{{{k}}}{{z}}, zmmword ptr [{p}]",
            p = in(reg) $p,
            k = in(kreg) $k,
            v = out(zmm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
        v
    }};
}

/// The effective values `counters[i] | excluded[i]` of lanes `$i..$i + 16`, or of the
/// lanes selected by mask `$k` (others 0). Needs `unsafe`: the lanes read must be in
/// bounds of both slices.
macro_rules! lanes {
    ($c:expr, $e:expr, $i:expr) => {
        _mm512_or_si512(load_counters!($c.add($i)), _mm512_loadu_si512($e.add($i).cast()))
    };
    ($c:expr, $e:expr, $i:expr, $k:expr) => {
        _mm512_or_si512(
            load_counters!($c.add($i), $k),
            _mm512_maskz_loadu_epi32($k, $e.add($i).cast()),
        )
    };
}

/// [`lanes!`] for the four vectors from `$i`: lanes `$i..$i + 64`, same requirement.
macro_rules! block {
    ($c:expr, $e:expr, $i:expr) => {
        (
            lanes!($c, $e, $i),
            lanes!($c, $e, $i + 16),
            lanes!($c, $e, $i + 32),
            lanes!($c, $e, $i + 48),
        )
    };
}

/// The mask of the first `len` lanes, `len <= 16`.
#[inline]
fn first_lanes(len: usize) -> __mmask16 {
    ((1u32 << len) - 1) as __mmask16
}

/// Per lane: the running minimum and how many values seen in that lane equal it.
#[derive(Clone, Copy)]
struct Acc {
    min: __m512i,
    ties: __m512i,
}

impl Acc {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Acc {
        Acc {
            min: _mm512_set1_epi32(-1),
            ties: _mm512_setzero_si512(),
        }
    }

    /// Folds in the lanes of `v` selected by `valid`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn step(self, v: __m512i, valid: __mmask16) -> Acc {
        let min = _mm512_mask_min_epu32(self.min, valid, self.min, v);
        let kept = _mm512_cmpeq_epi32_mask(min, self.min);
        let hit = _mm512_mask_cmpeq_epi32_mask(valid, v, min);
        // A drop restarts the count; a hit adds one (minus all-ones).
        let ties = _mm512_maskz_mov_epi32(kept, self.ties);
        let ties = _mm512_mask_sub_epi32(ties, hit, ties, _mm512_set1_epi32(-1));
        Acc { min, ties }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn merge(self, other: Acc) -> Acc {
        let min = _mm512_min_epu32(self.min, other.min);
        let mine = _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(self.min, min), self.ties);
        let theirs = _mm512_cmpeq_epi32_mask(other.min, min);
        Acc {
            min,
            ties: _mm512_mask_add_epi32(mine, theirs, mine, other.ties),
        }
    }

    /// Reduces the 16 lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn finish(self) -> MinTies {
        let min = _mm512_reduce_min_epu32(self.min);
        let at_min = _mm512_cmpeq_epi32_mask(self.min, _mm512_set1_epi32(min as i32));
        MinTies {
            min,
            ties: _mm512_mask_reduce_add_epi32(at_min, self.ties) as u32,
        }
    }
}

#[target_feature(enable = "avx512f,bmi2,popcnt")]
pub(super) fn min_ties(counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    let n = counters.len().min(excluded.len());
    let (c, e) = (counters.as_ptr(), excluded.as_ptr());
    let all = first_lanes(16);
    let (mut a0, mut a1, mut a2, mut a3) = (Acc::new(), Acc::new(), Acc::new(), Acc::new());
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n, so lanes i..i + 64 are in bounds of both slices.
        let (v0, v1, v2, v3) = unsafe { block!(c, e, i) };
        a0 = a0.step(v0, all);
        a1 = a1.step(v1, all);
        a2 = a2.step(v2, all);
        a3 = a3.step(v3, all);
        i += 64;
    }
    while i + 16 <= n {
        // SAFETY: i + 16 <= n.
        a0 = a0.step(unsafe { lanes!(c, e, i) }, all);
        i += 16;
    }
    if i < n {
        let valid = first_lanes(n - i);
        // SAFETY: `valid` selects lanes i..n, in bounds of both slices.
        a1 = a1.step(unsafe { lanes!(c, e, i, valid) }, valid);
    }
    a0.merge(a1).merge(a2.merge(a3)).finish()
}

#[target_feature(enable = "avx512f,bmi2,popcnt")]
pub(super) fn nth_tie(counters: &[AtomicU32], excluded: &[u32], min: u32, k: u32) -> Result<usize, u32> {
    let n = counters.len().min(excluded.len());
    let (c, e) = (counters.as_ptr(), excluded.as_ptr());
    let target = _mm512_set1_epi32(min as i32);
    let eq_bits = |v: __m512i| u64::from(_mm512_cmpeq_epi32_mask(v, target));
    // Invariant: seen <= k (the search returns as soon as the k-th tie is in a block).
    let mut seen = 0;
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n, so lanes i..i + 64 are in bounds of both slices.
        let (v0, v1, v2, v3) = unsafe { block!(c, e, i) };
        let bits = eq_bits(v0) | eq_bits(v1) << 16 | eq_bits(v2) << 32 | eq_bits(v3) << 48;
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += 64;
    }
    while i + 16 <= n {
        // SAFETY: i + 16 <= n.
        let bits = eq_bits(unsafe { lanes!(c, e, i) });
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
        i += 16;
    }
    if i < n {
        let valid = first_lanes(n - i);
        // SAFETY: `valid` selects lanes i..n, in bounds of both slices.
        let v = unsafe { lanes!(c, e, i, valid) };
        let bits = u64::from(_mm512_mask_cmpeq_epi32_mask(valid, v, target));
        if let Some(j) = search(bits, &mut seen, k) {
            return Ok(i + j);
        }
    }
    Err(seen)
}

/// Looks for tie number `k` in a block whose ties are the set `bits` (bit j = lane j),
/// `seen` ties having come before it: its lane, or `None` after adding the block's ties.
/// Every CPU with AVX-512 has a fast `pdep`.
#[inline]
#[target_feature(enable = "bmi2,popcnt")]
fn search(bits: u64, seen: &mut u32, k: u32) -> Option<usize> {
    let found = bits.count_ones();
    let rank = k - *seen;
    if rank < found {
        Some(_pdep_u64(1 << rank, bits).trailing_zeros() as usize)
    } else {
        *seen += found;
        None
    }
}
