//! The least-loaded scan: the minimum effective load over a counter array, how many
//! lanes share it, and the index of the k-th of those lanes.
//!
//! The effective value of lane `i` is `counters[i].load(Relaxed) | excluded[i]`, where
//! `excluded[i]` is `0` for a candidate and `u32::MAX` for a lane to skip; the `_all`
//! forms and `least(.., None, ..)` take every lane as a candidate and read no exclusion
//! array. A least-loaded pick is [`least`] (the minimum, one uniform draw among the
//! ties, the lane of that tie), then a compare-and-swap from `min` on the chosen
//! counter; [`min_ties`] and [`nth_tie`] are its two halves. If the slices differ in
//! length, the shorter one decides how many lanes there are.
//!
//! `scalar.rs` is the specification: the AVX2, AVX-512 and NEON backends must return
//! exactly what it returns for the same values (tested on every backend the CPU runs).
//! On x86-64 the backend is chosen at run time ([`Backend::detect`]), so a default
//! `cargo build --release` gets the vector code without `-C target-cpu` flags; on
//! aarch64 NEON is part of the base architecture, so it is always there.
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

use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod avx2;
#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod avx512;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
mod neon;
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
    /// 4 lanes per vector (aarch64, where NEON is part of the base architecture).
    Neon,
}

impl Backend {
    /// The backend to use on this CPU, decided on the first call and cached.
    ///
    /// The fastest available backend, unless the environment variable `WORKERPICK_SCAN`
    /// (read at that first call only) names another available one: `scalar`, `avx2`,
    /// `avx512` or `neon`; an unknown or unavailable name is ignored. Always
    /// [`Backend::Scalar`] under Miri, under loom, and off x86-64 and aarch64. The
    /// first call reads the environment,
    /// which allocates: make it when building a pool, not on the first pick.
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
            Backend::Neon => "neon",
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
mod detect {
    use super::{BACKEND_ENV, Backend, choose};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

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
        // The AVX-512 kernel serves masked scans only; an AVX-512 CPU runs the AVX2
        // kernel for the rest, so require AVX2 too (every AVX-512 CPU has it).
        if bits & AVX2 != 0 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("bmi2") {
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
            Backend::Neon => return false,
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
}

/// NEON is part of the base architecture: nothing to probe.
#[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
mod detect {
    use super::{BACKEND_ENV, Backend, choose};
    use std::sync::OnceLock;

    static DETECTED: OnceLock<Backend> = OnceLock::new();

    pub(super) fn available() -> &'static [Backend] {
        &[Backend::Scalar, Backend::Neon]
    }

    pub(super) fn detect() -> Backend {
        *DETECTED.get_or_init(|| choose(available(), std::env::var_os(BACKEND_ENV).as_deref()))
    }
}

/// Read once by [`Backend::detect`]: `scalar`, `avx2`, `avx512` or `neon`.
#[cfg(any(
    all(target_arch = "x86_64", not(any(miri, loom))),
    all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom)))
))]
const BACKEND_ENV: &str = "WORKERPICK_SCAN";

/// The backend named by `request` if the CPU runs it, else the fastest available
/// (`available` lists them slowest first).
#[cfg(any(
    all(target_arch = "x86_64", not(any(miri, loom))),
    all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom)))
))]
fn choose(available: &[Backend], request: Option<&std::ffi::OsStr>) -> Backend {
    let best = available.last().copied().unwrap_or(Backend::Scalar);
    request
        .and_then(std::ffi::OsStr::to_str)
        .map(str::trim)
        .and_then(|name| {
            available
                .iter()
                .copied()
                .find(|b| b.name().eq_ignore_ascii_case(name))
        })
        .unwrap_or(best)
}

#[cfg(not(any(
    all(target_arch = "x86_64", not(any(miri, loom))),
    all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom)))
)))]
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
    /// How many lanes equal `min`: 0 when there is no lane, and at least 1 otherwise,
    /// unless other threads change the counters during the scan (the vector backends
    /// count in a second pass, by when the lanes at the minimum may have moved).
    pub ties: u32,
}

