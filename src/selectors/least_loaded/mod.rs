//! Least-loaded: the minimum effective load over the candidates, ties
//! uniform. The decision tree is here; its paths are files of their own:
//! the flat SIMD scan (`scan::least`), the per-block bounds of large pools
//! (`bounds`), the exact scalar rule ([`minimum`]), capacity weights
//! ([`weighted`]) and the answer when health decides ([`health`]).

mod health;
mod minimum;
mod weighted;

pub(crate) use minimum::{Minimum, least_by};

use crate::bounds;
use crate::candidates::Candidates;
use crate::context::{Context, Slot};
use crate::scan::{self, Least};
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::bounds::loads::SUMMARISED_LANES;

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

impl Configure for LeastLoaded {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the worker holding the fewest");
    const SPLITS_EVENLY: bool = true;
}

/// The rule: the flat scan, or the bounds' pick on a large pool; weighted
/// and health-decided picks in their files.
#[inline(always)]
pub(crate) fn least<'a>(cx: &mut Context<'a>) -> Option<(Slot<'a>, u32)> {
    let found = scanned(cx)?;
    // Every candidate unhealthy, or a mark short of its penalty: see
    // `health.rs`.
    if cx.health_any() && !cx.healthy(found.0.index()) {
        return cx.detached_choice(|cx| {
            let (slot, load) = cx.least_unhealthy(found)?;
            Some((slot.index(), load))
        });
    }
    Some(found)
}

/// [`least`] as the scans answer, health aside.
#[inline(always)]
fn scanned<'a>(cx: &mut Context<'a>) -> Option<(Slot<'a>, u32)> {
    if let Some(w) = cx.weights() {
        return cx.least_weighted(w);
    }
    if let Candidates::Fresh { slots, lanes } = cx.candidates {
        let counters = cx.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
        // Large pools read per-block lower bounds instead of every counter
        // (see `bounds::least`); the flat scan below answers when that
        // cannot. Armed only here: a pool whose picks never read the bounds
        // keeps its releases at one test.
        if counters.len() >= SUMMARISED_LANES
            && let Some(bounds) = cx.counters.bounds_for_pick()
            && let Some((index, min)) = bounds::least::least_summarised(
                cx.backend(),
                bounds,
                cx.counters.all(),
                counters,
                lanes,
                cx.masked,
                cx.rng,
            )
        {
            return Some((Slot::new(index), min));
        }
        // Counters move under us; when the lanes at the minimum moved
        // between the scan's passes, scan again. A bounded number of times,
        // then the scalar path, which always answers.
        for _ in 0..4 {
            match scan::least(cx.backend(), counters, lanes, |m| cx.rng.below(m)) {
                Least::Found { index, min } => return Some((Slot::new(index as u32), min)),
                Least::Empty => return None,
                Least::Moved => {}
                // Saturated counters look like excluded lanes to the scan;
                // only the scalar path tells them apart.
                Least::Saturated => break,
            }
        }
    }
    least_by(cx, |_, _| true)
}

/// The least-loaded pick as a helper for custom selectors.
impl<'a> Context<'a> {
    /// The least-loaded candidate and its load, ties broken uniformly at random.
    /// Uses the SIMD scan: see [`scan::least`](crate::scan::least) for the draws
    /// it makes. In a weighted pool, the least `(load + r) / capacity` (`r`
    /// the request's weight), exactly; unhealthy workers carry
    /// [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD) in their load.
    #[inline(always)]
    pub fn least_loaded(&mut self) -> Option<(Slot<'a>, u32)> {
        least(self)
    }

    /// The least-loaded candidate among those `keep` admits, ties uniform at
    /// random with one draw (none when unique). A scalar scan; `keep` sees the
    /// context too, to read a candidate's [`info`](Self::info) or cache hits.
    ///
    /// ```
    /// use workerpick::custom::{Choice, Context};
    /// use workerpick::{DeviceKind, Pool, Selector, WorkerInfo};
    /// /// The least-loaded worker in zone 1, else anywhere.
    /// struct ZoneFirst;
    /// impl Selector for ZoneFirst {
    ///     fn name(&self) -> &str { "zone-first" }
    ///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
    ///         let (slot, load) = cx
    ///             .least_loaded_by(|cx, s| cx.info(s).group_id() == 1)
    ///             .or_else(|| cx.least_loaded())?;
    ///         Some(Choice::validated(slot, load))
    ///     }
    /// }
    /// let pool = Pool::new();
    /// pool.insert_with("far", WorkerInfo::new().group(0)).unwrap();
    /// pool.insert_with("near", WorkerInfo::new().group(1)).unwrap();
    /// let _busy = pool.reserve_worker(&"near", 3).unwrap();
    /// assert_eq!(*pool.reserve(&ZoneFirst).unwrap().worker(), "near");
    /// ```
    pub fn least_loaded_by(&mut self, keep: impl FnMut(&Self, Slot<'a>) -> bool) -> Option<(Slot<'a>, u32)> {
        least_by(self, keep)
    }
}
