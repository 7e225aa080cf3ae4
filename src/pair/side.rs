//! The two kinds of handle a pair picks through, and the guards they book.

use crate::error::Error;
use crate::handle::Handle;
use crate::owned::handle::OwnedHandle;
use crate::owned::reservation::OwnedReservation;
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::selectors::Selector;
use core::hash::Hash;

mod sealed {
    pub trait Sealed {}
}

/// A handle a [`Pairs`](crate::Pairs) picks through: a borrowed
/// [`Handle`] or an [`OwnedHandle`]. Sealed; its methods are the handles' own.
pub trait PairHandle: sealed::Sealed {
    /// The worker type.
    type Worker: Clone + Eq + Hash + Send + Sync;
    /// The reservation this handle books.
    type Guard: PairGuard<Worker = Self::Worker>;

    /// The pool picked from.
    fn pair_pool(&self) -> &Pool<Self::Worker>;

    /// [`Handle::preview_with`].
    fn pair_preview<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<&Self::Worker, Error>;

    /// [`Handle::reserve_with`].
    fn pair_reserve<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<Self::Guard, Error>;

    /// [`Handle::reserve_worker`].
    fn pair_reserve_worker(&mut self, worker: &Self::Worker, weight: u32) -> Result<Self::Guard, Error>;

    /// [`Handle::preview_ranked`].
    fn pair_preview_ranked<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<(&Self::Worker, u32), Error>;

    /// [`Handle::reserve_rank`].
    fn pair_reserve_rank(
        &mut self,
        worker: &Self::Worker,
        rank: u32,
        weight: u32,
    ) -> Result<Self::Guard, Error>;

    /// [`Handle::preview_ranked`], with the chosen rank's load, read from
    /// the handle's snapshot.
    fn pair_preview_loaded<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<(&Self::Worker, u32, u32), Error>;

    /// [`Pool::in_flight_rank`], through the handle's snapshot (`None` for a
    /// worker that has left it, draining ones included).
    fn pair_rank_load(&mut self, worker: &Self::Worker, rank: u32) -> Option<u32>;
}

/// A reservation one side of a pair holds: [`Reservation`] or
/// [`OwnedReservation`]. Sealed; its methods are the reservations' own.
pub trait PairGuard: sealed::Sealed {
    /// The worker type.
    type Worker;
    /// The worker booked.
    fn worker(&self) -> &Self::Worker;
    /// Its data-parallel rank booked ([`Reservation::rank`]).
    fn rank(&self) -> u32;
    /// The load held.
    fn weight(&self) -> u32;
    /// [`Reservation::release_part`].
    fn release_part(&mut self, n: u32) -> u32;
    /// [`Reservation::add_charge`].
    fn add_charge(&mut self, n: u32) -> Result<(), Error>;
}

impl<W: Clone + Eq + Hash + Send + Sync> sealed::Sealed for Handle<'_, W> {}
impl<W: Clone + Eq + Hash + Send + Sync> sealed::Sealed for OwnedHandle<W> {}
impl<W> sealed::Sealed for Reservation<'_, W> {}
impl<W> sealed::Sealed for OwnedReservation<W> {}

/// The body of [`PairHandle`] for a handle whose bookings are `$guard`: each
/// method the handle's own.
macro_rules! forward_pair_handle {
    ($guard:ty) => {
        type Worker = W;
        type Guard = $guard;

        fn pair_pool(&self) -> &Pool<W> {
            self.pool()
        }

        #[inline]
        fn pair_preview<S: Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &Request<'_>,
        ) -> Result<&W, Error> {
            self.preview_with(selector, request)
        }

        // Always, and the booking inlined too: a call here cost a pair about
        // 18 instructions a side in register saves alone (the gate's `pair_*`).
        #[inline(always)]
        fn pair_reserve<S: Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &Request<'_>,
        ) -> Result<$guard, Error> {
            self.reserve_inlined(selector, request)
        }

        fn pair_reserve_worker(&mut self, worker: &W, weight: u32) -> Result<$guard, Error> {
            self.reserve_worker(worker, weight)
        }

        #[inline]
        fn pair_preview_ranked<S: Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &Request<'_>,
        ) -> Result<(&W, u32), Error> {
            self.preview_ranked(selector, request)
        }

        fn pair_reserve_rank(&mut self, worker: &W, rank: u32, weight: u32) -> Result<$guard, Error> {
            self.reserve_rank(worker, rank, weight)
        }

        fn pair_preview_loaded<S: Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &Request<'_>,
        ) -> Result<(&W, u32, u32), Error> {
            self.preview_loaded(selector, request)
        }

        fn pair_rank_load(&mut self, worker: &W, rank: u32) -> Option<u32> {
            self.rank_load(worker, rank)
        }
    };
}

impl<'p, W: Clone + Eq + Hash + Send + Sync> PairHandle for Handle<'p, W> {
    forward_pair_handle!(Reservation<'p, W>);
}

impl<W: Clone + Eq + Hash + Send + Sync> PairHandle for OwnedHandle<W> {
    forward_pair_handle!(OwnedReservation<W>);
}

impl<W: Clone + Eq + Hash + Send + Sync> PairGuard for Reservation<'_, W> {
    type Worker = W;
    fn worker(&self) -> &W {
        Reservation::worker(self)
    }
    fn rank(&self) -> u32 {
        Reservation::rank(self)
    }
    fn weight(&self) -> u32 {
        Reservation::weight(self)
    }
    #[inline]
    fn release_part(&mut self, n: u32) -> u32 {
        Reservation::release_part(self, n)
    }
    fn add_charge(&mut self, n: u32) -> Result<(), Error> {
        Reservation::add_charge(self, n)
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> PairGuard for OwnedReservation<W> {
    type Worker = W;
    fn worker(&self) -> &W {
        OwnedReservation::worker(self)
    }
    fn rank(&self) -> u32 {
        OwnedReservation::rank(self)
    }
    fn weight(&self) -> u32 {
        OwnedReservation::weight(self)
    }
    #[inline]
    fn release_part(&mut self, n: u32) -> u32 {
        OwnedReservation::release_part(self, n)
    }
    fn add_charge(&mut self, n: u32) -> Result<(), Error> {
        OwnedReservation::add_charge(self, n)
    }
}
