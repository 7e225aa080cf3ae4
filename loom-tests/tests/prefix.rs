//! Model: prefix index lookups race the writer that stores, removes and
//! reuses the index's memory.
//!
//! A lookup sees every block stored before it started and not removed, and
//! never credits a worker with a block it did not store: not when the entry
//! it is reading is unlinked and reused for another block (the block's
//! seqlock), and not when the holder number it read is given to another
//! worker (the index's reuse sequence), and not when the writer compacts
//! the slots under it (the same sequence).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::model;
use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
use workerpick::{CacheHits, Pool};

fn small() -> IndexConfig {
    IndexConfig::exact(16)
        .capacity(2)
        .entries(3)
        .max_holders(2)
        .manual_clock()
}

/// Each worker's credit for `keys`.
fn credit(index: &PrefixIndex<u32>, pool: &Pool<u32>, keys: &[BlockKey], w: u32) -> u32 {
    let (mut m, mut hits) = (Matches::new(), CacheHits::new());
    index.lookup(keys, &mut m);
    m.fill(pool, &mut hits);
    hits.held_by(pool, &w)
}

/// The entry a lookup stands on is unlinked and reused for another block:
/// the lookup still finds worker 0's entry behind it.
#[test]
fn a_reused_entry_never_hides_a_held_block() {
    model("prefix_entry_reuse", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let index = Arc::new(PrefixIndex::new(small()).unwrap());
        let (k0, k1) = (BlockKey::from_raw(10), BlockKey::from_raw(11));
        index.stored(&pool, &0, 0, &[k0]).unwrap();
        index.routed(&pool, &1, 0, &[k0]).unwrap(); // an entry in front of 0's
        let writer = {
            let (pool, index) = (pool.clone(), index.clone());
            thread::spawn(move || {
                index.removed(&1, 0, &[k0]);
                index.routed(&pool, &1, 0, &[k1]).unwrap();
            })
        };
        assert_eq!(credit(&index, &pool, &[k0], 0), 1, "a stored block went unseen");
        writer.join().unwrap();
    });
}

/// Worker 1's holder number goes to worker 2 while a lookup holds it: the
/// lookup never credits 2 with 1's block.
#[test]
fn a_reused_holder_number_never_inherits_credit() {
    model("prefix_holder_reuse", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2]).unwrap());
        let index = Arc::new(PrefixIndex::new(small()).unwrap());
        let (k0, k1) = (BlockKey::from_raw(10), BlockKey::from_raw(11));
        index.stored(&pool, &1, 0, &[k0]).unwrap();
        index.stored(&pool, &0, 0, &[k1]).unwrap();
        let writer = {
            let (pool, index) = (pool.clone(), index.clone());
            thread::spawn(move || {
                index.cleared(&1, None);
                index.stored(&pool, &2, 0, &[k1]).unwrap();
            })
        };
        assert_eq!(
            credit(&index, &pool, &[k0], 2),
            0,
            "credit for a block never stored"
        );
        writer.join().unwrap();
    });
}

/// Worker 2 starts holding a parent block while a lookup reads the parent
/// and then only the child's drops: the lookup never credits 2 with the
/// child (2 goes into the child's drops before the parent shows it).
#[test]
fn a_new_holder_of_the_parent_is_dropped_at_the_child() {
    model("prefix_drops", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1, 2]).unwrap());
        let config = IndexConfig::exact(16)
            .capacity(2)
            .entries(4)
            .max_holders(3)
            .manual_clock();
        let index = Arc::new(PrefixIndex::new(config).unwrap());
        let (k0, k1) = (BlockKey::from_raw(10), BlockKey::from_raw(11));
        index.stored(&pool, &0, 0, &[k0, k1]).unwrap();
        index.stored(&pool, &2, 0, &[]).unwrap(); // 2's holder number, nothing held
        let writer = {
            let (pool, index) = (pool.clone(), index.clone());
            thread::spawn(move || {
                index.stored(&pool, &2, 0, &[k0]).unwrap();
            })
        };
        assert!(
            credit(&index, &pool, &[k0, k1], 2) <= 1,
            "credit for a block never stored"
        );
        assert_eq!(credit(&index, &pool, &[k0, k1], 0), 2);
        writer.join().unwrap();
    });
}

/// The writer compacts the slots (tombstones of removed blocks fill them)
/// while a lookup reads a block that the compaction rewrites: the lookup
/// still finds it.
#[test]
fn a_compaction_never_hides_a_held_block() {
    model("prefix_compaction", || {
        let pool = Arc::new(Pool::from_workers([0u32]).unwrap());
        // Raw keys whose first probe lands on slot 0, 1, ..., 7 of the 8.
        let key = [30, 19, 28, 6, 1, 4, 3, 2].map(BlockKey::from_raw);
        let index = Arc::new(PrefixIndex::new(small()).unwrap());
        // Each block stored beside its predecessor, which then goes: slots
        // 0..=5 are tombstones and 6 holds the one live block, 7 of 8 used.
        for i in 0..7 {
            index.stored(&pool, &0, 0, &key[i..=i]).unwrap();
            if i > 0 {
                index.removed(&0, 0, &key[i - 1..i]);
            }
        }
        assert_eq!(index.stats().compactions, 0);
        let writer = {
            let (pool, index) = (pool.clone(), index.clone());
            thread::spawn(move || {
                // Its probe meets the empty slot 7 first: no room, so the
                // writer compacts before it stores.
                index.stored(&pool, &0, 0, &key[7..]).unwrap();
                assert_eq!(index.stats().compactions, 1);
            })
        };
        assert_eq!(
            credit(&index, &pool, &key[6..7], 0),
            1,
            "a held block went unseen"
        );
        writer.join().unwrap();
    });
}
