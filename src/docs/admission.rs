//! The admission queue ([`Queue`](crate::queue::Queue)): what it promises,
//! how it orders waiters, and its limits. How it is built (its lock, and why
//! no waiter sleeps while room exists):
//! [`internal::admission`](super::internal::admission).
//!
//! # What it promises
//! - A queued request is admitted exactly once, or ends with an error
//!   (its deadline, a refused pick, a full queue) with nothing booked for
//!   it; a dropped [`Ticket`](crate::queue::Ticket) (or
//!   [`OwnedTicket`](crate::queue::OwnedTicket), the `'static` form from
//!   [`enqueue_owned`](crate::queue::Queue::enqueue_owned) that holds the
//!   queue's `Arc`, for tasks) leaves no trace: it
//!   leaves the order without charging its tenant, and a booking a pump made
//!   for it meanwhile is given back (and admits the next waiter).
//! - While a request waits, every worker was saturated when it was last
//!   looked at: a worker is saturated at `in_flight_limit × capacity`
//!   booked here, at `reported_limit` reported, or when its own last report
//!   (a report of 0 counts) is older than `stale_after` or never came: an
//!   unknown load is not room. An admission lands on a
//!   worker with room: the selector's choice, or, if the selector chose a
//!   saturated one, the worker with room least loaded for its capacity.
//! - The limit holds exactly among the queue's admissions, on the lock-free
//!   path too: a booking is kept only if, read with a read-modify-write
//!   (which sees the last value of the counter, where a load may not), the
//!   worker's load without it is under the limit. Of bookings racing for the
//!   last room, the last to check sees all the others, so at most the limit
//!   are kept; a loser gives its booking back at once and queues (or, in a
//!   pump, stays queued: the racer that beat it, or the one that also gave
//!   back and then queues, pumps after). The selector's booking is made
//!   first and checked after (no pass over the set while it finds room), so
//!   a request that finds every worker saturated books and gives back once;
//!   such a booking is visible to [`Pool::in_flight`](crate::Pool::in_flight)
//!   and to plain picks for that moment.
//! - Classes are strict: a class waits while a higher one has waiters.
//!   Within a class, tenants share by start-time fair queuing: a tenant's
//!   next waiter starts at `max(its last finish, the class clock)` and
//!   finishes `uncached ÷ weight` later, the earliest start leaves first,
//!   and the class clock moves to the start of the waiter that left. The
//!   cost is the request's uncached tokens, `weight − credit`: a tenant of
//!   long uncached prompts and one of cached ones get the fleet's work in
//!   the ratio of their weights, not their request counts. An idle tenant
//!   banks nothing (its start is at least the clock), and only an admission
//!   charges: a cancelled waiter costs its tenant nothing.
//! - Or, with [`shortest_first`](crate::queue::QueueConfig::shortest_first),
//!   each class leaves by least `uncached − aging × milliseconds waited`
//!   (ties first come first): all waiters age alike, so the key is fixed at
//!   the push and a heap per class keeps the order (a cancel leaves in
//!   O(log n)). Tenants are not told apart then.
//!
//! # Limits
//! - [`enqueue`](crate::queue::Queue::enqueue) books with the entry's
//!   weight and key only; [`enqueue_with`](crate::queue::Queue::enqueue_with)
//!   carries a [`Request`](crate::Request)'s eligibility mask, cache hits
//!   and cost tuning into the waiter's slot (copied with `clone_from` into
//!   buffers the slot keeps: no allocation in steady state, a copy the size
//!   of the mask and the hits per queued request), so the pump, on another
//!   thread after the caller's request is gone, books by cost and only on
//!   eligible workers; the fallback to the roomiest worker keeps to the mask
//!   too. The entry's credit counts in the fair share; the hits' credit in
//!   the pick.
//! - With [`with_sessions`](crate::queue::Queue::with_sessions) (feature
//!   `sessions`), a keyed request books on its session's bound worker
//!   while that worker has room; a soft session moves when it has none, a
//!   hard one waits for it at the head of its class (the order is strict:
//!   the class waits behind it).
//! - A future keeps no timer: its deadline is checked when it is polled;
//!   [`expire`](crate::queue::Queue::expire) from a ticker, or the
//!   runtime's timeout around the future, ends it on time.
//! - Staleness follows the worker's own reports only; a peer replica's
//!   summary does not refresh it.
//! - A newcomer that races a new waiter past the empty-queue check may
//!   book ahead of it (a fair-share slip of one request, never a lost one).
//! - At most 8 classes and 64 tenants. Strict classes are per router; the
//!   fair shares are fleet-wide only between routers that exchange
//!   [`Queue::summary`](crate::queue::Queue::summary) (below), and only in
//!   the fair order (not shortest-first).
//!
//! # Replicas
//! Two routers over one fleet, each fair on its own, do not hold a policy
//! together: with tenant A's traffic at one and B's at the other, the share
//! follows which router frees room first, whatever the weights (dynamo
//! #15187: 4:1 became 163:162). So each queue counts, per class and
//! tenant, the uncached tokens it admitted (absolute counters, as the loads
//! are), and [`Queue::summary`](crate::queue::Queue::summary) sends them
//! with its tenants' waiting bits beside the pool's loads
//! ([`Summary::shares`](crate::Summary::shares): a serde-optional field, a
//! summary without it reads as before).
//! [`Queue::apply_summary`](crate::queue::Queue::apply_summary) replaces what
//! that router sent before (not adds: a lost or repeated summary leaves no
//! drift) and pumps. While a live peer's counters are held (they age out
//! with the pool's report age), a class leaves by the fleet-wide counters:
//! the local tenant with the least `(tokens served everywhere) ÷ weight`,
//! lifted to at least the most-served waiting tenant's less
//! [`share_window`](crate::queue::QueueConfig::share_window) (so an idle
//! tenant banks at most the window, as virtual-token counters do), and the
//! class is held back while a tenant waiting at a peer is behind it by more
//! than a sixteenth of the window: that peer takes the room. A newcomer
//! queues rather than book at once while a peer has waiters. With
//! [`shared_fleet`](crate::queue::QueueConfig::shared_fleet) the in-flight
//! limit counts the peers' booked load too, so the routers share the
//! fleet's room rather than each filling it. Two routers, tenants 4:1, one
//! tenant at each, both backlogged, exchanging every 5 ticks: 4.04:1 with
//! the counters, 0:1 (the releasing router refills its room) with the loads
//! alone (`tests/suite/queue.rs`, `two_routers_hold_a_4_to_1_share_by_exchanging_counters`).
//! The error is bounded: staleness of one exchange period plus the slack.
