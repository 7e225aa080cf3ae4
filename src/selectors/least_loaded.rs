use crate::context::Context;
use crate::selector::{Choice, Selector};
use crate::selectors::{Builtin, Configure};

/// The minimum in-flight load over all candidates, ties broken uniformly at
/// random. The scan is a SIMD min-reduction over the packed counters.
///
/// Exact under concurrent reservations: the reservation is a compare-and-swap
/// from the minimum the scan saw, and loads only grow while nobody releases,
/// so a successful swap books a true minimum. With concurrent releases a pick
/// may be one release stale (a worker that just dropped below the minimum).
///
/// ```
/// use workerpick::{LeastLoaded, Pool};
/// let pool = Pool::from_workers(0..4).unwrap();
/// let ll = LeastLoaded::new();
/// let held: Vec<_> = (0..8).map(|_| pool.reserve(&ll).unwrap()).collect();
/// for w in 0..4 {
///     assert_eq!(pool.in_flight(&w), Some(2));
/// }
/// drop(held);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastLoaded;

impl LeastLoaded {
    /// The least-loaded mode.
    pub const fn new() -> Self {
        LeastLoaded
    }
}

impl Selector for LeastLoaded {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let (slot, load) = cx.least_loaded()?;
        Some(Choice::validated(slot, load))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for LeastLoaded {}
