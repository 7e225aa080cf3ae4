//! The pool's picking methods: its handles, and its own picks (which load
//! the snapshot on every call; a router thread keeps a [`Handle`] instead).
//! They live above the pool, with the handle they build.

use super::Handle;
use crate::booking;
use crate::context::Intent;
use crate::eligibility::Eligibility;
use crate::error::Error;
use crate::pool::Pool;
use crate::request::{DEFAULT_REQUEST, Request};
use crate::reservation::Reservation;
use crate::rng::Rng;
use crate::selectors::Selector;
use core::hash::Hash;

/// # Picking
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// A cached handle for one router thread or task, with its own random source.
    pub fn handle(&self) -> Handle<'_, W> {
        Handle::new(self, Rng::new())
    }

    /// A cached handle drawing from `rng` (seed it for reproducible picks).
    pub fn handle_with_rng(&self, rng: Rng) -> Handle<'_, W> {
        Handle::new(self, rng)
    }

    /// A mask admitting the current workers for which `admit` is true.
    pub fn eligibility(&self, admit: impl FnMut(&W) -> bool) -> Eligibility {
        Eligibility::build(&self.raw, &self.raw.snapshot(), admit)
    }

    /// Picks a worker without booking load, and returns a clone of it (see
    /// the type's docs on allocation; [`Handle::select`] lends it instead).
    pub fn select<S: Selector + ?Sized>(&self, selector: &S) -> Result<W, Error> {
        self.select_with(selector, &DEFAULT_REQUEST)
    }

    /// Picks a worker for `request` without booking load.
    pub fn select_with<S: Selector + ?Sized>(&self, selector: &S, request: &Request<'_>) -> Result<W, Error> {
        self.pick_key(selector, request, Intent::Select)
    }

    /// Says which worker a pick would choose now, changing nothing: no cursor
    /// advances, nothing is booked. Random draws are fresh ones. Returns a
    /// clone of the worker, as [`select`](Self::select) does.
    pub fn preview<S: Selector + ?Sized>(&self, selector: &S) -> Result<W, Error> {
        self.preview_with(selector, &DEFAULT_REQUEST)
    }

    /// [`preview`](Self::preview) for `request`.
    pub fn preview_with<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<W, Error> {
        self.pick_key(selector, request, Intent::Preview)
    }

    /// Picks a worker and books one unit of load on it.
    pub fn reserve<S: Selector + ?Sized>(&self, selector: &S) -> Result<Reservation<'_, W>, Error> {
        self.reserve_with(selector, &DEFAULT_REQUEST)
    }

    /// Picks a worker for `request` and books `request`'s weight on it.
    pub fn reserve_with<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<Reservation<'_, W>, Error> {
        booking::reserve(
            &self.raw,
            &self.raw.snapshot(),
            &mut Rng::new(),
            request,
            selector,
            |booked| Reservation::new(self, booked),
        )
    }

    /// Books `weight` on `worker` itself (a pinned target). A worker with
    /// data-parallel ranks is booked on its least-loaded rank as the
    /// counters read now (the lowest on a tie; not validated, as no pinned
    /// booking is): name the rank with [`reserve_rank`](Self::reserve_rank).
    pub fn reserve_worker(&self, worker: &W, weight: u32) -> Result<Reservation<'_, W>, Error> {
        let booked = booking::reserve_worker(&self.raw, &self.raw.snapshot(), worker, weight)?;
        Ok(Reservation::new(self, booked))
    }

    /// Books `weight` on rank `rank` of `worker` (a pinned target; rank 0 is
    /// a worker without ranks). A rank the worker does not have is an
    /// [`Error::UnknownRank`]; a draining worker refuses, as in
    /// [`reserve_worker`](Self::reserve_worker).
    ///
    /// ```
    /// use workerpick::{Error, Pool, WorkerInfo};
    /// let pool = Pool::from_workers(["plain"]).unwrap();
    /// pool.insert_with("dp", WorkerInfo::new().ranks(2)).unwrap();
    /// let r = pool.reserve_rank(&"dp", 1, 4).unwrap();
    /// assert_eq!((r.rank(), pool.in_flight_rank(&"dp", 1)), (1, Some(4)));
    /// assert_eq!(pool.reserve_rank(&"plain", 0, 1).unwrap().rank(), 0);
    /// assert_eq!(pool.reserve_rank(&"dp", 2, 1).unwrap_err(), Error::UnknownRank { rank: 2, ranks: 2 });
    /// ```
    pub fn reserve_rank(&self, worker: &W, rank: u32, weight: u32) -> Result<Reservation<'_, W>, Error> {
        let booked = booking::reserve_rank(&self.raw, &self.raw.snapshot(), worker, rank, weight)?;
        Ok(Reservation::new(self, booked))
    }

    /// [`select_with`](Self::select_with), naming the data-parallel rank
    /// picked too (0 for a worker without ranks).
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool, Request, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(2)).unwrap();
    /// let _busy = pool.reserve_rank(&"node", 0, 1).unwrap();
    /// assert_eq!(pool.select_ranked(&LeastLoaded::new(), &Request::new()), Ok(("node", 1)));
    /// ```
    pub fn select_ranked<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<(W, u32), Error> {
        self.pick_ranked(selector, request, Intent::Select)
    }

    /// [`preview_with`](Self::preview_with), naming the data-parallel rank
    /// too (0 for a worker without ranks).
    pub fn preview_ranked<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<(W, u32), Error> {
        self.pick_ranked(selector, request, Intent::Preview)
    }

    fn pick_ranked<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
        intent: Intent,
    ) -> Result<(W, u32), Error> {
        let snap = self.raw.snapshot();
        let slot = booking::choose(&self.raw, &snap, &mut Rng::new(), request, selector, intent)?;
        Ok((snap.key(slot).clone(), self.raw.slots.keys.rank(slot)))
    }

    fn pick_key<S: Selector + ?Sized>(
        &self,
        selector: &S,
        request: &Request<'_>,
        intent: Intent,
    ) -> Result<W, Error> {
        let snap = self.raw.snapshot();
        let slot = booking::choose(&self.raw, &snap, &mut Rng::new(), request, selector, intent)?;
        Ok(snap.key(slot).clone())
    }
}
