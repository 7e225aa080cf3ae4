//! The latency signal: latency-aware power-of-two reserve + read + release
//! through a `Timed` reservation (both clock reads included: booking and
//! end), the same pick untimed, plain power-of-two on a plain pool, and
//! tower's `balance::p2c::Balance` over `load::PeakEwma` (ready + call +
//! completion, the same shape as `benches/peers`), in one run: groups
//! `latency-power-of-two/N`. Groups `latency-least-loaded/N` put the
//! latency-aware least-loaded pick beside plain least-loaded. Group
//! `latency/clock` prices the clocks a timed reservation could read:
//! `std::time::Instant::now()` and `quanta`'s TSC, and a pair of locked
//! instructions (the booking and release every reservation pays). When the
//! run ends the binary prints the BENCHMARKS.md table from this run's medians.

mod common;

use common::cpu_time::CpuTime;
use common::results::{Results, facts, load_average};
use common::settings;
use criterion::{BenchmarkId, Criterion};
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwmaDiscover};
use tower::util::ServiceFn;
use tower::{Service, service_fn};
use workerpick::{LatencyConfig, LatencyLeastLoaded, LatencyPowerOfTwo, LeastLoaded, Pool, PowerOfTwo};

const WORKERS: [usize; 3] = [8, 64, 1024];

type Echo = ServiceFn<fn(u64) -> Ready<Result<u64, Infallible>>>;
type P2cEwma = Balance<PeakEwmaDiscover<ServiceList<Vec<Echo>>>, u64>;

fn echo(req: u64) -> Ready<Result<u64, Infallible>> {
    ready(Ok(req))
}

fn tower_p2c_ewma(n: usize) -> P2cEwma {
    let services: Vec<Echo> = (0..n).map(|_| service_fn(echo as fn(u64) -> _)).collect();
    Balance::new(PeakEwmaDiscover::new::<u64>(
        ServiceList::new::<u64>(services),
        Duration::from_millis(30),
        Duration::from_secs(10),
        CompleteOnResponse::default(),
    ))
}

/// One request through tower's balancer: ready, call, the response polled to
/// completion (which ends the pending count and records the RTT).
fn tower_call(balance: &mut P2cEwma, cx: &mut Context<'_>) -> u64 {
    match balance.poll_ready(cx) {
        Poll::Ready(Ok(())) => {}
        _ => panic!("tower p2c: an always-ready set was not ready"),
    }
    let fut = pin!(balance.call(1));
    match fut.poll(cx) {
        Poll::Ready(Ok(v)) => v,
        _ => panic!("tower p2c: an echo did not complete at once"),
    }
}

fn latency(c: &mut Criterion<CpuTime>) {
    let mut g = c.benchmark_group("latency/clock");
    g.bench_function(BenchmarkId::new("read", "std-instant"), |b| {
        b.iter(|| black_box(Instant::now()))
    });
    let clock = quanta::Clock::new();
    g.bench_function(BenchmarkId::new("read", "quanta-raw"), |b| {
        b.iter(|| black_box(clock.raw()))
    });
    let counter = AtomicU32::new(0);
    g.bench_function(BenchmarkId::new("locked-pair", "fetch-add-sub"), |b| {
        b.iter(|| {
            black_box(&counter).fetch_add(1, Ordering::Relaxed);
            black_box(&counter).fetch_sub(1, Ordering::Release)
        })
    });
    g.finish();

    let waker = Waker::noop();
    for n in WORKERS {
        let timed_pool = Pool::from_workers(0..n as u32)
            .unwrap()
            .with_latency(LatencyConfig::new())
            .unwrap();
        let plain = Pool::from_workers(0..n as u32).unwrap();
        let mut g = c.benchmark_group(format!("latency-power-of-two/{n}"));
        {
            let mut h = timed_pool.handle();
            let sel = LatencyPowerOfTwo::new();
            g.bench_function(BenchmarkId::new("reserve", "workerpick-timed"), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().timed().worker())
            });
            g.bench_function(BenchmarkId::new("reserve", "workerpick-untimed"), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().worker())
            });
        }
        {
            let mut h = plain.handle();
            let sel = PowerOfTwo::new();
            g.bench_function(BenchmarkId::new("reserve", "workerpick-plain-p2c"), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().worker())
            });
        }
        let mut balance = tower_p2c_ewma(n);
        let mut cx = Context::from_waker(waker);
        g.bench_function(BenchmarkId::new("reserve", "tower-p2c-peak-ewma"), |b| {
            b.iter(|| tower_call(&mut balance, &mut cx))
        });
        g.finish();
        let mut g = c.benchmark_group(format!("latency-least-loaded/{n}"));
        {
            let mut h = timed_pool.handle();
            let sel = LatencyLeastLoaded::new();
            g.bench_function(BenchmarkId::new("reserve", "workerpick-timed"), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().timed().worker())
            });
        }
        {
            let mut h = plain.handle();
            let sel = LeastLoaded::new();
            g.bench_function(
                BenchmarkId::new("reserve", "workerpick-plain-least-loaded"),
                |b| b.iter(|| *h.reserve(&sel).unwrap().worker()),
            );
        }
        g.finish();
        for pool in [&timed_pool, &plain] {
            assert!(
                pool.loads().iter().all(|&(_, l)| l == 0),
                "a bench leaked a reservation"
            );
        }
    }
}

