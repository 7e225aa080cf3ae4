use super::order::{MAX_CLASSES, MAX_TENANTS};
use crate::error::Error;
use std::time::Duration;

/// How a [`Queue`](super::Queue) is sized and when a worker has room.
///
/// A worker is *saturated* when its in-flight load here reaches
/// `in_flight_limit × capacity weight`, or its reported load reaches
/// `reported_limit`, or its last report is older than `stale_after`; a
/// request waits while every candidate is saturated. With none of them set
/// no worker saturates and every request is admitted at once.
///
/// ```
/// use workerpick::queue::QueueConfig;
/// let config = QueueConfig::new().capacity(256).classes(2).tenants(&[4, 1]).in_flight_limit(8);
/// assert!(config.check().is_ok());
/// assert!(QueueConfig::new().classes(9).check().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct QueueConfig {
    pub(crate) capacity: usize,
    pub(crate) classes: usize,
    pub(crate) weights: Vec<u32>,
    pub(crate) in_flight_limit: Option<u32>,
    pub(crate) reported_limit: Option<u32>,
    pub(crate) stale_after: Option<Duration>,
    pub(crate) aging: Option<u32>,
    pub(crate) shared_fleet: bool,
    pub(crate) share_window: u32,
}

impl QueueConfig {
    /// 1024 waiter slots, one class, one tenant of weight 1, no limit.
    pub fn new() -> Self {
        Self {
            capacity: 1024,
            classes: 1,
            weights: vec![1],
            in_flight_limit: None,
            reported_limit: None,
            stale_after: None,
            aging: None,
            shared_fleet: false,
            share_window: 1 << 16,
        }
    }

    /// How many requests may wait at once; one more is [`QueueError::Full`](super::QueueError::Full).
    /// The slots are allocated once, when the queue is built.
    pub fn capacity(mut self, slots: usize) -> Self {
        self.capacity = slots;
        self
    }

    /// How many strict priority classes, `1..=8`.
    pub fn classes(mut self, classes: usize) -> Self {
        self.classes = classes;
        self
    }

    /// One fair-share weight per tenant (tenant `i` weighs `weights[i]`),
    /// `1..=64` tenants, each weight `>= 1`.
    pub fn tenants(mut self, weights: &[u32]) -> Self {
        self.weights = weights.to_vec();
        self
    }

    /// A worker is saturated at this in-flight load (in the units of the
    /// entries' weights) per unit of its capacity weight.
    pub fn in_flight_limit(mut self, per_capacity: u32) -> Self {
        self.in_flight_limit = Some(per_capacity);
        self
    }

    /// A worker is saturated at this reported load (see
    /// [`Pool::report_load`](crate::Pool::report_load)).
    pub fn reported_limit(mut self, load: u32) -> Self {
        self.reported_limit = Some(load);
        self
    }

    /// A worker that has not reported its own load (see
    /// [`Pool::report_load`](crate::Pool::report_load); a report of 0 counts)
    /// for `age`, or never since it joined, is saturated: its load is not
    /// known. A pump after the next report sees it again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::{LeastLoaded, Pool};
    /// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
    /// let config = QueueConfig::new().stale_after(Duration::from_secs(1));
    /// let queue = Queue::new(pool.clone(), LeastLoaded::new(), config).unwrap();
    /// let mut t = queue.enqueue(Entry::new()).unwrap();
    /// assert!(t.try_admit().unwrap().is_none()); // "a" never reported
    /// pool.report_load(&"a", 0);
    /// assert_eq!(queue.pump(), 1);
    /// assert!(t.try_admit().unwrap().is_some());
    /// ```
    pub fn stale_after(mut self, age: Duration) -> Self {
        self.stale_after = Some(age);
        self
    }

    /// Orders each class shortest uncached first instead of by tenants'
    /// shares: the least `uncached − aging × (milliseconds waited)` leaves
    /// first, so a long prompt waits behind short ones for at most its
    /// length over `aging` milliseconds more than they do. Tenants are not
    /// told apart in this order.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::{LeastLoaded, Pool};
    /// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
    /// let config = QueueConfig::new().in_flight_limit(1).shortest_first(1);
    /// let queue = Queue::new(pool, LeastLoaded::new(), config).unwrap();
    /// let held = queue.enqueue(Entry::new()).unwrap().wait().unwrap();
    /// let mut long = queue.enqueue(Entry::new().weight(4000)).unwrap();
    /// let mut short = queue.enqueue(Entry::new().weight(40)).unwrap();
    /// drop(held);
    /// assert!(long.try_admit().unwrap().is_none());
    /// assert!(short.try_admit().unwrap().is_some());
    /// ```
    pub fn shortest_first(mut self, aging: u32) -> Self {
        self.aging = Some(aging);
        self
    }

    /// Counts, toward the in-flight limit, a worker's reported load beside
    /// this router's bookings: what peer routers booked on it (their
    /// summaries, applied with [`Queue::apply_summary`](super::Queue::apply_summary))
    /// and its own report. Routers sharing a fleet then share its limit
    /// instead of each filling it.
    pub fn shared_fleet(mut self) -> Self {
        self.shared_fleet = true;
        self
    }

    /// With peers' counters applied (see
    /// [`Queue::apply_summary`](super::Queue::apply_summary)): how far, in
    /// uncached tokens per unit of tenant weight, a tenant idle for a while
    /// may lag the most-served waiting tenant and still gain (it banks at
    /// most this), and sixteen times the lead past which a tenant is held
    /// back for a behind one waiting at a peer. Default 65 536.
    pub fn share_window(mut self, tokens: u32) -> Self {
        self.share_window = tokens.max(16);
        self
    }

    /// Refuses a configuration out of range.
    pub fn check(&self) -> Result<(), Error> {
        let bad = |what, why: &str| {
            Err(Error::InvalidConfig {
                what,
                why: why.to_string(),
            })
        };
        if self.capacity == 0 || self.capacity >= super::order::NONE as usize {
            return bad("capacity", "must be at least 1 and below u32::MAX");
        }
        if !(1..=MAX_CLASSES).contains(&self.classes) {
            return bad("classes", "must be 1 to 8");
        }
        if !(1..=MAX_TENANTS).contains(&self.weights.len()) {
            return bad("tenants", "must be 1 to 64");
        }
        if self.weights.contains(&0) {
            return bad("tenants", "every weight must be at least 1");
        }
        Ok(())
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self::new()
    }
}
