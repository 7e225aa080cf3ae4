//! The cost mode (load less weighted cache credit) beside a reference that
//! follows Dynamo's KV selector loop: per call, a map of logits built worker
//! by worker from the request's overlap map and each worker's load, then a
//! `Vec` of probabilities for the softmax (or a scan of the map for the
//! minimum). Groups are `cost/workers`; each reserves, reads the worker and
//! releases, with 1 % of the workers (at least one) credited 1-7 blocks:
//!
//! - `build-reserve-*`: what a router runs per request, the credit built from
//!   the index's matches (`rebuild_tokens` from stored `WorkerToken`s, or
//!   `rebuild_sparse` from worker ids, one hash lookup each) and then the pick;
//! - `reserve-*`: the pick alone, on credit built once;
//! - `*-busy`: every worker holds 10-13 reservations meanwhile, so no credited
//!   cost is below 0 and the `T = 0` pick needs the least-loaded scan;
//! - `*-16`: 16 workers credited, whatever the pool's size;
//! - `reserve-t0-dense`: every worker credited (`w % 8` blocks), the SIMD pass
//!   over loads and credits (`scan::least_credited`);
//! - `reserve-least-loaded`: plain least-loaded on the same pool, the pick the
//!   cost mode's `T = 0` reduces to with no credit.
//!
//! The reference's input is its overlap map, built outside the timed loop. When
//! the run ends the binary prints the BENCHMARKS.md table from this run's medians.

mod common;

use common::cpu_time::CpuTime;
use common::results::{Results, facts, load_average};
use common::settings;
use criterion::{BenchmarkId, Criterion};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use workerpick::{CacheHits, Cost, LeastLoaded, Pool, Request, Rng, Temperature, WorkerToken};

const WORKERS: [usize; 4] = [8, 1024, 10_000, 100_000];

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

/// A pool of workers `0..n` and, per credited worker, its token and blocks.
fn pool_of(n: usize, credited: &[(u64, u32)]) -> (Pool<u64>, Vec<(WorkerToken, u32)>) {
    let pool = Pool::with_max_workers(n.max(8)).unwrap();
    pool.replace(0..n as u64).unwrap();
    let tokens = credited
        .iter()
        .map(|&(w, o)| (WorkerToken::of(&pool, &w).unwrap(), o))
        .collect();
    (pool, tokens)
}

