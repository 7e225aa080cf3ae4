//! AVX-512 backend: 16 lanes per vector. The last 1-15 lanes of a pass are read with
//! one masked load (`vmovdqu32` under a lane mask).

use super::vector::{Op, Vector};
use crate::sync::atomic::AtomicU32;
use core::arch::asm;
use core::arch::x86_64::*;

/// The AVX-512F, BMI2 and POPCNT instructions; exists only inside [`run`].
#[derive(Clone, Copy)]
pub(super) struct Avx512(());

/// Runs `op` with AVX-512.
///
/// # Safety
/// The CPU must support AVX-512F, BMI2 and POPCNT.
#[target_feature(enable = "avx512f,bmi2,popcnt")]
pub(super) fn run<O: Op>(op: O) -> O::Out {
    op.vector(Avx512(()))
}

/// The counters `p[0..16]` with one `vmovdqu32`: per lane a Relaxed load (see
/// "Soundness of the vector loads" in the module docs). (Inline asm on zmm registers
/// needs a function with the target feature: one per load.)
///
/// # Safety
/// `p[0..16]` are live atomics; the CPU runs AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load(p: *const AtomicU32) -> __m512i {
    let v: __m512i;
    // SAFETY: the asm reads p[0..16] (the caller's promise) and nothing else.
    unsafe {
        asm!(
            "vmovdqu32 {v}, zmmword ptr [{p}]",
            p = in(reg) p,
            v = out(zmm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    v
}

/// The counters of `p[0..16]` selected by `mask` with one `vmovdqu32` merging into
/// all-ones: the other lanes keep `u32::MAX` and are not accessed (no read, no fault).
/// Per lane a Relaxed load.
///
/// # Safety
/// The lanes `mask` selects are live atomics; the CPU runs AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load_masked(p: *const AtomicU32, mask: __mmask16) -> __m512i {
    let mut v = _mm512_set1_epi32(-1);
    // SAFETY: the asm reads the selected lanes (the caller's promise) and nothing else.
    unsafe {
        asm!(
            "vmovdqu32 {v}{{{k}}}, zmmword ptr [{p}]",
            p = in(reg) p,
            k = in(kreg) mask,
            v = inout(zmm_reg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    v
}

/// The mask of the first `len` lanes, `len < 16`.
#[inline(always)]
fn first_lanes(len: usize) -> __mmask16 {
    ((1u32 << len) - 1) as __mmask16
}

// SAFETY (of every intrinsic below): an `Avx512` exists only inside `run`, which runs
// only where the CPU supports AVX-512F, BMI2 and POPCNT; the methods are inlined into
// it.
impl Vector for Avx512 {
    type V = __m512i;
    const LANES: usize = 16;

    #[inline(always)]
    unsafe fn load(self, p: *const AtomicU32) -> __m512i {
        // SAFETY: p[0..16] are live atomics (the caller's promise); see the impl.
        unsafe { load(p) }
    }

    #[inline(always)]
    unsafe fn load_tail(self, p: *const AtomicU32, len: usize) -> __m512i {
        // SAFETY: the mask selects p[0..len], live atomics (the caller's promise); see
        // the impl.
        unsafe { load_masked(p, first_lanes(len)) }
    }

    #[inline(always)]
    unsafe fn load_plain(self, p: *const u32) -> __m512i {
        // SAFETY: p[0..16] are readable (the caller's promise); see the impl.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }

    #[inline(always)]
    unsafe fn load_plain_tail(self, p: *const u32, len: usize) -> __m512i {
        // SAFETY: the mask selects p[0..len], readable (the caller's promise); the
        // masked load does not access the other lanes. See the impl.
        unsafe { _mm512_maskz_loadu_epi32(first_lanes(len), p.cast()) }
    }

    #[inline(always)]
    unsafe fn load_plain_fill(self, p: *const u32, len: usize, fill: u32) -> __m512i {
        // SAFETY: the mask selects p[0..len], readable (the caller's promise); the
        // masked load does not access the other lanes, which keep `fill`. See the impl.
        unsafe { _mm512_mask_loadu_epi32(_mm512_set1_epi32(fill as i32), first_lanes(len), p.cast()) }
    }

    #[inline(always)]
    fn splat(self, x: u32) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_set1_epi32(x as i32) }
    }

    #[inline(always)]
    fn or(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_or_si512(a, b) }
    }

    #[inline(always)]
    fn xor(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_xor_si512(a, b) }
    }

    #[inline(always)]
    fn min(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_min_epu32(a, b) }
    }

    #[inline(always)]
    fn hmin(self, v: __m512i) -> u32 {
        // SAFETY: see the impl.
        unsafe { _mm512_reduce_min_epu32(v) }
    }

    #[inline(always)]
    fn eq_bits(self, a: __m512i, t: __m512i) -> u64 {
        // SAFETY: see the impl.
        u64::from(unsafe { _mm512_cmpeq_epi32_mask(a, t) })
    }

    /// Adds one (subtracts all-ones) in the lanes that match.
    #[inline(always)]
    fn count_eq(self, acc: __m512i, a: __m512i, t: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_sub_epi32(acc, _mm512_cmpeq_epi32_mask(a, t), acc, _mm512_set1_epi32(-1)) }
    }

    #[inline(always)]
    fn add(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_add_epi32(a, b) }
    }

    /// One `vpmulld`.
    #[inline(always)]
    fn mul(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: see the impl.
        unsafe { _mm512_mullo_epi32(a, b) }
    }

    #[inline(always)]
    fn hsum(self, v: __m512i) -> u32 {
        // SAFETY: see the impl.
        unsafe { _mm512_reduce_add_epi32(v) as u32 }
    }

    /// One `pdep`: every CPU with AVX-512 has a fast one.
    #[inline(always)]
    fn nth_set_bit(self, bits: u64, rank: u32) -> usize {
        // SAFETY: see the impl.
        unsafe { _pdep_u64(1 << rank, bits) }.trailing_zeros() as usize
    }

    #[inline(always)]
    fn prefetch(self, p: *const u8) {
        // SAFETY: a prefetch accesses nothing; see the impl.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }
}
