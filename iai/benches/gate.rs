//! Instruction-count gates on workerpick's hot paths, under callgrind.
//!
//! Every benchmark runs a fixed number of operations through a cached
//! [`Handle`] with a seeded [`Rng`], and reads the worker each pick names (as a
//! router must), so the path, and with it the `Ir` count, is the same on every
//! run: it moves only with the code, the compiler and (for the dispatched
//! scan) the CPU's SIMD level. Membership swaps jitter by
//! ~0.1%: std's `HashMap` seeds its hasher at random. Each count is held under its
//! budget in `iai/budgets.toml` by a hard limit (no saved baseline needed),
//! and so is its count of locked instructions (callgrind's global bus
//! events, `Ge`); going over either fails the run with exit code 3. `ci/iai.sh` runs the gate,
//! `ci/iai-update.sh` re-measures and rewrites the budgets.
//!
//! Benchmarks named `…_scalar` force the portable scan; the others take the
//! backend the pool detects at run time (AVX2 under valgrind, which hides
//! AVX-512).

mod common;

use common::budget;
use gungraun::{library_benchmark, library_benchmark_group, main};
use std::hint::black_box;
use std::time::Duration;
use workerpick::scan::Backend;
use workerpick::{
    Affinity, CacheHits, Cost, DEFAULT_MAX_WORKERS, DeviceAware, Eligibility, Handle, LatencyConfig,
    LatencyLeastLoaded, LatencyPowerOfTwo, LeastLoaded, Pool, PowerOfTwo, Random, Request, Rng, RoundRobin,
    Selector, Sessions, Stickiness, Summary, Temperature, WorkerInfo, WorkerToken,
};

/// Operations per benchmark: enough to average over the random paths, few
/// enough that a run takes well under a second. Counts are per `OPS` ops.
const OPS: u32 = 100;

/// Membership swaps per benchmark (a swap publishes two snapshots).
const SWAPS: u32 = 10;

enum Mode {
    Random,
    RoundRobin,
    PowerOfTwo,
    LeastLoaded,
    /// The cost mode at `T = 0`.
    Cost,
    /// The cost mode at `T = 0.5`.
    CostSoft,
    /// Device-aware over one device kind, no cache hits: least-loaded's pick.
    DeviceAware,
    /// Latency-aware power-of-two, on a pool with a latency table whose
    /// workers each hold a sample (on an explicit timeline: no clock).
    LatencyPowerOfTwo,
    /// Latency-aware least-loaded, on the same kind of pool.
    LatencyLeastLoaded,
    /// Latency-aware power-of-two on a plain pool (no latency table).
    LatencyPowerOfTwoPlain,
}

#[derive(Clone, Copy)]
enum Op {
    Select,
    /// Reserve, then release by dropping the guard.
    Reserve,
    Preview,
    /// `Select` through `&dyn Selector`.
    SelectDyn,
    /// `Reserve` with an eligibility mask admitting every other worker.
    ReserveMasked,
    /// `Reserve` with every worker but 4 holding one reservation: least-loaded's
    /// random tries mostly miss and the scan counts and searches the ties.
    ReserveFewTies,
    /// `Reserve` with the same load reported for every worker (folded into the
    /// counters: the pick is the same as without).
    ReserveReported,
    /// `Select` over workers of capacities 4:2:1:1 repeated.
    SelectWeighted,
    /// `Reserve` over workers of capacities 4:2:1:1 repeated.
    ReserveWeighted,
    /// `Reserve` with cache credit on 1 % of the workers (at least one).
    ReserveCredited,
    /// `ReserveCredited` with the credit rebuilt before each pick from the
    /// workers' tokens, as a router does per request.
    BuildReserveCredited,
    /// `Reserve`, the reservation timed (`Reservation::timed`).
    ReserveTimed,
}

enum Scan {
    /// The backend the pool detects at run time. gungraun clears the
    /// environment, so a `WORKERPICK_SCAN` override cannot leak in.
    Detected,
    Scalar,
}

enum Selectors {
    Random(Random),
    RoundRobin(RoundRobin),
    PowerOfTwo(PowerOfTwo),
    LeastLoaded(LeastLoaded),
    Cost(Cost),
    DeviceAware(DeviceAware),
    LatencyPowerOfTwo(LatencyPowerOfTwo),
    LatencyLeastLoaded(LatencyLeastLoaded),
}

