//! A request's cache credit: which workers hold how much of its prompt
//! ([`CacheHits`], named by [`WorkerToken`]) and how credit weighs against
//! load in the cost mode ([`tuning`]). The SIMD pass that applies it is
//! `scan::credit`.

pub(crate) mod tuning;

use crate::error::Error;
use crate::raw::RawPool;
use crate::snapshot::SetView;
use std::hash::Hash;

/// Per-request cache data: how many of the request's cache keys (KV blocks)
/// each worker already holds, and how many it needs. The device-aware mode
/// reads full hits from it; the [`Cost`](crate::Cost) mode reads each
/// worker's count as its credit.
///
/// The counts come from the caller's own index of what each worker caches (a
/// radix tree over block hashes, an approximate tree fed by routing
/// decisions, events from the workers): this type only carries its answer for
/// one request. Two ways to fill it:
///
/// - **Sparse**, with the few workers that match, as a prefix index gives
///   them: [`rebuild_tokens`](Self::rebuild_tokens) from [`WorkerToken`]s the
///   index stores (no lookup per worker), or
///   [`rebuild_sparse`](Self::rebuild_sparse) from worker ids (one hash
///   lookup each). Either costs time in the workers named, not in the pool's
///   size, and lets the cost mode skip every uncredited worker.
/// - **Dense**, asking about every worker: [`rebuild`](Self::rebuild) (and
///   [`build`](Self::build)); the cost mode then compares every candidate's
///   credit in one SIMD pass.
///
/// Each data-parallel rank of a worker (see [`WorkerInfo::ranks`](crate::WorkerInfo::ranks))
/// has a cache of its own, so a count is per rank: the `_ranked` builders take
/// one per rank, and the others give a worker's count to every one of its
/// ranks.
///
/// Build it once and reuse it: the rebuilds refill it in place (no allocation
/// once its buffers fit the set), and applying it to a pick allocates nothing.
/// It names workers, not positions, and a count is for the worker's *stay*
/// in the set it was built from (its incarnation): after the set changes, a
/// worker whose slot now belongs to someone else counts as holding nothing,
/// a worker that joined after the build holds nothing until you rebuild, and
/// a worker removed and inserted again holds nothing either, even when the
/// same id comes back to the same slot before it was reclaimed (a rejoined
/// engine's cache is usually empty: let your index report it afresh, then
/// rebuild). Draining and resuming a worker, or changing its
/// [`WorkerInfo`](crate::WorkerInfo), keep its stay and its credit. A
/// never-built `CacheHits::new()` reports no hits on any pool; one built from
/// another pool makes the pick fail with
/// [`Error::InvalidConfig`](crate::Error::InvalidConfig).
///
/// ```
/// use workerpick::{CacheHits, Cost, Pool, Request};
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let mut hits = CacheHits::new();
/// hits.rebuild_sparse(&pool, 8, [(&"b", 8)]);
/// let _busy = pool.reserve_worker(&"b", 1).unwrap(); // keeps b's slot from reuse
/// pool.remove(&"b").unwrap();
/// pool.insert("b").unwrap(); // back in its slot, but a new stay
/// assert_eq!(hits.held_by(&pool, &"b"), 0);
/// ```
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
#[derive(Debug, Default)]
pub struct CacheHits {
    pool: u64,
    epoch: u64,
    pub(crate) needed: u32,
    /// The workers recorded with a count, each once, in the order recorded.
    entries: Vec<Credited>,
    /// Per slot, for sparse builds: `stamp << 32 | i` when `entries[i]` is
    /// the slot's in the build stamped `stamp`; anything else means none.
    /// Never cleared per build (a new stamp retires every mark at once), so a
    /// build touches only the slots it records.
    marks: Vec<u64>,
    stamp: u32,
    /// Whether `held` and `incs` describe the set of `epoch` (a dense build).
    dense: bool,
    /// Per slot, padded like the snapshot: keys held (0 for non-members).
    held: Vec<u32>,
    /// Per slot: the incarnation the count was recorded for.
    incs: Vec<u32>,
    /// At least every count recorded (the cost mode's dense scan keys on it).
    top: u32,
}

impl Clone for CacheHits {
    fn clone(&self) -> Self {
        let mut hits = Self::new();
        hits.clone_from(self);
        hits
    }

