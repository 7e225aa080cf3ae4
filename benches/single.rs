//! Single-thread cost of one operation, ours beside the lock-based reference.
//! Every pick reads the worker it got (`*r.worker()`, or the `&W` a select
//! returns), as a router must, and hands it to criterion's `black_box`.
//!
//! Groups are `mode/workers`; in each, the function is the operation and the
//! parameter the implementation:
//! `least-loaded/1024/reserve/workerpick-handle` vs `.../reserve/reference`.
//! The pool is idle (every load 0) so all the workers tie, which is the
//! worst case for both least-loaded tie-breaks.
//!
//! `least-loaded-4-ties/workers` is least-loaded reserve + release with only 4
//! workers at the minimum: every other worker holds one reservation (booked through
//! the same mode, so both designs start from the same loads). There random tries at
//! the minimum mostly miss and our scan counts the ties.
//!
//! More groups: `floor` (the primitives a pick is built from, to show what
//! bounds a figure), `scan/workers` (the least-loaded scan alone, per
//! backend this CPU runs), `weighted-scan/n` (the weighted scan beside it),
//! `weighted-<mode>/n` (each mode over capacities 4:2:1:1 beside the same pool
//! unweighted) and `health/n` (marking workers unhealthy and healthy).

mod common;

use common::cpu_time::CpuTime;
use common::reference::Reference;
use common::{MODES, WORKERS, reference_policy, settings};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use workerpick::{LeastLoaded, Mode, Pool, Request, Rng, Selector};

const OURS: &str = "workerpick-handle";
const POOL: &str = "workerpick-pool";
const DYN: &str = "workerpick-handle-dyn";
const REF: &str = "reference";

fn modes(c: &mut Criterion<CpuTime>) {
    for mode in MODES {
        for n in WORKERS {
            with_selector!(mode, |sel| group(c, mode, n, &sel));
        }
    }
}

/// Sample count for a function whose one call may take `ns_guess` ns: slow
/// ones get fewer samples so the suite stays short.
fn samples_for(g: &mut BenchmarkGroup<'_, CpuTime>, ns_guess: usize) {
    g.sample_size(settings::samples(if ns_guess > 20_000 { 20 } else { 50 }));
}

