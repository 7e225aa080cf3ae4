//! The prefix index against a plain model: what a lookup credits, what one
//! worker's events change, what memory it takes, what it refuses.

use crate::common::counting::allocations;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use workerpick::prefix::{BlockKey, IndexConfig, IndexError, Matches, PrefixIndex};
use workerpick::{CacheHits, Pool, WorkerInfo};

fn keys(ids: impl IntoIterator<Item = u64>) -> Vec<BlockKey> {
    ids.into_iter().map(BlockKey::from_raw).collect()
}

/// Each worker's credit, by worker id, from a lookup.
fn credits(index: &PrefixIndex<u32>, pool: &Pool<u32>, prompt: &[BlockKey]) -> HashMap<u32, u32> {
    let mut m = Matches::new();
    index.lookup(prompt, &mut m);
    let mut hits = CacheHits::new();
    m.fill(pool, &mut hits);
    (0u32..8)
        .map(|w| (w, hits.held_by(pool, &w)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Stored(u32, Vec<u64>),
    Removed(u32, Vec<u64>),
    Routed(u32, Vec<u64>),
    Cleared(u32),
    Rejoin(u32),
    Advance(u64),
    Lookup(Vec<u64>),
}

fn op() -> impl Strategy<Value = Op> {
    let w = 0u32..4;
    let ks = prop::collection::vec(0u64..10, 0..6);
    prop_oneof![
        4 => (w.clone(), ks.clone()).prop_map(|(w, k)| Op::Stored(w, k)),
        2 => (w.clone(), ks.clone()).prop_map(|(w, k)| Op::Removed(w, k)),
        2 => (w.clone(), ks.clone()).prop_map(|(w, k)| Op::Routed(w, k)),
        1 => w.clone().prop_map(Op::Cleared),
        1 => w.prop_map(Op::Rejoin),
        1 => (0u64..3_000).prop_map(Op::Advance),
        4 => ks.prop_map(Op::Lookup),
    ]
}

/// The reference: per worker, the blocks stored and the routed ones with
/// their expiry.
#[derive(Default)]
struct Model {
    stored: HashMap<u32, HashSet<u64>>,
    routed: HashMap<(u32, u64), u64>,
    now: u64,
}

impl Model {
    fn holds(&self, w: u32, k: u64) -> bool {
        self.stored.get(&w).is_some_and(|s| s.contains(&k))
            || self.routed.get(&(w, k)).is_some_and(|&e| e > self.now)
    }

    fn credits(&self, prompt: &[u64]) -> HashMap<u32, u32> {
        (0..4u32)
            .map(|w| (w, prompt.iter().take_while(|&&k| self.holds(w, k)).count() as u32))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    fn forget(&mut self, w: u32) {
        self.stored.remove(&w);
        self.routed.retain(|&(x, _), _| x != w);
    }
}

const TTL: u64 = 2_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every lookup credits each worker exactly its leading blocks in the
    /// model, through stores, removals, routed entries expiring, clears and
    /// a worker leaving and joining again (which empties its cache).
    #[test]
    fn lookups_match_the_model(ops in prop::collection::vec(op(), 1..80)) {
        let pool = Pool::from_workers(0u32..4).unwrap();
        let config = IndexConfig::exact(16).capacity(16).entries(64).manual_clock()
            .routed_ttl(std::time::Duration::from_millis(TTL));
        let index = PrefixIndex::new(config).unwrap();
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Stored(w, k) => {
                    prop_assert_eq!(index.stored(&pool, &w, 0, &keys(k.iter().copied())), Ok(k.len()));
                    model.stored.entry(w).or_default().extend(k);
                }
                Op::Removed(w, k) => {
                    index.removed(&w, 0, &keys(k.iter().copied()));
                    for x in k {
                        model.stored.entry(w).or_default().remove(&x);
                        model.routed.remove(&(w, x));
                    }
                }
                Op::Routed(w, k) => {
                    prop_assert_eq!(index.routed(&pool, &w, 0, &keys(k.iter().copied())), Ok(k.len()));
                    for x in k {
                        if !model.stored.get(&w).is_some_and(|s| s.contains(&x)) {
                            model.routed.insert((w, x), model.now + TTL);
                        }
                    }
                }
                Op::Cleared(w) => {
                    index.cleared(&w, None);
                    model.forget(w);
                }
                Op::Rejoin(w) => {
                    pool.remove(&w).unwrap();
                    pool.insert(w).unwrap();
                    model.forget(w);
                    if w % 2 == 0 {
                        index.retain_members(&pool);
                    }
                }
                Op::Advance(ms) => {
                    model.now += ms;
                    index.set_now(model.now);
                }
                Op::Lookup(k) => {
                    prop_assert_eq!(credits(&index, &pool, &keys(k.iter().copied())), model.credits(&k));
                }
            }
        }
        let s = index.stats();
        prop_assert_eq!(s.dropped_full, 0);
    }
}

