//! Prefill/decode pair picks beside one least-loaded pick in the same group
//! (`pair/workers`, each pool that size): a reserve, the hand-off and the
//! release of a pair against a reserve and release of one booking.

mod common;

use common::cpu_time::CpuTime;
use common::settings;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use workerpick::{Decider, LeastLoaded, PairRequest, Pairs, Plan, Pool, Request, Rng};

fn pair(c: &mut Criterion<CpuTime>) {
    for n in [8usize, 1024] {
        let prefill = Pool::from_workers(0..n as u64).unwrap();
        let decode = Pool::from_workers(0..n as u64).unwrap();
        let mut single = decode.handle_with_rng(Rng::with_seed(1));
        let mut pairs = Pairs::new(
            prefill.handle_with_rng(Rng::with_seed(2)),
            decode.handle_with_rng(Rng::with_seed(3)),
            Decider::new(256),
        );
        let split = PairRequest::new(Request::new().weight(512), Request::new());
        let local = PairRequest::new(Request::new().weight(64), Request::new());
        let ll = LeastLoaded::new();
        let mut g = c.benchmark_group(format!("pair/{n}"));
        g.sample_size(settings::samples(50));
        g.bench_function(BenchmarkId::new("reserve-release", "least-loaded"), |b| {
            b.iter(|| *single.reserve(&ll).unwrap().worker())
        });
        let heavy = Request::new().weight(512);
        g.bench_function(BenchmarkId::new("reserve-release", "least-loaded-w512"), |b| {
            b.iter(|| *single.reserve_with(&ll, &heavy).unwrap().worker())
        });
        // The floor under a disaggregated pair: its two bookings, made by hand in the
        // same order (decode, then prefill) and released as a pair's are.
        let decode_side = Request::new();
        g.bench_function(BenchmarkId::new("reserve-release", "two-bookings"), |b| {
            b.iter(|| {
                let d = pairs.decode_handle().reserve_with(&ll, &decode_side).unwrap();
                let p = pairs.prefill_handle().reserve_with(&ll, &heavy).unwrap();
                drop(p);
                *d.worker()
            })
        });
        g.bench_function(BenchmarkId::new("reserve-release", "pair-disaggregate"), |b| {
            b.iter(|| {
                let mut p = pairs.reserve(&ll, &ll, &split).unwrap();
                p.hand_off();
                *p.decode()
            })
        });
        g.bench_function(BenchmarkId::new("reserve-release", "pair-local"), |b| {
            b.iter(|| {
                let mut p = pairs.reserve(&ll, &ll, &local).unwrap();
                p.hand_off();
                *p.decode()
            })
        });
        g.bench_function(BenchmarkId::new("reserve-release", "preview-admit"), |b| {
            b.iter(|| {
                let seen = pairs.preview(&ll, &split).unwrap();
                let mut p = pairs.admit(&seen, &ll, &ll, &split).unwrap();
                assert_eq!(p.plan(), Plan::Disaggregate);
                p.hand_off();
                *p.decode()
            })
        });
        g.finish();
        let idle = |p: &Pool<u64>| p.loads().iter().all(|&(_, l)| l == 0);
        assert!(idle(&prefill) && idle(&decode), "a bench leaked a reservation");
    }
}

fn config() -> Criterion<CpuTime> {
    settings::criterion(CpuTime)
}

criterion_group! {
    name = benches;
    config = config();
    targets = pair
}
criterion_main!(benches);
