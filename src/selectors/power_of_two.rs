use crate::context::{Context, Slot};
use crate::load::ratio::Ratio;
use crate::selectors::rules::{better_of, other_draw, two_choices_answer, two_choices_unhealthy, weighted_pair};
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::weights::Weights;

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
        let b = other_draw(cx.rng(), a, n);
        let slot_b = cx.candidate(b as usize)?;
        let load_b = cx.load(slot_b);
        let (chosen, other) = if load_a <= load_b {
            ((slot_a, load_a), (slot_b, load_b))
        } else {
            ((slot_b, load_b), (slot_a, load_a))
        };
        // Both draws unhealthy, or a mark short of its penalty: see
        // `rules::two_choices_unhealthy`.
        two_choices_answer(cx, chosen, other)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for PowerOfTwo {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the less loaded of two random workers");
    const SPLITS_EVENLY: bool = false;
}

/// The rule's weighted form, and its answer when the winner is unhealthy:
/// exact, by health first and then by the worker's own load (the penalty
/// taken out), as on a healthy fleet (see [`docs::fleets`](crate::docs::fleets), "Health").
impl<'a> Context<'a> {
    /// Weighted power-of-two, a path apart from the unweighted one (sharing
    /// the tail cost the unweighted pick ~4 instructions): the pair drawn by
    /// capacity when unmasked (see `rules::weighted_pair`), uniformly when masked; the smaller
    /// `(load + r) / capacity` wins, compared exactly, the first on a tie.
    #[inline(always)]
    fn weighted_two_choices(&mut self, w: &Weights) -> Option<Choice<'a>> {
        let (a, b) = if self.masked {
            let n = self.len() as u32;
            let a = self.rng.below(n);
            let slot_a = self.candidate(a as usize)?;
            if n == 1 {
                return Some(Choice::validated(slot_a, self.load(slot_a)));
            }
            let b = other_draw(self.rng, a, n);
            (slot_a, self.candidate(b as usize)?)
        } else {
            weighted_pair(self, w)?
        };
        let (load_a, load_b) = (self.load(a), self.load(b));
        // The penalty is not divided by capacity: health is compared apart
        // (see `two_choices_with_health`).
        if self.health_any() {
            let (slot, load) = self.detached_choice(|cx| {
                let c = cx.two_choices_with_health((a, load_a), (b, load_b))?;
                Some((c.slot.index(), c.seen?))
            })?;
            return Some(Choice::validated(slot, load));
        }
        let r = self.request().weight;
        let ra = Ratio::new(load_a, r, w.of(a.index()));
        Some(if Ratio::new(load_b, r, w.of(b.index())).lt(ra) {
            Choice::validated(b, load_b)
        } else {
            Choice::validated(a, load_a)
        })
    }

    /// Weighted power-of-two's comparison while some worker is marked: by
    /// health, then by own load per capacity (the penalty is not divided by
    /// capacity); an unhealthy winner goes on as in
    /// `rules::two_choices_unhealthy`.
    #[inline(never)]
    fn two_choices_with_health(
        &mut self,
        a: (Slot<'a>, u32),
        b: (Slot<'a>, u32),
    ) -> Option<Choice<'a>> {
        let choice = better_of(self, a, b);
        if self.healthy(choice.slot.index()) {
            return Some(choice);
        }
        let (chosen, other) = if choice.slot == a.0 { (a, b) } else { (b, a) };
        two_choices_unhealthy(self, chosen, other)
    }
}
