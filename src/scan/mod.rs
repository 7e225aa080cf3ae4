//! The least-loaded scan, and the choice of the machine code that runs it:
//! [`Backend::detect`] names the fastest this CPU runs (decided once), and
//! [`Pool::with_scan_backend`](crate::Pool::with_scan_backend) picks another
//! for a pool. Every backend returns exactly what the portable scalar one
//! returns, draw for draw, so the choice changes speed, never a pick. The
//! environment variable `WORKERPICK_SCAN` (`scalar`, `avx2`, `avx512`,
//! `neon`), read once by the first detection, overrides it for the whole
//! process: an operator's switch for a deployed router (a suspected kernel
//! defect, a CPU where AVX-512 slows down) that needs no rebuild. How a scan
//! works, and why its vector loads are sound: [`docs::internal::scan`](crate::docs::internal::scan).

// The three configurations, each spelled once: x86-64 (AVX2 and AVX-512 chosen at run
// time), aarch64 with NEON, and the rest (scalar only). Miri cannot run inline asm
// and loom's atomics are not plain memory, so both get the scalar code alone.

/// Items compiled on x86-64 with the vector backends.
macro_rules! cfg_x86 {
    ($($item:item)*) => { $( #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))] $item )* };
}

/// Items compiled on aarch64 with the NEON backend.
macro_rules! cfg_neon {
    ($($item:item)*) => {
        $( #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))] $item )*
    };
}

/// Items compiled where only the scalar backend is.
macro_rules! cfg_scalar_only {
    ($($item:item)*) => {
        $(
            #[cfg(not(any(
                all(target_arch = "x86_64", not(any(miri, loom))),
                all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))),
            )))]
            $item
        )*
    };
}

mod api;
mod backend;
mod credit;
mod dispatch;
mod draw;
mod kernel;
mod keys;
mod outcome;
mod scalar;
#[cfg(all(test, not(loom)))]
mod tests;
mod weighting;

// Exactly one of the three holds: `simd` and `vector` are declared once.
cfg_x86! {
    mod avx2;
    mod avx512;
    mod simd;
    mod vector;
}
cfg_neon! {
    mod neon;
    mod simd;
    mod vector;
}
cfg_scalar_only! {
    // Generic code that no backend instantiates here; it still compiles, so that
    // the scalar fallbacks of its operations stay checked.
    #[allow(dead_code)]
    mod simd;
    #[allow(dead_code)]
    mod vector;
}

pub use backend::Backend;
// What the per-block bounds' picks (`bounds`) run on the kernel.
pub(crate) use draw::{Cut, SAMPLES, draw_among, sample};
pub(crate) use weighting::score;

// The kernel itself: for the crate's picks, its fuzz targets, benchmarks and CI
// scripts. Not part of the API.
#[doc(hidden)]
pub use api::{least, least_credited, least_weighted, min_ties, min_ties_all, nth_tie, nth_tie_all, range};
#[doc(hidden)]
pub use credit::Credit;
#[doc(hidden)]
pub use kernel::Kernel;
#[doc(hidden)]
pub use outcome::{Least, MinTies, Range};
#[doc(hidden)]
pub use weighting::Weighting;
