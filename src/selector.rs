//! The plug-in point: one object-safe trait that the built-in modes and
//! custom policies implement alike.

use crate::device::WorkerInfo;
use crate::eligibility::UNBUILT;
use crate::remap::Remapped;
use crate::rng::Rng;
use crate::scan::{self, Kernel, Least};
use crate::slots::Counters;
use crate::snapshot::SetView;
use crate::sync::atomic::Ordering;
use crate::{Eligibility, Error, Request};
use core::marker::PhantomData;

/// A selection policy.
///
/// `choose` looks at the candidates through a [`Context`] and names one. It is
/// called with `&self` from many threads at once, so any state it keeps must
/// be atomic (as [`RoundRobin`](crate::RoundRobin)'s cursor is). The pool does
/// the booking: when the choice carries the load it compared
/// ([`Choice::validated`]), a reservation lands only if that load is still
/// current (compare-and-swap), and otherwise `choose` is asked again, a bounded
/// number of times.
///
/// ```
/// use workerpick::{Choice, Context, Pool, Selector};
///
/// /// Always the first candidate.
/// struct First;
/// impl Selector for First {
///     fn name(&self) -> &str { "first" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         cx.candidate(0).map(Choice::unvalidated)
///     }
/// }
///
/// let pool = Pool::from_workers([10, 20, 30]).unwrap();
/// let dynamic: &dyn Selector = &First;
/// assert_eq!(pool.select(dynamic).unwrap(), 10);
/// ```
pub trait Selector: Send + Sync {
    /// The name a [`Registry`](crate::Registry) knows it by.
    fn name(&self) -> &str;

    /// Picks one candidate, or `None` if it finds none acceptable.
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>>;

    /// The built-in mode behind this selector, if it is one: lets a call
    /// through `&dyn Selector` take the same inlined path as a direct call.
    /// Custom selectors keep the default.
    #[doc(hidden)]
    #[inline(always)]
    fn builtin(&self) -> Option<crate::selectors::Builtin<'_>> {
        None
    }
}

impl<S: Selector + ?Sized> Selector for &S {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<crate::selectors::Builtin<'_>> {
        (**self).builtin()
    }
}

impl<S: Selector + ?Sized> Selector for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<crate::selectors::Builtin<'_>> {
        (**self).builtin()
    }
}

impl<S: Selector + ?Sized> Selector for std::sync::Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<crate::selectors::Builtin<'_>> {
        (**self).builtin()
    }
}

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

/// A selector's answer: a candidate, and how to book it.
///
/// ```
/// use workerpick::{Choice, Context, Pool, Selector};
/// /// The least-loaded candidate, booked only if its load is still the one seen.
/// struct Careful;
/// impl Selector for Careful {
///     fn name(&self) -> &str { "careful" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let (slot, load) = cx.least_loaded()?;
///         Some(Choice::validated(slot, load))
///     }
/// }
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let _busy = pool.reserve_worker(&"a", 2).unwrap();
/// assert_eq!(*pool.reserve(&Careful).unwrap().worker(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice<'a> {
    pub(crate) slot: Slot<'a>,
    pub(crate) seen: Option<u32>,
    pub(crate) charge: bool,
}

impl<'a> Choice<'a> {
    /// `slot`, chosen because its load was `seen`: a reservation books it only
    /// if the load is still `seen`, else the selector is asked again.
    pub fn validated(slot: Slot<'a>, seen: u32) -> Self {
        Self {
            slot,
            seen: Some(seen),
            charge: true,
        }
    }

    /// `slot`, whatever its load (random, round-robin, sticky choices).
    pub fn unvalidated(slot: Slot<'a>) -> Self {
        Self {
            slot,
            seen: None,
            charge: true,
        }
    }

    /// `slot`, and book no load for it (the device-aware full cache hit).
    pub fn uncharged(slot: Slot<'a>) -> Self {
        Self {
            slot,
            seen: None,
            charge: false,
        }
    }

    /// The chosen slot.
    pub fn slot(&self) -> Slot<'a> {
        self.slot
    }
}

/// Which candidates a pick may return.
#[derive(Clone, Copy)]
pub(crate) enum Candidates<'a> {
    /// The whole set, or a mask built from this very snapshot: `slots` are the
    /// candidates and `lanes` is the matching exclusion array for the scan, `None`
    /// when the candidates are exactly the lanes `0..slots.len()`.
    Fresh {
        slots: &'a [u32],
        lanes: Option<&'a [u32]>,
    },
    /// A mask built before a worker left, when the snapshot's translation
    /// cache is full (see `remap`): its workers that are still in the set
    /// under the same identity, filtered on every call. `n` of them.
    Stale { mask: &'a Eligibility, n: u32 },
}

/// What a [`Selector`] sees during one pick: the candidates, their loads, the
/// random source and the request.
pub struct Context<'a> {
    set: &'a SetView,
    counters: &'a Counters,
    candidates: Candidates<'a>,
    masked: bool,
    rng: &'a mut Rng,
    intent: Intent,
    request: &'a Request<'a>,
    backend: Kernel,
    #[cfg(test)]
    pub(crate) reads: core::cell::Cell<u32>,
}

