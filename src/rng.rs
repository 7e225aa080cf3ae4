/// The random source every pick draws from: small, fast and seedable.
///
/// A [`Handle`](crate::Handle) owns one, so a router thread draws without any
/// shared state; seed it for reproducible runs and tests. Plain
/// [`Pool`](crate::Pool) methods seed a fresh one from the thread-local
/// generator (a fixed seed under loom).
///
/// ```
/// use workerpick::Rng;
/// let mut a = Rng::with_seed(7);
/// let mut b = Rng::with_seed(7);
/// assert_eq!(a.below(10), b.below(10));
/// ```
#[derive(Clone, Debug)]
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A generator seeded from the thread-local source (fixed under loom).
    pub fn new() -> Self {
        Self::with_seed(crate::sync::random_seed())
    }

    /// A generator that yields the same draws for the same seed.
    pub fn with_seed(seed: u64) -> Self {
        Self(fastrand::Rng::with_seed(seed))
    }

    /// A uniform draw in `0..n`; `0` when `n` is `0`.
    ///
    /// One 64-bit draw scaled by `n` (the high half of a 64 × 32-bit product): no
    /// branch and no rejection loop. Each value's probability is within `2^-32` of
    /// `1/n` (relative), far below anything a load balancer can observe.
    #[inline(always)]
    pub fn below(&mut self, n: u32) -> u32 {
        ((u128::from(self.0.u64(..)) * u128::from(n)) >> 64) as u32
    }

    /// A uniform `u64`.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// The generator's current state; two generators with equal state draw
    /// alike, which is how tests count a selector's draws.
    #[cfg(test)]
    pub(crate) fn state(&self) -> u64 {
        self.0.get_seed()
    }
}

impl Default for Rng {
    fn default() -> Self {
        Self::new()
    }
}
