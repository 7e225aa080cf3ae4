//! What a KV event stream can get wrong, as typed errors.

use crate::prefix::IndexError;
use std::fmt;

/// Why a payload is not a KV event batch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not msgpack, cut short, or not the batch's shape (the decoder's
    /// words: which field, what it found).
    Malformed(String),
    /// An event whose tag is none of `BlockStored`, `BlockRemoved`,
    /// `AllBlocksCleared`.
    UnknownEvent(String),
    /// Nested deeper than a batch can be.
    TooDeep,
    /// Bytes after the batch.
    Trailing {
        /// How many.
        bytes: usize,
    },
}

impl DecodeError {
    pub(super) fn from_rmp(e: rmp_serde::decode::Error) -> Self {
        use rmp_serde::decode::Error as E;
        match e {
            E::DepthLimitExceeded => Self::TooDeep,
            E::Syntax(s) if s.starts_with("unknown variant") => {
                let tag = s.split('`').nth(1).unwrap_or_default();
                Self::UnknownEvent(tag.to_owned())
            }
            other => Self::Malformed(other.to_string()),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(why) => write!(f, "malformed KV event batch: {why}"),
            Self::UnknownEvent(tag) => write!(
                f,
                "unknown KV event {tag:?}: expected BlockStored, BlockRemoved or AllBlocksCleared"
            ),
            Self::TooDeep => f.write_str("KV event batch nested too deep"),
            Self::Trailing { bytes } => write!(f, "{bytes} bytes after the KV event batch"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why an engine's message was not applied. Nothing was applied from a
/// message refused with one of these: its sequence number is not taken, so
/// the next message opens a gap (see [`EventApplier`](super::EventApplier)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventError {
    /// The payload does not decode.
    Decode(DecodeError),
    /// Not vLLM's `[topic, sequence, payload]` multipart message.
    Frames {
        /// What is wrong.
        why: &'static str,
    },
    /// A `BlockStored` whose block size is not the index's.
    BlockSize {
        /// The index's tokens per block.
        expected: u32,
        /// The event's.
        got: u32,
    },
    /// A `BlockStored` whose `token_ids` are not `block_size` per block.
    TokenCount {
        /// Blocks in the event.
        blocks: usize,
        /// Its tokens per block.
        block_size: u32,
        /// Tokens it carries.
        tokens: usize,
    },
    /// A batch from another data-parallel rank than the applier's.
    Rank {
        /// The applier's rank.
        expected: u32,
        /// The batch's.
        got: u32,
    },
    /// The index refused the applier itself (its worker is not in the
    /// pool, the index serves another pool, or its holders are all taken).
    Index(IndexError),
    /// The transport failed (the ZMQ socket's words).
    Transport(String),
}

impl From<DecodeError> for EventError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(e) => e.fmt(f),
            Self::Frames { why } => write!(f, "not a KV event message: {why}"),
            Self::BlockSize { expected, got } => write!(
                f,
                "event block size {got} differs from the index's {expected}: configure the index with the engine's block size"
            ),
            Self::TokenCount {
                blocks,
                block_size,
                tokens,
            } => write!(
                f,
                "BlockStored of {blocks} blocks of {block_size} tokens carries {tokens} token ids"
            ),
            Self::Rank { expected, got } => write!(
                f,
                "batch from data-parallel rank {got} fed to the applier of rank {expected}: one applier per rank's stream"
            ),
            Self::Index(e) => write!(f, "the index refused the engine: {e}"),
            Self::Transport(why) => write!(f, "KV event transport: {why}"),
        }
    }
}

impl std::error::Error for EventError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Decode(e) => Some(e),
            Self::Index(e) => Some(e),
            _ => None,
        }
    }
}
