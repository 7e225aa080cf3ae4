use crate::context::{Context, Slot};
use crate::storage::latency::cost;
use crate::selectors::rules::{other_draw, two_choices_answer};
use crate::selectors::{Builtin, Choice, Configure, Selector};

/// Power of two choices by latency: two distinct uniform candidates, the
/// smaller `estimate × (load + 1)` wins (the first on a tie), where the
/// estimate is the worker's peak-EWMA round trip (see
/// [`Pool::with_latency`](crate::Pool::with_latency)) and load the effective
/// load every mode sees. In a weighted pool the cost is divided by capacity;
/// the comparison is exact (`u64` costs cross-multiplied in `u128`). On a pool
/// without a latency table every estimate is equal and it picks as
/// [`PowerOfTwo`](crate::PowerOfTwo) does on an unweighted pool. Health as
/// power-of-two: an unhealthy winner is passed over by load.
///
/// ```
/// use std::time::Duration;
/// use workerpick::latency::LatencyConfig;
/// use workerpick::{LatencyPowerOfTwo, Pool};
/// let pool = Pool::from_workers([1, 2]).unwrap().with_latency(LatencyConfig::new()).unwrap();
/// let mut r = pool.reserve_worker(&1, 1).unwrap().timed();
/// r.fail(); // worker 1 now looks 1 s slow
/// drop(r);
/// let p2c = LatencyPowerOfTwo::new();
/// assert_eq!(*pool.reserve(&p2c).unwrap().worker(), 2);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LatencyPowerOfTwo;

impl LatencyPowerOfTwo {
    /// The latency-aware power-of-two mode.
    pub const fn new() -> Self {
        LatencyPowerOfTwo
    }
}

/// `slot`'s latency cost at `now` with `load`.
#[inline(always)]
pub(crate) fn latency_cost(cx: &Context<'_>, slot: Slot<'_>, load: u32, now: u32) -> u64 {
    match cx.latency() {
        Some(table) => cost(table.estimate(slot.index(), now), load),
        None => u64::from(load),
    }
}

/// Whether `a` costs no more than `b` per unit of capacity, exactly.
#[inline(always)]
pub(crate) fn no_dearer(cx: &Context<'_>, a: (Slot<'_>, u64), b: (Slot<'_>, u64)) -> bool {
    let Some(w) = cx.weights() else {
        return a.1 <= b.1;
    };
    u128::from(a.1) * u128::from(w.of(b.0.index())) <= u128::from(b.1) * u128::from(w.of(a.0.index()))
}

impl Selector for LatencyPowerOfTwo {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let n = cx.len() as u32;
        if n == 0 {
            return None;
        }
        let now = cx.latency().map_or(0, |t| t.now());
        let a = cx.rng().below(n);
        let slot_a = cx.candidate(a as usize)?;
        let load_a = cx.load(slot_a);
        if n == 1 {
            return Some(Choice::validated(slot_a, load_a));
        }
        let b = other_draw(cx.rng(), a, n);
        let slot_b = cx.candidate(b as usize)?;
        let load_b = cx.load(slot_b);
        let cost_a = latency_cost(cx, slot_a, load_a, now);
        let cost_b = latency_cost(cx, slot_b, load_b, now);
        let (chosen, other) = if no_dearer(cx, (slot_a, cost_a), (slot_b, cost_b)) {
            ((slot_a, load_a), (slot_b, load_b))
        } else {
            ((slot_b, load_b), (slot_a, load_a))
        };
        two_choices_answer(cx, chosen, other)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for LatencyPowerOfTwo {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the cheaper of two random workers by latency estimate x (load + 1)");
    const SPLITS_EVENLY: bool = false;
}
