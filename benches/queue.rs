//! The admission queue's cost, uncontended, on one thread: a request that
//! finds room (`enqueue` books at once, the ticket hands over the booking,
//! the release finds nobody waiting), beside the plain reserve + release it
//! wraps; and a request that waits (one booking held at the limit: it
//! queues, the held booking's release admits it, it is taken and released).
//!
//! Groups are `queue/workers`; functions say the path. Target: ≤ 150 ns for
//! `enqueue-admit-release` (BENCHMARKS.md, *Admission queue*).

mod common;

use common::cpu_time::CpuTime;
use common::settings;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use workerpick::queue::{Entry, Queue, QueueConfig};
use workerpick::{LeastLoaded, Pool};

fn queue(c: &mut Criterion<CpuTime>) {
    for workers in [8u64, 64] {
        let pool = Arc::new(Pool::from_workers(0..workers).unwrap());
        let ll = LeastLoaded::new();
        let config = QueueConfig::new().tenants(&[4, 1]).in_flight_limit(4);
        let q = Queue::new(pool.clone(), LeastLoaded::new(), config).unwrap();
        let mut g = c.benchmark_group(format!("queue/{workers}"));
        g.bench_function(BenchmarkId::new("plain", "reserve-release"), |b| {
            b.iter(|| *pool.reserve(&ll).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("queue", "enqueue-admit-release"), |b| {
            b.iter(|| {
                let admitted = q.enqueue(black_box(Entry::new().tenant(1).weight(1))).unwrap();
                *admitted.wait().unwrap().worker()
            })
        });
        g.finish();
        assert!(
            pool.loads().iter().all(|&(_, l)| l == 0),
            "a bench leaked a booking"
        );
    }
    // One worker at its limit of 1: every request waits for the release.
    {
        let one = Arc::new(Pool::from_workers([0u64]).unwrap());
        let q = Queue::new(
            one.clone(),
            LeastLoaded::new(),
            QueueConfig::new().in_flight_limit(1),
        )
        .unwrap();
        let mut g = c.benchmark_group("queue/1");
        let mut held = Some(q.enqueue(Entry::new()).unwrap().wait().unwrap());
        g.bench_function(BenchmarkId::new("queue", "wait-admit-release"), |b| {
            b.iter(|| {
                let mut ticket = q.enqueue(black_box(Entry::new())).unwrap();
                drop(held.take());
                held = Some(ticket.try_admit().unwrap().unwrap());
            })
        });
        g.finish();
        drop(held);
        assert_eq!(one.in_flight(&0), Some(0), "a bench leaked a booking");
    }
}

fn config() -> Criterion<CpuTime> {
    settings::criterion(CpuTime)
}

criterion_group! {
    name = benches;
    config = config();
    targets = queue
}
criterion_main!(benches);
