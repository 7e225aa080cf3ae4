//! The consistent-hash ring an affinity pool builds with each snapshot: each
//! candidate's [`POINTS`] points, sorted, with a bucket index that makes a
//! key's first point (and its owner: one word) one load and a short forward
//! step away. See
//! [`docs::affinity`](crate::docs::affinity) ("Bounded-load affinity").

use crate::sync::CachePadded;
use crate::sync::atomic::{AtomicU64, Ordering};
use std::hash::{Hash, Hasher};

/// Points per worker. Each worker's share of the keys is a sum of `POINTS`
/// arcs: relative spread ≈ 1/√32 ≈ 18 % before the load bound evens it out.
/// Constant, so adding a worker never moves another worker's points.
pub(crate) const POINTS: u32 = 32;

/// `total` before the first scan: no total is known.
const UNKNOWN: u64 = u64::MAX;

/// A worker's identity hash: its key hashed with fixed keys, so two pools
/// (replicas) built by the same binary place the same worker alike.
pub(crate) fn identity<W: Hash>(worker: &W) -> u64 {
    // `DefaultHasher::new()` is SipHash with zero keys: deterministic for
    // one build of the standard library (not across Rust releases).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    worker.hash(&mut h);
    h.finish()
}

/// The identity hash of rank `rank` of a worker whose identity is `id`:
/// the worker's own for rank 0 (a worker without ranks is placed as it
/// always was), a mix of the two for the others.
pub(crate) fn rank_identity(id: u64, rank: u32) -> u64 {
    if rank == 0 {
        id
    } else {
        mix(id ^ mix(u64::from(rank) | 1 << 63))
    }
}

/// A point's or key's position on the ring: the high 32 bits of its hash.
#[inline(always)]
fn position(hash: u64) -> u64 {
    hash >> 32
}

/// A 64-bit finaliser (SplitMix64's): spreads request keys and point seeds.
#[inline(always)]
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The ring over one set of candidates.
pub(crate) struct Ring {
    /// Per point, ascending: its position (high 32 bits) and the slot of the
    /// worker that owns it (low 32 bits), in one word so that finding a
    /// key's point and its owner is one cache miss.
    points: Box<[u64]>,
    /// Per bucket `b` (the top `bits` bits of a position): the first point at
    /// or after `b`'s start; one more entry holding `points.len()`.
    buckets: Box<[u32]>,
    /// `32 - bits`: a position's bucket is `position >> shift`.
    shift: u32,
    /// Which `(slot, generation)`s it was built over, in slot order: the writer
    /// reuses the ring while they stay the same.
    pub(crate) built_over: Box<[(u32, u32)]>,
    /// The cached sum of the candidates' loads and their capacity units
    /// (`affinity` refreshes it): read by every pick of a large pool,
    /// written once per refresh, so padded away from the tables.
    pub(crate) total: CachePadded<Cached>,
}

/// A total and the capacity units it is spread over, as last scanned.
pub(crate) struct Cached {
    load: AtomicU64,
    units: AtomicU64,
}

impl Ring {
    /// The ring over `workers`: `(identity, slot, generation)` per candidate.
    /// Writer side: allocates.
    pub(crate) fn build(workers: &[(u64, u32, u32)]) -> Self {
        let mut points: Vec<u64> = Vec::with_capacity(workers.len() * POINTS as usize);
        for &(id, slot, _) in workers {
            for j in 0..u64::from(POINTS) {
                points.push((position(mix(id ^ mix(j))) << 32) | u64::from(slot));
            }
        }
        // Unstable is fine: (position, slot) words are distinct per worker,
        // and equal identities give equal rings whatever the order.
        points.sort_unstable();
        let bits = (usize::BITS - points.len().max(1).leading_zeros()).clamp(1, 30);
        let shift = 32 - bits;
        let mut buckets = vec![0u32; (1usize << bits) + 1];
        let mut p = 0usize;
        for (b, first) in buckets.iter_mut().enumerate() {
            while p < points.len() && ((points[p] >> 32 >> shift) as usize) < b {
                p += 1;
            }
            *first = p as u32;
        }
        let mut built_over: Vec<(u32, u32)> = workers.iter().map(|&(_, s, g)| (s, g)).collect();
        built_over.sort_unstable();
        Self {
            points: points.into_boxed_slice(),
            buckets: buckets.into_boxed_slice(),
            shift,
            built_over: built_over.into_boxed_slice(),
            total: CachePadded::new(Cached {
                load: AtomicU64::new(UNKNOWN),
                units: AtomicU64::new(0),
            }),
        }
    }

    /// How many points there are (0 for an empty set).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    /// The index of the first point at or after `key`'s position (wrapping).
    /// One bucket load and, on average, about one step.
    #[inline(always)]
    pub(crate) fn start(&self, key: u64) -> usize {
        let h = position(mix(key));
        let b = (h >> self.shift) as usize;
        let (mut i, end) = (self.buckets[b] as usize, self.buckets[b + 1] as usize);
        while i < end && (self.points[i] >> 32) < h {
            i += 1;
        }
        if i == self.points.len() { 0 } else { i }
    }

    /// The owner of point `i` (`i < len`).
    #[inline(always)]
    pub(crate) fn owner(&self, i: usize) -> u32 {
        self.points[i] as u32
    }

    /// The cached `(total load, capacity units)`, if a scan stored one.
    #[inline(always)]
    pub(crate) fn cached(&self) -> Option<(u64, u64)> {
        let load = self.total.load.load(Ordering::Relaxed);
        (load != UNKNOWN).then(|| (load, self.total.units.load(Ordering::Relaxed)))
    }

    /// Stores a scanned total. Two Relaxed stores: a reader may pair one
    /// scan's load with another's units, and either is an estimate anyway.
    pub(crate) fn store(&self, load: u64, units: u64) {
        self.total.units.store(units, Ordering::Relaxed);
        self.total.load.store(load.min(UNKNOWN - 1), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_is_the_first_point_at_or_after_the_key() {
        let workers: Vec<_> = (0..37u32).map(|s| (mix(u64::from(s) * 7919), s, 0)).collect();
        let ring = Ring::build(&workers);
        assert_eq!(ring.len(), 37 * POINTS as usize);
        assert!(ring.points.windows(2).all(|w| w[0] < w[1]));
        for key in (0..if cfg!(miri) { 20 } else { 5000u64 }).map(|k| k.wrapping_mul(0x2545_f491_4f6c_dd1d)) {
            let h = position(mix(key));
            let want = ring.points.iter().position(|&p| p >> 32 >= h).unwrap_or(0);
            assert_eq!(ring.start(key), want, "key {key}");
        }
    }

    #[test]
    fn an_empty_ring_has_no_points() {
        let ring = Ring::build(&[]);
        assert_eq!(ring.len(), 0);
        assert!(ring.cached().is_none());
    }
}
