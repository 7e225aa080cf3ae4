//! A prefix index: which workers (and data-parallel ranks) cache which KV
//! blocks, learned from the engines' KV events or from routing decisions,
//! read by lookups without a lock. Its answer is the cost mode's credit.
//!
//! See [`PrefixIndex`] for the rules it keeps and what it costs.

mod clock;
mod config;
mod error;
mod key;
mod matches;
mod table;
mod writer;

pub use config::{IndexConfig, MAX_INDEX_CAPACITY};
pub use error::IndexError;
pub use key::{BlockKey, keys_of_ids, keys_of_tokens};
pub use matches::Matches;

use crate::credit::WorkerToken;
use crate::pool::Pool;
use crate::sync::Mutex;
use crate::sync::atomic::{AtomicU64, Ordering};
use clock::Clock;
use std::hash::Hash;
use table::{DEGRADED, LIVE, NEVER, Table};
use writer::Writer;

/// Which workers hold which KV blocks: the index a KV-aware router keeps,
/// built in.
///
/// - **Exact**, from the engines' events: [`stored`](Self::stored),
///   [`removed`](Self::removed), [`cleared`](Self::cleared), per (worker,
///   rank). One worker's removal or clear never changes another's holdings.
/// - **Approximate**, from routing: [`routed`](Self::routed) records that a
///   request with these blocks went to a worker, held for the configured TTL
///   (120 s in [`IndexConfig::approximate`]; 2 s as the speculative overlay
///   of [`IndexConfig::exact`], covering the time before the engine's
///   events arrive).
/// - **Lookup**: [`lookup`](Self::lookup) gives each holder its count of
///   *leading* blocks of a prompt (a hole ends the match) in one pass over
///   the prompt, without a lock, allocating nothing once its [`Matches`]
///   fit; [`Matches::fill`] turns it into the [`CacheHits`](crate::CacheHits)
///   the [`Cost`](crate::Cost) mode reads.
///
/// A holder's credit goes to 0 when the worker leaves the pool (its tokens
/// name nobody), when [`set_degraded`](Self::set_degraded) says its events
/// have a gap, and when it is removed here ([`remove_worker`](Self::remove_worker),
/// or [`retain_members`](Self::retain_members) after a pool change).
///
/// **Memory and eviction.** Everything is allocated up front from the
/// configuration: 32 B per block slot (2 slots per block of capacity,
/// rounded up to a power of two), 24 B per entry and 12 B per holder. An
/// entry holds up to 64 holders of one block from events (a group of 64
/// holder numbers), one holder's routed decision, or up to 64 of the
/// parent's holders that do not hold the block (its drops, what lets a
/// lookup skip the holders that go on). A (block, holder) pair therefore
/// costs 24 B per entry over the holders it carries plus the block's 64 B
/// of slots over its holders: 88 B for a block held once, a few bytes when
/// many holders share blocks ([`IndexStats::bytes_per_holding`] measures
/// it). When the blocks or entries are all taken, a new entry evicts the
/// routed entry that expires first; an event's store that finds no room is
/// dropped and counted in [`IndexStats::dropped_full`]: the index never
/// credits a block it was not told of, it may only miss some (size it above
/// the engines' total cache).
///
/// **Concurrency.** Writers take a mutex (one applies at a time); lookups
/// take none: each block is a seqlock, read again when a writer changed it
/// during the read, so a lookup sees a block as held by a worker only if a
/// store (or live routed decision) for it happened before the lookup ended,
/// and no removal that finished before the lookup started.
///
/// ```
/// use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex, keys_of_tokens};
/// use workerpick::{CacheHits, Cost, Pool, Request};
/// let pool = Pool::from_workers(["e0", "e1"]).unwrap();
/// let index = PrefixIndex::new(IndexConfig::exact(4)).unwrap();
/// let prompt: Vec<u32> = (0..16).collect();
/// let mut keys = Vec::new();
/// keys_of_tokens(&prompt, 4, 0, &mut keys);
/// index.stored(&pool, &"e1", 0, &keys[..3]).unwrap(); // e1 cached 3 blocks
/// let (mut found, mut hits) = (Matches::new(), CacheHits::new());
/// index.lookup(&keys, &mut found);
/// found.fill(&pool, &mut hits);
/// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
/// assert_eq!(*r.worker(), "e1");
/// ```
pub struct PrefixIndex<W> {
    table: Table,
    writer: Mutex<Writer<W>>,
    /// The pool whose tokens the holders carry (0 until the first event).
    pool: AtomicU64,
    clock: Clock,
    block_size: u32,
    capacity: u32,
    routed_ttl_ms: u64,
}

