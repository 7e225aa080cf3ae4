//! A pool's reported-load state: the board, the bookkeeping behind it under its
//! lock, and the clock that ages reports out.

use super::state::Reports;
use crate::load::health::Health;
use crate::load::reported::{Board, Cells};
use crate::storage::counters::Counters;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::SeqCst};
use crate::sync::{Mutex, MutexGuard, lock};
use std::time::{Duration, Instant};

/// The age limit of a pool that was not given another.
pub const DEFAULT_REPORT_MAX_AGE: Duration = Duration::from_secs(5);

/// A pool's reported load: the board, and the bookkeeping behind it.
pub(crate) struct Reported {
    pub(crate) board: Board,
    pub(crate) state: Mutex<Reports>,
    /// When some source ages out, in nanoseconds after `epoch` (`u64::MAX`: never).
    due: AtomicU64,
    epoch: Instant,
    /// Ill health, the counters' other non-booked part (see `load::health`).
    pub(crate) health: Health,
    /// This pool's name in its summaries.
    pub(crate) origin: u64,
    /// The number of the last summary made.
    pub(crate) seq: AtomicU64,
    /// Set (for good) before the first report is resolved to a slot: until then
    /// a membership change has nothing to drop and skips the report lock, and
    /// a counter holds bookings alone.
    pub(crate) used: AtomicU32,
}

/// The bookings in each slot's counter, read with the report lock held when
/// anything was ever reported (every change to the reported part holds it), so
/// the two parts of a counter are read together.
pub(crate) struct OwnBookings<'a> {
    reported: &'a Reported,
    held: Option<MutexGuard<'a, Reports>>,
}

impl OwnBookings<'_> {
    /// The load booked in `slot`, whose counter is `counter`.
    ///
    /// Without the lock, the counter is read and then `used` again: the first
    /// report or health mark may land between this view's load of `used` and
    /// its load of the counter (loom found it: `in_flight` read a freshly
    /// marked worker's counter raw, the mark's 2^31 as load, and `drained`
    /// would have waited on it). Acquire, against the release (or SeqCst)
    /// compare-and-swap that first puts non-booked load in a counter: if this
    /// load sees it, the second load of `used` sees the flag set before it,
    /// and the counter is read again under the lock.
    pub(crate) fn of(&self, slot: u32, counter: &AtomicU32) -> u32 {
        if self.held.is_none() {
            let seen = counter.load(Acquire);
            if self.reported.used.load(SeqCst) == 0 {
                return seen;
            }
            let _held = lock(&self.reported.state);
            return self.split(slot, counter.load(Relaxed));
        }
        self.split(slot, counter.load(Relaxed))
    }

    /// The bookings in `counter`, read under the report lock.
    fn split(&self, slot: u32, counter: u32) -> u32 {
        counter
            .saturating_sub(self.reported.board.get(slot))
            .saturating_sub(self.reported.health.penalty(slot))
    }
}

impl Reported {
    /// Reported load for `len` slots (the length of the counters), none yet.
    pub(crate) fn new(len: usize, pool_id: u64) -> Self {
        Self {
            board: Board::new(len),
            health: Health::new(len),
            state: Mutex::new(Reports::new(DEFAULT_REPORT_MAX_AGE)),
            due: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
            // Random across processes, distinct within one (and under loom).
            origin: crate::sync::random_seed() ^ pool_id.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            seq: AtomicU64::new(0),
            used: AtomicU32::new(0),
        }
    }

    /// The board.
    #[inline(always)]
    pub(crate) fn board(&self) -> &Board {
        &self.board
    }

    /// When the worker in `slot` last reported its own load (under the report
    /// lock; only the admission queue's staleness rule asks).
    pub(crate) fn heard(&self, slot: u32) -> Option<Instant> {
        lock(&self.state).heard(slot)
    }

    /// A view of the bookings in the counters (see [`OwnBookings`]).
    pub(crate) fn booked(&self) -> OwnBookings<'_> {
        let held = (self.used.load(SeqCst) != 0).then(|| lock(&self.state));
        OwnBookings { reported: self, held }
    }

    /// Called by every reservation: while some load is reported, once in 1024
    /// calls per thread, checks whether a source has aged out.
    #[inline(always)]
    pub(crate) fn tick(&self, counters: &Counters) {
        if self.board.is_on() && now_and_then() {
            self.expire_if_due(counters);
        }
    }

    /// Drops aged sources if one is due and no writer holds the reports.
    #[cold]
    #[inline(never)]
    fn expire_if_due(&self, counters: &Counters) {
        if self.nanos(Instant::now()) < self.due.load(Relaxed) {
            return;
        }
        // A poisoned lock is left to the writers, which recover it.
        if let Ok(mut state) = self.state.try_lock() {
            self.expire(&mut state, counters, Instant::now());
        }
    }

    /// Drops the sources aged at `now` and republishes when the next is due;
    /// returns how many went. The caller holds the report lock (`state`).
    pub(crate) fn expire(&self, state: &mut Reports, counters: &Counters, now: Instant) -> usize {
        let dropped = state.expire(self.cells(counters), now);
        self.store_due(state);
        dropped
    }

    pub(crate) fn cells<'a>(&'a self, counters: &'a Counters) -> Cells<'a> {
        Cells {
            board: &self.board,
            counters,
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    pub(crate) fn store_due(&self, state: &Reports) {
        self.due
            .store(state.due().map_or(u64::MAX, |at| self.nanos(at)), Relaxed);
    }

    /// The report lock, for a change to the counters' non-booked part other
    /// than a report (health): marks the pool as using it first, as `with` does.
    pub(crate) fn lock_for_change(&self) -> impl Sized + '_ {
        self.used.store(1, SeqCst);
        lock(&self.state)
    }

    /// Runs `f` on the bookkeeping under the report lock, then drops aged
    /// sources and folds every changed sum into the counters.
    pub(crate) fn with<R>(
        &self,
        counters: &Counters,
        f: impl FnOnce(&mut Reports, Cells<'_>, Instant) -> R,
    ) -> R {
        // SeqCst, before `f` loads the snapshot, against the membership writer's
        // publish then load of `used` (see `Pool::forget_departed`): either the
        // writer sees it set, or `f` sees the writer's new snapshot.
        self.used.store(1, SeqCst);
        let mut state = lock(&self.state);
        let now = Instant::now();
        let cells = self.cells(counters);
        let out = f(&mut state, cells, now);
        self.expire(&mut state, counters, now);
        out
    }
}

/// True once in 1024 calls on each thread (always under loom, where a model's
/// few picks must reach the check).
#[inline(always)]
pub(crate) fn now_and_then() -> bool {
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
