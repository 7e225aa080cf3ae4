//! Target `kv_events`: bytes into the KV event decoder (never a panic; a
//! batch that decodes is applied), and a simulated engine whose batches are
//! lost, sent twice, delayed and replayed on their way to an
//! `EventApplier`. After every step the index credits no block the engine
//! did not hold after the last batch applied, nothing while a gap is open,
//! and, while nothing was lost for good, exactly what the engine holds.

use arbitrary::{Arbitrary, Unstructured};
use std::collections::HashSet;
use std::sync::Arc;
use workerpick::Pool;
use workerpick::kv_events::{
    BlockRemoved, BlockStored, EngineHash, EventApplier, EventBatch, Fed, KvEvent, decode_batch,
};
use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex, keys_of_tokens};

const BLOCK: usize = 2;
const MAX_OPS: usize = 128;

/// One step of the engine or of the network between it and the router.
#[derive(Arbitrary, Debug)]
pub enum Op {
    /// The engine stores `len % 4` blocks of tokens (each in `0..3`) after
    /// its held block `parent` (modulo how many it holds), or at a root.
    Store {
        parent: Option<u8>,
        len: u8,
        tokens: [u8; 6],
    },
    /// The engine evicts one of its held blocks.
    Remove(u8),
    /// The engine drops its whole cache.
    Clear,
    /// The events since the last batch become the next batch, sent so.
    Send(Fate),
    /// The batch held back by [`Fate::Late`] arrives.
    DeliverLate,
    /// The replay socket answers the open gap: with every batch from the
    /// gap on (`full`), or with nothing (its buffer lost them).
    Replay { full: bool },
}

/// What the network does to one batch.
#[derive(Arbitrary, Debug)]
pub enum Fate {
    Deliver,
    Lose,
    Twice,
    Late,
}

/// The decoder on raw bytes (even first byte) or the engine scenario.
pub fn run_bytes(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else if let Ok(ops) = Vec::<Op>::arbitrary_take_rest(Unstructured::new(rest)) {
        run(&ops);
    }
}

type Index = Arc<PrefixIndex<u8>>;

fn setup() -> (Arc<Pool<u8>>, Index) {
    let pool = Arc::new(Pool::from_workers([0u8, 1]).unwrap());
    let index = Arc::new(
        PrefixIndex::new(
            IndexConfig::exact(BLOCK as u32)
                .capacity(4096)
                .entries(8192)
                .max_holders(8),
        )
        .unwrap(),
    );
    (pool, index)
}

fn raw(bytes: &[u8]) {
    let (pool, index) = setup();
    let mut applier = EventApplier::new(index.clone(), pool, 0, 0).engine_rank(None);
    if let Ok(batch) = decode_batch(bytes) {
        let _ = applier.apply(0, &batch);
        let mut keys = Vec::new();
        for ev in &batch.events {
            if let KvEvent::BlockStored(s) = ev {
                keys.clear();
                keys_of_tokens(&s.token_ids, BLOCK, s.lora_id.unwrap_or(0), &mut keys);
                index.lookup(&keys, &mut Matches::new());
            }
        }
    }
    let _ = applier.feed(&[b"", &1u64.to_be_bytes(), bytes]);
}

/// The engine's block of token prefix `path` (its own hash: not the router's).
fn engine_hash(path: &[u32]) -> EngineHash {
    EngineHash::from_raw(BlockKey::chain(None, path, 0xE61E).raw())
}

#[derive(Default)]
struct Engine {
    /// The blocks held, as their whole token prefix.
    held: Vec<Vec<u32>>,
    pending: Vec<KvEvent>,
    /// Every batch sent (the replay buffer) and what the engine held after it.
    sent: Vec<(EventBatch, HashSet<Vec<u32>>)>,
    /// Every prefix ever stored (the lookups checked).
    universe: Vec<Vec<u32>>,
}

impl Engine {
    fn store(&mut self, parent: Option<u8>, len: u8, tokens: [u8; 6]) {
        let n = usize::from(len % 4);
        if n == 0 {
            return;
        }
        let base = match parent {
            Some(i) if !self.held.is_empty() => self.held[usize::from(i) % self.held.len()].clone(),
            _ => Vec::new(),
        };
        let token_ids: Vec<u32> = tokens[..n * BLOCK].iter().map(|t| u32::from(t % 3)).collect();
        let mut path = base.clone();
        let mut hashes = Vec::new();
        for block in token_ids.chunks(BLOCK) {
            path.extend_from_slice(block);
            hashes.push(engine_hash(&path));
            if !self.held.contains(&path) {
                self.held.push(path.clone());
            }
            if !self.universe.contains(&path) && self.universe.len() < 64 {
                self.universe.push(path.clone());
            }
        }
        self.pending.push(KvEvent::BlockStored(BlockStored {
            block_hashes: hashes,
            parent_block_hash: (!base.is_empty()).then(|| engine_hash(&base)),
            token_ids,
            block_size: BLOCK as u32,
            ..Default::default()
        }));
    }

