use crate::error::Error;
use crate::pool::Pool;
use crate::snapshot::{SetView, Snapshot};
use std::hash::Hash;

/// Per-request cache data: how many of the request's cache keys (KV blocks)
/// each worker already holds, and how many it needs. The device-aware mode
/// reads full hits from it; the [`Cost`](crate::Cost) mode reads each
/// worker's count as its credit.
///
/// The counts come from the caller's own index of what each worker caches (a
/// radix tree over block hashes, an approximate tree fed by routing
/// decisions, events from the workers): this type only carries its answer for
/// one request. [`rebuild_sparse`](Self::rebuild_sparse) with the few workers
/// that match is what a prefix index gives, and lets the cost mode skip every
/// uncredited worker.
///
/// Build it from the pool and reuse it: [`rebuild`](Self::rebuild) and
/// [`rebuild_sparse`](Self::rebuild_sparse) refill it in place (no allocation
/// once its buffers fit the set), and applying it to a pick allocates nothing.
/// Like an [`Eligibility`](crate::Eligibility) mask it names worker
/// identities, not positions: after the set changes, a worker whose slot now
/// belongs to someone else counts as holding nothing, and a worker that joined
/// after the build holds nothing until you rebuild. A never-built
/// `CacheHits::new()` reports no hits on any pool; one built from another pool
/// makes the pick fail with [`Error::InvalidConfig`](crate::Error::InvalidConfig).
///
/// Each data-parallel rank of a worker (see [`WorkerInfo::ranks`](crate::WorkerInfo::ranks))
/// has a cache of its own, so a count is per rank: the `_ranked` builders take
/// one per rank, and the others give a worker's count to every one of its ranks.
///
/// ```
/// use workerpick::{CacheHits, DeviceAware, Pool, Request};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let mut hits = CacheHits::new();
/// // The request needs 4 keys; "b" holds all of them, "c" two.
/// hits.rebuild_sparse(&pool, 4, [(&"b", 4), (&"c", 2)]);
/// let r = pool
///     .reserve_with(&DeviceAware::new(), &Request::new().cache_hits(&hits))
///     .unwrap();
/// assert_eq!(*r.worker(), "b");
/// assert_eq!(r.weight(), 0); // a full hit books no load
/// ```
#[derive(Clone, Debug, Default)]
pub struct CacheHits {
    pool: u64,
    epoch: u64,
    pub(crate) needed: u32,
    /// Per slot, padded like the snapshot: keys held (0 for non-members).
    held: Vec<u32>,
    /// Per slot: the identity generation the count was recorded for.
    gens: Vec<u32>,
    /// The slots with a count above 0, each once, in the order recorded.
    credited: Vec<u32>,
    /// At least every count in `held` (the cost mode's dense scan keys on it).
    top: u32,
}