    /// Copies `from` into this value's buffers: no allocation once they are
    /// as large as its (a queued request's copy, refilled per request).
    fn clone_from(&mut self, from: &Self) {
        (self.pool, self.epoch, self.needed) = (from.pool, from.epoch, from.needed);
        (self.stamp, self.dense, self.top) = (from.stamp, from.dense, from.top);
        self.entries.clone_from(&from.entries);
        self.marks.clone_from(&from.marks);
        self.held.clone_from(&from.held);
        self.incs.clone_from(&from.incs);
    }
}

/// One worker's count, with the incarnation it was recorded for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Credited {
    pub(crate) slot: u32,
    pub(crate) incarnation: u32,
    pub(crate) held: u32,
}

/// A worker's identity in one pool, resolved once: what a router's cache
/// index can store beside each worker, so that filling a
/// [`CacheHits`] per request looks nothing up
/// ([`CacheHits::rebuild_tokens`]).
///
/// A token names the worker it was taken for as long as that worker stays in
/// the pool. Once the worker leaves, the token names nobody (its credit
/// counts for nothing), even if the same id joins again, in the same slot or
/// another: take a new token when a worker (re)joins, as you would update
/// the index.
///
/// ```
/// use workerpick::{CacheHits, Cost, Pool, Request, WorkerToken};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// // At registration, beside each worker in the index:
/// let b = WorkerToken::of(&pool, &"b").unwrap();
/// // Per request, from the index's matches:
/// let mut hits = CacheHits::new();
/// hits.rebuild_tokens(&pool, 8, [(b, 5)]);
/// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
/// assert_eq!(*r.worker(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkerToken {
    pool: u64,
    slot: u32,
    incarnation: u32,
}

impl WorkerToken {
    /// [`of`](Self::of), on the raw pool.
    pub(crate) fn of_raw<W: Clone + Eq + Hash + Send + Sync>(pool: &RawPool<W>, worker: &W) -> Option<Self> {
        let snap = pool.snapshot();
        let slot = *snap.index.get(worker)?;
        Some(Self::at(pool.id(), &snap.view, slot))
    }

    /// [`of_rank`](Self::of_rank), on the raw pool.
    pub(crate) fn of_rank_raw<W: Clone + Eq + Hash + Send + Sync>(
        pool: &RawPool<W>,
        worker: &W,
        rank: u32,
    ) -> Option<Self> {
        let snap = pool.snapshot();
        let slot = snap.ranks_of(worker)?.slot(rank).ok()?;
        Some(Self::at(pool.id(), &snap.view, slot))
    }

    /// The token with these parts (as an index stored them from
    /// [`parts`](Self::parts)).
    #[inline(always)]
    pub(crate) fn from_parts(pool: u64, slot: u32, incarnation: u32) -> Self {
        Self {
            pool,
            slot,
            incarnation,
        }
    }

    /// The slot and the incarnation the token names: two tokens of one pool
    /// with equal parts name the same worker in the same stay in the set
    /// (a worker that left and joined again has new parts).
    #[inline(always)]
    pub(crate) fn parts(self) -> (u32, u32) {
        (self.slot, self.incarnation)
    }

    fn at(pool: u64, view: &SetView, slot: u32) -> Self {
        Self {
            pool,
            slot,
            incarnation: view.incs[slot as usize],
        }
    }
}

impl CacheHits {
    /// No hits, nothing needed, until rebuilt.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`build`](Self::build), on the raw pool.
    pub(crate) fn build_raw<W: Clone + Eq + Hash + Send + Sync>(
        pool: &RawPool<W>,
        needed: u32,
        held: impl FnMut(&W) -> u32,
    ) -> Self {
        let mut hits = Self::new();
        hits.rebuild_raw(pool, needed, held);
        hits
    }

    /// How many keys the request needs.
    pub fn needed(&self) -> u32 {
        self.needed
    }