/// What an index holds and what it dropped ([`PrefixIndex::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexStats {
    /// Distinct blocks held.
    pub blocks: u64,
    /// Entries in use (see the memory rule on [`PrefixIndex`]).
    pub entries: u64,
    /// (block, holder) pairs held, from events and routing.
    pub holdings: u64,
    /// Holders known.
    pub holders: u64,
    /// Holders marked degraded (credit 0 until repaired).
    pub degraded: u64,
    /// Stores dropped because the index was full.
    pub dropped_full: u64,
    /// Removals of blocks the holder was not recorded holding.
    pub removed_not_held: u64,
    /// Removals or clears for a holder the index does not know.
    pub unknown_holder: u64,
    /// Bytes the index allocated.
    pub bytes: u64,
    /// Times the writer rewrote the slot table to drop the tombstones that
    /// removed blocks leave (lookups overlapping one start again).
    pub compactions: u64,
}

impl IndexStats {
    /// Bytes per (block, holder) pair held (0 when empty).
    ///
    /// ```
    /// let s = workerpick::prefix::IndexStats::default();
    /// assert_eq!(s.bytes_per_holding(), 0.0);
    /// ```
    pub fn bytes_per_holding(&self) -> f64 {
        if self.holdings == 0 {
            0.0
        } else {
            self.bytes as f64 / self.holdings as f64
        }
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> PrefixIndex<W> {
    /// An empty index sized by `config` (all its memory allocated now).
    ///
    /// ```
    /// use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::<String>::new(IndexConfig::exact(16).capacity(1024)).unwrap();
    /// assert_eq!(index.stats().blocks, 0);
    /// ```
    pub fn new(config: IndexConfig) -> Result<Self, IndexError> {
        config.check()?;
        let slots = (config.capacity as usize * 2).next_power_of_two().max(8);
        let table = Table::new(slots, config.entry_count() as usize, config.max_holders as usize);
        let writer = Writer::new(&table, config.capacity);
        Ok(Self {
            writer: Mutex::new(writer),
            table,
            pool: AtomicU64::new(0),
            clock: Clock::new(config.manual_clock),
            block_size: config.block_size,
            capacity: config.capacity,
            routed_ttl_ms: (config.routed_ttl.as_millis() as u64).max(1),
        })
    }

    /// Tokens per block (an engine event's `block_size` must equal it).
    ///
    /// ```
    /// # use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::<u32>::new(IndexConfig::exact(16)).unwrap();
    /// assert_eq!(index.block_size(), 16);
    /// ```
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// The most distinct blocks it holds at once ([`IndexConfig::capacity`]).
    ///
    /// ```
    /// # use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::<u32>::new(IndexConfig::exact(16).capacity(4096)).unwrap();
    /// assert_eq!(index.capacity(), 4096);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The token of (worker, rank) in `pool`, binding the index to `pool`.
    fn token(&self, pool: &Pool<W>, worker: &W, rank: u32) -> Result<WorkerToken, IndexError> {
        let token = WorkerToken::of_rank(pool, worker, rank).ok_or(IndexError::UnknownWorker)?;
        match self
            .pool
            .compare_exchange(0, pool.id(), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(token),
            Err(id) if id == pool.id() => Ok(token),
            Err(_) => Err(IndexError::OtherPool),
        }
    }

    /// Applies an engine's "blocks stored" event: rank `rank` of `worker`
    /// (0 without ranks) now holds `keys`, a chain (each key's parent is the
    /// one before it; the first is a prompt's first block, or see
    /// [`stored_after`](Self::stored_after)). Returns how many were recorded
    /// (the rest were dropped for want of room and counted).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// assert_eq!(index.stored(&pool, &"a", 0, &[BlockKey::from_raw(7)]), Ok(1));
    /// assert!(index.stored(&pool, &"zz", 0, &[BlockKey::from_raw(7)]).is_err());
    /// ```
    pub fn stored(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
        keys: &[BlockKey],
    ) -> Result<usize, IndexError> {
        self.add(pool, worker, rank, None, keys, NEVER)
    }

    /// [`stored`](Self::stored) for a chain that continues the block
    /// `parent` (an event's `parent_block_hash`, as the router's key).
    /// Knowing each block's parent is what lets a lookup read only the
    /// holders that stop at a block rather than all that hold it.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let k: Vec<_> = (1..=3).map(BlockKey::from_raw).collect();
    /// index.stored(&pool, &"a", 0, &k[..1]).unwrap();
    /// index.stored_after(&pool, &"a", 0, Some(k[0]), &k[1..]).unwrap();
    /// assert_eq!(index.lookup(&k, &mut Matches::new()), 3);
    /// ```
    pub fn stored_after(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
        parent: Option<BlockKey>,
        keys: &[BlockKey],
    ) -> Result<usize, IndexError> {
        self.add(pool, worker, rank, parent, keys, NEVER)
    }

    /// Records a routing decision: the request with `keys` went to rank
    /// `rank` of `worker`, so it will hold them; counted for the TTL (the
    /// approximate mode's only source, exact mode's speculative overlay).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::approximate(16).manual_clock()).unwrap();
    /// let keys = [BlockKey::from_raw(7)];
    /// index.routed(&pool, &"a", 0, &keys).unwrap();
    /// let mut m = Matches::new();
    /// assert_eq!(index.lookup(&keys, &mut m), 1);
    /// index.set_now(120_000); // the TTL later
    /// assert_eq!(index.lookup(&keys, &mut m), 0);
    /// ```
    pub fn routed(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
        keys: &[BlockKey],
    ) -> Result<usize, IndexError> {
        let expires = self.clock.now().saturating_add(self.routed_ttl_ms);
        self.add(pool, worker, rank, None, keys, expires)
    }

    fn add(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
        parent: Option<BlockKey>,
        keys: &[BlockKey],
        expires: u64,
    ) -> Result<usize, IndexError> {
        let token = self.token(pool, worker, rank)?;
        let (slot, generation) = token.parts();
        let mut w = crate::sync::lock(&self.writer);
        w.expire(&self.table, self.clock.now());
        let max = self.table.holders.len() as u32;
        let h = w
            .holder(&self.table, (worker.clone(), rank), slot, generation)
            .ok_or(IndexError::HoldersFull { max })?;
        let parents = std::iter::once(parent).chain(keys.iter().copied().map(Some));
        Ok(keys
            .iter()
            .zip(parents)
            .filter(|(k, p)| w.add(&self.table, k.raw(), p.map(BlockKey::raw), h, expires))
            .count())
    }

    /// Applies an engine's "blocks removed" event for rank `rank` of
    /// `worker`: only its holdings change. Returns how many it held; a block
    /// it did not hold (or an unknown holder) is counted, not an error, as
    /// engines may report evictions of blocks stored before the index
    /// started.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a", "b"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let k = [BlockKey::from_raw(7)];
    /// index.stored(&pool, &"a", 0, &k).unwrap();
    /// index.stored(&pool, &"b", 0, &k).unwrap();
    /// assert_eq!(index.removed(&"a", 0, &k), 1);
    /// let mut m = Matches::new();
    /// index.lookup(&k, &mut m);
    /// assert_eq!(m.iter().count(), 1); // b still holds it
    /// ```
    pub fn removed(&self, worker: &W, rank: u32, keys: &[BlockKey]) -> usize {
        let mut w = crate::sync::lock(&self.writer);
        w.expire(&self.table, self.clock.now());
        let Some(&h) = w.holders.get(&(worker.clone(), rank)) else {
            w.drops.unknown_holder += 1;
            return 0;
        };
        let mut held = 0;
        for k in keys {
            match w.find(&self.table, k.raw()) {
                Some(s) if w.remove(&self.table, s, h) => held += 1,
                _ => w.drops.never_stored += 1,
            }
        }
        held
    }

    /// Applies an engine's "all blocks cleared" event: rank `rank` of
    /// `worker` holds nothing (every rank with `None`).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let k = [BlockKey::from_raw(7)];
    /// index.stored(&pool, &"a", 0, &k).unwrap();
    /// index.cleared(&"a", None);
    /// assert_eq!(index.lookup(&k, &mut Matches::new()), 0);
    /// ```
    pub fn cleared(&self, worker: &W, rank: Option<u32>) {
        let mut w = crate::sync::lock(&self.writer);
        let mine: Vec<u32> = w
            .holders
            .iter()
            .filter(|((wk, r), _)| wk == worker && rank.is_none_or(|x| x == *r))
            .map(|(_, &h)| h)
            .collect();
        if mine.is_empty() {
            w.drops.unknown_holder += 1;
        }
        for h in mine {
            w.retire(&self.table, h);
        }
    }

    /// Forgets `worker` (every rank): what to call when it leaves the pool.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// index.stored(&pool, &"a", 0, &[BlockKey::from_raw(7)]).unwrap();
    /// index.remove_worker(&"a");
    /// assert_eq!(index.stats().holdings, 0);
    /// ```
    pub fn remove_worker(&self, worker: &W) {
        self.cleared(worker, None);
    }

    /// Forgets every holder that is no longer the same member of `pool`
    /// (it left, or left and joined again): after a membership change.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a", "b"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// index.stored(&pool, &"a", 0, &[BlockKey::from_raw(7)]).unwrap();
    /// pool.remove(&"a").unwrap();
    /// index.retain_members(&pool);
    /// assert_eq!(index.stats().holders, 0);
    /// ```
    pub fn retain_members(&self, pool: &Pool<W>) {
        let mut w = crate::sync::lock(&self.writer);
        let gone: Vec<u32> = w
            .holders
            .iter()
            .filter(|(key, h)| {
                let (wk, r) = key;
                let rec = &self.table.holders[**h as usize];
                let now = (
                    rec.slot.load(Ordering::Relaxed),
                    rec.generation.load(Ordering::Relaxed),
                );
                WorkerToken::of_rank(pool, wk, *r).is_none_or(|t| t.parts() != now)
            })
            .map(|(_, &h)| h)
            .collect();
        for h in gone {
            w.retire(&self.table, h);
        }
    }

    /// Marks rank `rank` of `worker` degraded (its event stream has a gap:
    /// its credit is 0 until it is whole again) or whole. Unknown holders are
    /// ignored (they hold nothing).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let k = [BlockKey::from_raw(7)];
    /// index.stored(&pool, &"a", 0, &k).unwrap();
    /// index.set_degraded(&"a", 0, true);
    /// assert_eq!(index.lookup(&k, &mut Matches::new()), 0);
    /// assert_eq!(index.stats().degraded, 1);
    /// index.set_degraded(&"a", 0, false);
    /// assert_eq!(index.lookup(&k, &mut Matches::new()), 1);
    /// ```
    pub fn set_degraded(&self, worker: &W, rank: u32, degraded: bool) {
        let w = crate::sync::lock(&self.writer);
        if let Some(&h) = w.holders.get(&(worker.clone(), rank)) {
            let state = if degraded { DEGRADED } else { LIVE };
            self.table.holders[h as usize]
                .state
                .store(state, Ordering::Release);
        }
    }

    /// Whether rank `rank` of `worker` is marked degraded.
    ///
    /// ```
    /// # use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// assert!(!index.is_degraded(&"a", 0));
    /// ```
    pub fn is_degraded(&self, worker: &W, rank: u32) -> bool {
        let w = crate::sync::lock(&self.writer);
        w.holders
            .get(&(worker.clone(), rank))
            .is_some_and(|&h| self.table.holders[h as usize].state.load(Ordering::Relaxed) == DEGRADED)
    }

    /// Sets the manual clock (see [`IndexConfig::manual_clock`]) to `ms`
    /// (never backwards) and drops the routed entries expired by then. On a
    /// real clock it only drops what expired.
    ///
    /// ```
    /// # use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::<u8>::new(IndexConfig::approximate(16).manual_clock()).unwrap();
    /// index.set_now(5_000);
    /// assert_eq!(index.now_ms(), 5_000);
    /// ```
    pub fn set_now(&self, ms: u64) {
        self.clock.set(ms);
        let mut w = crate::sync::lock(&self.writer);
        w.expire(&self.table, self.clock.now());
    }

    /// The index's clock, in ms.
    ///
    /// ```
    /// # use workerpick::prefix::{IndexConfig, PrefixIndex};
    /// let index = PrefixIndex::<u8>::new(IndexConfig::exact(16).manual_clock()).unwrap();
    /// assert_eq!(index.now_ms(), 0);
    /// ```
    pub fn now_ms(&self) -> u64 {
        self.clock.now()
    }

    /// Each holder's count of leading blocks of `keys`, into `out`; returns
    /// the longest. No lock, no allocation once `out` fits the index.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, Matches, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// let keys: Vec<_> = (0..3).map(BlockKey::from_raw).collect();
    /// index.stored(&pool, &"a", 0, &[keys[0], keys[2]]).unwrap(); // a hole at 1
    /// assert_eq!(index.lookup(&keys, &mut Matches::new()), 1);
    /// ```
    pub fn lookup(&self, keys: &[BlockKey], out: &mut Matches) -> u32 {
        out.run(
            &self.table,
            self.pool.load(Ordering::Acquire),
            keys,
            self.clock.now(),
        );
        out.longest()
    }

    /// Distinct blocks held and bytes allocated: [`stats`](Self::stats)'
    /// `blocks` and `bytes` without its walk (the writer's lock for a read),
    /// for a metrics page scraped while requests and events go on.
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// index.stored(&pool, &"a", 0, &[BlockKey::from_raw(1), BlockKey::from_raw(2)]).unwrap();
    /// let (blocks, bytes) = index.size();
    /// assert_eq!((blocks, bytes), (index.stats().blocks, index.stats().bytes));
    /// ```
    pub fn size(&self) -> (u64, u64) {
        let blocks = u64::from(crate::sync::lock(&self.writer).live_blocks);
        (blocks, self.table.bytes() as u64)
    }

    /// What the index holds and dropped (takes the writer's lock and walks
    /// the whole table, O(capacity), holding it: stores, removals and
    /// routing decisions wait meanwhile; for tests and occasional
    /// inspection; a metrics page reads [`size`](Self::size)).
    ///
    /// ```
    /// # use workerpick::prefix::{BlockKey, IndexConfig, PrefixIndex};
    /// let pool = workerpick::Pool::from_workers(["a", "b"]).unwrap();
    /// let index = PrefixIndex::new(IndexConfig::exact(16)).unwrap();
    /// index.stored(&pool, &"a", 0, &[BlockKey::from_raw(1)]).unwrap();
    /// index.stored(&pool, &"b", 0, &[BlockKey::from_raw(1)]).unwrap();
    /// let s = index.stats();
    /// assert_eq!((s.blocks, s.entries, s.holdings, s.holders), (1, 1, 2, 2));
    /// ```
    pub fn stats(&self) -> IndexStats {
        let w = crate::sync::lock(&self.writer);
        let now = self.clock.now();
        let holdings = w.holdings(&self.table, now);
        let degraded = w
            .holders
            .values()
            .filter(|&&h| self.table.holders[h as usize].state.load(Ordering::Relaxed) == DEGRADED)
            .count();
        IndexStats {
            blocks: u64::from(w.live_blocks),
            entries: w.entries_used() as u64,
            holdings,
            holders: w.holders.len() as u64,
            degraded: degraded as u64,
            dropped_full: w.drops.full,
            removed_not_held: w.drops.never_stored,
            unknown_holder: w.drops.unknown_holder,
            bytes: self.table.bytes() as u64,
            compactions: w.compactions,
        }
    }
}

impl<W> std::fmt::Debug for PrefixIndex<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixIndex")
            .field("block_size", &self.block_size)
            .field("slots", &self.table.slots.len())
            .finish_non_exhaustive()
    }
}