impl CacheHits {
    /// No hits, nothing needed, until rebuilt.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh input from `pool`'s current set: the request needs `needed`
    /// keys and worker `w` holds `held(w)` of them.
    pub fn build<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W) -> u32,
    ) -> Self {
        let mut hits = Self::new();
        hits.rebuild(pool, needed, held);
        hits
    }

    /// How many keys the request needs.
    pub fn needed(&self) -> u32 {
        self.needed
    }

    /// Keys `worker` holds, as recorded for it in `pool`'s set: 0 for a
    /// worker not in the set now, or when this was built for another pool.
    ///
    /// ```
    /// use workerpick::{CacheHits, Pool};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let hits = CacheHits::build(&pool, 4, |w| if *w == "b" { 3 } else { 0 });
    /// assert_eq!((hits.held_by(&pool, &"a"), hits.held_by(&pool, &"b")), (0, 3));
    /// ```
    pub fn held_by<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>, worker: &W) -> u32 {
        if self.pool != pool.id() {
            return 0;
        }
        let snap = pool.snapshot();
        // The most any of its ranks holds.
        snap.ranks_of(worker).map_or(0, |ranks| {
            ranks
                .slots()
                .map(|slot| self.held_in(&snap.view, slot))
                .max()
                .unwrap_or(0)
        })
    }

    /// Keys rank `rank` of `worker` holds, as recorded for it in `pool`'s
    /// set: 0 for a worker not in the set now, a rank it does not have, or
    /// when this was built for another pool.
    ///
    /// ```
    /// use workerpick::{CacheHits, Pool, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(2)).unwrap();
    /// let hits = CacheHits::build_ranked(&pool, 8, |_, rank| if rank == 1 { 6 } else { 0 });
    /// assert_eq!((hits.held_by_rank(&pool, &"node", 0), hits.held_by_rank(&pool, &"node", 1)), (0, 6));
    /// assert_eq!(hits.held_by(&pool, &"node"), 6); // the most any rank holds
    /// ```
    pub fn held_by_rank<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
    ) -> u32 {
        if self.pool != pool.id() {
            return 0;
        }
        let snap = pool.snapshot();
        snap.ranks_of(worker)
            .and_then(|ranks| ranks.slot(rank).ok())
            .map_or(0, |slot| self.held_in(&snap.view, slot))
    }

    /// A fresh input from `pool`'s current set: the request needs `needed`
    /// keys and rank `r` of worker `w` holds `held(w, r)` of them (rank 0 is
    /// a worker without ranks).
    pub fn build_ranked<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W, u32) -> u32,
    ) -> Self {
        let mut hits = Self::new();
        hits.rebuild_ranked(pool, needed, held);
        hits
    }

    /// Refills from `pool`'s current set, asking `held` for every worker
    /// (once; its count is every one of its ranks').
    pub fn rebuild<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        mut held: impl FnMut(&W) -> u32,
    ) {
        let snap = pool.snapshot();
        self.reset(pool, &snap, needed);
        if snap.ranked.is_empty() {
            for &slot in snap.view.members.iter() {
                self.record(slot, held(snap.key(slot)));
            }
            return;
        }
        let mut last = 0;
        for &slot in snap.view.members.iter() {
            // A worker's ranks are side by side, rank 0 first.
            if pool.slots.keys.rank(slot) == 0 {
                last = held(snap.key(slot));
            }
            self.record(slot, last);
        }
    }

    /// Refills from `pool`'s current set, asking `held` for every rank of
    /// every worker (see [`build_ranked`](Self::build_ranked)).
    pub fn rebuild_ranked<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        mut held: impl FnMut(&W, u32) -> u32,
    ) {
        let snap = pool.snapshot();
        self.reset(pool, &snap, needed);
        for &slot in snap.view.members.iter() {
            self.record(slot, held(snap.key(slot), pool.slots.keys.rank(slot)));
        }
    }

    /// Refills from `pool`'s current set with the workers that hold some keys;
    /// every other worker holds none. Workers not in the set are ignored.
    /// Cheaper than [`rebuild`](Self::rebuild) when few workers have hits.
    pub fn rebuild_sparse<'w, W: Clone + Eq + Hash + Send + Sync + 'w>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (&'w W, u32)>,
    ) {
        let snap = pool.snapshot();
        self.reset(pool, &snap, needed);
        for (worker, n) in held {
            if let Some(&slot) = snap.index.get(worker) {
                self.record_sparse(slot, n);
            } else if let Some(ranks) = snap.ranks_of(worker) {
                for slot in ranks.slots() {
                    self.record_sparse(slot, n);
                }
            }
        }
    }

    /// [`rebuild_sparse`](Self::rebuild_sparse) by rank: `(worker, rank,
    /// held)` for the ranks that hold some keys (what a per-rank prefix index
    /// gives). Ranks not in the set are ignored.
    ///
    /// ```
    /// use workerpick::{CacheHits, Cost, Pool, Request, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(4)).unwrap();
    /// let mut hits = CacheHits::new();
    /// hits.rebuild_sparse_ranked(&pool, 16, [(&"node", 2, 12)]);
    /// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
    /// assert_eq!(r.rank(), 2); // the rank that has the prefix cached
    /// ```
    pub fn rebuild_sparse_ranked<'w, W: Clone + Eq + Hash + Send + Sync + 'w>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (&'w W, u32, u32)>,
    ) {
        let snap = pool.snapshot();
        self.reset(pool, &snap, needed);
        for (worker, rank, n) in held {
            if let Some(slot) = snap.ranks_of(worker).and_then(|r| r.slot(rank).ok()) {
                self.record_sparse(slot, n);
            }
        }
    }

    /// Records `n` keys held in `slot`, which no other call records.
    #[inline]
    fn record(&mut self, slot: u32, n: u32) {
        self.held[slot as usize] = n;
        self.top = self.top.max(n);
        if n > 0 {
            self.credited.push(slot);
        }
    }

    /// Records `n` keys held in `slot`, replacing an earlier count for it.
    #[inline]
    fn record_sparse(&mut self, slot: u32, n: u32) {
        let held = &mut self.held[slot as usize];
        if *held == 0 && n > 0 {
            self.credited.push(slot);
        }
        *held = n;
        self.top = self.top.max(n);
    }

    fn reset<W>(&mut self, pool: &Pool<W>, snap: &Snapshot<W>, needed: u32) {
        let view = &snap.view;
        self.pool = pool.id();
        self.epoch = view.epoch;
        self.needed = needed;
        self.held.clear();
        self.held.resize(view.scan_len(), 0);
        self.gens.clear();
        self.gens.extend_from_slice(&view.gens);
        self.credited.clear();
        self.top = 0;
    }

    /// The counts per slot and a bound on them, when `set` is the set they were
    /// built for (so every count is the identity's it was recorded for): what a
    /// dense scan reads, lane by lane, with no identity check.
    #[inline(always)]
    pub(crate) fn dense_in(&self, set: &SetView) -> Option<(&[u32], u32)> {
        (self.epoch == set.epoch && self.pool != 0).then_some((&self.held, self.top))
    }

    /// The slots recorded with a count above 0 (some may read 0 now: set to
    /// 0 after, or no longer the identity recorded).
    #[inline(always)]
    pub(crate) fn credited(&self) -> &[u32] {
        &self.credited
    }

    /// Refuses an input built for another pool (a never-built one fits all).
    #[inline(always)]
    pub(crate) fn check_pool(&self, pool_id: u64) -> Result<(), Error> {
        if self.pool == 0 || self.pool == pool_id {
            return Ok(());
        }
        Err(Error::InvalidConfig {
            what: "cache hits",
            why: "they were built for another pool; build them from this pool".into(),
        })
    }

    /// Keys held by the worker in `slot` of `set`, a set of the pool this was
    /// built from: 0 unless the slot still holds the identity it was built for.
    #[inline(always)]
    pub(crate) fn held_in(&self, set: &SetView, slot: u32) -> u32 {
        let s = slot as usize;
        let held = self.held.get(s).copied().unwrap_or(0);
        if held == 0 || self.epoch == set.epoch || self.gens.get(s) == set.gens.get(s) {
            held
        } else {
            0
        }
    }
}
