//! The libraries a Rust router would use instead of workerpick, measured the
//! way `benches/single.rs` and `benches/threads.rs` measure ours, into the same
//! criterion groups so one report shows them side by side:
//!
//! - `pingora` — pingora-load-balancing's `LoadBalancer<RoundRobin>` and
//!   `<Random>` `select` (groups `round-robin/N`, `random/N`, function
//!   `select`). It returns an owned `Backend` (a clone: an allocation); it
//!   hashes the key, checks health, and books no load.
//! - `pingora-ketama` — its `LoadBalancer<Consistent>` (Ketama: 160 points a
//!   backend on a sorted continuum, a binary search per key) `select` over
//!   the 4096 keys `benches/single.rs` cycles through (group `affinity/N`,
//!   function `select`): plain consistent hashing, no load bound, nothing
//!   booked, where ours books within the bound (`reserve`).
//! - `tower-p2c` — tower's `balance::p2c::Balance` over
//!   `load::PendingRequests`: ready + call + completion, single thread, with a
//!   no-op waker (group `power-of-two/N`, function `reserve`). It needs
//!   `&mut self`, so a router shares it across threads through
//!   `tower::buffer::Buffer` (`tower-p2c-buffer`: a channel to a task on a tokio
//!   runtime and a oneshot back). It gives back-pressure (`poll_ready`) and
//!   does not say which worker served the request.
//!
//! Every operation's result (the `Backend`, the response) goes to
//! `black_box`. Allocations per operation are counted by a counting allocator
//! and written to `target/bench-report/peer-allocations.txt`.
//!
//! Thread groups (`threads{T}-held0`, from `WORKERPICK_BENCH_THREADS`) run the
//! thread-safe ones: pingora's `select` and the buffered tower balancer.

#[path = "../common/counting.rs"]
mod counting;
#[path = "../common/cpu_time.rs"]
mod cpu_time;
#[path = "../common/settings.rs"]
mod settings;
#[path = "../common/thread_counts.rs"]
mod thread_counts;

use counting::Counting;
use cpu_time::CpuTime;
use criterion::measurement::WallTime;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use pingora_load_balancing::LoadBalancer;
use pingora_load_balancing::selection::{BackendIter, BackendSelection, Consistent, Random, RoundRobin};
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use thread_counts::thread_counts;
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PendingRequestsDiscover};
use tower::util::ServiceFn;
use tower::{BoxError, Service, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The worker counts of `benches/single.rs`.
const WORKERS: [usize; 4] = [8, 64, 1024, 10_000];
/// The worker counts of the `affinity/N` groups of `benches/single.rs`.
const AFFINITY_WORKERS: [usize; 3] = [8, 1024, 100_000];
/// The worker counts of `benches/threads.rs`.
const THREAD_WORKERS: [usize; 2] = [64, 1024];
/// Operations per thread in one criterion iteration (as `benches/threads.rs`).
const BATCH: u64 = 16;

type Echo = ServiceFn<fn(u64) -> Ready<Result<u64, Infallible>>>;
type P2c = Balance<PendingRequestsDiscover<ServiceList<Vec<Echo>>>, u64>;
type Buffered = Buffer<u64, <P2c as Service<u64>>::Future>;

fn echo(req: u64) -> Ready<Result<u64, Infallible>> {
    ready(Ok(req))
}

/// `n` distinct backend addresses (pingora resolves them; none is contacted).
fn addrs(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("10.{}.{}.{}:80", (i >> 16) & 255, (i >> 8) & 255, i & 255))
        .collect()
}

fn p2c(n: usize) -> P2c {
    let services: Vec<Echo> = (0..n).map(|_| service_fn(echo as fn(u64) -> _)).collect();
    Balance::new(PendingRequestsDiscover::new::<u64>(
        ServiceList::new::<u64>(services),
        CompleteOnResponse::default(),
    ))
}

/// pingora's `select` over `n` backends with selection `S`, in group `mode/n`.
fn pingora<S>(c: &mut Criterion<CpuTime>, mode: &str, n: usize, allocs: &mut Vec<(String, f64)>)
where
    S: BackendSelection + 'static,
    S::Iter: BackendIter,
{
    let lb = LoadBalancer::<S>::try_from_iter(addrs(n)).expect("valid addresses");
    let select = || lb.select(b"", 256).expect("a healthy backend");
    allocs.push((
        format!("{mode}/{n}/select/pingora"),
        allocs_per_op(|| drop(black_box(select()))),
    ));
    let mut g = c.benchmark_group(format!("{mode}/{n}"));
    g.bench_function(BenchmarkId::new("select", "pingora"), |b| b.iter(select));
    g.finish();
}

/// pingora's Ketama `select` over `n` backends in group `affinity/n`, keyed
/// like ours: the 4096 keys of `benches/single.rs`, in turn, as 8 bytes.
fn ketama(c: &mut Criterion<CpuTime>, n: usize, allocs: &mut Vec<(String, f64)>) {
    let lb = LoadBalancer::<Consistent>::try_from_iter(addrs(n)).expect("valid addresses");
    let keys: Vec<[u8; 8]> = (0..4096u64)
        .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes())
        .collect();
    let mut i = 0usize;
    let mut select = || {
        i = (i + 1) & 4095;
        lb.select(&keys[i], 256).expect("a healthy backend")
    };
    allocs.push((
        format!("affinity/{n}/select/pingora-ketama"),
        allocs_per_op(|| drop(black_box(select()))),
    ));
    let mut g = c.benchmark_group(format!("affinity/{n}"));
    g.bench_function(BenchmarkId::new("select", "pingora-ketama"), |b| {
        b.iter(&mut select)
    });
    g.finish();
}