fn group<S: Selector>(c: &mut Criterion<CpuTime>, mode: Mode, n: usize, sel: &S) {
    let pool = Pool::from_workers(0..n as u64).unwrap();
    let reference = Reference::new(0..n as u64, 1);
    let policy = reference_policy(mode);
    let mut h = pool.handle_with_rng(Rng::with_seed(1));
    // Hidden from the optimiser so the call stays virtual.
    let dynamic: &dyn Selector = black_box(sel);
    let half = pool.eligibility(|w| w.is_multiple_of(2));
    let masked = Request::new().eligible(&half);
    let keep_half = |w: &u64| w.is_multiple_of(2);
    // The reference least-loaded costs ~15 ns per worker.
    let ref_ns = if mode == Mode::LeastLoaded { 15 * n } else { 100 };

    let mut g = c.benchmark_group(format!("{}/{}", mode.name(), n));

    g.bench_function(BenchmarkId::new("select", OURS), |b| {
        b.iter(|| *h.select(sel).unwrap())
    });
    g.bench_function(BenchmarkId::new("select", DYN), |b| {
        b.iter(|| *h.select(dynamic).unwrap())
    });
    g.bench_function(BenchmarkId::new("select", POOL), |b| {
        b.iter(|| pool.select(sel).unwrap())
    });
    samples_for(&mut g, ref_ns);
    g.bench_function(BenchmarkId::new("select", REF), |b| {
        b.iter(|| reference.select(policy, None).unwrap())
    });
    samples_for(&mut g, 0);

    g.bench_function(BenchmarkId::new("reserve", OURS), |b| {
        b.iter(|| *h.reserve(sel).unwrap().worker())
    });
    // The same without reading the worker: what that read costs.
    g.bench_function(BenchmarkId::new("reserve-bare", OURS), |b| {
        b.iter(|| drop(h.reserve(sel).unwrap()))
    });
    g.bench_function(BenchmarkId::new("reserve", DYN), |b| {
        b.iter(|| *h.reserve(dynamic).unwrap().worker())
    });
    g.bench_function(BenchmarkId::new("reserve", POOL), |b| {
        b.iter(|| *pool.reserve(sel).unwrap().worker())
    });
    samples_for(&mut g, ref_ns);
    g.bench_function(BenchmarkId::new("reserve", REF), |b| {
        b.iter(|| *reference.reserve(policy, None).unwrap().worker())
    });
    samples_for(&mut g, 0);

    g.bench_function(BenchmarkId::new("preview", OURS), |b| {
        b.iter(|| *h.preview(sel).unwrap())
    });
    samples_for(&mut g, ref_ns);
    g.bench_function(BenchmarkId::new("preview", REF), |b| {
        b.iter(|| reference.preview(policy, None).unwrap())
    });
    samples_for(&mut g, 0);

    if matches!(mode, Mode::PowerOfTwo | Mode::LeastLoaded) {
        g.bench_function(BenchmarkId::new("masked-select", OURS), |b| {
            b.iter(|| *h.select_with(sel, &masked).unwrap())
        });
        g.bench_function(BenchmarkId::new("masked-reserve", OURS), |b| {
            b.iter(|| *h.reserve_with(sel, &masked).unwrap().worker())
        });
        samples_for(&mut g, ref_ns);
        g.bench_function(BenchmarkId::new("masked-select", REF), |b| {
            b.iter(|| reference.select(policy, Some(&keep_half)).unwrap())
        });
        g.bench_function(BenchmarkId::new("masked-reserve", REF), |b| {
            b.iter(|| *reference.reserve(policy, Some(&keep_half)).unwrap().worker())
        });
    }
    g.finish();
    assert!(
        pool.loads().iter().all(|&(_, l)| l == 0),
        "a bench leaked a reservation"
    );
}

/// Least-loaded reserve + release with 4 workers at the minimum (see the module docs).
fn few_ties(c: &mut Criterion<CpuTime>) {
    for n in WORKERS {
        let pool = Pool::from_workers(0..n as u64).unwrap();
        let reference = Reference::new(0..n as u64, 1);
        let policy = reference_policy(Mode::LeastLoaded);
        let mut h = pool.handle_with_rng(Rng::with_seed(1));
        let sel = LeastLoaded::new();
        let held: Vec<_> = (4..n).map(|_| h.reserve(&sel).unwrap()).collect();
        let ref_held: Vec<_> = (4..n).map(|_| reference.reserve(policy, None).unwrap()).collect();
        let mut g = c.benchmark_group(format!("least-loaded-4-ties/{n}"));
        g.bench_function(BenchmarkId::new("reserve", OURS), |b| {
            b.iter(|| *h.reserve(&sel).unwrap().worker())
        });
        samples_for(&mut g, 15 * n);
        g.bench_function(BenchmarkId::new("reserve", REF), |b| {
            b.iter(|| *reference.reserve(policy, None).unwrap().worker())
        });
        g.finish();
        assert_eq!(pool.loads().iter().filter(|&&(_, l)| l == 0).count(), 4.min(n));
        drop((held, ref_held));
    }
}

