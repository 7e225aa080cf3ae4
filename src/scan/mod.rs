//! The least-loaded scan, and the choice of the machine code that runs it.
//!
//! What callers choose is the [`Backend`]: [`Backend::detect`] names the fastest this
//! CPU runs (decided once, at the first call), and
//! [`Pool::with_scan_backend`](crate::Pool::with_scan_backend) picks another. A pool
//! checks its backend against the CPU once, when it is built; its picks then run that
//! kernel with no further detection. Every backend returns exactly what the portable
//! scalar one returns, draw for draw, so the choice changes speed, never a pick.
//!
//! # Overriding the choice from the environment
//!
//! The environment variable `WORKERPICK_SCAN`, read once by the first
//! [`Backend::detect`], names the backend detection returns: `scalar`, `avx2`,
//! `avx512` or `neon` (any case). One this CPU cannot run, or an unknown name, is
//! ignored. It exists so that a benchmark or a test run can compare backends without
//! rebuilding; in an application prefer
//! [`Pool::with_scan_backend`](crate::Pool::with_scan_backend), which does not depend
//! on the process environment.
//!
//! # How a scan works
//!
//! The effective value of lane `i` is `counters[i].load(Relaxed) | excluded[i]`, where
//! `excluded[i]` is `0` for a candidate and `u32::MAX` for a lane to skip; a scan with
//! no exclusion array reads the counters alone. A least-loaded pick is the minimum,
//! one uniform draw among the lanes holding it, and a compare-and-swap from that
//! minimum on the chosen counter (see [`docs`](crate::docs) for the tie-break).
//!
//! The weighted scan ([`least_weighted`]) compares a score per lane instead:
//! `(min(x, limit) + add) * scale[i]` for the effective value
//! `x`, the load per unit of capacity as one `u32` (see `weighting.rs`). It is the
//! same scan over another view of the lanes, with the same tries and draws. So is the
//! credited scan ([`least_credited`]), the cost mode's dense pass: per lane
//! `1000·min(x, limit) + α·K − α·credit[i]`, exact below `1000·limit` (`credit.rs`).
//!
//! `scalar.rs` is the specification: the AVX2, AVX-512 and NEON backends must return
//! exactly what it returns for the same values and the same draws. The vector
//! backends share one algorithm (`simd.rs`), written once over a small set of
//! primitives that each backend implements (`vector.rs`: load a vector of lanes, load
//! the last partial one, compare to a bit set, lane-wise and horizontal minimum, tie
//! counts), in the manner of hashbrown's `Group` and memchr's `Vector`. On x86-64 the
//! backend is chosen at run time, so a default `cargo build --release` gets the vector
//! code without `-C target-cpu` flags; on aarch64 NEON is part of the base
//! architecture, so it is always there.
//!
//! # Soundness of the vector loads
//!
//! The counters are atomics that other threads update while a scan runs. A vector load
//! of them written in Rust (an intrinsic, or a cast of `&[AtomicU32]` to `&[u32]`) is a
//! non-atomic read racing with atomic writes: undefined behaviour in Rust's memory model,
//! however harmless the hardware makes it. The SIMD backends therefore load `counters`
//! from inline `asm!`, whose meaning is what the instruction does on the machine:
//!
//! - Every lane is an `AtomicU32`, hence 4-byte aligned. x86-64 guarantees that aligned
//!   accesses of up to 8 bytes are atomic; a wider vector access may be carried out as
//!   several accesses, and implementations split it at boundaries of 8 bytes or more
//!   (their load-path widths), never inside an aligned 4-byte element. So each lane is
//!   read by one atomic 4-byte access, and the asm block behaves like a sequence of
//!   `load(Relaxed)` calls on those lanes: something Rust code could do, so it adds no
//!   data race. Lanes may be observed at different moments; nothing needs more.
//! - The asm reads only lanes inside the borrowed slice: full loads are bounds-checked
//!   by the loops, and the partial load at the end (`vpmaskmovd`, masked `vmovdqu32`)
//!   does not access masked-off lanes at all (no read, no fault). It writes nothing and
//!   touches no stack or flags (`pure, readonly, nostack, preserves_flags`).
//! - On AArch64 the NEON backend loads the counters with `ld1 {v.4s}`, an element
//!   load: the Arm Architecture Reference Manual (single-copy atomicity, B2.2.1) makes
//!   each element access of an Advanced SIMD element or structure load that is aligned
//!   to the element size single-copy atomic. Every lane is a 4-byte aligned
//!   `AtomicU32`, so each is read by one atomic 4-byte access, the same argument as
//!   above. (`ldr q`/`ldp q` are not used: their guarantee is for 8-byte halves of an
//!   8-byte aligned access.) NEON has no masked load, so the last 1-3 lanes are read
//!   with scalar Relaxed loads; the asm reads only in-bounds lanes.
//! - `excluded` is plain shared-immutable memory, loaded with ordinary intrinsics.
//!
//! And correctness does not even rest on the first point: a scan of counters that other
//! threads change is a hint (`min`, `ties` and the index may each be one update stale),
//! and the caller charges a counter only through a compare-and-swap from the value it
//! saw, on the real atomic. A stale or misread value costs a retry, never a lost or
//! doubled count. Under `cfg(miri)` and `cfg(loom)`, and off x86-64 and aarch64 (with
//! NEON), only the scalar backend is compiled: Miri cannot run inline asm and loom's
//! atomics are not plain memory.

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
