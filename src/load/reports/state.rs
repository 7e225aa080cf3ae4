//! The reports' bookkeeping, kept under the pool's report lock: per slot the exact
//! sum of what every source reports and who the slot belongs to, per peer its last
//! summary, and when the oldest source ages out. Every change ends by folding the
//! sums that moved into the counters ([`Cells::fold`]).

use crate::load::reported::{Cells, MAX_REPORTED_LOAD};
use crate::storage::features::Features;
use std::time::{Duration, Instant};

/// One slot as the reports see it.
#[derive(Clone, Copy, Default)]
struct SlotState {
    /// The generation of the worker the sums belong to; `None` when nothing is kept.
    owner: Option<u32>,
    /// Names this keeping of the slot: a new one each time the slot is claimed
    /// afresh, so that a peer's entry made before a reset never subtracts from the
    /// sums made after it (even for the same worker, back in the same slot).
    tag: u64,
    /// The sum over every source (the worker's own report and each peer's), exact.
    total: u64,
    /// The worker's own report and when it came.
    direct: Option<(u32, Instant)>,
    /// When the worker last reported, a report of 0 included (the admission
    /// queue's staleness rule reads it).
    heard: Option<Instant>,
    /// The reported load counted in the slot's counter now.
    applied: u32,
    /// Whether `total` moved since it was last folded.
    dirty: bool,
}

/// One worker's load in a peer's summary, as kept: resolved to this pool's slot,
/// against the slot's tag when it was added.
#[derive(Clone, Copy)]
struct Kept {
    slot: u32,
    tag: u64,
    load: u32,
}

/// The last summary a peer sent.
struct Peer {
    seq: u64,
    at: Instant,
    entries: Vec<Kept>,
}

/// What [`Reports::apply`] did with a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// It replaced the peer's earlier report.
    Replaced,
    /// The peer already sent this one or a later one: nothing changed.
    Stale,
}

/// See the module docs.
pub(crate) struct Reports {
    pub(crate) max_age: Duration,
    slots: Vec<SlotState>,
    /// By origin. A few replicas: a list searched in order is enough.
    peers: Vec<(u64, Peer)>,
    /// Slots whose `total` moved since the last fold.
    dirty: Vec<u32>,
    /// Slots with reported load counted in their counter.
    nonzero: usize,
    /// The earliest moment some source ages out (`None`: no source can).
    due: Option<Instant>,
    /// The last tag handed out.
    tags: u64,
}

