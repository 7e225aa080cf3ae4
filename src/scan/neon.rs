//! NEON backend (aarch64): 4 lanes per vector. NEON is part of the base architecture
//! there, so it is chosen at compile time, with no run-time detection and no `unsafe`
//! at the call site. A scan is the same simple passes as the AVX2 backend: the minimum,
//! then how many lanes equal it, then (for [`nth_tie`]) where the k-th of them lies;
//! each a loop over 16 lanes at a time in four independent vector chains.
//!
//! The lane arithmetic is `wide`'s `u32x4`, which compiles to single NEON instructions
//! here (`umin`, `cmeq`, `orr`, `and`, `sub`). Two things come from `core::arch`
//! instead: the horizontal minimum and sum, which `wide` 1.7 computes lane by lane on
//! aarch64 where NEON has one instruction each (`uminv`, `addv`); and the counter
//! loads, which must be inline `asm!` (see "Soundness of the vector loads" in the
//! parent module) and so produce a `uint32x4_t`, which `wide` converts for free.
//!
//! NEON has no masked load: the last 1-3 lanes of a pass are read with scalar Relaxed
//! loads, and the missing lanes filled with `u32::MAX`, like the AVX2 masked tail.
//!
//! With `ALL` the scan covers every lane of `counters` and has no exclusion array to
//! read: half the loads of a scan with one.

use super::{MinTies, nth_set_bit};
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};
use core::arch::aarch64::{uint32x4_t, vaddvq_u32, vld1q_u32, vminvq_u32};
use core::arch::asm;
use wide::u32x4;

/// Loads the 4 counters at `$p` with one `ld1 {v.4s}` (`4 at $p`: the 16 from `$p`
/// with one four-register `ld1`). An element load: each aligned 4-byte lane is one
/// single-copy atomic read, i.e. a Relaxed load (see "Soundness of the vector loads" in
/// the parent module). Expands to inline asm, so it needs an `unsafe` block whose
/// caller shows that the loaded lanes are in bounds.
macro_rules! load_counters {
    ($p:expr) => {{
        let v: uint32x4_t;
        asm!(
            "ld1 {{{v:v}.4s}}, [{p}]",
            p = in(reg) $p,
            v = out(vreg) v,
            options(pure, readonly, nostack, preserves_flags),
        );
        u32x4::from(v)
    }};
    (4 at $p:expr) => {{
        let (v0, v1, v2, v3): (uint32x4_t, uint32x4_t, uint32x4_t, uint32x4_t);
        // The four-register form needs consecutive registers: name them.
        asm!(
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{p}]",
            p = in(reg) $p,
            out("v0") v0,
            out("v1") v1,
            out("v2") v2,
            out("v3") v3,
            options(pure, readonly, nostack, preserves_flags),
        );
        [v0, v1, v2, v3].map(u32x4::from)
    }};
}

/// The lanes a scan reads: `n` counters from `c`, each ORed with the matching entry of
/// `e` unless `ALL`.
///
/// Invariant (what the constructors establish from borrowed slices): `c` points to
/// `n` live atomics, and unless `ALL`, `e` to `n` readable `u32`s, for as long as the
/// value is used.
struct Lanes<const ALL: bool> {
    c: *const AtomicU32,
    e: *const u32,
    n: usize,
}

impl Lanes<true> {
    /// Every lane of `counters`, with no exclusion array.
    #[inline]
    fn all(counters: &[AtomicU32]) -> Self {
        Lanes {
            c: counters.as_ptr(),
            e: core::ptr::null(),
            n: counters.len(),
        }
    }
}

impl Lanes<false> {
    /// The lanes of `counters` each ORed with the entry of `excluded`: as many as both
    /// slices have.
    #[inline]
    fn masked(counters: &[AtomicU32], excluded: &[u32]) -> Self {
        Lanes {
            c: counters.as_ptr(),
            e: excluded.as_ptr(),
            n: counters.len().min(excluded.len()),
        }
    }
}

