//! Which worker owns each slot, which of its data-parallel ranks the slot is,
//! and the pins of uncharged reservations: kept
//! in chunks allocated as the set grows, published with a Release store that
//! readers Acquire, and never moved or freed while the pool lives.

use super::counters::unreachable_slot;
use crate::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use crate::sync::{KEY_CHUNK as CHUNK, UnsafeCell};
use core::ptr::{self, NonNull};

/// Keys, ranks and pins for one chunk of slots.
struct KeyChunk<W> {
    keys: Box<[UnsafeCell<Option<W>>]>,
    /// The rank of the slot within its worker (0 for a worker without ranks).
    /// Atomic only so that it needs no `unsafe`: it is written, like the
    /// key, before any reader can reach the slot, and read with Relaxed.
    ranks: Box<[AtomicU32]>,
    pins: Box<[AtomicU32]>,
}

/// The generic half: which worker owns each slot.
pub(crate) struct Keys<W> {
    chunks: Box<[AtomicPtr<KeyChunk<W>>]>,
}

impl<W> Keys<W> {
    pub(super) fn new(max: usize) -> Self {
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

    /// Allocates chunk `i` if it is not yet. Writers only.
    pub(super) fn grow(&self, i: usize) {
        if self.chunks[i].load(Ordering::Acquire).is_null() {
            let chunk = Box::new(KeyChunk {
                keys: (0..CHUNK).map(|_| UnsafeCell::new(None)).collect(),
                ranks: (0..CHUNK).map(|_| AtomicU32::new(0)).collect(),
                pins: (0..CHUNK).map(|_| AtomicU32::new(0)).collect(),
            });
            // Release pairs with the Acquire load in `chunk`.
            self.chunks[i].store(Box::into_raw(chunk), Ordering::Release);
        }
    }

    /// Where the key of the worker that owns `slot` lives.
    ///
    /// # Safety
    /// The caller must hold something that keeps `slot` from being reassigned:
    /// a snapshot in which `slot` is a member, or a live reservation on it
    /// (a charged one keeps the counter above zero, an uncharged one a pin).
    /// Either one happens-after the writer's `set` through the snapshot's
    /// publication, and blocks the next `set` until it is gone.
    #[inline(always)]
    pub(crate) unsafe fn ptr(&self, slot: u32) -> KeyPtr<W> {
        let cell = &self.chunk(slot).keys[slot as usize % CHUNK];
        // SAFETY: per this function's contract no writer touches the cell while
        // the caller holds the slot, and the cell was set before the slot was
        // published.
        cell.with(|p| match unsafe { &*p } {
            Some(w) => KeyPtr(NonNull::from(w)),
            None => unreachable_slot(),
        })
    }

    /// Assigns `slot` to rank `rank` of `key` (or clears it).
    ///
    /// # Safety
    /// Writers only, serialised, and only while no reader can reach `slot`:
    /// it is fresh, or `membership::Writer::reclaim` has shown that no snapshot naming it
    /// is alive and that its counter and pins are zero.
    pub(crate) unsafe fn set(&self, slot: u32, key: Option<W>, rank: u32) {
        let chunk = self.chunk(slot);
        let cell = &chunk.keys[slot as usize % CHUNK];
        // SAFETY: per this function's contract nothing else accesses the cell.
        cell.with_mut(|p| unsafe { *p = key });
        // Relaxed: published with the key, by the snapshot that first names
        // the slot (see `ptr`).
        chunk.ranks[slot as usize % CHUNK].store(rank, Ordering::Relaxed);
    }

    /// The rank within its worker of the slot. The caller holds something
    /// that keeps `slot` from being reassigned, as for [`ptr`](Self::ptr);
    /// without it the answer may be a later owner's (never undefined).
    #[inline]
    pub(crate) fn rank(&self, slot: u32) -> u32 {
        // Relaxed: the holder of the slot happens-after the writer's `set`
        // (through the snapshot's publication), as for the key.
        self.chunk(slot).ranks[slot as usize % CHUNK].load(Ordering::Relaxed)
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

/// Where a slot's key lives: a `&W` into the key table without its borrow, so
/// that a reservation reads its worker back with one load.
pub(crate) struct KeyPtr<W>(NonNull<W>);

impl<W> Clone for KeyPtr<W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W> Copy for KeyPtr<W> {}

impl<W> KeyPtr<W> {
    /// The key.
    ///
    /// # Safety
    /// The key table this came from must be alive (its pool borrowed or kept
    /// alive by the caller), and a booking on the slot must keep it from being
    /// reassigned for as long as the returned borrow lives.
    #[inline(always)]
    pub(crate) unsafe fn get(&self) -> &W {
        // SAFETY: per this function's contract the cell is alive and holds
        // this key, and no writer touches it meanwhile.
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `KeyPtr` stands for a `&W` (it is only read, through `get`), which
// may cross or be shared between threads exactly when `W: Sync`.
unsafe impl<W: Sync> Send for KeyPtr<W> {}
// SAFETY: as above.
unsafe impl<W: Sync> Sync for KeyPtr<W> {}
