//! The [`Pool`]: the worker set, its storage and its writer, and its methods,
//! a file per concern (each an `impl` block with a heading of its own in the
//! docs): building, membership, picking, fleet controls, reports and replica
//! sync, latency, affinity, inspection.

mod affinity;
mod build;
mod fleet;
mod inputs;
mod inspect;
mod latency;
mod members;

mod reports;
mod stats;

pub use stats::PoolStats;

use crate::raw::RawPool;
use crate::snapshot::Snapshot;
use crate::sync::Guard;
use core::fmt;
use core::hash::Hash;

/// A set of workers with per-worker in-flight counts, shared by every router
/// thread.
///
/// Picks and releases take no lock. Through a [`Handle`](crate::Handle) they never allocate:
/// its picks lend the worker (`&W`). The `select` and `preview` methods here
/// return the worker by value, a clone, which allocates if `W`'s `Clone` does
/// (a `String` key); `reserve` allocates nothing either way, its guard lends
/// the worker. Membership changes
/// (`insert`, `remove`, `replace`, `set_info`) are serialised among
/// themselves and publish a new immutable snapshot; a pick that starts after
/// one returns sees it. In-flight counts belong to a worker, not to a
/// snapshot: they survive changes to the set, a removed worker keeps its load
/// until its last reservation drops, and re-adding it shows that load.
///
/// The `select`/`reserve`/`preview` methods here load the snapshot on every
/// call; a router thread should keep a [`Handle`](crate::Handle), which caches it.
///
/// ```
/// use workerpick::{LeastLoaded, Pool};
/// let pool = Pool::from_workers(["gpu-0", "gpu-1"]).unwrap();
/// let r = pool.reserve(&LeastLoaded::new()).unwrap();
/// pool.remove(r.worker()).unwrap();          // removed while in flight
/// assert!(!pool.contains(r.worker()));
/// assert_eq!(pool.in_flight(r.worker()), Some(1)); // still draining
/// let w = *r.worker();
/// drop(r);
/// assert_eq!(pool.in_flight(&w), None);      // gone for good
/// ```
pub struct Pool<W> {
    pub(crate) raw: RawPool<W>,
}

impl<W> Pool<W> {
    #[inline(always)]
    pub(crate) fn raw(&self) -> &RawPool<W> {
        &self.raw
    }

    pub(crate) fn id(&self) -> u64 {
        self.raw.id
    }

    #[inline(always)]
    pub(crate) fn snapshot(&self) -> Guard<Snapshot<W>> {
        self.raw.snapshot()
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> Default for Pool<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Clone + Eq + Hash + Send + Sync + fmt::Debug> fmt::Debug for Pool<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.loads())
            .field("scan", &self.raw.backend.backend())
            .finish()
    }
}
