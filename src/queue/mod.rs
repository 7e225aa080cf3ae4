//! An admission queue in front of the pick: requests wait while every worker
//! is saturated, and leave by strict priority class, then by tenants' fair
//! shares of uncached tokens. The plain pick and release paths do not know
//! it exists. What it promises: [`docs::admission`](crate::docs::admission);
//! its lock and the wake-up proof:
//! [`docs::internal::admission`](crate::docs::internal::admission).

mod admitted;
mod config;
mod entry;
mod error;
mod gate;
mod holder;
mod order;
#[cfg(feature = "sessions")]
mod sessions;
mod shares;
mod shortest;
mod ticket;
mod waiter;

pub use crate::load::reports::Shares;
pub use admitted::{Admitted, AdmittedOf, OwnedAdmitted};
pub use config::QueueConfig;
pub use entry::Entry;
pub use error::QueueError;
pub use holder::QueueRef;
pub use ticket::{OwnedTicket, Ticket, TicketOf};

use crate::booking;
use crate::error::Error;
use crate::load::reports::Summary;
use crate::owned::Anchor;
use crate::pool::Pool;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::Selector;
use crate::snapshot::Snapshot;
use crate::storage::Booked;
use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
use crate::sync::{CachePadded, Mutex, lock};
use core::fmt;
use core::hash::Hash;
use gate::Gate;
use holder::sealed::Sealed;
use std::sync::Arc;
use std::time::Instant;
use waiter::{Inner, State};

/// Requests waiting for room on a shared [`Pool`], admitted by one selector.
///
/// [`enqueue`](Self::enqueue) books at once when nobody waits and a worker
/// has room, without taking the queue's lock; otherwise the request takes a
/// preallocated slot and its [`Ticket`] waits (try, blocking or as a
/// future). Room appears when an [`Admitted`] drops: its release admits the
/// next waiters. Releases and reports the queue does not see (plain
/// reservations on the same pool, [`Pool::report_load`]) need a
/// [`pump`](Self::pump) after them.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::queue::{Entry, Queue, QueueConfig};
/// use workerpick::{LeastLoaded, Pool};
///
/// let pool = Arc::new(Pool::from_workers(["gpu-0"]).unwrap());
/// let queue = Queue::new(pool, LeastLoaded::new(), QueueConfig::new().in_flight_limit(1)).unwrap();
///
/// let first = queue.enqueue(Entry::new()).unwrap().wait().unwrap(); // room: booked at once
/// let mut second = queue.enqueue(Entry::new()).unwrap();
/// assert!(second.try_admit().unwrap().is_none()); // gpu-0 is at its limit
/// drop(first); // the release admits the waiter
/// let second = second.try_admit().unwrap().unwrap();
/// assert_eq!(*second.worker(), "gpu-0");
/// ```
pub struct Queue<W, S> {
    pool: Arc<Pool<W>>,
    /// What the [`OwnedReservation`](crate::OwnedReservation)s of owned admissions hold.
    anchor: Arc<Anchor<W>>,
    selector: S,
    gate: Gate,
    classes: usize,
    tenants: usize,
    /// Waiters in the order, for the lock-free checks after a release.
    waiting: CachePadded<AtomicUsize>,
    /// `SUMMARISED | PEERS_WAIT` (see `shares`).
    replicas: AtomicU32,
    /// As `Order::served`: uncached tokens booked at once, outside the
    /// order, counted once the queue makes summaries.
    fast: Box<[AtomicU64]>,
    /// The share window and the hold-back slack, in virtual time.
    window: u128,
    slack: u128,
    /// Session bindings the bookings follow ([`with_sessions`](Self::with_sessions)).
    #[cfg(feature = "sessions")]
    sessions: Option<Arc<crate::affinity::sessions::Sessions>>,
    inner: Mutex<Inner<W>>,
}

