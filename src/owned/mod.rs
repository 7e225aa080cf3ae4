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
use crate::snapshot::Snapshot;
use crate::sync::{Published, Source};
use std::sync::Arc;

/// One handle's reference to the shared pool (see the module docs).
pub(crate) struct Anchor<W> {
    pub(crate) pool: Arc<Pool<W>>,
}

impl<W> Source for Arc<Anchor<W>> {
    type Value = Snapshot<W>;
    #[inline(always)]
    fn published(&self) -> &Published<Snapshot<W>> {
        self.pool.published()
    }
}
