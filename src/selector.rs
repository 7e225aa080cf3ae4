//! The plug-in point: one object-safe trait that the built-in modes and
//! custom policies implement alike.

use crate::device::WorkerInfo;
use crate::eligibility::UNBUILT;
use crate::rng::Rng;
use crate::scan::{self, Backend, MinTies};
use crate::slots::{CHUNK, Counters};
use crate::snapshot::SetView;
use crate::sync::atomic::Ordering;
use crate::{Eligibility, Error, Request};

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
///     fn choose(&self, cx: &mut Context<'_>) -> Option<Choice> {
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
    fn choose(&self, cx: &mut Context<'_>) -> Option<Choice>;

    /// Whether a router should book load for this mode's picks (a hint for
    /// callers choosing between `select` and `reserve`).
    fn charges(&self) -> bool {
        true
    }
}

impl<S: Selector + ?Sized> Selector for &S {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose(&self, cx: &mut Context<'_>) -> Option<Choice> {
        (**self).choose(cx)
    }
    fn charges(&self) -> bool {
        (**self).charges()
    }
}

impl<S: Selector + ?Sized> Selector for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose(&self, cx: &mut Context<'_>) -> Option<Choice> {
        (**self).choose(cx)
    }
    fn charges(&self) -> bool {
        (**self).charges()
    }
}

impl<S: Selector + ?Sized> Selector for std::sync::Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose(&self, cx: &mut Context<'_>) -> Option<Choice> {
        (**self).choose(cx)
    }
    fn charges(&self) -> bool {
        (**self).charges()
    }
}

/// A worker's place in the pool's storage, as a selector sees it. Only a
/// [`Context`] hands these out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot(pub(crate) u32);

impl Slot {
    /// The storage index (stable while the worker is in the set).
    pub fn index(self) -> u32 {
        self.0
    }
}

/// What the caller is doing with the pick.
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

/// A selector's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub(crate) slot: Slot,
    pub(crate) seen: Option<u32>,
    pub(crate) charge: bool,
}

impl Choice {
    /// `slot`, chosen because its load was `seen`: a reservation books it only
    /// if the load is still `seen`, else the selector is asked again.
    pub fn validated(slot: Slot, seen: u32) -> Self {
        Self {
            slot,
            seen: Some(seen),
            charge: true,
        }
    }

    /// `slot`, whatever its load (random, round-robin, sticky choices).
    pub fn unvalidated(slot: Slot) -> Self {
        Self {
            slot,
            seen: None,
            charge: true,
        }
    }

    /// `slot`, and book no load for it (the device-aware full cache hit).
    pub fn uncharged(slot: Slot) -> Self {
        Self {
            slot,
            seen: None,
            charge: false,
        }
    }

    /// The chosen slot.
    pub fn slot(&self) -> Slot {
        self.slot
    }
}

