//! What one router tells the others: what it has booked, and (feature
//! `sessions`) where its sessions are bound.

/// What a router has booked, per worker: made by [`Pool::summary`], applied on
/// another replica's pool by [`Pool::apply_summary`]. Serializable with the `serde`
/// feature, to carry over any message bus.
///
/// It holds absolute loads, not changes since the last one: applying a summary
/// *replaces* what the same router reported before, so a summary lost, delivered
/// twice or late (an older one is recognised by its number and ignored) leaves no
/// drift behind, and a replica that joins late is up to date after one message.
/// Workers with nothing booked are left out, so an idle router sends almost nothing.
/// With the `sessions` feature, `Sessions::summary` also carries the router's
/// session bindings ([`bindings`](Self::bindings)), which `Sessions::apply_summary`
/// imports on the other replicas, so they send each session to the same worker.
///
/// [`Pool::summary`]: crate::Pool::summary
/// [`Pool::apply_summary`]: crate::Pool::apply_summary
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Summary<W> {
    pub(crate) origin: u64,
    pub(crate) seq: u64,
    pub(crate) loads: Vec<(W, u32)>,
    /// The ranks of workers with data-parallel ranks: left out of a summary
    /// without them, so that one reads (and serializes) as before. Defaulted
    /// by `Vec::new`, not `default`: serde bounds the type parameters of a
    /// `default` field by `Default`, and a key type need not be one.
    #[cfg_attr(
        feature = "serde",
        serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")
    )]
    pub(crate) rank_loads: Vec<(W, u32, u32)>,
    /// Left out of the serialised form when empty, and empty when absent
    /// from it: a summary without bindings reads and writes as before they
    /// existed (in self-describing formats such as JSON).
    #[cfg_attr(
        feature = "serde",
        serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")
    )]
    pub(crate) bindings: Vec<SessionBinding<W>>,
    /// The router's admission-queue counters, from
    /// [`Queue::summary`](crate::queue::Queue::summary): absent from a
    /// pool's summary, and then left out of the serialised form, so a
    /// summary without them reads and writes as before.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
    pub(crate) shares: Option<super::Shares>,
}

impl<W> Summary<W> {
    /// The router that made it: a random number drawn when its pool was made.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Its number among that router's summaries, counting from 1.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Every worker without ranks that has load booked, and that load, in
    /// the router's set order.
    pub fn loads(&self) -> &[(W, u32)] {
        &self.loads
    }

    /// Every rank with load booked of a worker with data-parallel ranks:
    /// `(worker, rank, load)`, in the router's set order. Applied per rank,
    /// as [`Pool::report_rank_load`](crate::Pool::report_rank_load) would;
    /// an entry for a rank the worker does not have in the receiving pool is
    /// skipped (replicas should agree on rank counts).
    ///
    /// ```
    /// use workerpick::{Pool, WorkerInfo};
    /// let (a, b) = (Pool::new(), Pool::new());
    /// for pool in [&a, &b] {
    ///     pool.insert_with("node", WorkerInfo::new().ranks(2)).unwrap();
    /// }
    /// let _r = a.reserve_rank(&"node", 1, 3).unwrap();
    /// let summary = a.summary();
    /// assert_eq!(summary.rank_loads(), &[("node", 1, 3)]);
    /// assert!(b.apply_summary(&summary));
    /// assert_eq!((b.reported_rank_load(&"node", 0), b.reported_rank_load(&"node", 1)), (Some(0), Some(3)));
    /// ```
    pub fn rank_loads(&self) -> &[(W, u32, u32)] {
        &self.rank_loads
    }

    /// The fair-share counters of the router's admission queue, if it sent
    /// them ([`Queue::summary`](crate::queue::Queue::summary)).
    pub fn shares(&self) -> Option<&super::Shares> {
        self.shares.as_ref()
    }

    /// The session bindings it carries (feature `sessions`:
    /// `Sessions::summary`); empty from [`Pool::summary`](crate::Pool::summary).
    pub fn bindings(&self) -> &[SessionBinding<W>] {
        &self.bindings
    }
}

/// A session binding as replicas exchange it in a [`Summary`]: the session,
/// the worker it is bound to, and how long it had been idle when the summary
/// was made (so that it expires on the replica that imports it when it
/// would have where it was made).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SessionBinding<W> {
    pub(crate) session: u64,
    pub(crate) worker: W,
    pub(crate) idle_ms: u64,
}

impl<W> SessionBinding<W> {
    /// A binding of `session` to `worker`, idle for `idle` (to import one
    /// that came another way than a summary).
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::replicas::SessionBinding;
    /// let b = SessionBinding::new(7, "w1", Duration::from_millis(1500));
    /// assert_eq!((b.session(), *b.worker(), b.idle()), (7, "w1", Duration::from_millis(1500)));
    /// ```
    pub fn new(session: u64, worker: W, idle: core::time::Duration) -> Self {
        Self {
            session,
            worker,
            idle_ms: u64::try_from(idle.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The session's id (its requests' [`key`](crate::Request::key)).
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The worker it is bound to.
    pub fn worker(&self) -> &W {
        &self.worker
    }

    /// How long it had been idle, to the millisecond.
    pub fn idle(&self) -> core::time::Duration {
        core::time::Duration::from_millis(self.idle_ms)
    }
}
