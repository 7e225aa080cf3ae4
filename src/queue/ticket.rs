use super::Queue;
use super::admitted::Admitted;
use super::error::QueueError;
use super::waiter::{Inner, State, Wake};
use crate::selectors::Selector;
use crate::storage::Booked;
use crate::sync::atomic::Ordering;
use crate::sync::{lock, thread};
use core::fmt;
use core::future::Future;
use core::hash::Hash;
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
#[must_use = "dropping a Ticket cancels the request; wait on it, poll it or await it"]
pub struct Ticket<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> {
    queue: &'q Queue<W, S>,
    held: Held<W>,
}

enum Held<W> {
    /// Booked on enqueue, not yet taken.
    Ready(Booked<W>),
    /// In this waiter slot.
    Waiting { slot: u32, deadline: Option<Instant> },
    /// Taken, failed or timed out.
    Spent,
}

impl<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> Ticket<'q, W, S> {
    pub(crate) fn ready(queue: &'q Queue<W, S>, booked: Booked<W>) -> Self {
        Self {
            queue,
            held: Held::Ready(booked),
        }
    }

    pub(crate) fn waiting(queue: &'q Queue<W, S>, slot: u32, deadline: Option<Instant>) -> Self {
        Self {
            queue,
            held: Held::Waiting { slot, deadline },
        }
    }

    /// The admission if it came, `Ok(None)` while the request waits; an
    /// error once its deadline has passed (or its pick failed). After an
    /// answer other than `Ok(None)` the ticket is spent: asking again is
    /// [`QueueError::Spent`].
    pub fn try_admit(&mut self) -> Result<Option<Admitted<'q, W, S>>, QueueError> {
        self.check(|_, _| None)
    }

    /// Blocks this thread until the request is admitted or its deadline
    /// passes.
    pub fn wait(mut self) -> Result<Admitted<'q, W, S>, QueueError> {
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
        wake: impl FnOnce(&Inner<W>, u32) -> Option<Wake>,
    ) -> Result<Option<Admitted<'q, W, S>>, QueueError> {
        let (slot, deadline) = match core::mem::replace(&mut self.held, Held::Spent) {
            Held::Ready(booked) => return Ok(Some(Admitted::new(self.queue, booked))),
            Held::Waiting { slot, deadline } => (slot, deadline),
            Held::Spent => return Err(QueueError::Spent),
        };
        let queue = self.queue;
        let mut inner = lock(&queue.inner);
        if inner.is_queued(slot) {
            if deadline.is_some_and(|d| d <= Instant::now()) {
                inner.order.remove(slot);
                queue.waiting.fetch_sub(1, Ordering::Relaxed);
                inner.free(slot);
                return Err(QueueError::Timeout);
            }
            if let Some(wake) = wake(&inner, slot) {
                inner.register(slot, wake);
            }
            self.held = Held::Waiting { slot, deadline };
            return Ok(None);
        }
        match inner.free(slot) {
            State::Admitted(booked) => Ok(Some(Admitted::new(queue, booked))),
            State::Failed(e) => Err(e),
            State::Free | State::Queued => {
                unreachable!("workerpick: a ticket's slot is its own until it drops")
            }
        }
    }
}

impl<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> Future for Ticket<'q, W, S> {
    type Output = Result<Admitted<'q, W, S>, QueueError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Cloned only when the task changed: a poll of the same task reuses it.
        let waker = cx.waker();
        let wake =
            |inner: &Inner<W>, slot| (!inner.will_wake(slot, waker)).then(|| Wake::Task(waker.clone()));
        match self.get_mut().check(wake) {
            Ok(Some(admitted)) => Poll::Ready(Ok(admitted)),
            Ok(None) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> Drop for Ticket<'_, W, S> {
    fn drop(&mut self) {
        let booked = match core::mem::replace(&mut self.held, Held::Spent) {
            Held::Ready(booked) => booked,
            Held::Waiting { slot, .. } => {
                let mut inner = lock(&self.queue.inner);
                match inner.free(slot) {
                    State::Queued => {
                        inner.order.remove(slot);
                        self.queue.waiting.fetch_sub(1, Ordering::Relaxed);
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
        self.queue.pool.raw.slots.release(&booked);
        self.queue.after_release();
    }
}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> fmt::Debug for Ticket<'_, W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.held {
            Held::Ready(_) => "ready",
            Held::Waiting { .. } => "waiting",
            Held::Spent => "spent",
        };
        f.debug_struct("Ticket").field("state", &state).finish()
    }
}
