//! What a selector sees during one pick: the [`Context`] over the candidates
//! (their slots, loads, capacities, health and attributes, the request and
//! the random source), the [`Slot`]s it hands out and the caller's
//! [`Intent`]. A view, not a place for rules: each mode's rule lives in the
//! mode's file under `selectors/`; the helpers here are shared by several.

mod detached;
mod health;
mod intent;
mod slot;

pub(crate) use detached::Walk;
pub(crate) use health::{TRIES, below, same};
pub use intent::Intent;
pub use slot::Slot;

use crate::candidates::{Candidates, still_eligible};
use crate::device::WorkerInfo;
use crate::error::Error;
use crate::load::reports::Reported;
use crate::request::Request;
use crate::rng::Rng;
use crate::scan::Kernel;
use crate::snapshot::SetView;
use crate::storage::counters::Counters;
use crate::storage::features::Features;
use crate::storage::latency::Latency;
use crate::sync::atomic::Ordering;
use crate::weights::Weights;

/// What a [`Selector`](crate::Selector) sees during one pick: the
/// candidates, their loads, the random source and the request.
pub struct Context<'a> {
    pub(crate) set: &'a SetView,
    pub(crate) counters: &'a Counters,
    pub(crate) reports: &'a Reported,
    pub(crate) candidates: Candidates<'a>,
    pub(crate) masked: bool,
    pub(crate) rng: &'a mut Rng,
    pub(crate) intent: Intent,
    pub(crate) request: &'a Request<'a>,
    /// The pool's scan kernel, by reference: a pick that scans nothing
    /// loads nothing for it.
    pub(crate) kernel: &'a Kernel,
    /// The pool's feature word as this pick read it (`storage::features`).
    pub(crate) features: u32,
    #[cfg(test)]
    pub(crate) reads: core::cell::Cell<u32>,
}

impl<'a> Context<'a> {
    #[inline(always)]
    pub(crate) fn new(
        set: &'a SetView,
        (counters, reports): (&'a Counters, &'a Reported),
        candidates: Candidates<'a>,
        rng: &'a mut Rng,
        intent: Intent,
        request: &'a Request<'a>,
        kernel: &'a Kernel,
    ) -> Self {
        Self {
            set,
            counters,
            reports,
            candidates,
            masked: request.mask.is_some(),
            rng,
            intent,
            request,
            kernel,
            features: counters.features.get(),
            #[cfg(test)]
            reads: core::cell::Cell::new(0),
        }
    }

    /// Whether the pool uses neither capacity weights nor health marks now:
    /// the plain picks need look no further.
    #[inline(always)]
    pub(crate) fn is_plain(&self) -> bool {
        self.features & (Features::WEIGHTED | Features::MARKED) == 0
    }

    /// The error for "no candidate".
    pub(crate) fn empty_error(&self) -> Error {
        if self.set.members.is_empty() {
            // Draining workers stay in the set but are no candidates.
            if self.set.draining.is_empty() {
                Error::NoWorkers
            } else {
                Error::AllDraining
            }
        } else {
            Error::NoEligibleWorker
        }
    }

    /// How many candidates there are.
    #[inline(always)]
    pub fn len(&self) -> usize {
        match self.candidates {
            Candidates::Fresh { slots, .. } => slots.len(),
            Candidates::Stale { n, .. } => n,
        }
    }

