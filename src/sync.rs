//! The one place the crate takes its synchronisation primitives from, and the
//! only place that says `cfg(loom)`.
//!
//! Under `--cfg loom` every atomic, `Arc`, `Mutex` and `UnsafeCell` is loom's, and
//! the `arc-swap` cell that publishes worker-set snapshots is replaced by a small
//! honest model (a loom `Mutex<Arc<T>>`): arc-swap is not loom-aware, and a
//! hand-made pointer stand-in would report races production does not have.
//! Loom builds also get tiny storage sizes (models explore every interleaving,
//! so they must stay small), an ordinary allocation for the counter array
//! (loom's atomics are not valid when zeroed), and a fixed random seed.

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

pub(crate) mod atomic {
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
}

pub(crate) use crossbeam_utils::CachePadded;

/// Parking for the admission queue's blocking waiters: std's, or loom's (which
/// has no timed park; no model waits on a deadline).
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::{Thread, current, park, park_timeout};

    #[cfg(loom)]
    pub(crate) use loom::thread::{Thread, current, park};

    /// Loom model of a timed park: an untimed one.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_: std::time::Duration) {
        park();
    }
}

/// One turn of a reader's wait for a writer (under loom, a yield, so the
/// model lets the writer run).
#[inline(always)]
pub(crate) fn spin() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Locks a writer mutex, recovering from poisoning: a writer runs all of the
/// key type's code before it changes anything (see `membership`), so a panic
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

        /// Publishes `value`. When this returns, no new `load` sees the old value.
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

/// Slots per chunk of worker keys.
pub(crate) const KEY_CHUNK: usize = if cfg!(loom) { 2 } else { 1024 };

/// Lanes the scan's exclusion array is padded to: a whole AVX-512 block of
/// `u32` (loom builds scan with the scalar kernel only).
pub(crate) const LANE_PAD: usize = if cfg!(loom) { 4 } else { 16 };

/// The slot limit `Pool::new` uses under loom, where a pool's storage must
/// stay a handful of slots; `None` in real builds, which take the public
/// `DEFAULT_MAX_WORKERS`.
pub(crate) const MODEL_MAX_WORKERS: Option<usize> = if cfg!(loom) { Some(8) } else { None };

/// A seed for a fresh random generator: from the thread-local source, or a
/// fixed one under loom so that every explored interleaving draws alike.
pub(crate) fn random_seed() -> u64 {
    if cfg!(loom) { 0x5eed } else { fastrand::u64(..) }
}

#[cfg(not(loom))]
mod atomic_array {
    use super::atomic::AtomicU32;
    use core::ptr::NonNull;
    use std::alloc::{self, Layout};

    /// `len` atomics, zero, in one cache-line-aligned allocation that never
    /// moves. Allocated zeroed: untouched pages cost no memory on Linux, so a
    /// pool can reserve counters for its whole worker limit up front.
    pub(crate) struct AtomicArray {
        base: NonNull<AtomicU32>,
        len: usize,
    }

    fn layout(len: usize) -> Layout {
        match Layout::array::<AtomicU32>(len).and_then(|l| l.align_to(64)) {
            Ok(layout) => layout,
            Err(_) => unreachable!("workerpick: counter array size is bounded by MAX_WORKERS_LIMIT"),
        }
    }

    impl AtomicArray {
        /// `len.max(1)` zeroed atomics.
        pub(crate) fn new(len: usize) -> Self {
            let len = len.max(1);
            let layout = layout(len);
            // SAFETY: `layout` has a non-zero size (`len >= 1`). Not safe code
            // (a `Box<[AtomicU32]>` built from an iterator): that writes every
            // counter of an array sized for the pool's worker limit, where a
            // zeroed allocation takes untouched zero pages; and a boxed slice's
            // every use makes a reference to the whole array (see `prefix`).
            let raw = unsafe { alloc::alloc_zeroed(layout) };
            let Some(base) = NonNull::new(raw.cast::<AtomicU32>()) else {
                alloc::handle_alloc_error(layout)
            };
            // Zeroed memory is a valid `AtomicU32` array of zeros.
            Self { base, len }
        }

        /// The first `end` atomics (all of them if `end` exceeds the array).
        ///
        /// Only the range asked for is made a reference, never the whole
        /// array: a pool's array is sized for its worker limit, and under Miri
        /// every reference costs time in proportion to the memory it covers.
        #[inline(always)]
        pub(crate) fn prefix(&self, end: usize) -> &[AtomicU32] {
            // SAFETY: `base` points to `len` initialised atomics, allocated in
            // `new` and freed only in `drop`, so they outlive `&self`; the
            // range is clamped to `len`.
            unsafe { core::slice::from_raw_parts(self.base.as_ptr(), end.min(self.len)) }
        }

        /// The atomic at `i`, if in range.
        #[inline(always)]
        pub(crate) fn get(&self, i: usize) -> Option<&AtomicU32> {
            // SAFETY: `i < len`, and the atomics outlive `&self` (see `prefix`).
            (i < self.len).then(|| unsafe { &*self.base.as_ptr().add(i) })
        }
    }

    impl Drop for AtomicArray {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout; `&mut self` means no
            // reference into it is alive.
            unsafe { alloc::dealloc(self.base.as_ptr().cast(), layout(self.len)) }
        }
    }

    // SAFETY: the array holds only atomics, owned by `AtomicArray`. Needed
    // because the base is a raw pointer (see `new`), which is neither.
    unsafe impl Send for AtomicArray {}
    // SAFETY: shared access only hands out `&AtomicU32`.
    unsafe impl Sync for AtomicArray {}
}

#[cfg(loom)]
mod atomic_array {
    use super::atomic::AtomicU32;

    /// Loom model of the zeroed counter array: loom's atomics carry state, so
    /// they are built one by one.
    pub(crate) struct AtomicArray(Box<[AtomicU32]>);

    impl AtomicArray {
        pub(crate) fn new(len: usize) -> Self {
            Self((0..len.max(1)).map(|_| AtomicU32::new(0)).collect())
        }

        pub(crate) fn prefix(&self, end: usize) -> &[AtomicU32] {
            &self.0[..end.min(self.0.len())]
        }

        pub(crate) fn get(&self, i: usize) -> Option<&AtomicU32> {
            self.0.get(i)
        }
    }
}

pub(crate) use atomic_array::AtomicArray;
