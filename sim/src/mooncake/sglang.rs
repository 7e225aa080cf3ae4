//! The reference policy: SGLang's cache-aware router, written here from its
//! documented rule (not its code).
//!
//! The router keeps an approximate tree per worker of the prompts it sent
//! there (here: an LRU of the routed blocks, sized like an engine's cache)
//! and counts each worker's requests in flight. Per request:
//! 1. if the load is imbalanced (`max − min > 64` and `max > 1.5 · min`
//!    requests in flight), the least loaded worker;
//! 2. else, if the best prefix match covers more than 30 % of the prompt,
//!    that worker;
//! 3. else the worker whose tree is smallest (the most room for a new
//!    prefix).
//!
//! The chosen worker's tree then takes the prompt.

use super::cache::{BlockLru, Changes};
use workerpick::Rng;
use workerpick::prefix::BlockKey;

/// `balance_abs_threshold`: requests in flight between the busiest and the idlest.
const ABS: u32 = 64;
/// `balance_rel_threshold`: the busiest over the idlest.
const REL: f64 = 1.5;
/// `cache_threshold`: the share of the prompt a match must cover.
const MATCH: f64 = 0.3;

/// The router's trees and load counts.
#[derive(Debug)]
pub struct CacheAware {
    trees: Vec<BlockLru>,
    changes: Changes,
    /// Requests in flight per worker.
    pub running: Vec<u32>,
}

impl CacheAware {
    /// A router over `workers` workers, each tree of `cap` blocks.
    pub fn new(workers: u32, cap: usize) -> Self {
        Self {
            trees: (0..workers).map(|_| BlockLru::new(cap)).collect(),
            changes: Changes::default(),
            running: vec![0; workers as usize],
        }
    }

    /// The worker for a prompt of `keys`, and the blocks its tree matched
    /// (ties broken at random by `rng`: the rule names no order).
    pub fn pick(&self, keys: &[BlockKey], rng: &mut Rng) -> (u32, u32) {
        let (min, max) = self
            .running
            .iter()
            .fold((u32::MAX, 0), |(a, b), &r| (a.min(r), b.max(r)));
        let workers = self.running.len() as u32;
        // A random start, then the first best from there: a uniform tie-break.
        let from = rng.below(workers);
        let order = (0..workers).map(|k| (from + k) % workers);
        let matched = |w: u32| self.trees[w as usize].prefix(keys);
        if max - min > ABS && f64::from(max) > REL * f64::from(min) {
            let least = order.min_by_key(|&w| self.running[w as usize]).expect("workers");
            return (least, matched(least));
        }
        let mut best = (from, 0);
        for w in order.clone() {
            let n = matched(w);
            if n > best.1 {
                best = (w, n);
            }
        }
        if f64::from(best.1) > MATCH * keys.len() as f64 {
            return best;
        }
        let smallest = order
            .min_by_key(|&w| self.trees[w as usize].len())
            .expect("workers");
        (smallest, matched(smallest))
    }

    /// Records that `keys` went to `worker`.
    pub fn routed(&mut self, worker: u32, keys: &[BlockKey]) {
        self.trees[worker as usize].admit(keys, &mut self.changes);
        self.running[worker as usize] += 1;
    }
}