/// Which candidates a pick may return.
#[derive(Clone, Copy)]
enum Candidates<'a> {
    /// The whole set, or a mask built from this very snapshot: `slots` are the
    /// candidates and `lanes` is the matching exclusion array for the scan.
    Fresh { slots: &'a [u32], lanes: &'a [u32] },
    /// A mask built from an older snapshot: its workers that are still in the
    /// set under the same identity. `n` of them.
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
    backend: Backend,
    #[cfg(test)]
    pub(crate) reads: core::cell::Cell<u32>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(
        set: &'a SetView,
        counters: &'a Counters,
        pool_id: u64,
        rng: &'a mut Rng,
        intent: Intent,
        request: &'a Request<'a>,
        backend: Backend,
    ) -> Result<Self, Error> {
        let candidates = match request.mask {
            None => Candidates::Fresh {
                slots: &set.members,
                lanes: &set.excluded,
            },
            // Never built (`Eligibility::new()`): it admits nothing.
            Some(mask) if mask.pool == UNBUILT => Candidates::Fresh {
                slots: &[],
                lanes: &[],
            },
            Some(mask) if mask.pool != pool_id => {
                return Err(Error::InvalidConfig {
                    what: "eligibility mask",
                    why: "it was built for another pool; build it with this pool's `eligibility`".into(),
                });
            }
            Some(mask) if mask.epoch == set.epoch => Candidates::Fresh {
                slots: &mask.slots,
                lanes: &mask.excluded,
            },
            Some(mask) => {
                let n = (0..mask.slots.len())
                    .filter(|&j| still_eligible(set, mask, j))
                    .count();
                Candidates::Stale { mask, n: n as u32 }
            }
        };
        Ok(Self {
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
        })
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
    pub fn candidate(&self, i: usize) -> Option<Slot> {
        match self.candidates {
            Candidates::Fresh { slots, .. } => slots.get(i).map(|&s| Slot(s)),
            Candidates::Stale { mask, .. } => (0..mask.slots.len())
                .filter(|&j| still_eligible(self.set, mask, j))
                .nth(i)
                .map(|j| Slot(mask.slots[j])),
        }
    }

    /// Whether `slot` is one of the candidates.
    pub(crate) fn is_candidate(&self, slot: Slot) -> bool {
        match self.candidates {
            Candidates::Fresh { lanes, .. } => lanes.get(slot.0 as usize) == Some(&0),
            Candidates::Stale { mask, .. } => {
                (0..mask.slots.len()).any(|j| mask.slots[j] == slot.0 && still_eligible(self.set, mask, j))
            }
        }
    }

    /// Whether an eligibility mask narrows the candidates.
    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// The in-flight load of `slot` now (a relaxed read: it may be stale by the
    /// time you act on it, which is what [`Choice::validated`] is for).
    #[inline(always)]
    pub fn load(&self, slot: Slot) -> u32 {
        #[cfg(test)]
        self.reads.set(self.reads.get() + 1);
        self.counters.get(slot.0).load(Ordering::Relaxed)
    }

    /// The attributes of `slot`'s worker.
    #[inline(always)]
    pub fn info(&self, slot: Slot) -> WorkerInfo {
        self.set.info.get(slot.0 as usize).copied().unwrap_or_default()
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

    /// The least-loaded candidate and its load, ties broken uniformly at random
    /// with one draw (none when the minimum is unique). Uses the SIMD scan.
    #[inline]
    pub fn least_loaded(&mut self) -> Option<(Slot, u32)> {
        if let Candidates::Fresh { lanes, .. } = self.candidates {
            // Counters move under us; when the tie we drew has gone by the
            // second pass, scan again. A bounded number of times, then the
            // scalar path, which always answers.
            for _ in 0..4 {
                let found = self.scan_min_ties(lanes);
                if found.ties == 0 {
                    return None;
                }
                if found.min == u32::MAX {
                    // Saturated counters look like excluded lanes to the
                    // scan; only the scalar path tells them apart.
                    break;
                }
                let k = if found.ties == 1 {
                    0
                } else {
                    self.rng.below(found.ties)
                };
                if let Some(slot) = self.scan_nth(lanes, found.min, k) {
                    return Some((slot, found.min));
                }
            }
        }
        self.least_loaded_by(|_| true)
    }

    /// The least-loaded candidate among those `keep` admits, ties uniform at
    /// random with one draw (none when unique). A scalar scan.
    pub fn least_loaded_by(&mut self, mut keep: impl FnMut(Slot) -> bool) -> Option<(Slot, u32)> {
        let mut best = u32::MAX;
        let mut ties = 0u32;
        let mut first = None;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if !keep(slot) {
                continue;
            }
            let v = self.counters.get(slot.0).load(Ordering::Relaxed);
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
            if keep(slot) && self.counters.get(slot.0).load(Ordering::Relaxed) == best {
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

    fn chunks<'s>(
        &'s self,
        lanes: &'s [u32],
    ) -> impl Iterator<Item = (usize, &'s [crate::sync::atomic::AtomicU32], &'s [u32])> {
        lanes.chunks(CHUNK).enumerate().filter_map(move |(i, lanes)| {
            let counters = &self.counters.chunk(i)?.0[..lanes.len()];
            Some((i * CHUNK, counters, lanes))
        })
    }

    #[inline]
    fn scan_min_ties(&self, lanes: &[u32]) -> MinTies {
        let mut acc = MinTies {
            min: u32::MAX,
            ties: 0,
        };
        for (_, counters, lanes) in self.chunks(lanes) {
            let r = scan::min_ties(self.backend, counters, lanes);
            if r.min < acc.min {
                acc = r;
            } else if r.min == acc.min {
                acc.ties += r.ties;
            }
        }
        acc
    }

    #[inline]
    fn scan_nth(&self, lanes: &[u32], min: u32, mut k: u32) -> Option<Slot> {
        for (base, counters, lanes) in self.chunks(lanes) {
            match scan::nth_tie(self.backend, counters, lanes, min, k) {
                Ok(i) => return Some(Slot((base + i) as u32)),
                Err(found) => k -= found,
            }
        }
        None
    }
}

/// Whether entry `j` of a stale mask still names a member with the same identity.
fn still_eligible(set: &SetView, mask: &Eligibility, j: usize) -> bool {
    let slot = mask.slots[j];
    set.is_member(slot) && set.gens[slot as usize] == mask.gens[j]
}
