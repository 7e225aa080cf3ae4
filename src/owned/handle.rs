use super::Anchor;
use super::reservation::OwnedReservation;
use crate::handle::thin_picks;
use crate::pool::Pool;
use crate::rng::Rng;
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

    thin_picks!(OwnedReservation<W>, anchor);
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
