//! The public constructors and queries of the masks and cache credit that
//! take a [`Pool`]: the types live below the pool (requests and the modes
//! read them); what reads a pool's set to fill them lives here, over the
//! raw pool.

use super::Pool;
use crate::credit::{CacheHits, WorkerToken};
use crate::eligibility::Eligibility;
use core::hash::Hash;

impl WorkerToken {
    /// The token of `worker` in `pool`'s current set; `None` if it is not a
    /// member (a worker with data-parallel ranks has a token per rank:
    /// [`of_rank`](Self::of_rank)).
    pub fn of<W: Clone + Eq + Hash + Send + Sync>(pool: &Pool<W>, worker: &W) -> Option<Self> {
        Self::of_raw(&pool.raw, worker)
    }

    /// The token of rank `rank` of `worker` in `pool`'s current set (rank 0
    /// of a worker without ranks is the worker); `None` if it has no such
    /// rank.
    ///
    /// ```
    /// use workerpick::{CacheHits, Cost, Pool, Request, WorkerInfo, WorkerToken};
    /// let pool = Pool::new();
    /// pool.insert_with("node", WorkerInfo::new().ranks(4)).unwrap();
    /// let rank3 = WorkerToken::of_rank(&pool, &"node", 3).unwrap();
    /// let mut hits = CacheHits::new();
    /// hits.rebuild_tokens(&pool, 8, [(rank3, 8)]);
    /// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
    /// assert_eq!(r.rank(), 3);
    /// ```
    pub fn of_rank<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        worker: &W,
        rank: u32,
    ) -> Option<Self> {
        Self::of_rank_raw(&pool.raw, worker, rank)
    }
}

impl CacheHits {
    /// A fresh input from `pool`'s current set: the request needs `needed`
    /// keys and worker `w` holds `held(w)` of them.
    pub fn build<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W) -> u32,
    ) -> Self {
        Self::build_raw(&pool.raw, needed, held)
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
        self.held_by_raw(&pool.raw, worker)
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
        self.held_by_rank_raw(&pool.raw, worker, rank)
    }

    /// The most keys any worker now in `pool` holds (any of its ranks, a
    /// draining worker too): the credit of the best-placed worker, without
    /// naming it. 0 when this was built for another pool. A pass over the
    /// set's slots; allocates nothing.
    ///
    /// ```
    /// use workerpick::{CacheHits, Pool};
    /// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
    /// let mut hits = CacheHits::new();
    /// hits.rebuild_sparse(&pool, 8, [(&"a", 2), (&"c", 5)]);
    /// assert_eq!(hits.most_held(&pool), 5);
    /// pool.remove(&"c").unwrap(); // its credit goes with it
    /// assert_eq!(hits.most_held(&pool), 2);
    /// ```
    pub fn most_held<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> u32 {
        self.most_held_raw(&pool.raw)
    }

    /// A fresh input from `pool`'s current set: the request needs `needed`
    /// keys and rank `r` of worker `w` holds `held(w, r)` of them (rank 0 is
    /// a worker without ranks).
    pub fn build_ranked<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W, u32) -> u32,
    ) -> Self {
        Self::build_ranked_raw(&pool.raw, needed, held)
    }

    /// Refills from `pool`'s current set, asking `held` for every worker
    /// (once; its count is every one of its ranks'). A dense build: linear
    /// in the pool's size.
    pub fn rebuild<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W) -> u32,
    ) {
        self.rebuild_raw(&pool.raw, needed, held)
    }

    /// Refills from `pool`'s current set, asking `held` for every rank of
    /// every worker (see [`build_ranked`](Self::build_ranked)).
    pub fn rebuild_ranked<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl FnMut(&W, u32) -> u32,
    ) {
        self.rebuild_ranked_raw(&pool.raw, needed, held)
    }

    /// Refills from `pool`'s current set with the workers that hold some keys;
    /// every other worker holds none (a worker with ranks: each of its ranks
    /// holds the count). Workers not in the set are ignored; a worker named
    /// twice holds its last count. One hash lookup per worker named, nothing
    /// per worker of the pool (unless more than an eighth of the set is
    /// named: then it also keeps the dense form the cost mode's SIMD pass
    /// reads).
    pub fn rebuild_sparse<'w, W: Clone + Eq + Hash + Send + Sync + 'w>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (&'w W, u32)>,
    ) {
        self.rebuild_sparse_raw(&pool.raw, needed, held)
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
        self.rebuild_sparse_ranked_raw(&pool.raw, needed, held)
    }

    /// Refills with the workers that hold some keys, named by their
    /// [`WorkerToken`]s; every other worker holds none. Tokens of workers no
    /// longer in the set, or of another pool, count for nothing; a worker
    /// named twice holds its last count. Nothing is looked up: the time is a
    /// few instructions per token, whatever the pool's size.
    pub fn rebuild_tokens<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        needed: u32,
        held: impl IntoIterator<Item = (WorkerToken, u32)>,
    ) {
        self.rebuild_tokens_raw(&pool.raw, needed, held)
    }
}

impl Eligibility {
    /// Whether the mask was built from `pool`'s current set: `false` once a
    /// worker joined, left or changed attributes since (the mask still works,
    /// see above), or when it was built for another pool or never built.
    ///
    /// ```
    /// use workerpick::Pool;
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let mut mask = pool.eligibility(|w| *w == "a");
    /// assert!(mask.is_current_for(&pool));
    /// pool.insert("c").unwrap();
    /// assert!(!mask.is_current_for(&pool));
    /// mask.rebuild(&pool, |w| *w != "b");
    /// assert!(mask.is_current_for(&pool));
    /// assert_eq!(mask.len(), 2);
    /// ```
    pub fn is_current_for<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> bool {
        self.is_current_for_raw(&pool.raw)
    }

    /// Refills this mask from `pool`'s current set, reusing its buffers.
    pub fn rebuild<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        admit: impl FnMut(&W) -> bool,
    ) {
        self.rebuild_raw(&pool.raw, admit)
    }
}
