//! The cost mode (load less weighted cache credit) beside a reference that
//! follows Dynamo's KV selector loop: per call, a map of logits built worker
//! by worker from the request's overlap map and each worker's load, then a
//! `Vec` of probabilities for the softmax (or a scan of the map for the
//! minimum). Groups are `cost/workers`; each reserves, reads the worker and
//! releases, with 1 % of the workers (at least one) credited; `reserve-t0-dense`
//! credits every worker (`w % 8` blocks), which the cost mode answers with its
//! one SIMD pass over loads and credits (`scan::least_credited`).

mod common;

use common::cpu_time::CpuTime;
use common::settings;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use workerpick::{CacheHits, Cost, Pool, Request, Rng, Temperature};

/// Dynamo's selector loop as its docs describe it, over atomics for the
/// loads and a mutex for the generator.
struct Reference {
    loads: Vec<(u64, AtomicU32)>,
    rng: Mutex<Rng>,
}

impl Reference {
    fn pick(&self, overlaps: &HashMap<u64, u32>, request_blocks: u32, alpha: f64, t: f64) -> u64 {
        let mut logits: HashMap<u64, f64> = HashMap::new();
        for (w, load) in &self.loads {
            let cached = overlaps.get(w).copied().unwrap_or(0);
            let prefill = f64::from(request_blocks - cached.min(request_blocks));
            logits.insert(*w, alpha * prefill + f64::from(load.load(Ordering::Relaxed)));
        }
        let (lo, hi) = logits
            .values()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let mut rng = self.rng.lock().unwrap();
        if t == 0.0 {
            let best: Vec<u64> = logits
                .iter()
                .filter(|(_, v)| **v == lo)
                .map(|(w, _)| *w)
                .collect();
            return best[rng.below(best.len() as u32) as usize];
        }
        let entries: Vec<(u64, f64)> = logits.into_iter().collect();
        let probs: Vec<f64> = if hi == lo {
            vec![1.0 / entries.len() as f64; entries.len()]
        } else {
            let w: Vec<f64> = entries
                .iter()
                .map(|(_, v)| (-(v - lo) / ((hi - lo) * t)).exp())
                .collect();
            let s: f64 = w.iter().sum();
            w.into_iter().map(|x| x / s).collect()
        };
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut acc = 0.0;
        for (i, p) in probs.iter().enumerate() {
            acc += p;
            if acc > u {
                return entries[i].0;
            }
        }
        entries[entries.len() - 1].0
    }

    fn reserve(&self, w: u64) -> &AtomicU32 {
        let load = &self.loads[w as usize].1;
        load.fetch_add(1, Ordering::Relaxed);
        load
    }
}

fn cost(c: &mut Criterion<CpuTime>) {
    for n in [8usize, 1024, 10_000, 100_000] {
        let pool = Pool::with_max_workers(n.max(8)).unwrap();
        pool.replace(0..n as u64).unwrap();
        let credited: Vec<(u64, u32)> = (0..n as u64)
            .step_by(100)
            .map(|w| (w, 1 + (w % 7) as u32))
            .collect();
        let mut hits = CacheHits::new();
        hits.rebuild_sparse(&pool, 16, credited.iter().map(|(w, o)| (w, *o)));
        let req = Request::new().cache_hits(&hits);
        let dense_hits = CacheHits::build(&pool, 16, |w| (w % 8) as u32);
        let dense = Request::new().cache_hits(&dense_hits);
        let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
        let mut h = pool.handle_with_rng(Rng::with_seed(1));
        let reference = Reference {
            loads: (0..n as u64).map(|w| (w, AtomicU32::new(0))).collect(),
            rng: Mutex::new(Rng::with_seed(1)),
        };
        let overlaps: HashMap<u64, u32> = credited.iter().copied().collect();
        let mut g = c.benchmark_group(format!("cost/{n}"));
        g.sample_size(settings::samples(if n > 1000 { 10 } else { 50 }));
        g.bench_function(BenchmarkId::new("reserve-t0", "workerpick-handle"), |b| {
            b.iter(|| *h.reserve_with(&Cost::new(), &req).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("reserve-t0-dense", "workerpick-handle"), |b| {
            b.iter(|| *h.reserve_with(&Cost::new(), &dense).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("reserve-t0", "reference"), |b| {
            b.iter(|| {
                let w = reference.pick(black_box(&overlaps), 16, 1.0, 0.0);
                reference.reserve(w).fetch_sub(1, Ordering::Release);
                w
            })
        });
        g.bench_function(BenchmarkId::new("reserve-t0.5", "workerpick-handle"), |b| {
            b.iter(|| *h.reserve_with(&soft, &req).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("reserve-t0.5", "reference"), |b| {
            b.iter(|| {
                let w = reference.pick(black_box(&overlaps), 16, 1.0, 0.5);
                reference.reserve(w).fetch_sub(1, Ordering::Release);
                w
            })
        });
        g.finish();
        assert!(
            pool.loads().iter().all(|&(_, l)| l == 0),
            "a bench leaked a reservation"
        );
    }
}

fn config() -> Criterion<CpuTime> {
    settings::criterion(CpuTime)
}

criterion_group! {
    name = benches;
    config = config();
    targets = cost
}
criterion_main!(benches);