/// Scans the lanes: the minimum of `counters[i] | excluded[i]` and its tie count.
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
    let n = counters.len().min(excluded.len());
    Kernel::of(backend).min_ties(&counters[..n], Some(&excluded[..n]))
}

/// [`min_ties`] with every lane a candidate: the minimum counter and how many share it.
/// Reads only the counters, so it is faster than passing an all-zero `excluded`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1].into_iter().map(AtomicU32::new).collect();
/// let got = scan::min_ties_all(Backend::detect(), &counters);
/// assert_eq!(got, MinTies { min: 1, ties: 2 });
/// ```
#[inline]
pub fn min_ties_all(backend: Backend, counters: &[AtomicU32]) -> MinTies {
    Kernel::of(backend).min_ties(counters, None)
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
    let n = counters.len().min(excluded.len());
    Kernel::of(backend).nth_tie(&counters[..n], Some(&excluded[..n]), min, k)
}

/// [`nth_tie`] with every lane a candidate (the companion of [`min_ties_all`]).
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend};
///
/// let counters: Vec<AtomicU32> = [1, 0, 7, 0].into_iter().map(AtomicU32::new).collect();
/// assert_eq!(scan::nth_tie_all(Backend::detect(), &counters, 0, 1), Ok(3));
/// ```
#[inline]
pub fn nth_tie_all(backend: Backend, counters: &[AtomicU32], min: u32, k: u32) -> Result<usize, u32> {
    Kernel::of(backend).nth_tie(counters, None, min, k)
}

/// The outcome of [`least`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Least {
    /// A lane at the minimum, as read.
    Found {
        /// The lane.
        index: usize,
        /// Its value when read: the minimum.
        min: u32,
    },
    /// There are no lanes, or every lane is excluded.
    Empty,
    /// The minimum is `u32::MAX`: saturated counters, which look like excluded lanes.
    Saturated,
    /// The lanes at the minimum changed between the passes of the scan: scan again.
    Moved,
}

