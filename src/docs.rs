//! Design notes, rendered with the API docs. Nothing to call here.

/// How the crate is built, what must stay true, and what proves it.
///
/// # Invariants
/// 1. A pick returns one of its candidates (the current set, narrowed by the
///    request's eligibility mask) or an error; it never panics, takes no lock
///    and allocates nothing. The same holds for previews, reservations and
///    releases.
/// 2. A reservation books its weight on one worker's counter and gives back
///    exactly that, exactly once (drop, unwind or explicit release); a
///    retarget moves exactly one booking.
/// 3. In-flight counts belong to a worker's identity, not to a snapshot: a
///    swap keeps the counts of the workers that stay, and a removed worker's
///    count lives until its last release (re-adding it shows that load).
/// 4. A pick that starts after a removal returned never chooses the removed
///    worker; a stale pick never charges a worker other than the one it names.
/// 5. Without releases, least-loaded is exact: `T` threads reserving `k`
///    times over `W` idle workers end at exactly `kT/W` each.
/// 6. A preview changes nothing: no cursor advance, no booking.
///
/// # Layers
/// Each file holds one concept; imports go from the defining module and only
/// downwards (the one exception: the hidden `Selector::builtin` hook names the
/// built-in types, which implement `Selector`, a type-level loop that the
/// devirtualised dispatch needs). From the top:
///
/// | layer | files |
/// |---|---|
/// | entry points | `handle.rs` ([`Handle`](crate::Handle), `Pool::handle` and the pool's own picks), `owned/` |
/// | guards | `reservation.rs` (wraps a booking, gives it back on drop; the shared retarget) |
/// | booking | `booking.rs` (builds the context, asks the selector, books with a validated compare-and-swap) |
/// | modes | `selectors/` (one file per built-in, `cost/` for the cost mode, the `builtins!` list, the per-request `cache_hits.rs` and `tuning.rs`), `mode.rs`, `registry.rs` |
/// | plug-in contract | `selector.rs` ([`Selector`](crate::Selector), [`Choice`](crate::Choice)) |
/// | what a selector sees | `context.rs` ([`Context`](crate::Context), [`Slot`](crate::Slot), [`Intent`](crate::Intent), the shared minimum/ties/draw rule), `candidates.rs` (the whole set or a resolved eligibility mask) |
/// | the scan | `scan/` |
/// | per-request inputs | `request.rs`, `eligibility.rs` |
/// | the pool | `pool.rs` (the set's owner and inspection), `membership.rs` (membership changes, slot reuse), `fleet/` (health, draining, slow start and their pool methods) |
/// | weights | `weights/` (the tables a snapshot builds from capacities, and the weighted picks) |
/// | the set | `snapshot.rs`, `remap.rs`, `affinity/ring.rs` (the affinity ring a snapshot carries) |
/// | sessions | `affinity/sessions.rs` (session bindings), `affinity/api.rs` (`Pool::enable_affinity`) |
/// | storage | `storage/counters.rs` (in-flight counters), `storage/keys.rs` (slot keys, pins), `storage/mod.rs` (slots and bookings), `storage/phased.rs` (parts of a booking) |
/// | primitives | `sync.rs` (every loom difference), `rng.rs` |
///
/// One least-loaded pick walks down and back without returning to a parent
/// module: `Handle::reserve` (`handle.rs`) loads the cached snapshot
/// (`snapshot.rs`, through the `sync` facade) and calls `booking::reserve`,
/// which resolves the candidates (`candidates.rs`), builds the `Context`
/// (`context.rs`) and asks `LeastLoaded` (`selectors/least_loaded.rs`); it
/// calls `Context::least_loaded`, which runs the scan (`scan/`) over the
/// counter array (`storage/counters.rs`). Booking then reads the key's address
/// (`storage/keys.rs`) and books with `Slots::charge_if` (`storage/mod.rs`);
/// the booking goes to the wrapper `handle.rs` passed down, which makes a
/// [`Reservation`](crate::Reservation) (`reservation.rs`) of it in place; its
/// drop calls `Slots::release`, which gives the load back to the same counter.
///
/// # The mode list
/// The built-in modes are declared once, by the `builtins!` list in
/// `selectors/mod.rs`: one line per mode (its type and module, its canonical
/// name and other spellings). The modules and re-exports, the hidden
/// `Builtin` enum, the devirtualising match in `booking.rs` and
/// [`Mode`](crate::Mode) (variants, names, spellings, parameters, factories)
/// are generated from it; the [`Registry`](crate::Registry) resolves
/// built-ins through `Mode`. A mode's parameters are declared in its own file
/// (its `Configure` impl). So a new built-in is its file plus one line.
///
/// # Counter storage (the growth hazard)
/// In-flight counts are one packed array of `AtomicU32`, cache-line aligned
/// and reserved for the pool's worker limit when the pool is built (zeroed
/// memory; on Linux untouched pages cost nothing). It never moves and is freed
/// only with the pool. A [`Reservation`](crate::Reservation) borrows the pool,
/// so its counter outlives it by construction: adding workers cannot lose a
/// decrement, and booking or releasing touches no reference count. Worker
/// keys and pin counts live in chunks allocated as the set grows, published
/// with a Release store that readers Acquire.
///
/// # Snapshots
/// The worker set is an immutable snapshot (member slots in set order, an
/// exclusion lane per slot for the scan, per-slot identity generations,
/// attributes and keys) published through `arc-swap`. A
/// [`Handle`](crate::Handle) keeps an `arc_swap::Cache` of it and revalidates
/// it with one pointer comparison per pick, so a worker removed before a pick
/// starts is never chosen by it. Writers serialise among themselves and may
/// allocate; pickers never wait for them.
///
/// # Slot reuse (the stale-pick hazard)
/// A removed worker's slot is handed to another worker only when (1) no live
/// snapshot names it — each published snapshot carries a liveness flag that its
/// `Drop` clears with Release and the writer reads with Acquire — and then
/// (2) its counter and its pin count read zero (Acquire, pairing with the
/// Release of every release). A pick that loaded an old snapshot keeps that
/// snapshot alive, so its compare-and-swap can only land on the worker it
/// names. Re-adding the same key while its load is alive revives the same slot
/// and identity, so the retained load shows. An eligibility mask built from
/// an older snapshot is checked entry by entry against the current identity
/// generations, so it never admits a slot's next owner.
///
/// # Membership changes and panics
/// Writers are serialised by a mutex and run each change in two phases.
/// Staging runs every call into the key type (`Clone`, `Hash`, `Eq`): it
/// finds where each key comes from, picks the slots fresh identities will
/// take, clones their keys and builds the next snapshot, changing nothing.
/// Commit then moves the staged values into place and publishes; it runs no
/// key code but `Drop`. A panic in a key's callback therefore unwinds out of
/// staging with the pool as it was, and the next writer recovers the
/// poisoned lock and finds a consistent state. (A panicking `Drop` of a key
/// is not covered.) The draining workers are a list rather than a hash map so
/// that commit never hashes a key. Every publish also drops the liveness
/// handles of snapshots no reader holds, so the writer's bookkeeping is
/// bounded by the snapshots alive, whatever the sequence of calls.
///
/// # Masks older than the set
/// An [`Eligibility`](crate::Eligibility) mask records the epoch of the set
/// it was built from, and each snapshot records the epoch of the latest
/// change in which a worker left. A mask built at or after that epoch names
/// only current members under their identities (workers that joined since
/// are excluded by its lanes), so it is applied as it is. An older mask is
/// translated: its entries whose slot still holds the same identity
/// (generation) become a fresh candidate list and exclusion array, built by
/// the first pick that meets the mask on that snapshot and cached in the
/// snapshot (up to 32 masks, each cell filled once with a compare-and-swap
/// and freed with the snapshot). Later picks find it with a load or two, so
/// a stale mask costs what a fresh one does, plus one translation per set.
///
/// # Booking
/// Power-of-two and least-loaded answer with the load they compared; the
/// booking is a compare-and-swap from that value, and on failure the selector
/// is asked again, at most 32 times, after which the last choice is booked
/// without validating its load (counted in [`PoolStats`](crate::PoolStats)).
/// No booking takes a load past `u32::MAX`: it fails with
/// [`Error::LoadOverflow`](crate::Error::LoadOverflow) and books nothing,
/// since a count that wrapped to zero under live reservations would let the
/// writer reuse their slot.
/// With no releases loads only grow, so a successful swap from the scanned
/// minimum books a true global minimum: `T` threads reserving `k` times over
/// `W` idle workers end at exactly `kT/W` each. A release that lands between
/// the scan and the swap can make a pick one release stale. Bookings are
/// Relaxed: the count itself is the only datum, and slot reuse is ordered by
/// the snapshot liveness above, not by the counters.
/// A reservation keeps the address of its worker's key in the slot storage,
/// found while the pick still holds its snapshot and before the swap (whose
/// fence would otherwise hold those dependent loads back), so reading the
/// worker back is one load.
///
/// # The least-loaded scan
/// One SIMD pass over the packed counters finds the minimum (a branch-free
/// loop at the machine's load rate). Then up to 8 uniform draws over all the
/// lanes each try one lane: the first at the minimum is the pick. A uniform
/// draw accepted on a tie is uniform among the ties, so in an idle or
/// balanced pool, where most lanes tie, a pick is the min pass, one draw and
/// one load. When the tries miss (few ties), a second pass counts the ties
/// per segment of 512 lanes, one draw picks a tie, and a last pass searches
/// only the segment that holds it. Up to 32 lanes are read once into
/// registers and tried once; a miss draws among the ties found in them. Up to
/// 8 lanes are read with scalar loads, which in a reserve-release loop take
/// the just-released count from the store buffer where a vector load would
/// wait. A pool whose workers fill the slots `0..n` (no holes left by
/// removals) scans the counters alone; a request's eligibility mask, or
/// holes, add an exclusion array ORed into each lane. The backend (AVX-512,
/// AVX2, scalar) is detected once at run time and checked against the CPU
/// once per pool, so a default `cargo build --release` gets the fast path and
/// a pick makes no feature test; on aarch64 it is NEON, part of the base
/// architecture. The vector backends run one algorithm, written once over a
/// small set of primitives each implements (full and partial loads, compare
/// to a bit set, lane-wise and horizontal minimum, tie counts); the scalar
/// one is the independent reference they must match draw for draw. See
/// [`scan`](crate::scan) for why the vector loads of atomics are sound.
///
/// # The tie-break
/// Ties are broken uniformly at random in every scanning mode. Rejection
/// tries: each try draws a lane uniformly over all `n` lanes and keeps it
/// only if it is at the minimum, so conditioned on being kept it is uniform
/// over the `t` ties, whichever try keeps it. Counting: a draw over the `t`
/// ties counted, then the `k`-th tie in lane order, is uniform by
/// construction. [`Context::least_loaded_by`](crate::Context::least_loaded_by)
/// (the scalar path) and device-aware's groups share one rule (`Minimum` in
/// `context.rs`): count ties in one pass, and draw once only when there are
/// several. Lanes that move between passes can
/// shift the odds slightly, never the guarantee: the pick is a lane seen at
/// the minimum, and the compare-and-swap checks it still is. Power-of-two
/// takes the first of its two draws on a tie (the two draws are already
/// uniform and distinct).
///
/// # Summarised least-loaded (large pools)
/// A flat scan reads every counter, so its cost grows with the fleet. A pool
/// whose slot limit is `SUMMARISED_SLOTS` (1 024) or more (the default limit
/// among them; `bounds/loads.rs`) also keeps, per block of `2^s` lanes
/// (`s = log2(slots) / 2`, clamped to 64..=1024 lanes: about `sqrt(slots)`,
/// 256 for the default limit), a *bound* `B[b]`; an unmasked least-loaded
/// pick over `SUMMARISED_LANES` (1 024) lanes or more reads the bounds
/// instead (`bounds/least.rs`). Smaller sets, masked picks and a pick that
/// cannot settle (below) scan flat. A pool built with a smaller limit keeps
/// no bounds: its release tests one pool constant, and so does its
/// least-loaded pick. The bounds are *armed* by the first pick that reads
/// them (`LoadBounds::for_pick`, a `SeqCst` store before any raise); until then
/// every bound is still 0 and a release loads one flag (`SeqCst`, after its
/// decrement) and stops. So a default pool that only ever takes random,
/// round-robin or power-of-two picks, or stays under 1 024 workers, pays one
/// load and a branch per release, on a line the release reads anyway
/// (see [`performance`]). Why the flag is enough: a raise
/// whose second look missed a decrement precedes that release's load of the
/// flag in the `SeqCst` order, and the raiser armed before it raised, so the
/// release sees the flag set and lowers as below; the loom model
/// `summary_arming` fails when a pick raises without arming. Once armed, a
/// release pays one load of the block's bound and one of the floor, and a
/// predicted branch each.
///
/// **Invariant.** Outside the window of an operation that is lowering a
/// counter (between its decrement and its bound update) or raising a bound
/// (between its compare-and-swap and its second look, below), `B[b]` is at
/// most every counter of block `b`. Lanes of the block that no snapshot scans
/// count too: unallocated ones are parked at `u32::MAX` by the writer, and so
/// are free slots, whose counters nothing else touches until reuse.
///
/// **Why it holds.** Bookings only raise counters. A release decrements
/// (`SeqCst`), loads `B[b]` (`SeqCst`) and lowers it with `fetch_min` only
/// when the new count is below: a load and a predicted branch, so its cost is
/// one load of a line that is written only when a bound moves. The writer
/// does the same when a free or new slot's counter goes to 0 before a
/// snapshot names it. A pick raises a bound only (1) by compare-and-swap from
/// the value `lo` it read, (2) to the least counter it then read in the
/// block, and (3) after an acquire fence between the two reads. Then:
/// - a release whose lowering landed before the pick read `lo` is seen by the
///   pick's block scan: if `lo` was that lowering's write, the acquire fence
///   orders its decrement before the scan; otherwise the bound moved after
///   it, which only a raise based on the decrement or another lowering can do;
/// - a release whose lowering lands between the read and the swap makes the
///   swap fail (the bound is no longer `lo`); a plain store would overwrite
///   it, which the loom model `summary_race` shows (`--cfg
///   workerpick_plain_raise`);
/// - a release whose decrement the scan missed but whose load of `B[b]` came
///   before the swap does not lower (it saw `lo` at or below its count). So
///   after the swap the pick fences (`SeqCst`) and reads the block again,
///   lowering `B[b]` with `fetch_min` to what it finds: by the C++20 rules
///   for `SeqCst` fences, either that read sees the decrement or the
///   release's `SeqCst` load saw the raise (and lowered it). This is the
///   window of the invariant: a bound may stand above a counter from the swap
///   to the second look. (Loom models `SeqCst` loads as acquire loads, so
///   under loom the release fences before its load, the form loom checks.)
/// - the same value written twice (a bound raised from `lo`, then lowered
///   back to `lo` by a release before the raiser's swap) lets the swap succeed
///   on a scan that missed that release; the second look repairs it, so it is
///   another instance of the same window.
///
/// **The floor.** One more value, `F` (`LoadBounds::floor`, on a cache line of
/// its own), with the number of blocks it covers: outside the same kind of
/// windows, `F` is at most every counter of the blocks `0..covered`. It
/// follows the bounds' rules one level up. Every lowering of a bound is
/// followed, in the same thread, by a `SeqCst` load of `F` and a lowering
/// of its value when the new count is below (a release pays that load too:
/// about 4 instructions more in the callgrind gate); a raise's repair of a
/// bound lowers `F` the same way. A pick raises `F` by compare-and-swap
/// from the value it read, to the least bound of its blocks, covering those
/// blocks; then it fences (`SeqCst`) and reads the bounds again, lowering
/// `F` to what it finds. A lowering of a bound that the pick's first read
/// missed either precedes that fence (the second look sees it) or is
/// followed by a load of `F` that sees the raise (and lowers it). Without the
/// compare-and-swap, or without the second look, the loom model
/// `summary_race` fails. The covered count keeps a pick of an older snapshot,
/// which reads fewer blocks, from vouching for a block it never read: a
/// worker added there since may be lower. A pick trusts `F` only when it
/// covers all its blocks, and the loom model `summary_floor_growth` fails
/// when it trusts it regardless. (The lowering of `F` by a bound's repair is
/// argued here, not modelled: it needs a release, a raise of that bound and
/// a raise of `F` racing, three threads beyond what the models explore.)
///
/// **The pick.** `lo`, the least bound, is at most every candidate's
/// effective value (counter `|` exclusion); a lane holding `lo` is therefore
/// at the global minimum, and every lane at the global minimum lies in a
/// block whose bound is `lo`. The pick first tries one uniform lane at the
/// floor `F` (which is at most `lo`, and equal once settled), before it
/// reads any bound: in an idle or balanced pool that is the whole pick (one
/// load of `F`, one of a lane), where reading the bounds of 10^6 workers
/// (about 2 000 of them, 8 KB, evicted between picks by the pick's own
/// random loads) cost more than the rest of the pick. If the try misses, the
/// pick reads the bounds for `lo` and raises `F` to it if it was lower. A
/// uniform try over all `n` lanes (up to 8 when
/// more than 8 blocks are at `lo`) takes a lane holding `lo`:
/// uniform among the ties. If it misses, one pass over the bounds notes the
/// blocks at `lo` (up to 8); when they are more, or an eighth of the blocks
/// or more (ties may be dense), up to 7 more tries are made (past 8 blocks
/// they are then found one by one); the ties at `lo` are counted in each, one pass a
/// block (every lane is at least its block's bound, so the count alone says
/// whether the block holds the minimum); one tie is drawn among them all and
/// found in its block, which the counts name, so one more pass over one
/// block: uniform by construction. With up to 8 blocks at `lo` the counts, the
/// draw and the search are one call into the backend (`Kernel::draw_in_blocks`):
/// a call per block and per search cost more time than the passes over a
/// block of 64 lanes themselves, though the one call runs ~10% more
/// instructions (BENCHMARKS.md, *Large pools*, has the times). Everything
/// after the first try is out of line, so the idle pick keeps a small frame. Blocks at `lo` with no tie whose least
/// counter is higher get raised on the way; if no tie was found, the pick starts over (3 times) if
/// it raised any, else a block owes its bound to a lane the pick may not
/// return (a draining worker's) and the pick scans flat. The answer is booked
/// by the same validated compare-and-swap, so under reservation-only
/// concurrency (no release, bounds only rise) every booking lands on a lane at
/// the global minimum, and `T` threads × `k` reservations over `W` idle
/// workers end at `kT/W` each. A pick costs two loads (the floor and a lane)
/// when the pool is balanced and the floor settled, else one pass over
/// `n / 2^s` bounds and a try, plus `c · 2^s` lanes when the try
/// misses (`c` blocks at the least bound; more tries are made only when `c`
/// is above 8 or an eighth of the blocks); the worst case, ties thinly
/// spread over many blocks, is the flat scan.
///
/// **Switch point.** Measured with least-loaded reserve + read + release on a
/// pool with bounds (limit 2^17, blocks of 256), summarised against flat, in
/// ns (x86-64, AVX-512, 2 shared cores; idle / 4 ties): 512 lanes 41-51 /
/// 100-150 against 55-59 / 91-109; 1024 lanes 38-48 / 100-147 against 56-77
/// / 105-148; 2048 lanes 47-50 / 126-133 against 105-107 / 218-223. At 1024
/// the summarised pick wins idle and ties with 4 ties, so `SUMMARISED_LANES`
/// is 1024. Larger (criterion, `least-loaded-large`, with the floor): 10^4
/// workers 32 / 68 against 130 / 591; 10^5 53 / 66 against 3 189 / 6 165;
/// 10^6 196 / 217 against 40 360 / 86 666. Before the floor, an idle pick at
/// 10^6 spent most of its time reading the ~2 000 bounds (211 against 148 ns
/// with them skipped, in one session). What the bounds and the floor cost a
/// release (random reserve + release beside the same pool built
/// `with_flat_scan()`) is within the noise of those memory-bound picks: one
/// run measured 1.2-1.3 ns at 10^4 and 10^5, the next −1.2 and −6.2 ns, and
/// +58 ns at 10^6, where a spot run had the opposite sign (112 against 154
/// ns; BENCHMARKS.md, *Large pools*).
///
/// # Selectors
/// Modes are plug-ins behind the object-safe [`Selector`](crate::Selector)
/// trait; the pool's entry points are generic over `S: Selector + ?Sized`, so
/// a built-in called directly is monomorphised, and a `&dyn Selector` that
/// holds a built-in costs one virtual call (its hidden `builtin` method) and
/// a jump into the same inlined path. A [`Slot`](crate::Slot) carries the
/// lifetime of its pick, so a selector can only answer with a candidate of
/// the pick at hand.
///
/// # Owned forms
/// An [`OwnedReservation`](crate::OwnedReservation) must keep the counter
/// storage alive by itself, so it holds a reference count. Rather than the
/// pool's own `Arc` (one cache line that every pick on every thread would
/// write), each [`OwnedHandle`](crate::OwnedHandle) clones the pool's `Arc`
/// once into an *anchor* of its own, and its reservations count on that
/// anchor. The count is written per reservation but is not shared between
/// handles: a router keeps a handle per thread or per service clone, and the
/// line moves only when a reservation is released on another thread. Both
/// kinds hold the same thing, the storage's booking (`Booked` in
/// `storage/mod.rs`), made by the same booking code and given back by the same
/// `Slots::release`; they differ only in what keeps the storage alive.
///
/// # Where `unsafe` is
/// In the scan kernels (`scan/`) and the storage (`storage/`), and in a few
/// calls whose precondition only the caller can establish, each with its
/// SAFETY line: `booking.rs` reads a chosen slot's key address before the
/// compare-and-swap (the pick's snapshot keeps the slot; reading it after the
/// swap, under the booking, would put the key's loads behind the swap's
/// fence); the reservations read their key back (the pool borrow or the
/// anchor keeps the storage alive, which the storage cannot see);
/// `membership.rs` assigns and clears keys (only the writer knows a slot is
/// unreachable); `sync.rs` allocates the counter array zeroed; `remap.rs`
/// fills its once-cells. `tests/suite/layout.rs` holds the list.
///
/// # Reported load
/// Load from outside the pool — a worker's own report, a peer router's
/// [`Summary`](crate::Summary) — is folded into the same counter as the pool's
/// bookings: a counter holds `booked + reported`. Picks therefore compare
/// effective load with the scan and the compare-and-swap they always made; no
/// pick reads anything more (measured first the other way, a second array added
/// lane-wise in the scan: least-loaded at 1 024 workers went from 57 to 95 ns).
/// Beside the counters, the board (`reports::board`) holds per slot the part of
/// the counter that was reported; the exact sums over sources, who each slot
/// belongs to, and each peer's last summary are kept under the report lock
/// (`reports::state`). Invariants, and why they hold:
///
/// - **No count lost or overwritten.** A report moves a counter by
///   compare-and-swap from the value it read to `booked + new`, where
///   `booked = read − board`: bookings and releases landing in between make it
///   retry, never vanish. Only report writers change the board, under the lock.
/// - **The pool's own bookings stay exact.** Bookings and releases add and take
///   back only their own weight. `in_flight`, `loads` and `summary` read
///   `counter − board` under the report lock (once anything was ever reported),
///   so the two parts are read together.
/// - **No wrap.** A slot's sum is capped at [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD)
///   (`2^31 − 1`) and folded only as far as fits below `u32::MAX` beside the
///   bookings (the rest is counted at the slot's next report). Bookings keep
///   their overflow check on the whole counter, so they are refused at
///   `u32::MAX − reported` rather than `u32::MAX`: half the range is always theirs.
/// - **Never inherited.** A slot's keeping is tagged with the worker's identity
///   generation and a fresh tag per reset. After every membership change the
///   writer drops what is kept for slots whose member changed, taking the
///   reported part out of the counter; reporters load the snapshot under the
///   report lock, after setting a SeqCst flag the writer reads after publishing,
///   so a report resolved against an old snapshot is applied before the drop and
///   dropped by it. A slot with reported load in its counter is never reclaimed
///   (reclaim needs the counter at zero), so reported load cannot outlive its
///   worker onto the slot's next owner. A peer entry made before a reset never
///   subtracts from the sums after it (its tag no longer matches).
/// - **Ageing.** Each source (a worker's own report, a peer's summary) carries
///   the time it arrived; one older than the age limit is dropped at the next
///   report, at [`Pool::expire_reports`](crate::Pool::expire_reports), or by the
///   first reservation that finds the earliest deadline passed (one in 1024 per
///   thread reads the clock while reports are counted; it only `try_lock`s).
///
/// Summaries are absolute, not deltas: a replica's summary replaces its earlier
/// one, so loss, duplication and reordering (an older sequence number is
/// ignored) leave nothing behind, and no per-message state must be kept in step
/// between replicas. They hold only workers with load; a summary carries the
/// sender's own bookings only, so replicas never echo reports back. Applying
/// one resolves each worker by first trying the slot its entry had in the peer's
/// last summary (one key comparison) and only then the hash index, sums the
/// changes in plain memory, and touches only the counters whose reported part
/// moved.
///
/// Models: `loom-tests/tests/reported.rs` (one fails when a report stores
/// instead of compare-and-swapping, another when departures keep their reports);
/// tests: `tests/suite/reported.rs`; the fuzz op model folds reports into its counts;
/// the allocation test runs with reported load present.
///
/// # Latency
/// A worker that is slow rather than busy (a GC pause, a degraded GPU) shows
/// no more in-flight load than a fast one; the latency signal sees it. Per
/// slot, one `u64` cell holds a peak-EWMA round-trip estimate in µs and the
/// millisecond of its last sample (`latency::ewma`): a sample above the
/// estimate replaces it (the peak), a lower one mixes in as
/// `cost·w + rtt·(1 − w)`, `w = exp(−Δt/τ)`; a read decays the estimate to now
/// as if a 0-RTT sample arrived (`cost·w`) without writing. `w` is exact
/// integer arithmetic: `2^−x`, `x = Δt/(τ·ln 2)` in 1/256 steps, a Q32 table
/// for the fraction and a shift for the whole part (at most 0.3 % low).
/// No history reads as the default RTT.
///
/// - **Opt-in.** `Pool::with_latency` allocates the table; a pool without it
///   has `None` there, its reservations are the plain ones (only a
///   [`Timed`](crate::Timed) wrapper reads a clock), and the plain modes never
///   look at it. The latency modes on such a pool compare load alone.
/// - **Samples.** A `Timed` reservation reads the clock (`quanta`'s TSC: see
///   the `latency` bench group for why not `Instant`) when it is made and when
///   it ends, turns the ticks into µs (the sample) and ms (its stamp) with one
///   widening multiply each (factors from quanta's calibration, taken when
///   the pool is built), and folds the sample into its slot's cell with a
///   bounded compare-and-swap loop (8 tries; past that the sample is dropped,
///   8 newer samples having landed). A sample that leaves the cell as it is
///   (below the estimate, in the millisecond of the last sample: `w = 1`)
///   writes nothing. A failed end counts as at least the failure
///   penalty, so a worker that fails fast looks slow, not idle. The sample
///   lands before the booking is given back, so it never reaches a slot that
///   was reused; reuse clears the cell.
/// - **What a timed reservation costs.** Two reads of the time-stamp
///   counter, which cannot be one: a round trip needs both ends, and any
///   cheaper stand-in for the start (the pool's last completion, a coarse
///   clock) is off by as much as the gap between completions, which is the
///   round trip itself in a quiet pool. With the booking's and the release's
///   locked instructions that every reservation pays, these four set the
///   floor the `latency` bench measures beside it (group `latency/clock`).
/// - **Reads.** Picks decay to the latest millisecond any sample ended at
///   (one shared, rarely written word), not to a clock read: one stale by the
///   gap between completions only decays less. Cells are read Relaxed: each
///   is its own only datum, and a pick racing an update sees the old or the
///   new estimate, never a torn one (loom: `loom-tests/tests/latency.rs`).
/// - **Combining.** Cost = `estimate × (load + 1)` in `u64` (both factors
///   < 2^32), where load is the effective load every mode sees (booked +
///   reported, see *Reported load*); in a weighted pool cost/capacity is
///   compared by cross-multiplying in `u128`. Masks narrow the candidates
///   first; health passes over unhealthy winners as the plain modes do.
///   Booking is CAS-validated on the load compared, as in power-of-two.
/// - **Least-loaded by latency is a scalar pass.** The SIMD scan compares one
///   `u32` key per lane computed from that lane alone; here each lane's key
///   needs its cell decayed from its own stamp (`2^−x`: a lookup in a
///   256-entry table, a variable shift, and two 32×32→64-bit products), then
///   a 64-bit product with the load. That is a gather per lane on AVX2 and
///   AVX-512 and a scalar lookup on NEON; the alternative, ranking by a
///   time-normalised logarithm that a sample rewrites, changes the cost that
///   power-of-two compares. Neither was built: the pass costs one cell and
///   one counter read per candidate, linear in the candidates (the bench
///   `latency-least-loaded/n` beside the plain least-loaded scan).
///
/// # Heterogeneous fleets
/// Workers declare a capacity ([`WorkerInfo::capacity`](crate::WorkerInfo::capacity),
/// 1 to [`MAX_CAPACITY`](crate::MAX_CAPACITY), default 1;
/// [`Pool::set_capacity`](crate::Pool::set_capacity) changes it at run time).
/// The writer builds weight tables with each snapshot from the members'
/// effective capacities (reduced by their common divisor, scaled by slow
/// start) and builds none when they are all equal: an unweighted pool pays one
/// `Option` test per pick and draws exactly as before. The rules, beside the
/// unweighted ones (`c` a worker's capacity, `r` the request's weight):
///
/// | mode | unweighted | weighted | weighted cost |
/// |---|---|---|---|
/// | random | uniform draw | P(i) = c_i / Σc: Walker's alias table (`weights::alias`), one draw and one comparison | O(1) |
/// | round-robin | `ticket mod n` | smooth: the period of Σc tickets holds c_i turns of worker i, spread evenly (`weights::schedule`); a worker's turns never run longer than ⌈c_i / min c⌉ in a row | O(1) per ticket while Σc ≤ max(2^16, 16n) (the period as a list); a bounded walk of tickets past that |
/// | power-of-two | the less loaded of two distinct uniform draws | two distinct draws in proportion to `c` (the alias table), the less `(load + r) / c` by 64-bit cross-multiplication (uniform draws would put a worker in at most 2/n of the pairs, too few for a large one) | two alias draws for one uniform pair |
/// | least-loaded | SIMD min over the counters; from 1 024 lanes the per-block bounds on the counters | the least `(load + r) / c`, exactly: the SIMD scan over per-lane scores `(load + r) · L / c_i`, `L` the capacities' lcm (`weights::scale`, `scan::least_weighted`), ties uniform; from 1 024 lanes, for `r = 1`, per-block bounds on the scores (`bounds::least_scored`, below) | one multiply per lane; from 1 024 lanes the bounds and a try over the candidates whose factor can reach the least; exact scalar path when `L > 2^16` or the least score is clamped |
/// | device-aware | groups by cache hits, least loaded within | unweighted (see [`limitations`]) | — |
///
/// A least score at or below `u32::MAX − L` was computed without clamping,
/// so the scan's answer is exact; the counter it names is read again and its
/// score recomputed before the compare-and-swap books from that load.
///
/// **Bounds on weighted scores.** The counters' bounds say nothing of the
/// scores, whose order is not the counters' order, so a summarised pool keeps
/// a second set, per block of the same lanes (`bounds/scores.rs`): a bound
/// on `min(score, u32::MAX)` over the block, the score being
/// `(load + 1) · L / c_i`, for requests of weight 1 (the default; heavier ones
/// scan flat). Factors change while requests fly (`set_capacity`, each slow
/// start step), and a change of one capacity can change `L` and so every
/// factor; so each set of factors the writer installs gets a *version*, each
/// slot's factor is stored tagged with it (one `u64` per slot, which a release
/// reads), and so is each bound (one `u64` per block). The writer installs a
/// snapshot's factors before it publishes the snapshot, reusing the last
/// version when they are unchanged.
///
/// *Invariant.* Outside the windows of the counters' bounds (a release
/// between its decrement and its lowering, a raise between its swap and its
/// second look), a bound tagged `v` is at most the score under version `v`'s
/// factors of every lane of its block that has one. A pick of version `v`
/// counts a bound tagged otherwise as 0 (nothing known).
///
/// *Why it holds.* The rules of the counters' bounds, with the tag: a pick
/// raises a bound only by compare-and-swap from the tagged value it read, to
/// the least score it then read under its own factors, after an acquire
/// load of the bound, then fences and looks again (loom model `scores_race`
/// fails with a plain store, `scores_second_look` without the second look).
/// A release, after its decrement and the counters' bound and floor, loads
/// its slot's tagged factor and the bound (`SeqCst`, behind a fence under
/// loom): if the tags agree it lowers the bound to the slot's score, with the
/// right factor; if they differ it lowers the bound to 0, which bounds
/// anything. So a release whose tag is older than the bound's cannot leave it
/// too high, and a bound of an older version is never trusted by a newer
/// pick, nor overwritten by an older pick's raise (its swap fails on the
/// tag; loom model `scores_version_race` races a capacity change against a
/// raise under the old factors). Lowering is always safe; only raises need
/// the protocol. Whether a release must look at the scores at all it learns
/// from the floor it loads anyway: its top bit flags a pool with bounds on
/// scores, set by the writer (`SeqCst`) after it made them and before it
/// publishes any version; a release that does not see the flag decremented
/// before any pick could raise a bound on scores. Versions are 32 bits, never
/// 0; one would be reused after 2^32 changes of the factors while a pick of
/// the first still ran.
///
/// *The floor.* Above the bounds on scores, one tagged value `G`
/// (`Scores::floor`, on a line of its own): outside the same kind of
/// windows, `G` tagged `v` is at most every bound of version `v`, over every
/// block of that version's lanes. A version's factors fix its lanes, so every
/// pick of it reads the same blocks for `G` (a dense set's pick may return
/// fewer lanes than it reads): no count of covered blocks is needed, as the
/// counters' floor needs. It follows the counters' floor's rules: every
/// lowering of a bound on scores (a release, a raise's repair) is followed
/// by one of `G` by the same tag rule; a pick raises `G` by compare-and-swap
/// from the value it read before the bounds, to their least, then fences and
/// reads them again, lowering `G` to what it finds. The loom model
/// `scores_second_look` fails without that second look, and `scores_race`
/// when a release does not lower `G`.
///
/// *The pick.* `lo` is the least bound; a lane scoring `lo` is at the least
/// score, and every lane at the least score lies in a block whose bound is
/// `lo`. A lane of factor `f` scores at least `f`, so only the candidates of
/// factors up to `lo` can tie: the snapshot keeps the candidates sorted by
/// factor (`Scale::by_factor`). The pick first tries one uniform lane of
/// that prefix at `G` (at most `lo`, equal once settled), before it reads any
/// bound: in an idle or balanced pool that is the pick, and in an idle pool
/// of capacities 4:2:1:1 the prefix is the capacity-4 workers alone, all at
/// `G`. Otherwise it reads its bounds for `lo`, raises `G` if it was below
/// them, and tries up to two batches of 8 lanes at `lo` (read without a
/// branch each, the first hit taken: uniform among the ties). If they miss,
/// it counts the ties at `lo` in the blocks at `lo` (up to 16), raising on
/// the way the bound of each that holds none (and every bound it counts as
/// unknown, as after a new version), draws one and finds it; it reads the
/// bounds again after a raise (3 times), and otherwise scans flat. Costs: a
/// release of a weighted pool pays the factor's load, a multiply and the
/// loads of the bound and of `G` (about 60 instructions in the callgrind
/// gate); an unweighted pool's release pays 2 or 3 (the flag rides on the
/// counters' floor's load and comparison).
///
/// **Health.** [`Pool::set_healthy`](crate::Pool::set_healthy) records a
/// mark per slot beside the counter, as reported load is, and adds
/// [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD) (2^31) to the counter: no new
/// snapshot. The scan and the two-choice comparison pass the worker over on
/// their own. Every mode tests one pool-wide count of marked workers (a
/// relaxed load, the only cost to a pool without marks) and, only while it is
/// non-zero, the chosen worker's mark. Random and round-robin then draw again
/// or take the next healthy worker. Power-of-two with both draws unhealthy
/// draws up to 8 more pairs, then takes the exact least-loaded healthy
/// candidate; least-loaded with an unhealthy answer takes the exact
/// least-loaded healthy candidate; device-aware leaves unhealthy candidates
/// out while one is healthy (`fleet::pass_over`). So a mark is honoured even
/// where the penalty cannot show it: a counter too full for the whole penalty
/// (the mark is kept, "short", and marking it again adds what fits), or a
/// healthy load of 2^31 or more. When every candidate is unhealthy, picks go
/// to all of them (Envoy's panic routing: a health signal that marks the
/// whole fleet down is more likely wrong than the fleet), and each load-aware
/// mode picks exactly as on the same fleet healthy: health is compared apart
/// from load, then the worker's own load (the penalty taken out) per
/// capacity, so the penalty is never divided by capacity. Panic routing pays
/// for it: one pass over the candidates' marks per load-aware pick, and the
/// weighted modes' exact scalar path. The pool's own views (`in_flight`,
/// `loads`, summaries) subtract the penalty. Transitions take the report
/// lock; marking healthy lowers the block bound and the floor as a release
/// does. Marking a worker that is already marked is one hash lookup and one
/// load, so an outlier detector can call it on every failed request.
///
/// **Draining.** [`Pool::drain`](crate::Pool::drain) publishes a snapshot in
/// which the worker stays in the index (its reservations, retargets and
/// `in_flight` keep working) but is no candidate: its lane is excluded in the
/// scan, it is out of the member list every mode draws from, and masks built
/// before the drain are filtered against the set's members. `reserve_worker`
/// refuses it with [`Error::Draining`](crate::Error::Draining), and a pick
/// while every worker drains fails with
/// [`Error::AllDraining`](crate::Error::AllDraining) (the set is not empty).
/// [`Pool::drained`](crate::Pool::drained) is a poll: the caller that drains
/// a worker is a control loop that already ticks (it will remove the worker
/// next), a callback would run on the thread of whichever release came last
/// (a request's hot path), and a future would tie the crate to a runtime.
///
/// **Slow start.** [`Pool::set_slow_start`](crate::Pool::set_slow_start)
/// ramps a joining or resumed worker's effective capacity over a window with
/// Envoy's curve, `max((t / window)^(1/aggression), min_weight_percent)`, in
/// eighths (so `L` stays small for the scan). The ramp is only effective
/// capacity: a pool whose workers are all of capacity 1 becomes weighted
/// while one ramps. A step is published by the writer when it changes the set,
/// or by the first reservation that finds it due (one in 1024 per thread reads
/// the clock while a ramp runs; it only `try_lock`s the writer), or by
/// [`Pool::advance_slow_start`](crate::Pool::advance_slow_start).
///
/// Tests: `tests/suite/fleet.rs` (proportions over 10^6 picks within 1 %, run
/// bounds, exact water-filling under threads, health in every mode, draining,
/// the ramp's shares); loom `fleet`; the fuzz op model (capacity, health,
/// drain and resume ops); `scan` tests hold the weighted kernels to a 64-bit
/// oracle and to scalar draw for draw; the simulator's weighted-fleet and
/// scale-up scenarios (in its default run, with tests on their shares).
///
/// # Bounded-load affinity
/// [`Affinity`](crate::Affinity) is consistent hashing with bounded loads
/// (Mirrokni, Thorup and Zadimoghaddam; HAProxy's and Envoy's
/// `hash-balance-factor`): a key's preference order over the candidates is
/// a walk around a ring, and the pick takes the first healthy candidate
/// whose load is at most `⌈f/100 · (total + r) / n⌉` (`f` the balance
/// factor, `r` the request's weight; with capacity weights worker `i`'s
/// share is `cᵢ / Σc`, compared exactly in 128-bit integers). The booking is
/// validated on the load compared, so the bound holds under concurrent
/// routers: with reservations held, every worker ends at most
/// `⌈f/100 · average⌉ + 1`. (HAProxy checks the load after booking,
/// `load + 1 ≤ cap`; this crate's rule checks it before, so a worker may end
/// one request above the cap, never more.)
///
/// Measured (`benches/single.rs`, group `affinity/<workers>`, `--quick`, on
/// a shared 2-core host where power-of-two reserve took 24 ns and
/// least-loaded 35–42 ns in the same session): reserve + read + release over
/// 4096 keys 64 ns at 8 workers, 79 ns at 1 024, 428 ns at 100 000 (the
/// ring is 40 MB there: a lookup misses the cache for the bucket, the point
/// and the counter); the lock-based bounded hash beside it (`BTreeMap` ring
/// and loads under one mutex) 73 ns, 220 ns and 1.2 µs. A bound session
/// through `Sessions`: 131, 103 and 224 ns (its clock
/// read is ~20 ns of that). These miss the 30/60/40 ns goals the affinity
/// issue set; the budget is unmet and not gated.
///
/// **Why a ring.** Three preference orders were weighed:
///
/// | order | pick | build (writer) | disruption |
/// |---|---|---|---|
/// | rendezvous (HRW) | O(n) hashes: ~n × 2 ns, 200 µs at 100 000 | none | exact: only the removed worker's keys |
/// | ring, 32 points a worker | one bucket load + ~1 step (O(1) expected), then the walk | sort of 32·n points | exact on removal; ≈ 1/(n+1) on addition |
/// | Maglev table | one load | O(M log M), M ≫ n prime | near-minimal, not exact: some keys of other workers move |
///
/// Rendezvous misses the O(1)/O(log n) pick; Maglev's next choices (for the
/// bound) are not a stable order and a removal moves a few keys of workers
/// that stay. The ring gives both exact properties and an O(1) start: a
/// bucket index over the top bits of the position (one bucket per point on
/// average) replaces the binary search. Points are placed by a hash of the
/// worker's key (SipHash with fixed keys), never its slot, so replicas and a
/// re-added worker agree; their number is constant (32), so an addition
/// never moves another worker's points. Memory: one 8-byte word a point
/// (position and owner, so a lookup misses the cache once for both) plus
/// up to 4 bytes of index, ~0.4 KiB a worker (~40 MB at 100 000 workers). The walk
/// skips repeats of the same owner, non-candidates (a mask) and unhealthy
/// workers; one full turn visits every candidate, so unbounded hashing and
/// health always find a healthy one if there is one. Draining workers are
/// not on the ring. A masked pick walks `≈ n/m` points for a mask of `m`.
///
/// **Opt-in.** Building the ring costs every membership change a sort, and
/// pools that do not use a feature must pay nothing for it: so [`Pool::enable_affinity`](crate::Pool::enable_affinity)
/// turns it on, and snapshots built afterwards carry it (republishing for
/// capacities, health and slow start reuses it: it is rebuilt only when the
/// candidates' slots or generations change). Without a ring, or without a
/// request key, an affinity pick is a least-loaded pick, so code that runs
/// every [`Mode`](crate::Mode) keeps working.
///
/// **The total.** An exact live total would be one more shared counter that
/// every booking and release of every pool touches, a contended cache line
/// the plain modes would pay for. The pick sums the candidates' loads
/// itself instead: below 64 candidates on every pick (as cheap as reading a
/// shared total); from 64 on, unmasked picks read a total cached on the
/// ring, which a pick rescans with probability `8/n` (about 8 counter loads
/// per pick, amortised; previews never store). Between rescans the cached
/// total lags by about `n/8` bookings, i.e. by `f/800` of a request per
/// worker in the bound; with reservations only growing it is an
/// underestimate, which makes the bound stricter, never looser. When no
/// candidate fits (a total older than a burst of bookings), the pick
/// rescans and walks again, then falls back to least-loaded. Masked picks
/// sum their own candidates every time.
///
/// Tests: `tests/suite/affinity.rs` (only the removed worker's keys move among
/// 100; an added one takes ≤ 1/101 + 1 %; the bound under Zipf keys with
/// reservations held, weighted bounds, stale totals; health, draining,
/// masks; replicas agree; a threaded run that holds the bound and one that
/// churns membership and ends idle), `tests/suite/alloc.rs`, unit tests of the
/// ring's bucket index against a linear search; the simulator's sessions
/// scenario and `sim/tests/sessions.rs`.
///
/// # Session bindings
/// `Sessions` (feature `sessions`) binds a session key to
/// the worker its first request went to. A binding names the worker's slot
/// and identity generation; the pick checks both against the snapshot it
/// loaded (the stale-pick rule above), so a binding never lands on a worker
/// that reused the slot, and a binding racing its worker's removal either
/// sees the worker (a pick that started before the removal returned) or does
/// not (hard: [`Error::SessionWorkerGone`](crate::Error::SessionWorkerGone)
/// once, the binding dropped; soft: the selector's pick, rebound). A bound
/// hit is booked unvalidated, as a pinned target: it goes home however
/// loaded home is (use [`Affinity`](crate::Affinity) as the selector to
/// bound where new sessions land). The map is `papaya`'s: lock-free reads
/// (an epoch pin and a probe), maintained, no `unsafe` of ours; a sharded
/// `RwLock<HashMap>` would put a shared reader count on every lookup. An
/// entry's last-use time is stored only when the millisecond moved, so a
/// hot session's entry stays read-shared. Binding a new session allocates
/// its entry; the table holds at most `max_sessions` and sweeps idle and
/// orphaned entries when full (else the session routes unbound).
/// `export`/`import` move bindings between replicas by worker identity.
/// Tests: `tests/suite/sessions.rs` (hard/soft, TTL, bounded churn, slot reuse,
/// replica hand-off, threads under membership churn).
///
/// # Cost pick (LLM routing)
/// [`Cost`](crate::Cost) is the main path of KV-aware LLM routers (Dynamo's
/// default selector): per candidate `c_i = L_i − α·o_i`, with `L_i` the
/// counter as every mode reads it (booked plus reported, plus the health
/// penalty) and `o_i` the request's credit, the blocks of its prompt the
/// worker holds, carried by [`CacheHits`](crate::CacheHits). Dynamo's
/// `α·(blocks − o_i) + L_i` is the same plus a constant, so it ranks and
/// samples alike.
///
/// *Arithmetic.* Costs are `1000·L_i − α_milli·o_i` in an `i64`:
/// `1000·L < 2^42`, and [`CreditWeight`](crate::CreditWeight) caps
/// `α_milli` at `10^6`, so `α_milli·o < 2^52`; every cost lies in
/// `(−2^52, 2^42)`, nothing wraps, and every difference of two costs is
/// below `2^53`, exact in an `f64`, which is where the softmax starts.
///
/// *Ranking.* The key is `(unhealthy, cost)`: an unhealthy worker's counter
/// carries [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD), which a large enough
/// credit could outweigh, so health is compared first and a marked worker
/// wins only when no healthy candidate is left. The busy threshold drops a
/// candidate whose reported load is over it before anything is compared.
/// Capacity weights and slow start are not applied: the costs are in the
/// units the load is booked in (blocks), as Dynamo's are. Device-aware's
/// full-hit rule is not a case of this one: it books nothing for a full hit
/// and decides by CPU/accelerator totals, which no per-worker cost states.
///
/// *The credit input.* A sparse build (`rebuild_sparse` from worker ids,
/// `rebuild_tokens` from [`WorkerToken`](crate::WorkerToken)s a cache index
/// stores) keeps a list of `(slot, generation, blocks)` and, per slot, a mark
/// `stamp << 32 | index` stamped with the build: a new build retires every
/// mark by bumping the stamp, so it costs time in the workers it names, not
/// in the pool, and a lookup by slot (device-aware's full hits, the
/// reference pass) is one mark and one entry. Each entry is checked against
/// the pick's set by generation, so a slot that changed hands counts for
/// nothing. A dense build (`rebuild`, or a sparse one naming more than an
/// eighth of the set) also keeps the per-slot arrays the SIMD pass reads.
///
/// *`T = 0`.* The reference is one scalar pass (least key, tie count, first
/// tie) and, when several tie, one draw and a second pass to the drawn tie;
/// the booking is a compare-and-swap on the load that tie was judged on, so
/// without releases the pick is exact as least-loaded's is. With sparse
/// credit (a prefix index names few workers) the pick walks the credited
/// entries first: an uncredited worker costs `1000·L ≥ 0`, so a least
/// credited cost below 0 is the answer with no scan at all (only credited
/// workers tie there). Otherwise the SIMD least-loaded scan (sublinear on
/// large pools) gives the least load `m`: a least credited cost below
/// `1000·m` is the answer, one above it leaves the scan's answer (its ties
/// are the scan's), and at equality the ties are the credited ones plus the
/// lanes at `m` (all uncredited: a credited one there would cost less),
/// counted by one SIMD pass and drawn among as one set. Busy thresholds,
/// marked health, capacity weights and stale masks go to the reference. The
/// sparse path draws differently from the reference, but from the same set
/// of least-cost workers (property test `sparse_matches_reference`).
///
/// *Dense credit (`T = 0`).* When more are credited, one SIMD scan reads each
/// candidate's counter and credit side by side (`scan::least_credited`, the
/// least-loaded scan over another view of the lanes, as the weighted scan
/// is) and compares a `u32` key per lane:
/// `key = 1000·min(x, limit) + α_milli·K − α_milli·o` (wrapping), with `x`
/// the counter ORed with its exclusion, `K` at least every credit
/// (`CacheHits` records it as it is built) and
/// `limit = ⌊(2^32 − 1 − α_milli·K)/1000⌋`. With `o <= K` nothing wraps and
/// the key is the exact cost plus `α_milli·K` for every `x <= limit`; a
/// clamped lane (an excluded one among them) keys at least `1000·limit`, and
/// less than its true key, so a least key below `1000·limit` is exact and so
/// is the set of lanes tied at it. The vectors compute `α·K − α·o` as
/// `α·K + (2^32 − α)·o` (two lane-wise multiplies, two adds; no subtract or
/// 64-bit lane needed); the load the booking validates is recovered from the
/// key, `(key + α·o − α·K)/1000`. The scan declines, and the reference
/// answers, for credits built for another set than the pick's (they would
/// need a per-slot identity check), for `α_milli·K > 2^32 − 1001`, for a
/// least key at or over the bound, and in the cases the sparse path
/// declines for. Each backend (AVX2, AVX-512, NEON and the portable vector
/// code) makes the scalar reference's draws and answers
/// (`scan::tests::credited`), and the cost-level answer is the reference's
/// least cost (property test `dense_matches_reference`).
///
/// *`T > 0`.* `P(i) = exp(−(c_i − c_min)/((c_max − c_min)·T)) / Σ_j …`
/// over the best health tier, uniform when all costs are equal. The
/// reference is three scalar passes: min, max and tier; the sum of the
/// weights; one 53-bit draw scaled by the sum and the running sum to it.
/// Nothing is stored between passes, so nothing is allocated; a sequential
/// pick samples the formula exactly up to `f64` rounding (chi-square test
/// `softmax_samples_the_formula`); under concurrent bookings the passes may
/// see different loads, which moves the draw within the same tier, and the
/// booking validates the chosen worker's load as at `T = 0`.
///
/// With sparse credit (at most a quarter of the candidates) the same
/// distribution comes from one SIMD pass and the credited entries. Every
/// uncredited cost is `1000·L`, so one pass for the least and the largest
/// load (`scan::range`) and the credited costs give `c_min` and `c_max`,
/// provided an uncredited worker holds each end (the pass's count at that
/// load exceeds the credited ones there; counted only when a credited worker
/// sits at an end; else the reference answers). The draw is rejection
/// sampling under an exact envelope: with `W_c` the credited weights' sum,
/// `u` the uncredited candidates and `w(1000·m)` the largest weight one of
/// them can have, a round draws `x` below `Q = W_c + u·w(1000·m)`; `x < W_c`
/// names a credited worker by the prefix sums of its weights, else a uniform
/// candidate is drawn, redrawn if credited, and kept with probability
/// `exp(−1000·(L − m)/((c_max − c_min)·T))`. A round returns worker `i` with
/// probability `w_i/Q`, so the answer is `i` with `w_i/Σ_j w_j`: the formula
/// (chi-square test `sparse_softmax_samples_the_formula`, masked and not).
/// `exp` runs once per credited worker and once per proposal above the least
/// load, never per candidate; an uncredited proposal is kept with
/// probability at least `exp(−1/T)`, and after 32 missed rounds the
/// reference answers (two exact draws mixed are exact). No vector `exp`: the
/// weights that remain are per credited worker, and a vector one would
/// change results by backend. Dense credit at `T > 0` is the reference.
///
/// # Phased load
/// [`Reservation::release_part`](crate::Reservation::release_part) gives back
/// part of a booking's weight and keeps the rest (a request's prefill at its
/// first token, its decode at the end); [`add_charge`](crate::Reservation::add_charge)
/// adds to it. The weight the guard holds is the only record: a part is at
/// most what it still holds, so every unit leaves once (by a part or by the
/// drop) and no counter goes below what other bookings hold. A guard emptied
/// by parts becomes a pin, taken before its last unit goes: `reclaim` reads
/// the counter (Acquire) before the pins, and the decrement (SeqCst) follows
/// the pin, so a reclaim that sees the charge gone sees the pin. The reverse,
/// a pin charged again, charges and then unpins, which that order does not
/// cover; it holds a snapshot naming the slot meanwhile, which keeps
/// `reclaim` off it, and refuses a worker that has left. Plain drops do
/// nothing new: the code is in `storage/phased.rs`.
///
/// # Prefill/decode pairs
/// [`Pairs`](crate::Pairs) joins two pools through one handle on each and
/// uses nothing but their public picks (`src/pair/`). A pair pick books the
/// decode side first, then decides, then books the prefill side; when the
/// second booking fails the first guard drops before the error returns, so a
/// pair is both bookings or neither, whatever races it (a removal between the
/// two is an ordinary removal under a live guard). A [`Plan::Local`](crate::Plan)
/// pair is one booking on the decode worker, charged the prefill's weight
/// too, whose [`hand_off`](crate::PairReservation::hand_off) gives that share
/// back as a phased part; a disaggregated pair drops its prefill guard there.
///
/// The [`Decider`](crate::Decider) is llm-d's rule: disaggregate when the
/// decode choice's uncached tokens (`needed − held` from the decode
/// request's cache hits, or the prefill weight without them) exceed the
/// threshold. [`Pairs::preview`](crate::Pairs::preview) finds the decode
/// choice with a preview (no booking, no cursor move) and records that
/// worker's load. [`Pairs::admit`](crate::Pairs::admit) books that worker
/// when its load still reads the same, since an unchanged load is what says
/// the preview still holds for it; otherwise it picks again and decides
/// again (a caller's plan stays). The comparison and the booking are two
/// steps: a booking landing in between is tolerated, as in any pick.
///
/// # Loom builds
/// Everything that differs under `--cfg loom` is in the crate-private `sync`
/// module: loom's atomics, `Arc`, `Mutex` and `UnsafeCell`; a mutex model of
/// the `arc-swap` cell and cache (arc-swap is not loom-aware); tiny storage
/// sizes; the counter array built atom by atom; a fixed random seed. Public
/// constants do not change. The scan compiles only its scalar kernel there.
///
/// # What proves it
/// | claim | proof |
/// |---|---|
/// | releases land exactly once, counts return to 0 | loom `reserve_release`, tests `accounting`, fuzz `ops` and `concurrent` |
/// | CAS bookings race releases; least-loaded exact without releases | loom `cas_races`, tests `threads` |
/// | a stale pick never charges another worker; reuse after last release | loom `stale_pick`, tests `churn` and `stress` |
/// | growth loses no decrement | loom `growth`, tests `churn` |
/// | per-block bounds stay below the counters; summarised picks exact, uniform, honour holes; a release before the bounds are armed skips nothing a raise needs | loom `summary` (`summary_race`, `summary_bookings`, `summary_growth`, `summary_floor_growth`, `summary_arming`, `summary_unmark`), tests `summarised` |
/// | a retarget moves one booking | loom `retarget`, tests `accounting` |
/// | a pair books both sides or neither under removals; preview-then-admit books what was previewed while loads stand still, decides again when they moved | loom `pair`, unit tests in `pair` |
/// | capacity, health and drain changes racing picks leak no count; marked or draining workers are not picked | loom `fleet`, tests `fleet`, fuzz `ops` |
/// | weighted shares, smoothness, exact weighted least-loaded | tests `fleet`, unit tests in `weights`, weighted `scan` tests |
/// | bounds on weighted scores and their floor stay below the scores, across changes of the factors; weighted summarised picks exact and uniform | loom `scores` (`scores_race`, `scores_second_look`, `scores_version_race`), tests `summarised_weighted`, fuzz `summary` (capacities) |
/// | round-robin tickets distinct, preview free | loom `round_robin`, unit tests in `selectors` |
/// | affinity: only a removed worker's keys move, the bound holds (weights, stale totals, threads); bookings racing lose nothing; bindings never outlive their worker | loom `affinity`, tests `affinity`, `sessions`; simulator test `sessions` |
/// | each mode's rule and draws | unit tests in `selectors` against a sequential reference; tests `device_aware` |
/// | the cost pick: least key against an oracle, sparse and dense paths equal to the reference, softmax against its formula, health and busy rules | unit and property tests in `selectors/cost`, `scan::tests::credited`; loom `cost` (`cost_exact`); fuzz `ops` (`CostReserve`, `ReleasePart`, `AddCharge`); sim test `llm` (beats least-loaded on hits and TTFT) |
/// | phased load: each part leaves once, never below zero, an emptied guard keeps its slot | loom `cost` (`phased_release`, `phased_pin`); tests `phased` (model property test, threads) |
/// | SIMD kernels equal the scalar reference | unit and property tests in `scan`, fuzz `scan` (reads past a slice fault) |
/// | no undefined behaviour, no data race in unsafe code | Miri over the unit tests and `stress` (`ci/miri.sh`) |
/// | real `arc-swap` and hardware reorderings | tests `stress` (bounded in time) |
/// | no allocation on picks and releases | tests `alloc` (counting allocator) |
/// | a panic in a key's `Clone`/`Hash`/`Eq` leaves the pool consistent | tests `panic_safety` (panic on the k-th call, every k) |
/// | a stale mask costs what a fresh one does, never admits a newcomer | unit tests in `remap` and `eligibility`; benches `single` (stale vs fresh) |
/// | writer memory bounded without `reclaim` | tests `writer_memory` |
/// | owned reservations release once, keep storage alive | tests `owned`, `hold`, `route`; Miri over `owned` |
/// | AVX-512 kernels equal scalar | `ci/avx512.sh` (instruction emulator, unmapped-page tails) |
/// | NEON kernels equal scalar | `ci/aarch64.sh` (unit and stress tests under `qemu-aarch64`) |
/// | the cost of each hot path, `&dyn` included, in instructions and in locked instructions | the callgrind gate (`ci/iai.sh`, budgets in `iai/budgets.toml`); against the pinned baseline, `ci/baseline-compare.sh` |
///
/// # What fails without each protection
/// Each protection of the lock-free paths, and the tests or models that fail
/// when it is taken out: each was planted and seen failing (the plain-store
/// raise is built in with `--cfg workerpick_plain_raise`, so anyone can see
/// it). Some are caught by native tests only, some by loom only, as the last
/// column says.
///
/// | protection (where) | fails without it | caught by |
/// |---|---|---|
/// | a raise is a compare-and-swap from the value read, not a store (`storage::raise`) | loom `summary_race`, `scores_race` (under `--cfg workerpick_plain_raise`) | loom only |
/// | the second look after a raise (`storage::raise::second_look`) | loom `scores_second_look`, `scores_race`, `summary_race`, `summary_unmark` | loom only |
/// | a report that lowers a counter lowers its block's bound (`reports::board`) | tests `reported` (`a_withdrawn_report_lowers_a_summarised_block`); fuzz replay `summarised_pool_ops_find_the_least`, `weighted_summarised_pool_ops_find_the_least` | native only |
/// | marking healthy lowers the block's bound and the floor (`fleet::health`) | tests `summarised` (`a_worker_marked_healthy_again_is_picked_next`); loom `summary_unmark` | both |
/// | a bound on scores counts only under its version's tag (`bounds::scores`) | tests `summarised_weighted` (`every_pick_is_at_the_least_ratio_while_loads_and_capacities_move`) | native only |
/// | `reserve_worker` refuses a draining worker (`booking::book`) | tests `fleet` (`draining_takes_no_picks_and_reports_when_done`); fuzz replay `ops_seeds` | native only |
/// | a pick checks its answer's mark while some worker is marked (`fleet::pass_over`) | tests `fleet` (`power_of_two_never_picks_an_unhealthy_worker_while_one_is_healthy`, `device_aware_passes_over_an_unhealthy_group`) | native only |
/// | health is compared apart from load, then own load per capacity (`fleet::pass_over`) | tests `fleet` (`a_fleet_all_unhealthy_picks_exactly_as_the_same_fleet_healthy`) | native only |
/// | a mark is kept whatever the room in the counter (`fleet::health`) | tests `fleet` (`a_mark_on_a_full_counter_is_kept_and_passes_the_worker_over_once_room_appears`); fuzz replay `fleet_ops_agree_with_the_model` | native only |
/// | an all-draining pool is not called empty (`Context::empty_error`) | tests `fleet` (`an_all_draining_pool_says_so_not_that_it_is_empty`) | native only |
///
/// # Repository layout
/// The library is the root package; `cargo test` and `cargo build` at the
/// root build only it. The load simulator (`sim/`, `cargo run --release -p
/// workerpick-sim`), the criterion benchmarks and the `BENCHMARKS.md`
/// generator (`benches/`, package `workerpick-benches`) and the
/// instruction-count gate (`iai/`) are workspace members built when named.
/// The peer libraries the benchmarks compare against (`benches/peers/`) and
/// the fuzz targets (`fuzz/`) are crates of their own, outside the workspace,
/// so their dependencies never enter the library's build. `proxy/`
/// (`workerpick-proxy`) and `replicas-nats/` (`workerpick-nats`, replica sync
/// over NATS on `async-nats`) are members too: the library takes no bus
/// dependency, and its `hyper` feature only the HTTP glue.
///
/// # Admission and readiness in the HTTP glue
/// `Route::poll_ready` is always ready (the worker is chosen in `call`), so
/// it cannot push back. The bound is `service::Admission` (feature `hyper`)
/// on `HyperRoute`: one compare-and-swap loop on a shared counter before
/// the pick (exact: never over the limit, never a spurious shed), a 503
/// without a pick when full, and a permit (an `Arc` clone) carried by the
/// response body and given back when hyper drops it.
pub mod design {}