impl<const ALL: bool> Lanes<ALL> {
    /// The effective values of lanes `i..i + 16`, as four vectors.
    ///
    /// # Safety
    /// `i + 16 <= self.n`.
    #[inline]
    unsafe fn get4(&self, i: usize) -> [u32x4; 4] {
        // SAFETY: lanes i..i + 16 are in bounds (the caller's promise and the invariant).
        unsafe {
            let v = load_counters!(4 at self.c.add(i));
            if ALL {
                v
            } else {
                let e = self.e.add(i);
                core::array::from_fn(|j| v[j] | u32x4::from(vld1q_u32(e.add(4 * j))))
            }
        }
    }

    /// The effective values of lanes `i..i + 4`.
    ///
    /// # Safety
    /// `i + 4 <= self.n`.
    #[inline]
    unsafe fn get(&self, i: usize) -> u32x4 {
        // SAFETY: lanes i..i + 4 are in bounds (the caller's promise and the invariant).
        unsafe {
            let v = load_counters!(self.c.add(i));
            if ALL {
                v
            } else {
                v | u32x4::from(vld1q_u32(self.e.add(i)))
            }
        }
    }

    /// The effective values of lanes `i..n` (at most 4) in the low lanes of the
    /// result, the others `u32::MAX`; and the mask of the lanes that are real
    /// (all-ones lanes). Scalar Relaxed loads: NEON has no masked load.
    ///
    /// # Safety
    /// `i < self.n`.
    #[inline]
    unsafe fn tail(&self, i: usize) -> (u32x4, u32x4) {
        let real = self.n - i;
        let value = |j: usize| {
            if j < real {
                // SAFETY: i + j < n: in bounds by the invariant; `e` is read only
                // when it is not null.
                let c = unsafe { &*self.c.add(i + j) }.load(Relaxed);
                if ALL { c } else { c | unsafe { *self.e.add(i + j) } }
            } else {
                u32::MAX
            }
        };
        let valid = |j: usize| if j < real { u32::MAX } else { 0 };
        (
            u32x4::from(core::array::from_fn::<u32, 4, _>(value)),
            u32x4::from(core::array::from_fn::<u32, 4, _>(valid)),
        )
    }
}

/// The smallest effective value (`u32::MAX` for no lanes).
#[inline]
fn min<const ALL: bool>(l: &Lanes<ALL>) -> u32 {
    let mut m = [u32x4::MAX; 4];
    let mut i = 0;
    while i + 16 <= l.n {
        // SAFETY: i + 16 <= n.
        let v = unsafe { l.get4(i) };
        for j in 0..4 {
            m[j] = m[j].min(v[j]);
        }
        i += 16;
    }
    while i + 4 <= l.n {
        // SAFETY: i + 4 <= n.
        m[0] = m[0].min(unsafe { l.get(i) });
        i += 4;
    }
    if i < l.n {
        // SAFETY: i < n.
        m[1] = m[1].min(unsafe { l.tail(i) }.0);
    }
    hmin(m[0].min(m[1]).min(m[2].min(m[3])))
}

/// How many lanes have the effective value `target` (wrapping, like the scalar count).
#[inline]
fn count<const ALL: bool>(l: &Lanes<ALL>, target: u32) -> u32 {
    let t = u32x4::splat(target);
    // Per-lane counts: a match is all-ones, i.e. -1, so subtracting it adds one.
    let mut c = [u32x4::ZERO; 4];
    let mut i = 0;
    while i + 16 <= l.n {
        // SAFETY: i + 16 <= n.
        let v = unsafe { l.get4(i) };
        for j in 0..4 {
            c[j] -= v[j].simd_eq(t);
        }
        i += 16;
    }
    while i + 4 <= l.n {
        // SAFETY: i + 4 <= n.
        c[0] -= unsafe { l.get(i) }.simd_eq(t);
        i += 4;
    }
    if i < l.n {
        // SAFETY: i < n.
        let (v, valid) = unsafe { l.tail(i) };
        c[1] -= v.simd_eq(t) & valid;
    }
    hsum((c[0] + c[1]) + (c[2] + c[3]))
}

