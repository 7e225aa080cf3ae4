//! The one place the crate takes its synchronisation primitives from.
//!
//! Under `--cfg loom` every atomic, `Arc`, `Mutex` and `UnsafeCell` is loom's, and
//! the `arc-swap` cell that publishes worker-set snapshots is replaced by a small
//! honest model (a loom `Mutex<Arc<T>>`): arc-swap is not loom-aware, and a
//! hand-made pointer stand-in would report races production does not have.

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

pub(crate) mod atomic {
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
}

pub(crate) use crossbeam_utils::CachePadded;

/// Locks a writer mutex, recovering from poisoning: a writer runs all of the
/// key type's code before it changes anything (see `writer`), so a panic
/// under the lock leaves the state as it was before the call.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
}

/// `UnsafeCell` with loom's closure API, so loom can check every access.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

#[cfg(not(loom))]
mod published {
    use super::Arc;
    use arc_swap::ArcSwap;

    /// An atomically replaceable `Arc<T>`: readers never block on a writer.
    pub(crate) struct Published<T>(ArcSwap<T>);

    /// What [`Published::load`] returns: keeps the loaded value alive.
    pub(crate) type Guard<T> = arc_swap::Guard<Arc<T>>;

    impl<T> Published<T> {
        pub(crate) fn new(value: Arc<T>) -> Self {
            Self(ArcSwap::new(value))
        }

        #[inline]
        pub(crate) fn load(&self) -> Guard<T> {
            self.0.load()
        }

        /// Publishes `value`. When this returns, no new `load` sees the old value,
        /// and every outstanding guard on the old value holds a real strong count
        /// (arc-swap pays its debts in `swap`), so `Arc::strong_count` is exact.
        pub(crate) fn store(&self, value: Arc<T>) {
            drop(self.0.swap(value));
        }
    }

    /// A per-thread cache of a [`Published`] value: one pointer comparison per
    /// `load` while nothing changed, a fresh load after a store.
    pub(crate) struct Cached<'a, T>(arc_swap::Cache<&'a ArcSwap<T>, Arc<T>>);

    impl<'a, T> Cached<'a, T> {
        pub(crate) fn new(src: &'a Published<T>) -> Self {
            Self(arc_swap::Cache::new(&src.0))
        }

        #[inline(always)]
        pub(crate) fn load(&mut self) -> &Arc<T> {
            self.0.load()
        }
    }

    /// Lets [`OwnedCached`] keep its source alive (an `Arc` of the pool).
    pub(crate) struct Via<P>(P);

    impl<P: super::Source> core::ops::Deref for Via<P> {
        type Target = ArcSwap<P::Value>;
        #[inline(always)]
        fn deref(&self) -> &ArcSwap<P::Value> {
            &self.0.published().0
        }
    }

    /// [`Cached`] that owns its source, so it can be `'static`.
    pub(crate) struct OwnedCached<P: super::Source>(arc_swap::Cache<Via<P>, Arc<P::Value>>);

    impl<P: super::Source> OwnedCached<P> {
        pub(crate) fn new(src: P) -> Self {
            Self(arc_swap::Cache::new(Via(src)))
        }

        #[inline(always)]
        pub(crate) fn load(&mut self) -> &Arc<P::Value> {
            self.0.load()
        }
    }
}

/// Something that keeps a [`Published`] value reachable (see [`OwnedCached`]).
pub(crate) trait Source {
    type Value;
    fn published(&self) -> &Published<Self::Value>;
}

#[cfg(loom)]
mod published {
    use super::{Arc, Mutex};

    /// Loom model of `ArcSwap<T>`: a mutex around the current `Arc`.
    pub(crate) struct Published<T>(Mutex<Arc<T>>);

    /// Loom model of `arc_swap::Guard<Arc<T>>`.
    pub(crate) struct Guard<T>(Arc<T>);

    impl<T> core::ops::Deref for Guard<T> {
        type Target = Arc<T>;
        fn deref(&self) -> &Arc<T> {
            &self.0
        }
    }

    impl<T> Published<T> {
        pub(crate) fn new(value: Arc<T>) -> Self {
            Self(Mutex::new(value))
        }

        pub(crate) fn load(&self) -> Guard<T> {
            Guard(self.0.lock().unwrap().clone())
        }

        pub(crate) fn store(&self, value: Arc<T>) {
            let old = core::mem::replace(&mut *self.0.lock().unwrap(), value);
            drop(old);
        }
    }

    /// Loom model of `arc_swap::Cache`.
    pub(crate) struct Cached<'a, T> {
        src: &'a Published<T>,
        cur: Arc<T>,
    }

    impl<'a, T> Cached<'a, T> {
        pub(crate) fn new(src: &'a Published<T>) -> Self {
            let cur = src.load().0;
            Self { src, cur }
        }

        pub(crate) fn load(&mut self) -> &Arc<T> {
            let now = self.src.0.lock().unwrap();
            if !Arc::ptr_eq(&now, &self.cur) {
                self.cur = now.clone();
            }
            drop(now);
            &self.cur
        }
    }

    /// Loom model of the owning `arc_swap::Cache`.
    pub(crate) struct OwnedCached<P: super::Source> {
        src: P,
        cur: Arc<P::Value>,
    }

    impl<P: super::Source> OwnedCached<P> {
        pub(crate) fn new(src: P) -> Self {
            let cur = src.published().load().0;
            Self { src, cur }
        }

        pub(crate) fn load(&mut self) -> &Arc<P::Value> {
            let now = self.src.published().0.lock().unwrap();
            if !Arc::ptr_eq(&now, &self.cur) {
                self.cur = now.clone();
            }
            drop(now);
            &self.cur
        }
    }
}

pub(crate) use published::{Cached, Guard, OwnedCached, Published};
