//! C entry point to the library's AVX-512 scan kernel, compiled from the very file the
//! library ships, for an emulator to call: no OS, no allocator, no unwinding.

#![no_std]

use core::sync::atomic::AtomicU32;

/// What the kernel file imports from the library (`crate::sync`, `super::MinTies`).
mod sync {
    pub mod atomic {
        pub use core::sync::atomic::AtomicU32;
    }
}

/// The library's `scan::MinTies`: the kernel returns it.
struct MinTies {
    min: u32,
    ties: u32,
}

#[path = "../../src/scan/avx512.rs"]
mod avx512;

/// `op` 0: `min_ties`, returned as `min << 32 | ties`.
/// `op` 1: `nth_tie(min, k)`: `Ok(i)` as `i`, `Err(found)` as `1 << 63 | found`.
///
/// # Safety
/// `counters` and `excluded` point to `n` readable lanes each, and the CPU runs
/// AVX-512F, BMI2 and POPCNT.
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
            core::slice::from_raw_parts(excluded, n),
        )
    };
    // SAFETY: the caller's promise on the CPU.
    unsafe {
        match op {
            0 => {
                let got = avx512::min_ties(c, e);
                u64::from(got.min) << 32 | u64::from(got.ties)
            }
            _ => match avx512::nth_tie(c, e, min, k) {
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