/// One benchmark's state, built outside the measured region.
struct Case {
    handle: Handle<'static, u32>,
    selector: Selectors,
    op: Op,
    mask: &'static Eligibility,
    hits: &'static mut CacheHits,
    tokens: Vec<(WorkerToken, u32)>,
}

fn case(mode: Mode, op: Op, workers: u32, scan: Scan) -> Case {
    // Large fleets: a pool sized for them, past the default limit (which
    // keeps the per-block bounds of the summarised least-loaded pick too).
    let pool = if let Op::SelectWeighted | Op::ReserveWeighted = op {
        let pool = Pool::new();
        for w in 0..workers {
            let capacity = [4, 2, 1, 1][w as usize % 4];
            pool.insert_with(w, WorkerInfo::new().capacity(capacity))
                .expect("a valid worker");
        }
        pool
    } else if workers >= 10_000 {
        let limit = (workers as usize)
            .next_power_of_two()
            .max(2 * DEFAULT_MAX_WORKERS);
        let pool = Pool::with_max_workers(limit).expect("a valid limit");
        pool.replace(0..workers).expect("a valid worker set");
        pool
    } else {
        Pool::from_workers(0..workers).expect("a valid worker set")
    };
    let pool = match scan {
        Scan::Detected => pool,
        Scan::Scalar => pool.with_scan_backend(Backend::Scalar),
    };
    let pool = match mode {
        Mode::LatencyPowerOfTwo | Mode::LatencyLeastLoaded => {
            let pool = pool.with_latency(LatencyConfig::new()).expect("a valid config");
            // A sample per worker, at stamps 0..50 ms, read at 49 ms: picks
            // decay every estimate they read.
            for w in 0..workers {
                let at = Duration::from_millis(u64::from(w % 50));
                let rtt = Duration::from_micros(500 + u64::from(w * 7 % 3000));
                pool.record_latency_at(&w, at, rtt, false);
            }
            pool
        }
        _ => pool,
    };
    // Leaked: the handle borrows it for the life of the benchmark process.
    let pool: &'static Pool<u32> = Box::leak(Box::new(pool));
    let mask = Box::leak(Box::new(pool.eligibility(|w| w % 2 == 0)));
    let selector = match mode {
        Mode::Random => Selectors::Random(Random::new()),
        Mode::RoundRobin => Selectors::RoundRobin(RoundRobin::new()),
        Mode::PowerOfTwo => Selectors::PowerOfTwo(PowerOfTwo::new()),
        Mode::LeastLoaded => Selectors::LeastLoaded(LeastLoaded::new()),
        Mode::Cost => Selectors::Cost(Cost::new()),
        Mode::CostSoft => {
            Selectors::Cost(Cost::new().with_temperature(Temperature::new(0.5).expect("valid")))
        }
        Mode::DeviceAware => Selectors::DeviceAware(DeviceAware::new()),
        Mode::LatencyPowerOfTwo | Mode::LatencyPowerOfTwoPlain => {
            Selectors::LatencyPowerOfTwo(LatencyPowerOfTwo::new())
        }
        Mode::LatencyLeastLoaded => Selectors::LatencyLeastLoaded(LatencyLeastLoaded::new()),
    };
    let hits = Box::leak(Box::new(CacheHits::new()));
    let mut tokens = Vec::new();
    if let Op::ReserveCredited | Op::BuildReserveCredited = op {
        let credited: Vec<(u32, u32)> = (0..workers).step_by(100).map(|w| (w, 1 + w % 7)).collect();
        hits.rebuild_sparse(pool, 16, credited.iter().map(|(w, o)| (w, *o)));
        tokens = credited
            .iter()
            .map(|(w, o)| (WorkerToken::of(pool, w).expect("a member"), *o))
            .collect();
    }
    if let Op::ReserveReported = op {
        let ids: Vec<u32> = (0..workers).collect();
        pool.report_loads(ids.iter().map(|w| (w, 2)));
    }
    if let Op::ReserveFewTies = op {
        for w in 4..workers {
            // Held for the life of the benchmark process, like the pool.
            core::mem::forget(pool.reserve_worker(&w, 1).expect("a member"));
        }
    }
    let mut case = Case {
        handle: pool.handle_with_rng(Rng::with_seed(0x1a1)),
        selector,
        op,
        mask,
        hits,
        tokens,
    };
    // Warm up: one-time costs are not what a router pays per request.
    run(&mut case, 1);
    case
}

