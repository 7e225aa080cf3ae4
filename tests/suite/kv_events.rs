//! The engines' KV events: msgspec's own encodings of vLLM's and SGLang's
//! batches decoded, applied in order, gaps degraded and repaired, one
//! engine's removals kept to its own holdings, bad bytes refused.
#![cfg(feature = "kv-events")]

use std::sync::Arc;
use workerpick::kv_events::{
    BlockRemoved, BlockStored, DecodeError, EngineHash, EventApplier, EventBatch, EventError, Fed, KvEvent,
    decode_batch,
};
use workerpick::prefix::{BlockKey, IndexConfig, IndexError, Matches, PrefixIndex, keys_of_tokens};
use workerpick::{Pool, WorkerInfo};

/// msgspec's encodings (tests/data/kv_events_fixtures.py writes them).
fn fixture(name: &str) -> Vec<u8> {
    let text = include_str!("../data/kv_events_fixtures.txt");
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no fixture {name}"));
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn hash(i: u64) -> EngineHash {
    EngineHash::from_raw(i)
}

fn digest(b: u8) -> EngineHash {
    EngineHash::of_bytes(&[b; 32])
}

type Index = Arc<PrefixIndex<&'static str>>;

fn setup(workers: &[&'static str]) -> (Arc<Pool<&'static str>>, Index) {
    let pool = Arc::new(Pool::from_workers(workers.iter().copied()).unwrap());
    let index = Arc::new(
        PrefixIndex::new(IndexConfig::exact(2).capacity(1024).entries(4096).max_holders(16)).unwrap(),
    );
    (pool, index)
}

/// The blocks of `tokens` (block size 2, extra key `extra`) `index` credits.
fn credit(index: &Index, tokens: &[u32], extra: u64) -> u32 {
    let mut keys = Vec::new();
    keys_of_tokens(tokens, 2, extra, &mut keys);
    index.lookup(&keys, &mut Matches::new())
}

fn stored(hashes: &[u64], parent: Option<u64>, tokens: &[u32]) -> KvEvent {
    KvEvent::BlockStored(BlockStored {
        block_hashes: hashes.iter().copied().map(hash).collect(),
        parent_block_hash: parent.map(hash),
        token_ids: tokens.to_vec(),
        block_size: 2,
        ..Default::default()
    })
}

fn removed(hashes: &[u64]) -> KvEvent {
    KvEvent::BlockRemoved(BlockRemoved {
        block_hashes: hashes.iter().copied().map(hash).collect(),
        ..Default::default()
    })
}

fn batch(events: Vec<KvEvent>) -> EventBatch {
    EventBatch::new(0.0, events)
}

#[test]
fn the_array_layout_decodes_field_by_field() {
    let b = decode_batch(&fixture("array")).unwrap();
    assert_eq!(b.ts, 1.25);
    assert_eq!(b.data_parallel_rank, Some(1));
    assert_eq!(b.events.len(), 5);
    let KvEvent::BlockStored(s) = &b.events[0] else {
        panic!("{:?}", b.events[0])
    };
    assert_eq!(s.block_hashes, [hash(10), hash(11)]);
    assert_eq!(s.parent_block_hash, None);
    assert_eq!(s.token_ids, [1, 2, 3, 4]);
    assert_eq!(
        (s.block_size, s.lora_id, s.medium.as_deref()),
        (2, None, Some("GPU"))
    );
    assert_eq!(b.events[1], removed(&[11]).with_medium("GPU"));
    let KvEvent::BlockStored(s) = &b.events[2] else {
        panic!()
    };
    assert_eq!(s.parent_block_hash, Some(hash(10)));
    let KvEvent::BlockStored(s) = &b.events[3] else {
        panic!()
    };
    assert_eq!((s.block_hashes[0], s.lora_id), (hash(-5i64 as u64), Some(7)));
    let b = decode_batch(&fixture("array_cleared_no_rank")).unwrap();
    assert_eq!(
        (b.events.as_slice(), b.data_parallel_rank),
        (&[KvEvent::AllBlocksCleared][..], None)
    );
}

trait WithMedium {
    fn with_medium(self, m: &str) -> Self;
}

impl WithMedium for KvEvent {
    fn with_medium(self, m: &str) -> Self {
        match self {
            KvEvent::BlockRemoved(mut r) => {
                r.medium = Some(m.into());
                KvEvent::BlockRemoved(r)
            }
            other => other,
        }
    }
}

#[test]
fn the_map_layouts_decode_with_byte_hashes_groups_and_extra_keys() {
    let b = decode_batch(&fixture("map_events")).unwrap();
    assert_eq!((b.ts, b.data_parallel_rank, b.events.len()), (3.5, Some(0), 7));
    let KvEvent::BlockStored(s) = &b.events[0] else {
        panic!()
    };
    assert_eq!(s.block_hashes, [digest(1), digest(2)]);
    assert!(!s.has_extra_keys && s.group_idx.is_none());
    let KvEvent::BlockStored(s) = &b.events[1] else {
        panic!()
    };
    assert_eq!((s.parent_block_hash, s.group_idx), (Some(digest(1)), Some(0)));
    let KvEvent::BlockStored(s) = &b.events[2] else {
        panic!()
    };
    assert!(s.has_extra_keys);
    let KvEvent::BlockStored(s) = &b.events[3] else {
        panic!()
    };
    assert_eq!(s.group_idx, Some(1));
    let KvEvent::BlockRemoved(r) = &b.events[4] else {
        panic!()
    };
    assert_eq!(r.block_hashes, [digest(2)]);
    assert_eq!(b.events[5], KvEvent::AllBlocksCleared);
    let b = decode_batch(&fixture("map_batch")).unwrap();
    assert_eq!((b.ts, b.data_parallel_rank), (4.0, Some(2)));
    assert_eq!(
        b.events,
        [KvEvent::BlockRemoved(BlockRemoved {
            block_hashes: vec![digest(9)],
            ..Default::default()
        })]
    );
}

#[test]
fn an_engine_batch_credits_its_blocks_by_the_routers_own_keys() {
    let (pool, index) = setup(&[]);
    pool.insert_with("e", WorkerInfo::new().ranks(2)).unwrap();
    let mut e = EventApplier::new(index.clone(), pool.clone(), "e", 1);
    let seq = 0u64.to_be_bytes();
    assert_eq!(e.feed(&[b"kv", &seq, &fixture("array")]), Ok(Fed::Applied));
    assert_eq!(credit(&index, &[1, 2, 3, 4], 0), 1); // 11 was evicted
    assert_eq!(credit(&index, &[1, 2, 5, 6], 0), 2); // 12 after 10
    assert_eq!(credit(&index, &[1, 2], 7), 1); // the LoRA's own key
    assert_eq!(credit(&index, &[9, 9], 0), 0); // a CPU block: not credited
    let s = e.stats();
    assert_eq!((s.stored, s.removed, s.untracked, s.batches), (4, 1, 1, 1));
    assert_eq!(e.mapped(), 3);
    // The same prompt keyed as the engine saw it: BlockKey chains.
    let k10 = BlockKey::chain(None, &[1, 2], 0);
    let mut m = Matches::new();
    assert_eq!(
        index.lookup(&[k10, BlockKey::chain(Some(k10), &[5, 6], 0)], &mut m),
        2
    );
}

#[test]
fn the_current_vllm_layout_applies_up_to_its_clear() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    assert_eq!(e.feed_payload(0, &fixture("map_events")), Ok(Fed::Applied));
    let s = e.stats();
    // 3 stored (2 + 1 under a known parent), 2 untracked (extra keys, group 1),
    // 1 removed, then the clear, then 77.
    assert_eq!((s.stored, s.untracked, s.removed, s.cleared), (4, 2, 1, 1));
    assert_eq!(credit(&index, &[1, 2, 5, 6], 0), 1); // only 77's [1, 2] survives the clear
    assert_eq!(e.mapped(), 1);
}

#[test]
fn a_gap_degrades_the_credit_until_the_replay_fills_it() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    assert_eq!(
        e.apply(5, &batch(vec![stored(&[1, 2], None, &[1, 2, 3, 4])])),
        Ok(Fed::Applied)
    );
    assert_eq!(credit(&index, &[1, 2, 3, 4], 0), 2);
    // 6 and 7 lost; 8 evicts block 1 and stores 3.
    let b8 = batch(vec![removed(&[2]), stored(&[3], Some(1), &[7, 8])]);
    assert_eq!(e.apply(8, &b8), Ok(Fed::Gap { from: 6 }));
    assert!(index.is_degraded(&"e", 0));
    assert_eq!(credit(&index, &[1, 2, 3, 4], 0), 0);
    assert_eq!(e.apply(9, &batch(vec![])), Ok(Fed::Held));
    assert_eq!(e.gap(), Some(6));
    // The replay: 6 evicts 1's child, 7 stores 4; 8 is a duplicate.
    assert_eq!(e.apply(6, &batch(vec![removed(&[2])])), Ok(Fed::Applied));
    assert!(index.is_degraded(&"e", 0));
    assert_eq!(
        e.apply(7, &batch(vec![stored(&[2], Some(1), &[3, 4])])),
        Ok(Fed::Repaired)
    );
    assert_eq!(e.apply(8, &b8), Ok(Fed::Duplicate));
    assert!(e.replay_done());
    assert!(!index.is_degraded(&"e", 0));
    assert_eq!(e.gap(), None);
    assert_eq!(e.next_seq(), Some(10));
    // In order, 2 was stored again by 7 and removed by 8: [1,2][3,4] holds 1 block.
    assert_eq!(credit(&index, &[1, 2, 3, 4], 0), 1);
    assert_eq!(credit(&index, &[1, 2, 7, 8], 0), 2);
    let s = e.stats();
    assert_eq!((s.gaps, s.repaired, s.duplicates, s.resets), (1, 1, 1, 0));
}

