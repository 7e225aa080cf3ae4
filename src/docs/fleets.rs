//! Heterogeneous fleets: capacity weights, slow start, draining and health.
//!
//!
//! # Heterogeneous fleets
//! Workers declare a capacity ([`WorkerInfo::capacity`](crate::WorkerInfo::capacity),
//! 1 to [`MAX_CAPACITY`](crate::MAX_CAPACITY), default 1;
//! [`Pool::set_capacity`](crate::Pool::set_capacity) changes it at run time).
//! The writer builds weight tables with each snapshot from the members'
//! effective capacities (reduced by their common divisor, scaled by slow
//! start) and builds none when they are all equal: an unweighted pool pays one
//! `Option` test per pick and draws exactly as before. The rules, beside the
//! unweighted ones (`c` a worker's capacity, `r` the request's weight):
//!
//! | mode | unweighted | weighted | weighted cost |
//! |---|---|---|---|
//! | random | uniform draw | P(i) = c_i / Σc: Walker's alias table (`weights::alias`), one draw and one comparison | O(1) |
//! | round-robin | `ticket mod n` | smooth: the period of Σc tickets holds c_i turns of worker i, spread evenly (`weights::schedule`); a worker's turns never run longer than ⌈c_i / min c⌉ in a row | O(1) per ticket while Σc ≤ max(2^16, 16n) (the period as a list); a bounded walk of tickets past that |
//! | power-of-two | the less loaded of two distinct uniform draws | two distinct draws in proportion to `c` (the alias table), the less `(load + r) / c` by 64-bit cross-multiplication (uniform draws would put a worker in at most 2/n of the pairs, too few for a large one) | two alias draws for one uniform pair |
//! | least-loaded | SIMD min over the counters; from 1 024 lanes the per-block bounds on the counters | the least `(load + r) / c`, exactly: the SIMD scan over per-lane scores `(load + r) · L / c_i`, `L` the capacities' lcm (`weights::scale`, `scan::least_weighted`), ties uniform; from 1 024 lanes, for `r = 1`, per-block bounds on the scores (`bounds::least_scored`, below) | one multiply per lane; from 1 024 lanes the bounds and a try over the candidates whose factor can reach the least; exact scalar path when `L > 2^16` or the least score is clamped |
//! | device-aware | groups by cache hits, least loaded within | unweighted (see [`limitations`](super::limitations)) | — |
//!
//! A least score at or below `u32::MAX − L` was computed without clamping,
//! so the scan's answer is exact; the counter it names is read again and its
//! score recomputed before the compare-and-swap books from that load.
//!
//! **Bounds on weighted scores.** The counters' bounds say nothing of the
//! scores, whose order is not the counters' order, so a summarised pool keeps
//! a second set, per block of the same lanes (`bounds/scores.rs`): a bound
//! on `min(score, u32::MAX)` over the block, the score being
//! `(load + 1) · L / c_i`, for requests of weight 1 (the default; heavier ones
//! scan flat). Factors change while requests fly (`set_capacity`, each slow
//! start step), and a change of one capacity can change `L` and so every
//! factor; so each set of factors the writer installs gets a *version*, each
//! slot's factor is stored tagged with it (one `u64` per slot, which a release
//! reads), and so is each bound (one `u64` per block). The writer installs a
//! snapshot's factors before it publishes the snapshot, reusing the last
//! version when they are unchanged.
//!
//! *Invariant.* Outside the windows of the counters' bounds (a release
//! between its decrement and its lowering, a raise between its swap and its
//! second look), a bound tagged `v` is at most the score under version `v`'s
//! factors of every lane of its block that has one. A pick of version `v`
//! counts a bound tagged otherwise as 0 (nothing known).
//!
//! *Why it holds.* The rules of the counters' bounds, with the tag: a pick
//! raises a bound only by compare-and-swap from the tagged value it read, to
//! the least score it then read under its own factors, after an acquire
//! load of the bound, then fences and looks again (loom model `scores_race`
//! fails with a plain store, `scores_second_look` without the second look).
//! A release, after its decrement and the counters' bound and floor, loads
//! its slot's tagged factor and the bound (`SeqCst`, behind a fence under
//! loom): if the tags agree it lowers the bound to the slot's score, with the
//! right factor; if they differ it lowers the bound to 0, which bounds
//! anything. So a release whose tag is older than the bound's cannot leave it
//! too high, and a bound of an older version is never trusted by a newer
//! pick, nor overwritten by an older pick's raise (its swap fails on the
//! tag; loom model `scores_version_race` races a capacity change against a
//! raise under the old factors). Lowering is always safe; only raises need
//! the protocol. Whether a release must look at the scores at all it learns
//! from the floor it loads anyway: its top bit flags a pool with bounds on
//! scores, set by the writer (`SeqCst`) after it made them and before it
//! publishes any version; a release that does not see the flag decremented
//! before any pick could raise a bound on scores. Versions are 32 bits, never
//! 0; one would be reused after 2^32 changes of the factors while a pick of
//! the first still ran.
//!
//! *The floor.* Above the bounds on scores, one tagged value `G`
//! (`Scores::floor`, on a line of its own): outside the same kind of
//! windows, `G` tagged `v` is at most every bound of version `v`, over every
//! block of that version's lanes. A version's factors fix its lanes, so every
//! pick of it reads the same blocks for `G` (a dense set's pick may return
//! fewer lanes than it reads): no count of covered blocks is needed, as the
//! counters' floor needs. It follows the counters' floor's rules: every
//! lowering of a bound on scores (a release, a raise's repair) is followed
//! by one of `G` by the same tag rule; a pick raises `G` by compare-and-swap
//! from the value it read before the bounds, to their least, then fences and
//! reads them again, lowering `G` to what it finds. The loom model
//! `scores_second_look` fails without that second look, and `scores_race`
//! when a release does not lower `G`.
//!
//! *The pick.* `lo` is the least bound; a lane scoring `lo` is at the least
//! score, and every lane at the least score lies in a block whose bound is
//! `lo`. A lane of factor `f` scores at least `f`, so only the candidates of
//! factors up to `lo` can tie: the snapshot keeps the candidates sorted by
//! factor (`Scale::by_factor`). The pick first tries one uniform lane of
//! that prefix at `G` (at most `lo`, equal once settled), before it reads any
//! bound: in an idle or balanced pool that is the pick, and in an idle pool
//! of capacities 4:2:1:1 the prefix is the capacity-4 workers alone, all at
//! `G`. Otherwise it reads its bounds for `lo`, raises `G` if it was below
//! them, and tries up to two batches of 8 lanes at `lo` (read without a
//! branch each, the first hit taken: uniform among the ties). If they miss,
//! it counts the ties at `lo` in the blocks at `lo` (up to 16), raising on
//! the way the bound of each that holds none (and every bound it counts as
//! unknown, as after a new version), draws one and finds it; it reads the
//! bounds again after a raise (3 times), and otherwise scans flat. Costs: a
//! release of a weighted pool pays the factor's load, a multiply and the
//! loads of the bound and of `G` (about 60 instructions in the callgrind
//! gate); an unweighted pool's release pays 2 or 3 (the flag rides on the
//! counters' floor's load and comparison).
//!
//! **Health.** [`Pool::set_healthy`](crate::Pool::set_healthy) records a
//! mark per slot beside the counter, as reported load is, and adds
//! [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD) (2^31) to the counter: no new
//! snapshot. The scan and the two-choice comparison pass the worker over on
//! their own. Every mode tests one pool-wide count of marked workers (a
//! relaxed load, the only cost to a pool without marks) and, only while it is
//! non-zero, the chosen worker's mark. Random and round-robin then draw again
//! or take the next healthy worker. Power-of-two with both draws unhealthy
//! draws up to 8 more pairs, then takes the exact least-loaded healthy
//! candidate; least-loaded with an unhealthy answer takes the exact
//! least-loaded healthy candidate; device-aware leaves unhealthy candidates
//! out while one is healthy (the rules the modes share, `selectors/rules.rs`, and `least_loaded/health.rs`). So a mark is honoured even
//! where the penalty cannot show it: a counter too full for the whole penalty
//! (the mark is kept, "short", and marking it again adds what fits), or a
//! healthy load of 2^31 or more. When every candidate is unhealthy, picks go
//! to all of them (Envoy's panic routing: a health signal that marks the
//! whole fleet down is more likely wrong than the fleet), and each load-aware
//! mode picks exactly as on the same fleet healthy: health is compared apart
//! from load, then the worker's own load (the penalty taken out) per
//! capacity, so the penalty is never divided by capacity. Panic routing pays
//! for it: one pass over the candidates' marks per load-aware pick, and the
//! weighted modes' exact scalar path. The pool's own views (`in_flight`,
//! `loads`, summaries) subtract the penalty. Transitions take the report
//! lock; marking healthy lowers the block bound and the floor as a release
//! does. Marking a worker that is already marked is one hash lookup and one
//! load, so an outlier detector can call it on every failed request.
//!
//! **Draining.** [`Pool::drain`](crate::Pool::drain) publishes a snapshot in
//! which the worker stays in the index (its reservations, retargets and
//! `in_flight` keep working) but is no candidate: its lane is excluded in the
//! scan, it is out of the member list every mode draws from, and masks built
//! before the drain are filtered against the set's members. `reserve_worker`
//! refuses it with [`Error::Draining`](crate::Error::Draining), and a pick
//! while every worker drains fails with
//! [`Error::AllDraining`](crate::Error::AllDraining) (the set is not empty).
//! [`Pool::drained`](crate::Pool::drained) is a poll: the caller that drains
//! a worker is a control loop that already ticks (it will remove the worker
//! next), a callback would run on the thread of whichever release came last
//! (a request's hot path), and a future would tie the crate to a runtime.
//!
//! **Slow start.** [`Pool::set_slow_start`](crate::Pool::set_slow_start)
//! ramps a joining or resumed worker's effective capacity over a window with
//! Envoy's curve, `max((t / window)^(1/aggression), min_weight_percent)`, in
//! eighths (so `L` stays small for the scan). The ramp is only effective
//! capacity: a pool whose workers are all of capacity 1 becomes weighted
//! while one ramps. A step is published by the writer when it changes the set,
//! or by the first reservation that finds it due (one in 1024 per thread reads
//! the clock while a ramp runs; it only `try_lock`s the writer), or by
//! [`Pool::advance_slow_start`](crate::Pool::advance_slow_start).
//!
//! Tests: `tests/suite/fleet.rs` (proportions over 10^6 picks within 1 %, run
//! bounds, exact water-filling under threads, health in every mode, draining,
//! the ramp's shares); loom `fleet`; the fuzz op model (capacity, health,
//! drain and resume ops); `scan` tests hold the weighted kernels to a 64-bit
//! oracle and to scalar draw for draw; the simulator's weighted-fleet and
//! scale-up scenarios (in its default run, with tests on their shares).
//!
//! # Health marks in the counter
//! (`load/health.rs`.)
//! Health, without a new snapshot: an unhealthy worker's counter carries
//! `UNHEALTHY_LOAD` more load, so the SIMD scan, the two-choice comparison
//! and custom selectors reading `Context::load` pass it over in the pass they
//! already make. Every built-in mode checks its answer's mark only while some
//! worker is marked (one load of a pool-wide count otherwise), and answers
//! exactly when the penalty did not keep it off (each mode's file, e.g. `selectors::least_loaded::health`).
//!
//! When every candidate is unhealthy, picks go to all of them as if none were
//! (by own load, for load-aware modes): Envoy's panic routing, the choice
//! that keeps serving when the health signal is what failed.
//!
//! The penalty is kept per slot beside the counter (as reported load is), so
//! the pool's views of its own bookings subtract it, and marking healthy takes
//! out exactly what marking added. The mark itself never depends on room in
//! the counter: a counter too full for the whole penalty takes what fits, the
//! slot counts as short, and marking it again adds what fits of the rest (the
//! load-aware picks check their answer's mark meanwhile, so a short mark is
//! passed over all the same: see the modes' files). A pick never takes the
//! report lock to top a mark up: the picks would then change the counters
//! behind the writers' backs. Transitions
//! hold the report lock (they change the counter's non-booked part, as reports
//! do); marking a worker that is already marked is one load and returns.
//!
//! # The weighted round-robin schedule
//! (`weights/schedule.rs`.)
//! Weighted round-robin: one period of `Σc` picks (capacities reduced by their
//! common divisor) in which candidate `i` appears `c_i` times, spread evenly.
//!
//! The period is `W = max c` generations; candidate `i` takes a turn in
//! generation `g` when `⌊(g+1)·c_i/W⌋ > ⌊g·c_i/W⌋` (so `c_i` times per period,
//! at most once per generation, evenly spaced), and within a generation the
//! candidates go in set order. A candidate with the largest capacity takes a
//! turn in every generation, so no other candidate is picked twice in a row,
//! and it is picked at most `⌈W / min c⌉` times in a row (the generations
//! between two turns of the lightest candidate).
//!
//! A pick is `period[ticket mod Σc]` for a shared cursor's ticket: the cost of
//! unweighted round-robin plus one load. When `Σc` is too long to keep as a
//! list (`MAX_PERIOD`, or 16 entries per candidate if more), a pick walks
//! tickets instead, taking the first whose candidate has a turn (`Stride`).
//!
//! # Weight tables
//! (`weights/mod.rs`.)
//! Capacity weights as the picks use them: tables built with each snapshot
//! from the members' effective capacities (their `capacity` scaled by slow
//! start), and nothing when every candidate has the same one, so that an
//! unweighted pool picks exactly as before, at the same cost.
//!
//! | mode | weighted rule | table |
//! |---|---|---|
//! | random | P(i) = c_i / Σc, one draw | `alias`: Walker's alias method, O(1) |
//! | round-robin | c_i picks per period of Σc, spread evenly | `schedule`: the period as a list |
//! | power-of-two | the less of (load + r) ÷ c, exact | none: integer cross-multiplication |
//! | least-loaded | the least (load + r) ÷ c, exact | `scale`: per lane L ÷ c_i for the SIMD scan |
//!
//! (`r` is the request's weight: the load after booking it, per unit of capacity.)
//!
//!
//! # Slow start steps
//! (`fleet/slow_start.rs`.)
//! Slow start: a worker that joins (or resumes after a drain) works up to its
//! capacity over a window, so that least-loaded does not flood it the instant
//! it appears with no load.
//!
//! The curve is Envoy's: at age `t` the capacity is scaled by
//! `max((t / window)^(1 / aggression), min_weight_percent / 100)`, until
//! `t ≥ window`. It is applied in `LEVELS` steps (the factor rounded up to
//! the next eighth), each published as a new snapshot: the weight tables are
//! built with the snapshot, and eighths keep the least common multiple of the
//! capacities small enough for the SIMD scan (see `weights::scale`). The
//! writer publishes a step when it changes the set anyway; between changes, a
//! reservation now and then (1 in 1024 per thread, while some worker ramps)
//! checks the clock and publishes the step that is due (`try_lock`: never
//! waiting for a writer).
//!
//! # The scan's factors
//! (`weights/scale.rs`.)
//! The least-loaded scan's view of capacities: per lane `scale = L / c` with
//! `L` the least common multiple of the capacities, so that a lane's score
//! `(load + r) · scale = L · (load + r) / c` orders lanes exactly as
//! `(load + r) / c` does, ties included, in one `u32` multiply per lane.
//!
//! A score must fit 32 bits: every lane's load is clamped to one bound,
//! `top - r` with `top = ⌊u32::MAX / max(scale)⌋`. A clamped lane scores
//! `top · scale ≥ top · min(scale)`, so when the least score is below that
//! (`Scale::exact_below`) no clamped lane holds it and every lane below it
//! was scored exactly: the scan's answer is exact. At or above it (loads
//! within a factor of about `max(c) / min(c)` of `u32::MAX`, or only
//! excluded lanes), and for a request heavier than `top`, the caller takes
//! the exact scalar path.
