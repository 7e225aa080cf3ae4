//! Worker sets and bookings: the counter storage, snapshots, slot reuse, membership changes, stale masks, and how a booking lands.
//!
//!
//! # Counter storage (the growth hazard)
//! In-flight counts are one packed array of `AtomicU32`, cache-line aligned
//! and reserved for the pool's worker limit when the pool is built (zeroed
//! memory; on Linux untouched pages cost nothing). It never moves and is freed
//! only with the pool. A [`Reservation`](crate::Reservation) borrows the pool,
//! so its counter outlives it by construction: adding workers cannot lose a
//! decrement, and booking or releasing touches no reference count. Worker
//! keys and pin counts live in chunks allocated as the set grows, published
//! with a Release store that readers Acquire.
//!
//! # Snapshots
//! The worker set is an immutable snapshot (member slots in set order, an
//! exclusion lane per slot for the scan, per-slot identity generations,
//! attributes and keys) published through `arc-swap`. A
//! [`Handle`](crate::Handle) keeps an `arc_swap::Cache` of it and revalidates
//! it with one pointer comparison per pick, so a worker removed before a pick
//! starts is never chosen by it. Writers serialise among themselves and may
//! allocate; pickers never wait for them.
//!
//! # Slot reuse (the stale-pick hazard)
//! A removed worker's slot is handed to another worker only when (1) no live
//! snapshot names it — each published snapshot carries a liveness flag that its
//! `Drop` clears with Release and the writer reads with Acquire — and then
//! (2) its counter and its pin count read zero (Acquire, pairing with the
//! Release of every release). A pick that loaded an old snapshot keeps that
//! snapshot alive, so its compare-and-swap can only land on the worker it
//! names. Re-adding the same key while its load is alive revives the same slot
//! and identity, so the retained load shows. An eligibility mask built from
//! an older snapshot is checked entry by entry against the current identity
//! generations, so it never admits a slot's next owner.
//!
//! # Membership changes and panics
//! Writers are serialised by a mutex and run each change in two phases.
//! Staging runs every call into the key type (`Clone`, `Hash`, `Eq`): it
//! finds where each key comes from, picks the slots fresh identities will
//! take, clones their keys and builds the next snapshot, changing nothing.
//! Commit then moves the staged values into place and publishes; it runs no
//! key code but `Drop`. A panic in a key's callback therefore unwinds out of
//! staging with the pool as it was, and the next writer recovers the
//! poisoned lock and finds a consistent state. (A panicking `Drop` of a key
//! is not covered.) The draining workers are a list rather than a hash map so
//! that commit never hashes a key. Every publish also drops the liveness
//! handles of snapshots no reader holds, so the writer's bookkeeping is
//! bounded by the snapshots alive, whatever the sequence of calls.
//!
//! # Masks older than the set
//! An [`Eligibility`](crate::Eligibility) mask records the epoch of the set
//! it was built from, and each snapshot records the epoch of the latest
//! change in which a worker left. A mask built at or after that epoch names
//! only current members under their identities (workers that joined since
//! are excluded by its lanes), so it is applied as it is. An older mask is
//! translated: its entries whose slot still holds the same identity
//! (generation) become a fresh candidate list and exclusion array, built by
//! the first pick that meets the mask on that snapshot and cached in the
//! snapshot (up to 32 masks, each cell filled once with a compare-and-swap
//! and freed with the snapshot). Later picks find it with a load or two, so
//! a stale mask costs what a fresh one does, plus one translation per set.
//!
//! # Booking
//! Power-of-two and least-loaded answer with the load they compared; the
//! booking is a compare-and-swap from that value, and on failure the selector
//! is asked again, at most 32 times, after which the last choice is booked
//! without validating its load (counted in [`PoolStats`](crate::PoolStats)).
//! No booking takes a load past `u32::MAX`: it fails with
//! [`Error::LoadOverflow`](crate::Error::LoadOverflow) and books nothing,
//! since a count that wrapped to zero under live reservations would let the
//! writer reuse their slot.
//! With no releases loads only grow, so a successful swap from the scanned
//! minimum books a true global minimum: `T` threads reserving `k` times over
//! `W` idle workers end at exactly `kT/W` each. A release that lands between
//! the scan and the swap can make a pick one release stale. Bookings are
//! Relaxed: the count itself is the only datum, and slot reuse is ordered by
//! the snapshot liveness above, not by the counters.
//! A reservation keeps the address of its worker's key in the slot storage,
//! found while the pick still holds its snapshot and before the swap (whose
//! fence would otherwise hold those dependent loads back), so reading the
//! worker back is one load.
//!
//! # Storage
//! (`storage/mod.rs`.)
//! Storage that outlives every reservation: per-slot in-flight counters
//! (`counters`), the worker key that owns each slot and a pin count for
//! uncharged reservations (`keys`), and the bookings made on them.
//!
//! The counters are one contiguous array sized for the pool's worker limit,
//! allocated zeroed up front (untouched pages cost no memory on Linux) and
//! never moved or freed while the pool lives. Growing the set therefore never
//! moves a counter and cannot lose a decrement (the growth hazard of
//! [`docs::sets`](crate::docs::sets)), reservations reach their counter
//! with one index, and the least-loaded scan reads one packed slice. Keys are
//! kept in chunks allocated as the set grows. Slots are *reused*, never freed;
//! when a slot may be reused is decided by the writer (see
//! `membership::Writer::reclaim`).
