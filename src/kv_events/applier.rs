//! One engine's event stream applied to the index, in sequence order.

use super::error::EventError;
use super::wire::{BlockRemoved, BlockStored, EngineHash, EventBatch, KvEvent, decode_batch};
use crate::credit::WorkerToken;
use crate::pool::Pool;
use crate::prefix::{BlockKey, IndexError, PrefixIndex};
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;

/// What [`EventApplier::feed`] did with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fed {
    /// Applied in order.
    Applied,
    /// Applied, and with it the batches held since a gap: the stream is
    /// whole again and the worker's credit counts again.
    Repaired,
    /// Its sequence number was applied already (a replay's overlap).
    Duplicate,
    /// A gap opened before it: the batches from `from` on are missing. The
    /// worker is marked degraded (credit 0) and the batch is held; ask the
    /// engine's replay socket for `from` onwards, then call
    /// [`replay_done`](EventApplier::replay_done).
    Gap {
        /// The first missing sequence number.
        from: u64,
    },
    /// Held while a gap waits for its replay.
    Held,
    /// It holds an `AllBlocksCleared`: what the gap missed no longer
    /// matters, and the stream is whole again from it.
    Resynced,
    /// Too many batches were held waiting for a replay: the gap is given up
    /// as by [`replay_done`](EventApplier::replay_done), this batch with it.
    GaveUp,
}

/// What an [`EventApplier`] applied and dropped (all counts since it was
/// built).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplierStats {
    /// Batches applied.
    pub batches: u64,
    /// Blocks stored into the index.
    pub stored: u64,
    /// Blocks removed from the index.
    pub removed: u64,
    /// `AllBlocksCleared` events applied.
    pub cleared: u64,
    /// Batches seen twice (dropped).
    pub duplicates: u64,
    /// Gaps opened.
    pub gaps: u64,
    /// Gaps a replay filled.
    pub repaired: u64,
    /// Gaps given up on: the worker's holdings dropped
    /// ([`replay_done`](EventApplier::replay_done)).
    pub resets: u64,
    /// Messages refused with an error (nothing applied).
    pub refused: u64,
    /// Engine restarts seen (batch 0 again after batch 1): each a reset.
    pub restarts: u64,
    /// Stored blocks not credited because their parent block is unknown
    /// (stored before the applier started, or lost in a gap).
    pub unknown_parent: u64,
    /// Removed blocks the applier never saw stored.
    pub unknown_hash: u64,
    /// Blocks of events not tracked: another medium than the GPU, another
    /// cache group than 0, or extra keys (see the module's rules).
    pub untracked: u64,
    /// Stored blocks not credited because the engine-hash map was full.
    pub map_full: u64,
    /// Stored blocks the index refused (full of holders, another pool).
    pub index_refused: u64,
}

