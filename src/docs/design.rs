//! How the crate is built, what must stay true, and what proves it.
//!
//! # Invariants
//! 1. A pick returns one of its candidates (the current set, narrowed by the
//!    request's eligibility mask) or an error; it never panics, takes no lock
//!    and allocates nothing. The same holds for previews, reservations and
//!    releases.
//! 2. A reservation books its weight on one worker's counter and gives back
//!    exactly that, exactly once (drop, unwind or explicit release); a
//!    retarget moves exactly one booking.
//! 3. In-flight counts belong to a worker's identity, not to a snapshot: a
//!    swap keeps the counts of the workers that stay, and a removed worker's
//!    count lives until its last release (re-adding it shows that load).
//! 4. A pick that starts after a removal returned never chooses the removed
//!    worker; a stale pick never charges a worker other than the one it names.
//! 5. Without releases, least-loaded is exact: `T` threads reserving `k`
//!    times over `W` idle workers end at exactly `kT/W` each.
//! 6. A preview changes nothing: no cursor advance, no booking.
//!
//! # Layers
//! Each file holds one concept; imports go from the defining module and only
//! downwards, with no circle among files nor among top-level modules
//! (`tests/suite/layout.rs` checks both). From the top:
//!
//! | layer | files |
//! |---|---|
//! | admission, the prefix index, engine events, glue | `queue/` ([`Queue`](crate::queue::Queue): requests wait for room by priority class and tenants' fair shares; above the pick, which does not know it: see [`admission`](super::admission)), `prefix/` (block keys, the lock-free table and its writer, lookups into [`Matches`](crate::prefix::Matches): see [`prefix`](super::prefix); it feeds [`CacheHits`](crate::CacheHits) and nothing below it depends on it), `kv_events/` (features `kv-events`, `kv-events-zmq`: the wire decoder, one applier per engine into the prefix index with its gap rule, the ZMQ subscriber), `service/`, `hold/` |
//! | entry points over the pool | `affinity/` (bounded-load affinity's binding, the session table), `owned/` (owned handles and reservations, and `Pool::owned_handle`), `handle/` ([`Handle`](crate::Handle), and in `handle/picking.rs` the pool's own picking methods, which build one), `reservation.rs` (wraps a booking, gives it back on drop; the shared retarget), `pair/` (prefill/decode pairs over two pools) |
//! | the pool's API | `pool/` ([`Pool`](crate::Pool): a `RawPool` (`raw.rs`) and a file per concern, each an `impl` block with a heading: building, membership, fleet controls, reports and sync, latency, affinity, inspection; `pool/inputs.rs` holds the public constructors of masks and cache credit that read a pool) |
//! | booking | `booking.rs` (builds the context, asks the selector, books with a validated compare-and-swap), on a `RawPool` |
//! | modes | `selectors/` (the [`Selector`](crate::Selector) trait and [`Choice`](crate::Choice), the `builtins!` list, one file per built-in holding its whole rule, `least_loaded/` and `cost/` as folders), `mode.rs`, `registry.rs` |
//! | what a selector sees | `context/` ([`Context`](crate::Context), [`Slot`](crate::Slot), [`Intent`](crate::Intent), detached copies for out-of-line paths, the health view), `candidates.rs` (the whole set or a resolved eligibility mask) |
//! | per-request inputs | `request.rs`, `eligibility.rs`, `credit/` ([`CacheHits`](crate::CacheHits), [`WorkerToken`](crate::WorkerToken), the cost mode's tuning) |
//! | what lower layers need of a pool | `raw.rs` (`RawPool`: the id, slots, published snapshot and writer, reported load, scan backend, slow-start clock; as hashbrown's raw table, it never names the public type) |
//! | load signals | `load/` (reported load as the counters hold it, health, capacity ratio, and in `load/reports/` the reports and replica summaries: see [`load`](super::load)) |
//! | the set and its writer | `membership.rs` (membership changes, slot reuse), `snapshot/` (the set and the affinity ring it carries), `remap.rs`, `weights/` (the tables a snapshot builds from capacities), `fleet/` (slow start) |
//! | per-block bounds, the scan | `bounds/` (the bounds on loads and on weighted scores, their raise, and the two picks through them), `scan/` (kernels only: scalar reference, AVX2, AVX-512, NEON, behind one `Kernel`) |
//! | storage | `storage/` (counters, slot keys and pins, the feature word, bookings and their parts, the latency table) |
//! | primitives | `sync.rs` (every loom difference), `rng.rs` |
//!
//! One least-loaded pick walks down and back without returning to a parent
//! module: `Handle::reserve` (`handle/mod.rs`) loads the cached snapshot
//! (`snapshot/`, through the `sync` facade) and calls `booking::reserve`,
//! which resolves the candidates (`candidates.rs`), builds the `Context`
//! (`context/`) and asks `LeastLoaded` (`selectors/least_loaded/`). Its
//! decision tree (`least_loaded/mod.rs`) runs the flat scan (`scan/`) over
//! the counter array (`storage/counters.rs`), or on a large pool the pick
//! through the per-block bounds (`bounds/least.rs`, itself on the scan's
//! kernels); a weighted pool goes to `least_loaded/weighted.rs` (and
//! `bounds/least_scored.rs`), a pick whose answer is unhealthy to
//! `least_loaded/health.rs`. Booking then reads the key's address
//! (`storage/keys.rs`) and books with `Slots::charge_if` (`storage/mod.rs`);
//! the booking goes to the wrapper `handle/mod.rs` passed down, which makes a
//! [`Reservation`](crate::Reservation) (`reservation.rs`) of it in place; its
//! drop calls `Slots::release`, which gives the load back to the same counter
//! and, once a pick armed them, lowers the block's bound.
//!
//! # The mode list
//! The built-in modes are declared once, by the `builtins!` list in
//! `selectors/mod.rs`: one line per mode (its type and module, its canonical
//! name and other spellings). The modules and re-exports, the hidden
//! `Builtin` enum, the devirtualising match in `booking.rs` and
//! [`Mode`](crate::Mode) (variants, names, spellings, parameters, factories)
//! are generated from it; the [`Registry`](crate::Registry) resolves
//! built-ins through `Mode`. A mode's parameters are declared in its own file
//! (its `Configure` impl), and so are its facts, which have no default so
//! that a new mode cannot leave them out: `LOAD_RULE` (how it keeps load off
//! a busy worker, `None` if it compares no load: [`Mode::load_rule`](crate::Mode::load_rule)) and
//! `SPLITS_EVENLY` ([`Mode::splits_evenly`](crate::Mode::splits_evenly)). The simulator reads both
//! (which modes get the replica scenario, which promise even bursts, the
//! sentence under its summary) instead of a list of its own. So a new
//! built-in is its file plus one line:
//! [`ReplicaLeastLoaded`](crate::ReplicaLeastLoaded) joined that way, and
//! the simulator, the proxy and the registry listed it with no edit of theirs.
//! `ci/new-mode.sh` keeps it so: in a scratch copy it adds a throwaway mode
//! (one file, one entry), runs the registry, mode-list and booking suites and
//! the simulator beside `random`. Tests take the list from `Mode::ALL`;
//! the one pinned list (`registry::the_seed_built_ins_stay`) only checks that
//! the seed modes stay, in order, with new ones after them.
//!
//! ## What a built-in calls to honour capacity, health and draining
//! - Candidates only through `Context::len` and `Context::candidate(i)`:
//!   draining workers and those outside the request's mask are already out
//!   (a stale mask is filtered there too); never index the pool's slots.
//! - Capacity: when `Context::weights()` is `Some` (two or more distinct
//!   capacities), compare `(load + weight) / capacity` exactly (the
//!   `weighted_*` helpers, `load::ratio::Ratio`), never raw loads.
//! - Health: when `health_any()`, a winner that is not `healthy` goes to the
//!   health fallback of its shape (`selectors/rules.rs`: `two_choices_answer`
//!   for two draws, `least_by_health` for an exact pass; `next_healthy` for a
//!   cursor, the scans' health-aware kernels), run on a
//!   detached context (`detached_choice`) so the hot path stays small.
//! - Load: read with `Context::load` and answer
//!   `Choice::validated(slot, load_seen)`: the booking's compare-and-swap
//!   checks the load compared, and the pick retries if it moved.
//! - Facts: `LOAD_RULE` and `SPLITS_EVENLY` in its `Configure` impl, true to
//!   what the mode does (the simulator's burst scenario checks the second).
//!
//! # Selectors
//! Modes are plug-ins behind the object-safe [`Selector`](crate::Selector)
//! trait; the pool's entry points are generic over `S: Selector + ?Sized`, so
//! a built-in called directly is monomorphised, and a `&dyn Selector` that
//! holds a built-in costs one virtual call (its hidden `builtin` method) and
//! a jump into the same inlined path. A [`Slot`](crate::Slot) carries the
//! lifetime of its pick, so a selector can only answer with a candidate of
//! the pick at hand.
//!
//! # Owned forms
//! An [`OwnedReservation`](crate::OwnedReservation) must keep the counter
//! storage alive by itself, so it holds a reference count. Rather than the
//! pool's own `Arc` (one cache line that every pick on every thread would
//! write), each [`OwnedHandle`](crate::OwnedHandle) clones the pool's `Arc`
//! once into an *anchor* of its own, and its reservations count on that
//! anchor. The count is written per reservation but is not shared between
//! handles: a router keeps a handle per thread or per service clone, and the
//! line moves only when a reservation is released on another thread. Both
//! kinds hold the same thing, the storage's booking (`Booked` in
//! `storage/mod.rs`), made by the same booking code and given back by the same
//! `Slots::release`; they differ only in what keeps the storage alive.
//!
//! # Where `unsafe` is
//! In the scan kernels (`scan/`) and the storage (`storage/`), and in a few
//! calls whose precondition only the caller can establish, each with its
//! SAFETY line: `booking.rs` reads a chosen slot's key address before the
//! compare-and-swap (the pick's snapshot keeps the slot; reading it after the
//! swap, under the booking, would put the key's loads behind the swap's
//! fence); the reservations read their key back (the pool borrow or the
//! anchor keeps the storage alive, which the storage cannot see);
//! `membership.rs` assigns and clears keys (only the writer knows a slot is
//! unreachable); `sync.rs` allocates the counter array zeroed; `remap.rs`
//! fills its once-cells. `tests/suite/layout.rs` holds the list.
//!
//! # Loom builds
//! Everything that differs under `--cfg loom` is in the crate-private `sync`
//! module: loom's atomics, `Arc`, `Mutex` and `UnsafeCell`; a mutex model of
//! the `arc-swap` cell and cache (arc-swap is not loom-aware); tiny storage
//! sizes; the counter array built atom by atom; a fixed random seed. Public
//! constants do not change. The scan compiles only its scalar kernel there.
//!
//! # Repository layout
//! The library is the root package; `cargo test` and `cargo build` at the
//! root build only it. The load simulator (`sim/`, `cargo run --release -p
//! workerpick-sim`), the criterion benchmarks and the `BENCHMARKS.md`
//! generator (`benches/`, package `workerpick-benches`) and the
//! instruction-count gate (`iai/`) are workspace members built when named.
//! The peer libraries the benchmarks compare against (`benches/peers/`) and
//! the fuzz targets (`fuzz/`) are crates of their own, outside the workspace,
//! so their dependencies never enter the library's build. `proxy/`
//! (`workerpick-proxy`) and `replicas-nats/` (`workerpick-nats`, replica sync
//! over NATS on `async-nats`) are members too: the library takes no bus
//! dependency, and its `hyper` feature only the HTTP glue.
//!
//! # The other pages
//! - [`sets`](super::internal::sets): worker sets and bookings (storage, snapshots,
//!   slot reuse, membership changes, stale masks, booking).
//! - [`scan`](super::internal::scan): the least-loaded scan and its kernels.
//! - [`bounds`](super::internal::bounds): least-loaded in sublinear time.
//! - [`load`](super::load): the load signals and how they combine.
//! - [`fleets`](super::fleets): capacities, slow start, draining, health.
//! - [`affinity`](super::affinity): bounded-load affinity, session bindings.
//! - [`llm`](super::llm): the cost pick, phased load, prefill/decode pairs.
//! - [`http`](super::http): admission in the HTTP glue.
//! - [`proofs`](super::internal::proofs): what proves each claim, what fails without
//!   each protection.
//! - [`performance`](super::performance), [`limitations`](super::limitations).
