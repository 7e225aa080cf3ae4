//! The public choice of scan implementation, and which one this CPU gets by default.

use super::dispatch;
use std::ffi::OsStr;
use std::sync::OnceLock;

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
const BACKEND_ENV: &str = "WORKERPICK_SCAN";

impl Backend {
    /// The backend to use on this CPU, decided on the first call and cached.
    ///
    /// The fastest available backend, unless the environment variable `WORKERPICK_SCAN`
    /// (read at that first call only) names another available one: `scalar`, `avx2`,
    /// `avx512` or `neon`; an unknown or unavailable name is ignored (see
    /// [the module docs](crate::scan#overriding-the-choice-from-the-environment)).
    /// Always [`Backend::Scalar`] under Miri, under loom, and off x86-64 and aarch64.
    /// The first call reads the environment, which allocates: a pool makes it when it
    /// is built, not on a pick.
    ///
    /// ```
    /// use workerpick::scan::Backend;
    ///
    /// assert_eq!(Backend::detect(), Backend::detect());
    /// ```
    pub fn detect() -> Backend {
        static DETECTED: OnceLock<Backend> = OnceLock::new();
        *DETECTED.get_or_init(|| choose(Backend::available(), std::env::var_os(BACKEND_ENV).as_deref()))
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
        dispatch::available()
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