/// Applies one engine's KV events (one data-parallel rank's stream) to a
/// [`PrefixIndex`], in the order of their sequence numbers.
///
/// - **Keys.** The index keys blocks by the router's own chained hash of
///   their tokens ([`BlockKey::chain`] over each block's `token_ids`, from
///   the parent's key, with the event's `lora_id` as the extra key), so a
///   stored block gets the same key a prompt's lookup computes with
///   [`keys_of_tokens`](crate::prefix::keys_of_tokens), whatever hash the
///   engine uses. The applier keeps a map from the engine's block hash to
///   that key, so that a `BlockRemoved` (which names engine hashes only)
///   and a later `BlockStored`'s parent can be resolved.
/// - **The map's bound.** It holds at most [`max_blocks`](Self::max_blocks)
///   hashes (default: the index's [`capacity`](PrefixIndex::capacity); set
///   it to the engine's cache size in blocks, at most that). Past it,
///   a newly stored block is not credited (counted in
///   [`ApplierStats::map_full`]): every block the index credits to this
///   engine can be removed again when the engine evicts it.
/// - **Gaps.** A sequence number past the next expected one means batches
///   were lost: the worker's credit is marked degraded in the index (0, as
///   a missed removal may have made it stale) and later batches are held
///   (at most [`max_pending`](Self::max_pending)), while the caller asks
///   the engine to replay from the first missing number. Once the missing
///   batches arrive the held ones are applied in order and the credit
///   counts again ([`Fed::Repaired`]). A held batch with an
///   `AllBlocksCleared` resynchronises at once ([`Fed::Resynced`]). A gap
///   that the replay cannot fill ([`replay_done`](Self::replay_done), or
///   too many held batches) drops the worker's holdings and the map, and
///   the credit starts again, exact, from the next batch: it may miss
///   blocks, never credit one the engine evicted. Batches numbered before
///   that point are stale from then on.
/// - **Restarts.** An engine that restarts numbers its batches from 0
///   again; batch 0 after batch 1 or later was seen resets the applier
///   (its holdings dropped, counted in [`ApplierStats::restarts`]) and
///   starts the stream from it. (Batch 0 seen twice in a row is taken as a
///   duplicate: an engine that restarts after a single batch is not told
///   from one; [`reset`](Self::reset) it when it re-registers.)
/// - **What is tracked.** Events of the GPU medium (`medium` `"GPU"` or
///   absent) and of KV cache group 0 (or absent), without extra keys;
///   others (CPU offload tiers, a hybrid model's other groups, multimodal
///   or salted blocks, whose keys the tokens alone do not give) are counted
///   in [`ApplierStats::untracked`] and not credited.
/// - **Bad input.** A payload that does not decode, a block size other than
///   the index's, token ids that are not `block_size` per block, a batch of
///   another rank, or a worker not in the pool: a typed [`EventError`], and
///   nothing of the message applied. Bytes from the network never panic.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::Pool;
/// use workerpick::kv_events::{BlockStored, EngineHash, EventApplier, EventBatch, Fed, KvEvent};
/// use workerpick::prefix::{IndexConfig, Matches, PrefixIndex, keys_of_tokens};
///
/// let pool = Arc::new(Pool::from_workers(["engine-0"]).unwrap());
/// let index = Arc::new(PrefixIndex::new(IndexConfig::exact(4)).unwrap());
/// let mut engine = EventApplier::new(index.clone(), pool.clone(), "engine-0", 0);
///
/// // The engine stored two blocks of 4 tokens (its own hashes 11 and 12).
/// let stored = BlockStored {
///     block_hashes: vec![EngineHash::from_raw(11), EngineHash::from_raw(12)],
///     token_ids: (0..8).collect(),
///     block_size: 4,
///     ..Default::default()
/// };
/// let batch = EventBatch::new(0.0, vec![KvEvent::BlockStored(stored)]);
/// assert_eq!(engine.apply(0, &batch), Ok(Fed::Applied));
///
/// // A prompt with those 8 tokens and 4 more: the first 2 blocks are cached.
/// let mut keys = Vec::new();
/// keys_of_tokens(&(0..12).collect::<Vec<u32>>(), 4, 0, &mut keys);
/// assert_eq!(index.lookup(&keys, &mut Matches::new()), 2);
///
/// // Batch 1 was lost: batch 2 opens a gap, the credit is not trusted.
/// let empty = EventBatch::new(0.0, vec![]);
/// assert_eq!(engine.apply(2, &empty), Ok(Fed::Gap { from: 1 }));
/// assert_eq!(index.lookup(&keys, &mut Matches::new()), 0);
/// // The replay brings batch 1: whole again.
/// assert_eq!(engine.apply(1, &EventBatch::new(0.0, vec![])), Ok(Fed::Repaired));
/// assert_eq!(index.lookup(&keys, &mut Matches::new()), 2);
/// ```
pub struct EventApplier<W> {
    index: Arc<PrefixIndex<W>>,
    pool: Arc<Pool<W>>,
    worker: W,
    rank: u32,
    engine_rank: Option<u32>,
    salt: u64,
    max_blocks: usize,
    max_pending: usize,
    map: HashMap<EngineHash, BlockKey>,
    /// The next sequence number to apply (`None` before the first).
    next: Option<u64>,
    /// After a reset: batches numbered below it are stale (one past the
    /// highest number seen before the reset).
    floor: u64,
    /// Batches past a gap, by sequence number (a gap is open iff non-empty).
    held: BTreeMap<u64, EventBatch>,
    keys: Vec<BlockKey>,
    stats: ApplierStats,
    last_index_error: Option<IndexError>,
}

