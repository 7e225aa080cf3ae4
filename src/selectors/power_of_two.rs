use crate::context::{Context, Slot};
use crate::load::ratio::Ratio;
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::weights::Weights;

/// Pairs power-of-two draws again before it takes the exact scan.
const REDRAWS: u32 = 8;

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
        // Both draws unhealthy, or a mark short of its penalty: see
        // `two_choices_unhealthy`.
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
    /// capacity when unmasked (see `weighted_pair`), uniformly when masked; the smaller
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
            let b = a + 1 + self.rng.below(n - 1);
            let b = if b >= n { b - n } else { b };
            (slot_a, self.candidate(b as usize)?)
        } else {
            self.weighted_pair(w)?
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

    /// Power-of-two's pair in a weighted, unmasked pick: two draws in
    /// proportion to capacity, so that a large worker is in enough pairs to
    /// take its share (uniform draws put a worker in at most 2/n of them,
    /// whatever its capacity). A second draw that meets the first is drawn
    /// again, then replaced by a uniform candidate other than the first: the
    /// two are always distinct, as unweighted.
    #[inline(always)]
    fn weighted_pair(&mut self, w: &Weights) -> Option<(Slot<'a>, Slot<'a>)> {
        let a = w.alias.pick(self.rng.next_u64())?;
        let mut b = w.alias.pick(self.rng.next_u64())?;
        if b == a {
            b = w.alias.pick(self.rng.next_u64())?;
            if b == a {
                let n = self.len();
                let i = self.rng.below(n as u32) as usize;
                b = self.candidate(i)?.index();
                if b == a {
                    b = self.candidate((i + 1) % n)?.index();
                }
            }
        }
        Some((Slot::new(a), Slot::new(b)))
    }

    /// Power-of-two when its winner `chosen` is unhealthy (`other` is the
    /// other draw): the other if healthy; else, while some candidate is
    /// healthy, pairs drawn again (a bounded number of times), then the exact
    /// least-loaded healthy candidate; else the pair compared by own load.
    #[cold]
    #[inline(never)]
    pub(crate) fn two_choices_unhealthy(
        &mut self,
        chosen: (Slot<'a>, u32),
        other: (Slot<'a>, u32),
    ) -> Option<Choice<'a>> {
        if self.healthy(other.0.index()) {
            return Some(Choice::validated(other.0, other.1));
        }
        if !self.any_healthy_candidate() {
            return Some(self.better_of(chosen, other));
        }
        for _ in 0..REDRAWS {
            let (a, b) = self.redraw_pair()?;
            if self.healthy(a.index()) || self.healthy(b.index()) {
                let (la, lb) = (self.load(a), self.load(b));
                return Some(self.better_of((a, la), (b, lb)));
            }
        }
        let (slot, load) = self.least_by_health()?;
        Some(Choice::validated(slot, load))
    }

    /// Weighted power-of-two's comparison while some worker is marked: by
    /// health, then by own load per capacity (the penalty is not divided by
    /// capacity); an unhealthy winner goes on as in
    /// [`two_choices_unhealthy`](Self::two_choices_unhealthy).
    #[inline(never)]
    fn two_choices_with_health(
        &mut self,
        a: (Slot<'a>, u32),
        b: (Slot<'a>, u32),
    ) -> Option<Choice<'a>> {
        let choice = self.better_of(a, b);
        if self.healthy(choice.slot.index()) {
            return Some(choice);
        }
        let (chosen, other) = if choice.slot == a.0 { (a, b) } else { (b, a) };
        self.two_choices_unhealthy(chosen, other)
    }

    /// Another power-of-two pair, drawn as the first: by capacity when
    /// weighted and unmasked, else uniformly (two distinct candidates).
    fn redraw_pair(&mut self) -> Option<(Slot<'a>, Slot<'a>)> {
        if let Some(w) = self.weights()
            && !self.masked
        {
            return self.weighted_pair(w);
        }
        let n = self.len() as u32;
        let a = self.rng.below(n);
        let b = a + 1 + self.rng.below(n - 1);
        let b = if b >= n { b - n } else { b };
        Some((self.candidate(a as usize)?, self.candidate(b as usize)?))
    }

    /// The better of two candidates and their loads by [`weigh`](Self::weigh),
    /// the first on a tie.
    fn better_of(&self, a: (Slot<'a>, u32), b: (Slot<'a>, u32)) -> Choice<'a> {
        let (sick_a, ra) = self.weigh(a.0, a.1);
        let (sick_b, rb) = self.weigh(b.0, b.1);
        let b_wins = if sick_a != sick_b { sick_a } else { rb.lt(ra) };
        let (slot, load) = if b_wins { b } else { a };
        Choice::validated(slot, load)
    }
}
