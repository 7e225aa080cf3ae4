//! Instruction-count gates on the prefix index, under callgrind: a lookup of
//! a 128-block prompt (with the `CacheHits` fill a cost pick reads) on a
//! fleet where 64 of 256 workers hold 1-128 leading blocks, and applying a
//! stored + removed event of 16 blocks. Budgets in `iai/budgets.toml`, run
//! with the gate by `ci/iai.sh`; a binary of its own, like `pairs`, so that
//! its code does not move the gate's.

mod common;

use common::budget;
use gungraun::{library_benchmark, library_benchmark_group, main};
use std::hint::black_box;
use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
use workerpick::{CacheHits, Pool};

/// Operations per benchmark.
const OPS: u32 = 10;

enum IndexOp {
    Lookup,
    StoreRemove,
}

type Case = (
    &'static Pool<u32>,
    PrefixIndex<u32>,
    Vec<BlockKey>,
    Matches,
    CacheHits,
    IndexOp,
);

fn case(op: IndexOp) -> Case {
    let pool: &'static Pool<u32> = Box::leak(Box::new(Pool::from_workers(0..256).expect("distinct")));
    let index = PrefixIndex::new(
        IndexConfig::exact(16)
            .capacity(4096)
            .entries(8192)
            .max_holders(256),
    )
    .expect("valid");
    let keys: Vec<BlockKey> = (0..128).map(|i| BlockKey::from_raw(i * 7919 + 1)).collect();
    for w in 0..64u32 {
        index
            .stored(pool, &(w * 4), 0, &keys[..(w as usize * 13) % 128 + 1])
            .expect("member");
    }
    let mut case = (pool, index, keys, Matches::new(), CacheHits::new(), op);
    run(&mut case, 1);
    case
}

fn run((pool, index, keys, found, hits, op): &mut Case, ops: u32) {
    for i in 0..ops {
        match op {
            IndexOp::Lookup => {
                index.lookup(black_box(keys), found);
                found.fill(pool, hits);
            }
            IndexOp::StoreRemove => {
                let w = 1 + (i % 64) * 4;
                let batch = &keys[64..80];
                index.stored(pool, &w, 0, black_box(batch)).expect("member");
                index.removed(&w, 0, black_box(batch));
            }
        }
    }
    black_box(hits.needed());
}

#[library_benchmark]
#[bench::prefix_lookup_256(args = (IndexOp::Lookup), setup = case, config = budget("prefix_lookup_256"))]
#[bench::prefix_store_remove_16(args = (IndexOp::StoreRemove), setup = case, config = budget("prefix_store_remove_16"))]
fn index(mut case: Case) -> Case {
    run(&mut case, OPS);
    case
}

library_benchmark_group!(name = prefix, benchmarks = index);
main!(library_benchmark_groups = prefix);
