//! The fake engine's prefix cache: a block-LRU that says what it stored and
//! evicted, for its KV events.

use std::collections::{BTreeMap, HashMap};
use workerpick::prefix::BlockKey;

/// What one admission changed: evictions first (the engine frees before it
/// allocates), then the stores, the order the events go in.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Blocks evicted to make room.
    pub removed: Vec<BlockKey>,
    /// Runs of newly stored blocks: (index of the first in the prompt, count).
    pub stored: Vec<(usize, usize)>,
}

/// A block-LRU: block → last use, last use → block. A prompt's blocks are
/// used last to first, so a chain loses its tail before its head.
#[derive(Default)]
pub struct Lru {
    used: HashMap<BlockKey, u64>,
    order: BTreeMap<u64, BlockKey>,
    clock: u64,
}

impl Lru {
    /// Leading blocks of `keys` cached; then the first `capacity` blocks of
    /// `keys` are used now, the least recent others evicted to make room.
    pub fn serve(&mut self, keys: &[BlockKey], capacity: usize, changes: &mut Changes) -> usize {
        changes.removed.clear();
        changes.stored.clear();
        let hits = keys.iter().take_while(|k| self.used.contains_key(k)).count();
        let keys = &keys[..keys.len().min(capacity)];
        // The prompt's held blocks leave the order: none is evicted for it.
        let mut new = 0;
        for k in keys {
            match self.used.get(k) {
                Some(at) => {
                    self.order.remove(at);
                }
                None => new += 1,
            }
        }
        while self.used.len() + new > capacity {
            let Some((_, k)) = self.order.pop_first() else {
                break;
            };
            self.used.remove(&k);
            changes.removed.push(k);
        }
        for (i, &k) in keys.iter().enumerate().rev() {
            self.clock += 1;
            match self.used.insert(k, self.clock) {
                Some(old) => {
                    self.order.remove(&old);
                }
                None => match changes.stored.last_mut() {
                    Some((first, n)) if *first == i + 1 => {
                        *first = i;
                        *n += 1;
                    }
                    _ => changes.stored.push((i, 1)),
                },
            }
            self.order.insert(self.clock, k);
        }
        changes.stored.reverse();
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_counts_leading_hits_and_evicts_the_least_recently_used_first() {
        let k = |n| BlockKey::from_raw(n);
        let mut c = Changes::default();
        let mut lru = Lru::default();
        assert_eq!(lru.serve(&[k(1), k(2), k(3)], 4, &mut c), 0);
        assert_eq!(c.stored, [(0, 3)]);
        assert_eq!(lru.serve(&[k(1), k(2), k(9)], 4, &mut c), 2);
        assert_eq!(
            (c.stored.as_slice(), c.removed.as_slice()),
            (&[(2, 1)][..], &[][..])
        );
        // 4 blocks held: 1, 2, 3, 9; 3 is the least recent.
        assert_eq!(lru.serve(&[k(5)], 4, &mut c), 0);
        assert_eq!(c.removed, [k(3)]);
        assert_eq!(lru.serve(&[k(3)], 4, &mut c), 0, "3 was evicted");
        assert_eq!(lru.serve(&[k(7), k(1)], 4, &mut c), 0, "a hole ends the match");
        // Longer than the cache: its head is kept, nothing stored then evicted.
        assert_eq!(lru.serve(&[k(20), k(21), k(22), k(23), k(24)], 4, &mut c), 0);
        assert_eq!(c.stored, [(0, 4)]);
        assert_eq!(c.removed.len(), 4);
        assert_eq!(lru.serve(&[k(20), k(21), k(22), k(23)], 4, &mut c), 4);
    }
}