/// Reported load (issue 17): least-loaded and power-of-two reserve + read + release
/// on an idle pool with every worker reported at the same load, beside the same
/// pool without reports; and applying a replica's summary naming every worker.
fn reported(c: &mut Criterion<CpuTime>) {
    for n in [8usize, 1024, 10_000] {
        let plain = Pool::from_workers(0..n as u64).unwrap();
        let reported = Pool::from_workers(0..n as u64).unwrap();
        let ids: Vec<u64> = (0..n as u64).collect();
        reported.report_loads(ids.iter().map(|w| (w, 2)));
        let mut g = c.benchmark_group(format!("reported/{n}"));
        samples_for(&mut g, 4 * n);
        for (name, pool) in [("local-only", &plain), ("reported", &reported)] {
            let mut h = pool.handle_with_rng(Rng::with_seed(1));
            let ll = LeastLoaded::new();
            g.bench_function(BenchmarkId::new("least-loaded-reserve", name), |b| {
                b.iter(|| *h.reserve(&ll).unwrap().worker())
            });
            let p2c = workerpick::PowerOfTwo::new();
            g.bench_function(BenchmarkId::new("power-of-two-reserve", name), |b| {
                b.iter(|| *h.reserve(&p2c).unwrap().worker())
            });
        }
        // A peer with load on every worker: its summary names all n. Each apply
        // needs a newer summary than the last (an old one is ignored), so the
        // peer's numbering is run ahead in batches outside the timing.
        let peer = Pool::from_workers(0..n as u64).unwrap();
        let held: Vec<_> = ids
            .iter()
            .map(|w| peer.reserve_worker(w, 1 + (*w % 3) as u32).unwrap())
            .collect();
        let me = Pool::from_workers(0..n as u64).unwrap();
        // Once outside the timing: the timed ones are steady-state updates.
        assert!(me.apply_summary(&peer.summary()));
        // Steady: the same loads as last time (each entry is compared, nothing
        // moves). Changed: every load differs from the last summary's, so every
        // counter is moved (the peer books one more on every worker, or one less,
        // by turns, outside the timing).
        g.bench_function(BenchmarkId::new("apply-summary-steady", OURS), |b| {
            b.iter_batched(
                || peer.summary(),
                |s| me.apply_summary(&s),
                criterion::BatchSize::LargeInput,
            )
        });
        let mut extra = Vec::new();
        let mut flip = || {
            if extra.is_empty() {
                extra = ids.iter().map(|w| peer.reserve_worker(w, 1).unwrap()).collect();
            } else {
                extra.clear();
            }
            peer.summary()
        };
        g.bench_function(BenchmarkId::new("apply-summary-changed", OURS), |b| {
            b.iter_batched(
                &mut flip,
                |s| me.apply_summary(&s),
                criterion::BatchSize::LargeInput,
            )
        });
        drop(extra);
        assert!(me.apply_summary(&peer.summary()));
        g.finish();
        assert_eq!(me.reported_load(&0), Some(1));
        drop(held);
    }
}

/// Least-loaded reserve + read the worker + release on large pools: the
/// summarised pick (per-block lower bounds) against the flat scan of every
/// counter, idle and with 4 workers at the minimum (`least-loaded-large/n`);
/// past 10 000 workers also the reference, idle.
fn large(c: &mut Criterion<CpuTime>) {
    for n in [10_000usize, 100_000, 1_000_000] {
        let mut g = c.benchmark_group(format!("least-loaded-large/{n}"));
        let sel = LeastLoaded::new();
        for flat in [false, true] {
            // Sized for the fleet (past the default limit from 10^5 on); the
            // default limit keeps the bounds too.
            let pool = Pool::with_max_workers(n.next_power_of_two().max(1 << 17)).unwrap();
            let pool = if flat { pool.with_flat_scan() } else { pool };
            pool.replace(0..n as u64).unwrap();
            let mut h = pool.handle_with_rng(Rng::with_seed(1));
            let name = if flat { "flat" } else { "summarised" };
            // The flat scan reads every counter: ~0.04 ns a lane at best.
            samples_for(&mut g, if flat { n / 25 } else { 100 });
            g.bench_function(BenchmarkId::new("reserve", name), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().worker())
            });
            // The floor of any pick that books one worker drawn anywhere in
            // the pool: a random reserve + read + release, no scan (its
            // counter and its key, from wherever they are cached). On the
            // flat pool, which keeps no bounds, it also shows what the bounds
            // cost a release.
            let random = workerpick::Random::new();
            let id = if flat { "random-no-bounds" } else { "random" };
            g.bench_function(BenchmarkId::new("reserve", id), |b| {
                b.iter(|| *h.reserve(&random).unwrap().worker())
            });
            let held: Vec<_> = (4..n)
                .map(|w| pool.reserve_worker(&(w as u64), 1).unwrap())
                .collect();
            g.bench_function(BenchmarkId::new("reserve-4-ties", name), |b| {
                b.iter(|| *h.reserve(&sel).unwrap().worker())
            });
            drop(held);
        }
        // The lock-based reference beyond `least-loaded/10000`, for the
        // scaling plot: ~15 ns a worker (1.5 ms a pick at 10^5), so the
        // fewest samples criterion takes (10: 55 picks, well under a second).
        if n > 10_000 {
            let reference = Reference::new(0..n as u64, 1);
            let policy = reference_policy(Mode::LeastLoaded);
            g.sample_size(10);
            g.bench_function(BenchmarkId::new("reserve", REF), |b| {
                b.iter(|| *reference.reserve(policy, None).unwrap().worker())
            });
        }
        g.finish();
    }
}

