//! C entry point to the library's AVX-512 scan kernel, compiled from the very files the
//! library ships (the AVX-512 primitives and the vector scan written over them), for an
//! emulator to call: no OS, no allocator, no unwinding.

#![no_std]
// The library's files hold items only the library uses (the scalar fallback, the
// `least` path), unused here.
#![allow(dead_code)]

use core::sync::atomic::AtomicU32;

/// What the kernel files import from the library (`crate::sync`).
mod sync {
    pub mod atomic {
        pub use core::sync::atomic::{AtomicU32, Ordering};
    }
}

#[path = "../../src/scan/avx512.rs"]
mod avx512;
#[path = "../../src/scan/credit.rs"]
mod credit;
#[path = "../../src/scan/draw.rs"]
mod draw;
#[path = "../../src/scan/outcome.rs"]
mod outcome;
#[path = "../../src/scan/simd.rs"]
mod simd;
#[path = "../../src/scan/vector.rs"]
mod vector;
#[path = "../../src/scan/weighting.rs"]
mod weighting;

use outcome::MinTies;
use vector::{Lanes, Op, Source, Vector, Weighted};
use weighting::Weighting;

/// `scan::min_ties` (`None`: no exclusion array).
struct MinTiesOp<'a>(&'a [AtomicU32], Option<&'a [u32]>);

impl Op for MinTiesOp<'_> {
    type Out = MinTies;
    fn scalar(self) -> MinTies {
        unreachable!()
    }
    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> MinTies {
        simd::min_ties(v, self.0, self.1)
    }
}

/// `scan::nth_tie` (`None`: no exclusion array).
struct NthTieOp<'a>(&'a [AtomicU32], Option<&'a [u32]>, u32, u32);

impl Op for NthTieOp<'_> {
    type Out = Result<usize, u32>;
    fn scalar(self) -> Self::Out {
        unreachable!()
    }
    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> Self::Out {
        simd::nth_tie(v, self.0, self.1, self.2, self.3)
    }
}

/// The minimum of the weighted scores and how many lanes hold it: the passes
/// `least_weighted` makes over its `Weighted` view of the lanes.
struct WeightedMinTiesOp<'a>(&'a [AtomicU32], Option<&'a [u32]>, Weighting<'a>);

impl Op for WeightedMinTiesOp<'_> {
    type Out = MinTies;
    fn scalar(self) -> MinTies {
        unreachable!()
    }
    #[inline(always)]
    fn vector<V: Vector>(self, v: V) -> MinTies {
        match self.1 {
            None => min_ties_of(&Weighted::new(Lanes::all(v, self.0), self.2)),
            Some(e) => min_ties_of(&Weighted::new(Lanes::masked(v, self.0, e), self.2)),
        }
    }
}

#[inline(always)]
fn min_ties_of<V: Vector, L: Source<V>>(l: &L) -> MinTies {
    let min = simd::min(l);
    MinTies {
        min,
        ties: simd::count(l, min),
    }
}

/// `op` 0: `min_ties`, returned as `min << 32 | ties`.
/// `op` 1: `nth_tie(min, k)`: `Ok(i)` as `i`, `Err(found)` as `1 << 63 | found`.
/// `op` 2: the weighted scores' minimum and ties, as op 0, under the factors
/// `scale[0..n]`, the bound `min` and the request weight `add` (see `Weighting`).
/// A null `excluded` scans the counters alone (the library's `None`).
///
/// # Safety
/// `counters` and `excluded` (unless null) point to `n` readable lanes each, as does
/// `scale` for op 2, and the CPU runs AVX-512F, BMI2 and POPCNT.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scan_call(
    op: u64,
    counters: *const AtomicU32,
    excluded: *const u32,
    n: usize,
    min: u32,
    k: u32,
    scale: *const u32,
    add: u32,
) -> u64 {
    // SAFETY: the caller's promise.
    let (c, e) = unsafe {
        (
            core::slice::from_raw_parts(counters, n),
            (!excluded.is_null()).then(|| core::slice::from_raw_parts(excluded, n)),
        )
    };
    // SAFETY: the caller's promise on the CPU.
    unsafe {
        match op {
            0 => {
                let got = avx512::run(MinTiesOp(c, e));
                u64::from(got.min) << 32 | u64::from(got.ties)
            }
            2 => {
                // SAFETY: the caller's promise.
                let scale = core::slice::from_raw_parts(scale, n);
                let w = Weighting { scale, limit: min, add };
                let got = avx512::run(WeightedMinTiesOp(c, e, w));
                u64::from(got.min) << 32 | u64::from(got.ties)
            }
            _ => match avx512::run(NthTieOp(c, e, min, k)) {
                Ok(i) => i as u64,
                Err(found) => 1 << 63 | u64::from(found),
            },
        }
    }
}

/// A panic stops the emulated CPU on an invalid opcode, which the driver reports.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        // SAFETY: `ud2` only raises #UD.
        unsafe { core::arch::asm!("ud2") }
    }
}