fn run(case: &mut Case, ops: u32) {
    let Case {
        handle,
        selector,
        op,
        mask,
        hits,
        tokens,
    } = case;
    let credit = (&mut **hits, tokens.as_slice());
    match selector {
        Selectors::Random(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::RoundRobin(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::PowerOfTwo(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::LeastLoaded(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::Cost(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::DeviceAware(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::LatencyPowerOfTwo(s) => run_with(handle, s, *op, mask, credit, ops),
        Selectors::LatencyLeastLoaded(s) => run_with(handle, s, *op, mask, credit, ops),
    }
}

#[inline(always)]
fn run_with<S: Selector>(
    handle: &mut Handle<'static, u32>,
    selector: &S,
    op: Op,
    mask: &Eligibility,
    (hits, tokens): (&mut CacheHits, &[(WorkerToken, u32)]),
    ops: u32,
) {
    match op {
        Op::Select | Op::SelectWeighted => {
            for _ in 0..ops {
                black_box(handle.select(black_box(selector)).ok());
            }
        }
        Op::Reserve | Op::ReserveFewTies | Op::ReserveReported | Op::ReserveWeighted => {
            for _ in 0..ops {
                black_box(handle.reserve(black_box(selector)).ok().map(|r| *r.worker()));
            }
        }
        Op::Preview => {
            for _ in 0..ops {
                black_box(handle.preview(black_box(selector)).ok());
            }
        }
        Op::SelectDyn => {
            let selector: &dyn Selector = selector;
            for _ in 0..ops {
                black_box(handle.select(black_box(selector)).ok());
            }
        }
        Op::ReserveTimed => {
            for _ in 0..ops {
                black_box(
                    handle
                        .reserve(black_box(selector))
                        .ok()
                        .map(|r| *r.timed().worker()),
                );
            }
        }
        Op::BuildReserveCredited => {
            for _ in 0..ops {
                hits.rebuild_tokens(handle.pool(), 16, black_box(tokens).iter().copied());
                let request = Request::new().cache_hits(hits);
                black_box(
                    handle
                        .reserve_with(black_box(selector), &request)
                        .ok()
                        .map(|r| *r.worker()),
                );
            }
        }
        Op::ReserveCredited => {
            let request = Request::new().cache_hits(hits);
            for _ in 0..ops {
                black_box(
                    handle
                        .reserve_with(black_box(selector), &request)
                        .ok()
                        .map(|r| *r.worker()),
                );
            }
        }
        Op::ReserveMasked => {
            let request = Request::new().eligible(mask);
            for _ in 0..ops {
                black_box(
                    handle
                        .reserve_with(black_box(selector), &request)
                        .ok()
                        .map(|r| *r.worker()),
                );
            }
        }
    }
}

#[library_benchmark]
#[bench::random_select_8(args = (Mode::Random, Op::Select, 8, Scan::Detected), setup = case, config = budget("random_select_8"))]
#[bench::random_select_1024(args = (Mode::Random, Op::Select, 1024, Scan::Detected), setup = case, config = budget("random_select_1024"))]
#[bench::random_reserve_8(args = (Mode::Random, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("random_reserve_8"))]
#[bench::random_reserve_1024(args = (Mode::Random, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("random_reserve_1024"))]
#[bench::round_robin_select_8(args = (Mode::RoundRobin, Op::Select, 8, Scan::Detected), setup = case, config = budget("round_robin_select_8"))]
#[bench::round_robin_select_1024(args = (Mode::RoundRobin, Op::Select, 1024, Scan::Detected), setup = case, config = budget("round_robin_select_1024"))]
#[bench::round_robin_reserve_8(args = (Mode::RoundRobin, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("round_robin_reserve_8"))]
#[bench::round_robin_reserve_1024(args = (Mode::RoundRobin, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("round_robin_reserve_1024"))]
#[bench::power_of_two_select_8(args = (Mode::PowerOfTwo, Op::Select, 8, Scan::Detected), setup = case, config = budget("power_of_two_select_8"))]
#[bench::power_of_two_select_1024(args = (Mode::PowerOfTwo, Op::Select, 1024, Scan::Detected), setup = case, config = budget("power_of_two_select_1024"))]
#[bench::power_of_two_reserve_8(args = (Mode::PowerOfTwo, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("power_of_two_reserve_8"))]
#[bench::power_of_two_reserve_1024(args = (Mode::PowerOfTwo, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("power_of_two_reserve_1024"))]
#[bench::least_loaded_select_8(args = (Mode::LeastLoaded, Op::Select, 8, Scan::Detected), setup = case, config = budget("least_loaded_select_8"))]
#[bench::least_loaded_select_1024(args = (Mode::LeastLoaded, Op::Select, 1024, Scan::Detected), setup = case, config = budget("least_loaded_select_1024"))]
#[bench::least_loaded_reserve_8(args = (Mode::LeastLoaded, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("least_loaded_reserve_8"))]
#[bench::least_loaded_reserve_1024(args = (Mode::LeastLoaded, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("least_loaded_reserve_1024"))]
#[bench::least_loaded_reserve_4_ties_1024(args = (Mode::LeastLoaded, Op::ReserveFewTies, 1024, Scan::Detected), setup = case, config = budget("least_loaded_reserve_4_ties_1024"))]
#[bench::least_loaded_reserve_10000(args = (Mode::LeastLoaded, Op::Reserve, 10_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_10000"))]
#[bench::least_loaded_reserve_4_ties_10000(args = (Mode::LeastLoaded, Op::ReserveFewTies, 10_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_4_ties_10000"))]
#[bench::least_loaded_reserve_100000(args = (Mode::LeastLoaded, Op::Reserve, 100_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_100000"))]
#[bench::least_loaded_reserve_4_ties_100000(args = (Mode::LeastLoaded, Op::ReserveFewTies, 100_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_4_ties_100000"))]
#[bench::least_loaded_reserve_1000000(args = (Mode::LeastLoaded, Op::Reserve, 1_000_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_1000000"))]
#[bench::least_loaded_reserve_4_ties_1000000(args = (Mode::LeastLoaded, Op::ReserveFewTies, 1_000_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_4_ties_1000000"))]
#[bench::least_loaded_reserve_masked_1024(args = (Mode::LeastLoaded, Op::ReserveMasked, 1024, Scan::Detected), setup = case, config = budget("least_loaded_reserve_masked_1024"))]
#[bench::least_loaded_reserve_masked_10000(args = (Mode::LeastLoaded, Op::ReserveMasked, 10_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_masked_10000"))]
#[bench::least_loaded_reserve_masked_100000(args = (Mode::LeastLoaded, Op::ReserveMasked, 100_000, Scan::Detected), setup = case, config = budget("least_loaded_reserve_masked_100000"))]
#[bench::device_aware_reserve_1024(args = (Mode::DeviceAware, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("device_aware_reserve_1024"))]
#[bench::device_aware_reserve_10000(args = (Mode::DeviceAware, Op::Reserve, 10_000, Scan::Detected), setup = case, config = budget("device_aware_reserve_10000"))]
#[bench::device_aware_reserve_100000(args = (Mode::DeviceAware, Op::Reserve, 100_000, Scan::Detected), setup = case, config = budget("device_aware_reserve_100000"))]
#[bench::least_loaded_reserve_reported_8(args = (Mode::LeastLoaded, Op::ReserveReported, 8, Scan::Detected), setup = case, config = budget("least_loaded_reserve_reported_8"))]
#[bench::least_loaded_reserve_reported_1024(args = (Mode::LeastLoaded, Op::ReserveReported, 1024, Scan::Detected), setup = case, config = budget("least_loaded_reserve_reported_1024"))]
#[bench::power_of_two_reserve_reported_1024(args = (Mode::PowerOfTwo, Op::ReserveReported, 1024, Scan::Detected), setup = case, config = budget("power_of_two_reserve_reported_1024"))]
#[bench::least_loaded_select_8_scalar(args = (Mode::LeastLoaded, Op::Select, 8, Scan::Scalar), setup = case, config = budget("least_loaded_select_8_scalar"))]
#[bench::least_loaded_select_1024_scalar(args = (Mode::LeastLoaded, Op::Select, 1024, Scan::Scalar), setup = case, config = budget("least_loaded_select_1024_scalar"))]
#[bench::least_loaded_reserve_8_scalar(args = (Mode::LeastLoaded, Op::Reserve, 8, Scan::Scalar), setup = case, config = budget("least_loaded_reserve_8_scalar"))]
#[bench::least_loaded_reserve_1024_scalar(args = (Mode::LeastLoaded, Op::Reserve, 1024, Scan::Scalar), setup = case, config = budget("least_loaded_reserve_1024_scalar"))]
#[bench::least_loaded_reserve_masked_1024_scalar(args = (Mode::LeastLoaded, Op::ReserveMasked, 1024, Scan::Scalar), setup = case, config = budget("least_loaded_reserve_masked_1024_scalar"))]
#[bench::random_preview_1024(args = (Mode::Random, Op::Preview, 1024, Scan::Detected), setup = case, config = budget("random_preview_1024"))]
#[bench::round_robin_preview_1024(args = (Mode::RoundRobin, Op::Preview, 1024, Scan::Detected), setup = case, config = budget("round_robin_preview_1024"))]
#[bench::power_of_two_preview_1024(args = (Mode::PowerOfTwo, Op::Preview, 1024, Scan::Detected), setup = case, config = budget("power_of_two_preview_1024"))]
#[bench::least_loaded_preview_1024(args = (Mode::LeastLoaded, Op::Preview, 1024, Scan::Detected), setup = case, config = budget("least_loaded_preview_1024"))]
#[bench::random_select_dyn_8(args = (Mode::Random, Op::SelectDyn, 8, Scan::Detected), setup = case, config = budget("random_select_dyn_8"))]
#[bench::round_robin_select_dyn_8(args = (Mode::RoundRobin, Op::SelectDyn, 8, Scan::Detected), setup = case, config = budget("round_robin_select_dyn_8"))]
#[bench::power_of_two_select_dyn_8(args = (Mode::PowerOfTwo, Op::SelectDyn, 8, Scan::Detected), setup = case, config = budget("power_of_two_select_dyn_8"))]
#[bench::least_loaded_select_dyn_8(args = (Mode::LeastLoaded, Op::SelectDyn, 8, Scan::Detected), setup = case, config = budget("least_loaded_select_dyn_8"))]
#[bench::random_select_weighted_1024(args = (Mode::Random, Op::SelectWeighted, 1024, Scan::Detected), setup = case, config = budget("random_select_weighted_1024"))]
#[bench::random_reserve_weighted_1024(args = (Mode::Random, Op::ReserveWeighted, 1024, Scan::Detected), setup = case, config = budget("random_reserve_weighted_1024"))]
#[bench::round_robin_select_weighted_1024(args = (Mode::RoundRobin, Op::SelectWeighted, 1024, Scan::Detected), setup = case, config = budget("round_robin_select_weighted_1024"))]
#[bench::round_robin_reserve_weighted_1024(args = (Mode::RoundRobin, Op::ReserveWeighted, 1024, Scan::Detected), setup = case, config = budget("round_robin_reserve_weighted_1024"))]
#[bench::power_of_two_reserve_weighted_1024(args = (Mode::PowerOfTwo, Op::ReserveWeighted, 1024, Scan::Detected), setup = case, config = budget("power_of_two_reserve_weighted_1024"))]
#[bench::least_loaded_reserve_weighted_8(args = (Mode::LeastLoaded, Op::ReserveWeighted, 8, Scan::Detected), setup = case, config = budget("least_loaded_reserve_weighted_8"))]
#[bench::least_loaded_reserve_weighted_1024(args = (Mode::LeastLoaded, Op::ReserveWeighted, 1024, Scan::Detected), setup = case, config = budget("least_loaded_reserve_weighted_1024"))]
#[bench::cost_reserve_credited_8(args = (Mode::Cost, Op::ReserveCredited, 8, Scan::Detected), setup = case, config = budget("cost_reserve_credited_8"))]
#[bench::cost_reserve_credited_1024(args = (Mode::Cost, Op::ReserveCredited, 1024, Scan::Detected), setup = case, config = budget("cost_reserve_credited_1024"))]
#[bench::cost_reserve_credited_10000(args = (Mode::Cost, Op::ReserveCredited, 10_000, Scan::Detected), setup = case, config = budget("cost_reserve_credited_10000"))]
#[bench::cost_soft_reserve_credited_1024(args = (Mode::CostSoft, Op::ReserveCredited, 1024, Scan::Detected), setup = case, config = budget("cost_soft_reserve_credited_1024"))]
#[bench::cost_reserve_credited_100000(args = (Mode::Cost, Op::ReserveCredited, 100_000, Scan::Detected), setup = case, config = budget("cost_reserve_credited_100000"))]
#[bench::cost_build_reserve_credited_1024(args = (Mode::Cost, Op::BuildReserveCredited, 1024, Scan::Detected), setup = case, config = budget("cost_build_reserve_credited_1024"))]
#[bench::cost_build_reserve_credited_100000(args = (Mode::Cost, Op::BuildReserveCredited, 100_000, Scan::Detected), setup = case, config = budget("cost_build_reserve_credited_100000"))]
#[bench::cost_soft_build_reserve_credited_1024(args = (Mode::CostSoft, Op::BuildReserveCredited, 1024, Scan::Detected), setup = case, config = budget("cost_soft_build_reserve_credited_1024"))]
#[bench::cost_soft_reserve_credited_100000(args = (Mode::CostSoft, Op::ReserveCredited, 100_000, Scan::Detected), setup = case, config = budget("cost_soft_reserve_credited_100000"))]
#[bench::latency_power_of_two_reserve_8(args = (Mode::LatencyPowerOfTwo, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("latency_power_of_two_reserve_8"))]
#[bench::latency_power_of_two_reserve_1024(args = (Mode::LatencyPowerOfTwo, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("latency_power_of_two_reserve_1024"))]
#[bench::latency_least_loaded_reserve_8(args = (Mode::LatencyLeastLoaded, Op::Reserve, 8, Scan::Detected), setup = case, config = budget("latency_least_loaded_reserve_8"))]
#[bench::latency_least_loaded_reserve_1024(args = (Mode::LatencyLeastLoaded, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("latency_least_loaded_reserve_1024"))]
#[bench::latency_power_of_two_reserve_plain_1024(args = (Mode::LatencyPowerOfTwoPlain, Op::Reserve, 1024, Scan::Detected), setup = case, config = budget("latency_power_of_two_reserve_plain_1024"))]
#[bench::power_of_two_reserve_timed_plain_1024(args = (Mode::PowerOfTwo, Op::ReserveTimed, 1024, Scan::Detected), setup = case, config = budget("power_of_two_reserve_timed_plain_1024"))]
fn pick(mut case: Case) -> Case {
    run(&mut case, OPS);
    // Returned, not dropped: the teardown stays outside the measured region.
    case
}

/// Request keys the affinity benchmarks cycle through (session ids, for the
/// session benchmark).
const KEYED: u64 = 256;

/// An affinity benchmark's state: a handle on a pool that builds the ring,
/// and for the session benchmark a table where every key is bound.
struct Keyed {
    handle: Handle<'static, u32>,
    sessions: Option<&'static Sessions>,
    next: u64,
}

fn keyed((workers, bound): (u32, bool)) -> Keyed {
    let pool = if workers >= 10_000 {
        let pool = Pool::with_max_workers((workers as usize).next_power_of_two()).expect("a valid limit");
        pool.replace(0..workers).expect("a valid worker set");
        pool
    } else {
        Pool::from_workers(0..workers).expect("a valid worker set")
    };
    pool.enable_affinity();
    let pool: &'static Pool<u32> = Box::leak(Box::new(pool));
    let sessions = bound.then(|| {
        &*Box::leak(Box::new(Sessions::new(
            Duration::from_secs(3600),
            1024,
            Stickiness::Soft,
        )))
    });
    let mut k = Keyed {
        handle: pool.handle_with_rng(Rng::with_seed(0x1a1)),
        sessions,
        next: 0,
    };
    // Binds every session, and warms up.
    run_keyed(&mut k, KEYED as u32);
    k
}

/// `ops` bounded-load affinity (ε = 0.25) reservations, each released, over
/// the keys in turn; through the session table when there is one.
fn run_keyed(k: &mut Keyed, ops: u32) {
    let mode = Affinity::new();
    for _ in 0..ops {
        k.next = (k.next + 1) % KEYED;
        let request = Request::new().key(k.next.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let booked = match k.sessions {
            None => k.handle.reserve_with(black_box(&mode), &request),
            Some(s) => s.reserve(&mut k.handle, black_box(&mode), &request),
        };
        black_box(booked.ok().map(|r| *r.worker()));
    }
}

#[library_benchmark]
#[bench::affinity_reserve_1024(args = ((1024, false)), setup = keyed, config = budget("affinity_reserve_1024"))]
#[bench::affinity_reserve_100000(args = ((100_000, false)), setup = keyed, config = budget("affinity_reserve_100000"))]
#[bench::session_reserve_bound_1024(args = ((1024, true)), setup = keyed, config = budget("session_reserve_bound_1024"))]
fn affinity(mut k: Keyed) -> Keyed {
    run_keyed(&mut k, OPS);
    k
}

/// A pool of workers `0..workers` for the membership benchmarks.
fn members(workers: u32) -> &'static Pool<u32> {
    Box::leak(Box::new(
        Pool::from_workers(0..workers).expect("a valid worker set"),
    ))
}

#[library_benchmark]
#[bench::swap_remove_insert_64(args = (64), setup = members, config = budget("swap_remove_insert_64"))]
fn swap(pool: &'static Pool<u32>) -> &'static Pool<u32> {
    for w in 0..SWAPS {
        pool.remove(black_box(&w)).expect("a member");
        pool.insert(black_box(w)).expect("not a member");
    }
    pool
}

#[library_benchmark]
#[bench::swap_replace_64(args = (64), setup = members, config = budget("swap_replace_64"))]
fn replace(pool: &'static Pool<u32>) -> &'static Pool<u32> {
    // Alternates the set between 0..64 and 1..65: one worker leaves, one joins.
    for i in 0..SWAPS {
        let shift = (i + 1) % 2;
        pool.replace(black_box(shift..64 + shift))
            .expect("a valid worker set");
    }
    pool
}

/// An empty pool with room for `workers`, and how many.
fn empty(workers: u32) -> (&'static Pool<u32>, u32) {
    let limit = (workers as usize).next_power_of_two();
    let pool = Pool::with_max_workers(limit).expect("a valid limit");
    (Box::leak(Box::new(pool)), workers)
}

#[library_benchmark]
#[bench::build_100000(args = (100_000), setup = empty, config = budget("build_100000"))]
fn build((pool, workers): (&'static Pool<u32>, u32)) -> &'static Pool<u32> {
    // One change adding every worker: linear in them (a new slot's key
    // storage is found once, not by a walk over every chunk before it).
    pool.replace(black_box(0..workers)).expect("a valid worker set");
    pool
}

/// A replica's summary naming every one of `workers`, and a pool to apply it to
/// that holds the replica's previous summary: the same loads (`changed` false:
/// nothing moves) or every one different.
fn summary((workers, changed): (u32, bool)) -> (&'static Pool<u32>, Summary<u32>) {
    let peer = members(workers);
    for w in 0..workers {
        core::mem::forget(peer.reserve_worker(&w, 1 + w % 3).expect("a member"));
    }
    let me = members(workers);
    // Applied outside the measured region: the measured one is an update.
    me.apply_summary(&peer.summary());
    if changed {
        for w in 0..workers {
            core::mem::forget(peer.reserve_worker(&w, 1).expect("a member"));
        }
    }
    (me, peer.summary())
}

#[library_benchmark]
#[bench::apply_summary_1024(args = ((1024, false)), setup = summary, config = budget("apply_summary_1024"))]
#[bench::apply_summary_changed_1024(args = ((1024, true)), setup = summary, config = budget("apply_summary_changed_1024"))]
fn apply((pool, summary): (&'static Pool<u32>, Summary<u32>)) -> bool {
    pool.apply_summary(black_box(&summary))
}

library_benchmark_group!(name = picks, benchmarks = pick);
library_benchmark_group!(name = keyed_picks, benchmarks = affinity);
library_benchmark_group!(name = reports, benchmarks = apply);
library_benchmark_group!(name = membership, benchmarks = [swap, replace, build]);
main!(library_benchmark_groups = picks, keyed_picks, membership, reports);
