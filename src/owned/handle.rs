use super::Anchor;
use super::reservation::OwnedReservation;
use crate::booking;
use crate::context::Intent;
use crate::error::Error;
use crate::handle::thin_picks;
use crate::pool::Pool;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::Selector;
use crate::snapshot::Snapshot;
use crate::sync::OwnedCached;
use core::hash::Hash;
use std::sync::Arc;

/// A [`Handle`](crate::Handle) that owns its share of an `Arc<Pool<W>>`:
/// `'static + Send`, so a task or a service can keep it, and its picks return
/// [`OwnedReservation`]s that move into spawned tasks.
///
/// Picks cost what a `Handle`'s cost, plus one uncontended reference-count
/// increment per reservation (its release pays the decrement); the count is
/// this handle's own, never the pool's.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::{LeastLoaded, Pool};
///
/// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
/// let mut handle = pool.owned_handle();
/// let r = handle.reserve(&LeastLoaded::new()).unwrap();
/// let worker = std::thread::spawn(move || {
///     let w = *r.worker();
///     drop(r); // released on another thread
///     w
/// })
/// .join()
/// .unwrap();
/// assert_eq!(pool.in_flight(&worker), Some(0));
/// ```
pub struct OwnedHandle<W> {
    anchor: Arc<Anchor<W>>,
    cache: OwnedCached<Arc<Anchor<W>>>,
    rng: Rng,
}

impl<W: Clone + Eq + Hash + Send + Sync> OwnedHandle<W> {
    /// A handle on `pool` drawing from `rng` (see [`Pool::owned_handle`]).
    pub(crate) fn new(pool: &Arc<Pool<W>>, rng: Rng) -> Self {
        let anchor = Arc::new(Anchor { pool: pool.clone() });
        OwnedHandle {
            cache: OwnedCached::new(anchor.clone()),
            anchor,
            rng,
        }
    }

    /// The pool this handle picks from.
    pub fn pool(&self) -> &Arc<Pool<W>> {
        &self.anchor.pool
    }

    thin_picks!(OwnedReservation<W>);

    /// [`preview`](Self::preview) for `request`.
    #[inline]
    pub fn preview_with<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<&W, Error> {
        self.pick(selector, request, Intent::Preview)
    }

    /// Picks a worker for `request` and books `request`'s weight on it.
    #[inline]
    pub fn reserve_with<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<OwnedReservation<W>, Error> {
        self.reserve_inlined(selector, request)
    }

    /// [`reserve_with`](Self::reserve_with), inlined wherever it is called
    /// (see `Handle::reserve_inlined`).
    #[inline(always)]
    pub(crate) fn reserve_inlined<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<OwnedReservation<W>, Error> {
        let snap: &Snapshot<W> = self.cache.load();
        let anchor = &self.anchor;
        booking::reserve(&anchor.pool, snap, &mut self.rng, request, selector, |booked| {
            OwnedReservation::new(anchor, booked)
        })
    }

    /// Books `weight` on `worker` itself (a pinned target): on its
    /// least-loaded rank, if it has ranks (see [`Pool::reserve_worker`]).
    pub fn reserve_worker(&mut self, worker: &W, weight: u32) -> Result<OwnedReservation<W>, Error> {
        let snap: &Snapshot<W> = self.cache.load();
        let booked = booking::reserve_worker(&self.anchor.pool, snap, worker, weight)?;
        Ok(OwnedReservation::new(&self.anchor, booked))
    }

    /// Books `weight` on rank `rank` of `worker` (see [`Pool::reserve_rank`]).
    pub fn reserve_rank(&mut self, worker: &W, rank: u32, weight: u32) -> Result<OwnedReservation<W>, Error> {
        let snap: &Snapshot<W> = self.cache.load();
        let booked = booking::reserve_rank(&self.anchor.pool, snap, worker, rank, weight)?;
        Ok(OwnedReservation::new(&self.anchor, booked))
    }

    fn pick_ranked<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
        intent: Intent,
    ) -> Result<(&W, u32), Error> {
        let snap = self.cache.load();
        let pool = &self.anchor.pool;
        let slot = booking::choose(pool, snap, &mut self.rng, request, selector, intent)?;
        Ok((snap.key(slot), pool.slots.keys.rank(slot)))
    }

    /// [`preview_ranked`](Self::preview_ranked), with the load of the rank
    /// chosen ([`booking::preview_loaded`]).
    pub(crate) fn preview_loaded<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<(&W, u32, u32), Error> {
        booking::preview_loaded(
            &self.anchor.pool,
            self.cache.load(),
            &mut self.rng,
            request,
            selector,
        )
    }

    /// The load booked on rank `rank` of `worker`, through the cached
    /// snapshot; `None` when the set has no such rank now.
    pub(crate) fn rank_load(&mut self, worker: &W, rank: u32) -> Option<u32> {
        booking::rank_load(&self.anchor.pool, self.cache.load(), worker, rank)
    }

    #[inline(always)]
    fn pick<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
        intent: Intent,
    ) -> Result<&W, Error> {
        let snap = self.cache.load();
        let slot = booking::choose(&self.anchor.pool, snap, &mut self.rng, request, selector, intent)?;
        Ok(snap.key(slot))
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> Clone for OwnedHandle<W> {
    /// Another handle on the same pool, with its own anchor (one allocation)
    /// and a fresh random source.
    fn clone(&self) -> Self {
        self.anchor.pool.owned_handle()
    }
}

impl<W> core::fmt::Debug for OwnedHandle<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OwnedHandle").finish_non_exhaustive()
    }
}
