//! The writer side of a pool: membership changes, slot allocation and the
//! deferred reuse of removed workers' slots. Writers are serialised by the
//! pool's mutex and may allocate; pickers never touch any of this.
//!
//! Every change runs in two phases. *Staging* runs all of the key type's
//! code (`Clone`, `Hash`, `Eq`) and builds the next snapshot, changing
//! nothing. *Commit* moves the staged values into place and publishes, and
//! runs no code of the key type's but `Drop`. A panic in a key's callback
//! therefore leaves the pool exactly as it was, and the writer lock can be
//! recovered from poisoning.

use crate::device::WorkerInfo;
use crate::error::Error;
use crate::fleet::slow_start::Ramp;
use crate::snapshot::ring::{self, Ring};
use crate::snapshot::{Liveness, Member, Snapshot};
use crate::storage::Slots;
use crate::storage::features::Features;
use crate::sync::atomic::Ordering;
use crate::sync::{Arc, Published};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::time::Instant;

/// A removed worker whose slot may not be reused yet.
struct Retired {
    member: Member,
    /// Epoch of the first snapshot without it: snapshots older than this may
    /// still name the slot.
    removed_at: u64,
}

pub(crate) struct Writer<W> {
    epoch: u64,
    /// The epoch of the latest snapshot some worker left in.
    departed_at: u64,
    /// Slots ever allocated (the scan covers `0..capacity`).
    capacity: u32,
    next_generation: u32,
    /// The incarnation the next join takes (every join takes one per rank,
    /// a return from `retired` included: see `SetView::incs`).
    next_incarnation: u32,
    /// Reusable slots; the lowest are taken first to keep the scanned range dense.
    free: BTreeSet<u32>,
    /// The current set, in set order.
    members: Vec<(W, Member)>,
    /// Removed workers still draining. A list, not a map: removing from a
    /// map would hash a key during commit.
    retired: Vec<(W, Retired)>,
    /// One per published snapshot that may still be alive; pruned on every
    /// publish, so it is bounded by the snapshots readers hold.
    published: Vec<Arc<Liveness>>,
    /// The slow start applied to joining and resumed members.
    ramp: Ramp,
    /// When the published snapshot's effective capacities next change.
    ramp_due: Option<Instant>,
    /// Whether snapshots carry an affinity ring, and the latest one (reused
    /// while the candidates stay the same).
    affinity: Option<Option<Arc<Ring>>>,
}

/// Where a key's slot comes from when it joins the set.
#[derive(Clone, Copy)]
enum Origin {
    Member(usize),
    Retired(usize),
    New,
}

/// A change whose user code has all run: committing it runs none.
struct Staged<W> {
    snapshot: Snapshot<W>,
    liveness: Arc<Liveness>,
    /// Fresh identities' slots (in ascending order within each identity):
    /// the slot, a clone of the key for the slot table, and the rank.
    fresh: Vec<(u32, W, u32)>,
    /// When the next member's effective capacity changes (slow start).
    ramp_due: Option<Instant>,
}

impl<W: Clone + Eq + Hash> Writer<W> {
    pub(crate) fn new() -> Self {
        Self {
            epoch: 0,
            departed_at: 0,
            capacity: 0,
            next_generation: 0,
            next_incarnation: 0,
            free: BTreeSet::new(),
            members: Vec::new(),
            retired: Vec::new(),
            published: Vec::new(),
            ramp: Ramp::default(),
            ramp_due: None,
            affinity: None,
        }
    }

    /// The first snapshot: an empty set.
    pub(crate) fn initial(&mut self) -> Arc<Snapshot<W>> {
        let (snap, live) = Snapshot::build(self.epoch, 0, 0, &[], None);
        self.published.push(live);
        Arc::new(snap)
    }

    fn origin(&self, key: &W) -> Origin {
        if let Some(i) = self.members.iter().position(|(k, _)| k == key) {
            Origin::Member(i)
        } else if let Some(j) = self.retired.iter().position(|(k, _)| k == key) {
            Origin::Retired(j)
        } else {
            Origin::New
        }
    }

