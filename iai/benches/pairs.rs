//! Instruction-count gates on prefill/decode pair picks, under callgrind,
//! beside one least-loaded booking on the same pools: a pair books twice,
//! and what it costs beyond its two bookings shows here. Budgets in
//! `iai/budgets.toml`, run with the gate by `ci/iai.sh`. A binary of its own:
//! in the gate's, these benchmarks moved the code generated for the gate's
//! membership benchmarks (std's hasher stopped being inlined there, +15 %).

mod common;

use common::budget;
use gungraun::{library_benchmark, library_benchmark_group, main};
use std::hint::black_box;
use workerpick::{Decider, Handle, LeastLoaded, PairRequest, Pairs, Pool, Request, Rng};

/// Operations per benchmark, as in the gate.
const OPS: u32 = 100;

/// How a pair benchmark books.
enum PairOp {
    /// `Pairs::reserve` of a disaggregated pair (512 uncached tokens over a
    /// threshold of 256), hand-off, release: two bookings, one per pool.
    Disaggregate,
    /// `Pairs::reserve` of a local pair (64 tokens), hand-off, release: one
    /// booking on the decode worker and its prefill share given back.
    Local,
    /// One least-loaded reserve + release on the decode pool (the default
    /// request), for the ratio.
    Single,
    /// The same with the prefill side's request (weight 512, not a
    /// constant): what each side of a pair books.
    SingleWeighted,
}

type PairCase = (Pairs<Handle<'static, u64>, Handle<'static, u64>>, PairOp);

/// A prefill and a decode pool of `workers` each, and the pairs over them.
fn pair_case((op, workers): (PairOp, u64)) -> PairCase {
    let pool = |seed| -> Handle<'static, u64> {
        let pool: &'static Pool<u64> = Box::leak(Box::new(Pool::from_workers(0..workers).expect("distinct")));
        pool.handle_with_rng(Rng::with_seed(seed))
    };
    let mut case = (Pairs::new(pool(2), pool(3), Decider::new(256)), op);
    run_pairs(&mut case, 1);
    case
}

fn run_pairs((pairs, op): &mut PairCase, ops: u32) {
    let ll = LeastLoaded::new();
    let (split, local) = (
        PairRequest::new(Request::new().weight(512), Request::new()),
        PairRequest::new(Request::new().weight(64), Request::new()),
    );
    for _ in 0..ops {
        match op {
            PairOp::Disaggregate | PairOp::Local => {
                let req = if let PairOp::Local = op { &local } else { &split };
                let mut p = pairs.reserve(black_box(&ll), black_box(&ll), req).ok();
                if let Some(p) = &mut p {
                    p.hand_off();
                }
                black_box(p.map(|p| *p.decode()));
            }
            PairOp::Single => {
                let r = pairs.decode_handle().reserve(black_box(&ll)).ok();
                black_box(r.map(|r| *r.worker()));
            }
            PairOp::SingleWeighted => {
                let r = pairs
                    .decode_handle()
                    .reserve_with(black_box(&ll), split.get_prefill())
                    .ok();
                black_box(r.map(|r| *r.worker()));
            }
        }
    }
}

#[library_benchmark]
#[bench::pair_disaggregate_8(args = ((PairOp::Disaggregate, 8)), setup = pair_case, config = budget("pair_disaggregate_8"))]
#[bench::pair_local_8(args = ((PairOp::Local, 8)), setup = pair_case, config = budget("pair_local_8"))]
#[bench::pair_single_8(args = ((PairOp::Single, 8)), setup = pair_case, config = budget("pair_single_8"))]
#[bench::pair_single_weighted_8(args = ((PairOp::SingleWeighted, 8)), setup = pair_case, config = budget("pair_single_weighted_8"))]
#[bench::pair_disaggregate_1024(args = ((PairOp::Disaggregate, 1024)), setup = pair_case, config = budget("pair_disaggregate_1024"))]
#[bench::pair_single_1024(args = ((PairOp::Single, 1024)), setup = pair_case, config = budget("pair_single_1024"))]
fn pair(mut case: PairCase) -> PairCase {
    run_pairs(&mut case, OPS);
    case
}

library_benchmark_group!(name = pairs, benchmarks = pair);
main!(library_benchmark_groups = pairs);
