//! NEON backend (aarch64): 4 lanes per vector, chosen at compile time (NEON
//! is the base architecture). Lane arithmetic is `wide`'s `u32x4`; the
//! horizontal minimum and sum and the counter loads come from `core::arch`
//! and inline `asm!`. NEON has no masked load: the last 1-3 lanes of a pass
//! are read with scalar Relaxed loads. See [`docs::internal::scan`](crate::docs::internal::scan),
//! "The NEON backend".

use super::vector::{Op, Vector};
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};
use core::arch::aarch64::{uint32x4_t, vaddvq_u32, vld1q_u32, vminvq_u32, vmulq_u32};
use core::arch::asm;
use wide::u32x4;

/// The NEON instructions, always there on this target.
#[derive(Clone, Copy)]
pub(super) struct Neon(());

/// Runs `op` with NEON.
#[inline(always)]
pub(super) fn run<O: Op>(op: O) -> O::Out {
    op.vector(Neon(()))
}

// SAFETY (of every intrinsic below): this module is compiled only where NEON is
// enabled at compile time.
impl Vector for Neon {
    type V = u32x4;
    const LANES: usize = 4;

    /// One `ld1 {v.4s}`, an element load: each aligned 4-byte lane is one single-copy
    /// atomic read, i.e. a Relaxed load (see "Soundness of the vector loads").
    #[inline(always)]
    unsafe fn load(self, p: *const AtomicU32) -> u32x4 {
        let v: uint32x4_t;
        // SAFETY: p[0..4] are live atomics (the caller's promise); the asm reads them
        // and nothing else.
        unsafe {
            asm!(
                "ld1 {{{v:v}.4s}}, [{p}]",
                p = in(reg) p,
                v = out(vreg) v,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        u32x4::from(v)
    }

    /// One four-register `ld1`.
    #[inline(always)]
    unsafe fn load4(self, p: *const AtomicU32) -> [u32x4; 4] {
        let (v0, v1, v2, v3): (uint32x4_t, uint32x4_t, uint32x4_t, uint32x4_t);
        // SAFETY: p[0..16] are live atomics (the caller's promise); the asm reads them
        // and nothing else. The four-register form needs consecutive registers: named.
        unsafe {
            asm!(
                "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{p}]",
                p = in(reg) p,
                out("v0") v0,
                out("v1") v1,
                out("v2") v2,
                out("v3") v3,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        [v0, v1, v2, v3].map(u32x4::from)
    }

    /// Scalar Relaxed loads of `p[0..len]`: NEON has no masked load.
    #[inline(always)]
    unsafe fn load_tail(self, p: *const AtomicU32, len: usize) -> u32x4 {
        u32x4::from(core::array::from_fn::<u32, 4, _>(|j| {
            if j < len {
                // SAFETY: j < len: a live atomic (the caller's promise).
                unsafe { &*p.add(j) }.load(Relaxed)
            } else {
                u32::MAX
            }
        }))
    }

    #[inline(always)]
    unsafe fn load_plain(self, p: *const u32) -> u32x4 {
        // SAFETY: p[0..4] are readable (the caller's promise).
        u32x4::from(unsafe { vld1q_u32(p) })
    }

    #[inline(always)]
    unsafe fn load_plain_tail(self, p: *const u32, len: usize) -> u32x4 {
        // SAFETY: j < len: readable (the caller's promise).
        u32x4::from(core::array::from_fn::<u32, 4, _>(|j| if j < len { unsafe { *p.add(j) } } else { 0 }))
    }

    #[inline(always)]
    unsafe fn load_plain_fill(self, p: *const u32, len: usize, fill: u32) -> u32x4 {
        // SAFETY: j < len: readable (the caller's promise).
        u32x4::from(core::array::from_fn::<u32, 4, _>(|j| if j < len { unsafe { *p.add(j) } } else { fill }))
    }

    #[inline(always)]
    fn splat(self, x: u32) -> u32x4 {
        u32x4::splat(x)
    }

    #[inline(always)]
    fn or(self, a: u32x4, b: u32x4) -> u32x4 {
        a | b
    }

    #[inline(always)]
    fn xor(self, a: u32x4, b: u32x4) -> u32x4 {
        a ^ b
    }

    #[inline(always)]
    fn min(self, a: u32x4, b: u32x4) -> u32x4 {
        a.min(b)
    }

    /// One `uminv`.
    #[inline(always)]
    fn hmin(self, v: u32x4) -> u32 {
        // SAFETY: see the impl.
        unsafe { vminvq_u32(v.into()) }
    }

    #[inline(always)]
    fn eq_bits(self, a: u32x4, t: u32x4) -> u64 {
        u64::from(self.hsum(a.simd_eq(t) & u32x4::new([1, 2, 4, 8])))
    }

    /// Each match weighted by its bit, then one horizontal sum (NEON has no
    /// `movemask`).
    #[inline(always)]
    fn eq_bits4(self, v: [u32x4; 4], t: u32x4) -> u64 {
        const WEIGHTS: [u32x4; 4] = [
            u32x4::new([1 << 0, 1 << 1, 1 << 2, 1 << 3]),
            u32x4::new([1 << 4, 1 << 5, 1 << 6, 1 << 7]),
            u32x4::new([1 << 8, 1 << 9, 1 << 10, 1 << 11]),
            u32x4::new([1 << 12, 1 << 13, 1 << 14, 1 << 15]),
        ];
        let mut bits = u32x4::ZERO;
        for (j, v) in v.into_iter().enumerate() {
            bits |= v.simd_eq(t) & WEIGHTS[j];
        }
        u64::from(self.hsum(bits))
    }

    /// A match is all-ones, i.e. -1, so subtracting it adds one.
    #[inline(always)]
    fn count_eq(self, acc: u32x4, a: u32x4, t: u32x4) -> u32x4 {
        acc - a.simd_eq(t)
    }

    #[inline(always)]
    fn add(self, a: u32x4, b: u32x4) -> u32x4 {
        a + b
    }

    /// One `mul` (`vmulq_u32`).
    #[inline(always)]
    fn mul(self, a: u32x4, b: u32x4) -> u32x4 {
        // SAFETY: see the impl.
        u32x4::from(unsafe { vmulq_u32(a.into(), b.into()) })
    }

    /// One `addv`.
    #[inline(always)]
    fn hsum(self, v: u32x4) -> u32 {
        // SAFETY: see the impl.
        unsafe { vaddvq_u32(v.into()) }
    }
}
