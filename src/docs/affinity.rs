//! Affinity: consistent hashing with bounded loads, and session bindings.
//!
//!
//! # Bounded-load affinity
//! [`Affinity`](crate::Affinity) is consistent hashing with bounded loads
//! (Mirrokni, Thorup and Zadimoghaddam; HAProxy's and Envoy's
//! `hash-balance-factor`): a key's preference order over the candidates is
//! a walk around a ring, and the pick takes the first healthy candidate
//! whose load is at most `⌈f/100 · (total + r) / n⌉` (`f` the balance
//! factor, `r` the request's weight; with capacity weights worker `i`'s
//! share is `cᵢ / Σc`, compared exactly in 128-bit integers). The booking is
//! validated on the load compared, so the bound holds under concurrent
//! routers: with reservations held, every worker ends at most
//! `⌈f/100 · average⌉ + 1`. (HAProxy checks the load after booking,
//! `load + 1 ≤ cap`; this crate's rule checks it before, so a worker may end
//! one request above the cap, never more.)
//!
//! Measured (`benches/single.rs`, group `affinity/<workers>`, `--quick`, on
//! a shared 2-core host where power-of-two reserve took 24 ns and
//! least-loaded 35–42 ns in the same session): reserve + read + release over
//! 4096 keys 64 ns at 8 workers, 79 ns at 1 024, 428 ns at 100 000 (the
//! ring is 40 MB there: a lookup misses the cache for the bucket, the point
//! and the counter); the lock-based bounded hash beside it (`BTreeMap` ring
//! and loads under one mutex) 73 ns, 220 ns and 1.2 µs. A bound session
//! through `Sessions`: 131, 103 and 224 ns (its clock
//! read is ~20 ns of that). These miss the 30/60/40 ns goals the affinity
//! issue set; the budget is unmet and not gated.
//!
//! **Why a ring.** Three preference orders were weighed:
//!
//! | order | pick | build (writer) | disruption |
//! |---|---|---|---|
//! | rendezvous (HRW) | O(n) hashes: ~n × 2 ns, 200 µs at 100 000 | none | exact: only the removed worker's keys |
//! | ring, 32 points a worker | one bucket load + ~1 step (O(1) expected), then the walk | sort of 32·n points | exact on removal; ≈ 1/(n+1) on addition |
//! | Maglev table | one load | O(M log M), M ≫ n prime | near-minimal, not exact: some keys of other workers move |
//!
//! Rendezvous misses the O(1)/O(log n) pick; Maglev's next choices (for the
//! bound) are not a stable order and a removal moves a few keys of workers
//! that stay. The ring gives both exact properties and an O(1) start: a
//! bucket index over the top bits of the position (one bucket per point on
//! average) replaces the binary search. Points are placed by a hash of the
//! worker's key (SipHash with fixed keys), never its slot, so replicas and a
//! re-added worker agree; their number is constant (32), so an addition
//! never moves another worker's points. Memory: one 8-byte word a point
//! (position and owner, so a lookup misses the cache once for both) plus
//! up to 4 bytes of index, ~0.4 KiB a worker (~40 MB at 100 000 workers). The walk
//! skips repeats of the same owner, non-candidates (a mask) and unhealthy
//! workers; one full turn visits every candidate, so unbounded hashing and
//! health always find a healthy one if there is one. Draining workers are
//! not on the ring. A masked pick walks `≈ n/m` points for a mask of `m`.
//!
//! **Opt-in.** Building the ring costs every membership change a sort, and
//! pools that do not use a feature must pay nothing for it: so [`Pool::enable_affinity`](crate::Pool::enable_affinity)
//! turns it on, and snapshots built afterwards carry it (republishing for
//! capacities, health and slow start reuses it: it is rebuilt only when the
//! candidates' slots or generations change). Without a ring, or without a
//! request key, an affinity pick is a least-loaded pick, so code that runs
//! every [`Mode`](crate::Mode) keeps working.
//!
//! **The total.** An exact live total would be one more shared counter that
//! every booking and release of every pool touches, a contended cache line
//! the plain modes would pay for. The pick sums the candidates' loads
//! itself instead: below 64 candidates on every pick (as cheap as reading a
//! shared total); from 64 on, unmasked picks read a total cached on the
//! ring, which a pick rescans with probability `8/n` (about 8 counter loads
//! per pick, amortised; previews never store). Between rescans the cached
//! total lags by about `n/8` bookings, i.e. by `f/800` of a request per
//! worker in the bound; with reservations only growing it is an
//! underestimate, which makes the bound stricter, never looser. When no
//! candidate fits (a total older than a burst of bookings), the pick
//! rescans and walks again, then falls back to least-loaded. Masked picks
//! sum their own candidates every time.
//!
//! Tests: `tests/suite/affinity.rs` (only the removed worker's keys move among
//! 100; an added one takes ≤ 1/101 + 1 %; the bound under Zipf keys with
//! reservations held, weighted bounds, stale totals; health, draining,
//! masks; replicas agree; a threaded run that holds the bound and one that
//! churns membership and ends idle), `tests/suite/alloc.rs`, unit tests of the
//! ring's bucket index against a linear search; the simulator's sessions
//! scenario and `sim/tests/sessions.rs`.
//!
//! # Session bindings
//! `Sessions` (feature `sessions`) binds a session key to
//! the worker its first request went to. A binding names the worker's slot
//! and identity generation; the pick checks both against the snapshot it
//! loaded (the stale-pick rule above), so a binding never lands on a worker
//! that reused the slot, and a binding racing its worker's removal either
//! sees the worker (a pick that started before the removal returned) or does
//! not (hard: [`Error::SessionWorkerGone`](crate::Error::SessionWorkerGone)
//! once, the binding dropped; soft: the selector's pick, rebound). A bound
//! hit is booked unvalidated, as a pinned target: it goes home however
//! loaded home is (use [`Affinity`](crate::Affinity) as the selector to
//! bound where new sessions land). The map is `papaya`'s: lock-free reads
//! (an epoch pin and a probe), maintained, no `unsafe` of ours; a sharded
//! `RwLock<HashMap>` would put a shared reader count on every lookup. An
//! entry's last-use time is stored only when the millisecond moved, so a
//! hot session's entry stays read-shared. Binding a new session allocates
//! its entry; the table holds at most `max_sessions` and sweeps idle and
//! orphaned entries when full (else the session routes unbound).
//! `export`/`import` move bindings between replicas by worker identity.
//! Tests: `tests/suite/sessions.rs` (hard/soft, TTL, bounded churn, slot reuse,
//! replica hand-off, threads under membership churn).
