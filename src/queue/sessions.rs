//! Session bindings through the queue (feature `sessions`): a request with
//! a key books on the worker its session is bound to while that worker has
//! room, and the table learns where the queue booked the others.

use super::Queue;
use crate::affinity::binding::{self, Outcome, Target};
use crate::affinity::sessions::Sessions;
use crate::booking;
use crate::error::Error;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::Selector;
use crate::snapshot::Snapshot;
use crate::storage::Booked;
use core::hash::Hash;
use std::sync::Arc;

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> Queue<W, S> {
    /// Books keyed requests by `sessions`' bindings, as
    /// [`Sessions::reserve`] does for plain picks, under the queue's
    /// saturation rule: a request whose session is bound books on that
    /// worker while it has room (however loaded the others are). When the
    /// bound worker is saturated, a [`Soft`](crate::sessions::Stickiness::Soft)
    /// session books where the selector and the room say and moves there
    /// (waiting only if no worker has room); a
    /// [`Hard`](crate::sessions::Stickiness::Hard) one waits for its worker,
    /// holding its class behind it, as the order is strict. A bound worker
    /// that left (or is draining, unhealthy, or outside the request's mask)
    /// drops the binding: a soft session binds anew where it is booked, a
    /// hard one fails with [`Error::SessionWorkerGone`] (as
    /// [`QueueError::Pick`](super::QueueError::Pick)). Requests without a
    /// key book as before. The table can be the one the router's plain
    /// picks use.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::sessions::{Sessions, Stickiness};
    /// use workerpick::{LeastLoaded, Pool};
    ///
    /// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
    /// let sessions = Arc::new(Sessions::new(Duration::from_secs(600), 1000, Stickiness::Soft));
    /// let config = QueueConfig::new().in_flight_limit(2);
    /// let queue = Queue::new(pool, LeastLoaded::new(), config).unwrap().with_sessions(sessions);
    /// let chat = || Entry::new().key(7);
    ///
    /// let first = queue.enqueue(chat()).unwrap().wait().unwrap();
    /// let home = *first.worker();
    /// // Bound: the next turn goes home, though the other worker is idle.
    /// let second = queue.enqueue(chat()).unwrap().wait().unwrap();
    /// assert_eq!(*second.worker(), home);
    /// // Home is at its limit: the session moves where there is room.
    /// let third = queue.enqueue(chat()).unwrap().wait().unwrap();
    /// assert_ne!(*third.worker(), home);
    /// let moved = *third.worker();
    /// drop((first, second, third));
    /// assert_eq!(*queue.enqueue(chat()).unwrap().wait().unwrap().worker(), moved);
    /// ```
    pub fn with_sessions(mut self, sessions: Arc<Sessions>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// [`book`](Self::book) for a request of session `key`.
    pub(super) fn book_bound(
        &self,
        sessions: &Sessions,
        key: u64,
        snap: &Snapshot<W>,
        rng: &mut Rng,
        request: &Request<'_>,
    ) -> Option<Result<Booked<W>, Error>> {
        let pool = &*self.pool;
        let target = sessions.bound(key, pool);
        let mut outcome = Outcome::default();
        if let Some(target) = target {
            match binding::available(pool, snap, request, target) {
                Some(slot) => {
                    booking::duties(&pool.raw, pool.raw.slots.counters.features.get());
                    let booked = match booking::book(&pool.raw, snap, slot, request.weight) {
                        Ok(booked) => booked,
                        Err(e) => return Some(Err(e)),
                    };
                    if let Some(kept) = self.kept(snap, booked) {
                        return Some(Ok(kept));
                    }
                    if sessions.is_hard() {
                        return None;
                    }
                }
                None => {
                    outcome.gone = true;
                    if sessions.is_hard() {
                        sessions.settle(key, Some(target), outcome, pool);
                        return Some(Err(Error::SessionWorkerGone));
                    }
                }
            }
        }
        let booked = self.book_any(snap, rng, request);
        if let Some(Ok(b)) = &booked {
            let slot = b.slot();
            let generation = snap.view.gens.get(slot as usize).copied().unwrap_or(0);
            outcome.chosen = Some(Target::new(slot, generation));
        }
        sessions.settle(key, target, outcome, pool);
        booked
    }
}