/// The least-loaded pick over the lanes (every counter when `excluded` is `None`): the
/// minimum, and one lane holding it, chosen uniformly at random when several do: the
/// tie-break of [`LeastLoaded`](crate::LeastLoaded), which this is.
///
/// `draw(m)` must return a uniform random value below `m` (a larger one is clamped or
/// ignored). Over two lanes or more, `least` first tries lanes drawn out of all of them
/// (`m` = the number of lanes) and takes the first that holds the minimum: one try
/// over up to 32 lanes, which it reads once into registers, and up to 8 beyond. When
/// many lanes tie, as in an idle or balanced pool, that is one draw and no second
/// look at the lanes. Each draw is uniform, so a lane it accepts is uniform among the
/// ties. If the tries miss, it counts the ties and draws once among them (`m` = the
/// number of ties, counted in index order from 0); no draw is made for a single tie.
///
/// Faster than [`min_ties`] then [`nth_tie`]: besides the tries, up to 32 lanes are
/// read once, and beyond that the vector backends count ties per segment of the lanes
/// and search only the segment holding the drawn tie. Lanes that other threads change
/// during the scan can make it answer [`Least::Moved`]: scan again, and validate a
/// [`Least::Found`] with a compare-and-swap from `min`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Least};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1, 5].into_iter().map(AtomicU32::new).collect();
/// // Two lanes hold 1. The try over all 5 lanes names lane 4 (it holds 5, a miss),
/// // then the draw among the 2 ties names the second of them.
/// let got = scan::least(Backend::detect(), &counters, None, |m| m - 1);
/// assert_eq!(got, Least::Found { index: 3, min: 1 });
/// // A try that names a lane at the minimum is taken.
/// let got = scan::least(Backend::detect(), &counters, None, |_| 1);
/// assert_eq!(got, Least::Found { index: 1, min: 1 });
/// // Lane 3 excluded: the try names lane 4 again, then a single minimum is left,
/// // taken with no draw.
/// let excluded = [0, 0, 0, u32::MAX, 0];
/// let mut draws = 0;
/// let got = scan::least(Backend::detect(), &counters, Some(&excluded), |m| {
///     draws += 1;
///     m - 1
/// });
/// assert_eq!(got, Least::Found { index: 1, min: 1 });
/// assert_eq!(draws, 1);
/// ```
#[inline(always)]
pub fn least(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    mut draw: impl FnMut(u32) -> u32,
) -> Least {
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    if n <= FEW_LANES {
        return scalar::least_few(counters, excluded, draw);
    }
    // The path is decided by the length alone, the same on every backend: one pass and
    // one try up to SMALL_LANES lanes, else up to SAMPLES tries. Another path would make
    // other draws than scalar's, and so pick another lane for the same draws.
    let kernel = Kernel::of(backend);
    let short = n <= SMALL_LANES;
    match (kernel, excluded) {
        (Kernel::Scalar, _) if short => return scalar::least_small(counters, excluded, draw),
        // NEON takes scalar's one-pass read up to 32 lanes (not yet timed against a
        // NEON version on ARM hardware), and its passes over longer scans below.
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
        (Kernel::Neon, _) if short => return scalar::least_small(counters, excluded, draw),
        // SAFETY: as in `Kernel::min_ties`. The AVX-512 kernel has neither a short path
        // nor an exclusion-free scan: the AVX2 one serves both.
        #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
        (Kernel::Avx2 | Kernel::Avx512, _) if short || excluded.is_none() || kernel == Kernel::Avx2 => {
            return unsafe { avx2::least(counters, excluded, draw) };
        }
        _ => {}
    }
    let found = kernel.min_ties(counters, excluded);
    if found.min == u32::MAX {
        return if n == 0 { Least::Empty } else { Least::Saturated };
    }
    let value = |i: usize| counters[i].load(Relaxed) | excluded.map_or(0, |e| e[i]);
    if let Some(index) = sample::<SAMPLES>(n, value, found.min, &mut draw) {
        return Least::Found {
            index,
            min: found.min,
        };
    }
    let k = match found.ties {
        0 => return Least::Moved,
        ties => draw_among(ties, &mut draw),
    };
    match kernel.nth_tie(counters, excluded, found.min, k) {
        Ok(index) => Least::Found {
            index,
            min: found.min,
        },
        Err(_) => Least::Moved,
    }
}

/// How many random lanes [`least`] tries over more than [`SMALL_LANES`] lanes before
/// it counts the ties (up to that many, which it reads in one pass, it tries one). With
/// a fraction `p` of the lanes tying, all tries miss with probability `(1 - p)^8`:
/// 0.4% at a half, 10% at a quarter. A try costs a draw and one load; the count it may
/// save reads every lane.
const SAMPLES: usize = 8;

/// Up to `TRIES` uniform draws over the `n` lanes: the first whose `value` is `min`.
/// Conditioned on acceptance each is uniform among the lanes at `min`. None for fewer
/// than 2 lanes (no draw is made for a single lane).
#[inline(always)]
fn sample<const TRIES: usize>(
    n: usize,
    value: impl Fn(usize) -> u32,
    min: u32,
    draw: &mut impl FnMut(u32) -> u32,
) -> Option<usize> {
    if n < 2 {
        return None;
    }
    let lanes = u32::try_from(n).ok()?;
    for _ in 0..TRIES {
        let i = draw(lanes) as usize;
        if i < n && value(i) == min {
            return Some(i);
        }
    }
    None
}

/// Tie `k` of `ties` (at least 1): `0` with no draw for a single tie, else
/// `draw(ties)`, clamped to the last tie.
#[inline(always)]
fn draw_among(ties: u32, draw: impl FnOnce(u32) -> u32) -> u32 {
    if ties == 1 { 0 } else { draw(ties).min(ties - 1) }
}