/// What a plain pick costs, where it went, and what keeps it from drifting.
///
/// # Never slower than before
/// A pool that uses none of weights, health, reports, slow start or draining
/// must cost what the crate did before those existed: commit 97b26ce is the
/// pinned baseline. `ci/baseline-compare.sh` links that commit and the tree
/// into one program (the baseline's package renamed, so cargo links both) and
/// runs the plain-pool operations through a cached handle, reading the
/// worker: interleaved in time (median of per-round ratios), or with
/// `--counts` under callgrind, instructions (`Ir`) and locked instructions
/// (`Ge`) per operation of each side.
///
/// # Where the nanoseconds went (97b26ce to 7b24bfd)
/// Measured with `--counts`, so exact and host-independent:
/// - Locked instructions per operation did not change: 0 per random select,
///   1 per round-robin select (the cursor), 2 per random, power-of-two or
///   least-loaded reserve + release (the booking and the release), 3 for
///   round-robin. No `mfence` and no `xchg` on any of these paths (checked in
///   the disassembly); the raise of a bound fences, but raises are rare.
/// - The release of every pool with room for 1 024 workers (the default
///   pool among them) gained a `SeqCst` load of its block's bound and one of
///   the floor, on two more cache lines, right after the locked decrement
///   (which already orders them): the per-block bounds, kept since they were
///   made the default's. That was the largest single cost, and arming
///   (see [`design`], *Summarised least-loaded*) removes it
///   where no summarised pick runs.
/// - The rest is the features' checks on every pick: the weights of the set,
///   the pool-wide count of unhealthy workers, whether the set is dense (a
///   draining worker), reported load and slow start (a load and a predicted
///   branch each, on lines of the pool or the snapshot already in cache).
///   What is left per operation is in `ci/baseline-compare.sh --counts`.
///
/// # Why the gate counts locked instructions
/// `Ir` does not weigh a lock or a fence: one more `fetch_add` per reserve is
/// about one instruction in a hundred, and on hosts where an uncontended
/// locked instruction costs ~5 ns, as much time as a whole random pick. The
/// callgrind gate therefore runs with `--collect-bus=yes` and holds each
/// benchmark's global bus events (`EventKind::Ge`, callgrind's count of
/// executed locked instructions) under a budget of its own, 1 % above the
/// measured count: less than one more per operation, so one more per
/// operation fails it even where the instruction budget would let it pass.
/// Counts are exact run to run, so this holds on a shared 2-core machine
/// where timing does not: a timed comparison against the baseline there moved
/// by tens of percent between runs, more than the 5 % it would have to
/// judge. What `Ge` does not count: fences (`mfence`, and the `lock or` on
/// the stack that LLVM emits for an idempotent read-modify-write are both
/// left out by valgrind), and loads (a dependent miss weighs nothing in
/// `Ir` either). Those need the disassembly or a timed run.
pub mod performance {}

