//! The load-aware picks' exact answer when the chosen worker is unhealthy.
//!
//! The penalty in the counter makes the scan and the two-choice comparison
//! pass an unhealthy worker over on their own; a pick checks its answer's
//! mark only while some worker is marked (one relaxed load of the pool-wide
//! count). An unhealthy answer means that every candidate the pick compared
//! was unhealthy, a mark is short of its penalty, or a healthy load reached
//! the penalty's range: these paths answer exactly, by health first and then
//! by the worker's own load (the penalty taken out), as on a healthy fleet.
//! See [`docs::design`](crate::docs::design), "Health".

use crate::context::{Context, Slot};
use crate::selector::Choice;
use crate::sync::atomic::Ordering::Relaxed;
use crate::weights::least::Ratio;

/// Pairs power-of-two draws again before it takes the exact scan.
const REDRAWS: u32 = 8;

impl<'a> Context<'a> {
    /// Whether some worker of the pool is marked unhealthy.
    #[inline(always)]
    pub(crate) fn health_any(&self) -> bool {
        self.reports.health.any()
    }

    /// `slot`'s counter value `load` less its health penalty.
    #[inline(always)]
    pub(crate) fn own_load(&self, slot: u32, load: u32) -> u32 {
        load.saturating_sub(self.reports.health.penalty(slot))
    }

    /// Whether some candidate of this pick is healthy: at once when fewer
    /// slots are marked than there are candidates, else one pass.
    pub(crate) fn any_healthy_candidate(&self) -> bool {
        let n = self.len();
        if (self.reports.health.marked() as usize) < n {
            return true;
        }
        (0..n)
            .filter_map(|i| self.candidate(i))
            .any(|s| self.healthy(s.index()))
    }

    /// The order the health-aware paths compare candidates by: unhealthy
    /// after healthy, then the request's ratio of own load to capacity
    /// (plain own load when unweighted).
    #[inline]
    fn weigh(&self, slot: Slot<'a>, load: u32) -> (bool, Ratio) {
        let own = self.own_load(slot.index(), load);
        let ratio = match self.weights() {
            Some(w) => Ratio::new(own, self.request.weight, w.of(slot.index())),
            None => Ratio::new(own, 0, 1),
        };
        (!self.healthy(slot.index()), ratio)
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
    pub(crate) fn two_choices_with_health(
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

    /// Least-loaded when its answer is unhealthy: the least-loaded healthy
    /// candidate while one is; else (every candidate unhealthy) the scan's
    /// answer `found` if every mark carries its whole penalty (equal offsets
    /// keep the healthy fleet's order), or the least by own load.
    #[cold]
    #[inline(never)]
    pub(crate) fn least_unhealthy(&mut self, found: (Slot<'a>, u32)) -> Option<(Slot<'a>, u32)> {
        if self.weights().is_none() && !self.reports.health.any_short() && !self.any_healthy_candidate() {
            return Some(found);
        }
        self.least_by_health()
    }

    /// The exact least candidate by [`weigh`](Self::weigh), ties uniform (one
    /// draw, none when unique); the load returned is the counter read.
    pub(crate) fn least_by_health(&mut self) -> Option<(Slot<'a>, u32)> {
        let mut least: Option<((bool, Ratio), Slot<'a>, u32)> = None;
        let mut ties = 0;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            let load = self.counters.get(slot.index()).load(Relaxed);
            let key = self.weigh(slot, load);
            match least {
                Some((m, _, _)) if same(key, m) => ties += 1,
                Some((m, _, _)) if !below(key, m) => {}
                _ => {
                    least = Some((key, slot, load));
                    ties = 1;
                }
            }
        }
        let (key, first, load) = least?;
        if ties > 1 {
            let mut k = self.rng.below(ties);
            for i in 0..self.len() {
                let slot = self.candidate(i)?;
                let now = self.counters.get(slot.index()).load(Relaxed);
                if same(self.weigh(slot, now), key) {
                    if k == 0 {
                        return Some((slot, now));
                    }
                    k -= 1;
                }
            }
        }
        Some((first, load))
    }
}

/// `a < b` in the health-aware order.
fn below(a: (bool, Ratio), b: (bool, Ratio)) -> bool {
    if a.0 != b.0 { b.0 } else { a.1.lt(b.1) }
}

/// `a == b` in the health-aware order.
fn same(a: (bool, Ratio), b: (bool, Ratio)) -> bool {
    a.0 == b.0 && a.1.eq(b.1)
}
