//! The least-loaded scan: the minimum effective load over a counter array, how many
//! lanes share it, and the index of the k-th of those lanes.
//!
//! The effective value of lane `i` is `counters[i].load(Relaxed) | excluded[i]`, where
//! `excluded[i]` is `0` for a candidate and `u32::MAX` for a lane to skip. A least-loaded
//! pick is [`min_ties`], one uniform draw `k` in `0..ties`, [`nth_tie`], then a
//! compare-and-swap from `min` on the chosen counter. If the slices differ in length,
//! the shorter one decides how many lanes there are.
//!
//! `scalar.rs` is the specification: the AVX2 and AVX-512 backends must return exactly
//! what it returns for the same values (tested on every backend the CPU runs). The
//! backend is chosen at run time ([`Backend::detect`]), so a default
//! `cargo build --release` gets the vector code without `-C target-cpu` flags.
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
//! - `excluded` is plain shared-immutable memory, loaded with ordinary intrinsics.
//!
//! And correctness does not even rest on the first point: a scan of counters that other
//! threads change is a hint (`min`, `ties` and the index may each be one update stale),
//! and the caller charges a counter only through a compare-and-swap from the value it
//! saw, on the real atomic. A stale or misread value costs a retry, never a lost or
//! doubled count. Under `cfg(miri)` and `cfg(loom)`, and off x86-64, only the scalar
//! backend is compiled: Miri cannot run inline asm and loom's atomics are not plain
//! memory.

use crate::sync::atomic::AtomicU32;

#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod avx2;
#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod avx512;
mod scalar;
#[cfg(all(test, not(loom)))]
mod tests;

/// A scan implementation.
///
/// Any backend may be passed to [`min_ties`] and [`nth_tie`]: one the CPU cannot run is
/// replaced by [`Backend::Scalar`], so a wrong choice costs speed, never soundness.
///
/// ```
/// use workerpick::scan::Backend;
///
/// let best = Backend::detect();
/// assert!(Backend::available().contains(&best));
/// assert_eq!(Backend::available()[0], Backend::Scalar);
/// println!("scanning with {}", best.name());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable code, one Relaxed load per lane; the reference the others must match.
    Scalar,
    /// 8 lanes per vector (x86-64 with AVX2 and POPCNT).
    Avx2,
    /// 16 lanes per vector (x86-64 with AVX-512F, BMI2 and POPCNT).
    Avx512,
}

impl Backend {
    /// The backend to use on this CPU, decided on the first call and cached.
    ///
    /// The fastest available backend, unless the environment variable `WORKERPICK_SCAN`
    /// names another available one (`scalar`, `avx2` or `avx512`) (it is read once, at that first call; an unknown or unavailable name is
    /// ignored). Always [`Backend::Scalar`] under Miri, under loom, and off x86-64.
    ///
    /// ```
    /// use workerpick::scan::Backend;
    ///
    /// assert_eq!(Backend::detect(), Backend::detect());
    /// ```
    pub fn detect() -> Backend {
        detect::detect()
    }

    /// Every backend this CPU can run, [`Backend::Scalar`] first, fastest last.
    ///
    /// ```
    /// use workerpick::scan::Backend;
    ///
    /// for backend in Backend::available() {
    ///     println!("{}", backend.name());
    /// }
    /// ```
    pub fn available() -> &'static [Backend] {
        detect::available()
    }

    /// The lowercase name, as `WORKERPICK_SCAN` accepts it.
    ///
    /// ```
    /// use workerpick::scan::Backend;
    ///
    /// assert_eq!(Backend::Avx512.name(), "avx512");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod detect {
    use super::Backend;
    use std::ffi::OsStr;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    /// Read once by [`Backend::detect`]: `scalar`, `avx2` or `avx512`.
    const BACKEND_ENV: &str = "WORKERPICK_SCAN";

    const PROBED: u8 = 1;
    const AVX2: u8 = 2;
    const AVX512: u8 = 4;

    // Relaxed: the value is a pure function of the CPU, so racing first callers store
    // the same bits, and nothing else is published through it.
    static FEATURES: AtomicU8 = AtomicU8::new(0);
    static DETECTED: OnceLock<Backend> = OnceLock::new();

    #[inline]
    fn features() -> u8 {
        match FEATURES.load(Relaxed) {
            0 => probe(),
            bits => bits,
        }
    }

    #[cold]
    #[inline(never)]
    fn probe() -> u8 {
        let mut bits = PROBED;
        let popcnt = is_x86_feature_detected!("popcnt");
        if popcnt && is_x86_feature_detected!("avx2") {
            bits |= AVX2;
        }
        if popcnt && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("bmi2") {
            bits |= AVX512;
        }
        FEATURES.store(bits, Relaxed);
        bits
    }

    /// Whether this CPU runs `backend`: one Relaxed load once probed, no allocation.
    #[inline]
    pub(super) fn supports(backend: Backend) -> bool {
        let bit = match backend {
            Backend::Scalar => return true,
            Backend::Avx2 => AVX2,
            Backend::Avx512 => AVX512,
        };
        features() & bit != 0
    }

    pub(super) fn available() -> &'static [Backend] {
        match features() & (AVX2 | AVX512) {
            0 => &[Backend::Scalar],
            AVX2 => &[Backend::Scalar, Backend::Avx2],
            AVX512 => &[Backend::Scalar, Backend::Avx512],
            _ => &[Backend::Scalar, Backend::Avx2, Backend::Avx512],
        }
    }

    pub(super) fn detect() -> Backend {
        *DETECTED.get_or_init(|| choose(available(), std::env::var_os(BACKEND_ENV).as_deref()))
    }

    /// The backend named by `request` if the CPU runs it, else the fastest available
    /// (`available` lists them slowest first).
    pub(super) fn choose(available: &[Backend], request: Option<&OsStr>) -> Backend {
        let best = available.last().copied().unwrap_or(Backend::Scalar);
        request
            .and_then(OsStr::to_str)
            .map(str::trim)
            .and_then(|name| {
                available
                    .iter()
                    .copied()
                    .find(|b| b.name().eq_ignore_ascii_case(name))
            })
            .unwrap_or(best)
    }
}

