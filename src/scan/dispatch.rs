//! Which backends this CPU runs, and the jump into a backend's entry function: the
//! one place that differs between x86-64, aarch64 and the rest.

use super::backend::{BACKEND_ENV, Backend, choose};
use super::vector::Op;
use std::sync::OnceLock;

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
        available()
    }
}

cfg_x86! {
    use super::{avx2, avx512};
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    const PROBED: u8 = 1;
    const AVX2: u8 = 2;
    const AVX512: u8 = 4;

    // Relaxed: the value is a pure function of the CPU, so racing first callers store
    // the same bits, and nothing else is published through it.
    static FEATURES: AtomicU8 = AtomicU8::new(0);

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

    /// Whether this CPU runs `backend`.
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

    /// Runs `op` on `backend`.
    ///
    /// # Safety
    /// [`supports`] confirmed `backend`.
    #[inline(always)]
    pub(super) unsafe fn run<O: Op>(backend: Backend, op: O) -> O::Out {
        match backend {
            // SAFETY: the CPU runs AVX2 and POPCNT (the caller's promise).
            Backend::Avx2 => unsafe { avx2::run(op) },
            // SAFETY: the CPU runs AVX-512F, BMI2 and POPCNT (the caller's promise).
            Backend::Avx512 => unsafe { avx512::run(op) },
            _ => op.scalar(),
        }
    }
}

cfg_neon! {
    use super::neon;

    /// NEON is part of the base architecture: nothing to probe.
    pub(super) fn supports(backend: Backend) -> bool {
        matches!(backend, Backend::Scalar | Backend::Neon)
    }

    pub(super) fn available() -> &'static [Backend] {
        &[Backend::Scalar, Backend::Neon]
    }

    /// Runs `op` on `backend`.
    ///
    /// # Safety
    /// None beyond the signature's: NEON is always there. `unsafe` as on x86-64.
    #[inline(always)]
    pub(super) unsafe fn run<O: Op>(backend: Backend, op: O) -> O::Out {
        match backend {
            Backend::Neon => neon::run(op),
            _ => op.scalar(),
        }
    }
}

cfg_scalar_only! {
    pub(super) fn supports(backend: Backend) -> bool {
        backend == Backend::Scalar
    }

    pub(super) fn available() -> &'static [Backend] {
        &[Backend::Scalar]
    }

    /// Runs `op` on the scalar reference, the only backend here.
    ///
    /// # Safety
    /// None: `unsafe` as on x86-64.
    #[inline(always)]
    pub(super) unsafe fn run<O: Op>(_: Backend, op: O) -> O::Out {
        op.scalar()
    }
}
