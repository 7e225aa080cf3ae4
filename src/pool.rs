use crate::device::WorkerInfo;
use crate::error::Error;
use crate::fleet::RampClock;
use crate::membership::Writer;
use crate::reports::Reported;
use crate::scan::{Backend, Kernel};
use crate::snapshot::{Snapshot, padded};
use crate::storage::{DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT, Slots};
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

/// Counters describing a pool's storage, from [`Pool::stats`].
///
/// Every allocated slot is a member's, a draining worker's or free:
///
/// ```
/// use workerpick::Pool;
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let r = pool.reserve_worker(&"b", 1).unwrap();
/// pool.remove(&"b").unwrap(); // drains while `r` lives
/// let s = pool.stats();
/// assert_eq!((s.workers, s.draining, s.capacity), (2, 1, 3));
/// assert_eq!(s.capacity, s.workers + s.draining + s.free_slots);
/// drop(r);
/// pool.reclaim();
/// assert_eq!((pool.stats().draining, pool.stats().free_slots), (0, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Workers in the set.
    pub workers: usize,
    /// Removed workers whose slot is not reusable yet (load still in flight,
    /// or an old snapshot still names them).
    pub draining: usize,
    /// Slots ready for reuse.
    pub free_slots: usize,
    /// Slots allocated so far (the range the least-loaded scan covers).
    pub capacity: usize,
    /// Reservations that lost the compare-and-swap race too many times in a
    /// row and were booked without validating the load.
    pub fallbacks: u64,
    /// Published snapshots the writer still tracks: the current one and the
    /// older ones some reader (a [`Handle`](crate::Handle), a pick in progress) still holds.
    /// It stays bounded by those, however many changes were made.
    pub snapshots: usize,
}

