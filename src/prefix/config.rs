//! What an index is sized for and how long routed entries live.

use super::error::IndexError;
use std::time::Duration;

/// How a [`PrefixIndex`](super::PrefixIndex) is sized and how it learns.
///
/// - [`exact`](Self::exact): fed by the engines' KV events
///   ([`stored`](super::PrefixIndex::stored) / [`removed`](super::PrefixIndex::removed)),
///   with a short speculative overlay (2 s) for routing decisions
///   ([`routed`](super::PrefixIndex::routed)), so a request right behind
///   another sees the blocks its predecessor is about to store.
/// - [`approximate`](Self::approximate): no events; routing decisions are
///   the only source, each held for 120 s (renewed by the next route there).
///
/// ```
/// use std::time::Duration;
/// use workerpick::prefix::IndexConfig;
/// let c = IndexConfig::exact(16).capacity(1 << 20).routed_ttl(Duration::from_secs(1));
/// assert_eq!(c.block_size_tokens(), 16);
/// ```
#[derive(Clone, Debug)]
pub struct IndexConfig {
    pub(crate) block_size: u32,
    pub(crate) capacity: u32,
    /// `None`: twice the capacity.
    pub(crate) entries: Option<u32>,
    pub(crate) max_holders: u32,
    pub(crate) routed_ttl: Duration,
    pub(crate) manual_clock: bool,
}

/// The most blocks, holder entries or holders an index can be sized for.
pub const MAX_INDEX_CAPACITY: u32 = 1 << 28;

impl IndexConfig {
    /// An index fed by engine events, for blocks of `block_size` tokens:
    /// 2²⁰ blocks, 2 holder entries per block (2²¹), 4 096 holders, 2 s speculative TTL.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::exact(16);
    /// ```
    pub fn exact(block_size: u32) -> Self {
        Self {
            block_size,
            capacity: 1 << 20,
            entries: None,
            max_holders: 4096,
            routed_ttl: Duration::from_secs(2),
            manual_clock: false,
        }
    }

    /// An index fed only by routing decisions: as [`exact`](Self::exact)
    /// with a 120 s TTL.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::approximate(16);
    /// ```
    pub fn approximate(block_size: u32) -> Self {
        Self {
            routed_ttl: Duration::from_secs(120),
            ..Self::exact(block_size)
        }
    }

    /// The most distinct blocks held at once (default 2²⁰). A store of a new
    /// block beyond it is dropped and counted, after routed entries (oldest
    /// first) are evicted to make room: see the index's eviction rule.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::exact(16).capacity(4096);
    /// ```
    pub fn capacity(mut self, blocks: u32) -> Self {
        self.capacity = blocks;
        self
    }

    /// The most (block, holder group) entries (default 2× the capacity): an
    /// entry records up to 64 holders of one block from events, or one
    /// holder from a routing decision.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::exact(16).capacity(4096).entries(16384);
    /// ```
    pub fn entries(mut self, entries: u32) -> Self {
        self.entries = Some(entries);
        self
    }

    /// The most (worker, rank) holders (default 4 096).
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::exact(16).max_holders(100_000);
    /// ```
    pub fn max_holders(mut self, holders: u32) -> Self {
        self.max_holders = holders;
        self
    }

    /// How long a routing decision counts as holding its blocks.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::approximate(16).routed_ttl(Duration::from_secs(60));
    /// ```
    pub fn routed_ttl(mut self, ttl: Duration) -> Self {
        self.routed_ttl = ttl;
        self
    }

    /// Time moves only by [`PrefixIndex::set_now`](super::PrefixIndex::set_now)
    /// (a simulator's virtual clock, a test): from 0 ms.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// let _ = IndexConfig::approximate(16).manual_clock();
    /// ```
    pub fn manual_clock(mut self) -> Self {
        self.manual_clock = true;
        self
    }

    /// Tokens per block.
    ///
    /// ```
    /// use workerpick::prefix::IndexConfig;
    /// assert_eq!(IndexConfig::exact(32).block_size_tokens(), 32);
    /// ```
    pub fn block_size_tokens(&self) -> u32 {
        self.block_size
    }

    /// The entries set, or twice the capacity.
    pub(crate) fn entry_count(&self) -> u32 {
        self.entries
            .unwrap_or_else(|| self.capacity.saturating_mul(2).min(MAX_INDEX_CAPACITY))
    }

    pub(crate) fn check(&self) -> Result<(), IndexError> {
        let bad = |what: &'static str, why: &str| {
            Err(IndexError::InvalidConfig {
                what,
                why: why.into(),
            })
        };
        if self.block_size == 0 {
            return bad("block size", "a block holds at least one token");
        }
        for (what, n) in [
            ("capacity", self.capacity),
            ("entries", self.entry_count()),
            ("max holders", self.max_holders),
        ] {
            if n == 0 || n > MAX_INDEX_CAPACITY {
                return bad(what, "must be between 1 and MAX_INDEX_CAPACITY (2^28)");
            }
        }
        if self.routed_ttl.as_millis() == 0 {
            return bad("routed ttl", "must be at least 1 ms");
        }
        Ok(())
    }
}