/// The queue has made a summary: it counts its at-once admissions.
const SUMMARISED: u32 = 1;
/// A live peer has waiters: newcomers queue (and the pump decides) rather
/// than book at once past them.
const PEERS_WAIT: u32 = 2;

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> Queue<W, S> {
    /// A queue over `pool` that books with `selector`; its slots and order
    /// are allocated here, once.
    pub fn new(pool: Arc<Pool<W>>, selector: S, config: QueueConfig) -> Result<Self, Error> {
        config.check()?;
        Ok(Self {
            anchor: Arc::new(Anchor { pool: pool.clone() }),
            pool,
            selector,
            gate: Gate::new(&config),
            classes: config.classes,
            tenants: config.weights.len(),
            waiting: CachePadded::new(AtomicUsize::new(0)),
            replicas: AtomicU32::new(0),
            fast: (0..config.classes * config.weights.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            window: order::virtual_tokens(config.share_window),
            slack: order::virtual_tokens(config.share_window / 16),
            #[cfg(feature = "sessions")]
            sessions: None,
            inner: Mutex::new(Inner::new(&config)),
        })
    }

    /// The pool the queue books on.
    pub fn pool(&self) -> &Arc<Pool<W>> {
        &self.pool
    }

    /// How many requests wait now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Queues `entry`, or books it at once when nobody waits and a worker has
    /// room. [`QueueError::Full`] when every slot is taken,
    /// [`QueueError::Unknown`] for a class or tenant beyond the
    /// configuration, [`QueueError::Timeout`] for a deadline already past,
    /// [`QueueError::Pick`] when the pick itself refuses (an empty set).
    pub fn enqueue(&self, entry: Entry) -> Result<Ticket<'_, W, S>, QueueError> {
        Self::enqueue_in(self, entry, None)
    }

    /// [`enqueue`](Self::enqueue) for a request with pick inputs: its
    /// eligibility mask, cache hits and cost tuning are copied into the
    /// waiter's slot (into buffers the slot keeps, so a steady state
    /// allocates nothing), and the admission, whenever a pump makes it,
    /// books with them: a queued request still lands only on its eligible
    /// workers, and by its cache credit. The request's weight and key
    /// replace the entry's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::{LeastLoaded, Pool, Request};
    ///
    /// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
    /// let queue = Queue::new(pool.clone(), LeastLoaded::new(), QueueConfig::new().in_flight_limit(1)).unwrap();
    /// let (a, b) = (pool.reserve_worker(&"a", 1).unwrap(), pool.reserve_worker(&"b", 1).unwrap());
    /// let only_b = pool.eligibility(|w| *w == "b");
    /// let mut ticket = queue.enqueue_with(Entry::new(), &Request::new().eligible(&only_b)).unwrap();
    /// drop(a);
    /// queue.pump(); // room on "a" only: not for this request
    /// assert!(ticket.try_admit().unwrap().is_none());
    /// drop(b);
    /// queue.pump();
    /// assert_eq!(*ticket.try_admit().unwrap().unwrap().worker(), "b");
    /// ```
    pub fn enqueue_with(&self, entry: Entry, request: &Request<'_>) -> Result<Ticket<'_, W, S>, QueueError> {
        Self::enqueue_in(self, entry, Some(request))
    }

    /// [`enqueue`](Self::enqueue) for a queue shared in an `Arc`: the
    /// ticket, and the admission it gives, hold a clone of the `Arc` and are
    /// `'static + Send`, so an async server's handler can wait in a spawned
    /// task (see [`OwnedTicket`]). Its admission holds an
    /// [`OwnedReservation`](crate::OwnedReservation) and admits the next
    /// waiters when it drops, like an [`Admitted`].
    pub fn enqueue_owned(self: &Arc<Self>, entry: Entry) -> Result<OwnedTicket<W, S>, QueueError> {
        Self::enqueue_in(self.clone(), entry, None)
    }

    /// [`enqueue_with`](Self::enqueue_with), owned (see
    /// [`enqueue_owned`](Self::enqueue_owned)).
    pub fn enqueue_owned_with(
        self: &Arc<Self>,
        entry: Entry,
        request: &Request<'_>,
    ) -> Result<OwnedTicket<W, S>, QueueError> {
        Self::enqueue_in(self.clone(), entry, Some(request))
    }

    /// Every form of enqueue: `queue` is `&Self` or `Arc<Self>`.
    fn enqueue_in<Q: QueueRef + Sealed<Worker = W, Selector = S>>(
        queue: Q,
        mut entry: Entry,
        request: Option<&Request<'_>>,
    ) -> Result<TicketOf<Q>, QueueError> {
        if let Some(r) = request {
            (entry.weight, entry.key) = (r.weight, r.key);
        }
        let this = queue.queue();
        if entry.class >= this.classes || entry.tenant >= this.tenants {
            return Err(QueueError::Unknown);
        }
        // A hint only: a request that races a new waiter past this check
        // may go first, which no waiter can notice but as a fair-share slip.
        let replicas = this.replicas.load(Ordering::Relaxed);
        if this.waiting.load(Ordering::Relaxed) == 0 && replicas & PEERS_WAIT == 0 {
            let snap = this.pool.snapshot();
            let booking = Self::request_of(&entry, request);
            match this.book(&snap, &mut Rng::new(), &booking) {
                Some(Ok(booked)) => {
                    if replicas & SUMMARISED != 0 {
                        let at = entry.class * this.tenants + entry.tenant;
                        this.fast[at].fetch_add(u64::from(entry.uncached()), Ordering::Relaxed);
                    }
                    return Ok(TicketOf::ready(queue, booked));
                }
                Some(Err(e)) => return Err(QueueError::Pick(e)),
                None => {}
            }
        }
        if entry.deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(QueueError::Timeout);
        }
        let mut inner = lock(&this.inner);
        let slot = inner.push(entry, request).ok_or(QueueError::Full)?;
        this.waiting.fetch_add(1, Ordering::Relaxed);
        // SeqCst: pairs with the fence in `after_release`. Either that
        // release's load of `waiting` sees this waiter, or the pump below
        // sees the release's lower count (no waiter sleeps while room exists).
        fence(Ordering::SeqCst);
        drop(inner);
        this.pump();
        Ok(TicketOf::waiting(queue, slot, entry.deadline))
    }

    /// The request `entry` books with at once: `request` with the entry's
    /// weight and key, or those alone.
    fn request_of<'r>(entry: &Entry, request: Option<&Request<'r>>) -> Request<'r> {
        let mut booking = request.copied().unwrap_or_default();
        (booking.weight, booking.key) = (entry.weight, entry.key);
        booking
    }

    /// Admits waiters while a worker has room; returns how many. Call it
    /// after a change the queue does not see: a plain reservation's release,
    /// a report, a worker joining or its capacity growing.
    pub fn pump(&self) -> usize {
        let mut admitted = 0;
        loop {
            let mut inner = lock(&self.inner);
            let Some(slot) = inner.head(&self.fast, self.window, self.slack) else {
                break;
            };
            let snap = self.pool.snapshot();
            let (rng, request) = inner.booking(slot);
            let Some(result) = self.book(&snap, rng, &request) else {
                break;
            };
            let state = match result {
                Ok(booked) => {
                    inner.order.admit_head(slot);
                    State::Admitted(booked)
                }
                Err(e) => {
                    inner.order.remove(slot);
                    State::Failed(QueueError::Pick(e))
                }
            };
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            let wake = inner.settle(slot, state);
            drop(inner);
            wake.wake();
            admitted += 1;
        }
        admitted
    }

    /// What this router sends the others: its pool's
    /// [`summary`](Pool::summary) (its bookings) with its queue's fair-share
    /// counters ([`Summary::shares`]). Send it instead of the pool's, and
    /// apply the others' with [`apply_summary`](Self::apply_summary).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use workerpick::queue::{Entry, Queue, QueueConfig};
    /// use workerpick::{LeastLoaded, Pool};
    /// let config = || QueueConfig::new().tenants(&[4, 1]).in_flight_limit(2).shared_fleet();
    /// let fleet = || Arc::new(Pool::from_workers(["gpu-0"]).unwrap());
    /// let (a, b) = (Queue::new(fleet(), LeastLoaded::new(), config()).unwrap(), Queue::new(fleet(), LeastLoaded::new(), config()).unwrap());
    /// let _on_a = a.enqueue(Entry::new().tenant(1).weight(1)).unwrap().wait().unwrap();
    /// assert!(b.apply_summary(&a.summary()));
    /// assert_eq!(b.pool().reported_load(&"gpu-0"), Some(1)); // a's booking
    /// assert_eq!(b.summary().shares().unwrap().served(0, 1), 0); // b's own counters
    /// ```
    pub fn summary(&self) -> Summary<W> {
        self.replicas.fetch_or(SUMMARISED, Ordering::Relaxed);
        let mut summary = self.pool.summary();
        summary.shares = Some(lock(&self.inner).shares(&self.fast));
        summary
    }

    /// Applies another router's summary: its bookings to the pool (as
    /// [`Pool::apply_summary`]), and its fair-share counters, replacing what
    /// it sent before, to this queue's order: each class then leaves by the
    /// fleet-wide counters, and holds back while a tenant waiting at that
    /// router is behind by more than the slack (see
    /// [`QueueConfig::share_window`]). Then pumps (the loads changed).
    /// `false`, changing nothing, for a summary the pool refuses (its own,
    /// or not newer than the last from that router).
    pub fn apply_summary(&self, summary: &Summary<W>) -> bool {
        if !self.pool.apply_summary(summary) {
            return false;
        }
        if let Some(shares) = &summary.shares {
            let (now, max_age) = (Instant::now(), self.pool.report_max_age());
            let mut inner = lock(&self.inner);
            inner.peers.apply(summary.origin, shares, now, max_age);
            if inner.peers.any_waiting(now) {
                self.replicas.fetch_or(PEERS_WAIT, Ordering::Relaxed);
            } else {
                self.replicas.fetch_and(!PEERS_WAIT, Ordering::Relaxed);
            }
        }
        self.pump();
        true
    }

    /// Ends every waiter whose deadline has passed with
    /// [`QueueError::Timeout`] and wakes it; returns how many. A blocking
    /// [`Ticket::wait`] keeps its own deadline; a future cannot without a
    /// timer, so an async router calls this from one (every few
    /// milliseconds) or wraps the future in its runtime's timeout (dropping
    /// a ticket cancels it).
    pub fn expire(&self) -> usize {
        let now = Instant::now();
        let (mut ended, mut from) = (0, 0);
        loop {
            let mut inner = lock(&self.inner);
            let Some(slot) = (from..inner.len()).find(|&slot| inner.is_overdue(slot, now)) else {
                break;
            };
            inner.order.remove(slot);
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            let wake = inner.settle(slot, State::Failed(QueueError::Timeout));
            // Woken with the lock released: a waker may poll its task at once.
            drop(inner);
            wake.wake();
            (ended, from) = (ended + 1, slot + 1);
        }
        ended
    }

    /// Books `request` if one of its candidates has room: where the
    /// selector chooses, or on the roomiest candidate if the selector chose
    /// a saturated one. `None`: no candidate has room, or a racing booking
    /// took the last of it (see [`Gate::kept`]).
    fn book(
        &self,
        snap: &Snapshot<W>,
        rng: &mut Rng,
        request: &Request<'_>,
    ) -> Option<Result<Booked<W>, Error>> {
        #[cfg(feature = "sessions")]
        if let (Some(sessions), Some(key)) = (&self.sessions, request.get_key()) {
            return self.book_bound(sessions, key, snap, rng, request);
        }
        self.book_any(snap, rng, request)
    }

    /// [`book`](Self::book), wherever the selector and the room say.
    fn book_any(
        &self,
        snap: &Snapshot<W>,
        rng: &mut Rng,
        request: &Request<'_>,
    ) -> Option<Result<Booked<W>, Error>> {
        let pool = &*self.pool;
        // Booked first and checked after, not scanned first: with room where
        // the selector looks, the saturation rule costs one check, not a
        // pass over the set.
        let booked = match booking::reserve(&pool.raw, snap, rng, request, &self.selector, |b| b) {
            Ok(booked) => booked,
            Err(e) => return Some(Err(e)),
        };
        let weight = booked.weight();
        if let Some(kept) = self.kept(snap, booked) {
            return Some(Ok(kept));
        }
        let roomiest = self.gate.roomiest(pool, snap, request)?;
        let moved = booking::book(&pool.raw, snap, roomiest, weight).ok()?;
        self.kept(snap, moved).map(Ok)
    }

    /// `booked`, if the saturation rule keeps it ([`Gate::kept`]); else
    /// given back at once: that only undoes this booking, so it makes no
    /// room that a waiter could be owed.
    fn kept(&self, snap: &Snapshot<W>, booked: Booked<W>) -> Option<Booked<W>> {
        let pool = &*self.pool;
        if self.gate.kept(pool, snap, booked.slot(), booked.weight()) {
            return Some(booked);
        }
        pool.raw.slots.release(&booked);
        None
    }

    /// After a booking made by the queue is given back: admits waiters if
    /// any wait.
    fn after_release(&self) {
        // SeqCst: pairs with the fence in `enqueue`, after the release's
        // decrement (see there).
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) > 0 {
            self.pump();
        }
    }
}

impl<W, S> fmt::Debug for Queue<W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("classes", &self.classes)
            .field("tenants", &self.tenants)
            .field("waiting", &self.waiting.load(Ordering::Relaxed))
            .finish()
    }
}