/// Is an event of this medium and group, with or without extra keys,
/// one the index credits?
fn tracked(medium: Option<&str>, group: Option<u32>, extra: bool) -> bool {
    medium.is_none_or(|m| m.eq_ignore_ascii_case("gpu")) && group.is_none_or(|g| g == 0) && !extra
}

impl<W: Clone + Eq + Hash + Send + Sync> EventApplier<W> {
    /// The applier of rank `rank` of `worker` (0 without ranks), whose
    /// batches come from the engine's data-parallel rank `rank`.
    pub fn new(index: Arc<PrefixIndex<W>>, pool: Arc<Pool<W>>, worker: W, rank: u32) -> Self {
        let max_blocks = index.capacity() as usize;
        Self {
            index,
            pool,
            worker,
            rank,
            engine_rank: Some(rank),
            salt: 0,
            max_blocks,
            max_pending: 1024,
            map: HashMap::new(),
            next: None,
            floor: 0,
            held: BTreeMap::new(),
            keys: Vec::new(),
            stats: ApplierStats::default(),
            last_index_error: None,
        }
    }

    /// The data-parallel rank the engine's batches must carry (`None`:
    /// any), when it is not the pool's rank: an engine whose ranks are
    /// separate workers of the pool publishes rank `r` for worker
    /// `engine-r`, rank 0.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use workerpick::{Pool, kv_events::EventApplier, prefix::{IndexConfig, PrefixIndex}};
    /// let pool = Arc::new(Pool::from_workers(["engine-3"]).unwrap());
    /// let index = Arc::new(PrefixIndex::new(IndexConfig::exact(16)).unwrap());
    /// let _ = EventApplier::new(index, pool, "engine-3", 0).engine_rank(Some(3));
    /// ```
    pub fn engine_rank(mut self, rank: Option<u32>) -> Self {
        self.engine_rank = rank;
        self
    }

    /// The extra word of the router's keys (default 0): a stored block is
    /// keyed `BlockKey::chain(parent, tokens, salt ^ lora_id)`, so a router
    /// whose lookups key prompts with
    /// [`keys_of_tokens`](crate::prefix::keys_of_tokens)`(tokens, size,
    /// salt, ..)` (a domain separator of its own) finds what the engine
    /// stored.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use workerpick::{Pool, kv_events::{BlockStored, EngineHash, EventApplier, EventBatch, KvEvent}};
    /// # use workerpick::prefix::{IndexConfig, Matches, PrefixIndex, keys_of_tokens};
    /// # let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    /// let index = Arc::new(PrefixIndex::new(IndexConfig::exact(2)).unwrap());
    /// let mut e = EventApplier::new(index.clone(), pool, "e", 0).key_salt(7);
    /// let stored = BlockStored {
    ///     block_hashes: vec![EngineHash::from_raw(1)],
    ///     token_ids: vec![5, 6],
    ///     block_size: 2,
    ///     ..Default::default()
    /// };
    /// e.apply(0, &EventBatch::new(0.0, vec![KvEvent::BlockStored(stored)])).unwrap();
    /// let (mut salted, mut plain) = (Vec::new(), Vec::new());
    /// keys_of_tokens(&[5, 6], 2, 7, &mut salted);
    /// keys_of_tokens(&[5, 6], 2, 0, &mut plain);
    /// assert_eq!(index.lookup(&salted, &mut Matches::new()), 1);
    /// assert_eq!(index.lookup(&plain, &mut Matches::new()), 0);
    /// ```
    pub fn key_salt(mut self, salt: u64) -> Self {
        self.salt = salt;
        self
    }

