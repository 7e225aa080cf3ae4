//! The writer's side: one at a time (under the index's mutex), it changes a
//! block only between making the block's sequence odd and even again, frees
//! an entry only once it is unlinked, and gives a holder number to a new
//! (worker, rank) only after every bit of its former owner is gone.

use super::table::{EMPTY, Entry, NEVER, TOMB, Table, home};
use crate::sync::atomic::{Ordering, fence};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Counters of what the writer dropped or could not apply.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Drops {
    pub(super) full: u64,
    pub(super) never_stored: u64,
    pub(super) unknown_holder: u64,
}

pub(super) struct Writer<W> {
    pub(super) holders: HashMap<(W, u32), u32>,
    pub(super) owners: Vec<Option<(W, u32)>>,
    free_holders: Vec<u32>,
    free_entries: Vec<u32>,
    /// Per entry: the slot of the block it belongs to, and a count of reuses.
    entry_slot: Vec<u32>,
    entry_gen: Vec<u32>,
    /// Routed entries in the order they expire: (entry, its stamp, expiry).
    routed: VecDeque<(u32, u32, u64)>,
    pub(super) live_blocks: u32,
    used_slots: u32,
    capacity: u32,
    pub(super) drops: Drops,
}

impl<W: Clone + Eq + Hash> Writer<W> {
    pub(super) fn new(table: &Table, capacity: u32) -> Self {
        let entries = table.entries.len() as u32;
        Self {
            holders: HashMap::new(),
            owners: Vec::new(),
            free_holders: Vec::new(),
            free_entries: (0..entries).rev().collect(),
            entry_slot: vec![0; entries as usize],
            entry_gen: vec![0; entries as usize],
            routed: VecDeque::new(),
            live_blocks: 0,
            used_slots: 0,
            capacity,
            drops: Drops::default(),
        }
    }

    pub(super) fn entries_used(&self) -> usize {
        self.entry_slot.len() - self.free_entries.len()
    }

    /// The holder number of (worker, rank), taking a free one (or a new one)
    /// for a holder not yet known.
    pub(super) fn holder(&mut self, t: &Table, key: (W, u32), slot: u32, generation: u32) -> Option<u32> {
        if let Some(&h) = self.holders.get(&key) {
            let rec = &t.holders[h as usize];
            if rec.slot.load(Ordering::Relaxed) == slot
                && rec.generation.load(Ordering::Relaxed) == generation
            {
                return Some(h);
            }
            // The worker left and joined again: what it held went with it.
            self.retire(t, h);
        }
        let h = match self.free_holders.pop() {
            Some(h) => {
                t.reuse_seq.fetch_add(1, Ordering::Relaxed);
                fence(Ordering::Release);
                h
            }
            None if (self.owners.len()) < t.holders.len() => {
                self.owners.push(None);
                (self.owners.len() - 1) as u32
            }
            None => return None,
        };
        let rec = &t.holders[h as usize];
        rec.slot.store(slot, Ordering::Relaxed);
        rec.generation.store(generation, Ordering::Relaxed);
        rec.state.store(super::table::LIVE, Ordering::Release);
        if t.reuse_seq.load(Ordering::Relaxed) & 1 == 1 {
            t.reuse_seq.fetch_add(1, Ordering::Release);
        }
        t.holder_count.store(self.owners.len() as u32, Ordering::Release);
        self.owners[h as usize] = Some(key.clone());
        self.holders.insert(key, h);
        Some(h)
    }

    /// Takes every block from holder `h` and frees its number.
    pub(super) fn retire(&mut self, t: &Table, h: u32) {
        t.holders[h as usize].state.store(0, Ordering::Release);
        for s in 0..t.slots.len() {
            let head = t.slots[s].head.load(Ordering::Relaxed);
            if head != EMPTY && head != TOMB && self.holds(t, s, h) {
                self.remove(t, s, h);
            }
        }
        if let Some(key) = self.owners[h as usize].take() {
            self.holders.remove(&key);
        }
        self.free_holders.push(h);
    }

    fn holds(&self, t: &Table, s: usize, h: u32) -> bool {
        let (group, bit) = (h / 64, 1u64 << (h % 64));
        self.iter(t, s).any(|e| {
            let en = &t.entries[e as usize];
            en.group.load(Ordering::Relaxed) == group && en.mask.load(Ordering::Relaxed) & bit != 0
        })
    }

