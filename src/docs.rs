//! Design notes, rendered with the API docs. Nothing to call here.
//!
//! # Storage
//! Counters live in fixed-size, cache-line-aligned chunks of `AtomicU32`
//! that are allocated on growth and never moved or freed while the pool
//! lives. A [`Reservation`](crate::Reservation) borrows the pool, so it holds
//! a reference to its counter that stays valid by construction: growth cannot
//! lose a decrement, and booking or releasing touches no reference count.
//!
//! # Snapshots and slot reuse
//! The worker set is an immutable snapshot published through `arc-swap`.
//! A removed worker's slot is reused for another worker only when (1) no live
//! snapshot names it — every published snapshot carries a liveness flag its
//! `Drop` clears (Release), read by the writer (Acquire) — and then (2) its
//! counter and pin count are zero. A pick that loaded an old snapshot keeps that
//! snapshot alive, so its compare-and-swap can only land on the worker it
//! names. Re-adding the same key while its load is alive revives the same slot
//! and identity, so the load shows again.
//!
//! # Exactness of least-loaded
//! The scan reads each counter once (SIMD) and books with a compare-and-swap
//! from the minimum it saw. With no releases, counters only grow, so a
//! successful swap books a true global minimum: `T` threads reserving `k`
//! times over `W` idle workers end at exactly `kT/W`. A release that lands
//! between the scan and the swap can make the pick one release stale.
//! After 32 lost races in a row a reservation books its last choice without
//! validating its load (counted in [`PoolStats::fallbacks`](crate::PoolStats)).
//! No booking takes a load past `u32::MAX`: it fails with
//! [`Error::LoadOverflow`](crate::Error::LoadOverflow) instead of wrapping.
