use crate::context::{Context, Slot};
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::selectors::latency_power_of_two::{latency_cost, no_dearer};

/// Least-loaded by latency: the minimum `estimate × (load + 1)` over all
/// candidates (per unit of capacity in a weighted pool), ties broken
/// uniformly at random, the same exact cost as
/// [`LatencyPowerOfTwo`](crate::LatencyPowerOfTwo). Unhealthy candidates are
/// chosen only when every candidate is unhealthy. A scalar pass: one cell
/// and one counter read per candidate (no SIMD kernel yet).
///
/// ```
/// use workerpick::{LatencyConfig, LatencyLeastLoaded, Pool};
/// let pool = Pool::from_workers([1, 2, 3]).unwrap().with_latency(LatencyConfig::new()).unwrap();
/// for w in [1, 3] {
///     let mut r = pool.reserve_worker(&w, 1).unwrap().timed();
///     r.fail();
/// }
/// assert_eq!(*pool.reserve(&LatencyLeastLoaded::new()).unwrap().worker(), 2);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LatencyLeastLoaded;

impl LatencyLeastLoaded {
    /// The latency-aware least-loaded mode.
    pub const fn new() -> Self {
        LatencyLeastLoaded
    }
}

/// The cheapest candidate that `keep` admits, ties uniform: slot, load.
#[inline(always)]
fn cheapest<'a>(cx: &mut Context<'a>, now: u32, keep: impl Fn(&Context<'a>, Slot<'a>) -> bool) -> Option<(Slot<'a>, u32)> {
    let mut best: Option<(Slot<'a>, u32, u64)> = None;
    let mut ties = 0u32;
    for i in 0..cx.len() {
        let slot = cx.candidate(i)?;
        if !keep(cx, slot) {
            continue;
        }
        let load = cx.load(slot);
        let c = latency_cost(cx, slot, load, now);
        match best {
            Some((b, _, bc)) if !no_dearer(cx, (slot, c), (b, bc)) => {}
            Some((b, _, bc)) if no_dearer(cx, (b, bc), (slot, c)) => {
                // A tie: the newcomer wins with probability 1/(ties + 1).
                ties += 1;
                if cx.rng().below(ties + 1) == 0 {
                    best = Some((slot, load, c));
                }
            }
            _ => {
                best = Some((slot, load, c));
                ties = 0;
            }
        }
    }
    best.map(|(s, l, _)| (s, l))
}

impl Selector for LatencyLeastLoaded {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let now = cx.latency().map_or(0, |t| t.now());
        let found = if cx.health_any() {
            cheapest(cx, now, |cx, s| cx.healthy(s.index())).or_else(|| cheapest(cx, now, |_, _| true))
        } else {
            cheapest(cx, now, |_, _| true)
        };
        let (slot, load) = found?;
        Some(Choice::validated(slot, load))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for LatencyLeastLoaded {}
