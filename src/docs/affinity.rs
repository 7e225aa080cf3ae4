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
//! Measured when the layout was chosen (`benches/single.rs`, group
//! `affinity/<workers>`, `--quick`, the bench thread's CPU time, on a shared
//! 2-core AMD EPYC host where a `fetch_add` took 8 ns and power-of-two
//! reserve 20 ns; BENCHMARKS.md, "Affinity and sessions", has the latest
//! run beside pingora): reserve + read +
//! release over 4096 keys 27 ns at 8 workers, 31 ns at 1 024, 49 ns at 100 000, against
//! 39, 43 and 85 ns for the first layout in the same runs; the lock-based
//! bounded hash beside it (`BTreeMap` ring and loads under one mutex) 74,
//! 202 and 551 ns; pingora's Ketama `select` (no bound, nothing booked, an
//! allocation) 216, 338 and 1 243 ns. Two locked instructions (the booking
//! and the release, ~17 ns) are the floor; at 1 024 workers the 384 KB table
//! answers from L2 (the same pick over 16 keys took ~4 ns less), which is
//! most of what stands between 31 ns and the 30. Gated by callgrind:
//! `affinity_reserve_1024` and `affinity_reserve_100000` in
//! `iai/budgets.toml` (~311 instructions and 2 locked a pick, keys and
//! request included).
//!
//! **Why a ring.** Three preference orders were weighed:
//!
//! | order | pick | build (writer) | disruption |
//! |---|---|---|---|
//! | rendezvous (HRW) | O(n) hashes: ~n × 2 ns, 200 µs at 100 000 | none | exact: only the removed worker's keys |
//! | ring, 32 points a worker | one load of the key's bucket + ~1 step (O(1) expected), then the walk | sort of 32·n points | exact on removal; ≈ 1/(n+1) on addition |
//! | Maglev table | one load | O(M log M), M ≫ n prime | near-minimal, not exact: some keys of other workers move |
//!
//! Rendezvous misses the O(1)/O(log n) pick; Maglev's next choices (for the
//! bound) are not a stable order and a removal moves a few keys of workers that
//! stay. The ring gives both exact properties, and its lookup can be as flat as
//! Maglev's: the sorted points sit in a gapped table of `1.5 × points` entries
//! where each point takes the first free entry at or after its bucket
//! (`position × buckets / 2³²`) and each free entry holds a copy of the next
//! point. A key's first point is then at or just after its own bucket: one
//! load, and on average ~1 step over a point pushed along by earlier ones (a
//! queue at two-thirds load), in the same cache line. The first layout, a
//! bucket index into a separate array of points, cost two to three cache misses
//! at 100 000 workers (the bucket, the points before the key, the point after
//! them) where this costs one. Copies repeat the point they copy next to it, so
//! a walk meets every point in ring order and skips the repeats with the same
//! owner. Points are placed by a hash of the worker's key (SipHash with fixed
//! keys), never its slot, so replicas and a re-added worker agree; their number
//! is constant (32), so an addition never moves another worker's points. A
//! request key's position is one folded 64×64→128-bit multiply of the key (~4
//! cycles on the pick's critical path, against ~12 for a SplitMix finaliser).
//! Memory: 1.5 entries of 8 bytes a point (position and owner in one word),
//! ~0.4 KiB a worker, ~38 MB at 100 000 workers. The walk skips non-candidates
//! (a mask) and unhealthy workers; one full turn visits every candidate, so
//! unbounded hashing and health always find a healthy one if there is one (with
//! none, both take the least-loaded candidate). Draining workers are not on the
//! ring. A masked pick walks `≈ n/m` points for a mask of `m`.
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
//! itself instead, and only when it needs the total: a worker with nothing
//! in flight fits any bound (`0 ≤ ⌈x⌉`), so a key whose worker is idle
//! reads no total at all. Below 64 candidates, and for masked picks, a pick
//! that needs it sums them (as cheap as reading a shared total): the bound
//! is on the live total. From 64 on, unmasked picks read a total cached on
//! the ring. Every keyed, bounded pick, whether it needs the total or not,
//! retires the cached one with probability `8/n`, and the next pick that
//! needs one rescans and stores it (previews never store and never
//! retire): at most ~8 counter loads per pick amortised, none while keys
//! find idle workers.
//!
//! **How stale it may be.** A cached total, once stored, is used by the
//! picks that follow until one of them retires it: it outlives `k` picks
//! (of this pool, from any handle) with probability `(1 − 8/n)^k`, a run
//! of picks geometric with mean `n/8` (`(1 − 8/n)^k ≤ e^(−8k/n)`, under
//! `e^(−25)` for `k = 25n/8`). A pick bounds by the total `T_s` of that last
//! scan: its worker's load is at most `⌈f/100 · (T_s + r) / n⌉`. Against
//! the live total `T`:
//!
//! - bookings since the scan make `T_s` lower than `T`: the bound is
//!   stricter than the live total's, never looser (`n/8` bookings behind is
//!   `f/800` of a request per worker);
//! - releases since the scan make `T_s` higher, by at most the load
//!   released since: the bound is `⌈f/100 · (T + D + r) / n⌉`, `D` the
//!   load released since the scan, looser than the live total's until the
//!   cached total retires. So after a fleet sheds much of its load, picks
//!   may exceed `⌈f/100 · (T + r) / n⌉` for a run of picks of mean `n/8`,
//!   never past the bound of the total at the scan.
//!
//! When no candidate fits (a total older than a burst of bookings), the
//! pick rescans and walks again, then falls back to least-loaded. The
//! bound itself is compared by multiplying (`load · d < n + d` for
//! `load ≤ ⌈n / d⌉`): no division on the pick. Tested:
//! `a_cached_total_left_high_by_releases_lives_a_few_picks` in
//! `tests/suite/affinity.rs` releases `100 · n` reservations on 64 and 128
//! workers and checks every pick against the live total (and against the
//! total at the peak, the most a stale one can be): the picks over the
//! live total's bound stay within `25 · n/8`, where a total that never
//! retired puts ~550 of 600 over.
//!
//! Tests: `tests/suite/affinity.rs` (only the removed worker's keys move among
//! 100; an added one takes ≤ 1/101 + 1 %; the bound under Zipf keys with
//! reservations held, weighted bounds, stale totals; health, draining,
//! masks; replicas agree; a threaded run that holds the bound and one that
//! churns membership and ends idle), `tests/suite/alloc.rs`, unit tests of the
//! gapped table against the sorted points (a key's first point, and the
//! order of a full walk from any key); the simulator's sessions
//! scenario and `sim/tests/sessions.rs`.
//!
//! # Session bindings
//! `Sessions` (feature `sessions`) binds a session key to
//! the worker its first request went to. A binding names the worker's slot and
//! identity generation; a bound request checks both against the snapshot its
//! handle holds for it (the stale-pick rule of [`docs::internal::sets`](super::internal::sets)), so
//! a binding never lands on a worker that reused the slot, and a binding racing
//! its worker's removal either sees the worker (a request that started before
//! the removal returned) or does not (hard:
//! [`Error::SessionWorkerGone`](crate::Error::SessionWorkerGone) once, the
//! binding dropped; soft: the selector's pick, rebound). That decision
//! (`affinity/binding.rs`) runs on the pool's atomics alone and is modelled by
//! loom; the map is not loom-aware and stays out of the model. A bound hit is
//! booked as a pinned target is (`Pool::reserve_worker`: no load check, no
//! selector): it goes home however loaded home is (use
//! [`Affinity`](crate::Affinity) as the selector to bound where new sessions
//! land).
//!
//! The map is `papaya`'s: lock-free reads (an epoch pin and a probe),
//! maintained, no `unsafe` of ours; a sharded `RwLock<HashMap>` would put a
//! shared reader count on every lookup. Its hasher is one folded multiply
//! of the session id with a per-table random seed (std's SipHash cost ~7 ns
//! a lookup). An entry's last-use time is stored only when the millisecond
//! moved, so a hot session's entry stays read-shared; the time is the
//! kernel's coarse monotonic clock on 64-bit Linux (~5 ns, ticks of 1–4 ms,
//! against ~28 ns for `Instant::elapsed`). Binding a new session allocates
//! its entry; the table holds at most `max_sessions` and sweeps idle and
//! orphaned entries when full (else the session routes unbound).
//!
//! Measured (`benches/single.rs`, `affinity/<workers>/bound-session`, as
//! above): a bound session's request, reserve + read + release, 42, 43 and
//! 46 ns at 8, 1 024 and 100 000 workers, against 99, 104 and 120 ns before
//! (SipHash, `Instant`, a pick through the selector machinery, and two
//! copies of the result that stalled). It costs three locked instructions
//! (the booking, its release, and leaving `papaya`'s epoch, an exchange),
//! the clock, the hash and the probe: the plain call misses the issue's
//! 40 ns by 2–6 ns here. `Sessions::pin` holds the epoch for a run of
//! requests (`PinnedSessions`: 29, 30 and 34 ns), at the price that bindings
//! dropped meanwhile are freed only after the pin goes. Copying the
//! reservation out of a `(reservation, outcome)` pair stalled on store
//! forwarding (a 16-byte load over fields just written in 4-byte parts):
//! the outcome is written through a reference instead, and
//! `Sessions::reserve` is inlined into its caller. Gated by callgrind:
//! `session_reserve_bound_1024` (~371 instructions and 3 locked a request;
//! the count moves by ~3 % with the table's random hash seed).
//!
//! Replicas exchange bindings in their [`Summary`](crate::Summary):
//! `Sessions::summary` adds the live bindings of its pool's sessions, each
//! with its idle time, and `Sessions::apply_summary` imports them when the
//! pool takes the summary (not its own, not older than one applied). An
//! imported binding is as idle as it was where it was made, so it expires
//! on both replicas alike, and the binding used last wins, so replicas that
//! send each other summaries converge. The field is left out of the
//! serialised form when empty and defaults to empty when absent: JSON
//! summaries without bindings read and write exactly as before it existed
//! (a positional format, such as bincode, needs both ends upgraded).
//! Tests: `tests/suite/sessions.rs` (hard/soft, TTL, bounded churn, slot
//! reuse, replica hand-off through summaries and their wire format, idle
//! ages, threads under membership churn); loom `sessions`; the fuzz op
//! model (bind, look up, unbind, sweep, export and import against a model
//! table).
