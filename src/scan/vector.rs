//! The primitive set every vector backend implements, and the view of the lanes that
//! the shared algorithms (`simd.rs`) read through it.
//!
//! A backend is a zero-sized token type (`Avx2`, `Avx512`, `Neon`) whose methods are
//! its instructions. A token exists only inside the backend's entry function, which
//! is compiled with the backend's target features and called only where the CPU runs
//! them; so the arithmetic methods are safe, and only the loads, which read through
//! raw pointers, are `unsafe`. Every method is `#[inline(always)]`: inlined into the
//! entry function, the intrinsics compile with its target features.

use super::credit::{self, Credit, SCALE as CREDIT_SCALE};
use super::weighting::{Weighting, score};
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// One backend's vector instructions over lanes of `u32`.
pub(super) trait Vector: Copy {
    /// A vector register of `LANES` lanes.
    type V: Copy;
    /// Lanes per vector.
    const LANES: usize;

    /// The counters `p[0..LANES]`, each read as one Relaxed load (see "Soundness of the
    /// vector loads" in the module docs).
    ///
    /// # Safety
    /// `p[0..LANES]` are live atomics.
    unsafe fn load(self, p: *const AtomicU32) -> Self::V;

    /// The counters `p[0..4 * LANES]` as four vectors.
    ///
    /// # Safety
    /// `p[0..4 * LANES]` are live atomics.
    #[inline(always)]
    unsafe fn load4(self, p: *const AtomicU32) -> [Self::V; 4] {
        // SAFETY: the four vectors lie within the caller's range.
        core::array::from_fn(|j| unsafe { self.load(p.add(j * Self::LANES)) })
    }

    /// The counters `p[0..len]` in the low lanes, `u32::MAX` in the others, which are
    /// not accessed (they may lie past the slice).
    ///
    /// # Safety
    /// `1 <= len < LANES`, and `p[0..len]` are live atomics.
    unsafe fn load_tail(self, p: *const AtomicU32, len: usize) -> Self::V;

    /// `p[0..LANES]`, plain memory.
    ///
    /// # Safety
    /// `p[0..LANES]` are readable.
    unsafe fn load_plain(self, p: *const u32) -> Self::V;

    /// `p[0..len]` in the low lanes, 0 in the others, which are not accessed.
    ///
    /// # Safety
    /// `1 <= len < LANES`, and `p[0..len]` are readable.
    unsafe fn load_plain_tail(self, p: *const u32, len: usize) -> Self::V;

    /// `p[0..len]` in the low lanes, `fill` in the others, which are not accessed:
    /// the mask that makes a weighted tail's missing lanes score `u32::MAX`.
    ///
    /// # Safety
    /// `1 <= len < LANES`, and `p[0..len]` are readable.
    unsafe fn load_plain_fill(self, p: *const u32, len: usize, fill: u32) -> Self::V;

