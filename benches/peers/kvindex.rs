//! The prefix index beside SMG's `kv-index` crate (its `ChainIndex`, the
//! lock-free index of SGLang's model gateway), on the same fleet in one run:
//! 1 024 workers (the most a `ChainIndex` takes), every other one holding
//! the first 1-128 blocks of a 128-block prompt of 16-token blocks, each
//! stored as one event chain. Group `prefix-lookup/1024`: `workerpick` is a
//! lookup into `Matches`, `kv-index` its `find_matches` (a map of worker to
//! depth). Both are given what their API takes per request: our chained
//! keys, its content hashes (both computed outside the timed loop).

use criterion::{BenchmarkId, Criterion};
use kv_index::{
    ChainBlockMap, ChainIndex, ContentHash, SequenceHash, StoredBlock, chain_prefix_hash,
    compute_content_hash,
};
use std::hint::black_box;
use std::time::Duration;
use workerpick::Pool;
use workerpick::prefix::{IndexConfig, Matches, PrefixIndex, keys_of_tokens};

const WORKERS: u32 = 1024;
const BLOCKS: usize = 128;

fn main() {
    let tokens: Vec<u32> = (0..(BLOCKS * 16) as u32)
        .map(|t| t.wrapping_mul(2_654_435_761))
        .collect();
    let mut keys = Vec::new();
    keys_of_tokens(&tokens, 16, 0, &mut keys);
    let contents: Vec<ContentHash> = tokens.chunks_exact(16).map(compute_content_hash).collect();
    let mut seqs = vec![SequenceHash(contents[0].0)];
    for &c in &contents[1..] {
        let prev = *seqs.last().expect("one");
        seqs.push(chain_prefix_hash(prev, c));
    }
    let blocks: Vec<StoredBlock> = seqs
        .iter()
        .zip(&contents)
        .map(|(&seq_hash, &content_hash)| StoredBlock {
            seq_hash,
            content_hash,
        })
        .collect();

    let pool = Pool::from_workers(0..WORKERS).expect("distinct");
    let ours = PrefixIndex::new(
        IndexConfig::exact(16)
            .capacity(1 << 12)
            .entries(1 << 14)
            .max_holders(WORKERS),
    )
    .expect("valid");
    let peer = ChainIndex::with_max_workers(WORKERS as usize);
    let mut maps: Vec<ChainBlockMap> = Vec::new();
    for i in 0..WORKERS / 2 {
        let w = i * 2;
        let depth = (i as usize * 7) % BLOCKS + 1;
        ours.stored(&pool, &w, 0, &keys[..depth]).expect("member");
        let id = peer.intern_worker(&format!("w{w}")).expect("room");
        let mut map = ChainBlockMap::new();
        peer.apply_stored(id, &blocks[..depth], None, &mut map)
            .expect("applies");
        maps.push(map);
    }
    let mut found = Matches::new();
    ours.lookup(&keys, &mut found);
    let theirs = peer.find_matches(&contents, false);
    assert_eq!(found.iter().count(), 512);
    assert_eq!(theirs.scores.len(), 512);
    let mut ours_total: Vec<u32> = found.iter().map(|(_, n)| n).collect();
    let mut theirs_total: Vec<u32> = theirs.scores.values().copied().collect();
    ours_total.sort_unstable();
    theirs_total.sort_unstable();
    assert_eq!(ours_total, theirs_total, "the two indexes disagree");

    let ms = std::env::var("WORKERPICK_BENCH_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600u64);
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(ms / 3))
        .measurement_time(Duration::from_millis(ms))
        .configure_from_args();
    let mut g = c.benchmark_group(format!("prefix-lookup/{WORKERS}"));
    g.bench_function(BenchmarkId::new("lookup", "workerpick"), |b| {
        b.iter(|| ours.lookup(black_box(&keys), &mut found))
    });
    g.bench_function(BenchmarkId::new("lookup", "kv-index"), |b| {
        b.iter(|| peer.find_matches(black_box(&contents), false))
    });
    g.finish();
    c.final_summary();
    black_box(&maps);
}