    /// The most engine hashes the applier maps to keys (default: the
    /// index's capacity): see the type's rules.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use workerpick::{Pool, kv_events::EventApplier, prefix::{IndexConfig, PrefixIndex}};
    /// # let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    /// # let index = Arc::new(PrefixIndex::new(IndexConfig::exact(16)).unwrap());
    /// let _ = EventApplier::new(index, pool, "e", 0).max_blocks(65_536);
    /// ```
    pub fn max_blocks(mut self, blocks: usize) -> Self {
        self.max_blocks = blocks;
        self
    }

    /// The most batches held while a gap waits for its replay (default
    /// 1 024); one more gives the gap up (see the type's rules).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use workerpick::{Pool, kv_events::EventApplier, prefix::{IndexConfig, PrefixIndex}};
    /// # let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    /// # let index = Arc::new(PrefixIndex::new(IndexConfig::exact(16)).unwrap());
    /// let _ = EventApplier::new(index, pool, "e", 0).max_pending(64);
    /// ```
    pub fn max_pending(mut self, batches: usize) -> Self {
        self.max_pending = batches.max(1);
        self
    }

    /// The worker whose events this applies.
    pub fn worker(&self) -> &W {
        &self.worker
    }

    /// Its rank in the pool.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// What was applied and dropped.
    pub fn stats(&self) -> ApplierStats {
        self.stats
    }

    /// Engine hashes mapped now (at most [`max_blocks`](Self::max_blocks)).
    pub fn mapped(&self) -> usize {
        self.map.len()
    }

    /// The sequence number of the first missing batch while a gap is open.
    pub fn gap(&self) -> Option<u64> {
        if self.held.is_empty() { None } else { self.next }
    }

    /// The next sequence number the applier expects (`None` before the first).
    pub fn next_seq(&self) -> Option<u64> {
        self.next
    }

    /// The index's last refusal of a store (see [`ApplierStats::index_refused`]).
    pub fn last_index_error(&self) -> Option<&IndexError> {
        self.last_index_error.as_ref()
    }

    /// Decodes and applies one message as vLLM publishes it: the frames
    /// `[topic, sequence (8 bytes, big-endian), payload]` (the topic may be
    /// absent: `[sequence, payload]`, as the replay socket answers).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use workerpick::{Pool, kv_events::{EventApplier, EventError}, prefix::{IndexConfig, PrefixIndex}};
    /// # let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    /// # let index = Arc::new(PrefixIndex::new(IndexConfig::exact(16)).unwrap());
    /// let mut engine = EventApplier::new(index, pool, "e", 0);
    /// let err = engine.feed(&[b"kv", &[0; 3], b""]).unwrap_err();
    /// assert!(matches!(err, EventError::Frames { .. }));
    /// ```
    pub fn feed(&mut self, frames: &[&[u8]]) -> Result<Fed, EventError> {
        let (seq, payload) = match frames {
            [_, seq, payload] | [seq, payload] => (*seq, *payload),
            _ => {
                self.stats.refused += 1;
                return Err(EventError::Frames {
                    why: "expected [topic, sequence, payload]",
                });
            }
        };
        let Ok(seq) = <[u8; 8]>::try_from(seq) else {
            self.stats.refused += 1;
            return Err(EventError::Frames {
                why: "the sequence frame is not 8 bytes",
            });
        };
        self.feed_payload(u64::from_be_bytes(seq), payload)
    }

    /// Decodes and applies the batch `payload` numbered `seq`.
    pub fn feed_payload(&mut self, seq: u64, payload: &[u8]) -> Result<Fed, EventError> {
        match decode_batch(payload) {
            Ok(batch) => self.apply(seq, &batch),
            Err(e) => {
                self.stats.refused += 1;
                Err(e.into())
            }
        }
    }

