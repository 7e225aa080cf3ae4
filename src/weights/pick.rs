//! The picks that read capacities and health: what random and round-robin do
//! when the pool is weighted or some worker is unhealthy, and the exact
//! weighted least-loaded rule. Unweighted pools with every worker healthy
//! never come here (one test of an `Option` and one load of a count).

use super::Weights;
use super::least::{LeastRatio, Ratio};
use super::scale::Scale;
use crate::candidates::Candidates;
use crate::context::{Context, Slot};
use crate::rng::Rng;
use crate::scan::{self, Kernel, Least, Scored, Weighting};
use crate::selector::Choice;
use crate::storage::counters::Counters;
use crate::storage::summary::{SUMMARISED_LANES, Summary};
use crate::sync::atomic::Ordering::Relaxed;

/// What an out-of-line path reads of the context (see `Context::detached`).
#[derive(Clone, Copy)]
enum Walk {
    /// Candidates and health only: no lanes, no scan.
    Health,
    /// Everything.
    Full,
}

/// Draws or tickets a pick tries before it takes the linear path.
const TRIES: u32 = 8;

impl<'a> Context<'a> {
    /// The capacity tables, when the pool is weighted.
    #[inline(always)]
    pub(crate) fn weights(&self) -> Option<&'a Weights> {
        self.set.weights.as_deref()
    }

    /// Runs an out-of-line path `f` on a copy of this context, and names the
    /// slot it returns. Handing `&mut self` to a call that is not inlined
    /// would keep the whole context in memory on the hot path too (a dozen
    /// stores per pick); the copy is made only where `f` is called. Paths
    /// that only walk the candidates and read health (`Walk::Health`) get a
    /// copy without the scan's lanes and backend, which the hot path then
    /// need not load at all.
    #[inline(always)]
    fn detached<'b>(
        &'b mut self,
        walk: Walk,
        f: impl FnOnce(&mut Context<'b>) -> Option<u32>,
    ) -> Option<Slot<'a>> {
        self.detached_with(walk, f).map(Slot::new)
    }

    /// [`detached`](Self::detached) with the whole context, for a path that
    /// answers a slot and the load it compared.
    #[inline(always)]
    pub(crate) fn detached_choice<'b>(
        &'b mut self,
        f: impl FnOnce(&mut Context<'b>) -> Option<(u32, u32)>,
    ) -> Option<(Slot<'a>, u32)> {
        self.detached_with(Walk::Full, f)
            .map(|(slot, load)| (Slot::new(slot), load))
    }

    #[inline(always)]
    fn detached_with<'b, R>(&'b mut self, walk: Walk, f: impl FnOnce(&mut Context<'b>) -> R) -> R {
        // Field by field: the copy borrows `rng` for 'b, the rest is shared.
        let Context {
            set,
            counters,
            reports,
            candidates,
            masked,
            ref mut rng,
            intent,
            request,
            backend,
            #[cfg(test)]
            ref reads,
        } = *self;
        let (candidates, backend) = match (walk, candidates) {
            (Walk::Health, Candidates::Fresh { slots, .. }) => {
                (Candidates::Fresh { slots, lanes: None }, Kernel::SCALAR)
            }
            (Walk::Health, stale) => (stale, Kernel::SCALAR),
            // Derived again here, so that an unmasked pick's hot path does
            // not compute the lanes only this copy reads.
            (Walk::Full, _) if !masked => (Candidates::whole(set), backend),
            (Walk::Full, c) => (c, backend),
        };
        let mut cx = Context {
            set,
            counters,
            reports,
            candidates,
            masked,
            rng,
            intent,
            request,
            backend,
            #[cfg(test)]
            reads: core::cell::Cell::new(reads.get()),
        };
        let out = f(&mut cx);
        #[cfg(test)]
        reads.set(cx.reads.get());
        out
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
    fn acceptable(&self, slot: u32) -> bool {
        let admitted = match self.candidates {
            Candidates::Fresh { lanes: None, .. } => true,
            Candidates::Fresh { lanes: Some(e), .. } => e.get(slot as usize) == Some(&0),
            Candidates::Stale { .. } => false,
        };
        admitted && self.healthy(slot)
    }

    /// A uniform candidate, healthy while any is.
    #[inline(always)]
    pub(crate) fn random_candidate(&mut self) -> Option<Slot<'a>> {
        if let Some(w) = self.weights() {
            return self.weighted_random(w);
        }
        let n = self.len() as u32;
        let i = self.rng.below(n);
        let slot = self.candidate(i as usize)?;
        if !self.reports.health.any() || self.healthy(slot.index()) {
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

    /// The first healthy candidate at or after position `from` (wrapping).
    fn next_healthy(&self, from: usize) -> Option<Slot<'a>> {
        let n = self.len();
        (0..n)
            .filter_map(|k| self.candidate((from + k) % n))
            .find(|s| self.healthy(s.index()))
    }

    /// Weighted random: the alias table over the whole set, while its draws
    /// land on acceptable candidates; else one draw by capacity over the
    /// acceptable candidates (two passes).
    #[inline(always)]
    fn weighted_random(&mut self, w: &'a Weights) -> Option<Slot<'a>> {
        let slot = w.alias.pick(self.rng.next_u64())?;
        if !self.masked && !self.reports.health.any() {
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

    /// Weighted power-of-two, a path apart from the unweighted one (sharing
    /// the tail cost the unweighted pick ~4 instructions): the pair drawn by
    /// capacity when unmasked (see `weighted_pair`), uniformly when masked; the smaller
    /// `(load + r) / capacity` wins, compared exactly, the first on a tie.
    #[inline(always)]
    pub(crate) fn weighted_two_choices(&mut self, w: &Weights) -> Option<Choice<'a>> {
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
        // (see `fleet::pass_over`).
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
    pub(crate) fn weighted_pair(&mut self, w: &Weights) -> Option<(Slot<'a>, Slot<'a>)> {
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

    /// One draw by capacity over the healthy candidates (all of them when
    /// none is healthy).
    #[cold]
    fn linear_weighted(&mut self, w: &Weights) -> Option<Slot<'a>> {
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

    /// Round-robin's candidate for `ticket`; `next` hands out further tickets
    /// (the stride schedule may need some).
    #[inline(always)]
    pub(crate) fn round_robin_candidate(
        &mut self,
        ticket: usize,
        next: impl FnMut() -> usize,
    ) -> Option<Slot<'a>> {
        if let Some(w) = self.weights() {
            return self.weighted_round_robin(w, ticket, next);
        }
        let n = self.len();
        if n == 0 {
            return None;
        }
        let slot = self.candidate(ticket % n)?;
        if !self.reports.health.any() || self.healthy(slot.index()) {
            return Some(slot);
        }
        // The next healthy candidate in order.
        let first = ticket % n;
        self.detached(Walk::Health, |cx| cx.next_healthy(first).map(Slot::index))
            .or(Some(slot))
    }

    /// Weighted round-robin: the schedule's candidate for `ticket`; if it is
    /// not acceptable, the schedule's next ones, a bounded number of them;
    /// then one weighted draw.
    #[inline(always)]
    fn weighted_round_robin(
        &mut self,
        w: &'a Weights,
        ticket: usize,
        next: impl FnMut() -> usize,
    ) -> Option<Slot<'a>> {
        let members = &self.set.members;
        // The stride schedule walks tickets until one has a turn: a few for
        // any ordinary spread of capacities; bounded, then a weighted draw.
        let Some(i) = w.schedule.pick(ticket, next, 1024) else {
            return self.detached(Walk::Full, |cx| cx.linear_weighted(w).map(Slot::index));
        };
        let slot = *members.get(i)?;
        if self.acceptable(slot) {
            return Some(Slot::new(slot));
        }
        self.detached(Walk::Full, |cx| {
            cx.weighted_round_robin_skip(w, ticket).map(Slot::index)
        })
    }

    #[cold]
    fn weighted_round_robin_skip(&mut self, w: &'a Weights, ticket: usize) -> Option<Slot<'a>> {
        let members = &self.set.members;
        let period = w.schedule.period();
        let mut t = ticket;
        for _ in 0..period.min(4096) {
            t = t.wrapping_add(1);
            let mut local = t;
            let mut next = || {
                local = local.wrapping_add(1);
                local
            };
            if let Some(i) = w.schedule.pick(t, &mut next, 1)
                && let Some(&slot) = members.get(i)
                && self.acceptable(slot)
            {
                return Some(Slot::new(slot));
            }
        }
        self.linear_weighted(w)
    }

    /// The weighted least-loaded candidate and its load: the SIMD scan over
    /// the lanes' scores (see [`scale`](super::scale)) when the factors exist
    /// and the candidates are fresh, checked against the counter it names;
    /// else, or when the least score may be clamped, the exact scalar path.
    #[inline(always)]
    pub(crate) fn least_weighted(&mut self, w: &'a Weights) -> Option<(Slot<'a>, u32)> {
        let add = self.request.weight;
        if let (Some(scale), Candidates::Fresh { slots, lanes }) = (&w.scale, self.candidates)
            && let Some(limit) = scale.limit(add)
        {
            let counters = self.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
            let weighting = Weighting {
                scale: &scale.scale,
                limit,
                add,
            };
            // Large unmasked pools read per-block bounds on the scores
            // instead (for requests of weight 1: see `scan::scored`).
            if !self.masked
                && w.version != 0
                && add == 1
                && counters.len() >= SUMMARISED_LANES
                && let Some((index, load)) = least_scored(
                    self.backend,
                    self.counters,
                    self.rng,
                    w,
                    scale,
                    limit,
                    counters.len(),
                    lanes,
                )
            {
                return Some((Slot::new(index), load));
            }
            for _ in 0..4 {
                match scan::least_weighted(self.backend, counters, lanes, weighting, |m| self.rng.below(m)) {
                    Least::Found { index, min } if min < scale.exact_below() => {
                        // The scan read the counter once; the booking's
                        // compare-and-swap needs the load behind that score.
                        let load = self.counters.get(index as u32).load(Relaxed);
                        if scale.score(index as u32, load, limit, add) == min {
                            return Some((Slot::new(index as u32), load));
                        }
                    }
                    Least::Moved => {}
                    Least::Empty => return None,
                    Least::Found { .. } | Least::Saturated => break,
                }
            }
        }
        self.least_weighted_by(w, |_, _| true)
    }

    /// The exact weighted least-loaded candidate and its load, among those
    /// `keep` admits: the least `(load + r) / capacity`, ties uniform.
    pub(crate) fn least_weighted_by(
        &mut self,
        w: &Weights,
        mut keep: impl FnMut(&Self, Slot<'a>) -> bool,
    ) -> Option<(Slot<'a>, u32)> {
        let add = self.request.weight;
        let mut least = LeastRatio::NONE;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) {
                let load = self.counters.get(slot.index()).load(Relaxed);
                least.add(slot, load, Ratio::new(load, add, w.of(slot.index())));
            }
        }
        let (ratio, first, load) = least.least?;
        if least.ties <= 1 {
            return Some((first, load));
        }
        let mut k = self.rng.below(least.ties);
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) {
                let now = self.counters.get(slot.index()).load(Relaxed);
                if Ratio::new(now, add, w.of(slot.index())).eq(ratio) {
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

/// The weighted least-loaded pick through the per-block bounds on scores
/// (`scan::scored`) over the first `n` lanes, or `None` when the caller scans
/// flat. Out of line, with the setting up of the pick: only a weighted pool
/// of [`SUMMARISED_LANES`] lanes or more gets here, and inline this would
/// make every pick's caller larger (measured with the callgrind gate).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn least_scored(
    kernel: Kernel,
    counters: &Counters,
    rng: &mut Rng,
    w: &Weights,
    scale: &Scale,
    limit: u32,
    n: usize,
    lanes: Option<&[u32]>,
) -> Option<(u32, u32)> {
    let scores = counters
        .summary()
        .map(Summary::for_pick)
        .and_then(Summary::scores)?;
    let scored = Scored {
        weighting: Weighting {
            scale: &scale.scale,
            limit,
            add: 1,
        },
        exact_below: scale.exact_below(),
        version: w.version,
        by_factor: &scale.by_factor,
        classes: &scale.classes,
    };
    scan::least_scored(kernel, scores, counters, n, lanes, scored, rng)
}