fn cost(c: &mut Criterion<CpuTime>) {
    for n in WORKERS {
        let credited: Vec<(u64, u32)> = (0..n as u64)
            .step_by(100)
            .map(|w| (w, 1 + (w % 7) as u32))
            .collect();
        let sixteen: Vec<(u64, u32)> = (0..16u64)
            .map(|i| (i * (n as u64 / 16).max(1) % n as u64, 1 + (i % 7) as u32))
            .collect();
        let (pool, tokens) = pool_of(n, &credited);
        let sixteen_tokens: Vec<(WorkerToken, u32)> = sixteen
            .iter()
            .map(|&(w, o)| (WorkerToken::of(&pool, &w).unwrap(), o))
            .collect();
        let (busy, busy_tokens) = pool_of(n, &credited);
        let held: Vec<_> = (0..n as u64)
            .map(|w| busy.reserve_worker(&w, 10 + (w % 4) as u32).unwrap())
            .collect();
        let mut hits = CacheHits::new();
        hits.rebuild_sparse(&pool, 16, credited.iter().map(|(w, o)| (w, *o)));
        let dense_hits = CacheHits::build(&pool, 16, |w| (w % 8) as u32);
        let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
        let mut h = pool.handle_with_rng(Rng::with_seed(1));
        let mut hb = busy.handle_with_rng(Rng::with_seed(1));
        let mut scratch = CacheHits::new();
        let reference = Reference {
            loads: (0..n as u64).map(|w| (w, AtomicU32::new(0))).collect(),
            rng: Mutex::new(Rng::with_seed(1)),
        };
        let overlaps: HashMap<u64, u32> = credited.iter().copied().collect();
        let mut g = c.benchmark_group(format!("cost/{n}"));
        g.sample_size(settings::samples(if n > 1000 { 10 } else { 50 }));
        let t0 = Cost::new();
        g.bench_function(BenchmarkId::new("build-reserve-t0", "workerpick-tokens"), |b| {
            b.iter(|| {
                scratch.rebuild_tokens(&pool, 16, black_box(&tokens).iter().copied());
                *h.reserve_with(&t0, &Request::new().cache_hits(&scratch))
                    .unwrap()
                    .worker()
            })
        });
        g.bench_function(BenchmarkId::new("build-reserve-t0", "workerpick-ids"), |b| {
            b.iter(|| {
                scratch.rebuild_sparse(&pool, 16, black_box(&credited).iter().map(|(w, o)| (w, *o)));
                *h.reserve_with(&t0, &Request::new().cache_hits(&scratch))
                    .unwrap()
                    .worker()
            })
        });
        g.bench_function(BenchmarkId::new("reserve-t0", "workerpick-handle"), |b| {
            let req = Request::new().cache_hits(&hits);
            b.iter(|| *h.reserve_with(&t0, &req).unwrap().worker())
        });
        g.bench_function(
            BenchmarkId::new("build-reserve-t0-busy", "workerpick-tokens"),
            |b| {
                b.iter(|| {
                    scratch.rebuild_tokens(&busy, 16, black_box(&busy_tokens).iter().copied());
                    *hb.reserve_with(&t0, &Request::new().cache_hits(&scratch))
                        .unwrap()
                        .worker()
                })
            },
        );
        if n >= 1024 {
            g.bench_function(
                BenchmarkId::new("build-reserve-t0-16", "workerpick-tokens"),
                |b| {
                    b.iter(|| {
                        scratch.rebuild_tokens(&pool, 16, black_box(&sixteen_tokens).iter().copied());
                        *h.reserve_with(&t0, &Request::new().cache_hits(&scratch))
                            .unwrap()
                            .worker()
                    })
                },
            );
        }
        g.bench_function(BenchmarkId::new("reserve-t0-dense", "workerpick-handle"), |b| {
            let req = Request::new().cache_hits(&dense_hits);
            b.iter(|| *h.reserve_with(&t0, &req).unwrap().worker())
        });
        g.bench_function(
            BenchmarkId::new("reserve-least-loaded", "workerpick-handle"),
            |b| b.iter(|| *h.reserve(&LeastLoaded::new()).unwrap().worker()),
        );
        g.bench_function(BenchmarkId::new("reserve-t0", "reference"), |b| {
            b.iter(|| {
                let w = reference.pick(black_box(&overlaps), 16, 1.0, 0.0);
                reference.reserve(w).fetch_sub(1, Ordering::Release);
                w
            })
        });
        g.bench_function(BenchmarkId::new("build-reserve-t0.5", "workerpick-tokens"), |b| {
            b.iter(|| {
                scratch.rebuild_tokens(&pool, 16, black_box(&tokens).iter().copied());
                *h.reserve_with(&soft, &Request::new().cache_hits(&scratch))
                    .unwrap()
                    .worker()
            })
        });
        g.bench_function(BenchmarkId::new("reserve-t0.5", "workerpick-handle"), |b| {
            let req = Request::new().cache_hits(&hits);
            b.iter(|| *h.reserve_with(&soft, &req).unwrap().worker())
        });
        g.bench_function(
            BenchmarkId::new("build-reserve-t0.5-busy", "workerpick-tokens"),
            |b| {
                b.iter(|| {
                    scratch.rebuild_tokens(&busy, 16, black_box(&busy_tokens).iter().copied());
                    *hb.reserve_with(&soft, &Request::new().cache_hits(&scratch))
                        .unwrap()
                        .worker()
                })
            },
        );
        g.bench_function(BenchmarkId::new("reserve-t0.5", "reference"), |b| {
            b.iter(|| {
                let w = reference.pick(black_box(&overlaps), 16, 1.0, 0.5);
                reference.reserve(w).fetch_sub(1, Ordering::Release);
                w
            })
        });
        g.finish();
        drop(held);
        for p in [&pool, &busy] {
            assert!(
                p.loads().iter().all(|&(_, l)| l == 0),
                "a bench leaked a reservation"
            );
        }
    }
}

