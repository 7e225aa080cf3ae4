//! Load per unit of capacity, `(load + r) / c`, compared exactly by
//! cross-multiplication in 64 bits (`(load + r) < 2³³`, `c ≤ 2¹⁶`): how
//! capacity weights scale the load a weighted pick compares.

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