#[test]
fn a_clear_past_a_gap_resynchronises_at_once() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    e.apply(0, &batch(vec![stored(&[1], None, &[1, 2])])).unwrap();
    assert_eq!(e.apply(3, &batch(vec![])), Ok(Fed::Gap { from: 1 }));
    let b4 = batch(vec![
        stored(&[9], None, &[5, 5]),
        KvEvent::AllBlocksCleared,
        stored(&[7], None, &[3, 3]),
    ]);
    assert_eq!(e.apply(4, &b4), Ok(Fed::Resynced));
    assert!(!index.is_degraded(&"e", 0));
    assert_eq!(e.gap(), None);
    assert_eq!(credit(&index, &[1, 2], 0), 0);
    assert_eq!(credit(&index, &[5, 5], 0), 0);
    assert_eq!(credit(&index, &[3, 3], 0), 1);
    assert_eq!(e.apply(5, &batch(vec![])), Ok(Fed::Applied));
}

#[test]
fn a_gap_the_replay_cannot_fill_drops_the_engines_holdings() {
    let (pool, index) = setup(&["e", "f"]);
    let mut e = EventApplier::new(index.clone(), pool.clone(), "e", 0);
    let mut f = EventApplier::new(index.clone(), pool, "f", 0);
    e.apply(0, &batch(vec![stored(&[1, 2], None, &[1, 2, 3, 4])]))
        .unwrap();
    f.apply(0, &batch(vec![stored(&[1], None, &[1, 2])])).unwrap();
    assert_eq!(e.apply(2, &batch(vec![])), Ok(Fed::Gap { from: 1 }));
    assert!(!e.replay_done()); // the engine's buffer no longer had 1
    assert_eq!(e.stats().resets, 1);
    let mut m = Matches::new();
    let mut keys = Vec::new();
    keys_of_tokens(&[1, 2, 3, 4], 2, 0, &mut keys);
    index.lookup(&keys, &mut m);
    assert_eq!(m.iter().count(), 1, "only f's holding is left");
    assert_eq!(e.mapped(), 0);
    // The stream starts again from whatever comes next, exact.
    assert_eq!(
        e.apply(7, &batch(vec![stored(&[5], None, &[1, 2])])),
        Ok(Fed::Applied)
    );
    assert!(!index.is_degraded(&"e", 0));
    index.lookup(&keys, &mut m);
    assert_eq!(m.iter().count(), 2);
    // A parent from before the restart is unknown: not credited.
    e.apply(8, &batch(vec![stored(&[6], Some(2), &[3, 4])])).unwrap();
    assert_eq!(e.stats().unknown_parent, 1);
}

