//! The writer side of a pool: membership changes, slot allocation and the
//! deferred reuse of removed workers' slots. Writers are serialised by the
//! pool's mutex and may allocate; pickers never touch any of this.

use crate::Error;
use crate::device::WorkerInfo;
use crate::slots::Slots;
use crate::snapshot::{Liveness, Member, Snapshot};
use crate::sync::atomic::Ordering;
use crate::sync::{Arc, Published};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::Hash;

/// A removed worker whose slot may not be reused yet.
struct Retired {
    member: Member,
    /// Epoch of the first snapshot without it: snapshots older than this may
    /// still name the slot.
    removed_at: u64,
}

pub(crate) struct Writer<W> {
    epoch: u64,
    /// Slots ever allocated (the scan covers `0..capacity`).
    capacity: u32,
    next_generation: u32,
    /// Reusable slots, lowest first to keep the scanned range dense.
    free: BinaryHeap<Reverse<u32>>,
    /// The current set, in set order.
    members: Vec<(W, Member)>,
    retired: HashMap<W, Retired>,
    /// One per published snapshot that may still be alive.
    published: Vec<Arc<Liveness>>,
}

/// Where a key's slot comes from when it joins the set.
enum Origin {
    Member(usize),
    Retired,
    New,
}

impl<W: Clone + Eq + Hash> Writer<W> {
    pub(crate) fn new() -> Self {
        Self {
            epoch: 0,
            capacity: 0,
            next_generation: 0,
            free: BinaryHeap::new(),
            members: Vec::new(),
            retired: HashMap::new(),
            published: Vec::new(),
        }
    }

    /// The first snapshot: an empty set.
    pub(crate) fn initial(&mut self) -> Arc<Snapshot<W>> {
        let (snap, live) = Snapshot::build(self.epoch, 0, &[]);
        self.published.push(live);
        Arc::new(snap)
    }

    fn publish(&mut self, current: &Published<Snapshot<W>>) {
        self.epoch += 1;
        let (snap, live) = Snapshot::build(self.epoch, self.capacity as usize, &self.members);
        current.store(Arc::new(snap));
        self.published.push(live);
    }

    fn origin(&self, key: &W) -> Origin {
        if let Some(i) = self.members.iter().position(|(k, _)| k == key) {
            Origin::Member(i)
        } else if self.retired.contains_key(key) {
            Origin::Retired
        } else {
            Origin::New
        }
    }

    /// Takes a slot for a new identity and assigns it to `key`.
    fn allocate(&mut self, key: &W, info: WorkerInfo, slots: &Slots<W>) -> Result<Member, Error> {
        let slot = match self.free.pop() {
            Some(Reverse(slot)) => slot,
            None if (self.capacity as usize) < slots.max() => {
                self.capacity += 1;
                slots.ensure(self.capacity as usize);
                self.capacity - 1
            }
            None => return Err(Error::CapacityExceeded { limit: slots.max() }),
        };
        // SAFETY: the slot is fresh or was freed by `reclaim`, which proved no
        // snapshot, reservation or pin can reach it; we hold the writer lock.
        unsafe { slots.keys.set(slot, Some(key.clone())) };
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        Ok(Member {
            slot,
            generation,
            info,
        })
    }

    /// Makes room for `new` fresh identities or fails without changing anything.
    fn reserve_room(&mut self, new: usize, slots: &Slots<W>) -> Result<(), Error> {
        if self.free.len() < new {
            self.reclaim(slots);
        }
        let room = self.free.len() + (slots.max() - self.capacity as usize);
        if room < new {
            Err(Error::CapacityExceeded { limit: slots.max() })
        } else {
            Ok(())
        }
    }

    /// The member for `key` joining the set: its retained slot if it was
    /// removed while still loaded (same identity, same count), else a new one.
    fn join(&mut self, key: &W, info: WorkerInfo, slots: &Slots<W>) -> Result<Member, Error> {
        match self.retired.remove(key) {
            Some(r) => Ok(Member { info, ..r.member }),
            None => self.allocate(key, info, slots),
        }
    }

    pub(crate) fn insert(
        &mut self,
        key: W,
        info: WorkerInfo,
        slots: &Slots<W>,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        match self.origin(&key) {
            Origin::Member(_) => return Err(Error::DuplicateWorker),
            Origin::New => self.reserve_room(1, slots)?,
            Origin::Retired => {}
        }
        let member = self.join(&key, info, slots)?;
        self.members.push((key, member));
        self.publish(current);
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
        let (key, member) = self.members.remove(i);
        self.publish(current);
        self.retired.insert(
            key,
            Retired {
                member,
                removed_at: self.epoch,
            },
        );
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
        let fresh = |w: &Self| keys.iter().filter(|k| matches!(w.origin(k), Origin::New)).count();
        let needed = fresh(self);
        self.reserve_room(needed, slots)?;
        // Making room may have reclaimed a draining worker named in `keys`,
        // which now needs a fresh slot too: check again, so that the joins
        // below cannot run out half-way.
        let needed_now = fresh(self);
        if needed_now > needed {
            self.reserve_room(needed_now, slots)?;
        }
        let mut old: HashMap<W, Member> = self.members.drain(..).collect();
        let mut members = Vec::with_capacity(keys.len());
        for key in keys {
            let member = match old.remove(&key) {
                Some(m) => m,
                None => self.join(&key, WorkerInfo::default(), slots)?,
            };
            members.push((key, member));
        }
        self.members = members;
        self.publish(current);
        let removed_at = self.epoch;
        for (key, member) in old {
            self.retired.insert(key, Retired { member, removed_at });
        }
        self.reclaim(slots);
        Ok(())
    }

    pub(crate) fn set_info(
        &mut self,
        key: &W,
        info: WorkerInfo,
        current: &Published<Snapshot<W>>,
    ) -> Result<(), Error> {
        let Origin::Member(i) = self.origin(key) else {
            return Err(Error::UnknownWorker);
        };
        self.members[i].1.info = info;
        self.publish(current);
        Ok(())
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
        self.retired.retain(|_, r| {
            let slot = r.member.slot;
            // Acquire pairs with the Release decrement in `Reservation::drop`:
            // the guard's last read of the key happens-before we clear it.
            let quiet = r.removed_at <= oldest
                && slots.counters.get(slot).load(Ordering::Acquire) == 0
                && slots.keys.pins(slot).load(Ordering::Acquire) == 0;
            if quiet {
                // SAFETY: as established just above, nothing can reach `slot`.
                unsafe { slots.keys.set(slot, None) };
                free.push(Reverse(slot));
            }
            !quiet
        });
        before - self.retired.len()
    }

    /// A removed worker's retained load, while some is still in flight.
    pub(crate) fn draining_load(&self, key: &W, slots: &Slots<W>) -> Option<u32> {
        let r = self.retired.get(key)?;
        Some(slots.counters.get(r.member.slot).load(Ordering::Relaxed)).filter(|&load| load > 0)
    }

    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        (self.retired.len(), self.free.len(), self.capacity as usize)
    }
}
