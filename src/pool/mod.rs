//! The [`Pool`]: the worker set, its storage and its writer, and its methods,
//! a file per concern (each an `impl` block with a heading of its own in the
//! docs): building, membership, picking, fleet controls, reports and replica
//! sync, latency, affinity, inspection.

mod affinity;
mod build;
mod fleet;
mod inspect;
mod latency;
mod members;
mod picking;
mod reports;
mod stats;

pub use stats::PoolStats;

use crate::error::Error;
use crate::fleet::RampClock;
use crate::membership::Writer;
use crate::reports::Reported;
use crate::scan::Kernel;
use crate::snapshot::Snapshot;
use crate::storage::Slots;
use crate::storage::features::Features;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Guard, Mutex, Published, lock};
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
    pub(crate) id: u64,
    pub(crate) slots: Slots<W>,
    current: Published<Snapshot<W>>,
    pub(crate) writer: Mutex<Writer<W>>,
    pub(crate) ramp: RampClock,
    /// `ramp_step` for this key type, callable where `W`'s bounds are not
    /// in scope (the reservation path).
    pub(crate) ramp_step: fn(&Pool<W>),
    pub(crate) backend: Kernel,
    pub(crate) reported: Reported,
    fallbacks: AtomicU64,
}

fn next_pool_id() -> u64 {
    // A process-wide counter (never loom's: it only names pools).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The writer's entry points, for the methods that change the set.
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Runs a change on the writer, then records when slow start is next due
    /// and drops what was kept for workers that left.
    pub(crate) fn write<R>(
        &self,
        change: impl FnOnce(&mut Writer<W>, &Slots<W>, &Published<Snapshot<W>>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut writer = lock(&self.writer);
        let changed = change(&mut writer, &self.slots, &self.current);
        self.set_ramp(writer.ramp_due());
        drop(writer);
        self.forget_departed();
        changed
    }

    /// Records when slow start is next due (`None`: nothing ramps). Under
    /// the writer lock.
    fn set_ramp(&self, due: Option<std::time::Instant>) {
        self.ramp.set(due);
        let features = &self.slots.counters.features;
        features.set(Features::RAMPING, due.is_some());
    }

    /// Publishes the slow-start step that is due, unless a writer holds the
    /// lock (it publishes the step itself). Reservations call it now and then.
    #[cold]
    #[inline(never)]
    pub(crate) fn ramp_step(&self) {
        if !self.ramp.is_due(std::time::Instant::now()) {
            return;
        }
        // A poisoned lock is left to the writers, which recover it.
        if let Ok(mut writer) = self.writer.try_lock() {
            writer.republish(&self.slots, &self.current);
            self.set_ramp(writer.ramp_due());
        }
    }
}

impl<W> Pool<W> {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    #[inline(always)]
    pub(crate) fn snapshot(&self) -> Guard<Snapshot<W>> {
        self.current.load()
    }

    pub(crate) fn published(&self) -> &Published<Snapshot<W>> {
        &self.current
    }

    pub(crate) fn note_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
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
            .field("scan", &self.backend.backend())
            .finish()
    }
}
