use crate::pick;
use crate::selector::Intent;
use crate::snapshot::Snapshot;
use crate::sync::Cached;
use crate::{Error, Pool, Request, Reservation, Rng, Selector};
use core::hash::Hash;

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
            cache: Cached::new(pool.published()),
            rng,
        }
    }

    /// The pool this handle picks from.
    pub fn pool(&self) -> &'p Pool<W> {
        self.pool
    }

    /// This handle's random source.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Picks a worker without booking load.
    #[inline]
    pub fn select<S: Selector + ?Sized>(&mut self, selector: &S) -> Result<&W, Error> {
        self.pick(selector, &crate::request::DEFAULT_REQUEST, Intent::Select)
    }

    /// Picks a worker for `request` without booking load.
    #[inline]
    pub fn select_with<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<&W, Error> {
        self.pick(selector, request, Intent::Select)
    }

    /// Says which worker a pick would choose now, changing nothing.
    #[inline]
    pub fn preview<S: Selector + ?Sized>(&mut self, selector: &S) -> Result<&W, Error> {
        self.pick(selector, &crate::request::DEFAULT_REQUEST, Intent::Preview)
    }

    /// [`preview`](Self::preview) for `request`.
    #[inline]
    pub fn preview_with<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<&W, Error> {
        self.pick(selector, request, Intent::Preview)
    }

    /// Picks a worker and books one unit of load on it.
    #[inline]
    pub fn reserve<S: Selector + ?Sized>(&mut self, selector: &S) -> Result<Reservation<'p, W>, Error> {
        self.reserve_with(selector, &crate::request::DEFAULT_REQUEST)
    }

    /// Picks a worker for `request` and books `request`'s weight on it.
    #[inline]
    pub fn reserve_with<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<Reservation<'p, W>, Error> {
        let snap = self.cache.load();
        pick::reserve(self.pool, snap, &mut self.rng, request, selector)
    }

    /// Books `weight` on `worker` itself (a pinned target).
    pub fn reserve_worker(&mut self, worker: &W, weight: u32) -> Result<Reservation<'p, W>, Error> {
        let snap = self.cache.load();
        pick::reserve_worker(self.pool, snap, worker, weight)
    }

    #[inline(always)]
    fn pick<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
        intent: Intent,
    ) -> Result<&W, Error> {
        let snap = self.cache.load();
        let slot = pick::choose(self.pool, snap, &mut self.rng, request, selector, intent)?;
        Ok(snap.key(slot))
    }
}
