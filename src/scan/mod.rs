//! TEMPORARY scalar-only stand-in; replaced by the SIMD module.
use crate::sync::atomic::{AtomicU32, Ordering};

/// Scan backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable.
    Scalar,
}
impl Backend {
    /// Detect.
    pub fn detect() -> Backend {
        Backend::Scalar
    }
    /// Available.
    pub fn available() -> &'static [Backend] {
        &[Backend::Scalar]
    }
    /// Name.
    pub fn name(self) -> &'static str {
        "scalar"
    }
}
/// Result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinTies {
    /// min
    pub min: u32,
    /// ties
    pub ties: u32,
}
/// min ties
pub fn min_ties(_b: Backend, counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    let mut r = MinTies {
        min: u32::MAX,
        ties: 0,
    };
    for (c, e) in counters.iter().zip(excluded) {
        let v = c.load(Ordering::Relaxed) | e;
        if v < r.min {
            r = MinTies { min: v, ties: 1 };
        } else if v == r.min {
            r.ties += 1;
        }
    }
    r
}
/// nth
pub fn nth_tie(
    _b: Backend,
    counters: &[AtomicU32],
    excluded: &[u32],
    min: u32,
    k: u32,
) -> Result<usize, u32> {
    let mut n = 0;
    for (i, (c, e)) in counters.iter().zip(excluded).enumerate() {
        if c.load(Ordering::Relaxed) | e == min {
            if n == k {
                return Ok(i);
            }
            n += 1;
        }
    }
    Err(n)
}
