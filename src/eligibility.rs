use crate::pool::Pool;
use crate::snapshot::Snapshot;
use std::hash::Hash;

/// The pool id of a mask never built; pool ids start at 1.
pub(crate) const UNBUILT: u64 = 0;

fn next_mask_id() -> u64 {
    // A process-wide counter (never loom's: it only names mask builds).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A per-request candidate filter: the workers a request may go to. A
/// worker's answer is every one of its data-parallel ranks'.
///
/// Build it once from the pool (`Pool::eligibility`) and reuse it for as many
/// requests as you like; applying it allocates nothing. It names worker
/// identities: after the set changes, workers that left drop out of it, and
/// workers that joined are not in it until you [`rebuild`](Self::rebuild)
/// ([`is_current_for`](Self::is_current_for) says whether the set changed).
///
/// A mask older than the set costs about what a fresh one does. While no
/// worker has left since it was built, it is used as it is. After a worker
/// left, the first pick that applies it to the new set translates it once
/// (one allocation, the size of the mask) and caches the translation with
/// that set, for up to 32 masks per set; a further stale mask is filtered on
/// every pick, a slower path.
///
/// ```
/// use workerpick::{Pool, Random, Request};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let only_b = pool.eligibility(|w| *w == "b");
/// let req = Request::new().eligible(&only_b);
/// for _ in 0..10 {
///     assert_eq!(pool.select_with(&Random::new(), &req).unwrap(), "b");
/// }
/// ```
#[derive(Debug, Default)]
pub struct Eligibility {
    /// The pool it was built for; `UNBUILT` until then.
    pub(crate) pool: u64,
    /// Names this build of the mask (unique in the process), so a set can
    /// cache its translation.
    pub(crate) id: u64,
    pub(crate) epoch: u64,
    /// Eligible slots, in set order.
    pub(crate) slots: Vec<u32>,
    /// The identity generation of each eligible slot.
    pub(crate) gens: Vec<u32>,
    /// Per slot, padded like the snapshot: `0` when eligible, else `u32::MAX`.
    pub(crate) excluded: Vec<u32>,
}

impl Clone for Eligibility {
    fn clone(&self) -> Self {
        let mut mask = Self::new();
        mask.clone_from(self);
        mask
    }

    /// Copies `from` into this mask's buffers: no allocation once they are
    /// as large as its (a queued request's copy, refilled per request).
    fn clone_from(&mut self, from: &Self) {
        (self.pool, self.id, self.epoch) = (from.pool, from.id, from.epoch);
        self.slots.clone_from(&from.slots);
        self.gens.clone_from(&from.gens);
        self.excluded.clone_from(&from.excluded);
    }
}

impl Eligibility {
    /// A mask that admits nothing until rebuilt.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many candidates the mask admitted when it was built (a worker
    /// with ranks counts once per rank).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the mask admitted no worker when it was built.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

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
        self.pool == pool.id() && self.epoch == pool.snapshot().view.epoch
    }

    /// Refills this mask from `pool`'s current set, reusing its buffers.
    pub fn rebuild<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        mut admit: impl FnMut(&W) -> bool,
    ) {
        let snap = pool.snapshot();
        self.fill(pool, &snap, &mut admit);
    }

    fn fill<W: Clone + Eq + Hash + Send + Sync>(
        &mut self,
        pool: &Pool<W>,
        snap: &Snapshot<W>,
        admit: &mut impl FnMut(&W) -> bool,
    ) {
        let view = &snap.view;
        self.pool = pool.id();
        self.id = next_mask_id();
        self.epoch = view.epoch;
        self.slots.clear();
        self.gens.clear();
        self.excluded.clear();
        self.excluded.resize(view.scan_len(), u32::MAX);
        let ranked = !snap.ranked.is_empty();
        let mut admitted = false;
        for &slot in view.members.iter() {
            // Asked once per worker: its ranks (side by side, rank 0 first)
            // share the answer.
            if !ranked || pool.slots.keys.rank(slot) == 0 {
                admitted = admit(snap.key(slot));
            }
            if admitted {
                self.slots.push(slot);
                self.gens.push(view.gens[slot as usize]);
                self.excluded[slot as usize] = 0;
            }
        }
    }

    pub(crate) fn build<W: Clone + Eq + Hash + Send + Sync>(
        pool: &Pool<W>,
        snap: &Snapshot<W>,
        mut admit: impl FnMut(&W) -> bool,
    ) -> Self {
        let mut mask = Self::new();
        mask.fill(pool, snap, &mut admit);
        mask
    }
}