    /// Whether there is no candidate.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th candidate, in set order.
    #[inline(always)]
    pub fn candidate(&self, i: usize) -> Option<Slot<'a>> {
        match self.candidates {
            Candidates::Fresh { slots, .. } => slots.get(i).map(|&s| Slot::new(s)),
            Candidates::Stale { mask, .. } => (0..mask.slots.len())
                .filter(|&j| still_eligible(self.set, mask, j))
                .nth(i)
                .map(|j| Slot::new(mask.slots[j])),
        }
    }

    /// The pool's latency table, if it keeps one (`Pool::with_latency`).
    #[inline(always)]
    pub(crate) fn latency(&self) -> Option<&'a Latency> {
        self.counters.latency()
    }

    /// Whether an eligibility mask narrows the candidates.
    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// The effective load of `slot` now: its in-flight count in this pool plus
    /// the load reported for it from outside (see
    /// [`Pool::report_load`](crate::Pool::report_load)), both kept in one counter.
    /// A relaxed read: it may be stale by the time you act on it, which is what
    /// [`Choice::validated`](crate::Choice::validated) is for.
    #[inline(always)]
    pub fn load(&self, slot: Slot<'a>) -> u32 {
        #[cfg(test)]
        self.reads.set(self.reads.get() + 1);
        self.current(slot)
    }

    /// The in-flight count of `slot` in this pool alone: [`load`](Self::load) less
    /// [`reported_load`](Self::reported_load), read one after the other (a report
    /// landing in between can make it off by that report's change).
    #[inline(always)]
    pub fn local_load(&self, slot: Slot<'a>) -> u32 {
        self.current(slot).saturating_sub(self.reported_load(slot))
    }

    /// The load reported for `slot` from outside, as counted in its load.
    #[inline(always)]
    pub fn reported_load(&self, slot: Slot<'a>) -> u32 {
        self.reports.board().get(slot.index())
    }

    /// The effective capacity of `slot`'s worker relative to the other
    /// candidates: its capacity weight, scaled by slow start while it ramps,
    /// divided by what all candidates' have in common (1 when they are all
    /// equal). Compare `load / capacity` to weigh load by it.
    #[inline(always)]
    pub fn capacity(&self, slot: Slot<'a>) -> u32 {
        self.weights().map_or(1, |w| w.of(slot.index()))
    }

    /// Whether `slot`'s worker is healthy (see
    /// [`Pool::set_healthy`](crate::Pool::set_healthy)).
    #[inline(always)]
    pub fn is_healthy(&self, slot: Slot<'a>) -> bool {
        self.healthy(slot.index())
    }

    /// The attributes of `slot`'s worker.
    #[inline(always)]
    pub fn info(&self, slot: Slot<'a>) -> WorkerInfo {
        self.set
            .info
            .get(slot.index() as usize)
            .copied()
            .unwrap_or_default()
    }

    /// The request's cache hit on `slot`: how many of its cache keys the
    /// worker holds and how many the request needs (see
    /// [`CacheHits`](crate::CacheHits)); `None` when the request carries none.
    #[inline(always)]
    pub fn cache_hit(&self, slot: Slot<'a>) -> Option<(u32, u32)> {
        let hits = self.request.cache?;
        Some((hits.held_in(self.set, slot.index()), hits.needed))
    }

    /// The random source for this pick.
    #[inline(always)]
    pub fn rng(&mut self) -> &mut Rng {
        self.rng
    }

    /// What the caller is doing with the pick.
    #[inline(always)]
    pub fn intent(&self) -> Intent {
        self.intent
    }

    /// The request being routed.
    #[inline(always)]
    pub fn request(&self) -> &Request<'a> {
        self.request
    }

    /// The load of `slot` now, not counted as a selector's read.
    #[inline(always)]
    pub(crate) fn current(&self, slot: Slot<'a>) -> u32 {
        self.counters.get(slot.index()).load(Ordering::Relaxed)
    }

    /// The scan kernel this pick runs.
    #[inline(always)]
    pub(crate) fn backend(&self) -> Kernel {
        *self.kernel
    }

    /// The capacity tables, when the pool is weighted. Read only while the
    /// feature word says some snapshot may be (a pick that raced the publish
    /// of an unweighted set may then pick its older set unweighted: as the
    /// set it raced does).
    #[inline(always)]
    pub(crate) fn weights(&self) -> Option<&'a Weights> {
        if self.features & Features::WEIGHTED == 0 {
            return None;
        }
        self.set.weights.as_deref()
    }
}
