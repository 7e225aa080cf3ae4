//! How the admission queue ([`Queue`](crate::queue::Queue)) is built: its
//! lock and why, and the argument that no waiter sleeps while room exists.
//! What it promises: [`admission`](crate::docs::admission).
//!
//! # The lock, and why
//! The order (per class and tenant, a list of waiter slots; per class a
//! 64-bit mask of tenants with waiters, a clock and the tenants' finish
//! tags) sits under one mutex with the waiter slots. A strict-priority,
//! fair-share head is a property of every waiter at once: a lock-free list
//! per tenant would still need one consistent choice of the head across
//! them, and a stale choice breaks the exactly-once admission that the
//! booking must pair with. The critical sections are short and bounded: a
//! push or a removal is a few stores; an admission is a scan of at most 64
//! tenant bits, the saturation scan over the set and one pick. Nothing on
//! the plain pick and release path touches the queue: [`Pool`](crate::Pool)
//! and its reservations are unchanged, and a pool without a queue pays
//! nothing. The queue's own fast path takes no lock either: with nobody
//! waiting, [`enqueue`](crate::queue::Queue::enqueue) books at once when a
//! worker has room, and an [`Admitted`](crate::queue::Admitted)'s release
//! is the plain release, a fence and one load of the waiting count.
//! Everything is allocated when the queue is built: the slots (each with
//! its own buffers for a carried request's mask and cache hits, refilled by
//! `clone_from`), the free list, the order's arrays. The peers' counters
//! (replicas) live under the same lock, replaced in place per summary; the
//! fast path reads one more word (whether a peer has waiters, and whether
//! to count its admission, one relaxed add, once the queue summarises).
//!
//! # Owned tickets
//! [`Ticket`](crate::queue::Ticket) and
//! [`OwnedTicket`](crate::queue::OwnedTicket) are one type,
//! [`TicketOf`](crate::queue::TicketOf), generic over how it holds the
//! queue (`&Queue` or `Arc<Queue>`, a sealed trait); so are the admissions.
//! The ticket moves its queue reference into its admission, so an owned
//! request costs one `Arc` increment (at the enqueue) and one for its
//! [`OwnedReservation`](crate::OwnedReservation)'s anchor, the queue's own.
//!
//! # No lost wake-up
//! A waiter is pushed and the waiting count raised under the lock, then a
//! SeqCst fence, then a pump (which reads the counters). A release through
//! an `Admitted` (or a cancelled ticket's booking) lowers the counter, then
//! a SeqCst fence, then reads the waiting count and pumps if it is not zero.
//! The two fences are ordered: if the release's fence is first, the
//! enqueuer's pump sees the lower count; if the enqueuer's is first, the
//! release sees the waiter and pumps. A pump admits until no worker has room
//! or nobody waits, so after both have run, either no worker has room or no
//! request waits. Releases the queue does not see (a plain reservation on the
//! same pool, a report, a worker joining) are the caller's to follow with
//! [`pump`](crate::queue::Queue::pump). A ticket registers its waker or
//! thread under the lock and the pump takes it under the lock, so a wake-up
//! between a check and a park is not lost (a thread's park token, a task's
//! wake). The loom model `loom-tests/tests/queue.rs` checks admit against
//! cancel against release, with the waiter blocked (a lost wake-up is a
//! deadlock there). It fails, as it should, with the pump after a push
//! taken out (a deadlock: the waiter parks after the release looked) and
//! with the check that keeps a booking taken out (two admissions held under
//! a limit of one), and with a dropped, admitted but untaken ticket keeping
//! its booking (a count left at 1). It does not tell the fences from none: loom orders every
//! SeqCst access in one total order and synchronises them, stronger than
//! the memory model (and than an ARM store-release then load), so the
//! fences' argument above is the proof there.