#[test]
fn one_workers_removal_leaves_anothers_holdings() {
    let pool = Pool::from_workers(0u32..3).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    let k = keys(0..8);
    for w in 0..3 {
        index.stored(&pool, &w, 0, &k).unwrap();
    }
    index.removed(&1, 0, &k[2..3]);
    index.cleared(&2, None);
    assert_eq!(credits(&index, &pool, &k), HashMap::from([(0, 8), (1, 2)]));
    index.remove_worker(&0);
    assert_eq!(credits(&index, &pool, &k), HashMap::from([(1, 2)]));
}

#[test]
fn ranks_hold_their_own_blocks() {
    let pool = Pool::new();
    pool.insert_with(7u32, WorkerInfo::new().ranks(4)).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    let k = keys(0..4);
    index.stored(&pool, &7, 2, &k[..3]).unwrap();
    index.stored(&pool, &7, 3, &k[..1]).unwrap();
    let mut m = Matches::new();
    index.lookup(&k, &mut m);
    let mut hits = CacheHits::new();
    m.fill(&pool, &mut hits);
    assert_eq!(hits.held_by_rank(&pool, &7, 2), 3);
    assert_eq!(hits.held_by_rank(&pool, &7, 3), 1);
    assert_eq!(hits.held_by_rank(&pool, &7, 0), 0);
    index.cleared(&7, Some(2));
    index.lookup(&k, &mut m);
    assert_eq!(m.longest(), 1);
}

#[test]
fn a_full_index_drops_and_counts_but_never_credits_wrongly() {
    let pool = Pool::from_workers(0u32..2).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).capacity(8).entries(8)).unwrap();
    assert_eq!(index.stored(&pool, &0, 0, &keys(0..20)), Ok(8));
    let s = index.stats();
    assert_eq!((s.blocks, s.dropped_full), (8, 12));
    // Nothing beyond what was recorded is credited, and removals make room.
    assert_eq!(credits(&index, &pool, &keys(0..20)), HashMap::from([(0, 8)]));
    index.removed(&0, 0, &keys(0..8));
    assert_eq!(index.stats().blocks, 0);
    assert_eq!(index.stored(&pool, &1, 0, &keys(100..108)), Ok(8));
    assert_eq!(credits(&index, &pool, &keys(100..108)), HashMap::from([(1, 8)]));
}

/// A sliding window of live blocks well below the capacity, stored and
/// removed for many times the table's size: removed blocks leave tombstones,
/// which must never make the index refuse a store it has room for.
#[test]
fn churn_below_capacity_never_drops_a_store() {
    let pool = Pool::from_workers(0u32..1).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).capacity(1024)).unwrap();
    let key = |k: u64| BlockKey::from_raw(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let window = 960;
    for k in 0..20_000u64 {
        assert_eq!(index.stored(&pool, &0, 0, &[key(k)]), Ok(1), "store {k}");
        if k >= window {
            assert_eq!(
                index.removed(&0, 0, &[key(k - window)]),
                1,
                "remove {}",
                k - window
            );
        }
    }
    let s = index.stats();
    assert_eq!((s.blocks, s.dropped_full), (window, 0));
    assert!(s.compactions > 0, "the churn left no tombstones to drop");
    // Every live block is still found, and no removed one is.
    let live: Vec<BlockKey> = (20_000 - window..20_000).map(key).collect();
    assert_eq!(credits(&index, &pool, &live), HashMap::from([(0, window as u32)]));
    assert_eq!(
        credits(&index, &pool, &[key(20_000 - window - 1)]),
        HashMap::new()
    );
}