#[cfg(not(all(target_arch = "x86_64", not(any(miri, loom)))))]
mod detect {
    use super::Backend;

    pub(super) fn available() -> &'static [Backend] {
        &[Backend::Scalar]
    }

    pub(super) fn detect() -> Backend {
        Backend::Scalar
    }
}

/// The minimum effective value and how many lanes hold it.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1].into_iter().map(AtomicU32::new).collect();
/// let got = scan::min_ties(Backend::detect(), &counters, &[0, 0, 0, 0]);
/// assert_eq!(got, MinTies { min: 1, ties: 2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinTies {
    /// The smallest `counters[i] | excluded[i]`; `u32::MAX` when there is no lane, or
    /// when every lane is excluded (or holds `u32::MAX`).
    pub min: u32,
    /// How many lanes equal `min`; 0 only when there is no lane.
    pub ties: u32,
}

/// Scans all lanes once: the minimum of `counters[i] | excluded[i]` and its tie count.
///
/// `excluded[i]` must be `0` (candidate) or `u32::MAX` (skipped) for the result to mean
/// "least-loaded candidate"; other values are simply ORed in. The result is a snapshot
/// of lanes read at slightly different times: validate it with a compare-and-swap.
/// Never allocates and never panics.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [2, 0, 5, 0].into_iter().map(AtomicU32::new).collect();
/// // Lane 1 is not a candidate for this request.
/// let excluded = [0, u32::MAX, 0, 0];
/// let got = scan::min_ties(Backend::detect(), &counters, &excluded);
/// assert_eq!(got, MinTies { min: 0, ties: 1 });
/// ```
#[inline]
pub fn min_ties(backend: Backend, counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
    match backend {
        // SAFETY: `supports` confirmed the CPU has every feature the kernel enables.
        Backend::Avx512 if detect::supports(backend) => {
            return unsafe { avx512::min_ties(counters, excluded) };
        }
        // SAFETY: as above.
        Backend::Avx2 if detect::supports(backend) => {
            return unsafe { avx2::min_ties(counters, excluded) };
        }
        _ => {}
    }
    let _ = backend;
    scalar::min_ties(counters, excluded)
}

/// The index of the `k`-th lane (0-based, in index order) whose effective value equals
/// `min`, or `Err(found)` with the number of such lanes when there are `k` or fewer.
///
/// Stops at the lane it returns. `Err` after a [`min_ties`] that reported more ties
/// means lanes changed in between: scan again.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend};
///
/// let counters: Vec<AtomicU32> = [1, 0, 7, 0, 0].into_iter().map(AtomicU32::new).collect();
/// let excluded = [0; 5];
/// let backend = Backend::detect();
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 0), Ok(1));
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 2), Ok(4));
/// assert_eq!(scan::nth_tie(backend, &counters, &excluded, 0, 3), Err(3));
/// ```
#[inline]
pub fn nth_tie(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: &[u32],
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
    match backend {
        // SAFETY: `supports` confirmed the CPU has every feature the kernel enables.
        Backend::Avx512 if detect::supports(backend) => {
            return unsafe { avx512::nth_tie(counters, excluded, min, k) };
        }
        // SAFETY: as above.
        Backend::Avx2 if detect::supports(backend) => {
            return unsafe { avx2::nth_tie(counters, excluded, min, k) };
        }
        _ => {}
    }
    let _ = backend;
    scalar::nth_tie(counters, excluded, min, k)
}