    /// Applies the decoded batch numbered `seq` (see the type's rules on
    /// order and gaps).
    pub fn apply(&mut self, seq: u64, batch: &EventBatch) -> Result<Fed, EventError> {
        if let Err(e) = self.check(batch) {
            self.stats.refused += 1;
            return Err(e);
        }
        // Batch 0 once batch 1 was seen: the engine restarted (its PUB never
        // sends a number twice, and a replay starts at 1 or later): what it
        // held before is gone.
        if seq == 0 && self.next.unwrap_or(0).max(self.floor) > 1 {
            self.stats.restarts += 1;
            self.reset();
            self.floor = 0;
        }
        let Some(next) = self.next else {
            if seq < self.floor {
                self.stats.duplicates += 1;
                return Ok(Fed::Duplicate);
            }
            self.apply_now(seq, batch);
            return Ok(Fed::Applied);
        };
        if seq < next || self.held.contains_key(&seq) {
            self.stats.duplicates += 1;
            return Ok(Fed::Duplicate);
        }
        if seq == next {
            self.apply_now(seq, batch);
            if self.held.is_empty() {
                return Ok(Fed::Applied);
            }
            // A replay's batch: whole once it reaches the held ones (until
            // then the replay under way brings the rest).
            return Ok(match self.drain() {
                None => {
                    self.stats.repaired += 1;
                    Fed::Repaired
                }
                Some(_) => Fed::Applied,
            });
        }
        // Past a gap.
        if batch.events.contains(&KvEvent::AllBlocksCleared) {
            let was_open = !self.held.is_empty();
            self.held.retain(|&s, _| s > seq);
            self.apply_now(seq, batch);
            return Ok(match self.drain() {
                None => {
                    self.stats.repaired += u64::from(was_open);
                    Fed::Resynced
                }
                Some(from) => Fed::Gap { from },
            });
        }
        let opened = self.held.is_empty();
        self.held.insert(seq, batch.clone());
        if opened {
            self.stats.gaps += 1;
            self.index.set_degraded(&self.worker, self.rank, true);
            return Ok(Fed::Gap { from: next });
        }
        if self.held.len() > self.max_pending {
            self.reset();
            return Ok(Fed::GaveUp);
        }
        Ok(Fed::Held)
    }

    /// Says the replay asked for after a [`Fed::Gap`] has ended (or that
    /// there is none): a gap still open is given up, the worker's holdings
    /// and the engine-hash map are dropped, and the credit starts again
    /// from the next batch. Returns whether the stream is whole.
    pub fn replay_done(&mut self) -> bool {
        if self.held.is_empty() {
            return true;
        }
        self.reset();
        false
    }

    /// Forgets everything this engine said: its holdings in the index, the
    /// map, any gap; the next batch starts the stream again.
    pub fn reset(&mut self) {
        self.stats.resets += 1;
        let seen = self.held.last_key_value().map(|(&s, _)| s.saturating_add(1));
        self.floor = self.floor.max(self.next.unwrap_or(0)).max(seen.unwrap_or(0));
        self.held.clear();
        self.map.clear();
        self.next = None;
        self.index.cleared(&self.worker, Some(self.rank));
    }

    /// After `next` was applied: applies the held batches that follow in
    /// order. `None`: none is left, the stream is whole and the credit
    /// counts again; else the first still missing sequence number (the
    /// credit stays degraded).
    fn drain(&mut self) -> Option<u64> {
        while let Some(entry) = self.held.first_entry() {
            let next = self.next.unwrap_or(0);
            if *entry.key() != next {
                self.index.set_degraded(&self.worker, self.rank, true);
                return Some(next);
            }
            let (seq, batch) = entry.remove_entry();
            self.apply_now(seq, &batch);
        }
        self.index.set_degraded(&self.worker, self.rank, false);
        None
    }

