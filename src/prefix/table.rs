//! The index's shared memory, written by one writer at a time and read by
//! any number of lookups without a lock: a fixed open-addressing table of
//! blocks, each heading a list of holder entries in a fixed arena, and the
//! holders' identities. Every block slot is a seqlock: the writer makes its
//! sequence odd, changes the slot or its list, makes it even again; a reader
//! that saw the same even sequence before and after read a consistent list.

use super::key::fmix;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// `Slot::head` of a slot never used (ends a probe).
pub(super) const EMPTY: u32 = 0;
/// `Slot::head` of a slot whose block went (a probe goes on past it).
pub(super) const TOMB: u32 = u32::MAX;
/// `Entry::expires` of an entry from events (never expires).
pub(super) const NEVER: u64 = u64::MAX;

/// One block: its key, its parent's, the head of its holders' list (entry
/// index + 1), and the head of its drops' list: the holders of the parent
/// (from events) that do not hold this block.
#[derive(Debug, Default)]
pub(super) struct Slot {
    pub(super) seq: AtomicU32,
    pub(super) head: AtomicU32,
    pub(super) drops: AtomicU32,
    pub(super) flags: AtomicU32,
    pub(super) key: AtomicU64,
    pub(super) parent: AtomicU64,
}

/// `Slot::flags`: the block's parent is known (`Slot::parent`).
pub(super) const HAS_PARENT: u32 = 1;
/// `Slot::flags`: some holders hold the block by a routed entry (which
/// expires without a write, so the drops' list cannot follow it).
pub(super) const ROUTED: u32 = 2;
/// `Slot::flags`: the drops' list missed an entry (the arena was full) and
/// is not to be read.
pub(super) const NO_DIFF: u32 = 4;

/// Up to 64 holders of one block: holders `64·group .. 64·group + 63`
/// whose bits are set, until `expires` (ms on the index's clock).
#[derive(Debug, Default)]
pub(super) struct Entry {
    pub(super) mask: AtomicU64,
    pub(super) expires: AtomicU64,
    pub(super) group: AtomicU32,
    pub(super) next: AtomicU32,
}

/// Holder state: free, holding, degraded (credit 0), or retired.
pub(super) const LIVE: u32 = 1;
pub(super) const DEGRADED: u32 = 2;

/// A (worker, rank) holder: its token in the pool and its state.
#[derive(Debug, Default)]
pub(super) struct Holder {
    pub(super) slot: AtomicU32,
    pub(super) generation: AtomicU32,
    pub(super) state: AtomicU32,
}

pub(super) struct Table {
    pub(super) slots: Box<[Slot]>,
    pub(super) entries: Box<[Entry]>,
    pub(super) holders: Box<[Holder]>,
    /// Holders ever handed out (readers size their scratch by it).
    pub(super) holder_count: AtomicU32,
    /// Odd while a holder number is being given to a new (worker, rank), or
    /// while the writer compacts the slots (blocks move), bumped after: a
    /// lookup that spans either starts again.
    pub(super) reuse_seq: AtomicU32,
}

/// A slot's first probe position for `key`.
#[inline(always)]
pub(super) fn home(key: u64, slots: usize) -> usize {
    (fmix(key) as usize) & (slots - 1)
}

impl Table {
    pub(super) fn new(slots: usize, entries: usize, holders: usize) -> Self {
        Self {
            slots: (0..slots).map(|_| Slot::default()).collect(),
            entries: (0..entries).map(|_| Entry::default()).collect(),
            holders: (0..holders).map(|_| Holder::default()).collect(),
            holder_count: AtomicU32::new(0),
            reuse_seq: AtomicU32::new(0),
        }
    }

    /// Bytes the table holds (what the capacity costs, allocated up front).
    pub(super) fn bytes(&self) -> usize {
        size_of_val(&*self.slots) + size_of_val(&*self.entries) + size_of_val(&*self.holders)
    }