/// The primitives a pick is made of, on this machine: what bounds a figure.
fn floor(c: &mut Criterion<CpuTime>) {
    let mut g = c.benchmark_group("floor");
    let a = AtomicU32::new(0);
    g.bench_function("fetch_add", |b| b.iter(|| a.fetch_add(1, Ordering::Relaxed)));
    g.bench_function("compare_exchange", |b| {
        let mut cur = a.load(Ordering::Relaxed);
        b.iter(|| {
            let r = a.compare_exchange(cur, cur.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed);
            cur = cur.wrapping_add(1);
            r
        })
    });
    g.bench_function("load-relaxed", |b| {
        b.iter(|| black_box(&a).load(Ordering::Relaxed))
    });
    let swap = arc_swap::ArcSwap::from_pointee(7u64);
    let mut cache = arc_swap::Cache::new(&swap);
    g.bench_function("arc_swap-cache-load", |b| b.iter(|| **cache.load()));
    g.bench_function("arc_swap-load", |b| b.iter(|| **swap.load()));
    let mut rng = Rng::with_seed(1);
    g.bench_function("rng-below", |b| b.iter(|| rng.below(black_box(1000))));
    // A draw and a read at the drawn place in arrays the size of a 10 000-worker
    // pool's, both beyond L1: its counters (40 KB of u32) and its keys (160 KB of
    // 16-byte entries, as `Option<u64>`). What a pick at that size pays per worker
    // it looks at, however little else it does.
    let lanes: Vec<AtomicU32> = (0..10_000).map(|_| AtomicU32::new(0)).collect();
    g.bench_function("rng-below+load-40KB", |b| {
        b.iter(|| lanes[rng.below(10_000) as usize].load(Ordering::Relaxed))
    });
    let keys: Vec<Option<u64>> = (0..10_000).map(Some).collect();
    g.bench_function("rng-below+load-160KB", |b| {
        b.iter(|| keys[rng.below(10_000) as usize])
    });
    let m = std::sync::Mutex::new(0u64);
    g.bench_function("mutex-lock-unlock", |b| {
        b.iter(|| {
            let mut v = m.lock().unwrap();
            *v += 1;
            *v
        })
    });
    let map: dashmap::DashMap<u64, AtomicU32> = (0..1024).map(|w| (w, AtomicU32::new(0))).collect();
    let mut k = 0u64;
    g.bench_function("dashmap-get", |b| {
        b.iter(|| {
            k = (k + 1) & 1023;
            map.get(&k).map_or(0, |c| c.load(Ordering::Relaxed))
        })
    });
    g.finish();
}

/// Counters for the largest worker count, cache-line aligned like the pool's.
#[repr(C, align(64))]
struct Counters([AtomicU32; 10_240]);

