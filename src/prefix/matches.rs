//! A lookup's scratch and answer: reused per request, so a lookup allocates
//! nothing once its buffers fit the index.

use super::key::BlockKey;
use super::table::{EMPTY, HAS_PARENT, LIVE, NO_DIFF, Probe, ROUTED, Table};

/// Blocks a lookup probes side by side.
const BATCH: usize = 8;
use crate::credit::{CacheHits, WorkerToken};
use crate::pool::Pool;
use crate::sync::atomic::{Ordering, fence};
use std::hash::Hash;

/// What a [`PrefixIndex::lookup`](super::PrefixIndex::lookup) found: each
/// holder's count of *leading* blocks of the prompt (a hole ends its match),
/// ready for a [`CacheHits`]. Build one per router thread and reuse it.
///
/// ```
/// use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
/// use workerpick::{CacheHits, Pool};
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
/// let keys: Vec<_> = (0..4).map(BlockKey::from_raw).collect();
/// index.stored(&pool, &"b", 0, &keys[..3]).unwrap();
/// let mut found = Matches::new();
/// assert_eq!(index.lookup(&keys, &mut found), 3);
/// let mut hits = CacheHits::new();
/// found.fill(&pool, &mut hits);
/// assert_eq!(hits.held_by(&pool, &"b"), 3);
/// ```
#[derive(Debug, Default)]
pub struct Matches {
    /// Per holder group: `stamp << 32 | position in active` while active.
    pos: Vec<u64>,
    stamp: u32,
    active: Vec<(u32, u64)>,
    acc: Vec<u64>,
    block: Vec<(u32, u64)>,
    found: Vec<(WorkerToken, u32)>,
    needed: u32,
    longest: u32,
}