    fn check(&self, batch: &EventBatch) -> Result<(), EventError> {
        if let (Some(expected), Some(got)) = (self.engine_rank, batch.data_parallel_rank)
            && expected != got
        {
            return Err(EventError::Rank { expected, got });
        }
        if WorkerToken::of_rank(&self.pool, &self.worker, self.rank).is_none() {
            return Err(EventError::Index(IndexError::UnknownWorker));
        }
        let expected = self.index.block_size();
        for ev in &batch.events {
            let KvEvent::BlockStored(s) = ev else { continue };
            if !tracked(s.medium.as_deref(), s.group_idx, s.has_extra_keys) {
                continue;
            }
            if s.block_size != expected {
                return Err(EventError::BlockSize {
                    expected,
                    got: s.block_size,
                });
            }
            if s.token_ids.len() as u64 != s.block_hashes.len() as u64 * u64::from(expected) {
                return Err(EventError::TokenCount {
                    blocks: s.block_hashes.len(),
                    block_size: s.block_size,
                    tokens: s.token_ids.len(),
                });
            }
        }
        Ok(())
    }

    fn apply_now(&mut self, seq: u64, batch: &EventBatch) {
        for ev in &batch.events {
            match ev {
                KvEvent::BlockStored(s) => self.stored(s),
                KvEvent::BlockRemoved(r) => self.removed(r),
                KvEvent::AllBlocksCleared => {
                    self.stats.cleared += 1;
                    self.map.clear();
                    self.index.cleared(&self.worker, Some(self.rank));
                }
            }
        }
        self.stats.batches += 1;
        self.next = Some(seq.wrapping_add(1));
    }

    fn stored(&mut self, s: &BlockStored) {
        let n = s.block_hashes.len() as u64;
        if !tracked(s.medium.as_deref(), s.group_idx, s.has_extra_keys) {
            self.stats.untracked += n;
            return;
        }
        let parent = match s.parent_block_hash {
            None => None,
            Some(h) => match self.map.get(&h) {
                Some(&k) => Some(k),
                None => {
                    self.stats.unknown_parent += n;
                    return;
                }
            },
        };
        // The chain's leading blocks that fit in the map (a block already
        // mapped takes no room).
        let mut room = self.max_blocks.saturating_sub(self.map.len());
        let fit = s
            .block_hashes
            .iter()
            .take_while(|h| {
                if self.map.contains_key(h) {
                    true
                } else if room > 0 {
                    room -= 1;
                    true
                } else {
                    false
                }
            })
            .count();
        self.stats.map_full += n - fit as u64;
        let extra = self.salt ^ s.lora_id.unwrap_or(0);
        let block = self.index.block_size() as usize;
        self.keys.clear();
        let mut prev = parent;
        for tokens in s.token_ids.chunks_exact(block).take(fit) {
            let key = BlockKey::chain(prev, tokens, extra);
            self.keys.push(key);
            prev = Some(key);
        }
        match self
            .index
            .stored_after(&self.pool, &self.worker, self.rank, parent, &self.keys)
        {
            Ok(_) => {
                self.stats.stored += fit as u64;
                for (h, k) in s.block_hashes.iter().zip(&self.keys) {
                    self.map.insert(*h, *k);
                }
            }
            Err(e) => {
                self.stats.index_refused += fit as u64;
                self.last_index_error = Some(e);
            }
        }
    }

    fn removed(&mut self, r: &BlockRemoved) {
        if !tracked(r.medium.as_deref(), r.group_idx, false) {
            self.stats.untracked += r.block_hashes.len() as u64;
            return;
        }
        self.keys.clear();
        for h in &r.block_hashes {
            match self.map.remove(h) {
                Some(k) => self.keys.push(k),
                None => self.stats.unknown_hash += 1,
            }
        }
        if !self.keys.is_empty() {
            self.stats.removed += self.keys.len() as u64;
            self.index.removed(&self.worker, self.rank, &self.keys);
        }
    }
}

impl<W: std::fmt::Debug> std::fmt::Debug for EventApplier<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventApplier")
            .field("worker", &self.worker)
            .field("rank", &self.rank)
            .field("next", &self.next)
            .field("held", &self.held.len())
            .field("mapped", &self.map.len())
            .finish_non_exhaustive()
    }
}