/// The least-loaded scan alone (min and tie count over `n` idle counters, the
/// exclusion lanes padded to 16 as the snapshot pads them), for every backend
/// this CPU has.
fn scan(c: &mut Criterion<CpuTime>) {
    use workerpick::scan::{self, Backend};
    let counters = Box::new(Counters(core::array::from_fn(|_| AtomicU32::new(0))));
    let mut rng = Rng::with_seed(1);
    for n in WORKERS {
        let counters = &counters.0[..n];
        let mut g = c.benchmark_group(format!("scan/{n}"));
        for &backend in Backend::available() {
            g.bench_function(BenchmarkId::new("least", backend.name()), |b| {
                b.iter(|| scan::least(backend, counters, None, |m| rng.below(m)))
            });
        }
        g.finish();
    }
}

/// `weighted-scan/n`: the weighted least-loaded scan beside the plain one over
/// `n` counters, per backend this CPU has, taken apart: `least` (idle, every
/// lane tied), `least-quarter-ties` (the plain scan with the ties of the
/// weighted one: a quarter of the lanes at 0, the rest at 1), and the weighted
/// scan with equal factors (`least-weighted-equal`: its arithmetic, every lane
/// tied) and with capacities 4:2:1:1 repeated (`least-weighted`: factors 1, 2,
/// 4, 4, so a quarter of the idle lanes tie at the least score). The request
/// weighs 1.
fn weighted_scan(c: &mut Criterion<CpuTime>) {
    use workerpick::scan::{self, Backend, Weighting};
    let idle = Box::new(Counters(core::array::from_fn(|_| AtomicU32::new(0))));
    let quarter = Box::new(Counters(core::array::from_fn(|i| {
        AtomicU32::new(u32::from(i % 4 != 0))
    })));
    let scale: Vec<u32> = [1, 2, 4, 4].into_iter().cycle().take(10_240).collect();
    let equal = vec![1; 10_240];
    let mut rng = Rng::with_seed(1);
    for n in [8, 1024, 10_000] {
        let (counters, quarter) = (&idle.0[..n], &quarter.0[..n]);
        let w = Weighting {
            scale: &scale[..n],
            limit: u32::MAX / 4 - 1,
            add: 1,
        };
        let same = Weighting {
            scale: &equal[..n],
            limit: u32::MAX - 1,
            add: 1,
        };
        let mut g = c.benchmark_group(format!("weighted-scan/{n}"));
        for &backend in Backend::available() {
            g.bench_function(BenchmarkId::new("least", backend.name()), |b| {
                b.iter(|| scan::least(backend, counters, None, |m| rng.below(m)))
            });
            g.bench_function(BenchmarkId::new("least-quarter-ties", backend.name()), |b| {
                b.iter(|| scan::least(backend, quarter, None, |m| rng.below(m)))
            });
            g.bench_function(BenchmarkId::new("least-weighted-equal", backend.name()), |b| {
                b.iter(|| scan::least_weighted(backend, counters, None, same, |m| rng.below(m)))
            });
            g.bench_function(BenchmarkId::new("least-weighted", backend.name()), |b| {
                b.iter(|| scan::least_weighted(backend, counters, None, w, |m| rng.below(m)))
            });
        }
        g.finish();
    }
}

/// `stale-mask/workers`: reserve + release through a handle with a mask
/// admitting half the workers, built from the current set (`fresh`), before an
/// unrelated insert (`after-insert`), and before a removal (`after-removal`),
/// per mode. Device-aware also carries cache hits as old as the mask.
fn stale_mask(c: &mut Criterion<CpuTime>) {
    use workerpick::CacheHits;
    // Every built-in, through `&dyn Selector` as a router resolving a name holds it.
    let modes: Vec<_> = Mode::ALL.iter().map(|m| (*m, m.selector())).collect();
    for n in [1024u64, 10_000] {
        let mut g = c.benchmark_group(format!("stale-mask/{n}"));
        for case in ["fresh", "after-insert", "after-removal"] {
            let pool = Pool::from_workers(0..n).unwrap();
            let half = pool.eligibility(|w| w.is_multiple_of(2));
            let hits = CacheHits::build(&pool, 4, |w| (w % 3) as u32);
            match case {
                "after-insert" => pool.insert(n).unwrap(),
                "after-removal" => pool.remove(&0).unwrap(),
                _ => {}
            }
            let mut h = pool.handle_with_rng(Rng::with_seed(1));
            for (mode, sel) in &modes {
                let req = Request::new().eligible(&half);
                let req = if *mode == Mode::DeviceAware {
                    req.cache_hits(&hits)
                } else {
                    req
                };
                g.bench_function(BenchmarkId::new(mode.name(), case), |b| {
                    b.iter(|| drop(black_box(h.reserve_with(&**sel, &req).unwrap())))
                });
            }
        }
        g.finish();
    }
}