#[cfg(test)]
mod tests {
    use crate::candidates::ELIGIBILITY_CHECKS;
    use crate::{
        CacheHits, DeviceAware, LeastLoaded, Pool, PowerOfTwo, Random, Request, RoundRobin, Selector,
    };

    // Smaller under Miri, which interprets every step.
    const WORKERS: u32 = if cfg!(miri) { 32 } else { 1024 };
    const PICKS: u64 = if cfg!(miri) { 10 } else { 200 };

    fn checks() -> u64 {
        ELIGIBILITY_CHECKS.with(|c| c.get())
    }

    /// Picks through a mask built before `change`: the mask's entries are
    /// checked against the new set about once, not once per pick (or once per
    /// candidate per pick), and no pick leaves the mask.
    fn stale_mask_costs_one_translation(change: impl Fn(&Pool<u32>), left: &[u32]) {
        let rr = RoundRobin::new();
        let modes: [&dyn Selector; 5] = [&Random, &rr, &PowerOfTwo, &LeastLoaded, &DeviceAware::new()];
        for mode in modes {
            let pool = Pool::from_workers(0..WORKERS).unwrap();
            let even = pool.eligibility(|w| w % 2 == 0);
            let hits = CacheHits::build(&pool, 4, |w| w % 3);
            change(&pool);
            assert!(!even.is_current_for(&pool));
            let mut h = pool.handle();
            for req in [
                Request::new().eligible(&even),
                Request::new().eligible(&even).cache_hits(&hits),
            ] {
                let before = checks();
                for _ in 0..PICKS {
                    let r = h.reserve_with(mode, &req).unwrap();
                    let w = *r.worker();
                    assert!(w % 2 == 0 && !left.contains(&w), "{}: picked {w}", mode.name());
                }
                let spent = checks() - before;
                let bound = 2 * u64::from(WORKERS);
                assert!(
                    spent <= bound,
                    "{}: {spent} mask checks for {PICKS} picks (at most {bound})",
                    mode.name()
                );
            }
        }
    }

    #[test]
    fn a_mask_older_than_an_unrelated_insert_costs_no_checks() {
        stale_mask_costs_one_translation(|p| p.insert(WORKERS + 7).unwrap(), &[]);
    }

    #[test]
    fn a_mask_older_than_a_removal_is_translated_once_per_set() {
        let change = |p: &Pool<u32>| {
            p.remove(&2).unwrap();
            p.remove(&5).unwrap();
        };
        stale_mask_costs_one_translation(change, &[2, 5]);
    }

    #[test]
    fn a_translated_mask_keeps_the_identities_it_named() {
        let pool = Pool::from_workers(0..8u32).unwrap();
        let mask = pool.eligibility(|w| *w < 4);
        pool.remove(&1).unwrap();
        pool.remove(&2).unwrap();
        pool.insert(100).unwrap(); // takes a freed slot once it is reclaimed
        pool.insert(1).unwrap(); // a new identity for 1: not the one the mask named
        let req = Request::new().eligible(&mask);
        let mut h = pool.handle();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..PICKS {
            seen.insert(*h.select_with(&Random, &req).unwrap());
            seen.insert(*h.reserve_with(&LeastLoaded, &req).unwrap().worker());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 3]);
    }
}
