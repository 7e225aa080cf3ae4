//! vLLM's (and SGLang's) KV event batch, decoded from its msgpack payload.
//!
//! The engines declare their events as `msgspec` structs and encode them
//! with msgspec's msgpack encoder. Two layouts are on the wire, and both are
//! read here:
//!
//! - **Arrays** (`array_like=True`, SGLang and vLLM up to its 0.10 releases):
//!   a batch is `[ts, [event, ...], data_parallel_rank]` and an event is its
//!   tag (the class name) followed by its fields in declaration order,
//!   `["BlockStored", block_hashes, parent_block_hash, token_ids,
//!   block_size, lora_id, medium, lora_name, extra_keys, group_idx, ...]`.
//! - **Maps** (current vLLM events): an event is a map whose `"type"` key
//!   holds the tag, `{"type": "BlockStored", "block_hashes": [...], ...}`;
//!   the batch is an array as above, or a map with `ts`, `events`,
//!   `data_parallel_rank`.
//!
//! `omit_defaults=True` drops trailing fields that hold their default (an
//! array) or any such field (a map), so every field after `block_size`
//! (`block_hashes` for a removal) may be missing; fields this decoder does
//! not use are skipped whatever they hold. Block hashes are integers (signed
//! or not: their 64 bits are kept) or byte strings (vLLM's default sha256
//! digests, folded to 64 bits: see [`EngineHash`]).

use super::error::DecodeError;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::hash::{Hash, Hasher};

/// An engine's own id for a KV block, as it names the block in its events.
///
/// An integer hash is kept as its 64 bits (an `i64` as its two's
/// complement); a byte-string hash (vLLM's default, 32 bytes of sha256) is
/// folded to 64 bits, so two of one engine's blocks share an id with
/// probability about n²/2⁶⁵ for n blocks. It is only ever compared with the
/// same engine's other ids, never with the router's [`BlockKey`](crate::prefix::BlockKey)s.
///
/// ```
/// use workerpick::kv_events::EngineHash;
/// assert_eq!(EngineHash::from_raw(7).raw(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EngineHash(u64);

impl EngineHash {
    /// The id with these 64 bits.
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// Its 64 bits.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The id of a byte-string hash (the same bytes always give the same id).
    ///
    /// ```
    /// use workerpick::kv_events::EngineHash;
    /// assert_eq!(EngineHash::of_bytes(b"abc"), EngineHash::of_bytes(b"abc"));
    /// assert_ne!(EngineHash::of_bytes(b"abc"), EngineHash::of_bytes(b"abd"));
    /// ```
    pub fn of_bytes(bytes: &[u8]) -> Self {
        // SipHash with fixed keys: the same in every run of a build, which
        // is all an id compared only within one process needs.
        #[allow(deprecated)]
        let mut h = std::hash::SipHasher::new();
        bytes.hash(&mut h);
        Self(h.finish())
    }
}

/// One msgpack batch of an engine's KV events (its `KVEventBatch`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct EventBatch {
    /// When the engine made the batch (seconds since the epoch, its clock).
    pub ts: f64,
    /// The events, in the order the engine applied them.
    pub events: Vec<KvEvent>,
    /// The data-parallel rank that published it (absent before vLLM 0.10).
    pub data_parallel_rank: Option<u32>,
}

impl EventBatch {
    /// A batch of `events` made at `ts`, without a rank (for tests and for
    /// relays that decode events themselves).
    ///
    /// ```
    /// let b = workerpick::kv_events::EventBatch::new(1.0, vec![]);
    /// assert!(b.events.is_empty());
    /// ```
    pub fn new(ts: f64, events: Vec<KvEvent>) -> Self {
        Self {
            ts,
            events,
            data_parallel_rank: None,
        }
    }

    /// This batch as data-parallel rank `rank` published it.
    ///
    /// ```
    /// let b = workerpick::kv_events::EventBatch::new(1.0, vec![]).rank(2);
    /// assert_eq!(b.data_parallel_rank, Some(2));
    /// ```
    pub fn rank(mut self, rank: u32) -> Self {
        self.data_parallel_rank = Some(rank);
        self
    }
}

/// One KV cache event.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum KvEvent {
    /// Blocks stored: a chain of full blocks.
    BlockStored(BlockStored),
    /// Blocks evicted.
    BlockRemoved(BlockRemoved),
    /// The engine's whole cache dropped (a reset, a restart).
    AllBlocksCleared,
}

/// A `BlockStored` event: `block_hashes[i]` holds tokens
/// `token_ids[i·block_size .. (i + 1)·block_size]`, its parent is the block
/// before it (the first one's is `parent_block_hash`, `None` for a prompt's
/// first block).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockStored {
    /// The engine's ids of the stored blocks, a chain.
    pub block_hashes: Vec<EngineHash>,
    /// The engine's id of the first block's parent.
    pub parent_block_hash: Option<EngineHash>,
    /// The blocks' tokens, `block_size` per block.
    pub token_ids: Vec<u32>,
    /// Tokens per block.
    pub block_size: u32,
    /// The LoRA adapter's id (`None`: the base model).
    pub lora_id: Option<u64>,
    /// Where the blocks are (`"GPU"`, `"CPU"`, ...; `None` from engines that
    /// do not say).
    pub medium: Option<String>,
    /// The KV cache group (hybrid models have several; `None`: the only one).
    pub group_idx: Option<u32>,
    /// Whether any block carries extra keys (multimodal inputs, a LoRA name,
    /// a cache salt): such blocks are not keyed by their tokens alone.
    pub has_extra_keys: bool,
}

