use super::Queue;
use super::holder::QueueRef;
use crate::storage::Booked;
use core::fmt;

/// An admitted request's booking: a reservation whose release (on drop)
/// also admits the next waiters of its queue. [`Admitted`] borrows the
/// queue; [`OwnedAdmitted`] shares it (`'static + Send`, for a spawned task).
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
#[must_use = "dropping an admission releases its load at once and admits the next waiter; hold it while the request is in flight"]
pub struct AdmittedOf<Q: QueueRef> {
    queue: Q,
    /// `None` only once taken by `into_reservation`.
    reservation: Option<Q::Reservation>,
}

/// An admission that borrows its queue, holding a [`Reservation`](crate::Reservation).
pub type Admitted<'q, W, S> = AdmittedOf<&'q Queue<W, S>>;

/// An admission that shares its queue (from
/// [`Queue::enqueue_owned`]), holding an [`OwnedReservation`](crate::OwnedReservation):
/// `'static + Send`, so it moves into a spawned task and admits the next
/// waiters from wherever it drops.
pub type OwnedAdmitted<W, S> = AdmittedOf<std::sync::Arc<Queue<W, S>>>;

impl<Q: QueueRef> AdmittedOf<Q> {
    pub(crate) fn new(queue: Q, booked: Booked<Q::Worker>) -> Self {
        let reservation = Some(queue.hold(booked));
        Self { queue, reservation }
    }

    fn held(&self) -> &Q::Reservation {
        self.reservation
            .as_ref()
            .unwrap_or_else(|| unreachable!("workerpick: taken only by into_reservation"))
    }

    /// The booking (for its rank, added charges). A partial release through
    /// it admits nobody: use [`release_part`](Self::release_part), or
    /// [`Queue::pump`] after it.
    pub fn reservation(&mut self) -> &mut Q::Reservation {
        self.reservation
            .as_mut()
            .unwrap_or_else(|| unreachable!("workerpick: taken only by into_reservation"))
    }

    /// The worker the request is booked on.
    pub fn worker(&self) -> &Q::Worker {
        Q::worker(self.held())
    }

    /// The load booked.
    pub fn weight(&self) -> u32 {
        Q::weight(self.held())
    }

    /// Gives back `n` of the booked load now and keeps the rest (see
    /// [`Reservation::release_part`](crate::Reservation::release_part)), then admits waiters into the room it
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
        let given = Q::release_part(self.reservation(), n);
        if given > 0 {
            self.queue.queue().after_release();
        }
        given
    }

    /// The plain reservation; its release no longer admits anyone, so call
    /// [`Queue::pump`] after it.
    pub fn into_reservation(mut self) -> Q::Reservation {
        self.reservation
            .take()
            .unwrap_or_else(|| unreachable!("workerpick: taken only here, once"))
    }
}

impl<Q: QueueRef> Drop for AdmittedOf<Q> {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            drop(reservation);
            self.queue.queue().after_release();
        }
    }
}

impl<Q: QueueRef> fmt::Debug for AdmittedOf<Q>
where
    Q::Worker: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admitted")
            .field("worker", self.worker())
            .field("weight", &self.weight())
            .finish()
    }
}
