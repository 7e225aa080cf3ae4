//! Booking: the one pick path every entry point shares. It builds the
//! context, asks the selector, checks its answer, and books the load with a
//! validated compare-and-swap; the storage's booking goes to a wrapper the
//! caller passes down, which makes its kind of reservation of it.

use crate::candidates::Candidates;
use crate::context::{Context, Intent};
use crate::error::Error;
use crate::raw::RawPool;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::{Choice, Selector};
use crate::snapshot::Snapshot;
use crate::storage::features::Features;
use crate::storage::{Booked, Missed};

/// How many times a reservation asks the selector again after losing a
/// compare-and-swap. When the bound is hit it books the last choice without
/// validating its load (counted in `PoolStats::fallbacks`). Losing 32 races in a
/// row needs 32 other bookings to land on the same worker between one scan
/// and its swap; under ordinary contention it does not happen.
pub(crate) const MAX_ATTEMPTS: u32 = 32;

#[inline(always)]
fn context<'a, W>(
    pool: &'a RawPool<W>,
    snap: &'a Snapshot<W>,
    rng: &'a mut Rng,
    request: &'a Request<'a>,
    intent: Intent,
) -> Result<Context<'a>, Error> {
    let candidates = Candidates::of(&snap.view, pool.id(), request)?;
    Ok(Context::new(
        &snap.view,
        (&pool.slots.counters, &pool.reported),
        candidates,
        rng,
        intent,
        request,
        &pool.backend,
    ))
}

/// Asks the selector. Its answer is one of the candidates by construction:
/// slots come only from this context and cannot outlive the pick.
#[inline(always)]
fn ask<'a, S: Selector + ?Sized>(selector: &S, cx: &mut Context<'a>) -> Result<Choice<'a>, Error> {
    if cx.is_empty() {
        return Err(cx.empty_error());
    }
    // A match, not `ok_or`: that builds the error on every pick and drops it.
    match selector.choose(cx) {
        Some(choice) => Ok(choice),
        None => Err(Error::NoAcceptableWorker),
    }
}

/// Calls `$body` with `$s` bound to the concrete built-in behind `$selector`,
/// or to `$selector` itself. For a concrete selector type the match folds
/// away; through `&dyn Selector` it costs one virtual call and a jump, and each
/// built-in then runs the same inlined path as a direct call. The arms come
/// from the mode list (`selectors::builtins!`).
macro_rules! devirtualize {
    ($selector:expr, |$s:ident| $body:expr) => {
        crate::selectors::builtins!(devirtualize_arms($selector, $s, $body))
    };
}

/// The match of [`devirtualize!`], one arm per built-in mode.
macro_rules! devirtualize_arms {
    (($selector:expr, $s:ident, $body:expr) $($(#[$doc:meta])* $ty:ident($module:ident) $($name:literal)|+;)*) => {
        match $selector.builtin() {
            $(Some(crate::selectors::Builtin::$ty($s)) => $body,)*
            None => {
                let $s = $selector;
                $body
            }
        }
    };
}

/// A pick that books nothing (select or preview): the chosen slot.
#[inline(always)]
pub(crate) fn choose<W, S: Selector + ?Sized>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    rng: &mut Rng,
    request: &Request<'_>,
    selector: &S,
    intent: Intent,
) -> Result<u32, Error> {
    devirtualize!(selector, |s| choose_as(pool, snap, rng, request, s, intent))
}

/// A pick that books `request.weight` on the chosen worker, and hands the
/// booking to `keep` (which wraps it in the caller's kind of reservation:
/// built in place, it costs nothing over returning that reservation).
#[inline(always)]
pub(crate) fn reserve<W, S: Selector + ?Sized, R>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    rng: &mut Rng,
    request: &Request<'_>,
    selector: &S,
    keep: impl FnOnce(Booked<W>) -> R,
) -> Result<R, Error> {
    devirtualize!(selector, |s| reserve_as(pool, snap, rng, request, s, keep))
}

#[inline(always)]
fn choose_as<W, S: Selector + ?Sized>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    rng: &mut Rng,
    request: &Request<'_>,
    selector: &S,
    intent: Intent,
) -> Result<u32, Error> {
    let mut cx = context(pool, snap, rng, request, intent)?;
    Ok(ask(selector, &mut cx)?.slot.index())
}

/// A pick that books `request.weight` on the chosen worker.
#[inline(always)]
fn reserve_as<W, S: Selector + ?Sized, R>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    rng: &mut Rng,
    request: &Request<'_>,
    selector: &S,
    keep: impl FnOnce(Booked<W>) -> R,
) -> Result<R, Error> {
    let mut cx = context(pool, snap, rng, request, Intent::Reserve)?;
    duties(pool, cx.features);
    let weight = request.weight;
    let slots = &pool.slots;
    let mut last = 0;
    for _ in 0..MAX_ATTEMPTS {
        let choice = ask(selector, &mut cx)?;
        let slot = choice.slot.index();
        // Before the compare-and-swap, whose fence would otherwise hold the
        // key's dependent loads back until it completes: the router's next step
        // is to read the worker, and so the loads overlap the booking.
        // SAFETY: `snap` names `slot` (the context hands out only its
        // candidates), and the booking made below keeps it once `snap` is gone.
        // Not safe code: what keeps the key is the snapshot, then the booking,
        // not a count on the key itself (an `Arc<W>` cloned per booking would be
        // one more locked instruction on a shared line per pick).
        let key = unsafe { slots.keys.ptr(slot) };
        if !choice.charge || weight == 0 {
            return Ok(keep(slots.pin(slot, key)));
        }
        match choice.seen {
            None => return Ok(keep(slots.charge(slot, key, weight)?)),
            Some(seen) => match slots.charge_if(slot, key, seen, weight) {
                Ok(booked) => return Ok(keep(booked)),
                Err(Missed::Overflow) => return Err(Error::LoadOverflow),
                Err(Missed::Moved) => {}
            },
        }
        last = slot;
    }
    // SAFETY: `snap` names `last`; the booking made here keeps it.
    let key = unsafe { slots.keys.ptr(last) };
    let booked = slots.charge(last, key, weight)?;
    pool.note_fallback();
    Ok(keep(booked))
}

