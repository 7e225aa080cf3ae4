//! What the layers under [`Pool`](crate::Pool) need of it: its id, the slot
//! storage, the published snapshot and its writer, reported load, the scan
//! backend and the slow-start clock. Booking, masks, credit and the modes
//! take a [`RawPool`], as hashbrown's raw table never names its map; the
//! public `Pool` wraps one and adds the API.

use crate::error::Error;
use crate::fleet::RampClock;
use crate::load::reports::Reported;
use crate::membership::Writer;
use crate::scan::Kernel;
use crate::snapshot::{Snapshot, padded};
use crate::storage::Slots;
use crate::storage::features::Features;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Guard, Mutex, Published, lock};
use core::hash::Hash;

pub(crate) struct RawPool<W> {
    pub(crate) id: u64,
    pub(crate) slots: Slots<W>,
    current: Published<Snapshot<W>>,
    pub(crate) writer: Mutex<Writer<W>>,
    pub(crate) ramp: RampClock,
    /// `ramp_step` for this key type, callable where `W`'s bounds are not
    /// in scope (the reservation path).
    pub(crate) ramp_step: fn(&RawPool<W>),
    pub(crate) backend: Kernel,
    pub(crate) reported: Reported,
    pub(crate) fallbacks: AtomicU64,
}

fn next_pool_id() -> u64 {
    // A process-wide counter (never loom's: it only names pools).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<W: Clone + Eq + Hash + Send + Sync> RawPool<W> {
    /// An empty set with storage for `max` slots and a fresh id.
    pub(crate) fn with_limit(max: usize) -> Self {
        let mut writer = Writer::new();
        let first = writer.initial();
        let id = next_pool_id();
        Self {
            id,
            slots: Slots::new(max),
            current: Published::new(first),
            writer: Mutex::new(writer),
            backend: Kernel::detect(),
            reported: Reported::new(padded(max), id),
            ramp: RampClock::new(),
            ramp_step: Self::ramp_step,
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Runs a change on the writer, then records when slow start is next due
    /// and drops what was kept for workers that left.
    pub(crate) fn write<R>(
        &self,
        change: impl FnOnce(&mut Writer<W>, &Slots<W>, &Published<Snapshot<W>>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut writer = lock(&self.writer);
        let changed = change(&mut writer, &self.slots, &self.current);
        self.set_ramp(writer.ramp_due());
        drop(writer);
        self.forget_departed();
        changed
    }

    /// Records when slow start is next due (`None`: nothing ramps). Under
    /// the writer lock.
    fn set_ramp(&self, due: Option<std::time::Instant>) {
        self.ramp.set(due);
        let features = &self.slots.counters.features;
        features.set(Features::RAMPING, due.is_some());
    }

    /// Publishes the slow-start step that is due, unless a writer holds the
    /// lock (it publishes the step itself). Reservations call it now and then.
    #[cold]
    #[inline(never)]
    pub(crate) fn ramp_step(&self) {
        if !self.ramp.is_due(std::time::Instant::now()) {
            return;
        }
        // A poisoned lock is left to the writers, which recover it.
        if let Ok(mut writer) = self.writer.try_lock() {
            writer.republish(&self.slots, &self.current);
            self.set_ramp(writer.ramp_due());
        }
    }
}

impl<W> RawPool<W> {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    #[inline(always)]
    pub(crate) fn snapshot(&self) -> Guard<Snapshot<W>> {
        self.current.load()
    }

    pub(crate) fn published(&self) -> &Published<Snapshot<W>> {
        &self.current
    }

    pub(crate) fn note_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// The load booked on `slot`: its counter, less any reported load on it.
    #[inline]
    pub(crate) fn booked_load(&self, slot: u32) -> u32 {
        self.reported.booked().of(slot, self.slots.counters.get(slot))
    }

    /// Drops reports kept for workers that left the set (called after every
    /// membership change). The snapshot is loaded under the report lock, here and
    /// wherever reports are resolved to slots: a report resolved with a snapshot
    /// from before a change was applied before this runs, and is dropped by it.
    pub(crate) fn forget_departed(&self) {
        // SeqCst, after the publish: see `Reported::with`.
        if self.reported.used.load(crate::sync::atomic::Ordering::SeqCst) == 0 {
            return;
        }
        let mut state = lock(&self.reported.state);
        let snap = self.snapshot();
        let view = &snap.view;
        state.retain_members(self.reported.cells(&self.slots.counters), |slot| {
            snap.holds(slot).then(|| view.gens[slot as usize])
        });
        // A departed worker's health mark would keep its slot from draining.
        self.reported
            .health
            .forget(&self.slots.counters, view.scan_len(), |slot| snap.holds(slot));
    }
}