#[test]
fn too_many_held_batches_give_the_gap_up() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0).max_pending(2);
    e.apply(0, &batch(vec![stored(&[1], None, &[1, 2])])).unwrap();
    assert_eq!(e.apply(2, &batch(vec![])), Ok(Fed::Gap { from: 1 }));
    assert_eq!(e.apply(3, &batch(vec![])), Ok(Fed::Held));
    assert_eq!(e.apply(4, &batch(vec![])), Ok(Fed::GaveUp));
    assert_eq!(credit(&index, &[1, 2], 0), 0);
    assert_eq!(e.gap(), None);
}

#[test]
fn batch_zero_again_is_an_engine_restart() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    e.apply(0, &batch(vec![stored(&[1], None, &[1, 2])])).unwrap();
    assert_eq!(e.apply(0, &batch(vec![])), Ok(Fed::Duplicate)); // once: a duplicate
    e.apply(1, &batch(vec![stored(&[2], None, &[3, 4])])).unwrap();
    // The engine restarted: an empty cache, and batch 0 again.
    assert_eq!(
        e.apply(0, &batch(vec![stored(&[9], None, &[5, 6])])),
        Ok(Fed::Applied)
    );
    assert_eq!((credit(&index, &[1, 2], 0), credit(&index, &[3, 4], 0)), (0, 0));
    assert_eq!(credit(&index, &[5, 6], 0), 1);
    assert_eq!(e.stats().restarts, 1);
    assert_eq!(e.apply(1, &batch(vec![])), Ok(Fed::Applied));
}