/// What this crate does not do, and the edges of what it does.
///
/// - The total in-flight weight booked on one worker is at most `u32::MAX`;
///   a booking past it fails with [`Error::LoadOverflow`](crate::Error::LoadOverflow).
/// - A pool holds at most its worker limit of slots (live workers plus
///   removed ones still draining); the counters for the limit are reserved up
///   front (4 bytes a slot).
/// - A `Handle` that is never used again keeps its cached snapshot alive; the
///   slots of workers removed since then are not reused until it is dropped or
///   picks again (the pool takes fresh slots meanwhile).
/// - A snapshot caches the translations of up to 32 eligibility masks built
///   before a worker left; a further such mask is filtered on every pick,
///   which makes least-loaded and device-aware picks with it quadratic in
///   the mask's size. Rebuild masks after the set changes to stay clear of it
///   ([`Eligibility::is_current_for`](crate::Eligibility::is_current_for)).
/// - Reservations borrow the pool. To move them into `'static` tasks, share
///   the pool as an `Arc<Pool<W>>` and pick through an
///   [`OwnedHandle`](crate::OwnedHandle); each owned reservation then pays one
///   uncontended reference-count increment and decrement on its handle's
///   anchor (see [`design`], *Owned forms*).
/// - Least-loaded with concurrent releases may be one release stale; without
///   releases it is exact. Its tie-break is uniform over the lanes as they
///   were read; lanes that move during a scan shift the odds slightly (a pick
///   is always a lane seen at the minimum, validated by the compare-and-swap).
/// - Least-loaded's speed depends on how many workers tie: an idle or
///   balanced pool takes the fast path (the min pass and one random try);
///   with only a few workers at the minimum it also counts and searches the
///   ties (at 1 024 and 10 000 workers about 2.8 to 3.3 times the
///   instructions of an idle pick: `iai/budgets.toml`; times in
///   BENCHMARKS.md, *4 ties* and *Large pools*).
/// - Least-loaded in sublinear time (per-block lower bounds) is kept by pools
///   with room for 1 024 slots or more (the default limit among them); a pool
///   built [`with_max_workers`](crate::Pool::with_max_workers) below that
///   scans every counter.
///   Masked picks scan flat on every pool. A draining worker holding its
///   block's least counter makes picks scan flat until it drains.
/// - Reported load (workers' reports, replicas' summaries) counts at most
///   [`MAX_REPORTED_LOAD`](crate::MAX_REPORTED_LOAD) per worker, and shares the
///   counter's range with bookings: a booking is refused when bookings plus
///   reported load would pass `u32::MAX`. Reported load is as fresh as its
///   last report: a report much older than a service time steers picks worse
///   than none (the simulator's replica scenario shows it); keep report and
///   summary periods well under the service time, and the age limit short.
/// - Applying a replica's summary moves each counter whose load changed with
///   one compare-and-swap: a summary in which every one of n workers changed
///   costs at least n of them, about twice an unchanged one (BENCHMARKS.md,
///   "Reported load").
/// - Capacities weigh random, round-robin, power-of-two and least-loaded;
///   device-aware ignores them (its groups are by cache hits, and within a
///   group it picks the least loaded, unweighted).
/// - Weighted least-loaded takes the SIMD scan only when the least common
///   multiple `L` of the (gcd-reduced, slow-start-scaled) capacities is at
///   most 2^16, and only while the least `(load + r) · L / c` fits 32 bits;
///   otherwise (capacities such as 1 000, 999 and 997, or loads within a
///   factor `L` of `u32::MAX`) it scans in scalar code, exactly, at about the
///   cost of the scalar backend. The bounds on scores serve requests of
///   weight 1 only (they bound `(load + 1) · L / c`); a heavier request, a
///   masked pick, or a pool below 1 024 lanes scans every lane's score. A
///   flat weighted scan does more per vector than the plain one: two loads
///   (counters, factors), a clamp, an add and a multiply where the plain scan
///   does one load and one minimum. The first pick after a change of the
///   factors (a capacity set, a slow-start step) finds every bound unknown
///   and raises them all: about two flat scans, once per change.
/// - Weighted round-robin keeps its schedule as a list of Σc entries (4 bytes
///   each) while Σc ≤ max(2^16, 16n); past that it walks tickets by a stride
///   rule, a few per pick for ordinary spreads, bounded, then one weighted
///   draw.
/// - A slow-start step publishes a new snapshot (O(n) for the writer, as any
///   membership change); a pool nobody writes to publishes it from a
///   reservation that finds it due, so a pool that only selects (never
///   reserves) needs [`Pool::advance_slow_start`](crate::Pool::advance_slow_start)
///   called now and then.
/// - An unhealthy worker's counter carries `2^31` beside its bookings, so it
///   takes bookings only up to `u32::MAX − 2^31`, and a worker whose counter
///   is already within `2^31` of `u32::MAX` gets a smaller mark.
/// - The AVX-512 kernel (the default on AVX-512 CPUs) runs in the unit tests
///   only where the test machine has AVX-512. So that every CI host tests it,
///   the repository's `ci/avx512.sh` builds its source files alone (the
///   AVX-512 primitives and the shared vector scan) and runs them on an
///   emulated CPU (the Bochs x86 emulator) against a reference: every length
///   up to 600 and around 1 024, at every alignment, with the arrays' ends
///   against an unmapped page, with and without an exclusion array.
///   `WORKERPICK_SCAN=avx2` (or
///   [`Pool::with_scan_backend`](crate::Pool::with_scan_backend)) opts out.
/// - The NEON kernel (the default on aarch64) has been run only under
///   `qemu-aarch64` (`ci/aarch64.sh`): that checks its results against the
///   scalar reference, not its speed, nor ARM's weaker memory ordering (the
///   loom models cover the orderings). Its speed on ARM hardware is still to
///   be measured; it runs the same vector algorithm as AVX2 and AVX-512, four
///   lanes to a vector. `WORKERPICK_SCAN=scalar` opts out.
/// - Packages considered: `wide` picks instructions at compile time only, and
///   on the default x86-64 target its unsigned 32-bit min is per-lane scalar
///   (slower than a plain loop), so the x86-64 scan uses `std::arch` with
///   run-time detection instead. On aarch64, where NEON is the baseline, the
///   NEON kernel does its lane arithmetic with `wide`. `portable-atomic` is
///   not needed because every atomic here is a native 32- or 64-bit one on the
///   supported targets (armv7's 64-bit atomics included).
pub mod limitations {}
