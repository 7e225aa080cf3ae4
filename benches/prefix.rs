//! The prefix index: a lookup of a 128-block prompt, and applying events,
//! beside a reference that follows Dynamo's design (a radix tree of block
//! hashes under one `RwLock`, each node with a `HashSet` of workers; a lookup
//! walks the prompt down the tree and scores each worker by the depth it is
//! last seen at). Groups are `prefix-lookup/workers` and `prefix-apply`:
//!
//! - `prefix-lookup/1024`: 1 024 workers, every other one holding the first
//!   1-128 blocks of the prompt (512 holders);
//! - `prefix-lookup/100000`: 100 000 workers, each holding 8 blocks of its
//!   own, and 512 of them (spread over the numbering) a prefix of the prompt
//!   as above: the lookup's time is in the holders it meets, not the pool;
//! - `prefix-apply/store-remove`: one "stored" event of 16 blocks and its
//!   "removed" (32 block events), on an index of 1 024 holders.
//!
//! - then, outside criterion, a reader's lookup latencies (p50, p99, p99.9)
//!   on the 1 024-worker fleet while a second thread applies ~1 M block
//!   events/s (stored and removed batches of 16 blocks on other prompts),
//!   for ours and the reference (whose writer takes the write lock).
//!
//! `workerpick` is `lookup` into `Matches` then `Matches::fill` into the
//! `CacheHits` a cost pick reads; `workerpick-lookup` the lookup alone;
//! `reference` the radix tree's scores (a `HashMap` of worker to depth).

mod common;

use common::cpu_time::CpuTime;
use common::results::{Results, facts, load_average};
use common::settings;
use criterion::{BenchmarkId, Criterion};
use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::RwLock;
use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex, keys_of_tokens};
use workerpick::{CacheHits, Pool};

const PROMPT_BLOCKS: usize = 128;

/// A Dynamo-style radix tree: children by block key, workers per node.
#[derive(Default)]
struct Node {
    children: HashMap<u64, Node>,
    workers: HashSet<u32>,
}

#[derive(Default)]
struct Reference(RwLock<Node>);

impl Reference {
    fn stored(&self, worker: u32, keys: &[BlockKey]) {
        let mut root = self.0.write().unwrap();
        let mut at = &mut *root;
        for k in keys {
            at = at.children.entry(k.raw()).or_default();
            at.workers.insert(worker);
        }
    }

    fn find_matches(&self, keys: &[BlockKey]) -> HashMap<u32, u32> {
        let root = self.0.read().unwrap();
        let mut scores = HashMap::new();
        let mut at = &*root;
        for (depth, k) in keys.iter().enumerate() {
            let Some(next) = at.children.get(&k.raw()) else {
                break;
            };
            for &w in &next.workers {
                scores.insert(w, depth as u32 + 1);
            }
            at = next;
        }
        scores
    }
}

fn prompt(seed: u32) -> Vec<BlockKey> {
    let tokens: Vec<u32> = (0..(PROMPT_BLOCKS * 16) as u32)
        .map(|t| t.wrapping_mul(2_654_435_761) ^ seed)
        .collect();
    let mut keys = Vec::new();
    keys_of_tokens(&tokens, 16, 0, &mut keys);
    keys
}

struct Fleet {
    pool: Pool<u32>,
    index: PrefixIndex<u32>,
    reference: Reference,
    prompt: Vec<BlockKey>,
}

/// `n` workers; `holders` of them, spread evenly, hold a prefix of the
/// prompt (1-128 blocks); with `own`, every worker also holds 8 blocks of
/// its own first (so it has a holder number).
fn fleet(n: u32, holders: u32, own: bool) -> Fleet {
    let pool = Pool::with_max_workers(n as usize).unwrap();
    // One snapshot for the whole set: inserting one by one publishes a
    // snapshot per insert, O(n) each (222 s for 100 000 workers).
    pool.replace(0..n).unwrap();
    let config = IndexConfig::exact(16)
        .capacity(if own { 1 << 20 } else { 1 << 12 })
        .entries(if own { 1 << 21 } else { 1 << 14 })
        .max_holders(n);
    let index = PrefixIndex::new(config).unwrap();
    let reference = Reference::default();
    if own {
        for w in 0..n {
            let mine = prompt(w + 1);
            index.stored(&pool, &w, 0, &mine[..8]).unwrap();
            reference.stored(w, &mine[..8]);
        }
    }
    let p = prompt(0);
    let stride = n / holders;
    for i in 0..holders {
        let w = i * stride;
        let depth = (i as usize * 7) % PROMPT_BLOCKS + 1;
        index.stored(&pool, &w, 0, &p[..depth]).unwrap();
        reference.stored(w, &p[..depth]);
    }
    assert_eq!(index.stats().dropped_full, 0);
    Fleet {
        pool,
        index,
        reference,
        prompt: p,
    }
}

