//! The exact weighted least-loaded rule in scalar code: the least
//! `(load + r) / c` over the candidates, compared by cross-multiplication in
//! 64 bits (`(load + r) < 2³³`, `c ≤ 2¹⁶`), ties drawn uniformly. The
//! specification the SIMD path matches, and its fallback.

use crate::context::Slot;

/// A load-per-capacity ratio `(load + r) / c`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ratio {
    pub(crate) load: u64,
    pub(crate) capacity: u64,
}

impl Ratio {
    #[inline(always)]
    pub(crate) fn new(load: u32, add: u32, capacity: u32) -> Self {
        Self {
            load: u64::from(load) + u64::from(add),
            capacity: u64::from(capacity.max(1)),
        }
    }

    /// `self < other`, exactly.
    #[inline(always)]
    pub(crate) fn lt(self, other: Ratio) -> bool {
        self.load * other.capacity < other.load * self.capacity
    }

    /// `self == other`, exactly.
    #[inline(always)]
    pub(crate) fn eq(self, other: Ratio) -> bool {
        self.load * other.capacity == other.load * self.capacity
    }
}

/// The running least ratio over candidates in order, its tie count and the
/// first candidate holding it (the weighted `Minimum`).
pub(crate) struct LeastRatio<'a> {
    pub(crate) least: Option<(Ratio, Slot<'a>, u32)>,
    pub(crate) ties: u32,
}

impl<'a> LeastRatio<'a> {
    pub(crate) const NONE: Self = Self { least: None, ties: 0 };

    /// Adds `slot`, holding `load`, of ratio `r`.
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: Slot<'a>, load: u32, r: Ratio) {
        match self.least {
            Some((m, _, _)) if r.eq(m) => self.ties += 1,
            Some((m, _, _)) if !r.lt(m) => {}
            _ => {
                self.least = Some((r, slot, load));
                self.ties = 1;
            }
        }
    }
}
