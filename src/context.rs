//! What a selector sees during one pick: the [`Context`] over the candidates,
//! the [`Slot`]s it hands out, the caller's [`Intent`], and the one
//! least-loaded rule (minimum, ties, one draw) that the scalar paths share.

use crate::candidates::{Candidates, still_eligible};
use crate::device::WorkerInfo;
use crate::error::Error;
use crate::latency::Latency;
use crate::reports::Reported;
use crate::request::Request;
use crate::rng::Rng;
use crate::scan::{self, Kernel, Least};
use crate::snapshot::SetView;
use crate::storage::counters::Counters;
use crate::storage::summary::SUMMARISED_LANES;
use crate::sync::atomic::Ordering;
use core::marker::PhantomData;

/// One candidate, as a selector sees it.
///
/// Only a [`Context`] hands these out, and only for its candidates; the
/// lifetime ties a slot to the pick it came from, so a selector cannot keep one
/// and answer a later pick (with other candidates) with it:
///
/// ```compile_fail
/// use std::sync::Mutex;
/// use workerpick::{Choice, Context, Selector, Slot};
/// struct Sticky(Mutex<Option<Slot<'static>>>);
/// impl Selector for Sticky {
///     fn name(&self) -> &str { "sticky" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let s = cx.candidate(0)?;
///         *self.0.lock().unwrap() = Some(s); // error: `'a` must outlive `'static`
///         Some(Choice::unvalidated(s))
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot<'a> {
    index: u32,
    _pick: PhantomData<&'a ()>,
}

impl Slot<'_> {
    #[inline(always)]
    pub(crate) fn new(index: u32) -> Self {
        Self {
            index,
            _pick: PhantomData,
        }
    }

    /// The storage index (stable while the worker is in the set).
    #[inline(always)]
    pub fn index(self) -> u32 {
        self.index
    }
}

/// What the caller is doing with the pick.
///
/// A selector with state reads it to change nothing on a preview:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use workerpick::{Choice, Context, Intent, Pool, Selector};
/// /// Takes turns, like round-robin, but counts only booked picks.
/// struct Turns(AtomicUsize);
/// impl Selector for Turns {
///     fn name(&self) -> &str { "turns" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let turn = match cx.intent() {
///             Intent::Reserve => self.0.fetch_add(1, Ordering::Relaxed),
///             _ => self.0.load(Ordering::Relaxed),
///         };
///         cx.candidate(turn % cx.len()).map(Choice::unvalidated)
///     }
/// }
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let turns = Turns(AtomicUsize::new(0));
/// assert_eq!(pool.preview(&turns).unwrap(), "a");
/// assert_eq!(*pool.reserve(&turns).unwrap().worker(), "a");
/// assert_eq!(pool.preview(&turns).unwrap(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// Pick without booking load.
    Select,
    /// Pick and book load.
    Reserve,
    /// Say what would be picked, changing nothing (no cursor advance).
    Preview,
}

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
    pub(crate) backend: Kernel,
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
        backend: Kernel,
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
            backend,
            #[cfg(test)]
            reads: core::cell::Cell::new(0),
        }
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
            Candidates::Stale { n, .. } => n as usize,
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
        self.reports.board().get(slot.index)
    }

    /// The effective capacity of `slot`'s worker relative to the other
    /// candidates: its capacity weight, scaled by slow start while it ramps,
    /// divided by what all candidates' have in common (1 when they are all
    /// equal). Compare `load / capacity` to weigh load by it.
    #[inline(always)]
    pub fn capacity(&self, slot: Slot<'a>) -> u32 {
        self.weights().map_or(1, |w| w.of(slot.index))
    }

    /// Whether `slot`'s worker is healthy (see
    /// [`Pool::set_healthy`](crate::Pool::set_healthy)).
    #[inline(always)]
    pub fn is_healthy(&self, slot: Slot<'a>) -> bool {
        self.healthy(slot.index)
    }

    /// The attributes of `slot`'s worker.
    #[inline(always)]
    pub fn info(&self, slot: Slot<'a>) -> WorkerInfo {
        self.set
            .info
            .get(slot.index as usize)
            .copied()
            .unwrap_or_default()
    }

    /// The request's cache hit on `slot`: how many of its cache keys the
    /// worker holds and how many the request needs (see
    /// [`CacheHits`](crate::CacheHits)); `None` when the request carries none.
    #[inline(always)]
    pub fn cache_hit(&self, slot: Slot<'a>) -> Option<(u32, u32)> {
        let hits = self.request.cache?;
        Some((hits.held_in(self.set, slot.index), hits.needed))
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

    /// The least-loaded candidate and its load, ties broken uniformly at random.
    /// Uses the SIMD scan: see [`scan::least`](crate::scan::least) for the draws
    /// it makes. In a weighted pool, the least `(load + r) / capacity` (`r`
    /// the request's weight), exactly; unhealthy workers carry
    /// [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD) in their load.
    #[inline(always)]
    pub fn least_loaded(&mut self) -> Option<(Slot<'a>, u32)> {
        let found = self.least_scanned()?;
        // Every candidate unhealthy, or a mark short of its penalty: see
        // `fleet::pass_over`.
        if self.health_any() && !self.healthy(found.0.index()) {
            return self.detached_choice(|cx| {
                let (slot, load) = cx.least_unhealthy(found)?;
                Some((slot.index(), load))
            });
        }
        Some(found)
    }

    /// [`least_loaded`](Self::least_loaded) as the scan answers, health aside.
    #[inline(always)]
    fn least_scanned(&mut self) -> Option<(Slot<'a>, u32)> {
        if let Some(w) = self.weights() {
            return self.least_weighted(w);
        }
        if let Candidates::Fresh { slots, lanes } = self.candidates {
            let counters = self.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
            // Large pools read per-block lower bounds instead of every counter
            // (unmasked picks only: see `scan::blocks`); the flat scan below
            // answers when that cannot.
            if let Some(summary) = self.counters.summary()
                && !self.masked
                && counters.len() >= SUMMARISED_LANES
                && let Some((index, min)) = scan::least_summarised(
                    self.backend,
                    summary.for_pick(),
                    self.counters,
                    counters,
                    lanes,
                    self.rng,
                )
            {
                return Some((Slot::new(index), min));
            }
            // Counters move under us; when the lanes at the minimum moved
            // between the scan's passes, scan again. A bounded number of times,
            // then the scalar path, which always answers.
            for _ in 0..4 {
                match scan::least(self.backend, counters, lanes, |m| self.rng.below(m)) {
                    Least::Found { index, min } => return Some((Slot::new(index as u32), min)),
                    Least::Empty => return None,
                    Least::Moved => {}
                    // Saturated counters look like excluded lanes to the scan;
                    // only the scalar path tells them apart.
                    Least::Saturated => break,
                }
            }
        }
        self.least_loaded_by(|_, _| true)
    }

    /// The least-loaded candidate among those `keep` admits, ties uniform at
    /// random with one draw (none when unique). A scalar scan; `keep` sees the
    /// context too, to read a candidate's [`info`](Self::info) or cache hits.
    ///
    /// ```
    /// use workerpick::{Choice, Context, DeviceKind, Pool, Selector, WorkerInfo};
    /// /// The least-loaded worker in zone 1, else anywhere.
    /// struct ZoneFirst;
    /// impl Selector for ZoneFirst {
    ///     fn name(&self) -> &str { "zone-first" }
    ///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
    ///         let (slot, load) = cx
    ///             .least_loaded_by(|cx, s| cx.info(s).group_id() == 1)
    ///             .or_else(|| cx.least_loaded())?;
    ///         Some(Choice::validated(slot, load))
    ///     }
    /// }
    /// let pool = Pool::new();
    /// pool.insert_with("far", WorkerInfo::new().group(0)).unwrap();
    /// pool.insert_with("near", WorkerInfo::new().group(1)).unwrap();
    /// let _busy = pool.reserve_worker(&"near", 3).unwrap();
    /// assert_eq!(*pool.reserve(&ZoneFirst).unwrap().worker(), "near");
    /// ```
    pub fn least_loaded_by(
        &mut self,
        mut keep: impl FnMut(&Self, Slot<'a>) -> bool,
    ) -> Option<(Slot<'a>, u32)> {
        if let Some(w) = self.weights() {
            return self.least_weighted_by(w, keep);
        }
        let mut least = Minimum::NONE;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) {
                least.add(slot, self.current(slot));
            }
        }
        let slot = least.draw(self, keep)?;
        Some((slot, least.min))
    }

    /// The load of `slot` now, not counted as a selector's read.
    #[inline(always)]
    fn current(&self, slot: Slot<'a>) -> u32 {
        self.counters.get(slot.index).load(Ordering::Relaxed)
    }
}

