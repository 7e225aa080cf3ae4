//! The public choice of scan implementation, its names, and the rule that picks
//! one from what the CPU runs and what the environment asks for (what the CPU
//! runs is `dispatch`'s).

use std::ffi::OsStr;

/// A scan implementation.
///
/// Any backend may be given to
/// [`Pool::with_scan_backend`](crate::Pool::with_scan_backend): one the CPU cannot run
/// is replaced by [`Backend::Scalar`], so a wrong choice costs speed, never soundness.
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

/// The environment override read by [`Backend::detect`] (see the module docs).
pub(super) const BACKEND_ENV: &str = "WORKERPICK_SCAN";

impl Backend {
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
