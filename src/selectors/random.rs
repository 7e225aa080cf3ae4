use crate::context::{Context, Slot, TRIES, Walk};
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::weights::Weights;

/// One uniform draw over the candidates, in proportion to their capacity in
/// a weighted pool (an alias table: still one draw). Reads no load; passes
/// over unhealthy workers while any candidate is healthy.
///
/// ```
/// use workerpick::{Pool, Random};
/// let pool = Pool::from_workers(0..8).unwrap();
/// let w = pool.select(&Random::new()).unwrap();
/// assert!((0..8).contains(&w));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Random;

impl Random {
    /// The random mode.
    pub const fn new() -> Self {
        Random
    }
}

impl Selector for Random {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        cx.random_candidate().map(Choice::unvalidated)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Random {
    const LOAD_RULE: Option<&'static str> = None;
    const SPLITS_EVENLY: bool = false;
}

/// The rule: one draw; an unhealthy or masked-out draw is drawn again
/// (out of line, on a detached context).
impl<'a> Context<'a> {
    /// A uniform candidate, healthy while any is.
    #[inline(always)]
    fn random_candidate(&mut self) -> Option<Slot<'a>> {
        if self.is_plain() {
            let i = self.rng.below(self.len() as u32);
            return self.candidate(i as usize);
        }
        if let Some(w) = self.weights() {
            // On a copy: the hot path then loads nothing the weighted one reads.
            return self.detached(Walk::Full, |cx| cx.weighted_random(w).map(Slot::index));
        }
        let n = self.len() as u32;
        let i = self.rng.below(n);
        let slot = self.candidate(i as usize)?;
        if !self.health_any() || self.healthy(slot.index()) {
            return Some(slot);
        }
        self.detached(Walk::Health, |cx| cx.healthy_draw(slot.index()).map(Slot::index))
    }

    /// Random's path when `first` is unhealthy: more draws, then the next
    /// healthy candidate after `first`'s draw in set order; `first` when
    /// none is healthy.
    #[cold]
    fn healthy_draw(&mut self, first: u32) -> Option<Slot<'a>> {
        let n = self.len() as u32;
        for _ in 0..TRIES {
            let i = self.rng.below(n) as usize;
            let slot = self.candidate(i)?;
            if self.healthy(slot.index()) {
                return Some(slot);
            }
        }
        let from = self.rng.below(n) as usize;
        self.next_healthy(from).or(Some(Slot::new(first)))
    }

    /// Weighted random: the alias table over the whole set, while its draws
    /// land on acceptable candidates; else one draw by capacity over the
    /// acceptable candidates (two passes).
    #[inline(always)]
    fn weighted_random(&mut self, w: &'a Weights) -> Option<Slot<'a>> {
        let slot = w.alias.pick(self.rng.next_u64())?;
        if !self.masked && !self.health_any() {
            return Some(Slot::new(slot)); // every candidate is acceptable
        }
        if self.acceptable(slot) {
            return Some(Slot::new(slot));
        }
        self.detached(Walk::Full, |cx| cx.weighted_random_again(w).map(Slot::index))
    }

    /// Weighted random's path when the first draw is not acceptable: more
    /// draws, then the linear draw.
    #[cold]
    fn weighted_random_again(&mut self, w: &'a Weights) -> Option<Slot<'a>> {
        for _ in 1..TRIES {
            let slot = w.alias.pick(self.rng.next_u64())?;
            if self.acceptable(slot) {
                return Some(Slot::new(slot));
            }
        }
        self.linear_weighted(w)
    }
}
