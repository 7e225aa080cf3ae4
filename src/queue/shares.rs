//! Fair shares across replicas: each router's served counters travel in its
//! [`Summary`](crate::Summary), and a queue that has applied its peers'
//! orders each class by the fleet-wide counters instead of its own alone.
//! See [`docs::admission`](crate::docs::admission), "Replicas".

use super::order::Order;
use std::time::{Duration, Instant};

/// One router's fair-share counters, as its [`Queue::summary`](super::Queue::summary)
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

/// The peers' latest counters, by origin, with when they came.
#[derive(Default)]
pub(crate) struct Peers {
    peers: Vec<(u64, Instant, Shares)>,
    /// How long a peer's counters count (the pool's report age limit).
    max_age: Duration,
}

impl Peers {
    pub(crate) fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// Replaces what `origin` sent before with `shares` (reusing its buffers),
    /// and forgets peers silent for longer than `max_age`.
    pub(crate) fn apply(&mut self, origin: u64, shares: &Shares, now: Instant, max_age: Duration) {
        self.max_age = max_age;
        self.peers
            .retain(|(o, at, _)| *o == origin || now.saturating_duration_since(*at) < max_age);
        match self.peers.iter_mut().find(|(o, ..)| *o == origin) {
            Some((_, at, old)) => {
                *at = now;
                old.clone_from(shares);
            }
            None => self.peers.push((origin, now, shares.clone())),
        }
    }

    /// Whether any live peer has waiters (then a newcomer queues rather
    /// than book past them).
    pub(crate) fn any_waiting(&self, now: Instant) -> bool {
        self.live(now).any(|s| s.waiting.iter().any(|&bits| bits != 0))
    }

    fn live(&self, now: Instant) -> impl Iterator<Item = &Shares> {
        self.peers
            .iter()
            .filter(move |(_, at, _)| now.saturating_duration_since(*at) < self.max_age)
            .map(|(_, _, s)| s)
    }

    /// The tenant of `class` to admit next by the fleet-wide counters, or
    /// `None` to hold the class back: a tenant waiting at a peer is behind
    /// every local one by more than `slack`, so that peer should take the
    /// room. Each tenant's service is its uncached tokens over its weight,
    /// summed over this router (`order`) and its live peers, and lifted to
    /// at least the most-served waiting tenant's less `window` (an idle
    /// tenant banks at most `window`).
    pub(crate) fn choose(
        &self,
        order: &Order,
        class: usize,
        now: Instant,
        window: u128,
        slack: u128,
        served: impl Fn(usize) -> u64,
    ) -> Option<usize> {
        let tenants = order.tenants();
        let local = order.active(class);
        let mut waiting = local;
        let mut norm = [0u128; super::order::MAX_TENANTS];
        for shares in self.live(now).filter(|s| s.tenants as usize == tenants) {
            waiting |= shares.waiting.get(class).copied().unwrap_or(0);
            for (tenant, n) in norm.iter_mut().enumerate().take(tenants) {
                *n += u128::from(shares.served(class, tenant));
            }
        }
        for (tenant, n) in norm.iter_mut().enumerate().take(tenants) {
            *n = order.normalized(*n + u128::from(served(tenant)), tenant);
        }
        let bits = |mask: u64| (0..tenants).filter(move |&t| (mask >> t) & 1 == 1);
        let top = bits(waiting).map(|t| norm[t]).max()?;
        let lifted = |t: usize| norm[t].max(top.saturating_sub(window));
        let least = bits(waiting).map(lifted).min()?;
        let (chosen, at) = bits(local).map(|t| (t, lifted(t))).min_by_key(|&(t, n)| (n, t))?;
        (at <= least + slack).then_some(chosen)
    }
}