/// `weighted-<mode>/n`: the modes over `n` workers of capacities 4:2:1:1
/// repeated (`workerpick-handle`), beside the same pool unweighted
/// (`workerpick-unweighted`): select reads the worker, reserve reads it and
/// releases. The pools are idle, as in the mode groups.
fn weighted(c: &mut Criterion<CpuTime>) {
    use workerpick::WorkerInfo;
    const UNWEIGHTED: &str = "workerpick-unweighted";
    for n in [8usize, 1024, 10_000] {
        let weighted = Pool::new();
        for w in 0..n as u64 {
            let capacity = [4, 2, 1, 1][w as usize % 4];
            weighted
                .insert_with(w, WorkerInfo::new().capacity(capacity))
                .unwrap();
        }
        let plain = Pool::from_workers(0..n as u64).unwrap();
        for mode in MODES {
            with_selector!(mode, |sel| {
                let mut g = c.benchmark_group(format!("weighted-{}/{n}", mode.name()));
                for (name, pool) in [(OURS, &weighted), (UNWEIGHTED, &plain)] {
                    let mut h = pool.handle_with_rng(Rng::with_seed(1));
                    g.bench_function(BenchmarkId::new("select", name), |b| {
                        b.iter(|| *h.select(&sel).unwrap())
                    });
                    g.bench_function(BenchmarkId::new("reserve", name), |b| {
                        b.iter(|| *h.reserve(&sel).unwrap().worker())
                    });
                }
                if mode == Mode::LeastLoaded {
                    // The unweighted pick by the weighted one's kind of scan
                    // (flat: the weighted scan reads every lane, where from
                    // 1 024 workers the unweighted one reads the bounds).
                    let flat = Pool::new().with_flat_scan();
                    flat.replace(0..n as u64).unwrap();
                    let mut h = flat.handle_with_rng(Rng::with_seed(1));
                    g.bench_function(BenchmarkId::new("reserve", "workerpick-unweighted-flat"), |b| {
                        b.iter(|| *h.reserve(&sel).unwrap().worker())
                    });
                    // The unweighted pool with the weighted one's ties: the
                    // workers at the least load are a quarter, at the places of
                    // the capacity-4 ones.
                    let held: Vec<_> = (0..n as u64)
                        .filter(|w| w % 4 != 0)
                        .map(|w| plain.reserve_worker(&w, 1).unwrap())
                        .collect();
                    let mut h = plain.handle_with_rng(Rng::with_seed(1));
                    g.bench_function(
                        BenchmarkId::new("reserve", "workerpick-unweighted-quarter"),
                        |b| b.iter(|| *h.reserve(&sel).unwrap().worker()),
                    );
                    drop(held);
                }
                g.finish();
            });
        }
        assert!(
            weighted.loads().iter().all(|&(_, l)| l == 0),
            "a bench leaked a reservation"
        );
    }
}

/// `health/n`: marking a worker unhealthy and healthy again (the transition an
/// outlier detector makes), and marking an unhealthy worker again (what it
/// calls on every further failed request).
fn health(c: &mut Criterion<CpuTime>) {
    for n in [8u64, 1024] {
        let pool = Pool::from_workers(0..n).unwrap();
        let mut g = c.benchmark_group(format!("health/{n}"));
        g.bench_function(BenchmarkId::new("mark-unmark", OURS), |b| {
            b.iter(|| {
                pool.set_healthy(black_box(&1), false).unwrap();
                pool.set_healthy(black_box(&1), true).unwrap()
            })
        });
        pool.set_healthy(&1, false).unwrap();
        g.bench_function(BenchmarkId::new("mark-again", OURS), |b| {
            b.iter(|| pool.set_healthy(black_box(&1), false).unwrap())
        });
        g.finish();
    }
}