    /// Finds block `key`'s slot and the (even) sequence it had: the head of
    /// its list, or `EMPTY` when the block is not held. A read of the list
    /// from that head is the block's when [`still`](Self::still) says the
    /// sequence did not move.
    #[inline]
    pub(super) fn probe(&self, key: u64) -> Probe {
        let n = self.slots.len();
        let mut at = home(key, n);
        let mut probes = 0;
        while probes < n {
            let slot = &self.slots[at];
            let seq = slot.seq.load(Ordering::Acquire);
            if seq & 1 == 1 {
                crate::sync::spin();
                continue;
            }
            let head = slot.head.load(Ordering::Relaxed);
            if head == EMPTY || (head != TOMB && slot.key.load(Ordering::Relaxed) == key) {
                return Probe {
                    slot: at as u32,
                    seq,
                    head,
                    drops: slot.drops.load(Ordering::Relaxed),
                    flags: slot.flags.load(Ordering::Relaxed),
                    parent: slot.parent.load(Ordering::Relaxed),
                };
            }
            at = (at + 1) & (n - 1);
            probes += 1;
        }
        Probe {
            slot: u32::MAX,
            ..Probe::default()
        }
    }

    /// Whether the slot `p` read has not changed since (after an acquire
    /// fence that orders the list's reads before this one).
    #[inline(always)]
    pub(super) fn still(&self, p: &Probe) -> bool {
        self.slots
            .get(p.slot as usize)
            .is_none_or(|s| s.seq.load(Ordering::Relaxed) == p.seq)
    }

    /// Entry `at` (index + 1) of a list: its live `(group, mask)` at `now`,
    /// if any, and the next entry (`EMPTY` past the end, or on an index out
    /// of range, which only a read during a change can see).
    #[inline(always)]
    pub(super) fn step(&self, at: u32, now: u64) -> (Option<(u32, u64)>, u32) {
        let Some(e) = self.entries.get((at as usize).wrapping_sub(1)) else {
            return (None, EMPTY);
        };
        let mask = e.mask.load(Ordering::Relaxed);
        let live = mask != 0 && e.expires.load(Ordering::Relaxed) > now;
        let next = e.next.load(Ordering::Relaxed);
        (
            live.then(|| (e.group.load(Ordering::Relaxed), mask)),
            if next == TOMB { EMPTY } else { next },
        )
    }

    /// Reads the list from `head` into `visit` (its live `(group, mask)`
    /// pairs, a group may repeat), bounded by the arena's size: what it read
    /// is the list's if the block's sequence did not move meanwhile.
    #[inline]
    pub(super) fn read_list(&self, head: u32, now: u64, visit: &mut impl FnMut((u32, u64))) {
        let mut at = if head == TOMB { EMPTY } else { head };
        let mut steps = 0;
        while at != EMPTY && steps <= self.entries.len() {
            let (pair, next) = self.step(at, now);
            if let Some(pair) = pair {
                visit(pair);
            }
            at = next;
            steps += 1;
        }
    }

    /// Reads the holder groups of block `key` live at `now` into `visit`,
    /// after a `visit(None)` that resets it, and returns the probe the read
    /// was validated against. Lock-free: when the block changed during the
    /// read, it resets and reads again (only while its writer changes it).
    pub(super) fn read_block(&self, key: u64, now: u64, visit: &mut impl FnMut(Option<(u32, u64)>)) -> Probe {
        loop {
            let p = self.probe(key);
            visit(None);
            self.read_list(p.head, now, &mut |pair| visit(Some(pair)));
            fence(Ordering::Acquire);
            if self.still(&p) {
                return p;
            }
        }
    }
}

/// Where a lookup found a block and what its slot said (see
/// [`Table::probe`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Probe {
    slot: u32,
    seq: u32,
    /// The holders' list (index + 1), `EMPTY` for a block not held.
    pub(super) head: u32,
    /// The drops' list.
    pub(super) drops: u32,
    pub(super) flags: u32,
    pub(super) parent: u64,
}
