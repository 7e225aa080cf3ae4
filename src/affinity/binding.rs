//! The decision a session binding makes on each request, apart from the map
//! that stores it: book the bound worker if the snapshot the handle holds
//! for this pick still has it under the same identity, as a healthy
//! candidate of the request; else fail (hard) or take the selector's pick
//! (soft). Everything here runs on the pool's atomics, so loom models it
//! against a removal of the worker and the reuse of its slot
//! (`loom-tests/tests/sessions.rs`); the map, `papaya`'s, is not
//! loom-aware. See [`docs::affinity`](crate::docs::affinity) ("Session bindings").

use crate::booking;
use crate::candidates::Candidates;
use crate::context::Context;
use crate::error::Error;
use crate::handle::Handle;
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::selectors::{Choice, Selector};
use crate::snapshot::Snapshot;
use core::hash::Hash;
// Not the `sync` facade's: only the picking thread touches this cell, so
// loom has nothing to model in it (and each access would be one more point
// at which it switches threads).
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Where a session is bound, as a pick checks it: the worker's slot and its
/// identity generation, packed. A slot reused by another worker has another
/// generation, so a binding never lands on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target(u64);

impl Target {
    pub(crate) fn new(slot: u32, generation: u32) -> Self {
        Self((u64::from(slot) << 32) | u64::from(generation))
    }

    pub(crate) fn slot(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub(crate) fn generation(self) -> u32 {
        self.0 as u32
    }

    /// `target`'s worker, if `snap` holds it under the same identity.
    #[cfg(feature = "sessions")]
    pub(crate) fn in_set<W>(self, snap: &Snapshot<W>) -> Option<u32> {
        let slot = self.slot();
        (snap.holds(slot) && snap.view.gens.get(slot as usize) == Some(&self.generation())).then_some(slot)
    }
}

/// What a bound request did besides booking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The bound worker could not take the request (gone from the pick's
    /// snapshot, draining, unhealthy or outside the mask): drop the binding.
    pub gone: bool,
    /// The worker the request was booked on: bind the session to it if that
    /// is not where it was bound.
    pub chosen: Option<Target>,
}

impl Outcome {
    /// Whether the session's binding changes: its worker was gone, or the
    /// request was booked elsewhere (a bound session's request, the hot
    /// path, does neither).
    #[cfg(feature = "sessions")]
    #[inline(always)]
    pub(crate) fn rebinds(&self, target: Option<Target>) -> bool {
        self.gone || self.chosen.is_some_and(|c| Some(c) != target)
    }
}

/// `target`'s slot, if the pick's snapshot `snap` has it as a healthy
/// candidate of `request`: a member (not draining) under the bound
/// generation, admitted by the mask.
#[inline]
pub(crate) fn available<W>(
    pool: &Pool<W>,
    snap: &Snapshot<W>,
    request: &Request<'_>,
    target: Target,
) -> Option<u32> {
    let slot = target.slot();
    let set = &snap.view;
    if !(set.is_member(slot) && set.gens.get(slot as usize) == Some(&target.generation())) {
        return None;
    }
    // A mask from another pool is an error the pick reports: let it.
    let candidates = Candidates::of(set, pool.id(), request).ok()?;
    (crate::candidates::admits(set, &candidates, slot) && !pool.raw.reported.health.is_marked(slot))
        .then_some(slot)
}

/// Books `request` through `handle` on `target`'s worker (without a load
/// check, as a pinned target) when the snapshot the handle holds for this
/// pick has it (see [`available`]); else, or with no target, fails with
/// [`Error::SessionWorkerGone`] (`hard`, bound) or books `selector`'s pick.
/// `outcome` says what it found: a value written through a reference, not
/// returned beside the reservation, whose copy out of a pair stalled on
/// store forwarding.
#[inline]
pub(crate) fn reserve<'p, W, S>(
    handle: &mut Handle<'p, W>,
    selector: &S,
    request: &Request<'_>,
    target: Option<Target>,
    hard: bool,
    outcome: &mut Outcome,
) -> Result<Reservation<'p, W>, Error>
where
    W: Clone + Eq + Hash + Send + Sync,
    S: Selector + ?Sized,
{
    if let Some(target) = target {
        let pool = handle.pool();
        let snap = handle.snapshot();
        // The snapshot decides: a removal that returned before this request
        // began is in it (the handle revalidates its cache), and the slot's
        // generation tells its worker from a later owner of the slot.
        if let Some(slot) = available(pool, snap, request, target) {
            booking::duties(&pool.raw, pool.raw.slots.counters.features.get());
            let booked = booking::book(&pool.raw, snap, slot, request.weight);
            outcome.chosen = booked.is_ok().then_some(target);
            return booked.map(|b| Reservation::new(pool, b));
        }
        outcome.gone = true;
        if hard {
            return Err(Error::SessionWorkerGone);
        }
    }
    let noted = Noted {
        inner: selector,
        chosen: AtomicU64::new(NONE),
    };
    let picked = handle.reserve_with(&noted, request);
    let chosen = noted.chosen.load(Relaxed);
    outcome.chosen = (picked.is_ok() && chosen != NONE).then_some(Target(chosen));
    picked
}

/// No choice noted yet.
const NONE: u64 = u64::MAX;

/// A selector that notes which worker (slot and generation) its inner
/// selector chose last, for the session to bind to. Through an atomic
/// because a `Selector` is `Sync`.
struct Noted<'s, S: ?Sized> {
    inner: &'s S,
    chosen: AtomicU64,
}

impl<S: Selector + ?Sized> Selector for Noted<'_, S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    #[inline]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let choice = self.inner.choose(cx)?;
        let slot = choice.slot().index();
        let generation = cx.set.gens.get(slot as usize).copied().unwrap_or(0);
        self.chosen.store(Target::new(slot, generation).0, Relaxed);
        Some(choice)
    }
}