/// `affinity/<workers>`: bounded-load affinity (ε = 0.25) reserve + read +
/// release over 4096 keys drawn in turn, beside the lock-based bounded hash
/// (`reference`, `common/bounded_hash.rs`); `bound-session`: a session bound
/// to its worker, through `Sessions` (a lookup, then a pinned booking);
/// `bound-session-pinned`: the same through one `Sessions::pin` held across
/// the run (a router's batch of requests). pingora's Ketama `select` joins
/// these groups from `benches/peers`.
fn affinity(c: &mut Criterion<CpuTime>) {
    use common::bounded_hash::BoundedHash;
    use std::time::Duration;
    use workerpick::{Affinity, Sessions, Stickiness};
    let keys: Vec<u64> = (0..4096u64)
        .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    for n in [8u64, 1024, 100_000] {
        let pool = Pool::with_max_workers(n as usize).unwrap();
        pool.replace(0..n).unwrap();
        pool.enable_affinity();
        let mode = Affinity::new();
        let mut h = pool.handle_with_rng(Rng::with_seed(1));
        let reference = BoundedHash::new(n as usize, 125);
        let sessions = Sessions::new(Duration::from_secs(3600), 1 << 16, Stickiness::Soft);
        let mut g = c.benchmark_group(format!("affinity/{n}"));
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("reserve", OURS), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                *h.reserve_with(&mode, &Request::new().key(keys[i]))
                    .unwrap()
                    .worker()
            })
        });
        g.bench_function(BenchmarkId::new("reserve", REF), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                let w = reference.reserve(keys[i]);
                reference.release(black_box(w));
            })
        });
        for &k in &keys {
            drop(sessions.reserve(&mut h, &mode, &Request::new().key(k)).unwrap());
        }
        g.bench_function(BenchmarkId::new("bound-session", OURS), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                *sessions
                    .reserve(&mut h, &mode, &Request::new().key(keys[i]))
                    .unwrap()
                    .worker()
            })
        });
        let pinned = sessions.pin();
        g.bench_function(BenchmarkId::new("bound-session-pinned", OURS), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                *pinned
                    .reserve(&mut h, &mode, &Request::new().key(keys[i]))
                    .unwrap()
                    .worker()
            })
        });
        drop(pinned);
        g.finish();
    }
}

fn config() -> Criterion<CpuTime> {
    // Thread CPU time, not wall time: see `common/cpu_time.rs`.
    settings::criterion(CpuTime)
}

