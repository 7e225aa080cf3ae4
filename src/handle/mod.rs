//! The pick entry points: a [`Handle`] per router thread, which caches the
//! snapshot, and the pool's own picks, which load it on every call. Each
//! goes down to `booking` and wraps the booking it gets back in a
//! [`Reservation`].

mod picking;

use crate::pool::Pool;
use crate::reservation::Reservation;
use crate::rng::Rng;
use crate::snapshot::Snapshot;
use crate::sync::Cached;
use core::hash::Hash;

/// The pick methods every handle kind shares: each loads the handle's cached
/// snapshot and calls into `booking` on the raw pool that `self.$owner`
/// (the pool, or the owned handle's anchor) reaches, wrapping a booking as
/// `$reservation::new(&self.$owner, booked)`. A handle kind holds `cache`
/// (its snapshot cache), `rng` and the owner field; the owner has a
/// `raw()` method.
macro_rules! thin_picks {
    ($reservation:ty, $owner:ident) => {
        /// This handle's random source.
        pub fn rng(&mut self) -> &mut $crate::rng::Rng {
            &mut self.rng
        }

        /// Picks a worker without booking load.
        #[inline]
        pub fn select<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
        ) -> Result<&W, $crate::error::Error> {
            self.pick(
                selector,
                &$crate::request::DEFAULT_REQUEST,
                $crate::context::Intent::Select,
            )
        }

        /// Picks a worker for `request` without booking load.
        #[inline]
        pub fn select_with<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<&W, $crate::error::Error> {
            self.pick(selector, request, $crate::context::Intent::Select)
        }

        /// Says which worker a pick would choose now, changing nothing.
        #[inline]
        pub fn preview<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
        ) -> Result<&W, $crate::error::Error> {
            self.pick(
                selector,
                &$crate::request::DEFAULT_REQUEST,
                $crate::context::Intent::Preview,
            )
        }

        /// Picks a worker and books one unit of load on it.
        #[inline]
        pub fn reserve<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
        ) -> Result<$reservation, $crate::error::Error> {
            self.reserve_with(selector, &$crate::request::DEFAULT_REQUEST)
        }

        /// [`select_with`](Self::select_with), naming the data-parallel rank
        /// picked too (0 for a worker without ranks).
        #[inline]
        pub fn select_ranked<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<(&W, u32), $crate::error::Error> {
            self.pick_ranked(selector, request, $crate::context::Intent::Select)
        }

        /// [`preview`](Self::preview) for `request`, naming the
        /// data-parallel rank too (0 for a worker without ranks).
        #[inline]
        pub fn preview_ranked<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<(&W, u32), $crate::error::Error> {
            self.pick_ranked(selector, request, $crate::context::Intent::Preview)
        }

        /// [`preview`](Self::preview) for `request`.
        #[inline]
        pub fn preview_with<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<&W, $crate::error::Error> {
            self.pick(selector, request, $crate::context::Intent::Preview)
        }

        /// Picks a worker for `request` and books `request`'s weight on it.
        #[inline]
        pub fn reserve_with<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<$reservation, $crate::error::Error> {
            self.reserve_inlined(selector, request)
        }

        /// [`reserve_with`](Self::reserve_with), inlined wherever it is called:
        /// for a caller that books twice in a row (a pair), where a call's own
        /// cost shows beside the bookings.
        #[inline(always)]
        pub(crate) fn reserve_inlined<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<$reservation, $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            let owner = &self.$owner;
            $crate::booking::reserve(
                owner.raw(),
                snap,
                &mut self.rng,
                request,
                selector,
                |booked| <$reservation>::new(owner, booked),
            )
        }

        /// Books `weight` on `worker` itself (a pinned target): on its
        /// least-loaded rank, if it has ranks (see [`Pool::reserve_worker`](crate::Pool::reserve_worker)).
        pub fn reserve_worker(
            &mut self,
            worker: &W,
            weight: u32,
        ) -> Result<$reservation, $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            let booked = $crate::booking::reserve_worker(self.$owner.raw(), snap, worker, weight)?;
            Ok(<$reservation>::new(&self.$owner, booked))
        }

        /// Books `weight` on rank `rank` of `worker` (see [`Pool::reserve_rank`](crate::Pool::reserve_rank)).
        pub fn reserve_rank(
            &mut self,
            worker: &W,
            rank: u32,
            weight: u32,
        ) -> Result<$reservation, $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            let booked = $crate::booking::reserve_rank(self.$owner.raw(), snap, worker, rank, weight)?;
            Ok(<$reservation>::new(&self.$owner, booked))
        }

        /// [`preview_ranked`](Self::preview_ranked), with the load of the rank
        /// chosen (`booking::preview_loaded`).
        pub(crate) fn preview_loaded<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
        ) -> Result<(&W, u32, u32), $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            $crate::booking::preview_loaded(self.$owner.raw(), snap, &mut self.rng, request, selector)
        }

        /// The load booked on rank `rank` of `worker`, through the cached
        /// snapshot; `None` when the set has no such rank now.
        pub(crate) fn rank_load(&mut self, worker: &W, rank: u32) -> Option<u32> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            $crate::booking::rank_load(self.$owner.raw(), snap, worker, rank)
        }

        fn pick_ranked<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
            intent: $crate::context::Intent,
        ) -> Result<(&W, u32), $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            let raw = self.$owner.raw();
            let slot = $crate::booking::choose(raw, snap, &mut self.rng, request, selector, intent)?;
            Ok((snap.key(slot), raw.slots.keys.rank(slot)))
        }

        #[inline(always)]
        fn pick<S: $crate::selectors::Selector + ?Sized>(
            &mut self,
            selector: &S,
            request: &$crate::request::Request<'_>,
            intent: $crate::context::Intent,
        ) -> Result<&W, $crate::error::Error> {
            let snap: &$crate::snapshot::Snapshot<W> = self.cache.load();
            let slot = $crate::booking::choose(
                self.$owner.raw(),
                snap,
                &mut self.rng,
                request,
                selector,
                intent,
            )?;
            Ok(snap.key(slot))
        }
    };
}
pub(crate) use thin_picks;

