//! What the index refuses, and why.

use std::fmt;

/// Why an index call was refused. Nothing in the index was changed by a
/// refused call.
///
/// ```
/// use workerpick::prefix::{IndexConfig, IndexError, PrefixIndex};
/// let err = PrefixIndex::<&str>::new(IndexConfig::exact(0)).unwrap_err();
/// assert!(matches!(err, IndexError::InvalidConfig { what: "block size", .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexError {
    /// A configuration value out of range.
    InvalidConfig {
        /// The value.
        what: &'static str,
        /// What is wrong and what to do.
        why: String,
    },
    /// The worker (or its rank) is not in the pool named.
    UnknownWorker,
    /// An event's block size differs from the index's.
    BlockSize {
        /// The index's tokens per block.
        expected: u32,
        /// The event's.
        got: u32,
    },
    /// The index holds the workers of another pool (an index serves one).
    OtherPool,
    /// The index was built for at most this many holders and all are taken.
    HoldersFull {
        /// The configured maximum.
        max: u32,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig { what, why } => write!(f, "invalid prefix index {what}: {why}"),
            Self::UnknownWorker => {
                f.write_str("the worker (or rank) is not in the pool: insert it before feeding its events")
            }
            Self::BlockSize { expected, got } => write!(
                f,
                "event block size {got} differs from the index's {expected}: configure the index with the engine's block size"
            ),
            Self::OtherPool => {
                f.write_str("the index holds another pool's workers: build one index per pool")
            }
            Self::HoldersFull { max } => write!(
                f,
                "all {max} holders of the index are taken: raise IndexConfig::max_holders or remove workers"
            ),
        }
    }
}

impl std::error::Error for IndexError {}