/// The lane of a tie drawn with `draw` from `at_min`, the non-empty set of the
/// `ties` lanes (bit i = lane i) at the minimum among `n` lanes.
#[inline(always)]
fn drawn_lane(at_min: u32, ties: u32, n: usize, draw: impl FnOnce(u32) -> u32) -> usize {
    match ties {
        1 => at_min.trailing_zeros() as usize,
        // Every lane ties: tie k is lane k.
        _ if ties as usize == n => draw_among(ties, draw) as usize,
        _ => nth_set_bit(at_min, draw_among(ties, draw)),
    }
}

/// The position of the set bit of `bits` with `rank` set bits below it
/// (`rank < bits.count_ones()`). A binary search by popcount, without branches: the
/// rank is a random draw, so a data-dependent branch here would be mispredicted about
/// once per pick. No BMI2 `pdep`, which is microcoded on AMD before Zen 3.
#[inline]
fn nth_set_bit(mut bits: u32, mut rank: u32) -> usize {
    let mut pos = 0;
    for width in [16, 8, 4, 2, 1] {
        let below = (bits & ((1 << width) - 1)).count_ones();
        // All ones when tie `rank` lies above the low `width` bits.
        let up = 0u32.wrapping_sub(u32::from(rank >= below));
        rank -= below & up;
        bits >>= width & up;
        pos += width & up;
    }
    pos as usize
}

/// Up to this many lanes every backend answers [`least`] with the scalar `least_few`,
/// a small function of its own: calling into a vector kernel (its dispatch and its
/// large frame) costs more than scanning 8 lanes.
const FEW_LANES: usize = 8;

/// Up to this many lanes [`least`] reads each lane once and makes one random try (its
/// bit set of ties is a `u32`).
const SMALL_LANES: usize = 32;

/// A backend the CPU has been checked to support (see [`Kernel::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Scalar,
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
    Avx2,
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
    Avx512,
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
    Neon,
}

impl Kernel {
    /// `backend` if this CPU runs it, else scalar.
    #[inline]
    fn of(backend: Backend) -> Kernel {
        #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
        match backend {
            Backend::Avx512 if detect::supports(backend) => return Kernel::Avx512,
            Backend::Avx2 if detect::supports(backend) => return Kernel::Avx2,
            _ => {}
        }
        // NEON is part of the base architecture: no check.
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
        if backend == Backend::Neon {
            return Kernel::Neon;
        }
        let _ = backend;
        Kernel::Scalar
    }

    #[inline]
    fn min_ties(self, counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
        match (self, excluded) {
            (Kernel::Scalar, _) => scalar::min_ties(counters, excluded),
            // SAFETY: a `Kernel::Avx512` exists only where `supports` confirmed every
            // feature that kernel enables, AVX2 included (see `detect::probe`).
            #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
            (Kernel::Avx512, Some(e)) => unsafe { avx512::min_ties(counters, e) },
            // SAFETY: as above: AVX2 is confirmed for both kernels. The AVX-512
            // kernel has no exclusion-free variant; the AVX2 one, reading half the
            // memory of a masked scan, serves it.
            #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
            (Kernel::Avx2 | Kernel::Avx512, _) => unsafe { avx2::min_ties(counters, excluded) },
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
            (Kernel::Neon, _) => neon::min_ties(counters, excluded),
        }
    }

    #[inline]
    fn nth_tie(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        min: u32,
        k: u32,
    ) -> Result<usize, u32> {
        match (self, excluded) {
            (Kernel::Scalar, _) => scalar::nth_tie(counters, excluded, min, k),
            // SAFETY: as in `min_ties`.
            #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
            (Kernel::Avx512, Some(e)) => unsafe { avx512::nth_tie(counters, e, min, k) },
            // SAFETY: as in `min_ties`.
            #[cfg(all(target_arch = "x86_64", not(any(miri, loom))))]
            (Kernel::Avx2 | Kernel::Avx512, _) => unsafe { avx2::nth_tie(counters, excluded, min, k) },
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(any(miri, loom))))]
            (Kernel::Neon, _) => neon::nth_tie(counters, excluded, min, k),
        }
    }
}
