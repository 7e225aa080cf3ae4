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
//! [`docs::internal::sets`](crate::docs::internal::sets)), reservations reach their counter
//! with one index, and the least-loaded scan reads one packed slice. Keys are
//! kept in chunks allocated as the set grows. Slots are *reused*, never freed;
//! when a slot may be reused is decided by the writer (see
//! `membership::Writer::reclaim`).
//!
//! # Data-parallel ranks
//! A worker inserted with [`WorkerInfo::ranks`](crate::WorkerInfo::ranks)`(R)`
//! runs R data-parallel ranks (Dynamo's and SGLang's DP attention: the router
//! routes to `(worker, rank)`, and each rank reports its own load and keeps its
//! own KV cache). It is one entry of the set for its user and R candidates for
//! a pick.
//!
//! **Layout.** The worker takes R consecutive slots, rank `r` in `first + r`.
//! Everything kept per slot is therefore per rank, with no code of its own:
//! the counter (bookings, reported load and the health penalty folded into it),
//! the snapshot's candidate list (a worker's ranks side by side, rank 0 first)
//! and exclusion lanes, identity generations, capacity weights, device-kind
//! lanes, the affinity ring's points, the latency table, and a request's cache
//! credit ([`CacheHits`](crate::CacheHits)). So every mode — the SIMD
//! least-loaded scan and its per-block bounds, power-of-two's two draws,
//! round-robin's cursor, the cost mode's dense and sparse passes, affinity —
//! treats ranks as lanes of the one counter array, in the one pass it always
//! made. What is the worker's is kept once, in the writer's member list: its
//! key (cloned into each rank's slot, so a pick names its worker with the one
//! load it always made), its attributes (copied to each rank's slot: capacity
//! weighs each rank), its drain (excludes all its slots), its membership.
//! The snapshot keeps workers without ranks in its `index` and workers with
//! ranks in a second map (`ranked`), consulted only when the first misses.
//!
//! **Invariants, and why they hold.**
//! 1. *A pick names a rank of a member.* Candidates are slots; a rank's slot is
//!    a member's exactly when its worker is (membership, drain and masks are
//!    per worker, written for every rank of it in the same snapshot).
//! 2. *A worker's slots stay its own, all of them, while anything can reach any
//!    of them.* The writer frees a removed worker's slots together, once no
//!    live snapshot names them and every rank's counter and pin count read zero
//!    (the Acquire reads that guard one slot, taken for each). A booking on one
//!    rank — by a pick that loaded a snapshot before the removal — therefore
//!    lands on that worker's rank, never on a slot's next owner: loom
//!    `ranks_stale_pick`, `ranks_reuse_after_release`
//!    (`loom-tests/tests/ranks.rs`); taking rank 0's counter as the worker's
//!    makes the second fail.
//! 3. *Each rank is an identity of its own.* Rank `r`'s generation is the
//!    worker's plus `r` (generations are handed out R at a time), so a mask, a
//!    credit, a report or a session that names a slot never carries over to
//!    another rank or another worker.
//! 4. *The rank count is fixed while any slot of the worker is reachable.*
//!    `set_info` refuses another count; a removed worker re-inserted while its
//!    ranks still drain comes back with the same count (its retained load is
//!    in those slots; another count is refused until they are reclaimed), and
//!    `replace` brings it back as it was.
//! 5. *A reservation's rank is its slot's.* The rank index of each slot is
//!    stored beside its key in the slot storage, written by the writer before
//!    the slot is published and read by [`Reservation::rank`](crate::Reservation::rank)
//!    under the key's contract (the booking keeps the slot from being
//!    reassigned).
//!
//! **Worker-level calls.** Health marks every rank under one report lock;
//! [`drained`](crate::Pool::drained) waits for every rank's bookings and pins;
//! [`in_flight`](crate::Pool::in_flight), [`loads`](crate::Pool::loads) and
//! [`reported_load`](crate::Pool::reported_load) sum the ranks (the `_rank`
//! forms read one); a whole-worker [`report_load`](crate::Pool::report_load)
//! is spread evenly over the ranks; [`reserve_worker`](crate::Pool::reserve_worker)
//! and `retarget` take the least-loaded rank as read (lowest on a tie,
//! unvalidated like any pinned booking), [`reserve_rank`](crate::Pool::reserve_rank)
//! names one; [`CacheHits`](crate::CacheHits) built per worker gives its count
//! to every rank (the `_ranked` builders take one per rank); an
//! [`Eligibility`](crate::Eligibility) admits all of a worker's ranks or none,
//! asking once per worker; [`Pool::summary`](crate::Pool::summary) lists the
//! ranks of workers with ranks apart (`Summary::rank_loads`), applied per rank;
//! the latency estimate of a worker is the mean of its ranks'. Pairs carry the
//! decode rank from the preview to the admit, which books that rank when its
//! load still reads as seen.
//!
//! **What pools without ranks pay.** No instruction on a pick, preview,
//! reservation or release: the callgrind gate's counts are the same before and
//! after (BENCHMARKS.md, "Data-parallel ranks"). Nothing on the pick path
//! tests for ranks: the rank is read only when asked for
//! (`Reservation::rank`, `select_ranked`, `preview_ranked`), a pinned booking
//! looks a worker up in `index` as it always did (the second map only on a
//! miss, out of line), and `apply_summary` keeps its old loop when neither side
//! has ranks. Memory: 4 bytes per slot for the rank index in the key chunks;
//! [`WorkerInfo`](crate::WorkerInfo) keeps its 12 bytes (the count is a `u16`
//! in its padding). Writers walk each member's slots (one, for a worker
//! without ranks).
