use super::Queue;
use crate::reservation::Reservation;
use crate::selectors::Selector;
use crate::storage::Booked;
use core::fmt;
use core::hash::Hash;

/// An admitted request's booking: a [`Reservation`] whose release (on drop)
/// also admits the next waiters of its queue.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::queue::{Entry, Queue, QueueConfig};
/// use workerpick::{LeastLoaded, Pool};
/// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
/// let queue = Queue::new(pool.clone(), LeastLoaded::new(), QueueConfig::new()).unwrap();
/// let admitted = queue.enqueue(Entry::new().weight(3)).unwrap().wait().unwrap();
/// assert_eq!(pool.in_flight(admitted.worker()), Some(3));
/// drop(admitted);
/// assert!(pool.loads().iter().all(|&(_, load)| load == 0));
/// ```
#[must_use = "dropping an Admitted releases its load at once and admits the next waiter; hold it while the request is in flight"]
pub struct Admitted<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> {
    queue: &'q Queue<W, S>,
    /// `None` only once taken by `into_reservation`.
    reservation: Option<Reservation<'q, W>>,
}

impl<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> Admitted<'q, W, S> {
    pub(crate) fn new(queue: &'q Queue<W, S>, booked: Booked<W>) -> Self {
        Self {
            queue,
            reservation: Some(Reservation::new(&queue.pool, booked)),
        }
    }

    /// The booking (for its rank, added charges). A partial release through
    /// it admits nobody: use [`release_part`](Self::release_part), or
    /// [`Queue::pump`] after it.
    pub fn reservation(&mut self) -> &mut Reservation<'q, W> {
        self.reservation
            .as_mut()
            .unwrap_or_else(|| unreachable!("workerpick: taken only by into_reservation"))
    }

    /// The worker the request is booked on.
    pub fn worker(&self) -> &W {
        match &self.reservation {
            Some(r) => r.worker(),
            None => unreachable!("workerpick: taken only by into_reservation"),
        }
    }

    /// The load booked.
    pub fn weight(&self) -> u32 {
        self.reservation.as_ref().map_or(0, Reservation::weight)
    }

    /// Gives back `n` of the booked load now and keeps the rest (see
    /// [`Reservation::release_part`]), then admits waiters into the room it
    /// made; returns how much it gave back.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::{LeastLoaded, Pool};
    /// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
    /// let queue = Queue::new(pool, LeastLoaded::new(), QueueConfig::new().in_flight_limit(8)).unwrap();
    /// let mut prompt = queue.enqueue(Entry::new().weight(10)).unwrap().wait().unwrap();
    /// let mut next = queue.enqueue(Entry::new().weight(4)).unwrap();
    /// assert!(next.try_admit().unwrap().is_none());
    /// assert_eq!(prompt.release_part(9), 9); // the prefill's share, at the first token
    /// assert!(next.try_admit().unwrap().is_some());
    /// ```
    pub fn release_part(&mut self, n: u32) -> u32 {
        let given = self.reservation().release_part(n);
        if given > 0 {
            self.queue.after_release();
        }
        given
    }

    /// The plain reservation; its release no longer admits anyone, so call
    /// [`Queue::pump`] after it.
    pub fn into_reservation(mut self) -> Reservation<'q, W> {
        self.reservation
            .take()
            .unwrap_or_else(|| unreachable!("workerpick: taken only here, once"))
    }
}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> Drop for Admitted<'_, W, S> {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            drop(reservation);
            self.queue.after_release();
        }
    }
}

impl<W: Clone + Eq + Hash + Send + Sync + fmt::Debug, S: Selector> fmt::Debug for Admitted<'_, W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admitted")
            .field("worker", self.worker())
            .field("weight", &self.weight())
            .finish()
    }
}
