//! AVX2 backend: 8 lanes per vector. The last 1-7 lanes of a pass are read with one
//! masked load (`vpmaskmovd`).

use super::vector::{Op, Vector};
use crate::sync::atomic::AtomicU32;
use core::arch::asm;
use core::arch::x86_64::*;

/// The AVX2 and POPCNT instructions; exists only inside [`run`].
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

/// Runs `op` with AVX2.
///
/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(super) fn run<O: Op>(op: O) -> O::Out {
    op.vector(Avx2(()))
}

/// The counters `p[0..8]` with one `vmovdqu`: per lane a Relaxed load (see "Soundness
/// of the vector loads" in the module docs). (Inline asm on ymm registers needs a
/// function with the target feature: one per load.)
///
/// # Safety
/// `p[0..8]` are live atomics; the CPU runs AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn load(p: *const AtomicU32) -> __m256i {
    let v: __m256i;
    // SAFETY: the asm reads p[0..8] (the caller's promise) and nothing else.
    unsafe {
        asm!(
            "vmovdqu {v}, ymmword ptr [{p}]",
            p = in(reg) p,
            v = out(ymm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    v
}

/// The counters `p[0..32]` with four `vmovdqu` in one asm block, so that they share
/// one address register; per lane a Relaxed load.
///
/// # Safety
/// `p[0..32]` are live atomics; the CPU runs AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn load4(p: *const AtomicU32) -> [__m256i; 4] {
    let (v0, v1, v2, v3): (__m256i, __m256i, __m256i, __m256i);
    // SAFETY: the asm reads p[0..32] (the caller's promise) and nothing else.
    unsafe {
        asm!(
            "vmovdqu {v0}, ymmword ptr [{p}]",
            "vmovdqu {v1}, ymmword ptr [{p} + 32]",
            "vmovdqu {v2}, ymmword ptr [{p} + 64]",
            "vmovdqu {v3}, ymmword ptr [{p} + 96]",
            p = in(reg) p,
            v0 = out(ymm_reg) v0,
            v1 = out(ymm_reg) v1,
            v2 = out(ymm_reg) v2,
            v3 = out(ymm_reg) v3,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    [v0, v1, v2, v3]
}

/// The counters of `p[0..8]` selected by `mask` (all-ones lanes) with one
/// `vpmaskmovd`, which does not access the others (they read as 0); per lane a Relaxed
/// load.
///
/// # Safety
/// The lanes `mask` selects are live atomics; the CPU runs AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn load_masked(p: *const AtomicU32, mask: __m256i) -> __m256i {
    let v: __m256i;
    // SAFETY: the asm reads the selected lanes (the caller's promise) and nothing else.
    unsafe {
        asm!(
            "vpmaskmovd {v}, {m}, ymmword ptr [{p}]",
            p = in(reg) p,
            m = in(ymm_reg) mask,
            v = out(ymm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    v
}

/// The first `len` lanes (`len` capped at 8) as a vector mask (all-ones lanes).
#[inline(always)]
fn first_lanes(len: usize) -> __m256i {
    static WINDOW: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
    let len = len.min(8);
    // SAFETY: 8 - len <= 8, so the 8 lanes read lie inside the 16 of WINDOW; AVX
    // is there (an `Avx2` exists).
    unsafe { _mm256_loadu_si256(WINDOW.as_ptr().add(8 - len).cast()) }
}

// SAFETY (of every intrinsic below): an `Avx2` exists only inside `run`, which runs
// only where the CPU supports AVX2 and POPCNT; the methods are inlined into it.
impl Vector for Avx2 {
    type V = __m256i;
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn load(self, p: *const AtomicU32) -> __m256i {
        // SAFETY: p[0..8] are live atomics (the caller's promise); see the impl.
        unsafe { load(p) }
    }

    #[inline(always)]
    unsafe fn load4(self, p: *const AtomicU32) -> [__m256i; 4] {
        // SAFETY: p[0..32] are live atomics (the caller's promise); see the impl.
        unsafe { load4(p) }
    }

    #[inline(always)]
    unsafe fn load_tail(self, p: *const AtomicU32, len: usize) -> __m256i {
        let valid = first_lanes(len);
        // SAFETY: `valid` selects p[0..len], live atomics (the caller's promise); see
        // the impl.
        unsafe {
            let v = load_masked(p, valid);
            _mm256_or_si256(v, _mm256_andnot_si256(valid, _mm256_set1_epi32(-1)))
        }
    }

    #[inline(always)]
    unsafe fn load_plain(self, p: *const u32) -> __m256i {
        // SAFETY: p[0..8] are readable (the caller's promise); see the impl.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }

    #[inline(always)]
    unsafe fn load_plain_tail(self, p: *const u32, len: usize) -> __m256i {
        // SAFETY: the mask selects p[0..len], readable (the caller's promise); the
        // masked load does not access the other lanes. See the impl.
        unsafe { _mm256_maskload_epi32(p.cast(), first_lanes(len)) }
    }

    #[inline(always)]
    unsafe fn load_plain_fill(self, p: *const u32, len: usize, fill: u32) -> __m256i {
        let valid = first_lanes(len);
        // SAFETY: the mask selects p[0..len], readable (the caller's promise); the
        // masked load does not access the other lanes. See the impl.
        unsafe {
            let v = _mm256_maskload_epi32(p.cast(), valid);
            _mm256_or_si256(v, _mm256_andnot_si256(valid, _mm256_set1_epi32(fill as i32)))
        }
    }

    #[inline(always)]
    fn splat(self, x: u32) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_set1_epi32(x as i32) }
    }

    #[inline(always)]
    fn or(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_or_si256(a, b) }
    }

    #[inline(always)]
    fn xor(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_xor_si256(a, b) }
    }

    #[inline(always)]
    fn min(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_min_epu32(a, b) }
    }

    #[inline(always)]
    fn hmin(self, v: __m256i) -> u32 {
        // SAFETY: see the impl.
        unsafe {
            let m = _mm_min_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0b01_00_11_10>(m));
            let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0b10_11_00_01>(m));
            _mm_cvtsi128_si32(m) as u32
        }
    }

    #[inline(always)]
    fn eq_bits(self, a: __m256i, t: __m256i) -> u64 {
        // SAFETY: see the impl.
        unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, t))) as u32 as u64 }
    }

    /// A match is all-ones, i.e. -1, so subtracting it adds one.
    #[inline(always)]
    fn count_eq(self, acc: __m256i, a: __m256i, t: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_sub_epi32(acc, _mm256_cmpeq_epi32(a, t)) }
    }

    /// Both matches added first: three instructions for two vectors.
    #[inline(always)]
    fn count_eq2(self, acc: __m256i, a: __m256i, b: __m256i, t: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe {
            let hits = _mm256_add_epi32(_mm256_cmpeq_epi32(a, t), _mm256_cmpeq_epi32(b, t));
            _mm256_sub_epi32(acc, hits)
        }
    }

    #[inline(always)]
    fn add(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_add_epi32(a, b) }
    }

    /// One `vpmulld`.
    #[inline(always)]
    fn mul(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: see the impl.
        unsafe { _mm256_mullo_epi32(a, b) }
    }

    #[inline(always)]
    fn hsum(self, v: __m256i) -> u32 {
        // SAFETY: see the impl.
        unsafe {
            let t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b01_00_11_10>(t));
            let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0b10_11_00_01>(t));
            _mm_cvtsi128_si32(t) as u32
        }
    }

    #[inline(always)]
    fn prefetch(self, p: *const u8) {
        // SAFETY: a prefetch accesses nothing; see the impl.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }
}