fn lookup(c: &mut Criterion<CpuTime>) {
    for (n, own) in [(1024u32, false), (100_000, true)] {
        let f = fleet(n, 512, own);
        let mut g = c.benchmark_group(format!("prefix-lookup/{n}"));
        g.sample_size(settings::samples(50));
        let (mut m, mut hits) = (Matches::new(), CacheHits::new());
        f.index.lookup(&f.prompt, &mut m);
        assert_eq!(m.iter().count(), 512);
        assert_eq!(f.reference.find_matches(&f.prompt).len(), 512);
        g.bench_function(BenchmarkId::new("lookup-fill", "workerpick"), |b| {
            b.iter(|| {
                f.index.lookup(black_box(&f.prompt), &mut m);
                m.fill(&f.pool, &mut hits);
            })
        });
        g.bench_function(BenchmarkId::new("lookup", "workerpick"), |b| {
            b.iter(|| f.index.lookup(black_box(&f.prompt), &mut m))
        });
        g.bench_function(BenchmarkId::new("lookup", "reference"), |b| {
            b.iter(|| f.reference.find_matches(black_box(&f.prompt)))
        });
        g.finish();
    }
}

fn apply(c: &mut Criterion<CpuTime>) {
    let f = fleet(1024, 512, false);
    let batch = &prompt(99)[..16];
    let mut g = c.benchmark_group("prefix-apply");
    let mut w = 0u32;
    g.bench_function(BenchmarkId::new("store-remove-16", "workerpick"), |b| {
        b.iter(|| {
            w = (w + 1) % 1024;
            f.index.stored(&f.pool, &w, 0, black_box(batch)).unwrap();
            f.index.removed(&w, 0, black_box(batch));
        })
    });
    g.finish();
}

/// Lookup latencies while a writer applies `rate` block events per second
/// for `secs`: (p50, p99, p99.9) in ns and the events applied per second.
fn contended(f: &Fleet, reference: bool, rate: f64, secs: f64) -> ([f64; 3], f64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let stop = AtomicBool::new(false);
    let batches: Vec<Vec<BlockKey>> = (0..64).map(|i| prompt(1000 + i)[..16].to_vec()).collect();
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let start = Instant::now();
            let mut events = 0u64;
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let due = (start.elapsed().as_secs_f64() * rate) as u64;
                if events >= due {
                    std::hint::spin_loop();
                    continue;
                }
                let (w, batch) = ((i % 1024) as u32, &batches[i % 64]);
                if reference {
                    f.reference.stored(w, batch);
                    let mut root = f.reference.0.write().unwrap();
                    if let Some(n) = root.children.get_mut(&batch[0].raw()) {
                        n.workers.remove(&w);
                    }
                } else {
                    f.index.stored(&f.pool, &w, 0, batch).unwrap();
                    f.index.removed(&w, 0, batch);
                }
                events += 32;
                i += 1;
            }
            events as f64 / start.elapsed().as_secs_f64()
        });
        let mut lat = Vec::with_capacity(1 << 20);
        let mut m = Matches::new();
        let until = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < until {
            let t = Instant::now();
            if reference {
                black_box(f.reference.find_matches(&f.prompt));
            } else {
                f.index.lookup(black_box(&f.prompt), &mut m);
            }
            lat.push(t.elapsed().as_nanos() as f64);
        }
        stop.store(true, Ordering::Relaxed);
        let rate = writer.join().unwrap();
        lat.sort_by(f64::total_cmp);
        let q = |x: f64| lat[((lat.len() - 1) as f64 * x) as usize];
        ([q(0.5), q(0.99), q(0.999)], rate)
    })
}

fn table(r: &Results) -> String {
    let mut out = String::from(
        "| workers | lookup + fill | lookup | reference | ratio |\n|---:|---:|---:|---:|---:|\n",
    );
    for n in [1024, 100_000] {
        let id = |f: &str, p: &str| format!("prefix-lookup/{n}/{f}/{p}");
        out += &format!(
            "| {} | {} | {} | {} | {} |\n",
            common::results::thousands(n),
            r.cell(&id("lookup-fill", "workerpick")),
            r.cell(&id("lookup", "workerpick")),
            r.cell(&id("lookup", "reference")),
            r.ratio(&id("lookup", "reference"), &id("lookup-fill", "workerpick")),
        );
    }
    out += &format!(
        "\nApply, one stored and one removed event of 16 blocks each (32 block events): {}\n",
        r.cell("prefix-apply/store-remove-16/workerpick")
    );
    out
}

fn main() {
    let (start, load) = (std::time::SystemTime::now(), load_average());
    let mut c = settings::criterion(CpuTime).configure_from_args();
    lookup(&mut c);
    apply(&mut c);
    c.final_summary();
    let secs = if common::test_mode() { 0.05 } else { 3.0 };
    let f = fleet(1024, 512, false);
    let mut lines = String::from(
        "| while a writer applies ~1 M block events/s | lookup p50 | p99 | p99.9 | events/s applied |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, reference) in [("workerpick", false), ("reference", true)] {
        let ([p50, p99, p999], rate) = contended(&f, reference, 1e6, secs);
        lines += &format!(
            "| {name} | {} | {} | {} | {} |\n",
            common::results::time(p50),
            common::results::time(p99),
            common::results::time(p999),
            common::results::thousands(rate as u64)
        );
    }
    if !common::test_mode() {
        let r = Results::since(start);
        println!("\n{}\n\n{}\n{lines}", facts("prefix", &load), table(&r));
    }
}
