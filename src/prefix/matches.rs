//! A lookup's scratch and answer: reused per request, so a lookup allocates
//! nothing once its buffers fit the index.

use super::key::BlockKey;
use super::table::{EMPTY, LIVE, Probe, Table};

/// Blocks a lookup reads side by side.
const BATCH: usize = 8;
use crate::load::credit::{CacheHits, WorkerToken};
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
        t.read_block(first.raw(), now, &mut |e| match e {
            Some(e) => block.push(e),
            None => block.clear(),
        });
        for &(g, m) in &block {
            self.join(g, m);
        }
        self.block = block;
        let mut done = 1;
        for batch in rest.chunks(BATCH) {
            if self.active.is_empty() {
                break;
            }
            self.read_batch(t, batch, now);
            self.narrow(t, pool, batch.len(), done);
            done += batch.len() as u32;
        }
        for p in 0..self.active.len() {
            let (g, m) = self.active[p];
            self.emit(t, pool, g, m, keys.len() as u32);
        }
    }

    /// Reads up to [`BATCH`] blocks side by side (one step of each list in
    /// turn, so their entries' cache misses overlap rather than queue behind
    /// each other), into `acc`: row `j`, column `p` holds block `j`'s holders
    /// in active group `p`.
    fn read_batch(&mut self, t: &Table, batch: &[BlockKey], now: u64) {
        let len = self.active.len();
        let (pos, stamp, acc) = (&self.pos, self.stamp, &mut self.acc);
        acc.clear();
        acc.resize(batch.len() * len, 0);
        let column = |g: u32| match pos.get(g as usize) {
            Some(&p) if (p >> 32) as u32 == stamp => Some(p as u32 as usize),
            _ => None,
        };
        let mut probes = [Probe::default(); BATCH];
        let mut at = [EMPTY; BATCH];
        for (j, key) in batch.iter().enumerate() {
            probes[j] = t.probe(key.raw());
            at[j] = probes[j].head;
        }
        for _ in 0..=t.entries.len() {
            let mut moving = false;
            for j in 0..batch.len() {
                if at[j] == EMPTY {
                    continue;
                }
                let (pair, next) = t.step(at[j], now);
                if let Some((g, m)) = pair
                    && let Some(p) = column(g)
                {
                    acc[j * len + p] |= m;
                }
                at[j] = next;
                moving = true;
            }
            if !moving {
                break;
            }
        }
        fence(Ordering::Acquire);
        for (j, key) in batch.iter().enumerate() {
            if !t.still(&probes[j]) {
                let row = &mut acc[j * len..(j + 1) * len];
                t.read_block(key.raw(), now, &mut |e| match e {
                    Some((g, m)) => {
                        if let Some(p) = column(g) {
                            row[p] |= m;
                        }
                    }
                    None => row.fill(0),
                });
            }
        }
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

    /// The `rows` blocks after the first `done`, read into `acc`: the
    /// active holders missing from one matched the blocks before it.
    fn narrow(&mut self, t: &Table, pool: u64, rows: usize, done: u32) {
        let len = self.active.len();
        for j in 0..rows {
            let mut any = false;
            for p in 0..len {
                let (g, m) = self.active[p];
                let keep = m & self.acc[j * len + p];
                if m & !keep != 0 {
                    self.emit(t, pool, g, m & !keep, done + j as u32);
                }
                self.active[p].1 = keep;
                any |= keep != 0;
            }
            if !any {
                break;
            }
        }
        let mut kept = 0;
        for p in 0..len {
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
