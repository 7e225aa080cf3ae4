//! An engine's KV cache: an LRU of blocks that says which blocks it stored
//! and which it evicted, as an engine's KV events do.

use std::collections::{BTreeMap, HashMap};
use workerpick::prefix::BlockKey;

/// An LRU of at most `cap` blocks. A prompt's blocks are touched last to
/// first, so its first block is the most recent and eviction takes a chain's
/// tail before its head (as engines free a sequence's blocks, leaf first):
/// what stays is a prefix, which is what a later prompt can reuse.
#[derive(Debug)]
pub struct BlockLru {
    cap: usize,
    stamp: u64,
    at: HashMap<u64, u64>,
    order: BTreeMap<u64, u64>,
}

/// What one admission changed, for the engine's events.
#[derive(Debug, Default)]
pub struct Changes {
    /// Runs of newly stored blocks: (index of the first in the prompt, count).
    pub stored: Vec<(usize, usize)>,
    /// Blocks evicted to make room for them (before they were stored).
    pub removed: Vec<BlockKey>,
}

impl BlockLru {
    /// An empty cache of `cap` blocks (at least 1).
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            stamp: 0,
            at: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Whether it holds `key`.
    pub fn contains(&self, key: BlockKey) -> bool {
        self.at.contains_key(&key.raw())
    }

    /// How many leading blocks of `keys` it holds (a hole ends the match).
    pub fn prefix(&self, keys: &[BlockKey]) -> u32 {
        keys.iter().take_while(|k| self.contains(**k)).count() as u32
    }

    /// Holds the blocks of `keys` (the prompt just prefilled; its first
    /// `cap` when it is longer than the cache), evicting the least recent
    /// first to make room, as an engine frees blocks before it allocates:
    /// `changes` says what it removed and then stored, the order its events
    /// go in, so an index fed them never holds more blocks than the caches.
    pub fn admit(&mut self, keys: &[BlockKey], changes: &mut Changes) {
        changes.stored.clear();
        changes.removed.clear();
        let keys = &keys[..keys.len().min(self.cap)];
        // The prompt's held blocks leave the order (none of them is
        // evicted for it) and come back with the new ones, last to first.
        let mut new = 0;
        for k in keys {
            match self.at.get(&k.raw()) {
                Some(at) => {
                    self.order.remove(at);
                }
                None => new += 1,
            }
        }
        while self.at.len() + new > self.cap {
            let (_, b) = self.order.pop_first().expect("the prompt fits");
            self.at.remove(&b);
            changes.removed.push(BlockKey::from_raw(b));
        }
        for (i, k) in keys.iter().enumerate().rev() {
            self.stamp += 1;
            match self.at.insert(k.raw(), self.stamp) {
                // A block twice in the prompt: its later stamp goes.
                Some(old) => {
                    self.order.remove(&old);
                }
                None => match changes.stored.last_mut() {
                    // Walking backwards: a run grows at its front.
                    Some((first, n)) if *first == i + 1 => {
                        *first = i;
                        *n += 1;
                    }
                    _ => changes.stored.push((i, 1)),
                },
            }
            self.order.insert(self.stamp, k.raw());
        }
        changes.stored.reverse();
    }
}