impl Matches {
    /// Empty; its buffers grow to fit the index on first use.
    ///
    /// ```
    /// let m = workerpick::prefix::Matches::new();
    /// assert!(m.iter().next().is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Each matching holder's token and its count of leading blocks.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// # let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// # let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let keys = [BlockKey::from_raw(1)];
    /// index.stored(&pool, &"a", 0, &keys).unwrap();
    /// let mut m = Matches::new();
    /// index.lookup(&keys, &mut m);
    /// assert_eq!(m.iter().map(|(_, n)| n).collect::<Vec<_>>(), [1]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (WorkerToken, u32)> + '_ {
        self.found.iter().copied()
    }

    /// The most leading blocks any holder matched.
    ///
    /// ```
    /// assert_eq!(workerpick::prefix::Matches::new().longest(), 0);
    /// ```
    pub fn longest(&self) -> u32 {
        self.longest
    }

    /// The prompt's block count (what a full hit holds).
    ///
    /// ```
    /// assert_eq!(workerpick::prefix::Matches::new().needed(), 0);
    /// ```
    pub fn needed(&self) -> u32 {
        self.needed
    }

    /// Refills `hits` with these matches, for a pick from `pool` (the pool
    /// whose workers fed the index: tokens of another pool count for
    /// nothing, as do tokens of workers that left since).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// use workerpick::{CacheHits, Cost, Pool, Request};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let keys = [BlockKey::from_raw(1), BlockKey::from_raw(2)];
    /// index.stored(&pool, &"a", 0, &keys).unwrap();
    /// let (mut m, mut hits) = (Matches::new(), CacheHits::new());
    /// index.lookup(&keys, &mut m);
    /// m.fill(&pool, &mut hits);
    /// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
    /// assert_eq!(*r.worker(), "a");
    /// ```
    pub fn fill<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>, hits: &mut CacheHits) {
        hits.rebuild_tokens(pool, self.needed, self.iter());
    }

    /// One lookup of `keys` in `t` at time `now` (tokens of pool `pool`).
    pub(super) fn run(&mut self, t: &Table, pool: u64, keys: &[BlockKey], now: u64) {
        loop {
            let r1 = t.reuse_seq.load(Ordering::Acquire);
            if r1 & 1 == 1 {
                crate::sync::spin();
                continue;
            }
            self.walk(t, pool, keys, now);
            fence(Ordering::Acquire);
            if t.reuse_seq.load(Ordering::Relaxed) == r1 {
                return;
            }
        }
    }

    fn begin(&mut self, t: &Table, needed: usize) {
        self.found.clear();
        self.active.clear();
        self.needed = needed as u32;
        self.longest = 0;
        let groups = (t.holder_count.load(Ordering::Acquire) as usize).div_ceil(64);
        if self.pos.len() < groups {
            self.pos.resize(groups, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.pos.fill(0);
            self.stamp = 1;
        }
    }

    fn walk(&mut self, t: &Table, pool: u64, keys: &[BlockKey], now: u64) {
        self.begin(t, keys.len());
        let Some((first, rest)) = keys.split_first() else {
            return;
        };
        let mut block = std::mem::take(&mut self.block);
        let mut prev = t.read_block(first.raw(), now, &mut |e| match e {
            Some(e) => block.push(e),
            None => block.clear(),
        });
        for &(g, m) in &block {
            self.join(g, m);
        }
        self.block = block;
        let mut prev_key = first.raw();
        let mut done = 1;
        for batch in rest.chunks(BATCH) {
            // The probes of a batch do not depend on each other: their
            // cache misses overlap.
            let mut probes = [Probe::default(); BATCH];
            for (j, key) in batch.iter().enumerate() {
                probes[j] = t.probe(key.raw());
            }
            for (j, key) in batch.iter().enumerate() {
                if self.active.is_empty() {
                    return self.finish(t, pool, keys.len());
                }
                prev = self.narrow(t, pool, &prev, prev_key, probes[j], key.raw(), now, done);
                prev_key = key.raw();
                done += 1;
            }
            self.compact();
        }
        self.finish(t, pool, keys.len());
    }

    /// The holders still active matched every block.
    fn finish(&mut self, t: &Table, pool: u64, all: usize) {
        for p in 0..self.active.len() {
            let (g, m) = self.active[p];
            if m != 0 {
                self.emit(t, pool, g, m, all as u32);
            }
        }
        self.active.clear();
    }

    /// Block `done` of the prompt (`key`, probed as `c`; the block before
    /// it `prev_key`, read as `prev`): the active holders that do not hold
    /// it matched `done` blocks. When the block's parent is the block before
    /// it and neither has routed entries, its drops' list names exactly the
    /// parent's holders that do not hold it, and that short list is all it
    /// reads; both blocks must not have moved meanwhile. Otherwise it reads
    /// the block's holders. Returns the probe the read was validated with.
    #[allow(clippy::too_many_arguments)]
    fn narrow(
        &mut self,
        t: &Table,
        pool: u64,
        prev: &Probe,
        prev_key: u64,
        c: Probe,
        key: u64,
        now: u64,
        done: u32,
    ) -> Probe {
        let diff = c.head != EMPTY
            && c.flags & (HAS_PARENT | ROUTED | NO_DIFF) == HAS_PARENT
            && c.parent == prev_key
            && prev.flags & ROUTED == 0
            && prev.head != EMPTY;
        if diff {
            let block = &mut self.block;
            block.clear();
            t.read_list(c.drops, now, &mut |pair| block.push(pair));
            fence(Ordering::Acquire);
            if t.still(&c) && t.still(prev) {
                for i in 0..self.block.len() {
                    let (g, m) = self.block[i];
                    if let Some(p) = self.column(g) {
                        let (_, held) = self.active[p];
                        if held & m != 0 {
                            self.emit(t, pool, g, held & m, done);
                            self.active[p].1 = held & !m;
                        }
                    }
                }
                return c;
            }
        }
        let len = self.active.len();
        let (pos, stamp, acc) = (&self.pos, self.stamp, &mut self.acc);
        acc.clear();
        acc.resize(len, 0);
        let read = t.read_block(key, now, &mut |e| match e {
            Some((g, m)) => {
                if let Some(&p) = pos.get(g as usize)
                    && (p >> 32) as u32 == stamp
                {
                    acc[p as u32 as usize] |= m;
                }
            }
            None => acc.fill(0),
        });
        for p in 0..len {
            let (g, m) = self.active[p];
            let keep = m & self.acc[p];
            if m & !keep != 0 {
                self.emit(t, pool, g, m & !keep, done);
            }
            self.active[p].1 = keep;
        }
        read
    }

    /// Where holder group `g` is among the active ones.
    #[inline(always)]
    fn column(&self, g: u32) -> Option<usize> {
        match self.pos.get(g as usize) {
            Some(&p) if (p >> 32) as u32 == self.stamp => Some(p as u32 as usize),
            _ => None,
        }
    }

    /// Drops the groups with no active holder left.
    fn compact(&mut self) {
        let mut kept = 0;
        for p in 0..self.active.len() {
            let (g, m) = self.active[p];
            if m != 0 {
                self.active[kept] = (g, m);
                self.pos[g as usize] = u64::from(self.stamp) << 32 | kept as u64;
                kept += 1;
            } else {
                self.pos[g as usize] = 0;
            }
        }
        self.active.truncate(kept);
    }

    /// Block 0: holder group `g` holds it for the holders in `m`.
    fn join(&mut self, g: u32, m: u64) {
        let Some(pos) = self.pos.get_mut(g as usize) else {
            return; // a holder newer than the lookup's start
        };
        if (*pos >> 32) as u32 == self.stamp {
            self.active[*pos as u32 as usize].1 |= m;
        } else {
            *pos = u64::from(self.stamp) << 32 | self.active.len() as u64;
            self.active.push((g, m));
        }
    }

    /// The live holders of group `g` in `bits` matched `n` blocks.
    fn emit(&mut self, t: &Table, pool: u64, g: u32, mut bits: u64, n: u32) {
        while bits != 0 {
            let h = g * 64 + bits.trailing_zeros();
            bits &= bits - 1;
            let Some(rec) = t.holders.get(h as usize) else {
                continue;
            };
            if rec.state.load(Ordering::Acquire) == LIVE {
                let slot = rec.slot.load(Ordering::Relaxed);
                let generation = rec.generation.load(Ordering::Relaxed);
                self.found
                    .push((WorkerToken::from_parts(pool, slot, generation), n));
                self.longest = self.longest.max(n);
            }
        }
    }
}