/// A `BlockRemoved` event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockRemoved {
    /// The engine's ids of the evicted blocks.
    pub block_hashes: Vec<EngineHash>,
    /// Where they were evicted from (see [`BlockStored::medium`]).
    pub medium: Option<String>,
    /// The KV cache group (see [`BlockStored::group_idx`]).
    pub group_idx: Option<u32>,
}

/// The deepest msgpack nesting a payload may have (vLLM's is 5 deep; an
/// unused field, skipped whatever it holds, may nest further).
const MAX_DEPTH: usize = 64;

/// Decodes one batch payload (the last frame of vLLM's multipart message).
///
/// Never panics: malformed msgpack, a wrong shape, an unknown event tag,
/// values out of range and bytes after the batch are [`DecodeError`]s.
///
/// ```
/// use workerpick::kv_events::{KvEvent, decode_batch};
/// // [1.5, [["AllBlocksCleared"]], 0] as msgpack: an array of 3, a float64,
/// // an array of 1 holding an array of 1 holding a 16-byte string, 0.
/// let mut bytes = vec![0x93, 0xcb];
/// bytes.extend(1.5f64.to_be_bytes());
/// bytes.extend([0x91, 0x91, 0xb0]);
/// bytes.extend(b"AllBlocksCleared");
/// bytes.push(0x00);
/// let batch = decode_batch(&bytes).unwrap();
/// assert_eq!(batch.events, [KvEvent::AllBlocksCleared]);
/// assert_eq!(batch.data_parallel_rank, Some(0));
/// assert!(decode_batch(&bytes[..5]).is_err());
/// ```
pub fn decode_batch(payload: &[u8]) -> Result<EventBatch, DecodeError> {
    let mut rest = payload;
    let mut de = rmp_serde::Deserializer::new(&mut rest);
    de.set_max_depth(MAX_DEPTH);
    let batch = de.deserialize_any(BatchVisitor).map_err(DecodeError::from_rmp)?;
    drop(de);
    if !rest.is_empty() {
        return Err(DecodeError::Trailing { bytes: rest.len() });
    }
    Ok(batch)
}

struct BatchVisitor;

impl<'de> Visitor<'de> for BatchVisitor {
    type Value = EventBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a KV event batch: [ts, events, data_parallel_rank] or a map of them")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let ts = seq
            .next_element::<f64>()?
            .ok_or_else(|| de::Error::missing_field("ts"))?;
        let events = seq
            .next_element_seed(Events)?
            .ok_or_else(|| de::Error::missing_field("events"))?;
        let data_parallel_rank = seq.next_element::<Option<u32>>()?.flatten();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(EventBatch {
            ts,
            events,
            data_parallel_rank,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut ts, mut events, mut rank) = (None, None, None);
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "ts" => ts = Some(map.next_value::<f64>()?),
                "events" => events = Some(map.next_value_seed(Events)?),
                "data_parallel_rank" => rank = map.next_value::<Option<u32>>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(EventBatch {
            ts: ts.ok_or_else(|| de::Error::missing_field("ts"))?,
            events: events.ok_or_else(|| de::Error::missing_field("events"))?,
            data_parallel_rank: rank,
        })
    }
}

/// A map key or tag: a string, owned (short; borrowed ones are copied).
struct Key(String);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Key, E> {
                std::str::from_utf8(v)
                    .map(|s| Key(s.to_owned()))
                    .map_err(|_| E::invalid_value(de::Unexpected::Bytes(v), &self))
            }
        }
        d.deserialize_str(V)
    }
}

/// The event list, without trusting its declared length for allocation.
struct Events;

impl<'de> DeserializeSeed<'de> for Events {
    type Value = Vec<KvEvent>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events {
    type Value = Vec<KvEvent>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of KV events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(256));
        while let Some(ev) = seq.next_element_seed(EventSeed)? {
            out.push(ev);
        }
        Ok(out)
    }
}

struct EventSeed;