/// What every picked reservation does besides booking, now and then, when
/// the feature word `features` (as the pick read it) says there is any: age
/// out reports, step a slow-start ramp.
#[inline(always)]
pub(crate) fn duties<W>(pool: &RawPool<W>, features: u32) {
    if features & (Features::REPORTED | Features::RAMPING) != 0 {
        pool.reported.tick(&pool.slots.counters);
        if pool.ramp.is_on() && crate::load::reports::now_and_then() {
            (pool.ramp_step)(pool);
        }
    }
}

/// Books `weight` on a worker named by the caller: on its least-loaded
/// rank, if it has ranks.
pub(crate) fn reserve_worker<W: Eq + core::hash::Hash>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    worker: &W,
    weight: u32,
) -> Result<Booked<W>, Error> {
    let slot = worker_slot(pool, snap, worker)?;
    book(pool, snap, slot, weight)
}

/// A preview (see [`choose`]) with the chosen worker, its rank and the load
/// booked on it, read from its slot: no lookup of the worker. Inlined into
/// each handle's method, as its body was before it came here.
#[inline(always)]
pub(crate) fn preview_loaded<'s, W, S: Selector + ?Sized>(
    pool: &RawPool<W>,
    snap: &'s Snapshot<W>,
    rng: &mut Rng,
    request: &Request<'_>,
    selector: &S,
) -> Result<(&'s W, u32, u32), Error> {
    let slot = choose(pool, snap, rng, request, selector, Intent::Preview)?;
    Ok((snap.key(slot), pool.slots.keys.rank(slot), pool.booked_load(slot)))
}

/// The load booked on rank `rank` of `worker` in `snap` (as
/// [`Pool::in_flight_rank`] reads it), if `snap` has that rank.
pub(crate) fn rank_load<W: Eq + core::hash::Hash>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    worker: &W,
    rank: u32,
) -> Option<u32> {
    Some(pool.booked_load(snap.ranks_of(worker)?.slot(rank).ok()?))
}

/// Books `weight` on rank `rank` of a worker named by the caller.
pub(crate) fn reserve_rank<W: Eq + core::hash::Hash>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    worker: &W,
    rank: u32,
    weight: u32,
) -> Result<Booked<W>, Error> {
    let ranks = snap.ranks_of(worker).ok_or(Error::UnknownWorker)?;
    book(pool, snap, ranks.slot(rank)?, weight)
}

/// The slot a booking on `worker` goes to: its own, or its least-loaded
/// rank's. A worker without ranks is the one lookup it always was; only a
/// miss there looks among the workers with ranks.
#[inline(always)]
pub(crate) fn worker_slot<W: Eq + core::hash::Hash>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    worker: &W,
) -> Result<u32, Error> {
    match snap.index.get(worker) {
        Some(&slot) => Ok(slot),
        None => least_loaded_rank(pool, snap, worker),
    }
}

/// The least-loaded rank of `worker`, a worker with ranks (the lowest one
/// on a tie), as its counters read now; unvalidated, like any pinned
/// booking.
#[cold]
#[inline(never)]
fn least_loaded_rank<W: Eq + core::hash::Hash>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    worker: &W,
) -> Result<u32, Error> {
    let Some(&first) = snap.ranked.get(worker) else {
        return Err(Error::UnknownWorker);
    };
    let count = snap.view.info[first as usize].rank_count();
    let load = |slot| {
        pool.slots
            .counters
            .get(slot)
            .load(crate::sync::atomic::Ordering::Relaxed)
    };
    Ok((first..first + count)
        .min_by_key(|&slot| load(slot))
        .unwrap_or(first))
}

/// Books `weight` (or a pin, for `0`) on `slot`, a member of `snap`, a
/// snapshot of `pool` (both callers found it in `snap.index`, which holds only
/// members); refused for a draining member.
#[inline]
pub(crate) fn book<W>(
    pool: &RawPool<W>,
    snap: &Snapshot<W>,
    slot: u32,
    weight: u32,
) -> Result<Booked<W>, Error> {
    if !snap.view.is_member(slot) {
        // In the set but no candidate: draining.
        return Err(Error::Draining);
    }
    // SAFETY: `snap` names `slot`; the booking made from it keeps it once
    // `snap` is gone.
    let key = unsafe { pool.slots.keys.ptr(slot) };
    pool.slots.book(slot, key, weight)
}