    /// The entries (0-based) of slot `s`'s list.
    fn iter<'t>(&self, t: &'t Table, s: usize) -> impl Iterator<Item = u32> + 't {
        let mut at = t.slots[s].head.load(Ordering::Relaxed);
        std::iter::from_fn(move || {
            if at == EMPTY || at == TOMB {
                return None;
            }
            let e = at - 1;
            at = t.entries[e as usize].next.load(Ordering::Relaxed);
            Some(e)
        })
    }

    fn begin(t: &Table, s: usize) {
        let seq = &t.slots[s].seq;
        seq.store(seq.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    fn end(t: &Table, s: usize) {
        let seq = &t.slots[s].seq;
        seq.store(seq.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
    }

    /// The slot holding block `key`, if any.
    pub(super) fn find(&self, t: &Table, key: u64) -> Option<usize> {
        let n = t.slots.len();
        let mut at = home(key, n);
        for _ in 0..n {
            let slot = &t.slots[at];
            let head = slot.head.load(Ordering::Relaxed);
            if head == EMPTY {
                return None;
            }
            if head != TOMB && slot.key.load(Ordering::Relaxed) == key {
                return Some(at);
            }
            at = (at + 1) & (n - 1);
        }
        None
    }

    /// The slot of block `key`, given one (not yet linked) if new; `None`
    /// when the index holds its capacity of blocks.
    fn find_or_insert(&mut self, t: &Table, key: u64) -> Option<(usize, bool)> {
        let n = t.slots.len();
        let mut at = home(key, n);
        let mut tomb = None;
        for _ in 0..n {
            let slot = &t.slots[at];
            let head = slot.head.load(Ordering::Relaxed);
            if head == EMPTY {
                break;
            }
            if head == TOMB {
                tomb.get_or_insert(at);
            } else if slot.key.load(Ordering::Relaxed) == key {
                return Some((at, false));
            }
            at = (at + 1) & (n - 1);
        }
        if self.live_blocks >= self.capacity {
            return None;
        }
        let at = match tomb {
            Some(at) => at,
            // A probe must always end at an empty slot: at most 7/8 used.
            None if (self.used_slots as usize + 1) * 8 <= n * 7 => {
                self.used_slots += 1;
                at
            }
            None => return None,
        };
        Some((at, true))
    }

    /// Records that holder `h` holds block `key` until `expires` (`NEVER`
    /// for an event): `false` if dropped for want of room (after routed
    /// entries, the first to expire first, were evicted to make it).
    pub(super) fn add(&mut self, t: &Table, key: u64, h: u32, expires: u64) -> bool {
        if let Some(s) = self.find(t, key)
            && self.add_in_place(t, s, h, expires)
        {
            return true;
        }
        // An entry first: evicting for it may change the table's slots.
        let Some(e) = self.take_entry(t) else {
            self.drops.full += 1;
            return false;
        };
        let mut placed = self.find_or_insert(t, key);
        if placed.is_none() && self.evict_oldest(t) {
            placed = self.find_or_insert(t, key);
        }
        let Some((s, new)) = placed else {
            self.free_entries.push(e);
            self.drops.full += 1;
            return false;
        };
        let (group, bit) = (h / 64, 1u64 << (h % 64));
        let slot = &t.slots[s];
        let en: &Entry = &t.entries[e as usize];
        Self::begin(t, s);
        en.group.store(group, Ordering::Relaxed);
        en.mask.store(bit, Ordering::Relaxed);
        en.expires.store(expires, Ordering::Relaxed);
        if new {
            en.next.store(EMPTY, Ordering::Relaxed);
            slot.key.store(key, Ordering::Relaxed);
            self.live_blocks += 1;
        } else {
            en.next
                .store(slot.head.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        slot.head.store(e + 1, Ordering::Relaxed);
        Self::end(t, s);
        self.entry_slot[e as usize] = s as u32;
        if expires != NEVER {
            self.routed.push_back((e, self.entry_gen[e as usize], expires));
        }
        true
    }

    /// Adds `h` to an entry block slot `s` already has (an event's entry of
    /// its group; its own routed entry, renewed): `false` if none fits.
    fn add_in_place(&mut self, t: &Table, s: usize, h: u32, expires: u64) -> bool {
        let (group, bit) = (h / 64, 1u64 << (h % 64));
        let found = self.iter(t, s).find(|&e| {
            let en = &t.entries[e as usize];
            let (mask, exp) = (
                en.mask.load(Ordering::Relaxed),
                en.expires.load(Ordering::Relaxed),
            );
            en.group.load(Ordering::Relaxed) == group
                && ((exp == NEVER && (mask & bit != 0 || expires == NEVER))
                    || (expires != NEVER && exp != NEVER && mask == bit))
        });
        let Some(e) = found else {
            return false;
        };
        let en = &t.entries[e as usize];
        if en.expires.load(Ordering::Relaxed) == NEVER {
            let mask = en.mask.load(Ordering::Relaxed);
            if mask & bit == 0 {
                Self::begin(t, s);
                en.mask.store(mask | bit, Ordering::Relaxed);
                Self::end(t, s);
            }
        } else {
            Self::begin(t, s);
            en.expires.store(expires, Ordering::Relaxed);
            Self::end(t, s);
            self.routed.push_back((e, self.entry_gen[e as usize], expires));
        }
        true
    }

    fn take_entry(&mut self, t: &Table) -> Option<u32> {
        if let Some(e) = self.free_entries.pop() {
            return Some(e);
        }
        if self.evict_oldest(t) {
            return self.free_entries.pop();
        }
        None
    }

    /// Takes holder `h` off block slot `s` (its event and routed entries).
    /// Returns whether it held the block.
    pub(super) fn remove(&mut self, t: &Table, s: usize, h: u32) -> bool {
        let (group, bit) = (h / 64, 1u64 << (h % 64));
        let mut held = false;
        Self::begin(t, s);
        let mut prev: Option<u32> = None;
        let mut at = t.slots[s].head.load(Ordering::Relaxed);
        while at != EMPTY && at != TOMB {
            let e = at - 1;
            let en = &t.entries[e as usize];
            let next = en.next.load(Ordering::Relaxed);
            let mask = en.mask.load(Ordering::Relaxed);
            if en.group.load(Ordering::Relaxed) == group && mask & bit != 0 {
                held = true;
                if mask == bit {
                    self.unlink(t, s, prev, e, next);
                    at = next;
                    continue;
                }
                en.mask.store(mask & !bit, Ordering::Relaxed);
            }
            prev = Some(e);
            at = next;
        }
        self.settle(t, s);
        Self::end(t, s);
        held
    }

    /// Unlinks entry `e` (after `prev`, before `next`) and frees it.
    fn unlink(&mut self, t: &Table, s: usize, prev: Option<u32>, e: u32, next: u32) {
        match prev {
            Some(p) => t.entries[p as usize].next.store(next, Ordering::Relaxed),
            None => t.slots[s]
                .head
                .store(if next == EMPTY { TOMB } else { next }, Ordering::Relaxed),
        }
        t.entries[e as usize].mask.store(0, Ordering::Relaxed);
        self.entry_gen[e as usize] = self.entry_gen[e as usize].wrapping_add(1);
        self.free_entries.push(e);
    }

    /// After a list change inside begin/end: a slot left without entries
    /// becomes a tombstone, or empty when the next slot is empty (with the
    /// tombstones before it: no probe needs them).
    fn settle(&mut self, t: &Table, s: usize) {
        if t.slots[s].head.load(Ordering::Relaxed) != TOMB {
            return;
        }
        self.live_blocks -= 1;
        let n = t.slots.len();
        if t.slots[(s + 1) & (n - 1)].head.load(Ordering::Relaxed) != EMPTY {
            return;
        }
        t.slots[s].head.store(EMPTY, Ordering::Relaxed);
        self.used_slots -= 1;
        let mut at = (s + n - 1) & (n - 1);
        while at != s && t.slots[at].head.load(Ordering::Relaxed) == TOMB {
            Self::begin(t, at);
            t.slots[at].head.store(EMPTY, Ordering::Relaxed);
            Self::end(t, at);
            self.used_slots -= 1;
            at = (at + n - 1) & (n - 1);
        }
    }

    /// Drops routed entries expired at `now`.
    pub(super) fn expire(&mut self, t: &Table, now: u64) {
        while let Some(&(e, stamp, exp)) = self.routed.front() {
            if self.is_current(t, e, stamp, exp) && exp > now {
                break;
            }
            self.routed.pop_front();
            if self.is_current(t, e, stamp, exp) {
                self.drop_entry(t, e);
            }
        }
    }

    /// Evicts the routed entry that expires first: `false` if none.
    fn evict_oldest(&mut self, t: &Table) -> bool {
        while let Some((e, stamp, exp)) = self.routed.pop_front() {
            if self.is_current(t, e, stamp, exp) {
                self.drop_entry(t, e);
                return true;
            }
        }
        false
    }

    fn is_current(&self, t: &Table, e: u32, stamp: u32, exp: u64) -> bool {
        self.entry_gen[e as usize] == stamp && t.entries[e as usize].expires.load(Ordering::Relaxed) == exp
    }

    fn drop_entry(&mut self, t: &Table, e: u32) {
        let s = self.entry_slot[e as usize] as usize;
        Self::begin(t, s);
        let mut prev = None;
        let mut at = t.slots[s].head.load(Ordering::Relaxed);
        while at != EMPTY && at != TOMB {
            let next = t.entries[at as usize - 1].next.load(Ordering::Relaxed);
            if at - 1 == e {
                self.unlink(t, s, prev, e, next);
                break;
            }
            prev = Some(at - 1);
            at = next;
        }
        self.settle(t, s);
        Self::end(t, s);
    }
}
