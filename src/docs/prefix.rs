//! The prefix index ([`PrefixIndex`](crate::prefix::PrefixIndex)): how it
//! is laid out, why a lookup needs no lock, what it costs and where it stops.
//!
//! # Layout
//! All memory is allocated when the index is built, from its
//! [`IndexConfig`](crate::prefix::IndexConfig):
//!
//! - **Block slots**: an open-addressing table (linear probing, 2 slots per
//!   block of capacity, a power of two) of `{seq, head, drops, flags, key,
//!   parent}`, 32 B. `head` is the first entry of the block's list, or
//!   `EMPTY` (never used: ends a probe) or `TOMB` (the block went: a probe
//!   goes on). A removal that leaves a tombstone in front of an empty slot
//!   empties it and the tombstones before it, and at most 7/8 of the slots are ever in use, so
//!   every probe ends. A store of a new block that would pass 7/8 while
//!   tombstones remain first *compacts* the table: every live block is
//!   rewritten at the first empty slot of its probe, tombstones go. Live
//!   blocks are at most half the slots, so at least 3/8 of them went since
//!   the last compaction: its O(slots) cost is O(1) per removal, and churn
//!   below the capacity never drops a store (`IndexStats::compactions`
//!   counts them).
//! - **Entries**: a fixed arena of `{mask, expires, group, next}`, 24 B. An
//!   entry from events holds the holders `64·group .. 64·group + 63` whose
//!   bits are set, and never expires; an entry from routing holds one holder
//!   until `expires` (ms on the index's clock). A free list recycles entries.
//! - **Holders**: a (worker, rank) gets a number on its first event, and a
//!   record `{slot, generation, state}` (its [`WorkerToken`](crate::WorkerToken)'s
//!   slot and incarnation, new at every join, and live / degraded / retired), 12 B.
//!
//! The writer's own bookkeeping (worker ↔ number map, free lists, the queue
//! of routed entries by expiry) is ordinary Rust behind the writer mutex.
//!
//! # Why lookups need no lock
//! Every change to a block happens between the writer making the block's
//! `seq` odd and making it even again. A lookup reads a block's `seq`, its
//! list, an acquire fence, `seq` again; if it moved, it reads the block
//! again. Entries are reused while lookups may still stand on them: a lookup
//! following a reused entry into another block's list reads garbage, but its
//! block's `seq` moved (the writer unlinked the entry inside the block's
//! odd window), so the read is thrown away; walks are bounded by the arena's
//! size, so even a cycle of stale links ends. A holder number is given to a
//! new (worker, rank) only after every bit of its former owner is cleared,
//! inside an odd window of the index's `reuse_seq`, which a lookup checks at
//! its end: a lookup that read the old owner's bit and could credit the new
//! owner starts again. A compaction moves blocks between slots inside an
//! odd window of the same `reuse_seq`, so a lookup that overlaps it starts
//! again too. The four loom models in `loom-tests/tests/prefix.rs` each fail
//! without what they model: the per-block validation, the reuse check, the
//! drops written before the parent shows a holder, the compaction's window.
//!
//! What a lookup therefore guarantees (the index's invariant): a block is
//! credited to a worker only if a store (or live routed decision) for it
//! happened before the lookup ended, and no removal or clear of it finished
//! before the lookup started; a worker's credit is its count of leading
//! blocks (a hole ends it); one worker's removal never changes another's.
//!
//! # The lookup
//! Block 0's list gives the active holder groups; each next block narrows
//! them (an AND per group), and a holder missing from block `i` matched `i`
//! blocks. Blocks are read 8 at a time side by side, so that the dependent
//! loads of 8 lists overlap. The cost is the sum, over the prompt's blocks
//! until no holder is left, of the entries each block has: about one per
//! group of 64 holder numbers that holds it. It does not depend on the
//! pool's size, but it does depend on how the holders' numbers spread: 512
//! holders numbered 0..511 are 8 groups; 512 holders spread over 100 000
//! numbers are 512 groups, 64 times the entries (see `BENCHMARKS.md`).
//!
//! # Memory and eviction
//! Bytes per (block, holder) pair: 24 B per entry over the holders it
//! carries, plus the block's 32 B of slots over its holders: 56 B for a
//! block held once (a routed decision, always), under 26 B once 4 holders of
//! a group share a block, 1.3 B in the measured 32-of-64 case
//! (`tests/suite/prefix.rs`). Full, the index first evicts routed entries
//! (the one that expires first), then drops an event's store and counts it
//! (`IndexStats::dropped_full`): it may miss blocks, never invent them.
//!
//! # Exact mode from engine events
//! The `kv_events` module (feature `kv-events`; its ZMQ subscriber, feature
//! `kv-events-zmq`) feeds the index from vLLM's and SGLang's KV event
//! streams. Its decoder reads the msgpack `KVEventBatch` in both layouts
//! msgspec gives it (tagged arrays: SGLang and older vLLM; tagged maps:
//! current vLLM), integer or byte-string block hashes, and skips the fields
//! it does not use; anything else is a typed error, never a panic (a fuzz
//! target, `kv_events`, holds it to that). One `EventApplier` per engine rank
//! then applies the batches in sequence order:
//!
//! - Each stored block's key is the router's own chain over its token ids
//!   (the event's `lora_id` as the extra key), so lookups keyed with
//!   `keys_of_tokens` match whatever hash the engine uses. A map from the
//!   engine's hash to that key resolves removals and parents; it is bounded
//!   (`max_blocks`), and a block past the bound is not credited at all, so
//!   that every credited block can be removed when the engine evicts it.
//! - A gap in the sequence numbers marks the holder degraded (credit 0: a
//!   missed removal may have made it stale) and holds later batches while the
//!   engine's replay socket is asked for the missing ones; filled, the held
//!   batches are applied in order and the credit counts again. An
//!   `AllBlocksCleared` past the gap resynchronises at once. A gap the replay
//!   cannot fill drops the engine's holdings and starts its credit again from
//!   the next batch; batches numbered before that point are stale.
//! - Only the GPU tier, KV cache group 0 and blocks without extra keys are
//!   credited: CPU offload tiers, a hybrid model's other groups and
//!   multimodal or salted blocks (which token ids alone do not key) are
//!   counted, not credited.
//! - An engine that restarts numbers its batches from 0 again: batch 0 after
//!   batch 1 or later drops what the engine held and starts its stream anew
//!   (an engine that restarts after a single batch is not told from a
//!   duplicate: `reset` its applier when it re-registers).
//!
//! # Limits
//! - One writer at a time (a mutex): ~100 M block events/s on one core here,
//!   far above an engine fleet's rate, so writers do not need to scale.
//! - A removal of a worker or a clear walks every block (milliseconds at a
//!   million blocks): worker churn, not a per-request cost.
//! - Keys are 64-bit hashes: distinct prefixes collide with probability
//!   ~n²/2⁶⁵; the index cannot tell.