/// The BENCHMARKS.md table of this run ("—" where a benchmark did not run).
fn table(r: &Results) -> String {
    let mut out = String::from(
        "| workers | `T = 0`, build + pick (tokens) | build + pick (ids) | pick alone | busy, build + pick | 16 credited, build + pick | dense, pick | least-loaded, no credit | reference `T = 0` | ratio | `T = 0.5`, build + pick (tokens) | pick alone | busy, build + pick | reference `T = 0.5` | ratio |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for n in WORKERS {
        let id = |f: &str, p: &str| format!("cost/{n}/{f}/{p}");
        let ours = id("build-reserve-t0", "workerpick-tokens");
        let soft = id("build-reserve-t0.5", "workerpick-tokens");
        let cells = [
            r.cell(&ours),
            r.cell(&id("build-reserve-t0", "workerpick-ids")),
            r.cell(&id("reserve-t0", "workerpick-handle")),
            r.cell(&id("build-reserve-t0-busy", "workerpick-tokens")),
            r.cell(&id("build-reserve-t0-16", "workerpick-tokens")),
            r.cell(&id("reserve-t0-dense", "workerpick-handle")),
            r.cell(&id("reserve-least-loaded", "workerpick-handle")),
            r.cell(&id("reserve-t0", "reference")),
            r.ratio(&id("reserve-t0", "reference"), &ours),
            r.cell(&soft),
            r.cell(&id("reserve-t0.5", "workerpick-handle")),
            r.cell(&id("build-reserve-t0.5-busy", "workerpick-tokens")),
            r.cell(&id("reserve-t0.5", "reference")),
            r.ratio(&id("reserve-t0.5", "reference"), &soft),
        ];
        out += &format!(
            "| {} | {} |\n",
            common::results::thousands(n as u64),
            cells.join(" | ")
        );
    }
    out
}

/// The before/after table over the benchmarks both builds have.
fn compared(r: &Results) -> String {
    let mut out = String::from(
        "| workers | `T = 0`, pick alone | `T = 0`, dense | `T = 0.5`, pick alone | reference `T = 0` | reference `T = 0.5` |\n\
         |---:|---:|---:|---:|---:|---:|\n",
    );
    for n in WORKERS {
        let id = |f: &str, p: &str| format!("cost/{n}/{f}/{p}");
        let cells = [
            r.before_after(&id("reserve-t0", "workerpick-handle")),
            r.before_after(&id("reserve-t0-dense", "workerpick-handle")),
            r.before_after(&id("reserve-t0.5", "workerpick-handle")),
            r.before_after(&id("reserve-t0", "reference")),
            r.before_after(&id("reserve-t0.5", "reference")),
        ];
        out += &format!(
            "| {} | {} |\n",
            common::results::thousands(n as u64),
            cells.join(" | ")
        );
    }
    out
}

fn main() {
    let (start, load) = (std::time::SystemTime::now(), load_average());
    let mut c = settings::criterion(CpuTime).configure_from_args();
    cost(&mut c);
    c.final_summary();
    if !common::test_mode() {
        let r = Results::since(start);
        println!("\n{}\n\n{}", facts("cost", &load), table(&r));
        if r.has_before() {
            println!(
                "Before (criterion baseline `before`) → after:\n\n{}",
                compared(&r)
            );
        }
    }
}
