//! Affinity: whether snapshots build the consistent-hash ring.

use super::Pool;
use core::hash::Hash;

/// # Affinity
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// Makes this pool build a consistent-hash ring with each snapshot, for
    /// [`Affinity`](crate::Affinity) picks. Off by default: it costs every
    /// membership change a sort of 32 points per worker (about 400 bytes of
    /// ring per worker), which pools that never pick by affinity should not
    /// pay. Idempotent; changes to capacities, health or slow start reuse the
    /// ring.
    ///
    /// ```
    /// use workerpick::{Affinity, Pool, Request};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let _busy = pool.reserve_worker(&"a", 1).unwrap();
    /// let keyed = Request::new().key(7);
    /// // No ring yet: the least-loaded worker, whatever the key.
    /// assert_eq!(pool.select_with(&Affinity::unbounded(), &keyed).unwrap(), "b");
    /// pool.enable_affinity();
    /// assert!(pool.affinity_enabled());
    /// // Now the key's own worker (unbounded: loads do not matter).
    /// let home = pool.select_with(&Affinity::unbounded(), &keyed).unwrap();
    /// assert!((0..10).all(|_| pool.select_with(&Affinity::unbounded(), &keyed).unwrap() == home));
    /// ```
    pub fn enable_affinity(&self) {
        let _ = self.raw.write(|w, slots, current| {
            w.enable_affinity(slots, current);
            Ok(())
        });
    }

    /// Whether [`enable_affinity`](Self::enable_affinity) was called.
    pub fn affinity_enabled(&self) -> bool {
        self.raw.snapshot().view.affinity.is_some()
    }
}