    /// Every lane `x`.
    fn splat(self, x: u32) -> Self::V;
    /// Lane-wise `a | b`.
    fn or(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane-wise `a ^ b`.
    fn xor(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane-wise unsigned minimum.
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// The smallest lane.
    fn hmin(self, a: Self::V) -> u32;
    /// Bit `j` set where lane `j` of `a` equals lane `j` of `t`.
    fn eq_bits(self, a: Self::V, t: Self::V) -> u64;
    /// Lane-wise `acc + (a == t)`, wrapping: a per-lane count of matches.
    fn count_eq(self, acc: Self::V, a: Self::V, t: Self::V) -> Self::V;
    /// Lane-wise wrapping `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane-wise wrapping `a * b`: the low 32 bits of each product.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// The wrapping sum of the lanes.
    fn hsum(self, a: Self::V) -> u32;

    /// [`count_eq`](Self::count_eq) of `a` then `b`.
    #[inline(always)]
    fn count_eq2(self, acc: Self::V, a: Self::V, b: Self::V, t: Self::V) -> Self::V {
        self.count_eq(self.count_eq(acc, a, t), b, t)
    }

    /// [`eq_bits`](Self::eq_bits) of four vectors, vector `j` at bit `j * LANES`.
    #[inline(always)]
    fn eq_bits4(self, v: [Self::V; 4], t: Self::V) -> u64 {
        let mut bits = 0;
        for (j, v) in v.into_iter().enumerate() {
            bits |= self.eq_bits(v, t) << (j * Self::LANES);
        }
        bits
    }

    /// The position of the set bit of `bits` with `rank` set bits below it
    /// (`rank < bits.count_ones()`).
    #[inline(always)]
    fn nth_set_bit(self, bits: u64, rank: u32) -> usize {
        if 4 * Self::LANES <= 32 {
            super::draw::nth_set_bit::<32>(bits, rank)
        } else {
            super::draw::nth_set_bit::<64>(bits, rank)
        }
    }

    /// A hint to fetch the cache line at `p` (no access: any address is sound).
    #[inline(always)]
    fn prefetch(self, p: *const u8) {
        let _ = p;
    }
}

/// The bit set of the first `len` lanes, `len <= 64`.
#[inline(always)]
pub(super) fn first_bits(len: usize) -> u64 {
    if len >= 64 { u64::MAX } else { (1 << len) - 1 }
}

/// The lanes a scan reads: `n` counters from `c`, each ORed with the matching entry of
/// `e` unless `ALL`, through the instructions of `v`.
///
/// Invariant (what the constructors establish from borrowed slices): `c` points to
/// `n` live atomics, and unless `ALL`, `e` to `n` readable `u32`s, for as long as the
/// value is used.
pub(super) struct Lanes<V, const ALL: bool> {
    pub(super) v: V,
    c: *const AtomicU32,
    e: *const u32,
    pub(super) n: usize,
}

impl<V: Vector> Lanes<V, true> {
    /// Every lane of `counters`, with no exclusion array.
    #[inline(always)]
    pub(super) fn all(v: V, counters: &[AtomicU32]) -> Self {
        Lanes {
            v,
            c: counters.as_ptr(),
            e: core::ptr::null(),
            n: counters.len(),
        }
    }
}

impl<V: Vector> Lanes<V, false> {
    /// The lanes of `counters` each ORed with the entry of `excluded`: as many as both
    /// slices have.
    #[inline(always)]
    pub(super) fn masked(v: V, counters: &[AtomicU32], excluded: &[u32]) -> Self {
        Lanes {
            v,
            c: counters.as_ptr(),
            e: excluded.as_ptr(),
            n: counters.len().min(excluded.len()),
        }
    }
}

impl<V: Vector, const ALL: bool> Lanes<V, ALL> {
    /// The effective values of lanes `i..i + 4 * LANES` (`c | e`) and their
    /// complemented values (`!c | e`: a candidate's counter inverted, an excluded
    /// lane still `u32::MAX`), from one load of each vector.
    ///
    /// # Safety
    /// `i + 4 * V::LANES <= self.n`.
    #[inline(always)]
    pub(super) unsafe fn get4_both(&self, i: usize) -> ([V::V; 4], [V::V; 4]) {
        let (s, ones) = (self.v, self.v.splat(u32::MAX));
        // SAFETY: lanes i..i + 4 * LANES are in bounds (the caller's promise and the
        // invariant). Written out, not `array::from_fn` (see `Credited::get4`).
        unsafe {
            let [a, b, c, d] = self.v.load4(self.c.add(i));
            let inv = [s.xor(a, ones), s.xor(b, ones), s.xor(c, ones), s.xor(d, ones)];
            if ALL {
                return ([a, b, c, d], inv);
            }
            let e = self.e.add(i);
            let [ea, eb, ec, ed] = [
                s.load_plain(e),
                s.load_plain(e.add(V::LANES)),
                s.load_plain(e.add(2 * V::LANES)),
                s.load_plain(e.add(3 * V::LANES)),
            ];
            (
                [s.or(a, ea), s.or(b, eb), s.or(c, ec), s.or(d, ed)],
                [s.or(inv[0], ea), s.or(inv[1], eb), s.or(inv[2], ec), s.or(inv[3], ed)],
            )
        }
    }

    /// [`get4_both`](Self::get4_both) for lanes `i..i + LANES`.
    ///
    /// # Safety
    /// `i + V::LANES <= self.n`.
    #[inline(always)]
    pub(super) unsafe fn get_both(&self, i: usize) -> (V::V, V::V) {
        let s = self.v;
        // SAFETY: lanes i..i + LANES are in bounds (the caller's promise and the
        // invariant).
        unsafe {
            let c = s.load(self.c.add(i));
            let inv = s.xor(c, s.splat(u32::MAX));
            if ALL {
                return (c, inv);
            }
            let e = s.load_plain(self.e.add(i));
            (s.or(c, e), s.or(inv, e))
        }
    }

    /// [`get4_both`](Self::get4_both) for lanes `i..n` (fewer than `LANES`), both
    /// `u32::MAX` in the lanes past `n`.
    ///
    /// # Safety
    /// `i < self.n < i + V::LANES`.
    #[inline(always)]
    pub(super) unsafe fn tail_both(&self, i: usize) -> (V::V, V::V) {
        let (s, len) = (self.v, self.n - i);
        // SAFETY: lanes i..n are in bounds (the caller's promise and the invariant);
        // the tail loads do not access the lanes past them, and PAST_END has at least
        // LANES > len entries.
        unsafe {
            let c = s.load_tail(self.c.add(i), len);
            let past = s.load_plain_fill(PAST_END.as_ptr(), len, u32::MAX);
            let inv = s.or(s.xor(c, s.splat(u32::MAX)), past);
            if ALL {
                return (c, inv);
            }
            let e = s.load_plain_tail(self.e.add(i), len);
            (s.or(c, e), s.or(inv, e))
        }
    }
}

/// Runs `$body` with `$l` bound to the [`Lanes`] of `$counters` through `$v` (all of
/// them when `$excluded` is `None`, else as many as both slices have).
macro_rules! with_lanes {
    ($v:expr, $counters:expr, $excluded:expr, |$l:ident| $body:expr) => {
        match $excluded {
            None => {
                let $l = super::vector::Lanes::all($v, $counters);
                $body
            }
            Some(e) => {
                let $l = super::vector::Lanes::masked($v, $counters, e);
                $body
            }
        }
    };
}
pub(super) use with_lanes;

/// What the shared scans (`simd.rs`) read: `n` lanes of effective values, through the
/// instructions of `V`. Two kinds: [`Lanes`], the counters (each ORed with its
/// exclusion), and [`Weighted`], their scores. The scans are written once over this,
/// so the weighted scan makes exactly the passes, tries and draws of the plain one.
pub(super) trait Source<V: Vector>: Sized {
    /// The backend's instructions.
    fn v(&self) -> V;

    /// How many lanes there are.
    fn n(&self) -> usize;

    /// The effective values of lanes `i..i + 4 * LANES`, as four vectors.
    ///
    /// # Safety
    /// `i + 4 * V::LANES <= self.n()`.
    unsafe fn get4(&self, i: usize) -> [V::V; 4];

    /// The effective values of lanes `i..i + LANES`.
    ///
    /// # Safety
    /// `i + V::LANES <= self.n()`.
    unsafe fn get(&self, i: usize) -> V::V;

    /// The effective values of lanes `i..n` (fewer than `LANES`) in the low lanes of
    /// the result, `u32::MAX` in the others; and the bit set of the real lanes.
    ///
    /// # Safety
    /// `i < self.n() < i + V::LANES`.
    unsafe fn tail(&self, i: usize) -> (V::V, u64);

    /// The effective value of lane `i`, read with a scalar load.
    ///
    /// # Safety
    /// `i < self.n()`.
    unsafe fn value(&self, i: usize) -> u32;

    /// Lanes `start..start + len` of these, as lanes `0..len`.
    ///
    /// # Safety
    /// `start + len <= self.n()`.
    unsafe fn sub(&self, start: usize, len: usize) -> Self;

    /// Prefetch hints for the cache lines holding lanes `i..i + 4 * 16` (none is an
    /// access: any lane index is sound).
    fn prefetch(&self, i: usize);
}

impl<V: Vector, const ALL: bool> Source<V> for Lanes<V, ALL> {
    #[inline(always)]
    fn v(&self) -> V {
        self.v
    }

    #[inline(always)]
    fn n(&self) -> usize {
        self.n
    }

    #[inline(always)]
    unsafe fn get4(&self, i: usize) -> [V::V; 4] {
        // SAFETY: the lanes are in bounds (the caller's promise and the invariant).
        unsafe {
            let c = self.v.load4(self.c.add(i));
            if ALL {
                c
            } else {
                let e = self.e.add(i);
                core::array::from_fn(|j| self.v.or(c[j], self.v.load_plain(e.add(j * V::LANES))))
            }
        }
    }

    #[inline(always)]
    unsafe fn get(&self, i: usize) -> V::V {
        // SAFETY: the lanes are in bounds (the caller's promise and the invariant).
        unsafe {
            let c = self.v.load(self.c.add(i));
            if ALL {
                c
            } else {
                self.v.or(c, self.v.load_plain(self.e.add(i)))
            }
        }
    }

    #[inline(always)]
    unsafe fn tail(&self, i: usize) -> (V::V, u64) {
        let len = self.n - i;
        // SAFETY: lanes i..n are in bounds (the caller's promise and the invariant);
        // the tail loads do not access the lanes past them.
        let v = unsafe {
            let c = self.v.load_tail(self.c.add(i), len);
            if ALL {
                c
            } else {
                self.v.or(c, self.v.load_plain_tail(self.e.add(i), len))
            }
        };
        (v, first_bits(len))
    }

    #[inline(always)]
    unsafe fn value(&self, i: usize) -> u32 {
        // SAFETY: lane i is in bounds (the caller's promise and the invariant).
        let c = unsafe { &*self.c.add(i) }.load(Relaxed);
        // SAFETY: as above; `e` is read only when it is not null.
        if ALL { c } else { c | unsafe { *self.e.add(i) } }
    }

    #[inline(always)]
    unsafe fn sub(&self, start: usize, len: usize) -> Self {
        Lanes {
            v: self.v,
            // SAFETY: start <= n, so the pointer stays within (or one past) the array.
            c: unsafe { self.c.add(start) },
            // Never read when `ALL` (then it is null): no in-bounds claim is made.
            e: self.e.wrapping_add(start),
            n: len,
        }
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        for line in 0..4 {
            self.v.prefetch(self.c.wrapping_add(i + 16 * line).cast());
            if !ALL {
                self.v.prefetch(self.e.wrapping_add(i + 16 * line).cast());
            }
        }
    }
}

/// The scores of [`Lanes`] under a [`Weighting`]: lane `i`'s effective value `x`
/// becomes `(min(x, limit) + add) * scale[i]` (wrapping), as `weighting::score`
/// computes it for one lane. Lanes past `n` in a tail score `u32::MAX`, as the scans
/// expect (ORed with [`PAST_END`]'s fill).
///
/// Invariant: that of `lanes`, and `scale` points to `lanes.n` readable `u32`s.
pub(super) struct Weighted<V, const ALL: bool> {
    lanes: Lanes<V, ALL>,
    scale: *const u32,
    limit: u32,
    add: u32,
}

/// Zeros to load the real lanes of a tail from, filling the others with
/// `u32::MAX`: the mask that sets a weighted tail's missing lanes to `u32::MAX`.
/// As long as the widest backend's vector (AVX-512, 16 lanes).
static PAST_END: [u32; 16] = [0; 16];

impl<V: Vector, const ALL: bool> Weighted<V, ALL> {
    /// The scores of `lanes` under `w`: as many lanes as `lanes` and `w.scale` have.
    #[inline(always)]
    pub(super) fn new(mut lanes: Lanes<V, ALL>, w: Weighting<'_>) -> Self {
        lanes.n = lanes.n.min(w.scale.len());
        Weighted {
            lanes,
            scale: w.scale.as_ptr(),
            limit: w.limit,
            add: w.add,
        }
    }

    /// The scores of the values `x` given the factors of their lanes: the clamp,
    /// the add and one lane-wise multiply.
    #[inline(always)]
    fn score(&self, x: V::V, scale: V::V) -> V::V {
        let s = self.lanes.v;
        s.mul(s.add(s.min(x, s.splat(self.limit)), s.splat(self.add)), scale)
    }
}

impl<V: Vector, const ALL: bool> Source<V> for Weighted<V, ALL> {
    #[inline(always)]
    fn v(&self) -> V {
        self.lanes.v
    }

    #[inline(always)]
    fn n(&self) -> usize {
        self.lanes.n
    }

    #[inline(always)]
    unsafe fn get4(&self, i: usize) -> [V::V; 4] {
        let s = self.lanes.v;
        // SAFETY: lanes i..i + 4 * LANES are in bounds of both arrays (the caller's
        // promise and the invariant).
        unsafe {
            let x = self.lanes.get4(i);
            let scale = self.scale.add(i);
            core::array::from_fn(|j| self.score(x[j], s.load_plain(scale.add(j * V::LANES))))
        }
    }

    #[inline(always)]
    unsafe fn get(&self, i: usize) -> V::V {
        let s = self.lanes.v;
        // SAFETY: lanes i..i + LANES are in bounds of both arrays (the caller's
        // promise and the invariant).
        unsafe { self.score(self.lanes.get(i), s.load_plain(self.scale.add(i))) }
    }

    #[inline(always)]
    unsafe fn tail(&self, i: usize) -> (V::V, u64) {
        let (s, len) = (self.lanes.v, self.lanes.n - i);
        // SAFETY: lanes i..n are in bounds of both arrays (the caller's promise and
        // the invariant); the tail loads do not access the lanes past them, and
        // PAST_END has at least LANES > len entries.
        unsafe {
            let (x, real) = self.lanes.tail(i);
            let scale = s.load_plain_tail(self.scale.add(i), len);
            let past = s.load_plain_fill(PAST_END.as_ptr(), len, u32::MAX);
            (s.or(self.score(x, scale), past), real)
        }
    }

    #[inline(always)]
    unsafe fn value(&self, i: usize) -> u32 {
        // SAFETY: lane i is in bounds of both arrays (the caller's promise and the
        // invariant).
        unsafe { score(self.lanes.value(i), *self.scale.add(i), self.limit, self.add) }
    }

    #[inline(always)]
    unsafe fn sub(&self, start: usize, len: usize) -> Self {
        Weighted {
            // SAFETY: start + len <= n (the caller's promise).
            lanes: unsafe { self.lanes.sub(start, len) },
            // SAFETY: start <= n, so the pointer stays within (or one past) the array.
            scale: unsafe { self.scale.add(start) },
            limit: self.limit,
            add: self.add,
        }
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        self.lanes.prefetch(i);
        for line in 0..4 {
            self.lanes.v.prefetch(self.scale.wrapping_add(i + 16 * line).cast());
        }
    }
}

/// The cost mode's keys of [`Lanes`] under a [`Credit`]: lane `i`'s effective value
/// `x` and credit `o` key as `1000·min(x, limit) + α·K + (2^32 − α)·o` (wrapping), as
/// `credit::key` computes it for one lane. Lanes past `n` in a tail key `u32::MAX`.
///
/// Invariant: that of `lanes`, and `held` points to `lanes.n` readable `u32`s.
pub(super) struct Credited<V, const ALL: bool> {
    lanes: Lanes<V, ALL>,
    held: *const u32,
    limit: u32,
    base: u32,
    neg: u32,
}

impl<V: Vector, const ALL: bool> Credited<V, ALL> {
    /// The keys of `lanes` under `c`: as many lanes as `lanes` and `c.held` have.
    #[inline(always)]
    pub(super) fn new(mut lanes: Lanes<V, ALL>, c: Credit<'_>) -> Self {
        lanes.n = lanes.n.min(c.held.len());
        Credited {
            lanes,
            held: c.held.as_ptr(),
            limit: c.limit,
            base: c.base(),
            neg: c.weight.wrapping_neg(),
        }
    }

    /// The keys of the values `x` given the credits of their lanes.
    #[inline(always)]
    fn key(&self, x: V::V, held: V::V) -> V::V {
        let s = self.lanes.v;
        let load = s.mul(s.min(x, s.splat(self.limit)), s.splat(CREDIT_SCALE));
        s.add(s.add(load, s.splat(self.base)), s.mul(held, s.splat(self.neg)))
    }
}

impl<V: Vector, const ALL: bool> Source<V> for Credited<V, ALL> {
    #[inline(always)]
    fn v(&self) -> V {
        self.lanes.v
    }

    #[inline(always)]
    fn n(&self) -> usize {
        self.lanes.n
    }

    #[inline(always)]
    unsafe fn get4(&self, i: usize) -> [V::V; 4] {
        let s = self.lanes.v;
        // SAFETY: lanes i..i + 4 * LANES are in bounds of both arrays (the caller's
        // promise and the invariant).
        // Written out, not `array::from_fn`: its closure, four vector operations
        // long, is not always inlined, and then the intrinsics in it compile
        // without the backend's target features, as calls (measured: 7 µs for a
        // scan of 1 024 lanes with AVX2, slower than scalar).
        unsafe {
            let [a, b, c, d] = self.lanes.get4(i);
            let held = self.held.add(i);
            [
                self.key(a, s.load_plain(held)),
                self.key(b, s.load_plain(held.add(V::LANES))),
                self.key(c, s.load_plain(held.add(2 * V::LANES))),
                self.key(d, s.load_plain(held.add(3 * V::LANES))),
            ]
        }
    }

    #[inline(always)]
    unsafe fn get(&self, i: usize) -> V::V {
        let s = self.lanes.v;
        // SAFETY: lanes i..i + LANES are in bounds of both arrays (the caller's
        // promise and the invariant).
        unsafe { self.key(self.lanes.get(i), s.load_plain(self.held.add(i))) }
    }

    #[inline(always)]
    unsafe fn tail(&self, i: usize) -> (V::V, u64) {
        let (s, len) = (self.lanes.v, self.lanes.n - i);
        // SAFETY: lanes i..n are in bounds of both arrays (the caller's promise and
        // the invariant); the tail loads do not access the lanes past them, and
        // PAST_END has at least LANES > len entries.
        unsafe {
            let (x, real) = self.lanes.tail(i);
            let held = s.load_plain_tail(self.held.add(i), len);
            let past = s.load_plain_fill(PAST_END.as_ptr(), len, u32::MAX);
            (s.or(self.key(x, held), past), real)
        }
    }

    #[inline(always)]
    unsafe fn value(&self, i: usize) -> u32 {
        // SAFETY: lane i is in bounds of both arrays (the caller's promise and the
        // invariant).
        unsafe {
            let x = self.lanes.value(i);
            credit::key(x, *self.held.add(i), self.neg.wrapping_neg(), self.base, self.limit)
        }
    }

    #[inline(always)]
    unsafe fn sub(&self, start: usize, len: usize) -> Self {
        Credited {
            // SAFETY: start + len <= n (the caller's promise).
            lanes: unsafe { self.lanes.sub(start, len) },
            // SAFETY: start <= n, so the pointer stays within (or one past) the array.
            held: unsafe { self.held.add(start) },
            limit: self.limit,
            base: self.base,
            neg: self.neg,
        }
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        self.lanes.prefetch(i);
        for line in 0..4 {
            self.lanes.v.prefetch(self.held.wrapping_add(i + 16 * line).cast());
        }
    }
}

/// An operation a backend's entry function runs: one of the scans in `simd.rs`, or
/// the scalar reference where no vector backend is chosen.
pub(super) trait Op {
    /// What the scan returns.
    type Out;
    /// Runs on the scalar reference.
    fn scalar(self) -> Self::Out;
    /// Runs on the vector backend `v`. Implementations are `#[inline(always)]`, so that
    /// they compile into the backend's entry function, with its target features.
    fn vector<V: Vector>(self, v: V) -> Self::Out;
}
