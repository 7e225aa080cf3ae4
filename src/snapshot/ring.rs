//! The consistent-hash ring an affinity pool builds with each snapshot: each
//! candidate's [`POINTS`] points, sorted, laid out in a gapped table where a
//! key's bucket is its index, so that finding its first point (and that
//! point's owner: one word) is one load and a short forward step, in one
//! cache line mostly. See
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

/// The bucket of position `pos` among `buckets`: monotone in `pos`, so
/// sorted points fill the table in order. A multiply and a shift (`buckets`
/// need not be a power of two).
#[inline(always)]
fn bucket(pos: u64, buckets: u64) -> u64 {
    (pos * buckets) >> 32
}

/// A request key's hash: one 64×64→128-bit multiply by an odd constant,
/// folded (high half xor low half). Short on the pick's critical path
/// (~4 cycles against the finaliser's ~12).
#[inline(always)]
pub(crate) fn spread(key: u64) -> u64 {
    let p = u128::from(key ^ 0x243f_6a88_85a3_08d3) * 0x9e37_79b9_7f4a_7c15;
    (p >> 64) as u64 ^ p as u64
}

/// A 64-bit finaliser (SplitMix64's): spreads request keys and point seeds.
#[inline(always)]
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Table entries per point, as a fraction `NUM / DEN`: 3/2, so the table is
/// two-thirds full. A point displaced from its bucket by earlier ones waits
/// behind about `α² / (2(1 − α))` = 0.67 of them on average (the backlog of a
/// queue served once per bucket), so a lookup steps over ~1 entry: 8 bytes,
/// in the line it loaded. A fuller table steps further; an emptier one costs
/// memory (12 bytes a point here).
const SLOTS_NUM: u64 = 3;
const SLOTS_DEN: u64 = 2;

