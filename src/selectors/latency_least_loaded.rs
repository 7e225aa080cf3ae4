use crate::candidates::Candidates;
use crate::context::{Context, Slot};
use crate::storage::latency::cost;
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::selectors::latency_power_of_two::{latency_cost, no_dearer};

/// Least-loaded by latency: the minimum `estimate × (load + 1)` over all
/// candidates (per unit of capacity in a weighted pool), ties broken
/// uniformly at random, the same exact cost as
/// [`LatencyPowerOfTwo`](crate::LatencyPowerOfTwo). Unhealthy candidates are
/// chosen only when every candidate is unhealthy. A scalar pass: one cell
/// and one counter read per candidate, and a second pass only to find a drawn
/// tie. Not a SIMD pass: each lane's estimate is decayed from its own stamp
/// (a table lookup and two 64-bit products per lane), which the scan's `u32`
/// lanes cannot do without a gather per lane; see
/// [`docs::design`](crate::docs::design#latency) for what that bounds.
///
/// ```
/// use workerpick::latency::LatencyConfig;
/// use workerpick::{LatencyLeastLoaded, Pool};
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

/// The cheapest candidate that `keep` admits, ties uniform: slot, load. One
/// pass for the least cost and its tie count, and one draw and a second pass
/// to the drawn tie only when several tie (workers with no history all read
/// the default estimate, so an idle pool ties everywhere).
#[inline(always)]
fn cheapest<'a>(cx: &mut Context<'a>, now: u32, keep: impl Fn(&Context<'a>, Slot<'a>) -> bool) -> Option<(Slot<'a>, u32)> {
    if let (Candidates::Fresh { slots, .. }, None) = (cx.candidates, cx.weights()) {
        return cheapest_unweighted(cx, slots, now, keep);
    }
    let judge = |cx: &Context<'a>, i: usize| {
        let slot = cx.candidate(i)?;
        if !keep(cx, slot) {
            return Some(None);
        }
        let load = cx.load(slot);
        Some(Some((slot, load, latency_cost(cx, slot, load, now))))
    };
    let mut best: Option<(Slot<'a>, u32, u64)> = None;
    let mut ties = 0u32;
    for i in 0..cx.len() {
        let Some((slot, load, c)) = judge(cx, i)? else { continue };
        match best {
            Some((b, _, bc)) if !no_dearer(cx, (slot, c), (b, bc)) => {}
            Some((b, _, bc)) if no_dearer(cx, (b, bc), (slot, c)) => ties += 1,
            _ => {
                best = Some((slot, load, c));
                ties = 1;
            }
        }
    }
    let (first, load, bc) = best?;
    if ties > 1 {
        let mut k = cx.rng().below(ties);
        for i in 0..cx.len() {
            let Some((slot, load, c)) = judge(cx, i)? else { continue };
            if no_dearer(cx, (slot, c), (first, bc)) && no_dearer(cx, (first, bc), (slot, c)) {
                if k == 0 {
                    return Some((slot, load));
                }
                k -= 1;
            }
        }
        // The ties moved since the first pass: the first of them.
    }
    Some((first, load))
}

/// [`cheapest`] over candidates `slots` of an unweighted pool: the costs
/// compared as they are, the slots read in place.
#[inline(always)]
fn cheapest_unweighted<'a>(
    cx: &mut Context<'a>,
    slots: &'a [u32],
    now: u32,
    keep: impl Fn(&Context<'a>, Slot<'a>) -> bool,
) -> Option<(Slot<'a>, u32)> {
    let table = cx.latency();
    let judge = |cx: &Context<'a>, s: u32| {
        let slot = Slot::new(s);
        let load = cx.load(slot);
        let c = match table {
            Some(t) => cost(t.estimate(s, now), load),
            None => u64::from(load),
        };
        (slot, load, c)
    };
    let (mut least, mut first, mut ties) = (u64::MAX, None, 0u32);
    for &s in slots {
        if !keep(cx, Slot::new(s)) {
            continue;
        }
        let (slot, load, c) = judge(cx, s);
        if c < least {
            (least, first, ties) = (c, Some((slot, load)), 1);
        } else if c == least {
            ties += 1;
        }
    }
    let first = first?;
    if ties > 1 {
        let mut k = cx.rng().below(ties);
        for &s in slots {
            if !keep(cx, Slot::new(s)) {
                continue;
            }
            let (slot, load, c) = judge(cx, s);
            if c == least {
                if k == 0 {
                    return Some((slot, load));
                }
                k -= 1;
            }
        }
        // The ties moved since the first pass: the first of them.
    }
    Some(first)
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

impl Configure for LatencyLeastLoaded {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the least latency estimate x (load + 1)");
    const SPLITS_EVENLY: bool = true;
}
