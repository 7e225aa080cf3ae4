//! The latency signal: latency-aware power-of-two reserve + read + release
//! through a `Timed` reservation (both clock reads included: booking and
//! end), beside plain power-of-two on a plain pool, and tower's
//! `balance::p2c::Balance` over `load::PeakEwma` (ready + call + completion,
//! the same shape as `benches/peers`), in one run: groups
//! `latency-power-of-two/N`. Group `latency/clock` prices the clocks a timed
//! reservation could read: `std::time::Instant::now()` and `quanta`'s TSC.

mod common;

use common::cpu_time::CpuTime;
use common::settings;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwmaDiscover};
use tower::util::ServiceFn;
use tower::{Service, service_fn};
use workerpick::{LatencyConfig, LatencyPowerOfTwo, Pool, PowerOfTwo};

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
        for pool in [&timed_pool, &plain] {
            assert!(
                pool.loads().iter().all(|&(_, l)| l == 0),
                "a bench leaked a reservation"
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = settings::criterion(CpuTime);
    targets = latency
}
criterion_main!(benches);
