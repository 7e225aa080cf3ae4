use crate::context::Context;
use crate::selector::{Choice, Selector};
use crate::selectors::{Builtin, Configure};

/// Power of two choices: two distinct uniform candidates, the less loaded wins
/// (the first on a tie). In a weighted pool the two are drawn in proportion
/// to capacity (still distinct) and "less loaded" is the smaller
/// `(load + r) / capacity`, `r` the request's weight, compared exactly.
/// Reservations book it with a compare-and-swap that checks the load it
/// compared.
///
/// Draws: `a` over n, then `b = (a + 1 + draw over n - 1) mod n`, so `a != b`;
/// n = 1 uses one draw.
///
/// ```
/// use workerpick::{Pool, PowerOfTwo};
/// let pool = Pool::from_workers([1, 2]).unwrap();
/// let busy = pool.reserve_worker(&1, 5).unwrap();
/// // With two workers both are always drawn: the idle one wins.
/// assert_eq!(*pool.reserve(&PowerOfTwo::new()).unwrap().worker(), 2);
/// drop(busy);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct PowerOfTwo;

impl PowerOfTwo {
    /// The power-of-two-choices mode.
    pub const fn new() -> Self {
        PowerOfTwo
    }
}

impl Selector for PowerOfTwo {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let n = cx.len() as u32;
        if n == 0 {
            return None;
        }
        if let Some(w) = cx.weights() {
            // Weights exist only with two or more distinct capacities.
            return cx.weighted_two_choices(w);
        }
        let a = cx.rng().below(n);
        let slot_a = cx.candidate(a as usize)?;
        let load_a = cx.load(slot_a);
        if n == 1 {
            return Some(Choice::validated(slot_a, load_a));
        }
        // a + 1 + draw < 2n, so one subtraction replaces `% n` (a division).
        let b = a + 1 + cx.rng().below(n - 1);
        let b = if b >= n { b - n } else { b };
        let slot_b = cx.candidate(b as usize)?;
        let load_b = cx.load(slot_b);
        let (chosen, other) = if load_a <= load_b {
            ((slot_a, load_a), (slot_b, load_b))
        } else {
            ((slot_b, load_b), (slot_a, load_a))
        };
        // Both draws unhealthy, or a mark short of its penalty: see `fleet::pass_over`.
        if cx.health_any() && !cx.healthy(chosen.0.index()) {
            let (slot, load) = cx.detached_choice(|cx| {
                let c = cx.two_choices_unhealthy(chosen, other)?;
                Some((c.slot.index(), c.seen?))
            })?;
            return Some(Choice::validated(slot, load));
        }
        Some(Choice::validated(chosen.0, chosen.1))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for PowerOfTwo {}