#[test]
fn routed_entries_make_room_for_events_oldest_first() {
    let pool = Pool::from_workers(0u32..2).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).capacity(4).entries(4).manual_clock()).unwrap();
    index.routed(&pool, &0, 0, &keys(0..4)).unwrap();
    index.set_now(10);
    index.stored(&pool, &1, 0, &keys(10..12)).unwrap();
    assert_eq!(index.stats().dropped_full, 0);
    // Blocks 0 and 1 (routed first) went for the two events' blocks.
    assert_eq!(credits(&index, &pool, &keys(2..4)), HashMap::from([(0, 2)]));
    assert_eq!(credits(&index, &pool, &keys(0..4)), HashMap::new());
}

#[test]
fn removals_of_unknown_blocks_and_holders_are_counted() {
    let pool = Pool::from_workers(0u32..2).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    assert_eq!(index.removed(&0, 0, &keys(0..2)), 0);
    index.stored(&pool, &0, 0, &keys(0..1)).unwrap();
    assert_eq!(index.removed(&0, 0, &keys(0..3)), 1);
    let s = index.stats();
    assert_eq!((s.unknown_holder, s.removed_not_held), (1, 2));
}

#[test]
fn bad_input_is_a_typed_error() {
    let pool = Pool::from_workers(0u32..2).unwrap();
    let other = Pool::from_workers(0u32..2).unwrap();
    for bad in [
        IndexConfig::exact(0),
        IndexConfig::exact(16).capacity(0),
        IndexConfig::exact(16).entries(1 << 29),
        IndexConfig::exact(16).max_holders(0),
        IndexConfig::exact(16).routed_ttl(std::time::Duration::ZERO),
    ] {
        let err = PrefixIndex::<u32>::new(bad).unwrap_err();
        assert!(matches!(err, IndexError::InvalidConfig { .. }), "{err}");
    }
    let index = PrefixIndex::new(IndexConfig::exact(16).max_holders(2)).unwrap();
    assert_eq!(
        index.stored(&pool, &9, 0, &keys(0..1)),
        Err(IndexError::UnknownWorker)
    );
    assert_eq!(
        index.stored(&pool, &0, 5, &keys(0..1)),
        Err(IndexError::UnknownWorker)
    );
    index.stored(&pool, &0, 0, &keys(0..1)).unwrap();
    assert_eq!(
        index.stored(&other, &0, 0, &keys(0..1)),
        Err(IndexError::OtherPool)
    );
    index.stored(&pool, &1, 0, &keys(0..1)).unwrap();
    pool.insert(2).unwrap();
    assert_eq!(
        index.stored(&pool, &2, 0, &keys(0..1)),
        Err(IndexError::HoldersFull { max: 2 })
    );
    // A freed holder number is reused.
    index.remove_worker(&1);
    assert_eq!(index.stored(&pool, &2, 0, &keys(0..1)), Ok(1));
    assert_eq!(
        credits(&index, &pool, &keys(0..1)),
        HashMap::from([(0, 1), (2, 1)])
    );
}

/// Holdings count (block, holder) pairs held, not the entries of the
/// blocks' drops lists (the parent's holders a child lacks).
#[test]
fn holdings_count_what_is_held_not_the_drops() {
    let pool = Pool::from_workers(0u32..2).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).capacity(64)).unwrap();
    let [k1, k2] = [BlockKey::from_raw(1), BlockKey::from_raw(2)];
    index.stored(&pool, &0, 0, &[k1, k2]).unwrap();
    index.stored(&pool, &1, 0, &[k1]).unwrap();
    assert_eq!(index.stats().holdings, 3);
}