impl<'de> DeserializeSeed<'de> for EventSeed {
    type Value = KvEvent;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// The fields of any event, gathered before the tag says which it is (a
/// map may name its tag anywhere).
#[derive(Default)]
struct Fields {
    block_hashes: Option<Vec<EngineHash>>,
    parent: Option<EngineHash>,
    token_ids: Option<Vec<u32>>,
    block_size: Option<u32>,
    lora_id: Option<u64>,
    medium: Option<String>,
    group_idx: Option<u32>,
    has_extra_keys: bool,
}

const TAGS: &[&str] = &["BlockStored", "BlockRemoved", "AllBlocksCleared"];

impl Fields {
    fn into_event<E: de::Error>(self, tag: &str) -> Result<KvEvent, E> {
        match tag {
            "BlockStored" => Ok(KvEvent::BlockStored(BlockStored {
                block_hashes: self
                    .block_hashes
                    .ok_or_else(|| E::missing_field("block_hashes"))?,
                parent_block_hash: self.parent,
                token_ids: self.token_ids.ok_or_else(|| E::missing_field("token_ids"))?,
                block_size: self.block_size.ok_or_else(|| E::missing_field("block_size"))?,
                lora_id: self.lora_id,
                medium: self.medium,
                group_idx: self.group_idx,
                has_extra_keys: self.has_extra_keys,
            })),
            "BlockRemoved" => Ok(KvEvent::BlockRemoved(BlockRemoved {
                block_hashes: self
                    .block_hashes
                    .ok_or_else(|| E::missing_field("block_hashes"))?,
                medium: self.medium,
                group_idx: self.group_idx,
            })),
            "AllBlocksCleared" => Ok(KvEvent::AllBlocksCleared),
            other => Err(E::unknown_variant(other, TAGS)),
        }
    }
}

/// The positional fields of each tag, in msgspec's declaration order.
fn order(tag: &str) -> &'static [&'static str] {
    match tag {
        "BlockStored" => &[
            "block_hashes",
            "parent_block_hash",
            "token_ids",
            "block_size",
            "lora_id",
            "medium",
            "lora_name",
            "extra_keys",
            "group_idx",
        ],
        "BlockRemoved" => &["block_hashes", "medium", "group_idx"],
        _ => &[],
    }
}

/// Reads the value of field `name` into `f` (skips the fields not used).
fn field<'de, D: Deserializer<'de>>(f: &mut Fields, name: &str, d: D) -> Result<(), D::Error> {
    use serde::Deserialize;
    match name {
        "block_hashes" => f.block_hashes = Some(Hashes.deserialize(d)?),
        "parent_block_hash" => f.parent = Option::<EngineHash>::deserialize(d)?,
        "token_ids" => f.token_ids = Some(Vec::<u32>::deserialize(d)?),
        "block_size" => f.block_size = Some(u32::deserialize(d)?),
        "lora_id" => f.lora_id = Option::<u64>::deserialize(d)?,
        "medium" => f.medium = Option::<String>::deserialize(d)?,
        "group_idx" => f.group_idx = Option::<u32>::deserialize(d)?,
        "extra_keys" => f.has_extra_keys = ExtraKeys.deserialize(d)?,
        _ => {
            IgnoredAny::deserialize(d)?;
        }
    }
    Ok(())
}

/// Adapts [`field`] to a map value or a sequence element.
struct FieldSeed<'a> {
    fields: &'a mut Fields,
    name: &'a str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        field(self.fields, self.name, d)
    }
}

impl<'de> Visitor<'de> for EventSeed {
    type Value = KvEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a KV event: a tagged array or a map with a \"type\"")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let tag = seq
            .next_element::<Key>()?
            .ok_or_else(|| de::Error::missing_field("type"))?
            .0;
        if !TAGS.contains(&tag.as_str()) {
            return Err(de::Error::unknown_variant(&tag, TAGS));
        }
        let mut fields = Fields::default();
        for name in order(&tag) {
            let seed = FieldSeed {
                fields: &mut fields,
                name,
            };
            if seq.next_element_seed(seed)?.is_none() {
                break;
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        fields.into_event(&tag)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Fields::default();
        let mut tag = None;
        while let Some(Key(key)) = map.next_key::<Key>()? {
            if key == "type" {
                tag = Some(map.next_value::<Key>()?.0);
            } else {
                let seed = FieldSeed {
                    fields: &mut fields,
                    name: &key,
                };
                map.next_value_seed(seed)?;
            }
        }
        let tag = tag.ok_or_else(|| de::Error::missing_field("type"))?;
        fields.into_event(&tag)
    }
}

impl<'de> de::Deserialize<'de> for EngineHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = EngineHash;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a block hash: an integer or bytes")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<EngineHash, E> {
                Ok(EngineHash(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<EngineHash, E> {
                Ok(EngineHash(v as u64))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<EngineHash, E> {
                Ok(EngineHash::of_bytes(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A list of block hashes (allocation bounded by what arrives, not by the
/// declared length).
struct Hashes;

impl<'de> DeserializeSeed<'de> for Hashes {
    type Value = Vec<EngineHash>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Hashes {
    type Value = Vec<EngineHash>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of block hashes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(h) = seq.next_element::<EngineHash>()? {
            out.push(h);
        }
        Ok(out)
    }
}

/// `extra_keys`: `None`, or one entry per block, each `None` or a tuple;
/// true when any block has one.
struct ExtraKeys;

impl<'de> DeserializeSeed<'de> for ExtraKeys {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExtraKeys {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("extra keys: nil or a list")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut any = false;
        while let Some(entry) = seq.next_element::<Option<IgnoredAny>>()? {
            any |= entry.is_some();
        }
        Ok(any)
    }
}
