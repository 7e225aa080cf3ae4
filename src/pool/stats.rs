//! What [`Pool::stats`](crate::Pool::stats) reports.

/// Counters describing a pool's storage, from [`Pool::stats`](crate::Pool::stats).
///
/// Every allocated slot is held (by a worker in the set or a draining one;
/// a worker with data-parallel ranks holds one per rank) or free:
///
/// ```
/// use workerpick::Pool;
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let r = pool.reserve_worker(&"b", 1).unwrap();
/// pool.remove(&"b").unwrap(); // drains while `r` lives
/// let s = pool.stats();
/// assert_eq!((s.workers, s.draining, s.capacity), (2, 1, 3));
/// assert_eq!(s.capacity, s.workers + s.draining + s.free_slots); // no ranks here
/// assert_eq!(s.capacity, s.slots + s.free_slots);
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
    /// Slots held by the workers in the set and the draining ones: one per
    /// data-parallel rank (so `workers + draining` in a pool without ranks).
    pub slots: usize,
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
