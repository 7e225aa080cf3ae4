//! Storage that outlives every reservation: per-slot in-flight counters, the
//! worker key that owns each slot, and a pin count for uncharged guards.
//!
//! Storage is a table of fixed-size chunks that are allocated on growth and
//! never moved or freed while the pool lives. Growing therefore cannot lose a
//! decrement: a reservation's counter reference stays valid for as long as the
//! pool is borrowed (DESIGN §2, second hazard). Slots are *reused*, never freed;
//! when a slot may be reused is decided by the writer (see `pool::reclaim`).

use crate::sync::UnsafeCell;
use crate::sync::atomic::{AtomicU32, Ordering};
use core::ptr;

#[cfg(loom)]
use loom::sync::atomic::AtomicPtr;
#[cfg(not(loom))]
use std::sync::atomic::AtomicPtr;

/// Slots per chunk. A multiple of the widest SIMD block (16 lanes).
#[cfg(not(loom))]
pub(crate) const CHUNK: usize = 1024;
#[cfg(loom)]
pub(crate) const CHUNK: usize = 4;

/// The most worker slots one pool holds: live workers plus removed workers
/// whose reservations are still alive.
#[cfg(not(loom))]
pub const MAX_WORKERS: usize = 1 << 20;
#[cfg(loom)]
pub const MAX_WORKERS: usize = 4 * CHUNK;

const MAX_CHUNKS: usize = MAX_WORKERS / CHUNK;

/// One chunk of in-flight counters, cache-line aligned so SIMD loads are too.
#[repr(C, align(64))]
pub(crate) struct CounterChunk(pub(crate) [AtomicU32; CHUNK]);

/// The non-generic half: in-flight counters, read by selectors and the scan.
pub(crate) struct Counters {
    chunks: Box<[AtomicPtr<CounterChunk>]>,
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

fn null_table<T>() -> Box<[AtomicPtr<T>]> {
    (0..MAX_CHUNKS).map(|_| AtomicPtr::new(ptr::null_mut())).collect()
}

impl Counters {
    pub(crate) fn new() -> Self {
        Self { chunks: null_table() }
    }

    /// The chunk holding slots `i * CHUNK ..`, if allocated.
    #[inline(always)]
    pub(crate) fn chunk(&self, i: usize) -> Option<&CounterChunk> {
        // Acquire pairs with the Release store in `grow`: the chunk's zeroed
        // contents are visible before its address is.
        let p = self.chunks.get(i)?.load(Ordering::Acquire);
        // SAFETY: a non-null entry points to a chunk leaked by `grow` and freed
        // only in `drop`, which needs `&mut self`.
        unsafe { p.as_ref() }
    }

    /// The counter of `slot`. `slot` must be below the allocated capacity,
    /// which holds for every slot reachable from a published snapshot.
    #[inline(always)]
    pub(crate) fn get(&self, slot: u32) -> &AtomicU32 {
        let slot = slot as usize;
        match self.chunk(slot / CHUNK) {
            Some(c) => &c.0[slot % CHUNK],
            None => unreachable_slot(),
        }
    }

    /// Makes sure chunk `i` exists. Writers only (serialised by the pool).
    fn grow(&self, i: usize) {
        if self.chunks[i].load(Ordering::Acquire).is_null() {
            let chunk = Box::new(CounterChunk(core::array::from_fn(|_| AtomicU32::new(0))));
            // Release pairs with the Acquire load in `chunk`.
            self.chunks[i].store(Box::into_raw(chunk), Ordering::Release);
        }
    }
}

#[cold]
#[inline(never)]
fn unreachable_slot() -> ! {
    // Only reachable through a bug in this crate: every slot handed to a reader
    // comes from a snapshot published after its chunk was allocated.
    panic!("workerpick: slot outside allocated storage (internal bug)")
}

impl Drop for Counters {
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

impl<W> Keys<W> {
    pub(crate) fn new() -> Self {
        Self { chunks: null_table() }
    }

    #[inline(always)]
    fn chunk(&self, slot: u32) -> &KeyChunk<W> {
        let slot = slot as usize;
        // Acquire pairs with the Release store in `grow`.
        let p = self.chunks[slot / CHUNK].load(Ordering::Acquire);
        // SAFETY: as in `Counters::chunk`; callers only pass allocated slots.
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
    /// it is fresh, or `pool::reclaim` has shown that no snapshot naming it is
    /// alive and that its counter and pins are zero.
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
}

impl<W> Slots<W> {
    pub(crate) fn new() -> Self {
        Self {
            counters: Counters::new(),
            keys: Keys::new(),
        }
    }

    /// Allocates storage up to (not including) slot `end`. Writers only.
    pub(crate) fn ensure(&self, end: usize) {
        for i in 0..end.div_ceil(CHUNK) {
            self.counters.grow(i);
            self.keys.grow(i);
        }
    }
}
