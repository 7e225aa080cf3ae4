//! What an admission queue tells its peers: its fair-share counters, carried in
//! the replica [`Summary`](super::Summary). The queue (`queue/shares.rs`) fills
//! and reads them; the summary only carries them.

/// One router's fair-share counters, as its [`Queue::summary`](crate::queue::Queue::summary)
/// sends them: per class and tenant, the uncached tokens it has admitted
/// (absolute, since it started: applying a later one replaces the earlier,
/// so a lost or repeated summary leaves no drift), and per class the
/// tenants that have waiters there now. Admissions booked at once (nobody
/// waiting) count from the queue's first summary: until a router exchanges
/// summaries it pays nothing for them.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::queue::{Entry, Queue, QueueConfig};
/// use workerpick::{LeastLoaded, Pool};
/// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
/// let queue = Queue::new(pool, LeastLoaded::new(), QueueConfig::new().tenants(&[4, 1])).unwrap();
/// queue.summary(); // the first: from here on, at-once admissions count
/// let _admitted = queue.enqueue(Entry::new().tenant(1).weight(300).credit(100)).unwrap().wait().unwrap();
/// let summary = queue.summary();
/// let shares = summary.shares().unwrap();
/// assert_eq!((shares.served(0, 0), shares.served(0, 1)), (0, 200));
/// assert!(!shares.is_waiting(0, 1));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Shares {
    pub(crate) tenants: u32,
    /// `class * tenants + tenant`: uncached tokens admitted.
    pub(crate) served: Vec<u64>,
    /// Per class: the tenants with waiters, one bit each.
    pub(crate) waiting: Vec<u64>,
}

impl Shares {
    /// The uncached tokens the router admitted for `tenant` in `class`; 0
    /// beyond its configuration.
    pub fn served(&self, class: usize, tenant: usize) -> u64 {
        let at = class * self.tenants as usize + tenant;
        if tenant < self.tenants as usize {
            self.served.get(at).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// Whether `tenant` had waiters in `class` at the router.
    pub fn is_waiting(&self, class: usize, tenant: usize) -> bool {
        tenant < 64
            && self
                .waiting
                .get(class)
                .is_some_and(|bits| (bits >> tenant) & 1 == 1)
    }
}
