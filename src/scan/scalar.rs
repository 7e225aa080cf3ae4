//! The reference scan: one Relaxed load per lane. The vector backends must return
//! exactly what these functions return.

use super::MinTies;
use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[inline]
pub(super) fn min_ties(counters: &[AtomicU32], excluded: &[u32]) -> MinTies {
    let (mut min, mut ties) = (u32::MAX, 0u32);
    for (counter, &mask) in counters.iter().zip(excluded) {
        let v = counter.load(Relaxed) | mask;
        if v < min {
            min = v;
            ties = 0;
        }
        // Wrapping, like the vector backends' lane counts (only past 2^32 lanes).
        ties = ties.wrapping_add(u32::from(v == min));
    }
    MinTies { min, ties }
}

#[inline]
pub(super) fn nth_tie(counters: &[AtomicU32], excluded: &[u32], min: u32, k: u32) -> Result<usize, u32> {
    let mut seen = 0;
    for (i, (counter, &mask)) in counters.iter().zip(excluded).enumerate() {
        if counter.load(Relaxed) | mask == min {
            if seen == k {
                return Ok(i);
            }
            // No overflow: seen < k here.
            seen += 1;
        }
    }
    Err(seen)
}