    fn remove(&mut self, i: u8) {
        if self.held.is_empty() {
            return;
        }
        let path = self.held.swap_remove(usize::from(i) % self.held.len());
        self.pending.push(KvEvent::BlockRemoved(BlockRemoved {
            block_hashes: vec![engine_hash(&path)],
            ..Default::default()
        }));
    }

    fn clear(&mut self) {
        self.held.clear();
        self.pending.push(KvEvent::AllBlocksCleared);
    }

    fn cut(&mut self) -> u64 {
        let batch = EventBatch::new(0.0, std::mem::take(&mut self.pending));
        self.sent.push((batch, self.held.iter().cloned().collect()));
        self.sent.len() as u64 - 1
    }
}

/// The leading blocks of `path` that `held` holds.
fn truth(held: &HashSet<Vec<u32>>, path: &[u32]) -> u32 {
    (1..=path.len() / BLOCK)
        .take_while(|&i| held.contains(&path[..i * BLOCK]))
        .count() as u32
}

pub fn run(ops: &[Op]) {
    let (pool, index) = setup();
    let mut applier = EventApplier::new(index.clone(), pool, 0, 0).max_pending(4);
    let mut engine = Engine::default();
    let mut late: Option<u64> = None;
    // Whether the first batch applied was the engine's first.
    let mut from_start = None;
    for op in ops.iter().take(MAX_OPS) {
        match op {
            Op::Store { parent, len, tokens } => engine.store(*parent, *len, *tokens),
            Op::Remove(i) => engine.remove(*i),
            Op::Clear => engine.clear(),
            Op::Send(fate) => {
                let seq = engine.cut();
                match fate {
                    Fate::Deliver => deliver(&mut applier, &engine, &mut from_start, seq),
                    Fate::Lose => {}
                    Fate::Twice => {
                        deliver(&mut applier, &engine, &mut from_start, seq);
                        deliver(&mut applier, &engine, &mut from_start, seq);
                    }
                    // Batch 0 is never delayed: arriving after batch 1 it
                    // reads as the engine's restart (TCP does not reorder;
                    // the unit tests cover restarts).
                    Fate::Late if seq == 0 => deliver(&mut applier, &engine, &mut from_start, seq),
                    Fate::Late => {
                        if let Some(old) = late.replace(seq) {
                            deliver(&mut applier, &engine, &mut from_start, old);
                        }
                    }
                }
            }
            Op::DeliverLate => {
                if let Some(seq) = late.take() {
                    deliver(&mut applier, &engine, &mut from_start, seq);
                }
            }
            Op::Replay { full } => {
                if let Some(from) = applier.gap() {
                    if *full {
                        for seq in from..engine.sent.len() as u64 {
                            deliver(&mut applier, &engine, &mut from_start, seq);
                        }
                    }
                    applier.replay_done();
                }
            }
        }
        check(&index, &applier, &engine, from_start == Some(true));
    }
}

fn deliver(applier: &mut EventApplier<u8>, engine: &Engine, from_start: &mut Option<bool>, seq: u64) {
    let r = applier.apply(seq, &engine.sent[seq as usize].0);
    assert!(r.is_ok(), "{r:?}");
    if from_start.is_none() && r == Ok(Fed::Applied) {
        *from_start = Some(seq == 0);
    }
}

fn check(index: &Index, applier: &EventApplier<u8>, engine: &Engine, from_start: bool) {
    let held = match applier.next_seq() {
        Some(next) if applier.gap().is_none() => Some(&engine.sent[next as usize - 1].1),
        _ => None, // a gap open, or nothing applied since a reset: no credit
    };
    let s = applier.stats();
    let exact = from_start && s.resets == 0 && s.map_full == 0;
    let (mut keys, mut found) = (Vec::new(), Matches::new());
    for path in &engine.universe {
        keys.clear();
        keys_of_tokens(path, BLOCK, 0, &mut keys);
        let credit = index.lookup(&keys, &mut found);
        let want = held.map_or(0, |h| truth(h, path));
        if exact {
            assert_eq!(
                credit, want,
                "{path:?}: credit {credit}, engine holds {want} ({s:?})"
            );
        } else {
            assert!(
                credit <= want,
                "{path:?}: credit {credit} > the engine's {want} ({s:?})"
            );
        }
    }
}
