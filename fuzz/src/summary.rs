//! Target `summary`: least-loaded on a summarised pool. The pool has the
//! default slot limit (2^16), so it keeps a lower bound per block of 256
//! lanes, and 1 024 to 2 047 workers, so every unmasked least-loaded pick
//! takes the summarised path across 4 to 8 blocks. After any sequence of bookings (held or
//! dropped), releases, reported loads, health marks, drains and membership
//! changes, every least-loaded pick lands on a worker at the least effective
//! load, read back from the pool just before it; and when everything is
//! released no load is left.
//!
//! Capacities (op `Capacity`) make the pool weighted: every least-loaded
//! pick of weight 1 then takes the summarised path over scores (per-block
//! bounds on `(load + 1) / capacity`, `bounds::scores`), and lands on a
//! worker at the least `(load + r) / capacity`, exactly.
//!
//! The oracle is the pool's own read-out (`loads`, `reported_load`,
//! `is_draining`, `is_healthy`, `info`): the op model of target `ops` checks
//! those against a model; this target checks that the summarised pick agrees
//! with them, which a bound left above its block's least counter (or least
//! score) would break.

use arbitrary::{Arbitrary, Unstructured};
use std::collections::HashMap;
use workerpick::{LeastLoaded, Pool, Request, Reservation, Rng};

/// Workers named by ops are `0..n + OUTSIDE`: some are not members.
const OUTSIDE: u32 = 64;

/// One scenario.
#[derive(Arbitrary, Debug)]
pub struct Input {
    pub seed: u64,
    /// `1024 + workers % 1024` workers at the start.
    pub workers: u16,
    pub ops: Vec<Op>,
}

/// One step. Workers are named by `u16`, taken modulo `n + OUTSIDE`.
#[derive(Arbitrary, Debug)]
pub enum Op {
    /// A least-loaded reserve of weight `1 + weight % 4`, checked; held if `keep`.
    Pick {
        weight: u8,
        keep: bool,
    },
    /// A least-loaded select, checked.
    Select,
    /// `reserve_worker` on `len % 512` workers from `from`, held.
    Fill {
        from: u16,
        len: u16,
        weight: u8,
    },
    /// Drops held reservation `at`, or `len % 64` of them from there.
    Release {
        at: u16,
        len: u8,
    },
    /// Another router's figure for a worker.
    Report {
        worker: u16,
        load: u16,
    },
    Health {
        worker: u16,
        healthy: bool,
    },
    Drain {
        worker: u16,
        on: bool,
    },
    Remove {
        worker: u16,
    },
    Insert {
        worker: u16,
    },
    Reclaim,
    /// `set_capacity(worker, 1 + capacity % 4)`.
    Capacity {
        worker: u16,
        capacity: u8,
    },
}

/// Decodes `data` as libFuzzer's `fuzz_target!` does and runs it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// The workers a least-loaded pick may choose, each with its effective load
/// (bookings plus reports) and capacity: the members that are not draining,
/// narrowed to the healthy ones while there is one.
fn candidates(pool: &Pool<u32>) -> HashMap<u32, (u32, u32)> {
    let mut all = HashMap::new();
    let mut healthy = HashMap::new();
    for (w, booked) in pool.loads() {
        if pool.is_draining(&w) == Some(true) {
            continue;
        }
        let load = booked.saturating_add(pool.reported_load(&w).unwrap_or(0));
        let capacity = pool.info(&w).map_or(1, |i| i.capacity_weight());
        all.insert(w, (load, capacity));
        if pool.is_healthy(&w) == Some(true) {
            healthy.insert(w, (load, capacity));
        }
    }
    if healthy.is_empty() { all } else { healthy }
}

/// `(load + r) / capacity` as a fraction, compared by cross-multiplication.
fn ratio((load, capacity): (u32, u32), r: u32) -> (u64, u64) {
    (u64::from(load) + u64::from(r), u64::from(capacity.max(1)))
}

/// Checks a pick's answer for a request of weight `r` against the candidates
/// read just before it: the least `(load + r) / capacity`.
fn check(before: &HashMap<u32, (u32, u32)>, r: u32, got: Option<u32>, what: &str, checked: &mut usize) {
    *checked += 1;
    let below = |a: (u64, u64), b: (u64, u64)| a.0 * b.1 < b.0 * a.1;
    let least = before
        .values()
        .map(|&c| ratio(c, r))
        .reduce(|a, b| if below(b, a) { b } else { a });
    match (got, least) {
        (None, None) => {}
        (Some(w), Some(least)) => {
            let Some(&c) = before.get(&w) else {
                panic!("{what} chose {w}: not a candidate");
            };
            let got = ratio(c, r);
            assert!(
                !below(least, got),
                "{what} chose {w} at {got:?} (load + {r}, capacity): the least is {least:?}"
            );
        }
        (got, least) => panic!("{what}: chose {got:?} with the least candidate ratio {least:?}"),
    }
}

/// Replays `input` on a summarised pool, checking every pick; how many picks
/// it checked.
pub fn run(input: Input) -> usize {
    let n = 1024 + u32::from(input.workers) % 1024;
    let pool = Pool::from_workers(0..n).expect("distinct workers");
    let mut h = pool.handle_with_rng(Rng::with_seed(input.seed));
    let mut held: Vec<Reservation<'_, u32>> = Vec::new();
    let worker = |w: u16| u32::from(w) % (n + OUTSIDE);
    let ll = LeastLoaded::new();
    let mut checked = 0;
    for op in input.ops {
        match op {
            Op::Pick { weight, keep } => {
                let before = candidates(&pool);
                let r = 1 + u32::from(weight % 4);
                let got = h.reserve_with(&ll, &Request::new().weight(r)).ok();
                check(
                    &before,
                    r,
                    got.as_ref().map(|r| *r.worker()),
                    "reserve",
                    &mut checked,
                );
                held.extend(got.filter(|_| keep));
            }
            Op::Select => {
                let before = candidates(&pool);
                check(&before, 1, h.select(&ll).ok().copied(), "select", &mut checked);
            }
            Op::Fill { from, len, weight } => {
                for w in (0..u32::from(len % 512)).map(|i| worker(from.wrapping_add(i as u16))) {
                    held.extend(pool.reserve_worker(&w, 1 + u32::from(weight % 4)).ok());
                }
            }
            Op::Release { at, len } => {
                if !held.is_empty() {
                    let at = usize::from(at) % held.len();
                    let end = held.len().min(at + 1 + usize::from(len % 64));
                    held.drain(at..end);
                }
            }
            Op::Report { worker: w, load } => {
                pool.report_load(&worker(w), u32::from(load));
            }
            Op::Health { worker: w, healthy } => {
                let _ = pool.set_healthy(&worker(w), healthy);
            }
            Op::Drain { worker: w, on } => {
                let _ = if on {
                    pool.drain(&worker(w))
                } else {
                    pool.resume(&worker(w))
                };
            }
            Op::Remove { worker: w } => {
                let _ = pool.remove(&worker(w));
            }
            Op::Insert { worker: w } => {
                let _ = pool.insert(worker(w));
            }
            Op::Reclaim => {
                pool.reclaim();
            }
            Op::Capacity { worker: w, capacity } => {
                let _ = pool.set_capacity(&worker(w), 1 + u32::from(capacity % 4));
            }
        }
    }
    drop(held);
    assert!(
        pool.loads().iter().all(|&(_, booked)| booked == 0),
        "load left after every reservation was dropped"
    );
    let before = candidates(&pool);
    check(
        &before,
        1,
        h.select(&ll).ok().copied(),
        "select after the releases",
        &mut checked,
    );
    checked
}