/// `device-aware/n`: reserve + read the worker + release, half the workers
/// loaded by one (`loaded`, so the minimum is not every lane): least-loaded
/// beside device-aware on a fleet of accelerators only (where it is
/// least-loaded's pick), both with a mask admitting half the workers, and
/// device-aware on a fleet with one CPU in 8 (its own rule, one pass).
///
/// The mixed fleet is built worker by worker (`insert_with`: there is no
/// batch insert with attributes), each insert publishing a snapshot, so its
/// setup grows with the square of `n`: about four minutes at 100 000 on two
/// cores. A smoke run (`--test`, as CI runs every bench once) stops at
/// 10 000, which takes the same paths.
fn device(c: &mut Criterion<CpuTime>) {
    use workerpick::{DeviceAware, DeviceKind, WorkerInfo};
    let smoke = std::env::args().any(|a| a == "--test");
    for n in [64u64, 1024, 10_000, 100_000] {
        if smoke && n > 10_000 {
            break;
        }
        let mut g = c.benchmark_group(format!("device-aware/{n}"));
        let one_kind = Pool::with_max_workers(1 << 17).unwrap();
        one_kind.replace(0..n).unwrap();
        let mixed = Pool::with_max_workers(1 << 17).unwrap();
        for w in 0..n {
            let kind = if w % 8 == 0 {
                DeviceKind::Cpu
            } else {
                DeviceKind::Accelerator
            };
            mixed.insert_with(w, WorkerInfo::new().device(kind)).unwrap();
        }
        let mut held = Vec::new();
        for pool in [&one_kind, &mixed] {
            held.extend(
                (0..n)
                    .filter(|w| w % 2 == 0)
                    .map(|w| pool.reserve_worker(&w, 1).unwrap()),
            );
        }
        let half = one_kind.eligibility(|w| w % 4 < 2);
        let da = DeviceAware::new();
        let ll = LeastLoaded::new();
        let mut h = one_kind.handle_with_rng(Rng::with_seed(1));
        samples_for(&mut g, n as usize / 4);
        g.bench_function(BenchmarkId::new("least-loaded", "one-kind"), |b| {
            b.iter(|| *h.reserve(&ll).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("device-aware", "one-kind"), |b| {
            b.iter(|| *h.reserve(&da).unwrap().worker())
        });
        let masked = Request::new().eligible(&half);
        g.bench_function(BenchmarkId::new("least-loaded", "one-kind-masked"), |b| {
            b.iter(|| *h.reserve_with(&ll, &masked).unwrap().worker())
        });
        g.bench_function(BenchmarkId::new("device-aware", "one-kind-masked"), |b| {
            b.iter(|| *h.reserve_with(&da, &masked).unwrap().worker())
        });
        let mut m = mixed.handle_with_rng(Rng::with_seed(1));
        g.bench_function(BenchmarkId::new("device-aware", "mixed"), |b| {
            b.iter(|| *m.reserve(&da).unwrap().worker())
        });
        g.finish();
        drop(held);
    }
}

/// `masked/n`: least-loaded reserve + release over `n` workers, unmasked
/// beside a mask admitting half of them, on an idle pool (`idle`, `idle-half`)
/// and on one with every even worker at load 1: a mask admitting half the
/// idle ones among its half (`loaded-half`), and one admitting only the loaded
/// ones (`loaded-half-above`: the admitted minimum lies above every block's
/// least load, which the bounds cannot see, so it scans flat).
fn masked(c: &mut Criterion<CpuTime>) {
    for n in [1024u64, 16_384, 100_000] {
        let mut g = c.benchmark_group(format!("masked/{n}"));
        samples_for(&mut g, n as usize / 4);
        let ll = LeastLoaded::new();
        for loaded in [false, true] {
            let pool = Pool::with_max_workers(1 << 17).unwrap();
            pool.replace(0..n).unwrap();
            let _held: Vec<_> = (0..n)
                .filter(|w| loaded && w % 2 == 0)
                .map(|w| pool.reserve_worker(&w, 1).unwrap())
                .collect();
            let mut h = pool.handle_with_rng(Rng::with_seed(1));
            let name = if loaded { "loaded" } else { "idle" };
            g.bench_function(BenchmarkId::new("least-loaded", name), |b| {
                b.iter(|| *h.reserve(&ll).unwrap().worker())
            });
            let half = pool.eligibility(|w| w % 4 < 2);
            let req = Request::new().eligible(&half);
            g.bench_function(BenchmarkId::new("least-loaded", format!("{name}-half")), |b| {
                b.iter(|| *h.reserve_with(&ll, &req).unwrap().worker())
            });
            if loaded {
                let above = pool.eligibility(|w| w % 2 == 0);
                let req = Request::new().eligible(&above);
                g.bench_function(BenchmarkId::new("least-loaded", "loaded-half-above"), |b| {
                    b.iter(|| *h.reserve_with(&ll, &req).unwrap().worker())
                });
            }
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = floor, scan, weighted_scan, modes, few_ties, stale_mask, reported, large, weighted, health, affinity, device, masked
}
criterion_main!(benches);
