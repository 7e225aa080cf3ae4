use crate::context::{Context, Intent, Slot, Walk};
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::weights::Weights;
use crate::sync::CachePadded;
use crate::sync::atomic::{AtomicUsize, Ordering};

/// A shared cursor, one `fetch_add(1)` per pick; candidate = cursor mod n.
///
/// In a weighted pool the cursor walks a smooth schedule in which each worker
/// has turns in proportion to its capacity, spread evenly (see
/// [`docs::fleets`](crate::docs::fleets), "Capacity weights"). Unhealthy
/// workers are passed over (their turn goes to the next healthy worker)
/// while any candidate is healthy. Candidates come in the set's order; through
/// an [`Eligibility`](crate::Eligibility) mask built before the set last
/// changed, in the mask's order (the set's when it was built), among the
/// workers it named that are still members.
///
/// The cursor sits alone on its cache line so that the threads that share a
/// `RoundRobin` contend on nothing else. A preview reads it without advancing.
///
/// ```
/// use workerpick::{Pool, RoundRobin};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let rr = RoundRobin::new();
/// assert_eq!(pool.preview(&rr).unwrap(), "a");
/// let picks: Vec<_> = (0..4).map(|_| pool.select(&rr).unwrap()).collect();
/// assert_eq!(picks, ["a", "b", "c", "a"]);
/// ```
#[derive(Debug, Default)]
pub struct RoundRobin {
    cursor: CachePadded<AtomicUsize>,
}

impl RoundRobin {
    /// A cursor starting at the first candidate.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next ticket the cursor will hand out.
    pub fn cursor(&self) -> usize {
        self.cursor.load(Ordering::Relaxed)
    }
}

impl Selector for RoundRobin {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        // Relaxed: tickets need only be distinct (the RMW guarantees that);
        // nothing else is published through the cursor.
        let preview = cx.intent() == Intent::Preview;
        let ticket = if preview {
            self.cursor.load(Ordering::Relaxed)
        } else {
            self.cursor.fetch_add(1, Ordering::Relaxed)
        };
        cx.round_robin_candidate(ticket, preview, &self.cursor)
            .map(Choice::unvalidated)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for RoundRobin {
    const LOAD_RULE: Option<&'static str> = None;
    const SPLITS_EVENLY: bool = true;
}

/// The rule: the ticket's candidate, or (weighted) the schedule's; an
/// unhealthy or masked-out one passes its turn on.
impl<'a> Context<'a> {
    /// Round-robin's candidate for `ticket`; a weighted pool's stride
    /// schedule may walk on to later tickets of `cursor` (read, not taken, on
    /// a preview).
    #[inline(always)]
    fn round_robin_candidate(
        &mut self,
        ticket: usize,
        preview: bool,
        cursor: &AtomicUsize,
    ) -> Option<Slot<'a>> {
        if self.is_plain() {
            let n = self.len();
            return if n == 0 { None } else { self.candidate(ticket % n) };
        }
        if let Some(w) = self.weights() {
            // On a copy, with the ticket source made there: the hot path then
            // loads and stores nothing the weighted one needs.
            return self.detached(Walk::Full, move |cx| {
                let mut peek = ticket;
                let next = || {
                    if preview {
                        peek += 1;
                        peek
                    } else {
                        // Relaxed, as the first ticket.
                        cursor.fetch_add(1, Ordering::Relaxed)
                    }
                };
                cx.weighted_round_robin(w, ticket, next).map(Slot::index)
            });
        }
        let n = self.len();
        if n == 0 {
            return None;
        }
        let slot = self.candidate(ticket % n)?;
        if !self.health_any() || self.healthy(slot.index()) {
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
}
