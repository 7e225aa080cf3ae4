use super::Queue;
use super::admitted::AdmittedOf;
use super::error::QueueError;
use super::holder::QueueRef;
use super::waiter::{Inner, State, Wake};
use crate::storage::Booked;
use crate::sync::atomic::Ordering;
use crate::sync::{lock, thread};
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Instant;

/// A queued request: ask it with [`try_admit`](Self::try_admit), block on
/// it with [`wait`](Self::wait), or `.await` it (any runtime: it wakes
/// through the task's `Waker`).
///
/// Dropping it cancels the request and leaves no trace: it leaves the order
/// without charging its tenant, and a booking made for it meanwhile is
/// given back (and admits the next waiter).
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use workerpick::queue::{Entry, Queue, QueueConfig, QueueError};
/// use workerpick::{LeastLoaded, Pool};
///
/// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
/// let queue = Queue::new(pool.clone(), LeastLoaded::new(), QueueConfig::new().in_flight_limit(1)).unwrap();
/// let held = queue.enqueue(Entry::new()).unwrap().wait().unwrap();
/// let soon = Instant::now() + Duration::from_millis(5);
/// let late = queue.enqueue(Entry::new().deadline(soon)).unwrap();
/// assert_eq!(late.wait().unwrap_err(), QueueError::Timeout);
/// drop(queue.enqueue(Entry::new()).unwrap()); // cancelled
/// assert_eq!((queue.waiting(), pool.in_flight(&"a")), (0, Some(1)));
/// drop(held);
/// ```
///
/// [`Ticket`] borrows its queue; [`OwnedTicket`] (from
/// [`Queue::enqueue_owned`]) shares it and is `'static + Send`: an async
/// server moves it into a spawned task, and its admission,
/// an [`OwnedAdmitted`](super::OwnedAdmitted), with it.
#[must_use = "dropping a ticket cancels the request; wait on it, poll it or await it"]
pub struct TicketOf<Q: QueueRef> {
    /// `None` once the admission took it.
    queue: Option<Q>,
    held: Held<Q::Worker>,
}

/// A ticket that borrows its queue (from [`Queue::enqueue`]).
pub type Ticket<'q, W, S> = TicketOf<&'q Queue<W, S>>;

/// A ticket that shares its queue (from [`Queue::enqueue_owned`]):
/// `'static + Send`, to wait on in a spawned task.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::queue::{Entry, Queue, QueueConfig};
/// use workerpick::{LeastLoaded, Pool};
///
/// let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
/// let queue = Arc::new(Queue::new(pool, LeastLoaded::new(), QueueConfig::new().in_flight_limit(1)).unwrap());
/// let held = queue.enqueue_owned(Entry::new()).unwrap().wait().unwrap();
/// let ticket = queue.enqueue_owned(Entry::new()).unwrap();
/// let waiter = std::thread::spawn(move || ticket.wait().map(|admitted| *admitted.worker()));
/// while queue.waiting() == 0 {
///     std::thread::yield_now();
/// }
/// drop(held); // admits the waiter on its thread
/// assert_eq!(waiter.join().unwrap(), Ok("a"));
/// ```
pub type OwnedTicket<W, S> = TicketOf<std::sync::Arc<Queue<W, S>>>;

enum Held<W> {
    /// Booked on enqueue, not yet taken.
    Ready(Booked<W>),
    /// In this waiter slot.
    Waiting { slot: u32, deadline: Option<Instant> },
    /// Taken, failed or timed out.
    Spent,
}

impl<Q: QueueRef> TicketOf<Q> {
    pub(crate) fn ready(queue: Q, booked: Booked<Q::Worker>) -> Self {
        Self {
            queue: Some(queue),
            held: Held::Ready(booked),
        }
    }

    pub(crate) fn waiting(queue: Q, slot: u32, deadline: Option<Instant>) -> Self {
        Self {
            queue: Some(queue),
            held: Held::Waiting { slot, deadline },
        }
    }

    /// The queue, while the ticket holds it (until its admission is taken).
    fn queue(&self) -> &Queue<Q::Worker, Q::Selector> {
        match &self.queue {
            Some(q) => q.queue(),
            None => unreachable!("workerpick: read only before the admission takes it"),
        }
    }

    /// The admission of `booked`, which takes the ticket's queue reference.
    fn admit(&mut self, booked: Booked<Q::Worker>) -> AdmittedOf<Q> {
        match self.queue.take() {
            Some(q) => AdmittedOf::new(q, booked),
            None => unreachable!("workerpick: a ticket admits once"),
        }
    }

