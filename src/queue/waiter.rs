//! The waiter slots and what the queue's lock guards: the order, each
//! slot's state and how to wake its ticket, the free list, the pump's
//! random source.

use super::config::QueueConfig;
use super::entry::Entry;
use super::error::QueueError;
use super::order::Order;
use crate::rng::Rng;
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
                })
                .collect(),
            // Popped from the end: slot 0 first.
            free: (0..slots as u32).rev().collect(),
        }
    }

    pub(crate) fn len(&self) -> u32 {
        self.waiters.len() as u32
    }

    /// Takes a free slot for `entry` and queues it; `None` when full.
    pub(crate) fn push(&mut self, entry: Entry) -> Option<u32> {
        let slot = self.free.pop()?;
        let w = &mut self.waiters[slot as usize];
        w.state = State::Queued;
        w.entry = entry;
        w.wake = Wake::None;
        self.order.push(slot, entry.class, entry.tenant, entry.uncached());
        Some(slot)
    }

    pub(crate) fn entry(&self, slot: u32) -> Entry {
        self.waiters[slot as usize].entry
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