    /// [`held_by`](Self::held_by), on the raw pool.
    pub(crate) fn held_by_raw<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &RawPool<W>,
        worker: &W,
    ) -> u32 {
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

    /// [`most_held`](Self::most_held), on the raw pool.
    pub(crate) fn most_held_raw<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &RawPool<W>) -> u32 {
        if self.pool != pool.id() {
            return 0;
        }
        let snap = pool.snapshot();
        let view = &snap.view;
        view.members
            .iter()
            .chain(view.draining.iter())
            .map(|&slot| self.held_in(view, slot))
            .max()
            .unwrap_or(0)
    }

    /// [`held_by_rank`](Self::held_by_rank), on the raw pool.
    pub(crate) fn held_by_rank_raw<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &RawPool<W>,
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

    /// [`build_ranked`](Self::build_ranked), on the raw pool.
    pub(crate) fn build_ranked_raw<W: Clone + Eq + Hash + Send + Sync>(
        pool: &RawPool<W>,
        needed: u32,
        held: impl FnMut(&W, u32) -> u32,
    ) -> Self {
        let mut hits = Self::new();
        hits.rebuild_ranked_raw(pool, needed, held);
        hits
    }

    /// [`rebuild`](Self::rebuild), on the raw pool.
    pub(crate) fn rebuild_raw<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &RawPool<W>,
        needed: u32,
        mut held: impl FnMut(&W) -> u32,
    ) {
        let snap = pool.snapshot();
        self.begin(pool.id(), needed);
        self.fill_dense(&snap.view);
        if snap.ranked.is_empty() {
            for &slot in snap.view.members.iter() {
                self.record_dense(&snap.view, slot, held(snap.key(slot)));
            }
            return;
        }
        let mut last = 0;
        for &slot in snap.view.members.iter() {
            // A worker's ranks are side by side, rank 0 first.
            if pool.slots.keys.rank(slot) == 0 {
                last = held(snap.key(slot));
            }
            self.record_dense(&snap.view, slot, last);
        }
    }

    /// [`rebuild_ranked`](Self::rebuild_ranked), on the raw pool.
    pub(crate) fn rebuild_ranked_raw<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &RawPool<W>,
        needed: u32,
        mut held: impl FnMut(&W, u32) -> u32,
    ) {
        let snap = pool.snapshot();
        self.begin(pool.id(), needed);
        self.fill_dense(&snap.view);
        for &slot in snap.view.members.iter() {
            let n = held(snap.key(slot), pool.slots.keys.rank(slot));
            self.record_dense(&snap.view, slot, n);
        }
    }

    /// Records `n` keys for member `slot` of `view` in a dense build (each
    /// slot once).
    #[inline]
    fn record_dense(&mut self, view: &SetView, slot: u32, n: u32) {
        self.held[slot as usize] = n;
        self.top = self.top.max(n);
        if n > 0 {
            let incarnation = view.incs[slot as usize];
            self.entries.push(Credited {
                slot,
                incarnation,
                held: n,
            });
        }
    }

    /// [`rebuild_sparse`](Self::rebuild_sparse), on the raw pool.
    pub(crate) fn rebuild_sparse_raw<'w, W: Clone + Eq + Hash + Send + Sync + 'w>(
        &mut self,
        pool: &RawPool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (&'w W, u32)>,
    ) {
        let snap = pool.snapshot();
        self.begin_sparse(pool.id(), &snap.view, needed);
        for (worker, n) in held {
            if let Some(&slot) = snap.index.get(worker) {
                self.record_sparse(&snap.view, slot, n);
            } else if let Some(ranks) = snap.ranks_of(worker) {
                for slot in ranks.slots() {
                    self.record_sparse(&snap.view, slot, n);
                }
            }
        }
        self.end_sparse(&snap.view);
    }

    /// [`rebuild_sparse_ranked`](Self::rebuild_sparse_ranked), on the raw pool.
    pub(crate) fn rebuild_sparse_ranked_raw<'w, W: Clone + Eq + Hash + Send + Sync + 'w>(
        &mut self,
        pool: &RawPool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (&'w W, u32, u32)>,
    ) {
        let snap = pool.snapshot();
        self.begin_sparse(pool.id(), &snap.view, needed);
        for (worker, rank, n) in held {
            if let Some(slot) = snap.ranks_of(worker).and_then(|r| r.slot(rank).ok()) {
                self.record_sparse(&snap.view, slot, n);
            }
        }
        self.end_sparse(&snap.view);
    }

    /// Starts a sparse build over `view`, with marks for all its slots.
    #[inline]
    fn begin_sparse(&mut self, id: u64, view: &SetView, needed: u32) {
        self.begin(id, needed);
        self.epoch = view.epoch;
        if self.marks.len() < view.scan_len() {
            self.fit_marks(view.scan_len());
        }
    }

    /// Records `n` keys for member `slot` of `view` in a sparse build.
    #[inline(always)]
    fn record_sparse(&mut self, view: &SetView, slot: u32, n: u32) {
        self.record(slot, view.incs[slot as usize], n);
        self.top = self.top.max(n);
    }

    /// Ends a sparse build: keeps the dense form too when more than an eighth
    /// of `view`'s slots were named.
    #[inline]
    fn end_sparse(&mut self, view: &SetView) {
        if self.entries.len() * 8 > view.scan_len() {
            self.fill_dense(view);
            for e in &self.entries {
                self.held[e.slot as usize] = e.held;
            }
        }
    }

    /// [`rebuild_tokens`](Self::rebuild_tokens), on the raw pool.
    pub(crate) fn rebuild_tokens_raw<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &RawPool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (WorkerToken, u32)>,
    ) {
        let id = pool.id();
        self.begin(id, needed);
        let mut top = 0;
        for (token, n) in held {
            if token.pool == id {
                if token.slot as usize >= self.marks.len() {
                    self.fit_marks(token.slot as usize + 1);
                }
                self.record(token.slot, token.incarnation, n);
                top = top.max(n);
            }
        }
        self.top = top;
    }

    /// Starts a build for pool `id`: the previous one's entries and marks
    /// retire (in constant time), its dense form is no longer read.
    #[inline]
    fn begin(&mut self, id: u64, needed: u32) {
        self.pool = id;
        self.needed = needed;
        self.entries.clear();
        self.dense = false;
        self.top = 0;
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Once in 2^32 builds: marks of stamp 1 may remain.
            self.marks.fill(0);
            self.stamp = 1;
        }
    }

    /// Marks for at least `len` slots (grows only: allocates only when the
    /// pool has grown since).
    #[cold]
    #[inline(never)]
    fn fit_marks(&mut self, len: usize) {
        if self.marks.len() < len {
            self.marks.resize(len, 0);
        }
    }

    /// Records `n` keys for `slot` (below the marks' length), held by
    /// incarnation `incarnation`: a new entry, or the slot's entry of this
    /// build overwritten.
    #[inline(always)]
    fn record(&mut self, slot: u32, incarnation: u32, n: u32) {
        let Some(mark) = self.marks.get_mut(slot as usize) else {
            return;
        };
        let entry = Credited {
            slot,
            incarnation,
            held: n,
        };
        if (*mark >> 32) as u32 == self.stamp {
            if let Some(e) = self.entries.get_mut(*mark as u32 as usize) {
                *e = entry;
            }
        } else if n > 0 {
            *mark = u64::from(self.stamp) << 32 | self.entries.len() as u64;
            self.entries.push(entry);
        }
    }

    /// The dense form, zeroed, for `view` (linear in the set's size).
    fn fill_dense(&mut self, view: &SetView) {
        self.epoch = view.epoch;
        self.dense = true;
        self.held.clear();
        self.held.resize(view.scan_len(), 0);
        self.incs.clear();
        self.incs.extend_from_slice(&view.incs);
    }

    /// The counts per slot and a bound on them, when this is a dense build
    /// for `set` (so every count is the incarnation's it was recorded for): what
    /// a dense scan reads, lane by lane, with no identity check.
    #[inline(always)]
    pub(crate) fn dense_in(&self, set: &SetView) -> Option<(&[u32], u32)> {
        (self.dense && self.epoch == set.epoch && self.pool != 0).then_some((&self.held, self.top))
    }

    /// Whether the dense form exists (the cost mode's SIMD pass may read it).
    #[inline(always)]
    pub(crate) fn is_dense(&self) -> bool {
        self.dense
    }

    /// The workers recorded with a count, each once (some may read 0 now:
    /// set to 0 after, or no longer the incarnation recorded; check with
    /// [`credit_in`](Self::credit_in)).
    #[inline(always)]
    pub(crate) fn entries(&self) -> &[Credited] {
        &self.entries
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
    /// built from: 0 unless the slot still holds the incarnation it was built
    /// for.
    #[inline(always)]
    pub(crate) fn held_in(&self, set: &SetView, slot: u32) -> u32 {
        let s = slot as usize;
        if self.dense {
            let held = self.held.get(s).copied().unwrap_or(0);
            return if held == 0 || self.epoch == set.epoch || self.incs.get(s) == set.incs.get(s) {
                held
            } else {
                0
            };
        }
        match self.marks.get(s) {
            Some(&mark) if (mark >> 32) as u32 == self.stamp => {
                self.credit_in(set, self.entries[mark as u32 as usize])
            }
            _ => 0,
        }
    }

    /// The keys entry `e` holds in `set`: 0 unless its slot still holds the
    /// incarnation it was recorded for.
    #[inline(always)]
    pub(crate) fn credit_in(&self, set: &SetView, e: Credited) -> u32 {
        if set.incs.get(e.slot as usize) == Some(&e.incarnation) {
            e.held
        } else {
            0
        }
    }
}
