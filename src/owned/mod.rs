//! Owned forms of the handle and the reservation, for pools shared as
//! `Arc<Pool<W>>`: they are `'static` and move into spawned tasks.
//!
//! The pool's `Arc` is cloned once per [`OwnedHandle`](crate::OwnedHandle), into an *anchor* that
//! only that handle and its reservations share. A reservation clones the
//! anchor, not the pool's `Arc`: the reference count it writes is its own
//! handle's, so handles on different threads never write the same count. A
//! reservation dropped on another thread than its handle's moves that one
//! cache line once.

pub(crate) mod handle;
pub(crate) mod reservation;

use crate::pool::Pool;
use crate::raw::RawPool;
use crate::rng::Rng;
use crate::snapshot::Snapshot;
use crate::sync::{Published, Source};
use core::hash::Hash;
use handle::OwnedHandle;
use std::sync::Arc;

/// One handle's reference to the shared pool (see the module docs).
pub(crate) struct Anchor<W> {
    pub(crate) pool: Arc<Pool<W>>,
}

impl<W> Anchor<W> {
    #[inline(always)]
    pub(crate) fn raw(&self) -> &RawPool<W> {
        &self.pool.raw
    }
}

impl<W> Source for Arc<Anchor<W>> {
    type Value = Snapshot<W>;
    #[inline(always)]
    fn published(&self) -> &Published<Snapshot<W>> {
        self.pool.raw.published()
    }
}

/// # Owned handles
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// An [`OwnedHandle`] on this shared pool, with its own random source.
    pub fn owned_handle(self: &Arc<Self>) -> OwnedHandle<W> {
        self.owned_handle_with_rng(Rng::new())
    }

    /// An [`OwnedHandle`] drawing from `rng`.
    pub fn owned_handle_with_rng(self: &Arc<Self>, rng: Rng) -> OwnedHandle<W> {
        OwnedHandle::new(self, rng)
    }
}
