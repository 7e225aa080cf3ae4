//! Target `prefix`: an arbitrary sequence of events, routing decisions,
//! clears, pool changes and clock moves on a `PrefixIndex`, replayed on a
//! model that keeps, per (worker, rank), the blocks stored and the routed
//! blocks with their expiry. Every lookup credits each rank exactly its
//! leading blocks in the model while the index had room; on an index too
//! small for the input, never more than the model (a full index may miss
//! blocks, never invent them).

use arbitrary::{Arbitrary, Unstructured};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
use workerpick::{CacheHits, Pool, WorkerInfo};

const WORKERS: u8 = 4;
const RANKS: u32 = 2;
const TTL: u64 = 1_000;

/// One scenario.
#[derive(Debug)]
pub struct Input {
    /// A 6-block index (it fills) instead of one with room for everything.
    tiny: bool,
    ops: Vec<Op>,
}

/// Up to 8 blocks of `0..12` (fixed-size, so that one op's blocks do not
/// swallow the rest of the input).
#[derive(Arbitrary, Debug)]
pub struct Ids {
    len: u8,
    ids: [u8; 8],
}

/// One step.
#[derive(Arbitrary, Debug)]
pub enum Op {
    Stored(u8, u8, Ids),
    Removed(u8, u8, Ids),
    Routed(u8, u8, Ids),
    Cleared(u8, Option<u8>),
    Rejoin(u8, bool),
    Degraded(u8, u8, bool),
    Advance(u16),
    Lookup(Ids),
}

type Holder = (u8, u32);

#[derive(Default)]
struct Model {
    stored: HashMap<Holder, HashSet<u64>>,
    routed: HashMap<(Holder, u64), u64>,
    degraded: HashSet<Holder>,
    /// The holders the index has a record of (a store or route made one).
    known: HashSet<Holder>,
    now: u64,
}

impl Model {
    fn holds(&self, h: Holder, k: u64) -> bool {
        self.stored.get(&h).is_some_and(|s| s.contains(&k))
            || self.routed.get(&(h, k)).is_some_and(|&e| e > self.now)
    }

    fn credit(&self, h: Holder, prompt: &[u64]) -> u32 {
        if self.degraded.contains(&h) {
            return 0;
        }
        prompt.iter().take_while(|&&k| self.holds(h, k)).count() as u32
    }

    fn forget(&mut self, w: u8, rank: Option<u32>) {
        let hit = |h: &Holder| h.0 == w && rank.is_none_or(|r| r == h.1);
        self.stored.retain(|h, _| !hit(h));
        self.routed.retain(|(h, _), _| !hit(h));
        self.degraded.retain(|h| !hit(h));
        self.known.retain(|h| !hit(h));
    }
}

fn blocks(ids: &Ids) -> Vec<u64> {
    ids.ids[..usize::from(ids.len % 9)]
        .iter()
        .map(|&b| u64::from(b % 12))
        .collect()
}

fn keys(ids: &[u64]) -> Vec<BlockKey> {
    ids.iter().map(|&k| BlockKey::from_raw(k)).collect()
}

/// Decodes `data` (a flag, then ops until the bytes run out: no "one more?"
/// byte between them, so random bytes make long scenarios too) and runs it.
pub fn run_bytes(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(tiny) = bool::arbitrary(&mut u) else {
        return;
    };
    let mut ops = Vec::new();
    while !u.is_empty() {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    run(Input { tiny, ops });
}

/// Replays `input` on an index and on the model, checking every lookup.
pub fn run(input: Input) {
    let pool = Pool::new();
    for w in 0..WORKERS {
        pool.insert_with(w, WorkerInfo::new().ranks(RANKS)).unwrap();
    }
    let size = if input.tiny { 6 } else { 64 };
    let config = IndexConfig::exact(16)
        .capacity(size)
        .entries(size)
        .max_holders(u32::from(WORKERS) * RANKS)
        .manual_clock()
        .routed_ttl(Duration::from_millis(TTL));
    let index = PrefixIndex::new(config).unwrap();
    let mut model = Model::default();
    let (mut found, mut hits) = (Matches::new(), CacheHits::new());
    for op in input.ops.into_iter().take(200) {
        match op {
            Op::Stored(w, r, ids) => {
                let h = (w % WORKERS, u32::from(r) % RANKS);
                let ks = blocks(&ids);
                index.stored(&pool, &h.0, h.1, &keys(&ks)).unwrap();
                model.known.insert(h);
                model.stored.entry(h).or_default().extend(ks);
            }
            Op::Removed(w, r, ids) => {
                let h = (w % WORKERS, u32::from(r) % RANKS);
                let ks = blocks(&ids);
                index.removed(&h.0, h.1, &keys(&ks));
                for k in ks {
                    model.stored.entry(h).or_default().remove(&k);
                    model.routed.remove(&(h, k));
                }
            }
            Op::Routed(w, r, ids) => {
                let h = (w % WORKERS, u32::from(r) % RANKS);
                let ks = blocks(&ids);
                index.routed(&pool, &h.0, h.1, &keys(&ks)).unwrap();
                model.known.insert(h);
                for k in ks {
                    if !model.stored.get(&h).is_some_and(|s| s.contains(&k)) {
                        model.routed.insert((h, k), model.now + TTL);
                    }
                }
            }
            Op::Cleared(w, r) => {
                let rank = r.map(|r| u32::from(r) % RANKS);
                index.cleared(&(w % WORKERS), rank);
                model.forget(w % WORKERS, rank);
            }
            Op::Rejoin(w, retain) => {
                let w = w % WORKERS;
                pool.remove(&w).unwrap();
                pool.insert_with(w, WorkerInfo::new().ranks(RANKS)).unwrap();
                if retain {
                    index.retain_members(&pool);
                }
                model.forget(w, None);
            }
            Op::Degraded(w, r, on) => {
                let h = (w % WORKERS, u32::from(r) % RANKS);
                index.set_degraded(&h.0, h.1, on);
                // A holder the index has no record of holds nothing either way.
                if on && model.known.contains(&h) {
                    model.degraded.insert(h);
                } else {
                    model.degraded.remove(&h);
                }
            }
            Op::Advance(ms) => {
                model.now += u64::from(ms);
                index.set_now(model.now);
            }
            Op::Lookup(ids) => {
                let prompt = blocks(&ids);
                index.lookup(&keys(&prompt), &mut found);
                found.fill(&pool, &mut hits);
                let exact = index.stats().dropped_full == 0 && !input.tiny;
                for w in 0..WORKERS {
                    for r in 0..RANKS {
                        let (got, want) = (hits.held_by_rank(&pool, &w, r), model.credit((w, r), &prompt));
                        if exact {
                            assert_eq!(got, want, "rank {r} of {w}, prompt {prompt:?}");
                        } else {
                            assert!(
                                got <= want,
                                "rank {r} of {w} credited {got} > {want}, prompt {prompt:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
