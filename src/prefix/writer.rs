//! The writer's side: one at a time (under the index's mutex), it changes a
//! block only between making the block's sequence odd and even again, frees
//! an entry only once it is unlinked, and gives a holder number to a new
//! (worker, rank) only after every bit of its former owner is gone. It keeps
//! each block's drops' list equal to its parent's holders (from events) less
//! its own, adding a holder to a child's drops before the parent shows it.

use super::table::{EMPTY, Entry, HAS_PARENT, NEVER, NO_DIFF, ROUTED, TOMB, Table, home};
use crate::sync::atomic::{AtomicU32, Ordering, fence};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Counters of what the writer dropped or could not apply.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Drops {
    pub(super) full: u64,
    pub(super) never_stored: u64,
    pub(super) unknown_holder: u64,
}

/// A block's two lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    Holders,
    Drops,
}

pub(super) struct Writer<W> {
    pub(super) holders: HashMap<(W, u32), u32>,
    pub(super) owners: Vec<Option<(W, u32)>>,
    free_holders: Vec<u32>,
    free_entries: Vec<u32>,
    /// Per entry: the slot of the block it belongs to, and a count of reuses.
    entry_slot: Vec<u32>,
    entry_stamp: Vec<u32>,
    /// Routed entries in the order they expire: (entry, its stamp, expiry).
    routed: VecDeque<(u32, u32, u64)>,
    /// Per slot: how many routed entries its holders' list has.
    routed_count: Vec<u32>,
    /// Block key → the keys of the live blocks that name it as parent.
    children: HashMap<u64, Vec<u64>>,
    pub(super) live_blocks: u32,
    used_slots: u32,
    capacity: u32,
    pub(super) drops: Drops,
    pub(super) compactions: u64,
}