impl Reports {
    pub(crate) fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            slots: Vec::new(),
            peers: Vec::new(),
            dirty: Vec::new(),
            nonzero: 0,
            due: None,
            tags: 0,
        }
    }

    /// How many peers have a report here.
    pub(crate) fn peers(&self) -> usize {
        self.peers.len()
    }

    /// The earliest moment some source ages out.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.due
    }

    #[inline]
    fn state(&mut self, slot: u32) -> &mut SlotState {
        let i = slot as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, SlotState::default());
        }
        &mut self.slots[i]
    }

    /// Marks `slot`'s sum as moved.
    #[inline]
    fn touch(&mut self, slot: u32) {
        let s = self.state(slot);
        if !s.dirty {
            s.dirty = true;
            self.dirty.push(slot);
        }
    }

    /// Clears what is kept for `slot` (its counted load goes at the next fold)
    /// and makes it belong to `owner`.
    fn reset(&mut self, slot: u32, owner: Option<u32>) {
        self.tags += 1;
        let tag = self.tags;
        let s = self.state(slot);
        *s = SlotState {
            owner,
            tag,
            applied: s.applied,
            dirty: s.dirty,
            ..SlotState::default()
        };
        self.touch(slot);
    }

    /// Makes `slot` belong to the worker of generation `owner`, dropping what was
    /// kept for an earlier worker in it; returns the slot's tag.
    #[inline]
    fn claim(&mut self, slot: u32, owner: u32) -> u64 {
        if self.state(slot).owner != Some(owner) {
            self.reset(slot, Some(owner));
        }
        self.slots[slot as usize].tag
    }

    /// Adds `load` to `slot`'s sum (subtracts it if `!add`), if the slot is still
    /// kept under `tag`; a report made before the slot was reset went with it.
    #[inline]
    fn change(&mut self, slot: u32, tag: u64, load: u32, add: bool) {
        let s = self.state(slot);
        if s.owner.is_none() || s.tag != tag || load == 0 {
            return;
        }
        if add {
            s.total += u64::from(load);
        } else {
            debug_assert!(s.total >= u64::from(load), "reported load underflow");
            s.total -= u64::from(load);
        }
        self.touch(slot);
    }

    /// Replaces `from` with `to` in `slot`'s sum (kept under the tag that added
    /// `from`, which the caller checked).
    fn adjust(&mut self, slot: u32, from: u32, to: u32) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.total >= u64::from(from), "reported load underflow");
        s.total = s.total - u64::from(from) + u64::from(to);
        self.touch(slot);
    }

    /// Folds every moved sum into its counter (capped at [`MAX_REPORTED_LOAD`]),
    /// and keeps the board's switch equal to "some counter holds reported load".
    fn flush(&mut self, cells: Cells<'_>) {
        for slot in core::mem::take(&mut self.dirty) {
            let s = &mut self.slots[slot as usize];
            s.dirty = false;
            let target = u32::try_from(s.total).map_or(MAX_REPORTED_LOAD, |t| t.min(MAX_REPORTED_LOAD));
            if target == s.applied {
                continue;
            }
            let before = s.applied;
            s.applied = cells.fold(slot, before, target);
            match (before == 0, s.applied == 0) {
                (true, false) => self.nonzero += 1,
                (false, true) => self.nonzero -= 1,
                _ => {}
            }
        }
        cells.board.set_on(self.nonzero > 0);
        cells.counters.features.set(Features::REPORTED, self.nonzero > 0);
    }

    /// Notes a source heard from `at`. An age limit that runs past the clock's
    /// range means the source never ages out.
    fn schedule(&mut self, at: Instant) {
        if let Some(due) = at.checked_add(self.max_age) {
            self.due = Some(self.due.map_or(due, |d| d.min(due)));
        }
    }

    /// The worker in `slot` (generation `owner`) reports `load` of its own.
    pub(crate) fn report(&mut self, cells: Cells<'_>, slot: u32, owner: u32, load: u32, now: Instant) {
        let tag = self.claim(slot, owner);
        self.state(slot).heard = Some(now);
        if let Some((old, _)) = self.state(slot).direct.take() {
            self.change(slot, tag, old, false);
        }
        if load > 0 {
            self.state(slot).direct = Some((load, now));
            self.change(slot, tag, load, true);
            self.schedule(now);
        }
        self.flush(cells);
    }

    /// When the worker in `slot` last reported its own load, if it has since
    /// it took the slot.
    pub(crate) fn heard(&self, slot: u32) -> Option<Instant> {
        self.slots.get(slot as usize).and_then(|s| s.heard)
    }

    /// Whether `slot` is kept for the worker of generation `owner` under `tag`.
    #[inline]
    fn kept_under(&self, slot: u32, owner: u32, tag: u64) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.owner == Some(owner) && s.tag == tag)
    }

    /// Replaces peer `origin`'s report with `loads` (summary number `seq`).
    /// `resolve(worker, hint)` names the worker's slot and generation in this pool
    /// (`None`: not a member); `hint` is the slot the entry in the same place of the
    /// peer's last summary had, to try before a hash lookup.
    ///
    /// An entry equal to the one in its place last time (same slot, same load,
    /// slot kept as then) changes nothing and touches nothing: a steady fleet's
    /// summary costs a comparison per worker.
    pub(crate) fn apply<K>(
        &mut self,
        cells: Cells<'_>,
        origin: u64,
        seq: u64,
        loads: &[(K, u32)],
        resolve: impl Fn(&K, Option<u32>) -> Option<(u32, u32)>,
        now: Instant,
    ) -> Applied {
        let mut old = match self.peers.iter().position(|(o, _)| *o == origin) {
            Some(i) if self.peers[i].1.seq >= seq => return Applied::Stale,
            Some(i) => self.peers.swap_remove(i).1.entries,
            None => Vec::new(),
        };
        let mut kept = Vec::with_capacity(loads.len());
        for (worker, load) in loads {
            let j = kept.len();
            let Some((slot, owner)) = resolve(worker, old.get(j).map(|o| o.slot)) else {
                continue;
            };
            if let Some(o) = old.get(j).copied()
                && o.slot == slot
                && self.kept_under(slot, owner, o.tag)
            {
                // The same worker in the same place: only the difference moves
                // the sum, and nothing of the old entry is left to take back.
                if o.load != *load {
                    self.adjust(slot, o.load, *load);
                }
                kept.push(Kept { load: *load, ..o });
                old[j].load = 0;
                continue;
            }
            let tag = self.claim(slot, owner);
            self.change(slot, tag, *load, true);
            kept.push(Kept {
                slot,
                tag,
                load: *load,
            });
        }
        for o in old.iter().filter(|o| o.load > 0) {
            self.change(o.slot, o.tag, o.load, false);
        }
        self.peers.push((
            origin,
            Peer {
                seq,
                at: now,
                entries: kept,
            },
        ));
        self.schedule(now);
        self.flush(cells);
        Applied::Replaced
    }

    /// Drops every source last heard from `max_age` or longer before `now`; returns
    /// how many (peers and workers' own reports).
    pub(crate) fn expire(&mut self, cells: Cells<'_>, now: Instant) -> usize {
        match self.due {
            Some(due) if due <= now => {}
            _ => return 0,
        }
        let max_age = self.max_age;
        let old = |at: Instant| now.saturating_duration_since(at) >= max_age;
        let mut expired = 0;
        let mut i = 0;
        while i < self.peers.len() {
            if !old(self.peers[i].1.at) {
                i += 1;
                continue;
            }
            let (_, peer) = self.peers.swap_remove(i);
            for e in &peer.entries {
                self.change(e.slot, e.tag, e.load, false);
            }
            expired += 1;
        }
        for slot in 0..self.slots.len() as u32 {
            let s = self.slots[slot as usize];
            if let Some((load, at)) = s.direct
                && old(at)
            {
                self.slots[slot as usize].direct = None;
                self.change(slot, s.tag, load, false);
                expired += 1;
            }
        }
        self.reschedule();
        self.flush(cells);
        expired
    }

    /// Recomputes when the next source ages out.
    fn reschedule(&mut self) {
        let peers = self.peers.iter().map(|(_, p)| p.at);
        let direct = self.slots.iter().filter_map(|s| s.direct.map(|(_, at)| at));
        self.due = peers
            .chain(direct)
            .min()
            .and_then(|at| at.checked_add(self.max_age));
    }

    /// Drops what is kept for slots whose worker is no longer `member(slot)`'s
    /// generation (`None`: the slot has no member), taking its load out of the
    /// counter.
    pub(crate) fn retain_members(&mut self, cells: Cells<'_>, member: impl Fn(u32) -> Option<u32>) {
        for slot in 0..self.slots.len() as u32 {
            let owner = self.slots[slot as usize].owner;
            if owner.is_some() && member(slot) != owner {
                self.reset(slot, None);
            }
        }
        self.flush(cells);
    }

    /// The age limit from now on; sources are judged by it at the next expiry.
    pub(crate) fn set_max_age(&mut self, max_age: Duration) {
        self.max_age = max_age;
        self.reschedule();
    }
}