/// The BENCHMARKS.md table of this run ("—" where a benchmark did not run).
fn table(r: &Results) -> String {
    let mut out = String::from(
        "| workers | latency-power-of-two, `Timed` (2 clock reads) | the same, untimed | power-of-two, plain pool | timed / plain | tower `balance::p2c` over `PeakEwma` | tower / timed | latency-least-loaded, `Timed` | least-loaded, plain pool |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for n in WORKERS {
        let p2c = |p: &str| format!("latency-power-of-two/{n}/reserve/{p}");
        let ll = |p: &str| format!("latency-least-loaded/{n}/reserve/{p}");
        let cells = [
            r.cell(&p2c("workerpick-timed")),
            r.cell(&p2c("workerpick-untimed")),
            r.cell(&p2c("workerpick-plain-p2c")),
            r.ratio(&p2c("workerpick-timed"), &p2c("workerpick-plain-p2c")),
            r.cell(&p2c("tower-p2c-peak-ewma")),
            r.ratio(&p2c("tower-p2c-peak-ewma"), &p2c("workerpick-timed")),
            r.cell(&ll("workerpick-timed")),
            r.cell(&ll("workerpick-plain-least-loaded")),
        ];
        out += &format!("| {n} | {} |\n", cells.join(" | "));
    }
    out += &format!(
        "\nClocks and locks (group `latency/clock`): `Instant::now()` {}, `quanta::Clock::raw()` {}, \
         a `fetch_add` + `fetch_sub` pair {}.\n",
        r.cell("latency/clock/read/std-instant"),
        r.cell("latency/clock/read/quanta-raw"),
        r.cell("latency/clock/locked-pair/fetch-add-sub"),
    );
    out
}

/// The before/after table over the benchmarks both builds have.
fn compared(r: &Results) -> String {
    let mut out = String::from(
        "| workers | latency-power-of-two, `Timed` | power-of-two, plain pool | tower p2c over `PeakEwma` |\n\
         |---:|---:|---:|---:|\n",
    );
    for n in WORKERS {
        let p2c = |p: &str| format!("latency-power-of-two/{n}/reserve/{p}");
        let cells = [
            r.before_after(&p2c("workerpick-timed")),
            r.before_after(&p2c("workerpick-plain-p2c")),
            r.before_after(&p2c("tower-p2c-peak-ewma")),
        ];
        out += &format!("| {n} | {} |\n", cells.join(" | "));
    }
    out
}

fn main() {
    let (start, load) = (std::time::SystemTime::now(), load_average());
    let mut c = settings::criterion(CpuTime).configure_from_args();
    latency(&mut c);
    c.final_summary();
    if !common::test_mode() {
        let r = Results::since(start);
        println!("\n{}\n\n{}", facts("latency", &load), table(&r));
        if r.has_before() {
            println!(
                "Before (criterion baseline `before`) → after:\n\n{}",
                compared(&r)
            );
        }
    }
}
