//! What this crate does not do, and the edges of what it does.
//!
//! - The total in-flight weight booked on one worker is at most `u32::MAX`;
//!   a booking past it fails with [`Error::LoadOverflow`](crate::Error::LoadOverflow).
//! - A pool holds at most its worker limit of slots (live workers plus
//!   removed ones still draining); the counters for the limit are reserved up
//!   front (4 bytes a slot).
//! - A `Handle` that is never used again keeps its cached snapshot alive; the
//!   slots of workers removed since then are not reused until it is dropped or
//!   picks again (the pool takes fresh slots meanwhile).
//! - A snapshot caches the translations of up to 32 eligibility masks built
//!   before a worker left; a further such mask is filtered on every pick,
//!   which makes least-loaded and device-aware picks with it quadratic in
//!   the mask's size. Rebuild masks after the set changes to stay clear of it
//!   ([`Eligibility::is_current_for`](crate::Eligibility::is_current_for)).
//! - Reservations borrow the pool. To move them into `'static` tasks, share
//!   the pool as an `Arc<Pool<W>>` and pick through an
//!   [`OwnedHandle`](crate::OwnedHandle); each owned reservation then pays one
//!   uncontended reference-count increment and decrement on its handle's
//!   anchor (see [`design`](super::design), *Owned forms*).
//! - Least-loaded with concurrent releases may be one release stale; without
//!   releases it is exact. Its tie-break is uniform over the lanes as they
//!   were read; lanes that move during a scan shift the odds slightly (a pick
//!   is always a lane seen at the minimum, validated by the compare-and-swap).
//! - Least-loaded's speed depends on how many workers tie: an idle or
//!   balanced pool takes the fast path (the min pass and one random try);
//!   with only a few workers at the minimum it also counts and searches the
//!   ties (at 1 024 and 10 000 workers about 2.8 to 3.3 times the
//!   instructions of an idle pick: `iai/budgets.toml`; times in
//!   BENCHMARKS.md, *4 ties* and *Large pools*).
//! - Least-loaded in sublinear time (per-block lower bounds) is kept by pools
//!   with room for 1 024 slots or more (the default limit among them); a pool
//!   built [`with_max_workers`](crate::Pool::with_max_workers) below that
//!   scans every counter.
//!   The bounds are over every lane, so a masked pick reads them only for
//!   what they can show: it tries lanes at the least bound, and finds one
//!   while the mask admits some of the workers at the least load (an idle or
//!   balanced pool, a mask unrelated to load: `masked/n` in BENCHMARKS.md,
//!   1.2 to 2 times the unmasked pick at 16 384 workers). Where the mask
//!   leaves out every worker at the least load (it admits only busy ones) it
//!   scans flat. A draining worker holding its block's least counter makes
//!   picks scan flat until it drains.
//! - Reported load (workers' reports, replicas' summaries) counts at most
//!   [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD) per worker, and shares the
//!   counter's range with bookings: a booking is refused when bookings plus
//!   reported load would pass `u32::MAX`. Reported load is as fresh as its
//!   last report: a report much older than a service time steers picks worse
//!   than none (the simulator's replica scenario shows it); keep report and
//!   summary periods well under the service time, and the age limit short.
//! - Applying a replica's summary moves each counter whose load changed with
//!   one compare-and-swap: a summary in which every one of n workers changed
//!   costs at least n of them, about twice an unchanged one (BENCHMARKS.md,
//!   "Reported load").
//! - Capacities weigh random, round-robin, power-of-two and least-loaded;
//!   device-aware ignores them (its groups are by cache hits, and within a
//!   group it picks the least loaded, unweighted).
//! - Weighted least-loaded takes the SIMD scan only when the least common
//!   multiple `L` of the (gcd-reduced, slow-start-scaled) capacities is at
//!   most 2^16, and only while the least `(load + r) · L / c` fits 32 bits;
//!   otherwise (capacities such as 1 000, 999 and 997, or loads within a
//!   factor `L` of `u32::MAX`) it scans in scalar code, exactly, at about the
//!   cost of the scalar backend. The bounds on scores serve requests of
//!   weight 1 only (they bound `(load + 1) · L / c`); a heavier request, a
//!   masked pick, or a pool below 1 024 lanes scans every lane's score. A
//!   flat weighted scan does more per vector than the plain one: two loads
//!   (counters, factors), a clamp, an add and a multiply where the plain scan
//!   does one load and one minimum. The first pick after a change of the
//!   factors (a capacity set, a slow-start step) finds every bound unknown
//!   and raises them all: about two flat scans, once per change.
//! - Weighted round-robin keeps its schedule as a list of Σc entries (4 bytes
//!   each) while Σc ≤ max(2^16, 16n); past that it walks tickets by a stride
//!   rule, a few per pick for ordinary spreads, bounded, then one weighted
//!   draw.
//! - A slow-start step publishes a new snapshot (O(n) for the writer, as any
//!   membership change); a pool nobody writes to publishes it from a
//!   reservation that finds it due, so a pool that only selects (never
//!   reserves) needs [`Pool::advance_slow_start`](crate::Pool::advance_slow_start)
//!   called now and then.
//! - An unhealthy worker's counter carries `2^31` beside its bookings, so it
//!   takes bookings only up to `u32::MAX − 2^31`, and a worker whose counter
//!   is already within `2^31` of `u32::MAX` gets a smaller mark.
//! - A worker with R data-parallel ranks takes R of the pool's worker slots,
//!   side by side ([`Pool::with_max_workers`](crate::Pool::with_max_workers)
//!   counts slots). Free slots between live ones that are too few for a new
//!   worker's ranks stay free while the allocated range (which the scan
//!   covers) grows. Its rank count is fixed while it is in the set or its
//!   ranks drain (see [`sets`](super::internal::sets), *Data-parallel ranks*). Masks are by worker
//!   (all ranks or none); a pinned booking without a rank takes the
//!   least-loaded rank as read, unvalidated; replicas must agree on rank
//!   counts (a summary entry for a rank the receiving worker lacks is
//!   skipped); a session imported onto a worker with ranks binds to rank 0.
//! - The AVX-512 kernel (the default on AVX-512 CPUs) runs in the unit tests
//!   only where the test machine has AVX-512. So that every CI host tests it,
//!   the repository's `ci/avx512.sh` builds its source files alone (the
//!   AVX-512 primitives and the shared vector scan) and runs them on an
//!   emulated CPU (the Bochs x86 emulator) against a reference: every length
//!   up to 600 and around 1 024, at every alignment, with the arrays' ends
//!   against an unmapped page, with and without an exclusion array.
//!   `WORKERPICK_SCAN=avx2` (or
//!   [`Pool::with_scan_backend`](crate::Pool::with_scan_backend)) opts out.
//! - The NEON kernel (the default on aarch64) has been run only under
//!   `qemu-aarch64` (`ci/aarch64.sh`): that checks its results against the
//!   scalar reference, not its speed, nor ARM's weaker memory ordering (the
//!   loom models cover the orderings). Its speed on ARM hardware is still to
//!   be measured; it runs the same vector algorithm as AVX2 and AVX-512, four
//!   lanes to a vector. `WORKERPICK_SCAN=scalar` opts out.
//! - Packages considered: `wide` picks instructions at compile time only, and
//!   on the default x86-64 target its unsigned 32-bit min is per-lane scalar
//!   (slower than a plain loop), so the x86-64 scan uses `std::arch` with
//!   run-time detection instead. On aarch64, where NEON is the baseline, the
//!   NEON kernel does its lane arithmetic with `wide`. `portable-atomic` is
//!   not needed because every atomic here is a native 32- or 64-bit one on the
//!   supported targets (armv7's 64-bit atomics included).
