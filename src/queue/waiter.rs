//! The waiter slots and what the queue's lock guards: the order, each
//! slot's state, its request's inputs and how to wake its ticket, the free
//! list, the pump's random source.

use super::config::QueueConfig;
use super::entry::Entry;
use super::error::QueueError;
use super::order::Order;
use crate::eligibility::Eligibility;
use crate::load::credit::CacheHits;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::tuning::Tuning;
use crate::storage::Booked;
use crate::sync::thread::Thread;
use core::task::Waker;
use std::time::Instant;

/// Where a waiter slot stands.
pub(crate) enum State<W> {
    /// On the free list.
    Free,
    /// In the order, waiting for room.
    Queued,
    /// Booked by a pump, not yet taken by its ticket.
    Admitted(Booked<W>),
    /// Ended without a booking (its deadline, or a refused pick).
    Failed(QueueError),
}

/// How to tell a ticket its slot changed.
pub(crate) enum Wake {
    None,
    Task(Waker),
    Thread(Thread),
}

impl Wake {
    pub(crate) fn wake(self) {
        match self {
            Self::None => {}
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

struct Waiter<W> {
    state: State<W>,
    entry: Entry,
    wake: Wake,
    /// The request's inputs the pump books with, copied at the push into
    /// buffers the slot keeps: `clone_from` reuses them, so a steady state
    /// allocates nothing.
    carried: Carried,
}

/// A queued request's [`Request`] inputs besides its weight and key.
#[derive(Default)]
struct Carried {
    /// Whether the request had a mask (in `mask_buf`), cache hits (in `hits_buf`).
    mask: bool,
    hits: bool,
    tuning: Tuning,
    mask_buf: Eligibility,
    hits_buf: CacheHits,
}

impl Carried {
    fn copy(&mut self, request: Option<&Request<'_>>) {
        let Some(request) = request else {
            (self.mask, self.hits, self.tuning) = (false, false, Tuning::default());
            return;
        };
        self.tuning = request.tuning;
        self.mask = request.mask.is_some();
        if let Some(mask) = request.mask {
            self.mask_buf.clone_from(mask);
        }
        self.hits = request.cache.is_some();
        if let Some(hits) = request.cache {
            self.hits_buf.clone_from(hits);
        }
    }

    /// The request to book `entry` with.
    fn request(&self, entry: &Entry) -> Request<'_> {
        let mut request = Request::new().weight(entry.weight);
        if let Some(key) = entry.key {
            request = request.key(key);
        }
        request.tuning = self.tuning;
        request.mask = self.mask.then_some(&self.mask_buf);
        request.cache = self.hits.then_some(&self.hits_buf);
        request
    }
}

/// See the module docs. Sized once: nothing here allocates after `new`.
pub(crate) struct Inner<W> {
    pub(crate) order: Order,
    pub(crate) rng: Rng,
    waiters: Box<[Waiter<W>]>,
    free: Vec<u32>,
}

impl<W> Inner<W> {
    pub(crate) fn new(config: &QueueConfig) -> Self {
        let slots = config.capacity;
        Self {
            order: Order::new(slots, config.classes, &config.weights, config.aging),
            rng: Rng::new(),
            waiters: (0..slots)
                .map(|_| Waiter {
                    state: State::Free,
                    entry: Entry::new(),
                    wake: Wake::None,
                    carried: Carried::default(),
                })
                .collect(),
            // Popped from the end: slot 0 first.
            free: (0..slots as u32).rev().collect(),
        }
    }

    pub(crate) fn len(&self) -> u32 {
        self.waiters.len() as u32
    }

    /// Takes a free slot for `entry` (and `request`'s mask, cache hits and
    /// tuning) and queues it; `None` when full.
    pub(crate) fn push(&mut self, entry: Entry, request: Option<&Request<'_>>) -> Option<u32> {
        let slot = self.free.pop()?;
        let w = &mut self.waiters[slot as usize];
        w.state = State::Queued;
        w.entry = entry;
        w.wake = Wake::None;
        w.carried.copy(request);
        self.order.push(slot, entry.class, entry.tenant, entry.uncached());
        Some(slot)
    }

    /// The pump's random source and the request `slot` books with.
    pub(crate) fn booking(&mut self, slot: u32) -> (&mut Rng, Request<'_>) {
        let w = &self.waiters[slot as usize];
        (&mut self.rng, w.carried.request(&w.entry))
    }

    /// Whether `slot` is queued with its deadline at or before `now`.
    pub(crate) fn is_overdue(&self, slot: u32, now: Instant) -> bool {
        let w = &self.waiters[slot as usize];
        matches!(w.state, State::Queued) && w.entry.deadline.is_some_and(|d| d <= now)
    }

    /// Ends a queued slot's wait with `state` (the caller took it out of the
    /// order); returns how to wake its ticket.
    pub(crate) fn settle(&mut self, slot: u32, state: State<W>) -> Wake {
        let w = &mut self.waiters[slot as usize];
        w.state = state;
        core::mem::replace(&mut w.wake, Wake::None)
    }

    /// Whether `slot` is still queued.
    pub(crate) fn is_queued(&self, slot: u32) -> bool {
        matches!(self.waiters[slot as usize].state, State::Queued)
    }

    /// Sets how to wake `slot`'s ticket (a queued slot's).
    pub(crate) fn register(&mut self, slot: u32, wake: Wake) {
        self.waiters[slot as usize].wake = wake;
    }

    /// Whether `slot`'s registered task waker would wake the same task as `waker`.
    pub(crate) fn will_wake(&self, slot: u32, waker: &Waker) -> bool {
        matches!(&self.waiters[slot as usize].wake, Wake::Task(w) if w.will_wake(waker))
    }

    /// Gives `slot` back to the free list and returns what it held: a
    /// booking to hand over or give back, a failure, or (still queued) a
    /// slot the caller must take out of the order.
    pub(crate) fn free(&mut self, slot: u32) -> State<W> {
        let w = &mut self.waiters[slot as usize];
        w.wake = Wake::None;
        let state = core::mem::replace(&mut w.state, State::Free);
        self.free.push(slot);
        state
    }
}