    /// The admission if it came, `Ok(None)` while the request waits; an
    /// error once its deadline has passed (or its pick failed). After an
    /// answer other than `Ok(None)` the ticket is spent: asking again is
    /// [`QueueError::Spent`].
    pub fn try_admit(&mut self) -> Result<Option<AdmittedOf<Q>>, QueueError> {
        self.check(|_, _| None)
    }

    /// Blocks this thread until the request is admitted or its deadline
    /// passes.
    pub fn wait(mut self) -> Result<AdmittedOf<Q>, QueueError> {
        loop {
            if let Some(done) = self.check(|_, _| Some(Wake::Thread(thread::current())))? {
                return Ok(done);
            }
            match self.deadline() {
                // A wake-up before the deadline rechecks; an early or spurious
                // one costs a lock.
                Some(at) => thread::park_timeout(at.saturating_duration_since(Instant::now())),
                None => thread::park(),
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.held {
            Held::Waiting { deadline, .. } => deadline,
            _ => None,
        }
    }

    /// The one place a ticket reads its slot: the admission, a failure, or
    /// `None` after registering what `wake` gives (if anything) while it
    /// still waits.
    fn check(
        &mut self,
        wake: impl FnOnce(&Inner<Q::Worker>, u32) -> Option<Wake>,
    ) -> Result<Option<AdmittedOf<Q>>, QueueError> {
        let (slot, deadline) = match core::mem::replace(&mut self.held, Held::Spent) {
            Held::Ready(booked) => return Ok(Some(self.admit(booked))),
            Held::Waiting { slot, deadline } => (slot, deadline),
            Held::Spent => return Err(QueueError::Spent),
        };
        // Read under the lock; the ticket changes after it is released.
        let state = {
            let queue = self.queue();
            let mut inner = lock(&queue.inner);
            if !inner.is_queued(slot) {
                inner.free(slot)
            } else if deadline.is_some_and(|d| d <= Instant::now()) {
                inner.order.remove(slot);
                queue.waiting.fetch_sub(1, Ordering::Relaxed);
                inner.free(slot);
                State::Failed(QueueError::Timeout)
            } else {
                if let Some(wake) = wake(&inner, slot) {
                    inner.register(slot, wake);
                }
                State::Queued
            }
        };
        match state {
            State::Queued => {
                self.held = Held::Waiting { slot, deadline };
                Ok(None)
            }
            State::Admitted(booked) => Ok(Some(self.admit(booked))),
            State::Failed(e) => Err(e),
            State::Free => unreachable!("workerpick: a ticket's slot is its own until it drops"),
        }
    }
}

impl<Q: QueueRef> Future for TicketOf<Q> {
    type Output = Result<AdmittedOf<Q>, QueueError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Cloned only when the task changed: a poll of the same task reuses it.
        let waker = cx.waker();
        let wake = |inner: &Inner<Q::Worker>, slot| {
            (!inner.will_wake(slot, waker)).then(|| Wake::Task(waker.clone()))
        };
        match self.get_mut().check(wake) {
            Ok(Some(admitted)) => Poll::Ready(Ok(admitted)),
            Ok(None) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<Q: QueueRef> Drop for TicketOf<Q> {
    fn drop(&mut self) {
        let booked = match core::mem::replace(&mut self.held, Held::Spent) {
            Held::Ready(booked) => booked,
            Held::Waiting { slot, .. } => {
                let queue = self.queue();
                let mut inner = lock(&queue.inner);
                match inner.free(slot) {
                    State::Queued => {
                        inner.order.remove(slot);
                        queue.waiting.fetch_sub(1, Ordering::Relaxed);
                        return;
                    }
                    State::Admitted(booked) => booked,
                    State::Failed(_) | State::Free => return,
                }
            }
            Held::Spent => return,
        };
        // Admitted but never taken: give the booking back, and its room to
        // the next waiter.
        let queue = self.queue();
        queue.pool.slots.release(&booked);
        queue.after_release();
    }
}

impl<Q: QueueRef> fmt::Debug for TicketOf<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.held {
            Held::Ready(_) => "ready",
            Held::Waiting { .. } => "waiting",
            Held::Spent => "spent",
        };
        f.debug_struct("Ticket").field("state", &state).finish()
    }
}
