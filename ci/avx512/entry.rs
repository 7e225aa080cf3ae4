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
#[path = "../../src/scan/draw.rs"]
mod draw;
#[path = "../../src/scan/outcome.rs"]
mod outcome;
#[path = "../../src/scan/simd.rs"]
mod simd;
#[path = "../../src/scan/vector.rs"]
mod vector;

use outcome::MinTies;
use vector::{Op, Vector};

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

/// `op` 0: `min_ties`, returned as `min << 32 | ties`.
/// `op` 1: `nth_tie(min, k)`: `Ok(i)` as `i`, `Err(found)` as `1 << 63 | found`.
/// A null `excluded` scans the counters alone (the library's `None`).
///
/// # Safety
/// `counters` and `excluded` (unless null) point to `n` readable lanes each, and the
/// CPU runs AVX-512F, BMI2 and POPCNT.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scan_call(
    op: u64,
    counters: *const AtomicU32,
    excluded: *const u32,
    n: usize,
    min: u32,
    k: u32,
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