/// The entries' default follows the capacity (2 per block), so a small
/// index is small: 2 048 slots of 32 B, 2 048 entries of 24 B, 4 096
/// holders of 12 B for 1 024 blocks.
#[test]
fn the_entries_default_to_twice_the_capacity() {
    let index = PrefixIndex::<u32>::new(IndexConfig::exact(16).capacity(1024)).unwrap();
    assert_eq!(index.stats().bytes, 2048 * 32 + 2048 * 24 + 4096 * 12);
    let set = PrefixIndex::<u32>::new(IndexConfig::exact(16).entries(100).capacity(1024)).unwrap();
    assert_eq!(
        set.stats().bytes,
        2048 * 32 + 100 * 24 + 4096 * 12,
        "a set entries count stays"
    );
}

/// The memory rule the docs state, measured: a fleet where each of 256
/// blocks is held by 32 of 64 workers.
#[test]
fn bytes_per_holding_is_as_documented() {
    let pool = Pool::from_workers(0u32..64).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).capacity(256).entries(512).max_holders(64)).unwrap();
    for w in 0..64u32 {
        let held: Vec<u64> = (0..256).filter(|b| (b + u64::from(w)) % 2 == 0).collect();
        index.stored(&pool, &w, 0, &keys(held)).unwrap();
    }
    let s = index.stats();
    assert_eq!((s.blocks, s.entries, s.holdings), (256, 256, 256 * 32));
    // 512 block slots of 32 B, 512 entries of 24 B, 64 holders of 12 B.
    assert_eq!(s.bytes, 512 * 32 + 512 * 24 + 64 * 12);
    assert!(s.bytes_per_holding() < 3.6, "{} B", s.bytes_per_holding());
    // Held once each: an entry and a block's slots per pair.
    let single = PrefixIndex::new(IndexConfig::exact(16).capacity(256).entries(256).max_holders(64)).unwrap();
    single.stored(&pool, &0, 0, &keys(0..256)).unwrap();
    let s = single.stats();
    assert_eq!(s.bytes, 512 * 32 + 256 * 24 + 64 * 12);
    assert!(s.bytes_per_holding() < 91.1, "{} B", s.bytes_per_holding());
}

#[test]
fn a_lookup_allocates_nothing_once_its_buffers_fit() {
    let pool = Pool::from_workers(0u32..256).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16).max_holders(256)).unwrap();
    let prompt = keys(0..128);
    for w in 0..256u32 {
        index
            .stored(&pool, &w, 0, &prompt[..(w as usize % 128) + 1])
            .unwrap();
    }
    let (mut m, mut hits) = (Matches::new(), CacheHits::new());
    index.lookup(&prompt, &mut m);
    m.fill(&pool, &mut hits);
    assert_eq!(m.iter().count(), 256);
    let n = allocations(|| {
        for _ in 0..100 {
            index.lookup(&prompt, &mut m);
            m.fill(&pool, &mut hits);
        }
    });
    assert_eq!(n, 0);
    assert_eq!(hits.held_by(&pool, &77), 78);
}

#[test]
fn a_worker_back_before_its_slot_is_reclaimed_holds_nothing_old() {
    // A reservation keeps worker 1's slot from reuse, so it comes back in
    // the same slot: still a new stay, whose cache the engine reports afresh.
    let pool = Pool::from_workers(0u32..3).unwrap();
    let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    let k = keys(0..8);
    index.stored(&pool, &1, 0, &k).unwrap();
    let held = pool.reserve_worker(&1, 1).unwrap();
    pool.remove(&1).unwrap();
    pool.insert(1).unwrap();
    assert_eq!(credits(&index, &pool, &k), HashMap::new());
    index.retain_members(&pool);
    assert_eq!(index.stats().holders, 0);
    index.stored(&pool, &1, 0, &k[..3]).unwrap();
    assert_eq!(credits(&index, &pool, &k), HashMap::from([(1, 3)]));
    drop(held);
}
