//! Block keys: a chained 64-bit hash the router computes itself, so a key is
//! the same whatever hash (or seed) the engine uses for its own block ids.

/// The key of one KV block: a 64-bit hash chained over (parent key, the
/// block's token ids, extra keys such as a LoRA id), or a precomputed id
/// taken as is ([`from_raw`](Self::from_raw)).
///
/// Two prompts share a key at position *i* exactly when they share tokens
/// `0..(i + 1)·block_size` (and extra keys), up to 64-bit hash collisions
/// (about n²/2⁶⁵ for n distinct blocks: 10⁻⁷ at 2³⁸ blocks). Not a
/// cryptographic hash: a client who can choose prompts can make two collide.
///
/// ```
/// use workerpick::prefix::BlockKey;
/// let a = BlockKey::chain(None, &[1, 2, 3, 4], 0);
/// let b = BlockKey::chain(Some(a), &[5, 6, 7, 8], 0);
/// assert_eq!(b, BlockKey::chain(Some(a), &[5, 6, 7, 8], 0));
/// assert_ne!(b, BlockKey::chain(None, &[5, 6, 7, 8], 0)); // another parent
/// assert_ne!(a, BlockKey::chain(None, &[1, 2, 3, 4], 7)); // another LoRA
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey(u64);

const SEED: u64 = 0x243F_6A88_85A3_08D3;
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// Murmur3's 64-bit finaliser: every input bit moves every output bit.
#[inline(always)]
pub(crate) const fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

impl BlockKey {
    /// A precomputed id taken as the key (a trace's `hash_ids`, or keys a
    /// caller chains itself). Ids must already be prefix-chained: equal ids
    /// mean equal prefixes.
    ///
    /// ```
    /// use workerpick::prefix::BlockKey;
    /// assert_eq!(BlockKey::from_raw(42).raw(), 42);
    /// ```
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// The 64 bits of the key.
    ///
    /// ```
    /// use workerpick::prefix::BlockKey;
    /// let k = BlockKey::chain(None, &[9], 0);
    /// assert_eq!(BlockKey::from_raw(k.raw()), k);
    /// ```
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The key of the block with token ids `tokens` after the block keyed
    /// `parent` (`None` for a prompt's first block); `extra` separates
    /// caches that differ by more than the tokens (a LoRA id, a multimodal
    /// hash; 0 for none).
    ///
    /// ```
    /// use workerpick::prefix::BlockKey;
    /// let first = BlockKey::chain(None, &[101, 7592, 2088, 999], 0);
    /// assert_ne!(first, BlockKey::chain(None, &[101, 7592, 2088, 998], 0));
    /// ```
    pub fn chain(parent: Option<BlockKey>, tokens: &[u32], extra: u64) -> Self {
        let start = parent.map_or(SEED, |p| fmix(p.0 ^ SEED));
        let mut h = start ^ fmix(extra.wrapping_add(tokens.len() as u64));
        let mut pairs = tokens.chunks_exact(2);
        for pair in &mut pairs {
            let w = u64::from(pair[0]) | u64::from(pair[1]) << 32;
            h = (h ^ w).wrapping_mul(MUL).rotate_left(29);
        }
        if let [last] = pairs.remainder() {
            h = (h ^ u64::from(*last) ^ 1 << 63).wrapping_mul(MUL).rotate_left(29);
        }
        Self(fmix(h))
    }
}

/// Appends to `out` the chained keys of every *full* block of `tokens`
/// (`block_size` tokens each; a partial last block has no key, as engines
/// cache only full blocks). Returns how many it appended.
///
/// ```
/// use workerpick::prefix::{BlockKey, keys_of_tokens};
/// let mut keys = Vec::new();
/// assert_eq!(keys_of_tokens(&[1, 2, 3, 4, 5], 2, 0, &mut keys), 2);
/// let first = BlockKey::chain(None, &[1, 2], 0);
/// assert_eq!(keys, [first, BlockKey::chain(Some(first), &[3, 4], 0)]);
/// ```
pub fn keys_of_tokens(tokens: &[u32], block_size: usize, extra: u64, out: &mut Vec<BlockKey>) -> usize {
    if block_size == 0 {
        return 0;
    }
    let mut parent = None;
    let before = out.len();
    for block in tokens.chunks_exact(block_size) {
        let key = BlockKey::chain(parent, block, extra);
        out.push(key);
        parent = Some(key);
    }
    out.len() - before
}

/// Appends precomputed ids as keys (see [`BlockKey::from_raw`]).
///
/// ```
/// use workerpick::prefix::{BlockKey, keys_of_ids};
/// let mut keys = Vec::new();
/// keys_of_ids([0, 1, 2], &mut keys);
/// assert_eq!(keys[2], BlockKey::from_raw(2));
/// ```
pub fn keys_of_ids(ids: impl IntoIterator<Item = u64>, out: &mut Vec<BlockKey>) {
    out.extend(ids.into_iter().map(BlockKey::from_raw));
}