/// One request through the balancer on this thread: ready, call, and the
/// response future polled to completion (which ends the pending count).
fn p2c_call(balance: &mut P2c, cx: &mut Context<'_>) -> u64 {
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

async fn buffered_call(mut svc: Buffered) -> Result<u64, BoxError> {
    svc.ready().await?.call(1).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("a tokio runtime")
}

/// Allocations per operation of `op`, over 1 000 calls after as many.
fn allocs_per_op(op: impl FnMut()) -> f64 {
    counting::per(1000, op) as f64 / 1000.0
}

/// The single-thread peers, on the clock ours are measured with (the bench
/// thread's CPU time).
fn single(c: &mut Criterion<CpuTime>) {
    let waker = Waker::noop();
    let mut allocs = Vec::new();
    for n in WORKERS {
        pingora::<RoundRobin>(c, "round-robin", n, &mut allocs);
        pingora::<Random>(c, "random", n, &mut allocs);
        let mut balance = p2c(n);
        let mut cx = Context::from_waker(waker);
        allocs.push((
            format!("power-of-two/{n}/reserve/tower-p2c"),
            allocs_per_op(|| {
                black_box(p2c_call(&mut balance, &mut cx));
            }),
        ));
        let mut g = c.benchmark_group(format!("power-of-two/{n}"));
        g.bench_function(BenchmarkId::new("reserve", "tower-p2c"), |b| {
            b.iter(|| p2c_call(&mut balance, &mut cx))
        });
        g.finish();
    }
    for n in AFFINITY_WORKERS {
        ketama(c, n, &mut allocs);
    }
    let rt = runtime();
    for n in WORKERS {
        let buffered = rt.block_on(async { Buffer::new(p2c(n), 1024) });
        allocs.push((
            format!("power-of-two/{n}/reserve/tower-p2c-buffer"),
            allocs_per_op(|| {
                black_box(rt.block_on(buffered_call(buffered.clone())).expect("served"));
            }),
        ));
    }
    write_allocations(&allocs);
}

/// The buffered balancer on one router thread: wall time, since the request
/// is served by the runtime's thread.
fn buffered(c: &mut Criterion) {
    let rt = runtime();
    for n in WORKERS {
        let buffered = rt.block_on(async { Buffer::new(p2c(n), 1024) });
        let mut g = c.benchmark_group(format!("power-of-two/{n}"));
        g.bench_function(BenchmarkId::new("reserve", "tower-p2c-buffer"), |b| {
            b.iter(|| rt.block_on(buffered_call(buffered.clone())).expect("served"))
        });
        g.finish();
    }
}

/// Runs `op` `ops` times on each of `threads` threads; the wall time from the
/// first thread's start to the last one's end (as `benches/threads.rs`).
fn timed(threads: usize, ops: u64, op: &(dyn Fn() + Sync)) -> Duration {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let spans: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..ops {
                        op();
                    }
                    (t0, Instant::now())
                })
            })
            .collect();
        let spans: Vec<(Instant, Instant)> = spans.into_iter().map(|h| h.join().unwrap()).collect();
        let first = spans.iter().map(|s| s.0).min().unwrap();
        let last = spans.iter().map(|s| s.1).max().unwrap();
        last - first
    })
}

fn threads(c: &mut Criterion) {
    let rt = runtime();
    for n in THREAD_WORKERS {
        let rr = LoadBalancer::<RoundRobin>::try_from_iter(addrs(n)).expect("valid addresses");
        let buffered = rt.block_on(async { Buffer::new(p2c(n), 1024) });
        let select = || drop(black_box(rr.select(b"", 256)));
        let call = || {
            black_box(rt.block_on(buffered_call(buffered.clone())).expect("served"));
        };
        let ops: [(&str, &str, &(dyn Fn() + Sync)); 2] = [
            ("round-robin", "pingora", &select),
            ("power-of-two", "tower-p2c-buffer", &call),
        ];
        for (mode, name, op) in ops {
            let mut g = c.benchmark_group(format!("{mode}/{n}"));
            g.sampling_mode(SamplingMode::Flat)
                .sample_size(settings::samples(10));
            for t in thread_counts() {
                g.throughput(Throughput::Elements(t as u64 * BATCH));
                g.bench_function(BenchmarkId::new(format!("threads{t}-held0"), name), |b| {
                    b.iter_custom(|iters| timed(t, iters * BATCH, op))
                });
            }
            g.finish();
        }
    }
}

/// `target/bench-report/peer-allocations.txt`: `id=allocations per op` lines.
fn write_allocations(allocs: &[(String, f64)]) {
    // Set by ci/bench-report.sh: this crate builds in a target dir of its own.
    let dir = std::env::var_os("WORKERPICK_REPORT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-report"));
    let mut lines = String::new();
    for (id, a) in allocs {
        println!("allocations per operation: {id} = {a}");
        lines += &format!("{id}={a}\n");
    }
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join("peer-allocations.txt"), lines))
    {
        eprintln!("peers: could not write {}: {e}", dir.display());
    }
}

criterion_group! {
    name = on_cpu_time;
    config = settings::criterion(CpuTime);
    targets = single
}
criterion_group! {
    name = on_wall_time;
    config = settings::criterion(WallTime);
    targets = buffered, threads
}
criterion_main!(on_cpu_time, on_wall_time);
