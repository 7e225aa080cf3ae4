//! The load signals a pick compares, and how they combine (`load/`).
//!
//! A pick compares *one number per candidate*, read from one packed `u32`
//! counter per worker, so that the scan stays one SIMD pass and a booking
//! one compare-and-swap on the value compared. Every signal either lives in
//! that counter, scales it, or is a per-request input beside it:
//!
//! | signal | where | how it combines | who reads it |
//! |---|---|---|---|
//! | booked load | the counter (`storage/counters.rs`) | `+ weight` per reservation, `−` on release | every load-aware mode |
//! | reported load | the counter, its part kept on the board (`load/reported.rs`) | `+ reported` (capped at [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD)) | every load-aware mode (and [`ReplicaLeastLoaded`](crate::ReplicaLeastLoaded) apart) |
//! | health | the counter, the mark beside it (`load/health.rs`) | `+` [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD), compared apart from load by the exact paths | every mode |
//! | capacity, slow start | the snapshot's weight tables (`weights/`) | `(load + r) ÷ capacity`, exact (`load/ratio.rs`) | random, round-robin, power-of-two, least-loaded, affinity |
//! | latency | a table of peak-EWMA cells (`storage/latency/`) | `estimate × (load + 1)` | the latency modes |
//! | cache credit | per request ([`CacheHits`](crate::CacheHits), `credit/`) | `load − α·credit` | cost, device-aware (full hits) |
//!
//! So `effective load = booked + reported (+ the health penalty)`: what
//! [`Context::load`](crate::Context::load) returns and what every booking
//! validates. Capacity divides it, latency multiplies it, credit is
//! subtracted from it, each in exact integer arithmetic stated in its
//! section. A new signal goes here: in the counter if every mode must see
//! it (and it can share the counter's range), else as a factor or a
//! per-request input that only the modes that read it pay for. Which
//! optional signals a pool uses now is one word (`storage/features.rs`),
//! so a pool that uses none tests one word and reads none of them.
//!
//! Health is on the [`fleets`](super::fleets) page ("Health"), capacities and
//! slow start there too, credit on the [`llm`](super::llm) page ("Cost pick").
//!
//! # Reported load
//! Load from outside the pool — a worker's own report, a peer router's
//! [`Summary`](crate::Summary) — is folded into the same counter as the pool's
//! bookings: a counter holds `booked + reported`. Picks therefore compare
//! effective load with the scan and the compare-and-swap they always made; no
//! pick reads anything more (measured first the other way, a second array added
//! lane-wise in the scan: least-loaded at 1 024 workers went from 57 to 95 ns).
//! Beside the counters, the board (`load/reported.rs`) holds per slot the part of
//! the counter that was reported; the exact sums over sources, who each slot
//! belongs to, and each peer's last summary are kept under the report lock
//! (`load/reports/state.rs`). Invariants, and why they hold:
//!
//! - **No count lost or overwritten.** A report moves a counter by
//!   compare-and-swap from the value it read to `booked + new`, where
//!   `booked = read − board`: bookings and releases landing in between make it
//!   retry, never vanish. Only report writers change the board, under the lock.
//! - **The pool's own bookings stay exact.** Bookings and releases add and take
//!   back only their own weight. `in_flight`, `loads` and `summary` read
//!   `counter − board` under the report lock (once anything was ever reported),
//!   so the two parts are read together.
//! - **No wrap.** A slot's sum is capped at [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD)
//!   (`2^31 − 1`) and folded only as far as fits below `u32::MAX` beside the
//!   bookings (the rest is counted at the slot's next report). Bookings keep
//!   their overflow check on the whole counter, so they are refused at
//!   `u32::MAX − reported` rather than `u32::MAX`: half the range is always theirs.
//! - **Never inherited.** A slot's keeping is tagged with the worker's identity
//!   generation and a fresh tag per reset. After every membership change the
//!   writer drops what is kept for slots whose member changed, taking the
//!   reported part out of the counter; reporters load the snapshot under the
//!   report lock, after setting a SeqCst flag the writer reads after publishing,
//!   so a report resolved against an old snapshot is applied before the drop and
//!   dropped by it. A slot with reported load in its counter is never reclaimed
//!   (reclaim needs the counter at zero), so reported load cannot outlive its
//!   worker onto the slot's next owner. A peer entry made before a reset never
//!   subtracts from the sums after it (its tag no longer matches).
//! - **Ageing.** Each source (a worker's own report, a peer's summary) carries
//!   the time it arrived; one older than the age limit is dropped at the next
//!   report, at [`Pool::expire_reports`](crate::Pool::expire_reports), or by the
//!   first reservation that finds the earliest deadline passed (one in 1024 per
//!   thread reads the clock while reports are counted; it only `try_lock`s).
//!
//! Summaries are absolute, not deltas: a replica's summary replaces its earlier
//! one, so loss, duplication and reordering (an older sequence number is
//! ignored) leave nothing behind, and no per-message state must be kept in step
//! between replicas. They hold only workers with load; a summary carries the
//! sender's own bookings only, so replicas never echo reports back. Applying
//! one resolves each worker by first trying the slot its entry had in the peer's
//! last summary (one key comparison) and only then the hash index, sums the
//! changes in plain memory, and touches only the counters whose reported part
//! moved.
//!
//! Replicas that pick with least-loaded over summaries a sync period old all
//! see the same worker as the least loaded and book it at once (herding: in the
//! simulator, 31 % over one router's p99 on identical workers at half a service
//! time). What they lack is the peers' picks since their last summary, which no
//! rule over the summaries can see;
//! [`ReplicaLeastLoaded`](crate::ReplicaLeastLoaded) weighs a replica's own
//! exact bookings above the reported load, which decorrelates the replicas, and
//! with a period of 1/20 of the service time keeps 4 of them within 10 % of one
//! router (`sim/tests/replicas.rs`). A built-in written over the public
//! [`Context`](crate::Context) (`load`, `reported_load`) alone.
//!
//! Models: `loom-tests/tests/reported.rs` (one fails when a report stores
//! instead of compare-and-swapping, another when departures keep their reports);
//! tests: `tests/suite/reported.rs`; the fuzz op model folds reports into its counts;
//! the allocation test runs with reported load present.
//!
//! # Latency
//! A worker that is slow rather than busy (a GC pause, a degraded GPU) shows
//! no more in-flight load than a fast one; the latency signal sees it. Per
//! slot, one `u64` cell holds a peak-EWMA round-trip estimate in µs and the
//! millisecond of its last sample (`storage/latency/ewma.rs`): a sample above the
//! estimate replaces it (the peak), a lower one mixes in as
//! `cost·w + rtt·(1 − w)`, `w = exp(−Δt/τ)`; a read decays the estimate to now
//! as if a 0-RTT sample arrived (`cost·w`) without writing. `w` is exact
//! integer arithmetic: `2^−x`, `x = Δt/(τ·ln 2)` in 1/256 steps, a Q32 table
//! for the fraction and a shift for the whole part (at most 0.3 % low).
//! No history reads as the default RTT.
//!
//! - **Opt-in.** `Pool::with_latency` allocates the table; a pool without it
//!   has `None` there, its reservations are the plain ones (only a
//!   [`Timed`](crate::Timed) wrapper reads a clock), and the plain modes never
//!   look at it. The latency modes on such a pool compare load alone.
//! - **Samples.** A `Timed` reservation reads the clock (`quanta`'s TSC: see
//!   the `latency` bench group for why not `Instant`) when it is made and when
//!   it ends, turns the ticks into µs (the sample) and ms (its stamp) with one
//!   widening multiply each (factors from quanta's calibration, taken when
//!   the pool is built), and folds the sample into its slot's cell with a
//!   bounded compare-and-swap loop (8 tries; past that the sample is dropped,
//!   8 newer samples having landed). A sample that leaves the cell as it is
//!   (below the estimate, in the millisecond of the last sample: `w = 1`)
//!   writes nothing. A failed end counts as at least the failure
//!   penalty, so a worker that fails fast looks slow, not idle. The sample
//!   lands before the booking is given back, so it never reaches a slot that
//!   was reused; reuse clears the cell.
//! - **What a timed reservation costs.** Two reads of the time-stamp
//!   counter, which cannot be one: a round trip needs both ends, and any
//!   cheaper stand-in for the start (the pool's last completion, a coarse
//!   clock) is off by as much as the gap between completions, which is the
//!   round trip itself in a quiet pool. With the booking's and the release's
//!   locked instructions that every reservation pays, these four set the
//!   floor the `latency` bench measures beside it (group `latency/clock`).
//! - **Reads.** Picks decay to the latest millisecond any sample ended at
//!   (one shared, rarely written word), not to a clock read: one stale by the
//!   gap between completions only decays less. Cells are read Relaxed: each
//!   is its own only datum, and a pick racing an update sees the old or the
//!   new estimate, never a torn one (loom: `loom-tests/tests/latency.rs`).
//! - **Combining.** Cost = `estimate × (load + 1)` in `u64` (both factors
//!   < 2^32), where load is the effective load every mode sees (booked +
//!   reported, see *Reported load*); in a weighted pool cost/capacity is
//!   compared by cross-multiplying in `u128`. Masks narrow the candidates
//!   first; health passes over unhealthy winners as the plain modes do.
//!   Booking is CAS-validated on the load compared, as in power-of-two.
//! - **Least-loaded by latency is a scalar pass.** The SIMD scan compares one
//!   `u32` key per lane computed from that lane alone; here each lane's key
//!   needs its cell decayed from its own stamp (`2^−x`: a lookup in a
//!   256-entry table, a variable shift, and two 32×32→64-bit products), then
//!   a 64-bit product with the load. That is a gather per lane on AVX2 and
//!   AVX-512 and a scalar lookup on NEON; the alternative, ranking by a
//!   time-normalised logarithm that a sample rewrites, changes the cost that
//!   power-of-two compares. Neither was built: the pass costs one cell and
//!   one counter read per candidate, linear in the candidates (the bench
//!   `latency-least-loaded/n` beside the plain least-loaded scan).
//!
//! # Reports and their sources
//! (`load/reports/mod.rs`.)
//! Load reported from outside the pool: by the workers themselves, and by the other
//! router replicas in front of the same fleet (their `Summary`s).
//!
//! Every load-aware pick compares *effective* load: the pool's own in-flight count
//! plus the reported load. The reported part is folded into the same counter the
//! bookings change, so a pick reads one counter per worker, scans one array, and
//! validates its booking with the one compare-and-swap it always made: reported
//! load costs a pick nothing. A report moves a counter by compare-and-swap too, so
//! it never overwrites a booking or a release; the part of each counter that was
//! reported is kept beside it (the board), which is how the pool still knows its
//! own bookings exactly (`Pool::in_flight`, `Pool::summary`). Reported load is
//! capped at `MAX_REPORTED_LOAD` per worker, half the counter's range.
//!
//! Reports are kept per source: each worker's own report, and each peer router's
//! last summary. A new report from a source replaces that source's earlier one, and
//! a source not heard from for the age limit (`Pool::set_report_max_age`, 5 s by
//! default) stops counting, so a reporter that dies cannot pin a worker as busy.
//! Ageing is checked whenever a report arrives, on `Pool::expire_reports`, and by
//! reservations: one in 1024 per thread reads the clock while some report is
//! counted, and if a source is due, the one that sees it drops it (unless a report
//! writer holds the lock; it never waits).
//!
//! Writers of reports serialize on a lock of their own; picks never take it.
//!
//!
//! # The latency table
//! (`storage/latency/mod.rs`.)
//! Latency: a per-worker peak-EWMA round-trip estimate, the load signal that
//! sees a worker that is slow rather than busy (a GC pause, a degraded GPU).
//!
//! Opt-in per pool (`Pool::with_latency`); a pool without it holds no table
//! and its picks and releases read no clock. Samples come from
//! `Timed` reservations when they end, lock-free (one compare-and-swap on
//! one packed cell); picks read a cell without writing it. How it combines
//! with the other signals: the latency-aware modes rank by
//! `estimate × (load + 1)`, where load is the effective load every mode sees
//! (booked + reported), divided by capacity in a weighted pool; health and
//! masks narrow the candidates first, as everywhere. See
//! [`docs::load`](crate::docs::load#latency).
//!
