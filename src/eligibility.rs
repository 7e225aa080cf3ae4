use crate::Pool;
use crate::snapshot::Snapshot;
use std::hash::Hash;

/// The pool id of a mask never built; pool ids start at 1.
pub(crate) const UNBUILT: u64 = 0;

/// A per-request candidate filter: the workers a request may go to.
///
/// Build it once from the pool (`Pool::eligibility`) and reuse it for as many
/// requests as you like; applying it allocates nothing. It names worker
/// identities: after the set changes, workers that left drop out of it, and
/// workers that joined are not in it until you [`rebuild`](Self::rebuild)
/// (a mask older than the set is applied on a slower scalar path).
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
#[derive(Clone, Debug, Default)]
pub struct Eligibility {
    /// The pool it was built for; `UNBUILT` until then.
    pub(crate) pool: u64,
    pub(crate) epoch: u64,
    /// Eligible slots, in set order.
    pub(crate) slots: Vec<u32>,
    /// The identity generation of each eligible slot.
    pub(crate) gens: Vec<u32>,
    /// Per slot, padded like the snapshot: `0` when eligible, else `u32::MAX`.
    pub(crate) excluded: Vec<u32>,
}

impl Eligibility {
    /// A mask that admits nothing until rebuilt.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many workers the mask admitted when it was built.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the mask admitted no worker when it was built.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
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
        self.epoch = view.epoch;
        self.slots.clear();
        self.gens.clear();
        self.excluded.clear();
        self.excluded.resize(view.scan_len(), u32::MAX);
        for &slot in view.members.iter() {
            if admit(snap.key(slot)) {
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
