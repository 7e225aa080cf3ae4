//! What proves each claim, and what fails without each protection.
//!
//!
//! # What proves it
//! | claim | proof |
//! |---|---|
//! | releases land exactly once, counts return to 0 | loom `reserve_release`, tests `accounting`, fuzz `ops` and `concurrent` |
//! | CAS bookings race releases; least-loaded exact without releases | loom `cas_races`, tests `threads` |
//! | a stale pick never charges another worker; reuse after last release | loom `stale_pick`, tests `churn` and `stress` |
//! | growth loses no decrement | loom `growth`, tests `churn` |
//! | per-block bounds stay below the counters; summarised picks exact, uniform, honour holes; a release before the bounds are armed skips nothing a raise needs | loom `summary` (`summary_race`, `summary_bookings`, `summary_growth`, `summary_floor_growth`, `summary_arming`, `summary_unmark`), tests `summarised` |
//! | a retarget moves one booking | loom `retarget`, tests `accounting` |
//! | a pair books both sides or neither under removals; preview-then-admit books what was previewed while loads stand still, decides again when they moved | loom `pair`, unit tests in `pair` |
//! | capacity, health and drain changes racing picks leak no count; marked or draining workers are not picked | loom `fleet`, tests `fleet`, fuzz `ops` |
//! | weighted shares, smoothness, exact weighted least-loaded | tests `fleet`, unit tests in `weights`, weighted `scan` tests |
//! | bounds on weighted scores and their floor stay below the scores, across changes of the factors; weighted summarised picks exact and uniform | loom `scores` (`scores_race`, `scores_second_look`, `scores_version_race`), tests `summarised_weighted`, fuzz `summary` (capacities) |
//! | round-robin tickets distinct, preview free | loom `round_robin`, unit tests in `selectors` |
//! | admission: each waiter admitted once or ended with nothing booked, none stranded while room exists, the limit exact among admissions; strict classes; fair shares by uncached tokens | loom `queue`; tests `queue` (threads with cancellations and deadlines, 4:1 shares, cached against uncached, classes); unit tests in `queue/order.rs` |
//! | affinity: only a removed worker's keys move, the bound holds (weights, stale totals, threads); bookings racing lose nothing; every candidate unhealthy still answers | loom `affinity`, tests `affinity`; fuzz `ops` (`AffinityReserve`: the bound on exact totals, a key moves only to a worker that joined); simulator test `sessions` |
//! | a session binding racing its worker's removal books that worker or finds it gone, never a later owner of its slot; bindings never outlive their worker; the table agrees with a model | loom `sessions` (`session_removal`, `session_threads`), tests `sessions`; fuzz `ops` (`SessionReserve`, `SessionUnbind`, `SessionSweep`, `SessionExport`, `SessionImport`) |
//! | each mode's rule and draws | unit tests in `selectors` against a sequential reference; tests `device_aware` |
//! | the cost pick: least key against an oracle, sparse and dense paths equal to the reference, softmax against its formula, health and busy rules | unit and property tests in `selectors/cost`, `scan::tests::credited`; loom `cost` (`cost_exact`); fuzz `ops` (`CostReserve`, `ReleasePart`, `AddCharge`); sim test `llm` (beats least-loaded on hits and TTFT) |
//! | phased load: each part leaves once, never below zero, an emptied guard keeps its slot | loom `cost` (`phased_release`, `phased_pin`); tests `phased` (model property test, threads) |
//! | SIMD kernels equal the scalar reference | unit and property tests in `scan`, fuzz `scan` (reads past a slice fault) |
//! | no undefined behaviour, no data race in unsafe code | Miri over the unit tests and `stress` (`ci/miri.sh`) |
//! | real `arc-swap` and hardware reorderings | tests `stress` (bounded in time) |
//! | no allocation on picks and releases | tests `alloc` (counting allocator) |
//! | a panic in a key's `Clone`/`Hash`/`Eq` leaves the pool consistent | tests `panic_safety` (panic on the k-th call, every k) |
//! | a stale mask costs what a fresh one does, never admits a newcomer | unit tests in `remap` and `eligibility`; benches `single` (stale vs fresh) |
//! | writer memory bounded without `reclaim` | tests `writer_memory` |
//! | owned reservations release once, keep storage alive | tests `owned`, `hold`, `route`; Miri over `owned` |
//! | AVX-512 kernels equal scalar | `ci/avx512.sh` (instruction emulator, unmapped-page tails) |
//! | NEON kernels equal scalar | `ci/aarch64.sh` (unit and stress tests under `qemu-aarch64`) |
//! | the cost of each hot path, `&dyn` included, in instructions and in locked instructions | the callgrind gate (`ci/iai.sh`, budgets in `iai/budgets.toml`); against the pinned baseline, `ci/baseline-compare.sh` |
//!
//! # What fails without each protection
//! Each protection of the lock-free paths, and the tests or models that fail
//! when it is taken out: each was planted and seen failing (the plain-store
//! raise is built in with `--cfg workerpick_plain_raise`, so anyone can see
//! it). Some are caught by native tests only, some by loom only, as the last
//! column says.
//!
//! | protection (where) | fails without it | caught by |
//! |---|---|---|
//! | a raise is a compare-and-swap from the value read, not a store (`storage::raise`) | loom `summary_race`, `scores_race` (under `--cfg workerpick_plain_raise`) | loom only |
//! | the second look after a raise (`storage::raise::second_look`) | loom `scores_second_look`, `scores_race`, `summary_race`, `summary_unmark` | loom only |
//! | a report that lowers a counter lowers its block's bound (`load/reported.rs`) | tests `reported` (`a_withdrawn_report_lowers_a_summarised_block`); fuzz replay `summarised_pool_ops_find_the_least`, `weighted_summarised_pool_ops_find_the_least` | native only |
//! | marking healthy lowers the block's bound and the floor (`load/health.rs`) | tests `summarised` (`a_worker_marked_healthy_again_is_picked_next`); loom `summary_unmark` | both |
//! | a bound on scores counts only under its version's tag (`bounds::scores`) | tests `summarised_weighted` (`every_pick_is_at_the_least_ratio_while_loads_and_capacities_move`) | native only |
//! | `reserve_worker` refuses a draining worker (`booking::book`) | tests `fleet` (`draining_takes_no_picks_and_reports_when_done`); fuzz replay `ops_seeds` | native only |
//! | a pick checks its answer's mark while some worker is marked (the feature word's `MARKED`, each mode's file) | tests `fleet` (`power_of_two_never_picks_an_unhealthy_worker_while_one_is_healthy`, `device_aware_passes_over_an_unhealthy_group`) | native only |
//! | health is compared apart from load, then own load per capacity (`Context::weigh`, `least_loaded/health.rs`, power-of-two) | tests `fleet` (`a_fleet_all_unhealthy_picks_exactly_as_the_same_fleet_healthy`) | native only |
//! | a mark is kept whatever the room in the counter (`load/health.rs`) | tests `fleet` (`a_mark_on_a_full_counter_is_kept_and_passes_the_worker_over_once_room_appears`); fuzz replay `fleet_ops_agree_with_the_model` | native only |
//! | an all-draining pool is not called empty (`Context::empty_error`) | tests `fleet` (`an_all_draining_pool_says_so_not_that_it_is_empty`) | native only |
//! | the first summarised pick arms the bounds before it raises one (`Counters::bounds_for_pick`, the feature word's `ARMED`) | loom `summary_arming`, `summary_race`, `summary_unmark`, `scores_race`, `scores_second_look`; tests `summarised_weighted` (`a_release_behind_a_raised_bound_is_picked_next`). | both |
//! | a guard emptied by parts takes a pin before its last unit leaves (`storage::phased`) | loom `phased_pin` (the removed worker is never reclaimed); tests `phased` (`a_reservation_emptied_by_parts_still_holds_its_worker` crashes: the slot is reclaimed under the guard) | both |
//! | a latency sample lands by compare-and-swap, not a load then a store (`storage/latency/ewma.rs`, `record`) | loom `latency_update_pick` ("the penalty was lost"). Every native test passes. | loom only |
//! | a pair whose second booking fails gives the first back (`pair::pairs`, `book_prefill`) | loom `pair_prefill_removal` ("a failed pair left decode load"); unit test in `pair` (`a_failed_second_booking_leaves_nothing_booked`) | both |
//! | a removed worker's slot is reused only once no live snapshot names it (`membership`, `reclaim`) | loom `stale_pick`, `reuse_after_release`, `retarget`, the three `pair` models, `affinity_removal` (causality violations on the key cell); unit test in `selectors` (`a_pick_from_an_old_snapshot_charges_the_worker_it_names`); tests `fuzz_regressions` (`a_refused_replace_changes_nothing`) | both |
//! | a stale mask admits a slot only under the generation it named (`candidates::still_eligible`) | loom `stale_pick` ("the booking on 0 is gone": the pick charged the slot's next owner); unit tests in `eligibility` (`a_translated_mask_keeps_the_identities_it_named`) and `selectors` (`a_stale_mask_keeps_its_surviving_workers_only`) | both |
