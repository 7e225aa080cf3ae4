//! The least-loaded scan's view of capacities: per lane `scale = L / c`, so
//! that `(load + r) · scale` orders lanes exactly as `(load + r) / c` does,
//! in one `u32` multiply per lane. Loads are clamped so scores fit 32 bits;
//! a least score below [`Scale::exact_below`] is exact, and the caller takes
//! the exact scalar path otherwise. See [`docs::fleets`](crate::docs::fleets),
//! "The scan's factors".

use super::gcd;

/// The largest `L` the scan takes: larger and the caller always scans exactly
/// in scalar code (weights with a large least common multiple).
pub(crate) const MAX_LCM: u32 = 1 << 16;

/// Per-lane factors for the weighted scan.
pub(crate) struct Scale {
    /// Per lane: `L / c` (for lanes that are not candidates the largest
    /// factor, so that they score as high as any lane when excluded).
    pub(crate) scale: Box<[u32]>,
    /// `⌊u32::MAX / max(scale)⌋`: a load plus the request's weight up to this
    /// scores without wrapping in every lane.
    top: u32,
    /// `top · min(scale)`, over the candidates: a least score below this was
    /// computed without clamping.
    bound: u32,
    /// The candidates' lanes by factor, ascending (in set order within a
    /// factor): a lane of factor `f` scores at least `f`, so the lanes that
    /// can score some `lo` are among those of factors up to `lo`, a prefix
    /// (see `bounds::least_scored`).
    pub(crate) by_factor: Box<[u32]>,
    /// Per distinct factor, ascending: the factor and where its lanes end in
    /// `by_factor`.
    pub(crate) classes: Box<[(u32, u32)]>,
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
        let factor = |x: u32| lcm / x.max(1);
        let max = c.iter().map(|&x| factor(x)).max().unwrap_or(1);
        let min = c.iter().map(|&x| factor(x)).min().unwrap_or(1);
        let mut scale = vec![max; lanes].into_boxed_slice();
        for (&slot, &x) in slots.iter().zip(c) {
            scale[slot as usize] = factor(x);
        }
        let top = u32::MAX / max;
        let mut by_factor: Vec<(u32, u32)> =
            slots.iter().zip(c).map(|(&slot, &x)| (factor(x), slot)).collect();
        by_factor.sort_by_key(|&(f, _)| f);
        let mut classes: Vec<(u32, u32)> = Vec::new();
        for (end, &(f, _)) in by_factor.iter().enumerate() {
            match classes.last_mut() {
                Some((last, e)) if *last == f => *e = end as u32 + 1,
                _ => classes.push((f, end as u32 + 1)),
            }
        }
        Some(Self {
            scale,
            top,
            bound: top * min,
            by_factor: by_factor.into_iter().map(|(_, slot)| slot).collect(),
            classes: classes.into(),
        })
    }

    /// The bound on the lanes' loads for a request of weight `add`: `None`
    /// when the request alone is too heavy to score exactly.
    #[inline(always)]
    pub(crate) fn limit(&self, add: u32) -> Option<u32> {
        self.top.checked_sub(add)
    }

    /// A least score below this was computed without clamping.
    #[inline(always)]
    pub(crate) fn exact_below(&self) -> u32 {
        self.bound
    }

    /// The score of a lane holding `load` for a request of weight `add`, as
    /// the scan computes it with the bound `limit`.
    #[inline(always)]
    pub(crate) fn score(&self, slot: u32, load: u32, limit: u32, add: u32) -> u32 {
        load.min(limit)
            .wrapping_add(add)
            .wrapping_mul(self.scale[slot as usize])
    }
}