/// The ring over one set of candidates.
pub(crate) struct Ring {
    /// The points in ring order, each as its position (high 32 bits) and
    /// the slot of the worker that owns it (low 32 bits), in a gapped table:
    /// point `p` sits at the first free index at or after its bucket
    /// `⌊pos(p) · buckets / 2³²⌋`, and every index no point took holds a copy
    /// of the next point. So the first point at or after a key's position is
    /// at or shortly after the key's bucket, entries are non-decreasing up to
    /// the last point, and a walk from any index meets every point in ring
    /// order (copies repeat the point they copy, next to it). Indices past
    /// the last point (if any) hold copies of the first, so a walk wraps.
    table: Box<[u64]>,
    /// How many buckets a position maps to (`table.len()` is this plus the
    /// points that spilled past the last bucket).
    buckets: u64,
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
        let points = Self::points(workers);
        let buckets = (points.len() as u64 * SLOTS_NUM).div_ceil(SLOTS_DEN);
        // Each point at the first index at or after its bucket that no
        // earlier point took; `u64::MAX` marks an index none took.
        let mut table: Vec<u64> = vec![u64::MAX; buckets as usize];
        let mut next = 0usize;
        for &p in &points {
            let at = (bucket(p >> 32, buckets) as usize).max(next);
            if at == table.len() {
                table.push(p);
            } else {
                table[at] = p;
            }
            next = at + 1;
        }
        // Each free index copies the next point; past the last, the first.
        let mut after = points.first().copied().unwrap_or(0);
        for e in table.iter_mut().rev() {
            if *e == u64::MAX {
                *e = after;
            } else {
                after = *e;
            }
        }
        let mut built_over: Vec<(u32, u32)> = workers.iter().map(|&(_, s, g)| (s, g)).collect();
        built_over.sort_unstable();
        Self {
            table: table.into_boxed_slice(),
            buckets,
            built_over: built_over.into_boxed_slice(),
            total: CachePadded::new(Cached {
                load: AtomicU64::new(UNKNOWN),
                units: AtomicU64::new(0),
            }),
        }
    }

    /// Every point of `workers`, sorted: the ring.
    fn points(workers: &[(u64, u32, u32)]) -> Vec<u64> {
        let mut points: Vec<u64> = Vec::with_capacity(workers.len() * POINTS as usize);
        for &(id, slot, _) in workers {
            for j in 0..u64::from(POINTS) {
                points.push((position(mix(id ^ mix(j))) << 32) | u64::from(slot));
            }
        }
        // Unstable is fine: (position, slot) words are distinct per worker,
        // and equal identities give equal rings whatever the order.
        points.sort_unstable();
        points
    }

    /// How many entries a full turn of the table visits (0 for an empty set).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The index of the first entry at or after `key`'s position (wrapping):
    /// it holds the key's first point or a copy of it. One load of the key's
    /// bucket and, on average, about one step in the same cache line.
    #[inline(always)]
    pub(crate) fn start(&self, key: u64) -> usize {
        let h = position(spread(key));
        let mut i = bucket(h, self.buckets) as usize;
        while let Some(&e) = self.table.get(i) {
            if e >> 32 >= h {
                return i;
            }
            i += 1;
        }
        0
    }

    /// The owner of entry `i` (`i < len`).
    #[inline(always)]
    pub(crate) fn owner(&self, i: usize) -> u32 {
        self.table[i] as u32
    }

    /// The cached `(total load, capacity units)`, if a scan stored one.
    #[inline(always)]
    pub(crate) fn cached(&self) -> Option<(u64, u64)> {
        let load = self.total.load.load(Ordering::Relaxed);
        (load != UNKNOWN).then(|| (load, self.total.units.load(Ordering::Relaxed)))
    }

    /// Drops the cached total: the next pick that needs one rescans.
    #[inline]
    pub(crate) fn retire(&self) {
        if self.total.load.load(Ordering::Relaxed) != UNKNOWN {
            self.total.load.store(UNKNOWN, Ordering::Relaxed);
        }
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

    fn ring_of(n: u32) -> (Ring, Vec<u64>) {
        let workers: Vec<_> = (0..n).map(|s| (mix(u64::from(s) * 7919), s, 0)).collect();
        (Ring::build(&workers), Ring::points(&workers))
    }

    fn keys() -> impl Iterator<Item = u64> {
        (0..if cfg!(miri) { 20 } else { 5000u64 }).map(|k| k.wrapping_mul(0x2545_f491_4f6c_dd1d))
    }

    #[test]
    fn start_finds_the_first_point_at_or_after_the_key() {
        // Safe code: under Miri, small rings and a few keys (the 300-worker
        // ring's build and every key took two minutes there).
        let sizes: &[_] = if cfg!(miri) { &[1, 2, 37] } else { &[1, 2, 37, 300] };
        for &n in sizes {
            let (ring, points) = ring_of(n);
            assert!(ring.len() >= points.len() * 3 / 2);
            for key in keys().take(if cfg!(miri) { 8 } else { usize::MAX }) {
                let h = position(spread(key));
                let want = points.iter().find(|&&p| p >> 32 >= h).unwrap_or(&points[0]);
                assert_eq!(ring.table[ring.start(key)], *want, "{n} workers, key {key}");
            }
        }
    }

    #[test]
    fn a_walk_meets_the_points_in_ring_order() {
        // From any start, the distinct entries of one full turn are the
        // sorted points rotated to that start: the preference order.
        for n in [1, 3, 37] {
            let (ring, points) = ring_of(n);
            for key in keys().take(if cfg!(miri) { 3 } else { 200 }) {
                let i = ring.start(key);
                let mut seen: Vec<u64> = Vec::new();
                for k in 0..ring.len() {
                    let e = ring.table[(i + k) % ring.len()];
                    if seen.last() != Some(&e) {
                        seen.push(e);
                    }
                }
                if seen.len() > points.len() {
                    // The turn ended on copies of the point it started on.
                    assert_eq!(seen.pop(), seen.first().copied());
                }
                let first = points.iter().position(|&p| p == seen[0]).unwrap();
                let rotated: Vec<u64> = points[first..].iter().chain(&points[..first]).copied().collect();
                assert_eq!(seen, rotated, "{n} workers, key {key}");
            }
        }
    }

    #[test]
    fn an_empty_ring_has_no_points() {
        let ring = Ring::build(&[]);
        assert_eq!(ring.len(), 0);
        assert_eq!(ring.start(7), 0);
        assert!(ring.cached().is_none());
    }
}
