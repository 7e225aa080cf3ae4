//! Health as a pick sees it, and the draws that pass unhealthy candidates
//! over: shared by the modes (each mode's own rule is in its file).
//! See [`docs::fleets`](crate::docs::fleets), "Health".

use super::{Context, Slot};
use crate::candidates::Candidates;
use crate::load::ratio::Ratio;
use crate::storage::features::Features;
use crate::weights::Weights;

/// Draws or tickets a pick tries before it takes the linear path.
pub(crate) const TRIES: u32 = 8;

impl<'a> Context<'a> {
    /// Whether some worker of the pool is marked unhealthy.
    #[inline(always)]
    pub(crate) fn health_any(&self) -> bool {
        self.features & Features::MARKED != 0
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

    /// Whether `slot`, a worker of the set, is healthy.
    #[inline(always)]
    pub(crate) fn healthy(&self, slot: u32) -> bool {
        !self.reports.health.is_marked(slot)
    }

    /// Whether `slot`, a candidate of the whole set, is a candidate of this
    /// pick (its mask admits it) and healthy. Stale masks admit nothing
    /// here: their picks take the linear paths.
    #[inline(always)]
    pub(crate) fn acceptable(&self, slot: u32) -> bool {
        let admitted = match self.candidates {
            Candidates::Fresh { lanes: None, .. } => true,
            Candidates::Fresh { lanes: Some(e), .. } => e.get(slot as usize) == Some(&0),
            Candidates::Stale { .. } => false,
        };
        admitted && self.healthy(slot)
    }

    /// The first healthy candidate at or after position `from` (wrapping).
    pub(crate) fn next_healthy(&self, from: usize) -> Option<Slot<'a>> {
        let n = self.len();
        (0..n)
            .filter_map(|k| self.candidate((from + k) % n))
            .find(|s| self.healthy(s.index()))
    }

    /// One draw by capacity over the healthy candidates (all of them when
    /// none is healthy).
    #[cold]
    pub(crate) fn linear_weighted(&mut self, w: &Weights) -> Option<Slot<'a>> {
        let any_healthy = (0..self.len())
            .filter_map(|i| self.candidate(i))
            .any(|s| self.healthy(s.index()));
        let keep = |cx: &Self, s: Slot<'a>| !any_healthy || cx.healthy(s.index());
        let total: u64 = (0..self.len())
            .filter_map(|i| self.candidate(i))
            .filter(|&s| keep(self, s))
            .map(|s| u64::from(w.of(s.index())))
            .sum();
        if total == 0 {
            return self.candidate(0);
        }
        let mut r = self.rng.next_u64() % total;
        for i in 0..self.len() {
            let s = self.candidate(i)?;
            if keep(self, s) {
                let c = u64::from(w.of(s.index()));
                if r < c {
                    return Some(s);
                }
                r -= c;
            }
        }
        None
    }

    /// The order the health-aware paths compare candidates by: unhealthy
    /// after healthy, then the request's ratio of own load to capacity
    /// (plain own load when unweighted).
    #[inline]
    pub(crate) fn weigh(&self, slot: Slot<'a>, load: u32) -> (bool, Ratio) {
        let own = self.own_load(slot.index(), load);
        let ratio = match self.weights() {
            Some(w) => Ratio::new(own, self.request.weight, w.of(slot.index())),
            None => Ratio::new(own, 0, 1),
        };
        (!self.healthy(slot.index()), ratio)
    }
}

/// `a < b` in the health-aware order of [`Context::weigh`].
pub(crate) fn below(a: (bool, Ratio), b: (bool, Ratio)) -> bool {
    if a.0 != b.0 { b.0 } else { a.1.lt(b.1) }
}

/// `a == b` in the health-aware order of [`Context::weigh`].
pub(crate) fn same(a: (bool, Ratio), b: (bool, Ratio)) -> bool {
    a.0 == b.0 && a.1.eq(b.1)
}