impl<'a> Candidates<'a> {
    /// The candidates for `request` in `set`: the whole set, or the mask's
    /// workers. A mask (or cache hits) from another pool is refused.
    #[inline(always)]
    pub(crate) fn of(set: &'a SetView, pool_id: u64, request: &Request<'a>) -> Result<Self, Error> {
        if let Some(hits) = request.cache {
            hits.check_pool(pool_id)?;
        }
        match request.mask {
            None => Ok(Candidates::Fresh {
                slots: &set.members,
                lanes: if set.dense { None } else { Some(&set.excluded) },
            }),
            Some(mask) => Self::masked(set, pool_id, mask),
        }
    }

    fn masked(set: &'a SetView, pool_id: u64, mask: &'a Eligibility) -> Result<Self, Error> {
        if mask.pool == UNBUILT {
            // `Eligibility::new()`, never built: it admits nothing.
            return Ok(Candidates::Fresh {
                slots: &[],
                lanes: None,
            });
        }
        if mask.pool != pool_id {
            return Err(Error::InvalidConfig {
                what: "eligibility mask",
                why: "it was built for another pool; build it with this pool's `eligibility`".into(),
            });
        }
        // No worker left since the mask was built: every entry still names a
        // member under the same identity, and the lanes of workers that
        // joined since are excluded (or past the mask's end).
        if set.departed_at <= mask.epoch && mask.epoch <= set.epoch {
            return Ok(Candidates::Fresh {
                slots: &mask.slots,
                lanes: Some(&mask.excluded),
            });
        }
        if let Some(r) = set.remaps.get_or_insert(mask.id, || remap(set, mask)) {
            return Ok(Candidates::Fresh {
                slots: &r.slots,
                lanes: Some(&r.excluded),
            });
        }
        let n = (0..mask.slots.len())
            .filter(|&j| still_eligible(set, mask, j))
            .count();
        Ok(Candidates::Stale { mask, n: n as u32 })
    }
}

impl<'a> Context<'a> {
    #[inline(always)]
    pub(crate) fn new(
        set: &'a SetView,
        counters: &'a Counters,
        candidates: Candidates<'a>,
        rng: &'a mut Rng,
        intent: Intent,
        request: &'a Request<'a>,
        backend: Kernel,
    ) -> Self {
        Self {
            set,
            counters,
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
            Error::NoWorkers
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

    /// Whether an eligibility mask narrows the candidates.
    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// The in-flight load of `slot` now (a relaxed read: it may be stale by the
    /// time you act on it, which is what [`Choice::validated`] is for).
    #[inline(always)]
    pub fn load(&self, slot: Slot<'a>) -> u32 {
        #[cfg(test)]
        self.reads.set(self.reads.get() + 1);
        self.counters.get(slot.index).load(Ordering::Relaxed)
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
    /// it makes.
    #[inline(always)]
    pub fn least_loaded(&mut self) -> Option<(Slot<'a>, u32)> {
        if let Candidates::Fresh { slots, lanes } = self.candidates {
            let counters = self.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
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
        let mut best = u32::MAX;
        let mut ties = 0u32;
        let mut first = None;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if !keep(self, slot) {
                continue;
            }
            let v = self.counters.get(slot.index).load(Ordering::Relaxed);
            if first.is_none() || v < best {
                best = v;
                ties = 1;
                first = Some(slot);
            } else if v == best {
                ties += 1;
            }
        }
        let first = first?;
        if ties == 1 {
            return Some((first, best));
        }
        let mut k = self.rng.below(ties);
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) && self.counters.get(slot.index).load(Ordering::Relaxed) == best {
                if k == 0 {
                    return Some((slot, best));
                }
                k -= 1;
            }
        }
        // The drawn tie moved meanwhile: answer with the first minimum seen;
        // the compare-and-swap will tell whether it still holds.
        Some((first, best))
    }
}

/// `mask`'s entries that still name members of `set` under the same identity.
#[cold]
fn remap(set: &SetView, mask: &Eligibility) -> Remapped {
    let mut excluded = vec![u32::MAX; set.scan_len()].into_boxed_slice();
    // Sized for the whole mask: one allocation, no regrowth.
    let mut slots = Vec::with_capacity(mask.slots.len());
    for j in (0..mask.slots.len()).filter(|&j| still_eligible(set, mask, j)) {
        let slot = mask.slots[j];
        excluded[slot as usize] = 0;
        slots.push(slot);
    }
    Remapped {
        mask: mask.id,
        slots,
        excluded,
    }
}

#[cfg(test)]
thread_local! {
    /// Mask entries checked against a set, for the complexity tests.
    pub(crate) static ELIGIBILITY_CHECKS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Whether entry `j` of a stale mask still names a member with the same identity.
fn still_eligible(set: &SetView, mask: &Eligibility, j: usize) -> bool {
    #[cfg(test)]
    ELIGIBILITY_CHECKS.with(|c| c.set(c.get() + 1));
    let slot = mask.slots[j];
    set.is_member(slot) && set.gens[slot as usize] == mask.gens[j]
}