fn next_pool_id() -> u64 {
    // A process-wide counter (never loom's: it only names pools).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// An empty pool for up to [`DEFAULT_MAX_WORKERS`](crate::DEFAULT_MAX_WORKERS) worker slots.
    pub fn new() -> Self {
        Self::with_limit(crate::sync::MODEL_MAX_WORKERS.unwrap_or(DEFAULT_MAX_WORKERS))
    }

    /// An empty pool for up to `max` worker slots (live workers plus removed
    /// ones still draining), `1..=`[`MAX_WORKERS_LIMIT`](crate::MAX_WORKERS_LIMIT).
    /// The counters for all of them are reserved up front, 4 bytes a slot, so
    /// that they never move.
    ///
    /// ```
    /// use workerpick::{Error, Pool};
    /// let pool = Pool::with_max_workers(2).unwrap();
    /// pool.replace([1, 2]).unwrap();
    /// assert_eq!(pool.insert(3), Err(Error::CapacityExceeded { limit: 2 }));
    /// assert!(Pool::<u32>::with_max_workers(0).is_err());
    /// ```
    pub fn with_max_workers(max: usize) -> Result<Self, Error> {
        if !(1..=MAX_WORKERS_LIMIT).contains(&max) {
            return Err(Error::InvalidConfig {
                what: "max_workers",
                why: format!("must be between 1 and {}, got {max}", MAX_WORKERS_LIMIT),
            });
        }
        Ok(Self::with_limit(max))
    }

    fn with_limit(max: usize) -> Self {
        let mut writer = Writer::new();
        let first = writer.initial();
        let id = next_pool_id();
        Self {
            id,
            slots: Slots::new(max),
            current: Published::new(first),
            writer: Mutex::new(writer),
            backend: Kernel::detect(),
            reported: Reported::new(padded(max), id),
            ramp: RampClock::new(),
            ramp_step: Self::ramp_step,
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Drops the per-block lower bounds that pools with a limit of 1 024
    /// slots or more keep for least-loaded picks: every pick then scans all
    /// the counters. For the benchmarks and tests that compare the two; not
    /// part of the API.
    #[doc(hidden)]
    pub fn with_flat_scan(mut self) -> Self {
        self.slots.counters.drop_summary();
        self
    }

    /// Keeps a latency signal for every worker: a peak-EWMA estimate of its
    /// round trip, fed by [`Timed`](crate::Timed) reservations and read by the
    /// latency-aware modes ([`LatencyPowerOfTwo`](crate::LatencyPowerOfTwo),
    /// [`LatencyLeastLoaded`](crate::LatencyLeastLoaded)). Set before the pool
    /// is shared; a pool without it pays nothing for it. An invalid τ is an
    /// [`Error::InvalidConfig`]. Allocates 8 bytes per worker slot.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::{LatencyConfig, Pool};
    /// let pool = Pool::from_workers([1, 2]).unwrap().with_latency(LatencyConfig::new()).unwrap();
    /// assert_eq!(pool.latency(&1), Some(Duration::from_millis(30))); // the default RTT
    /// assert!(Pool::from_workers([1]).unwrap().with_latency(LatencyConfig::new().tau(Duration::ZERO)).is_err());
    /// ```
    pub fn with_latency(mut self, config: crate::latency::LatencyConfig) -> Result<Self, Error> {
        let table = crate::latency::Latency::new(self.slots.max(), config)?;
        self.slots.counters.set_latency(table);
        Ok(self)
    }

    /// `worker`'s latency estimate now; `None` if it is not in the set or the
    /// pool keeps no latency signal.
    pub fn latency(&self, worker: &W) -> Option<std::time::Duration> {
        let latency = self.slots.counters.latency()?;
        let snap = self.snapshot();
        let &slot = snap.index.get(worker)?;
        Some(latency.estimate_now(slot))
    }

    /// Folds a latency sample into `worker`'s estimate with an explicit
    /// timeline: `rtt` long, ending `at` after a zero of the caller's choosing
    /// (wrapping at 2^32 ms). For discrete-event simulators, whose clock is not
    /// the pool's: every sample and pick must then use that timeline. Not part
    /// of the API.
    #[doc(hidden)]
    pub fn record_latency_at(
        &self,
        worker: &W,
        at: std::time::Duration,
        rtt: std::time::Duration,
        failed: bool,
    ) {
        let Some(latency) = self.slots.counters.latency() else {
            return;
        };
        let snap = self.snapshot();
        if let Some(&slot) = snap.index.get(worker) {
            latency.sample_as(slot, at, rtt, failed);
        }
    }

    /// A pool holding `workers`, in order; a repeated worker is an error.
    pub fn from_workers(workers: impl IntoIterator<Item = W>) -> Result<Self, Error> {
        let pool = Self::new();
        pool.replace(workers)?;
        Ok(pool)
    }

    /// Uses `backend` for the least-loaded scan instead of the detected best
    /// (one the CPU lacks runs the scalar code). Checked against the CPU here,
    /// once: picks run the kernel with no further test.
    pub fn with_scan_backend(mut self, backend: Backend) -> Self {
        self.backend = Kernel::of(backend);
        self
    }

    /// The scan backend in use: [`Backend::Scalar`] where the one asked for
    /// is not available on this CPU.
    pub fn scan_backend(&self) -> Backend {
        self.backend.backend()
    }

    /// Adds `worker` (an accelerator in group 0).
    pub fn insert(&self, worker: W) -> Result<(), Error> {
        self.insert_with(worker, WorkerInfo::default())
    }

    /// Adds `worker` with attributes `info`. A worker removed while its
    /// reservations are alive comes back with that load.
    pub fn insert_with(&self, worker: W, info: WorkerInfo) -> Result<(), Error> {
        let info = Self::checked(info)?;
        self.write(|w, slots, current| w.insert(worker, info, slots, current))
    }

    /// Removes `worker`. Picks that start after this returns never choose it;
    /// its reservations stay valid and its slot is reused after the last one.
    pub fn remove(&self, worker: &W) -> Result<(), Error> {
        self.write(|w, slots, current| w.remove(worker, slots, current))
    }

    /// Replaces the whole set with `workers`, in order. Workers that stay
    /// keep their load and attributes; a repeated worker is an error and
    /// changes nothing.
    pub fn replace(&self, workers: impl IntoIterator<Item = W>) -> Result<(), Error> {
        let workers: Vec<W> = workers.into_iter().collect();
        self.write(|w, slots, current| w.replace(workers, slots, current))
    }

    /// Changes `worker`'s attributes (its device kind, its group, its
    /// capacity): a new snapshot, not a membership change.
    pub fn set_info(&self, worker: &W, info: WorkerInfo) -> Result<(), Error> {
        let info = Self::checked(info)?;
        self.write(|w, slots, current| w.set_info(worker, info, slots, current))
    }

    /// Runs a change on the writer, then records when slow start is next due
    /// and drops what was kept for workers that left.
    pub(crate) fn write<R>(
        &self,
        change: impl FnOnce(&mut Writer<W>, &Slots<W>, &Published<Snapshot<W>>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut writer = lock(&self.writer);
        let changed = change(&mut writer, &self.slots, &self.current);
        self.ramp.set(writer.ramp_due());
        drop(writer);
        self.forget_departed();
        changed
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
            self.ramp.set(writer.ramp_due());
        }
    }

    /// Reuses the slots of removed workers that have drained; returns how many.
    /// Writers do this on their own; call it to reclaim storage sooner.
    pub fn reclaim(&self) -> usize {
        lock(&self.writer).reclaim(&self.slots)
    }

    /// Number of workers in the set (draining ones included).
    pub fn len(&self) -> usize {
        let snap = self.snapshot();
        snap.view.members.len() + snap.view.draining.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `worker` is in the set.
    pub fn contains(&self, worker: &W) -> bool {
        self.snapshot().index.contains_key(worker)
    }

    /// The in-flight load of `worker`: for a member, and for a removed worker
    /// whose reservations are still alive; `None` otherwise.
    pub fn in_flight(&self, worker: &W) -> Option<u32> {
        let snap = self.snapshot();
        match snap.index.get(worker) {
            Some(&slot) => {
                let booked = self.reported.booked();
                Some(booked.of(slot, self.slots.counters.get(slot)))
            }
            None => lock(&self.writer).draining_load(worker, &self.slots),
        }
    }

    /// The attributes of `worker`, if it is in the set.
    pub fn info(&self, worker: &W) -> Option<WorkerInfo> {
        let snap = self.snapshot();
        snap.index.get(worker).map(|&slot| snap.view.info[slot as usize])
    }

    /// Every worker in the set with its in-flight load: the candidates in set
    /// order, then the draining workers.
    pub fn loads(&self) -> Vec<(W, u32)> {
        let snap = self.snapshot();
        let booked = self.reported.booked();
        snap.view
            .members
            .iter()
            .chain(snap.view.draining.iter())
            .map(|&slot| {
                (
                    snap.key(slot).clone(),
                    booked.of(slot, self.slots.counters.get(slot)),
                )
            })
            .collect()
    }

    /// Storage counters.
    pub fn stats(&self) -> PoolStats {
        let (draining, free_slots, capacity, snapshots) = lock(&self.writer).stats();
        PoolStats {
            workers: self.len(),
            draining,
            free_slots,
            capacity,
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            snapshots,
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
