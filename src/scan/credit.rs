//! What the credited scan compares: the cost mode's key per lane, one `u32`,
//! `1000·min(x, limit) + α·K − α·o` for effective value `x`, credit `o`,
//! weight `α` (thousandths) and a bound `K` on every credit: the exact cost
//! plus a constant, so its order is the costs' order. A least key below
//! [`Credit::exact_below`] is exact; the caller answers the rest exactly on
//! a path of its own. Why nothing wraps:
//! [`docs::internal::scan`](crate::docs::internal::scan), "The credited scan".

/// The per-request input of [`least_credited`](super::least_credited): the lanes'
/// credits, the weight and the bounds that keep every key exact (see the module
/// docs).
#[derive(Clone, Copy, Debug)]
pub struct Credit<'a> {
    /// Per lane the credit `o_i`, at most `top`.
    pub held: &'a [u32],
    /// The weight `α` in thousandths.
    pub weight: u32,
    /// A bound on every credit, `K`.
    pub top: u32,
    /// The largest value keyed as it is; larger ones key as `limit`.
    pub limit: u32,
}

/// The fixed-point scale of the load in a key (that of `credit::tuning`).
pub(super) const SCALE: u32 = 1000;

impl<'a> Credit<'a> {
    /// Keys over `held` under weight `weight` with every credit at most `top`, with
    /// the largest exact `limit`; `None` when `weight · top` leaves no room for a
    /// load (`limit` would be 0).
    ///
    /// ```
    /// use workerpick::scan::Credit;
    /// let c = Credit::new(&[0, 3], 1000, 3).unwrap();
    /// assert_eq!(c.limit, (u32::MAX - 3000) / 1000);
    /// assert!(Credit::new(&[0], 1_000_000, 5000).is_none());
    /// ```
    pub fn new(held: &'a [u32], weight: u32, top: u32) -> Option<Self> {
        let base = u64::from(weight) * u64::from(top);
        let limit = (u64::from(u32::MAX).checked_sub(base)? / u64::from(SCALE)) as u32;
        (limit > 0).then_some(Credit {
            held,
            weight,
            top,
            limit,
        })
    }

    /// Least keys below this are exact (see the module docs).
    pub fn exact_below(&self) -> u32 {
        self.limit.saturating_mul(SCALE)
    }

    /// The load of a lane of credit `held` whose key is `key`, where `key` is below
    /// [`exact_below`](Self::exact_below).
    pub fn load_of(&self, key: u32, held: u32) -> u32 {
        let base = u64::from(self.weight) * u64::from(self.top);
        let at = (u64::from(key) + u64::from(self.weight) * u64::from(held)).saturating_sub(base);
        (at / u64::from(SCALE)) as u32
    }

    /// `α·K`, wrapping: the key's constant.
    #[inline(always)]
    pub(super) fn base(&self) -> u32 {
        self.weight.wrapping_mul(self.top)
    }

    /// The key of lane `i`, of effective value `x`.
    #[inline(always)]
    pub(super) fn key_at(&self, i: usize, x: u32) -> u32 {
        key(x, self.held[i], self.weight, self.base(), self.limit)
    }
}

/// The key of a lane of effective value `x` and credit `held` (see the module docs):
/// the specification every backend computes, lane for lane.
#[inline(always)]
pub(super) fn key(x: u32, held: u32, weight: u32, base: u32, limit: u32) -> u32 {
    x.min(limit)
        .wrapping_mul(SCALE)
        .wrapping_add(base)
        .wrapping_add(held.wrapping_mul(weight.wrapping_neg()))
}