/// A router thread's (or task's) view of a [`Pool`]: it caches the current
/// snapshot and owns a random source, so a pick costs one pointer comparison
/// to revalidate the cache and no shared write but the booking itself.
///
/// The cache is checked on every pick: a worker removed before a pick starts
/// is never chosen by it.
///
/// ```
/// use workerpick::{LeastLoaded, Pool, PowerOfTwo, Rng};
/// let pool = Pool::from_workers(0u64..16).unwrap();
/// std::thread::scope(|s| {
///     for t in 0..2 {
///         let pool = &pool;
///         s.spawn(move || {
///             let mut h = pool.handle_with_rng(Rng::with_seed(t));
///             for _ in 0..100 {
///                 let r = h.reserve(&PowerOfTwo::new()).unwrap();
///                 assert!(*r.worker() < 16);
///             }
///         });
///     }
/// });
/// assert!(pool.loads().iter().all(|&(_, load)| load == 0));
/// ```
pub struct Handle<'p, W> {
    pool: &'p Pool<W>,
    cache: Cached<'p, Snapshot<W>>,
    rng: Rng,
}

impl<'p, W: Clone + Eq + Hash + Send + Sync> Handle<'p, W> {
    pub(crate) fn new(pool: &'p Pool<W>, rng: Rng) -> Self {
        Self {
            pool,
            cache: Cached::new(pool.raw.published()),
            rng,
        }
    }

    /// The pool this handle picks from.
    pub fn pool(&self) -> &'p Pool<W> {
        self.pool
    }

    thin_picks!(Reservation<'p, W>, pool);

    /// The snapshot this handle picks from now, revalidated as a pick does
    /// (a session binding checks its worker in it).
    #[cfg(any(feature = "sessions", loom))]
    #[inline(always)]
    pub(crate) fn snapshot(&mut self) -> &Snapshot<W> {
        self.cache.load()
    }
}