    /// The slots the next fresh identities will take, in order: free ones,
    /// lowest first, then new ones past the allocated range.
    fn fresh_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.free.iter().copied().chain(self.capacity..)
    }

    /// The first slot of the lowest run of `len` slots a fresh identity may
    /// take: free ones, lowest first, or past the allocated range (a run of
    /// free slots ending at the last allocated one goes on past it). For one
    /// slot, the first `fresh_slots` yields.
    fn fresh_run(&self, len: u32) -> u32 {
        let (mut start, mut run, mut last) = (self.capacity, 0, None);
        for &slot in &self.free {
            if last.is_some_and(|l: u32| l + 1 == slot) {
                run += 1;
            } else {
                (start, run) = (slot, 1);
            }
            if run == len {
                return start;
            }
            last = Some(slot);
        }
        match last {
            Some(l) if l + 1 == self.capacity => start,
            _ => self.capacity,
        }
    }

    /// The first slot of a fresh identity of `ranks` slots, reclaiming
    /// before growing the allocated range (as `insert` always did for one).
    fn fresh_room(&mut self, ranks: u32, slots: &Slots<W>) -> Result<u32, Error> {
        loop {
            let first = self.fresh_run(ranks);
            let end = first as usize + ranks as usize;
            if end > self.capacity as usize && self.reclaim(slots) > 0 {
                continue;
            }
            if end > slots.max() {
                return Err(Error::CapacityExceeded { limit: slots.max() });
            }
            return Ok(first);
        }
    }

    /// Slots a change may still take.
    fn room(&self, slots: &Slots<W>) -> usize {
        self.free.len() + (slots.max() - self.capacity as usize)
    }

    /// Where each of `keys` joins from, once there is room for the fresh
    /// ones. Making room may reclaim a draining worker named in `keys`, which
    /// then needs a fresh slot too: so look again after every reclaim.
    fn origins_with_room(&mut self, keys: &[W], slots: &Slots<W>) -> Result<Vec<Origin>, Error> {
        loop {
            let origins = self.origins(keys);
            let needed = origins.iter().filter(|o| matches!(o, Origin::New)).count();
            // Reuse before growing: reclaim while the free list is short.
            if needed <= self.free.len() {
                return Ok(origins);
            }
            if self.reclaim(slots) > 0 {
                continue;
            }
            if needed <= self.room(slots) {
                return Ok(origins);
            }
            return Err(Error::CapacityExceeded { limit: slots.max() });
        }
    }

    /// The member a key gets when it joins from `origin` (a retired one
    /// with as many ranks as it had), and whether it is a fresh identity,
    /// whose first slot is then `first()`. `generation` counts the fresh
    /// slots staged so far (one identity generation per rank), `incarnation`
    /// the joins (one incarnation per rank; a member staying keeps its own).
    fn joining(
        &self,
        origin: Origin,
        info: WorkerInfo,
        first: impl FnOnce() -> u32,
        generation: &mut u32,
        incarnation: &mut u32,
    ) -> (Member, bool) {
        let mut next_incarnation = |ranks: u32| {
            let taken = *incarnation;
            *incarnation = incarnation.wrapping_add(ranks);
            taken
        };
        match origin {
            Origin::Member(i) => (self.members[i].1, false),
            Origin::Retired(j) => {
                let was = self.retired[j].1.member;
                let member = Member {
                    info,
                    draining: false,
                    ramp_from: self.ramp_start(),
                    incarnation: next_incarnation(was.ranks()),
                    ..was
                };
                (member, false)
            }
            Origin::New => {
                let member = Member {
                    ramp_from: self.ramp_start(),
                    ..Member::new(first(), *generation, next_incarnation(info.rank_count()), info)
                };
                *generation = generation.wrapping_add(member.ranks());
                (member, true)
            }
        }
    }

    /// Lists the slots of `member`, a fresh identity with key `key`, in
    /// `fresh` (see `Staged::fresh`).
    fn push_fresh(fresh: &mut Vec<(u32, W, u32)>, member: &Member, key: &W) {
        for rank in 0..member.ranks() {
            fresh.push((member.slot + rank, key.clone(), rank));
        }
    }

    /// Builds the snapshot for `members` (user code: it clones and hashes);
    /// `departs` when some current member is not among them (or stops being
    /// a candidate: it starts draining). Sets each member's effective
    /// capacity for now.
    fn stage(&self, members: &mut [(&W, Member)], fresh: Vec<(u32, W, u32)>, departs: bool) -> Staged<W> {
        let ring = self
            .affinity
            .as_ref()
            .map(|last| ring_for(members, last.as_ref()));
        let top = fresh.iter().map(|&(s, _, _)| s + 1).max().unwrap_or(0);
        let capacity = self.capacity.max(top) as usize;
        let epoch = self.epoch + 1;
        let departed_at = if departs { epoch } else { self.departed_at };
        let ramp_due = self
            .ramp
            .weigh(members.iter_mut().map(|(_, m)| m), Instant::now());
        let (snapshot, liveness) = Snapshot::build(epoch, departed_at, capacity, members, ring);
        Staged {
            snapshot,
            liveness,
            fresh,
            ramp_due,
        }
    }

    /// Commit, the part every change shares: takes the staged fresh slots and
    /// publishes. No user code runs here but `Drop`.
    fn commit(&mut self, staged: Staged<W>, slots: &Slots<W>, current: &Published<Snapshot<W>>) {
        let Staged {
            mut snapshot,
            liveness,
            fresh,
            ramp_due,
        } = staged;
        self.ramp_due = ramp_due;
        if self.affinity.is_some() {
            self.affinity = Some(snapshot.view.affinity.clone());
        }
        let allocated = self.capacity;
        for (slot, key, rank) in fresh {
            if slot >= self.capacity {
                // Every slot below the capacity has its key storage.
                slots.ensure(self.capacity as usize, slot as usize + 1);
                self.capacity = slot + 1;
            } else {
                self.free.remove(&slot);
                slots.reused(slot);
            }
            self.next_generation = self.next_generation.wrapping_add(1);
            // SAFETY: the slot is fresh or was freed by `reclaim`, which proved no
            // snapshot, reservation or pin can reach it; we hold the writer lock.
            // Not safe code: picks read keys with no lock and no count of their
            // own (a lock or an `Arc` per key would put a shared write on every
            // pick), so "no reader" is a proof over the snapshots, counters and
            // pins that only the writer can make, which no type can check.
            unsafe { slots.keys.set(slot, Some(key), rank) };
        }
        slots.grown(allocated as usize, self.capacity as usize);
        // The factors of the weighted scores, before any pick can use them.
        if let (Some(w), Some(bounds)) = (snapshot.view.weights.as_deref_mut(), slots.counters.bounds())
            && let Some(scale) = &w.scale
        {
            w.version = bounds.install_scores(&scale.scale);
        }
        self.epoch += 1;
        self.departed_at = snapshot.view.departed_at;
        // The flag is up while any pick may load a weighted snapshot: set
        // before one is published (its Release store then publishes the bit
        // too), cleared only after an unweighted one replaced it.
        let weighted = snapshot.view.weights.is_some();
        let features = &slots.counters.features;
        if weighted {
            features.set(Features::WEIGHTED, true);
        }
        current.store(Arc::new(snapshot));
        if !weighted {
            features.set(Features::WEIGHTED, false);
        }
        // Pruned here, not only in `reclaim`: a writer that never removes
        // anyone (`set_info` in a loop) must not grow this list.
        self.published.retain(|l| l.is_alive());
        self.published.push(liveness);
    }

    pub(crate) fn insert(
        &mut self,
        key: W,
        info: WorkerInfo,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let mut origin = self.origin(&key);
        if let Origin::Retired(j) = origin
            && self.retired[j].1.member.ranks() != info.rank_count()
        {
            // Its ranks still drain under their old layout: it comes back
            // with them, or as a new identity once they are reclaimed.
            self.reclaim(slots);
            origin = self.origin(&key);
            if let Origin::Retired(j) = origin {
                return Err(Error::InvalidConfig {
                    what: "worker ranks",
                    why: format!(
                        "the worker was removed with {} rank(s) whose reservations are still alive; \
                         re-insert it with that many, or after they end",
                        self.retired[j].1.member.ranks()
                    ),
                });
            }
        }
        let first = match origin {
            Origin::Member(_) => return Err(Error::DuplicateWorker),
            // Reuse before growing; reclaiming only shrinks `retired`, so a
            // new key stays new.
            Origin::New => self.fresh_room(info.rank_count(), slots)?,
            Origin::Retired(_) => 0,
        };
        let (mut generation, mut incarnation) = (self.next_generation, self.next_incarnation);
        let (member, is_fresh) = self.joining(origin, info, || first, &mut generation, &mut incarnation);
        let mut fresh = Vec::new();
        if is_fresh {
            Self::push_fresh(&mut fresh, &member, &key);
        }
        let mut list = self.member_refs();
        list.push((&key, member));
        let staged = self.stage(&mut list, fresh, false);
        drop(list);
        // Commit: no key code runs from here on.
        if let Origin::Retired(j) = origin {
            self.retired.swap_remove(j);
        }
        self.members.push((key, member));
        self.next_incarnation = incarnation;
        self.commit(staged, slots, current);
        Ok(())
    }

    pub(crate) fn remove(
        &mut self,
        key: &W,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let Origin::Member(i) = self.origin(key) else {
            return Err(Error::UnknownWorker);
        };
        let mut list = self.member_refs();
        list.remove(i);
        let staged = self.stage(&mut list, Vec::new(), true);
        drop(list);
        // Commit: no key code runs from here on.
        let (key, member) = self.members.remove(i);
        let removed_at = self.epoch + 1;
        self.retired.push((key, Retired { member, removed_at }));
        self.commit(staged, slots, current);
        self.reclaim(slots);
        Ok(())
    }

    pub(crate) fn replace(
        &mut self,
        keys: Vec<W>,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let mut seen = HashSet::with_capacity(keys.len());
        if !keys.iter().all(|k| seen.insert(k)) {
            return Err(Error::DuplicateWorker);
        }
        drop(seen);
        let origins = self.origins_with_room(&keys, slots)?;
        let mut fresh_slots = self.fresh_slots();
        let (mut generation, mut incarnation) = (self.next_generation, self.next_incarnation);
        let mut list = Vec::with_capacity(keys.len());
        let mut fresh = Vec::new();
        for (key, &origin) in keys.iter().zip(&origins) {
            // New workers have one rank; a removed one back keeps its own.
            let info = match origin {
                Origin::Retired(j) => WorkerInfo::default().ranks(self.retired[j].1.member.ranks()),
                _ => WorkerInfo::default(),
            };
            let first = || fresh_slots.next().unwrap_or(u32::MAX); // room was reserved
            let (member, is_fresh) = self.joining(origin, info, first, &mut generation, &mut incarnation);
            if is_fresh {
                // One rank: `replace` adds workers without ranks.
                fresh.push((member.slot, key.clone(), 0));
            }
            list.push((key, member));
        }
        drop(fresh_slots);
        let stays_count = origins.iter().filter(|o| matches!(o, Origin::Member(_))).count();
        let staged = self.stage(&mut list, fresh, stays_count < self.members.len());
        let new_members: Vec<Member> = list.into_iter().map(|(_, m)| m).collect();
        // Commit: no key code runs from here on.
        let mut stays = vec![false; self.members.len()];
        let mut rejoin = Vec::new();
        for origin in &origins {
            match *origin {
                Origin::Member(i) => stays[i] = true,
                Origin::Retired(j) => rejoin.push(j),
                Origin::New => {}
            }
        }
        rejoin.sort_unstable_by(|a, b| b.cmp(a));
        for j in rejoin {
            self.retired.swap_remove(j);
        }
        self.next_incarnation = incarnation;
        let removed_at = self.epoch + 1;
        let old = std::mem::replace(&mut self.members, keys.into_iter().zip(new_members).collect());
        for ((key, member), stays) in old.into_iter().zip(stays) {
            if !stays {
                self.retired.push((key, Retired { member, removed_at }));
            }
        }
        self.commit(staged, slots, current);
        self.reclaim(slots);
        Ok(())
    }

    /// Where each of `keys` joins from (user code: it hashes and compares).
    fn origins(&self, keys: &[W]) -> Vec<Origin> {
        let mut known: HashMap<&W, Origin> = HashMap::with_capacity(self.members.len() + self.retired.len());
        known.extend(
            self.members
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k, Origin::Member(i))),
        );
        known.extend(
            self.retired
                .iter()
                .enumerate()
                .map(|(j, (k, _))| (k, Origin::Retired(j))),
        );
        keys.iter()
            .map(|k| known.get(k).copied().unwrap_or(Origin::New))
            .collect()
    }

    pub(crate) fn set_info(
        &mut self,
        key: &W,
        info: WorkerInfo,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let Origin::Member(i) = self.origin(key) else {
            return Err(Error::UnknownWorker);
        };
        self.same_ranks(i, &info)?;
        self.change(i, |m| m.info = info, slots, current);
        Ok(())
    }

    /// Refuses `info` for member `i` if it changes the member's rank count.
    fn same_ranks(&self, i: usize, info: &WorkerInfo) -> Result<(), Error> {
        let ranks = self.members[i].1.ranks();
        if info.rank_count() == ranks {
            return Ok(());
        }
        Err(Error::InvalidConfig {
            what: "worker ranks",
            why: format!(
                "the rank count is fixed while the worker is in the set (it has {ranks}); \
                 remove it and insert it again to change it"
            ),
        })
    }

    /// Sets the attributes of several members in one snapshot; checks every
    /// change before making any (an unknown or repeated worker, or a rank
    /// count that differs from the member's, changes nothing).
    pub(crate) fn set_infos(
        &mut self,
        changes: Vec<(W, WorkerInfo)>,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let keys: Vec<W> = changes.iter().map(|(k, _)| k.clone()).collect();
        let mut seen = HashSet::with_capacity(keys.len());
        if !keys.iter().all(|k| seen.insert(k)) {
            return Err(Error::DuplicateWorker);
        }
        drop(seen);
        let mut at = Vec::with_capacity(changes.len());
        for (origin, (_, info)) in self.origins(&keys).into_iter().zip(&changes) {
            let Origin::Member(i) = origin else {
                return Err(Error::UnknownWorker);
            };
            self.same_ranks(i, info)?;
            at.push((i, *info));
        }
        drop(keys);
        drop(changes);
        let mut list = self.member_refs();
        for &(i, info) in &at {
            list[i].1.info = info;
        }
        let staged = self.stage(&mut list, Vec::new(), false);
        drop(list);
        // Commit: no key code runs from here on.
        for (i, info) in at {
            self.members[i].1.info = info;
        }
        self.commit(staged, slots, current);
        Ok(())
    }

    /// Changes member `i` with `f` and publishes; the change *departs* (see
    /// `stage`) when it makes the member stop being a candidate.
    fn change(
        &mut self,
        i: usize,
        f: impl Fn(&mut Member),
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) {
        let mut list = self.member_refs();
        let was = list[i].1.draining;
        f(&mut list[i].1);
        let departs = !was && list[i].1.draining;
        let staged = self.stage(&mut list, Vec::new(), departs);
        drop(list);
        // Commit: no key code runs from here on.
        f(&mut self.members[i].1);
        self.commit(staged, slots, current);
    }

    /// Starts or ends `key`'s drain: draining, it stays in the set but is no
    /// candidate; resumed, it ramps up again (slow start). Returns whether it
    /// was draining.
    pub(crate) fn set_draining(
        &mut self,
        key: &W,
        draining: bool,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<bool, Error> {
        let Origin::Member(i) = self.origin(key) else {
            return Err(Error::UnknownWorker);
        };
        let was = self.members[i].1.draining;
        if was != draining {
            let ramp_from = if draining { None } else { self.ramp_start() };
            self.change(
                i,
                |m| {
                    m.draining = draining;
                    m.ramp_from = ramp_from;
                },
                slots,
                current,
            );
        }
        Ok(was)
    }

    /// Whether `key` is a draining member (`None`: not a member).
    pub(crate) fn is_draining(&self, key: &W) -> Option<bool> {
        match self.origin(key) {
            Origin::Member(i) => Some(self.members[i].1.draining),
            _ => None,
        }
    }

    /// When a member that joins or resumes now starts its slow start.
    fn ramp_start(&self) -> Option<Instant> {
        self.ramp.is_on().then(Instant::now)
    }

    /// Sets the slow start for members that join or resume from now on; with
    /// `None`, members ramping now get their full capacity at once.
    pub(crate) fn set_ramp(&mut self, ramp: Ramp, slots: &Slots<W>, current: &Published<Snapshot<W>>) {
        self.ramp = ramp;
        self.republish(slots, current);
    }

    /// Publishes the set again, unchanged but for the effective capacities
    /// (slow start moved on).
    pub(crate) fn republish(&mut self, slots: &Slots<W>, current: &Published<Snapshot<W>>) {
        let mut list = self.member_refs();
        let staged = self.stage(&mut list, Vec::new(), false);
        drop(list);
        self.commit(staged, slots, current);
    }

    /// Makes every snapshot from now on carry an affinity ring, starting
    /// with the current set's.
    pub(crate) fn enable_affinity(&mut self, slots: &Slots<W>, current: &Published<Snapshot<W>>) {
        if self.affinity.is_none() {
            self.affinity = Some(None);
            self.republish(slots, current);
        }
    }

    /// When the effective capacities next change (slow start), if ever.
    pub(crate) fn ramp_due(&self) -> Option<Instant> {
        self.ramp_due
    }

    fn member_refs(&self) -> Vec<(&W, Member)> {
        self.members.iter().map(|(k, m)| (k, *m)).collect()
    }

    /// Frees the slots of removed workers that nothing can reach any more:
    /// no live snapshot names them and their counter and pins are zero.
    /// Returns how many were freed.
    pub(crate) fn reclaim(&mut self, slots: &Slots<W>) -> usize {
        // Liveness first: once every snapshot naming a slot is gone, no new
        // booking can reach it, so a zero read afterwards stays zero.
        self.published.retain(|l| l.is_alive());
        let oldest = self.published.iter().map(|l| l.epoch).min().unwrap_or(u64::MAX);
        let free = &mut self.free;
        let before = self.retired.len();
        self.retired.retain(|(_, r)| {
            // Acquire pairs with the Release decrement in `Slots::release`:
            // the guard's last read of the key happens-before we clear it.
            // Every rank at once: the worker's slots are freed together.
            let quiet = r.removed_at <= oldest
                && r.member.slots().all(|slot| {
                    slots.counters.get(slot).load(Ordering::Acquire) == 0
                        && slots.keys.pins(slot).load(Ordering::Acquire) == 0
                });
            if quiet {
                for slot in r.member.slots() {
                    // SAFETY: as established just above, nothing can reach `slot`.
                    unsafe { slots.keys.set(slot, None, 0) };
                    slots.freed(slot);
                    free.insert(slot);
                }
            }
            !quiet
        });
        before - self.retired.len()
    }

    /// A removed worker's retained load (rank `rank`'s, or every rank's
    /// for `None`), while some is still in flight.
    pub(crate) fn draining_load(&self, key: &W, rank: Option<u32>, slots: &Slots<W>) -> Option<u32> {
        let (_, r) = self.retired.iter().find(|(k, _)| k == key)?;
        let load = |slot| slots.counters.get(slot).load(Ordering::Relaxed);
        let load = match rank {
            Some(rank) => load(r.member.slots().nth(rank as usize)?),
            None => r
                .member
                .slots()
                .fold(0u32, |sum, slot| sum.saturating_add(load(slot))),
        };
        Some(load).filter(|&load| load > 0)
    }

    /// Draining workers, free and allocated slots, tracked snapshots, and
    /// slots held (a slot per rank of every member and draining worker).
    pub(crate) fn stats(&mut self) -> (usize, usize, usize, usize, usize) {
        self.published.retain(|l| l.is_alive());
        let held = self.members.iter().map(|(_, m)| m);
        let held = held.chain(self.retired.iter().map(|(_, r)| &r.member));
        (
            self.retired.len(),
            self.free.len(),
            self.capacity as usize,
            self.published.len(),
            held.map(|m| m.ranks() as usize).sum(),
        )
    }
}

/// The ring over `members`' candidates: `last` when it was built over the
/// same ones, else a new one (hashes every candidate's key).
fn ring_for<W: Hash>(members: &[(&W, Member)], last: Option<&Arc<Ring>>) -> Arc<Ring> {
    let mut over: Vec<(u32, u32)> = members
        .iter()
        .filter(|(_, m)| !m.draining)
        .flat_map(|(_, m)| {
            m.slots()
                .zip(0..)
                .map(|(slot, rank)| (slot, m.generation_of(rank)))
        })
        .collect();
    over.sort_unstable();
    if let Some(last) = last
        && *last.built_over == *over
    {
        return last.clone();
    }
    let workers: Vec<(u64, u32, u32)> = members
        .iter()
        .filter(|(_, m)| !m.draining)
        .flat_map(|(k, m)| {
            let id = ring::identity(*k);
            m.slots()
                .zip(0..)
                .map(move |(slot, rank)| (ring::rank_identity(id, rank), slot, m.generation_of(rank)))
        })
        .collect();
    Arc::new(Ring::build(&workers))
}
