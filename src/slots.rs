//! Storage that outlives every reservation: per-slot in-flight counters, the
//! worker key that owns each slot, and a pin count for uncharged guards.
//!
//! The counters are one contiguous array sized for the pool's worker limit,
//! allocated zeroed up front (untouched pages cost no memory on Linux) and
//! never moved or freed while the pool lives. Growing the set therefore never
//! moves a counter and cannot lose a decrement (the growth hazard of
//! [`docs::design`](crate::docs::design)), reservations reach their counter with one index, and the least-loaded scan
//! reads one packed slice. Keys are kept in chunks allocated as the set grows.
//! Slots are *reused*, never freed; when a slot may be reused is decided by the
//! writer (see `writer::reclaim`).

use crate::snapshot::padded;
use crate::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use crate::sync::{AtomicArray, KEY_CHUNK as CHUNK, UnsafeCell};
use core::ptr;

/// The default limit on worker slots in one pool: live workers plus removed
/// workers whose reservations are still alive. [`Pool::with_max_workers`]
/// sets another.
///
/// [`Pool::with_max_workers`]: crate::Pool::with_max_workers
pub const DEFAULT_MAX_WORKERS: usize = 1 << 16;

/// The largest limit a pool accepts.
pub const MAX_WORKERS_LIMIT: usize = 1 << 26;

/// The in-flight counters: one packed, cache-line-aligned array.
pub(crate) struct Counters {
    cells: AtomicArray,
}

impl Counters {
    /// Counters for slots `0..len`, all zero.
    pub(crate) fn new(len: usize) -> Self {
        Self {
            cells: AtomicArray::new(len),
        }
    }

    /// The counters of slots `0..end` (or fewer, if `end` exceeds the array).
    #[inline(always)]
    pub(crate) fn slice(&self, end: usize) -> &[AtomicU32] {
        let cells = self.cells.as_slice();
        &cells[..end.min(cells.len())]
    }

    /// The counter of `slot`. Every slot reachable from a snapshot is in range.
    #[inline(always)]
    pub(crate) fn get(&self, slot: u32) -> &AtomicU32 {
        match self.cells.as_slice().get(slot as usize) {
            Some(counter) => counter,
            None => unreachable_slot(),
        }
    }
}

#[cold]
#[inline(never)]
fn unreachable_slot() -> ! {
    // Only reachable through a bug in this crate: every slot handed to a reader
    // comes from a snapshot published after its storage existed.
    panic!("workerpick: slot outside allocated storage (internal bug)")
}

/// Keys and pins for one chunk of slots.
struct KeyChunk<W> {
    keys: Box<[UnsafeCell<Option<W>>]>,
    pins: Box<[AtomicU32]>,
}

/// The generic half: which worker owns each slot.
pub(crate) struct Keys<W> {
    chunks: Box<[AtomicPtr<KeyChunk<W>>]>,
}

impl<W> Keys<W> {
    fn new(max: usize) -> Self {
        Self {
            chunks: (0..max.div_ceil(CHUNK))
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
        }
    }

    #[inline(always)]
    fn chunk(&self, slot: u32) -> &KeyChunk<W> {
        let slot = slot as usize;
        // Acquire pairs with the Release store in `grow`.
        let p = match self.chunks.get(slot / CHUNK) {
            Some(entry) => entry.load(Ordering::Acquire),
            None => unreachable_slot(),
        };
        // SAFETY: a non-null entry was made by `Box::into_raw` in `grow` and
        // is freed only when `self` drops; the Acquire above makes the chunk's
        // initialisation visible. A null entry answers `None`.
        match unsafe { p.as_ref() } {
            Some(c) => c,
            None => unreachable_slot(),
        }
    }

    fn grow(&self, i: usize) {
        if self.chunks[i].load(Ordering::Acquire).is_null() {
            let chunk = Box::new(KeyChunk {
                keys: (0..CHUNK).map(|_| UnsafeCell::new(None)).collect(),
                pins: (0..CHUNK).map(|_| AtomicU32::new(0)).collect(),
            });
            // Release pairs with the Acquire load in `chunk`.
            self.chunks[i].store(Box::into_raw(chunk), Ordering::Release);
        }
    }

    /// The worker that owns `slot`.
    ///
    /// # Safety
    /// The caller must hold something that keeps `slot` from being reassigned:
    /// a snapshot in which `slot` is a member, or a live reservation on it
    /// (a charged one keeps the counter above zero, an uncharged one a pin).
    /// Either one happens-after the writer's `set` through the snapshot's
    /// publication, and blocks the next `set` until it is gone.
    #[inline(always)]
    pub(crate) unsafe fn get(&self, slot: u32) -> &W {
        let cell = &self.chunk(slot).keys[slot as usize % CHUNK];
        // SAFETY: per this function's contract no writer touches the cell while
        // the returned reference lives, and the cell was set before the slot was
        // published.
        cell.with(|p| match unsafe { &*p } {
            Some(w) => w,
            None => unreachable_slot(),
        })
    }

    /// Assigns `slot` to `key` (or clears it).
    ///
    /// # Safety
    /// Writers only, serialised, and only while no reader can reach `slot`:
    /// it is fresh, or `writer::reclaim` has shown that no snapshot naming it
    /// is alive and that its counter and pins are zero.
    pub(crate) unsafe fn set(&self, slot: u32, key: Option<W>) {
        let cell = &self.chunk(slot).keys[slot as usize % CHUNK];
        // SAFETY: per this function's contract nothing else accesses the cell.
        cell.with_mut(|p| unsafe { *p = key });
    }

    /// The pin count of `slot`: uncharged reservations that name it.
    #[inline(always)]
    pub(crate) fn pins(&self, slot: u32) -> &AtomicU32 {
        &self.chunk(slot).pins[slot as usize % CHUNK]
    }
}

impl<W> Drop for Keys<W> {
    fn drop(&mut self) {
        for entry in self.chunks.iter() {
            let p = entry.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: allocated by `Box::into_raw` in `grow`; `&mut self`
                // means no reference into it is alive.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

// SAFETY: the key cells are written only under the contract of `Keys::set`,
// which excludes every concurrent reader; shared access hands out `&W`, so `W`
// must be `Sync`, and keys are moved in and dropped by writer threads, so `W`
// must be `Send`.
unsafe impl<W: Send + Sync> Sync for Keys<W> {}
// SAFETY: as above; the table owns its `W`s.
unsafe impl<W: Send + Sync> Send for Keys<W> {}

/// Counter and key storage for a pool.
pub(crate) struct Slots<W> {
    pub(crate) counters: Counters,
    pub(crate) keys: Keys<W>,
    max: usize,
}

impl<W> Slots<W> {
    /// Storage for up to `max` slots (`1..=MAX_WORKERS_LIMIT`, checked by the pool).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            counters: Counters::new(padded(max)),
            keys: Keys::new(max),
            max,
        }
    }

    /// The most slots this storage holds.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Allocates key storage up to (not including) slot `end`. Writers only.
    pub(crate) fn ensure(&self, end: usize) {
        for i in 0..end.div_ceil(CHUNK) {
            self.keys.grow(i);
        }
    }
}
