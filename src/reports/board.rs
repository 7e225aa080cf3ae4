//! What picks read (the [`Board`]), and the pool's reported-load state around it.

use super::state::Reports;
use crate::storage::counters::Counters;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use crate::sync::{Mutex, lock};
use std::time::{Duration, Instant};

/// The age limit of a pool that was not given another.
pub const DEFAULT_REPORT_MAX_AGE: Duration = Duration::from_secs(5);

/// What picks read: the reported load of every slot, and whether any is not zero.
pub(crate) struct Board {
    cells: Counters,
    on: AtomicU32,
}

impl Board {
    /// Stores `value` as `slot`'s reported load; returns the value before.
    pub(super) fn swap(&self, slot: u32, value: u32) -> u32 {
        self.cells.get(slot).swap(value, Relaxed)
    }

    pub(super) fn set_on(&self, on: bool) {
        if (self.on.load(Relaxed) != 0) != on {
            self.on.store(u32::from(on), Relaxed);
        }
    }

    /// The reported load of `slot`.
    #[inline(always)]
    pub(crate) fn get(&self, slot: u32) -> u32 {
        self.cells.get(slot).load(Relaxed)
    }

    /// The cells of slots `0..end`, for the scan.
    #[inline(always)]
    pub(crate) fn slice(&self, end: usize) -> &[AtomicU32] {
        self.cells.slice(end)
    }
}

/// A pool's reported load: the board picks read, and the bookkeeping behind it.
pub(crate) struct Reported {
    pub(super) board: Board,
    pub(super) state: Mutex<Reports>,
    /// When some source ages out, in nanoseconds after `epoch` (`u64::MAX`: never).
    due: AtomicU64,
    epoch: Instant,
    /// This pool's name in its summaries.
    pub(super) origin: u64,
    /// The number of the last summary made.
    pub(super) seq: AtomicU64,
    /// Set (for good) before the first report is resolved to a slot: until then
    /// a membership change has nothing to drop, and skips the report lock.
    pub(super) used: AtomicU32,
}

impl Reported {
    /// Reported load for `len` slots (the length of the counters), none yet.
    pub(crate) fn new(len: usize, pool_id: u64) -> Self {
        Self {
            board: Board {
                cells: Counters::new(len),
                on: AtomicU32::new(0),
            },
            state: Mutex::new(Reports::new(DEFAULT_REPORT_MAX_AGE)),
            due: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
            // Random across processes, distinct within one (and under loom).
            origin: crate::sync::random_seed() ^ pool_id.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            seq: AtomicU64::new(0),
            used: AtomicU32::new(0),
        }
    }

    /// The board, if any slot has reported load.
    #[inline(always)]
    pub(crate) fn active(&self) -> Option<&Board> {
        (self.board.on.load(Relaxed) != 0).then_some(&self.board)
    }

    /// Called by picks that read reported load: once in 1024 calls per thread,
    /// checks whether a source has aged out.
    #[inline(always)]
    pub(crate) fn tick(&self) {
        if now_and_then() {
            self.expire_if_due();
        }
    }

    /// Drops aged sources if one is due and no writer holds the reports.
    #[cold]
    #[inline(never)]
    fn expire_if_due(&self) {
        if self.nanos(Instant::now()) < self.due.load(Relaxed) {
            return;
        }
        // A poisoned lock is left to the writers, which recover it.
        if let Ok(mut state) = self.state.try_lock() {
            state.expire(&self.board, Instant::now());
            self.store_due(&state);
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    pub(super) fn store_due(&self, state: &Reports) {
        self.due
            .store(state.due().map_or(u64::MAX, |at| self.nanos(at)), Relaxed);
    }

    /// Runs `f` on the bookkeeping under the report lock, then drops aged sources.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Reports, &Board, Instant) -> R) -> R {
        // SeqCst, before `f` loads the snapshot, against the membership writer's
        // publish then load of `used` (see `Pool::forget_departed`): either the
        // writer sees it set, or `f` sees the writer's new snapshot.
        self.used.store(1, SeqCst);
        let mut state = lock(&self.state);
        let now = Instant::now();
        let out = f(&mut state, &self.board, now);
        state.expire(&self.board, now);
        self.store_due(&state);
        out
    }
}

/// True once in 1024 calls on each thread (always under loom, where a model's
/// few picks must reach the check).
#[inline(always)]
fn now_and_then() -> bool {
    #[cfg(not(loom))]
    {
        std::thread_local!(static CALLS: core::cell::Cell<u32> = const { core::cell::Cell::new(0) });
        CALLS.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n % 1024 == 0
        })
    }
    #[cfg(loom)]
    {
        true
    }
}