#[test]
fn a_late_batch_from_before_a_reset_is_stale() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    e.apply(0, &batch(vec![])).unwrap();
    assert_eq!(e.apply(3, &batch(vec![])), Ok(Fed::Gap { from: 1 }));
    assert!(!e.replay_done());
    // Batch 1 arrives late: it stored a block that batch 2 (lost) removed.
    assert_eq!(
        e.apply(1, &batch(vec![stored(&[1], None, &[1, 2])])),
        Ok(Fed::Duplicate)
    );
    assert_eq!(credit(&index, &[1, 2], 0), 0);
    assert_eq!(
        e.apply(4, &batch(vec![stored(&[2], None, &[3, 4])])),
        Ok(Fed::Applied)
    );
    assert_eq!(credit(&index, &[3, 4], 0), 1);
}

#[test]
fn one_engines_removal_never_removes_anothers_blocks() {
    let (pool, index) = setup(&["a", "b"]);
    let mut a = EventApplier::new(index.clone(), pool.clone(), "a", 0);
    let mut b = EventApplier::new(index.clone(), pool, "b", 0);
    // The same tokens; b's engine even uses the same block hashes.
    a.apply(0, &batch(vec![stored(&[1, 2], None, &[1, 2, 3, 4])]))
        .unwrap();
    b.apply(0, &batch(vec![stored(&[1, 2], None, &[1, 2, 3, 4])]))
        .unwrap();
    a.apply(1, &batch(vec![removed(&[1, 2])])).unwrap();
    a.apply(2, &batch(vec![KvEvent::AllBlocksCleared])).unwrap();
    let mut keys = Vec::new();
    keys_of_tokens(&[1, 2, 3, 4], 2, 0, &mut keys);
    let mut m = Matches::new();
    assert_eq!(index.lookup(&keys, &mut m), 2);
    let holders: Vec<_> = m.iter().collect();
    assert_eq!(holders.len(), 1);
    assert_eq!(b.mapped(), 2);
    b.apply(1, &batch(vec![removed(&[2])])).unwrap();
    assert_eq!(index.lookup(&keys, &mut m), 1);
}

#[test]
fn the_engine_hash_map_is_bounded_and_credits_only_what_it_can_remove() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0).max_blocks(2);
    e.apply(0, &batch(vec![stored(&[1, 2, 3], None, &[1, 2, 3, 4, 5, 6])]))
        .unwrap();
    assert_eq!(credit(&index, &[1, 2, 3, 4, 5, 6], 0), 2);
    assert_eq!((e.stats().map_full, e.mapped()), (1, 2));
    // Storing a mapped block again takes no room; a removal frees room.
    e.apply(1, &batch(vec![stored(&[1], None, &[1, 2]), removed(&[2])]))
        .unwrap();
    e.apply(2, &batch(vec![stored(&[3], Some(1), &[5, 6])])).unwrap();
    assert_eq!(credit(&index, &[1, 2, 5, 6], 0), 2);
    assert_eq!(e.mapped(), 2);
    e.apply(3, &batch(vec![removed(&[1, 3])])).unwrap();
    assert_eq!(credit(&index, &[1, 2, 5, 6], 0), 0);
    assert_eq!(index.stats().holdings, 0);
}

/// Unset, the map's bound is the index's capacity: an engine never maps
/// more hashes than the index could hold blocks.
#[test]
fn the_map_bound_defaults_to_the_index_capacity() {
    let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    let index = Arc::new(PrefixIndex::new(IndexConfig::exact(2).capacity(2).max_holders(4)).unwrap());
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    e.apply(0, &batch(vec![stored(&[1, 2, 3], None, &[1, 2, 3, 4, 5, 6])]))
        .unwrap();
    assert_eq!((e.stats().map_full, e.mapped()), (1, 2));
    assert_eq!(credit(&index, &[1, 2, 3, 4, 5, 6], 0), 2);
}