fn split(h: u32) -> (u32, u64) {
    (h / 64, 1u64 << (h % 64))
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
            entry_stamp: vec![0; entries as usize],
            routed: VecDeque::new(),
            routed_count: vec![0; table.slots.len()],
            children: HashMap::new(),
            live_blocks: 0,
            used_slots: 0,
            capacity,
            drops: Drops::default(),
            compactions: 0,
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
            None if self.owners.len() < t.holders.len() => {
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
            if self.live(t, s) && self.has(t, s, List::Holders, h, false) {
                self.remove(t, s, h);
            }
        }
        // Drops of a block whose parent went first are gone already; this
        // catches what a full arena left behind.
        for s in 0..t.slots.len() {
            if self.live(t, s) && self.has(t, s, List::Drops, h, false) {
                Self::begin(t, s);
                self.clear_bit(t, s, List::Drops, h);
                Self::end(t, s);
            }
        }
        if let Some(key) = self.owners[h as usize].take() {
            self.holders.remove(&key);
        }
        self.free_holders.push(h);
    }

    fn live(&self, t: &Table, s: usize) -> bool {
        let head = t.slots[s].head.load(Ordering::Relaxed);
        head != EMPTY && head != TOMB
    }

    fn head_of(t: &Table, s: usize, list: List) -> &AtomicU32 {
        match list {
            List::Holders => &t.slots[s].head,
            List::Drops => &t.slots[s].drops,
        }
    }

    /// The entries (0-based) of one of slot `s`'s lists.
    fn iter<'t>(&self, t: &'t Table, s: usize, list: List) -> impl Iterator<Item = u32> + 't {
        let mut at = Self::head_of(t, s, list).load(Ordering::Relaxed);
        std::iter::from_fn(move || {
            if at == EMPTY || at == TOMB {
                return None;
            }
            let e = at - 1;
            at = t.entries[e as usize].next.load(Ordering::Relaxed);
            Some(e)
        })
    }

    /// (block, holder) pairs held at `now`: the bits of the holders' lists'
    /// live entries (not the drops').
    pub(super) fn holdings(&self, t: &Table, now: u64) -> u64 {
        (0..t.slots.len())
            .filter(|&s| self.live(t, s))
            .flat_map(|s| self.iter(t, s, List::Holders))
            .map(|e| &t.entries[e as usize])
            .filter(|e| e.expires.load(Ordering::Relaxed) > now)
            .map(|e| u64::from(e.mask.load(Ordering::Relaxed).count_ones()))
            .sum()
    }

    /// Whether `list` of slot `s` has holder `h` (in an event's entry only,
    /// with `exact`).
    fn has(&self, t: &Table, s: usize, list: List, h: u32, exact: bool) -> bool {
        let (group, bit) = split(h);
        self.iter(t, s, list).any(|e| {
            let en = &t.entries[e as usize];
            en.group.load(Ordering::Relaxed) == group
                && en.mask.load(Ordering::Relaxed) & bit != 0
                && (!exact || en.expires.load(Ordering::Relaxed) == NEVER)
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

    fn flag(t: &Table, s: usize, flag: u32, on: bool) {
        let f = &t.slots[s].flags;
        let v = f.load(Ordering::Relaxed);
        f.store(if on { v | flag } else { v & !flag }, Ordering::Relaxed);
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

    /// The slot of block `key`, and whether it is new (not yet linked);
    /// `None` when the index holds its capacity of blocks.
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
            // Tombstones fill the headroom (live blocks are at most half the
            // slots): drop them, and probe again.
            None if self.used_slots > self.live_blocks => {
                self.compact(t);
                return self.find_or_insert(t, key);
            }
            None => return None,
        };
        Some((at, true))
    }

    /// Rewrites the table without its tombstones: every live block moves to
    /// the first empty slot of its probe, with its lists (whose entries learn
    /// their new slot). Lookups that overlap it start again: `reuse_seq` is
    /// odd meanwhile, as for a holder's reuse. It runs once at least
    /// 3/8 of the slots' worth of blocks went since the last one, so its
    /// O(slots) cost is O(1) per removal.
    fn compact(&mut self, t: &Table) {
        t.reuse_seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
        let mut live = Vec::with_capacity(self.live_blocks as usize);
        for (s, slot) in t.slots.iter().enumerate() {
            let head = slot.head.load(Ordering::Relaxed);
            if head != EMPTY && head != TOMB {
                live.push((
                    head,
                    slot.drops.load(Ordering::Relaxed),
                    slot.flags.load(Ordering::Relaxed),
                    slot.key.load(Ordering::Relaxed),
                    slot.parent.load(Ordering::Relaxed),
                    std::mem::take(&mut self.routed_count[s]),
                ));
            }
            slot.head.store(EMPTY, Ordering::Relaxed);
        }
        let n = t.slots.len();
        for &(head, drops, flags, key, parent, routed) in &live {
            let mut at = home(key, n);
            while t.slots[at].head.load(Ordering::Relaxed) != EMPTY {
                at = (at + 1) & (n - 1);
            }
            let slot = &t.slots[at];
            slot.drops.store(drops, Ordering::Relaxed);
            slot.flags.store(flags, Ordering::Relaxed);
            slot.key.store(key, Ordering::Relaxed);
            slot.parent.store(parent, Ordering::Relaxed);
            slot.head.store(head, Ordering::Relaxed);
            self.routed_count[at] = routed;
            for list in [head, drops] {
                let mut e = list;
                while e != EMPTY && e != TOMB {
                    self.entry_slot[e as usize - 1] = at as u32;
                    e = t.entries[e as usize - 1].next.load(Ordering::Relaxed);
                }
            }
        }
        self.used_slots = live.len() as u32;
        self.compactions += 1;
        t.reuse_seq.fetch_add(1, Ordering::Release);
    }

    /// Sets `h`'s bit in an event's entry of `list` (inside `s`'s window),
    /// taking an entry from the free list if none has its group: `false` if
    /// there is none free.
    fn set_bit(&mut self, t: &Table, s: usize, list: List, h: u32) -> bool {
        let (group, bit) = split(h);
        let found = self.iter(t, s, list).find(|&e| {
            let en = &t.entries[e as usize];
            en.group.load(Ordering::Relaxed) == group && en.expires.load(Ordering::Relaxed) == NEVER
        });
        if let Some(e) = found {
            let en = &t.entries[e as usize];
            en.mask
                .store(en.mask.load(Ordering::Relaxed) | bit, Ordering::Relaxed);
            return true;
        }
        let Some(e) = self.free_entries.pop() else {
            return false;
        };
        self.link(t, s, list, e, group, bit, NEVER);
        true
    }

    /// Links entry `e` at the head of `list` (inside `s`'s window).
    #[allow(clippy::too_many_arguments)]
    fn link(&mut self, t: &Table, s: usize, list: List, e: u32, group: u32, mask: u64, expires: u64) {
        let en: &Entry = &t.entries[e as usize];
        let head = Self::head_of(t, s, list);
        let old = head.load(Ordering::Relaxed);
        en.group.store(group, Ordering::Relaxed);
        en.mask.store(mask, Ordering::Relaxed);
        en.expires.store(expires, Ordering::Relaxed);
        en.next
            .store(if old == TOMB { EMPTY } else { old }, Ordering::Relaxed);
        head.store(e + 1, Ordering::Relaxed);
        self.entry_slot[e as usize] = s as u32;
    }

    /// Clears `h`'s bit from every entry of `list` (inside `s`'s window),
    /// unlinking the entries left empty.
    fn clear_bit(&mut self, t: &Table, s: usize, list: List, h: u32) {
        let (group, bit) = split(h);
        let mut prev: Option<u32> = None;
        let mut at = Self::head_of(t, s, list).load(Ordering::Relaxed);
        while at != EMPTY && at != TOMB {
            let e = at - 1;
            let en = &t.entries[e as usize];
            let next = en.next.load(Ordering::Relaxed);
            let mask = en.mask.load(Ordering::Relaxed);
            if en.group.load(Ordering::Relaxed) == group && mask & bit != 0 {
                if mask == bit {
                    self.unlink(t, s, list, prev, e, next);
                    at = next;
                    continue;
                }
                en.mask.store(mask & !bit, Ordering::Relaxed);
            }
            prev = Some(e);
            at = next;
        }
    }

    /// Unlinks entry `e` (after `prev`, before `next`) and frees it.
    fn unlink(&mut self, t: &Table, s: usize, list: List, prev: Option<u32>, e: u32, next: u32) {
        match prev {
            Some(p) => t.entries[p as usize].next.store(next, Ordering::Relaxed),
            None => {
                let empty = if list == List::Holders { TOMB } else { EMPTY };
                Self::head_of(t, s, list).store(if next == EMPTY { empty } else { next }, Ordering::Relaxed);
            }
        }
        let en = &t.entries[e as usize];
        if list == List::Holders && en.expires.load(Ordering::Relaxed) != NEVER {
            self.routed_count[s] -= 1;
            if self.routed_count[s] == 0 {
                Self::flag(t, s, ROUTED, false);
            }
        }
        en.mask.store(0, Ordering::Relaxed);
        self.entry_stamp[e as usize] = self.entry_stamp[e as usize].wrapping_add(1);
        self.free_entries.push(e);
    }

    /// Makes room for `n` entries if routed ones can be evicted for them.
    fn reserve(&mut self, t: &Table, n: usize) {
        while self.free_entries.len() < n && self.evict_oldest(t) {}
    }

    /// Records that holder `h` holds block `key` (after `parent`, when
    /// known) until `expires` (`NEVER` for an event): `false` if dropped for
    /// want of room (after routed entries, the first to expire first, were
    /// evicted to make it).
    pub(super) fn add(&mut self, t: &Table, key: u64, parent: Option<u64>, h: u32, expires: u64) -> bool {
        if let Some(s) = self.find(t, key)
            && self.add_in_place(t, s, h, expires)
        {
            return true;
        }
        // Room for the holder's entry, the children's drops it may add, and
        // a new block's drops (its parent's holders, less this one).
        let kids = if expires == NEVER {
            self.children.get(&key).map_or(0, Vec::len)
        } else {
            0
        };
        let inherited = match (self.find(t, key), parent.and_then(|p| self.find(t, p))) {
            (None, Some(ps)) => self.inherited(t, ps, (expires == NEVER).then_some(h)).count(),
            _ => 0,
        };
        self.reserve(t, 1 + kids + inherited);
        // The holder's own entry first: drops may take what is left.
        let Some(e) = self.free_entries.pop() else {
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
        let (group, bit) = split(h);
        if expires == NEVER {
            self.drop_in_children(t, key, h);
        }
        Self::begin(t, s);
        if new {
            self.create(t, s, key, parent, (expires == NEVER).then_some(h));
        }
        if expires == NEVER {
            let exists = self.iter(t, s, List::Holders).find(|&x| {
                let en = &t.entries[x as usize];
                en.group.load(Ordering::Relaxed) == group && en.expires.load(Ordering::Relaxed) == NEVER
            });
            match exists {
                Some(x) => {
                    let en = &t.entries[x as usize];
                    en.mask
                        .store(en.mask.load(Ordering::Relaxed) | bit, Ordering::Relaxed);
                    self.free_entries.push(e);
                }
                None => self.link(t, s, List::Holders, e, group, bit, NEVER),
            }
            self.clear_bit(t, s, List::Drops, h);
        } else {
            self.link(t, s, List::Holders, e, group, bit, expires);
            self.routed_count[s] += 1;
            Self::flag(t, s, ROUTED, true);
            self.routed.push_back((e, self.entry_stamp[e as usize], expires));
        }
        Self::end(t, s);
        true
    }

    /// The groups of block slot `ps`'s holders from events, less holder
    /// `but`.
    fn inherited<'t>(
        &self,
        t: &'t Table,
        ps: usize,
        but: Option<u32>,
    ) -> impl Iterator<Item = (u32, u64)> + 't {
        let (group, bit) = but.map_or((u32::MAX, 0), split);
        self.iter(t, ps, List::Holders)
            .map(|e| &t.entries[e as usize])
            .filter(|en| en.expires.load(Ordering::Relaxed) == NEVER)
            .map(move |en| {
                let g = en.group.load(Ordering::Relaxed);
                let m = en.mask.load(Ordering::Relaxed);
                (g, if g == group { m & !bit } else { m })
            })
            .filter(|&(_, m)| m != 0)
    }

    /// A new block in slot `s` (inside its window): its key, its parent, and
    /// its drops: every holder of the parent from events but `but` (the one
    /// about to hold it from an event).
    fn create(&mut self, t: &Table, s: usize, key: u64, parent: Option<u64>, but: Option<u32>) {
        let slot = &t.slots[s];
        slot.key.store(key, Ordering::Relaxed);
        slot.parent.store(parent.unwrap_or(0), Ordering::Relaxed);
        slot.drops.store(EMPTY, Ordering::Relaxed);
        slot.flags
            .store(if parent.is_some() { HAS_PARENT } else { 0 }, Ordering::Relaxed);
        self.routed_count[s] = 0;
        self.live_blocks += 1;
        let Some(p) = parent else {
            return;
        };
        self.children.entry(p).or_default().push(key);
        let Some(ps) = self.find(t, p) else {
            return;
        };
        let groups: Vec<(u32, u64)> = self.inherited(t, ps, but).collect();
        for (group, mask) in groups {
            match self.free_entries.pop() {
                Some(e) => self.link(t, s, List::Drops, e, group, mask, NEVER),
                None => Self::flag(t, s, NO_DIFF, true),
            }
        }
    }

    /// Before `h` shows as holding block `key`: into the drops of each
    /// child that `h` does not hold.
    fn drop_in_children(&mut self, t: &Table, key: u64, h: u32) {
        let Some(kids) = self.children.get(&key).cloned() else {
            return;
        };
        for c in kids {
            if let Some(cs) = self.find(t, c)
                && !self.has(t, cs, List::Holders, h, true)
            {
                Self::begin(t, cs);
                if !self.set_bit(t, cs, List::Drops, h) {
                    Self::flag(t, cs, NO_DIFF, true);
                }
                Self::end(t, cs);
            }
        }
    }

    /// Adds `h` to an entry block slot `s` already has (an event's entry of
    /// its group; its own routed entry, renewed): `false` if none fits.
    fn add_in_place(&mut self, t: &Table, s: usize, h: u32, expires: u64) -> bool {
        let (group, bit) = split(h);
        if expires == NEVER {
            // Only a holder already recorded from events is a no-op; a new
            // one needs the children's drops first (`add`).
            return self.has(t, s, List::Holders, h, true);
        }
        let found = self.iter(t, s, List::Holders).find(|&e| {
            let en = &t.entries[e as usize];
            let (mask, exp) = (
                en.mask.load(Ordering::Relaxed),
                en.expires.load(Ordering::Relaxed),
            );
            en.group.load(Ordering::Relaxed) == group
                && ((exp == NEVER && mask & bit != 0) || (exp != NEVER && mask == bit))
        });
        let Some(e) = found else {
            return false;
        };
        let en = &t.entries[e as usize];
        if en.expires.load(Ordering::Relaxed) != NEVER {
            Self::begin(t, s);
            en.expires.store(expires, Ordering::Relaxed);
            Self::end(t, s);
            self.routed.push_back((e, self.entry_stamp[e as usize], expires));
        }
        true
    }

    /// Takes holder `h` off block slot `s` (its event and routed entries).
    /// Returns whether it held the block.
    pub(super) fn remove(&mut self, t: &Table, s: usize, h: u32) -> bool {
        let held = self.has(t, s, List::Holders, h, false);
        if !held {
            return false;
        }
        let exact = self.has(t, s, List::Holders, h, true);
        let slot = &t.slots[s];
        let (key, parent) = (
            slot.key.load(Ordering::Relaxed),
            slot.parent.load(Ordering::Relaxed),
        );
        let has_parent = slot.flags.load(Ordering::Relaxed) & HAS_PARENT != 0;
        let parent_holds = exact
            && has_parent
            && self
                .find(t, parent)
                .is_some_and(|ps| self.has(t, ps, List::Holders, h, true));
        Self::begin(t, s);
        if parent_holds && !self.set_bit(t, s, List::Drops, h) {
            Self::flag(t, s, NO_DIFF, true);
        }
        self.clear_bit(t, s, List::Holders, h);
        let gone = self.settle(t, s);
        Self::end(t, s);
        if exact {
            let kids = self.children.get(&key).cloned().unwrap_or_default();
            for c in kids {
                if let Some(cs) = self.find(t, c) {
                    Self::begin(t, cs);
                    self.clear_bit(t, cs, List::Drops, h);
                    Self::end(t, cs);
                }
            }
        }
        if gone && has_parent {
            self.forget_child(parent, key);
        }
        true
    }

    fn forget_child(&mut self, parent: u64, key: u64) {
        if let Some(kids) = self.children.get_mut(&parent) {
            if let Some(i) = kids.iter().position(|&k| k == key) {
                kids.swap_remove(i);
            }
            if kids.is_empty() {
                self.children.remove(&parent);
            }
        }
    }

    /// After a change inside `s`'s window: a block left without holders
    /// frees its drops and becomes a tombstone, or empty when the next slot
    /// is empty (with the tombstones before it: no probe needs them).
    /// Returns whether the block went.
    fn settle(&mut self, t: &Table, s: usize) -> bool {
        if t.slots[s].head.load(Ordering::Relaxed) != TOMB {
            return false;
        }
        let mut at = t.slots[s].drops.load(Ordering::Relaxed);
        while at != EMPTY {
            let next = t.entries[at as usize - 1].next.load(Ordering::Relaxed);
            self.unlink(t, s, List::Drops, None, at - 1, next);
            at = next;
        }
        t.slots[s].flags.store(0, Ordering::Relaxed);
        self.live_blocks -= 1;
        let n = t.slots.len();
        if t.slots[(s + 1) & (n - 1)].head.load(Ordering::Relaxed) != EMPTY {
            return true;
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
        true
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
        self.entry_stamp[e as usize] == stamp && t.entries[e as usize].expires.load(Ordering::Relaxed) == exp
    }

    /// Unlinks routed entry `e` from its block.
    fn drop_entry(&mut self, t: &Table, e: u32) {
        let s = self.entry_slot[e as usize] as usize;
        let slot = &t.slots[s];
        let (key, parent) = (
            slot.key.load(Ordering::Relaxed),
            slot.parent.load(Ordering::Relaxed),
        );
        let has_parent = slot.flags.load(Ordering::Relaxed) & HAS_PARENT != 0;
        Self::begin(t, s);
        let mut prev = None;
        let mut at = slot.head.load(Ordering::Relaxed);
        while at != EMPTY && at != TOMB {
            let next = t.entries[at as usize - 1].next.load(Ordering::Relaxed);
            if at - 1 == e {
                self.unlink(t, s, List::Holders, prev, e, next);
                break;
            }
            prev = Some(at - 1);
            at = next;
        }
        let gone = self.settle(t, s);
        Self::end(t, s);
        if gone && has_parent {
            self.forget_child(parent, key);
        }
    }
}