/// Bit `4j + i` of the result set where lane `i` of `v[j]` equals `target`: the lanes
/// at `target` of up to 16 lanes as a bit set, by weighting each match with its bit and
/// one horizontal sum (NEON has no `movemask`).
#[inline]
fn eq_bits<const N: usize>(v: [u32x4; N], target: u32x4) -> u32 {
    const WEIGHTS: [u32x4; 4] = [
        u32x4::new([1 << 0, 1 << 1, 1 << 2, 1 << 3]),
        u32x4::new([1 << 4, 1 << 5, 1 << 6, 1 << 7]),
        u32x4::new([1 << 8, 1 << 9, 1 << 10, 1 << 11]),
        u32x4::new([1 << 12, 1 << 13, 1 << 14, 1 << 15]),
    ];
    let mut bits = u32x4::ZERO;
    for (j, v) in v.into_iter().enumerate() {
        bits |= v.simd_eq(target) & WEIGHTS[j];
    }
    hsum(bits)
}

/// The minimum of the 4 lanes, in one `uminv`.
#[inline]
fn hmin(v: u32x4) -> u32 {
    // SAFETY: this module is compiled only where NEON is enabled at compile time.
    unsafe { vminvq_u32(v.into()) }
}

/// The wrapping sum of the 4 lanes, in one `addv`.
#[inline]
fn hsum(v: u32x4) -> u32 {
    // SAFETY: this module is compiled only where NEON is enabled at compile time.
    unsafe { vaddvq_u32(v.into()) }
}

/// See [`super::nth_tie`].
#[inline]
fn nth<const ALL: bool>(l: &Lanes<ALL>, min: u32, k: u32) -> Result<usize, u32> {
    let target = u32x4::splat(min);
    // Invariant: seen <= k (the search returns as soon as the k-th tie is in a block).
    let mut seen = 0u32;
    // Looks for tie k in a block whose ties are `bits` (bit j = lane j), `seen` ties
    // having come before it: its lane, or `None` after counting the block's ties.
    let mut search = |bits: u32| {
        let found = bits.count_ones();
        let rank = k - seen;
        if rank < found {
            Some(nth_set_bit(bits, rank))
        } else {
            seen += found;
            None
        }
    };
    let mut i = 0;
    while i + 16 <= l.n {
        // SAFETY: i + 16 <= n.
        if let Some(j) = search(eq_bits(unsafe { l.get4(i) }, target)) {
            return Ok(i + j);
        }
        i += 16;
    }
    while i + 4 <= l.n {
        // SAFETY: i + 4 <= n.
        if let Some(j) = search(eq_bits([unsafe { l.get(i) }], target)) {
            return Ok(i + j);
        }
        i += 4;
    }
    if i < l.n {
        // SAFETY: i < n. Lanes past the end read as u32::MAX: mask them out.
        let (v, valid) = unsafe { l.tail(i) };
        let real = eq_bits([valid], u32x4::MAX);
        if let Some(j) = search(eq_bits([v], target) & real) {
            return Ok(i + j);
        }
    }
    Err(seen)
}

/// See [`super::min_ties`].
pub(super) fn min_ties(counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
    fn scan<const ALL: bool>(l: &Lanes<ALL>) -> MinTies {
        let min = min(l);
        MinTies {
            min,
            ties: count(l, min),
        }
    }
    match excluded {
        None => scan(&Lanes::all(counters)),
        Some(e) => scan(&Lanes::masked(counters, e)),
    }
}

/// See [`super::nth_tie`].
pub(super) fn nth_tie(
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    match excluded {
        None => nth(&Lanes::all(counters), min, k),
        Some(e) => nth(&Lanes::masked(counters, e), min, k),
    }
}