#[test]
fn malformed_payloads_are_typed_errors_and_apply_nothing() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool, "e", 0);
    for name in ["array", "map_events", "map_batch"] {
        let bytes = fixture(name);
        for cut in 0..bytes.len() {
            assert!(decode_batch(&bytes[..cut]).is_err(), "{name} cut at {cut}");
        }
        let mut flipped = bytes.clone();
        for (i, &b) in bytes.iter().enumerate() {
            flipped[i] = !b;
            let _ = decode_batch(&flipped); // never panics
            flipped[i] = b;
        }
    }
    let mut longer = fixture("array_cleared_no_rank");
    longer.push(0);
    assert_eq!(decode_batch(&longer), Err(DecodeError::Trailing { bytes: 1 }));
    // ["BlockGrown", ...]: an unknown tag.
    let unknown = [&[0x92, 0x00, 0x91, 0x91, 0xaa][..], b"BlockGrown"].concat();
    assert_eq!(
        decode_batch(&unknown),
        Err(DecodeError::UnknownEvent("BlockGrown".into()))
    );
    // A map event without its tag; a batch that is a string.
    let untagged = [&[0x92, 0x00, 0x91, 0x81, 0xa6][..], b"medium", &[0xc0]].concat();
    assert!(matches!(decode_batch(&untagged), Err(DecodeError::Malformed(_))));
    assert!(matches!(
        decode_batch(&[0xa1, b'x']),
        Err(DecodeError::Malformed(_))
    ));
    // An array that claims 2^32 - 1 events and holds none; nesting 100 deep.
    assert!(decode_batch(&[0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
    // (in a trailing field, which is skipped whatever it holds).
    let mut deep = vec![0x92, 0x00, 0x91, 0x95, 0xac];
    deep.extend(b"BlockRemoved");
    deep.extend([0x90, 0xc0, 0xc0]);
    deep.extend([0x91; 100]);
    deep.push(0xc0);
    assert_eq!(decode_batch(&deep), Err(DecodeError::TooDeep));
    // A token id past u32, a negative block size.
    let big_token = [
        &[0x92, 0x00, 0x91, 0x95, 0xab][..],
        b"BlockStored",
        &[0x91, 0x01, 0xc0, 0x92, 0xcf, 1, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x02],
    ]
    .concat();
    assert!(matches!(decode_batch(&big_token), Err(DecodeError::Malformed(_))));

    assert!(matches!(e.feed_payload(0, &unknown), Err(EventError::Decode(_))));
    assert!(matches!(
        e.feed(&[b"t", b"1234567", b""]),
        Err(EventError::Frames { .. })
    ));
    assert!(matches!(
        e.feed(&[b"a", b"b", b"c", b"d"]),
        Err(EventError::Frames { .. })
    ));
    assert_eq!(e.stats().refused, 3);
    assert_eq!(e.next_seq(), None, "no sequence number taken");
    assert_eq!(index.stats().holdings, 0);
}

#[test]
fn events_that_disagree_with_the_index_are_refused_whole() {
    let (pool, index) = setup(&["e"]);
    let mut e = EventApplier::new(index.clone(), pool.clone(), "e", 0);
    let mut wrong = stored(&[1], None, &[1, 2, 3, 4]);
    if let KvEvent::BlockStored(s) = &mut wrong {
        s.block_size = 4;
    }
    let good = stored(&[2], None, &[1, 2]);
    assert_eq!(
        e.apply(0, &batch(vec![good.clone(), wrong])),
        Err(EventError::BlockSize { expected: 2, got: 4 })
    );
    let short = stored(&[1, 2], None, &[1, 2, 3]);
    assert!(matches!(
        e.apply(0, &batch(vec![good.clone(), short])),
        Err(EventError::TokenCount { tokens: 3, .. })
    ));
    assert_eq!(
        e.apply(0, &batch(vec![good.clone()]).rank(3)),
        Err(EventError::Rank { expected: 0, got: 3 })
    );
    assert_eq!(index.stats().holdings, 0);
    // A worker that is not in the pool.
    let mut ghost = EventApplier::new(index.clone(), pool.clone(), "ghost", 0);
    assert_eq!(
        ghost.apply(0, &batch(vec![good.clone()])),
        Err(EventError::Index(IndexError::UnknownWorker))
    );
    // Any rank accepted when told so; a CPU block's size is not checked.
    let mut any = EventApplier::new(index.clone(), pool, "e", 0).engine_rank(None);
    let mut cpu = stored(&[5], None, &[1, 2, 3, 4]);
    if let KvEvent::BlockStored(s) = &mut cpu {
        s.block_size = 4;
        s.medium = Some("CPU".into());
    }
    assert_eq!(any.apply(0, &batch(vec![good, cpu]).rank(3)), Ok(Fed::Applied));
    assert_eq!(index.stats().holdings, 1);
}
