//! The least-loaded scan's view of capacities: per lane `scale = L / c` with
//! `L` the least common multiple of the capacities, so that a lane's score
//! `(load + r) · scale = L · (load + r) / c` orders lanes exactly as
//! `(load + r) / c` does, ties included, in one `u32` multiply per lane.
//!
//! A score must fit 32 bits: each lane's operand is clamped to
//! `cap = ⌊u32::MAX / scale⌋`. A clamped lane scores above
//! `u32::MAX − scale ≥ u32::MAX − L`, so when the least score is at most
//! [`Scale::exact_below`] no clamped lane holds it and every lane below it
//! was scored exactly: the scan's answer is exact. Above it (loads within a
//! factor `L` of `u32::MAX`, or only excluded lanes), the caller takes the
//! exact scalar path.

use super::gcd;

/// The largest `L` the scan takes: larger and the caller always scans exactly
/// in scalar code (weights with a large least common multiple).
pub(crate) const MAX_LCM: u32 = 1 << 16;

/// Per-lane factors for the weighted scan.
pub(crate) struct Scale {
    /// Per lane: `L / c` (1 for lanes that are not candidates).
    pub(crate) scale: Box<[u32]>,
    /// Per lane: `⌊u32::MAX / scale⌋`.
    pub(crate) cap: Box<[u32]>,
    /// `L`, the least common multiple of the capacities.
    pub(crate) lcm: u32,
}

impl Scale {
    /// The factors for candidates `slots` of capacities `c` over `lanes`
    /// lanes, or `None` when their least common multiple exceeds [`MAX_LCM`].
    pub(crate) fn build(lanes: usize, slots: &[u32], c: &[u32]) -> Option<Self> {
        let mut lcm: u64 = 1;
        for &x in c {
            lcm = lcm / u64::from(gcd(lcm as u32, x)) * u64::from(x);
            if lcm > u64::from(MAX_LCM) {
                return None;
            }
        }
        let lcm = lcm as u32;
        let mut scale = vec![1; lanes].into_boxed_slice();
        let mut cap = vec![u32::MAX; lanes].into_boxed_slice();
        for (&slot, &x) in slots.iter().zip(c) {
            scale[slot as usize] = lcm / x;
            cap[slot as usize] = u32::MAX / (lcm / x);
        }
        Some(Self { scale, cap, lcm })
    }

    /// A least score at or below this was computed without clamping.
    #[inline(always)]
    pub(crate) fn exact_below(&self) -> u32 {
        u32::MAX - self.lcm
    }

    /// The score of a lane holding `load` for a request of weight `add`.
    #[inline(always)]
    pub(crate) fn score(&self, slot: u32, load: u32, add: u32) -> u32 {
        let (scale, cap) = (self.scale[slot as usize], self.cap[slot as usize]);
        load.saturating_add(add).min(cap).wrapping_mul(scale)
    }
}