/// The running minimum over some candidates, in candidate order: the least
/// load, how many candidates tie at it, and the first of them. The one rule
/// the scalar least-loaded paths share ([`Context::least_loaded_by`] and
/// device-aware's groups): one pass adds every candidate, then
/// [`draw`](Self::draw) picks a tie uniformly.
#[derive(Clone, Copy)]
pub(crate) struct Minimum<'a> {
    pub(crate) min: u32,
    ties: u32,
    first: Option<Slot<'a>>,
}

impl<'a> Minimum<'a> {
    /// Over no candidate.
    pub(crate) const NONE: Self = Self {
        min: u32::MAX,
        ties: 0,
        first: None,
    };

    /// Adds `slot`, whose load is `load`.
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: Slot<'a>, load: u32) {
        if self.first.is_none() || load < self.min {
            self.min = load;
            self.ties = 1;
            self.first = Some(slot);
        } else if load == self.min {
            self.ties += 1;
        }
    }

    /// A candidate at the minimum, drawn uniformly among the ties (`None` if
    /// none was added). `member` must admit exactly the candidates that were
    /// added. No draw when the minimum is unique; otherwise one draw and a
    /// second pass to find that tie. If the drawn tie moved meanwhile, the
    /// first minimum seen: the booking's compare-and-swap settles it.
    #[inline]
    pub(crate) fn draw(
        &self,
        cx: &mut Context<'a>,
        mut member: impl FnMut(&Context<'a>, Slot<'a>) -> bool,
    ) -> Option<Slot<'a>> {
        if self.ties <= 1 {
            return self.first;
        }
        let mut k = cx.rng.below(self.ties);
        for i in 0..cx.len() {
            let Some(slot) = cx.candidate(i) else { break };
            if member(cx, slot) && cx.current(slot) == self.min {
                if k == 0 {
                    return Some(slot);
                }
                k -= 1;
            }
        }
        self.first
    }
}
