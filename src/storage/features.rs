//! Which optional signals a pool uses now, in one word that a pick reads
//! once: a pool that uses none of them tests one word and skips them all.
//! Each bit only says "look": what it names is read with its own ordering.

use crate::sync::atomic::{AtomicU32, Ordering::Relaxed, Ordering::SeqCst};

/// The pool's feature word (see the module docs).
pub(crate) struct Features(AtomicU32);

impl Features {
    /// The current snapshot has capacity tables (set before a weighted
    /// snapshot is published, cleared after an unweighted one is).
    pub(crate) const WEIGHTED: u32 = 1;
    /// Some worker is marked unhealthy.
    pub(crate) const MARKED: u32 = 1 << 1;
    /// Some counter holds reported load.
    pub(crate) const REPORTED: u32 = 1 << 2;
    /// A slow-start step will be due.
    pub(crate) const RAMPING: u32 = 1 << 3;
    /// A pick may raise the per-block bounds: set by the first pick that
    /// reads them, never cleared. Until then every bound is 0 and a release
    /// has nothing to lower.
    pub(crate) const ARMED: u32 = 1 << 4;

    pub(crate) fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// The bits now. Relaxed: see the module docs.
    #[inline(always)]
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Relaxed)
    }

    /// Sets [`ARMED`](Self::ARMED). `SeqCst`: pairs with the `SeqCst` load
    /// in [`armed`](Self::armed). It precedes every raise (the raiser, or the
    /// pick whose arming it read, armed first), so a release whose decrement
    /// a raise's second look missed follows the arming in the `SeqCst` order,
    /// and sees it.
    #[cold]
    #[inline(never)]
    pub(crate) fn arm(&self) {
        self.0.fetch_or(Self::ARMED, SeqCst);
    }

    /// Whether the bounds are armed, as a release asks it: `SeqCst`, after
    /// its `SeqCst` decrement (see [`arm`](Self::arm)).
    #[inline(always)]
    pub(crate) fn armed(&self) -> bool {
        self.0.load(SeqCst) & Self::ARMED != 0
    }

    /// Sets or clears `bit`. Writers only, each bit under the lock of what
    /// it names (the writer lock, the report lock), so that transitions of
    /// one bit never race.
    pub(crate) fn set(&self, bit: u32, on: bool) {
        if on {
            self.0.fetch_or(bit, Relaxed);
        } else {
            self.0.fetch_and(!bit, Relaxed);
        }
    }
}
