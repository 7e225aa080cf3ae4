//! What the weighted and the credited scans share: a key per lane over its
//! effective value ([`Weighting`]'s scores, [`Credit`]'s cost keys), so that
//! one body ([`Kernel::least_keyed`](super::kernel::Kernel), the scalar
//! passes in `scalar.rs`, `simd::least_in` over the key's lane source) runs
//! both.

use super::credit::Credit;
use super::outcome::Least;
use super::simd;
use super::vector::Vector;
use super::weighting::{Weighting, score};
use crate::sync::atomic::AtomicU32;

/// Per-lane keys over the lanes' effective values, the least of which a
/// keyed scan finds.
pub(super) trait LaneKeys: Copy {
    /// How many lanes the keys cover.
    fn lanes(&self) -> usize;

    /// The keys of the first `n` lanes only (`n` at most [`lanes`](Self::lanes)):
    /// a loop over them then needs no bounds check.
    fn prefix(self, n: usize) -> Self;

    /// The key of lane `i`, of effective value `x`.
    fn key_at(&self, i: usize, x: u32) -> u32;

    /// The scan over more than `FEW_LANES` lanes on vector backend `v`.
    fn least_vector<V: Vector>(
        self,
        v: V,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least;
}

impl LaneKeys for Weighting<'_> {
    #[inline(always)]
    fn lanes(&self) -> usize {
        self.scale.len()
    }

    #[inline(always)]
    fn prefix(self, n: usize) -> Self {
        Weighting {
            scale: &self.scale[..n],
            ..self
        }
    }

    #[inline(always)]
    fn key_at(&self, i: usize, x: u32) -> u32 {
        score(x, self.scale[i], self.limit, self.add)
    }

    #[inline(always)]
    fn least_vector<V: Vector>(
        self,
        v: V,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        simd::least_weighted(v, counters, excluded, self, draw)
    }
}

impl LaneKeys for Credit<'_> {
    #[inline(always)]
    fn lanes(&self) -> usize {
        self.held.len()
    }

    #[inline(always)]
    fn prefix(self, n: usize) -> Self {
        Credit {
            held: &self.held[..n],
            ..self
        }
    }

    #[inline(always)]
    fn key_at(&self, i: usize, x: u32) -> u32 {
        Credit::key_at(self, i, x)
    }

    #[inline(always)]
    fn least_vector<V: Vector>(
        self,
        v: V,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        draw: impl FnMut(u32) -> u32,
    ) -> Least {
        simd::least_credited(v, counters, excluded, self, draw)
    }
}
