//! The immutable worker set that pickers load: who is in it, in which order,
//! and which counter slots the SIMD scan must skip.

pub(crate) mod ring;

use ring::Ring;

use crate::device::{DeviceKind, WorkerInfo};
use crate::remap::Remaps;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::{Arc, LANE_PAD};
use crate::weights::Weights;
use std::collections::HashMap;
use std::hash::Hash;

/// Scan length for `slots` allocated slots.
pub(crate) fn padded(slots: usize) -> usize {
    slots.div_ceil(LANE_PAD) * LANE_PAD
}

/// Marks a published snapshot alive until its last reference drops.
///
/// The writer keeps a clone per published snapshot; a removed worker's slot is
/// reused only once every snapshot that still named it is gone (the
/// stale-pick hazard of [`docs::internal::sets`](crate::docs::internal::sets): a stale pick
/// never charges the slot's next owner).
pub(crate) struct Liveness {
    pub(crate) epoch: u64,
    alive: AtomicU32,
}

impl Liveness {
    pub(crate) fn is_alive(&self) -> bool {
        // Acquire pairs with the Release store in `Drop for SetView`: whatever
        // a picker did through that snapshot (a CAS on a counter) happens-before
        // the writer's reuse of the slot.
        self.alive.load(Ordering::Acquire) != 0
    }
}

/// The part of a snapshot that selectors see (independent of the key type).
pub(crate) struct SetView {
    pub(crate) epoch: u64,
    /// The epoch of the latest snapshot without some worker its predecessor
    /// had: a mask built at or after it names only current members.
    pub(crate) departed_at: u64,
    /// Masks built before `departed_at`, translated to this set. Boxed: kept
    /// inline, its 32 cells made every pick cost a few instructions more
    /// (measured with the callgrind gate).
    pub(crate) remaps: Box<Remaps>,
    /// The candidates' slots in set order: every member but those draining,
    /// one slot per rank (a worker's ranks side by side, rank 0 first).
    pub(crate) members: Box<[u32]>,
    /// The draining members' slots, in set order (every rank).
    pub(crate) draining: Box<[u32]>,
    /// Per slot, padded: `0` for a member, `u32::MAX` otherwise.
    pub(crate) excluded: Box<[u32]>,
    /// Whether the members hold exactly the slots `0..members.len()`, so that a scan
    /// over the first `members.len()` counters needs no exclusion array.
    pub(crate) dense: bool,
    /// Per slot: the identity generation of the worker in it.
    pub(crate) gens: Box<[u32]>,
    /// Per slot: the incarnation of the worker in it, new at every join (a
    /// removed worker back before its slot was reclaimed keeps its identity
    /// generation, not its incarnation). What cache credit is recorded for.
    pub(crate) incs: Box<[u32]>,
    /// Per slot: the worker's attributes.
    pub(crate) info: Box<[WorkerInfo]>,
    /// Whether every candidate has the same device kind (then a device-aware
    /// pick without cache hits is the least-loaded one).
    pub(crate) one_device_kind: bool,
    /// The candidates by device kind, when they mix kinds (device-aware's
    /// groups as scan masks).
    pub(crate) kinds: Option<Box<KindLanes>>,
    /// The capacity tables; `None` when every candidate has the same
    /// effective capacity (then every pick is the unweighted one).
    pub(crate) weights: Option<Box<Weights>>,
    /// The affinity ring over the candidates, in pools that enabled it.
    pub(crate) affinity: Option<Arc<Ring>>,
    liveness: Arc<Liveness>,
}

impl Drop for SetView {
    fn drop(&mut self) {
        // Release pairs with the Acquire load in `Liveness::is_alive`.
        self.liveness.alive.store(0, Ordering::Release);
    }
}

impl SetView {
    #[inline(always)]
    pub(crate) fn is_member(&self, slot: u32) -> bool {
        self.excluded.get(slot as usize) == Some(&0)
    }

    /// Length of the scanned slot range.
    #[inline(always)]
    pub(crate) fn scan_len(&self) -> usize {
        self.excluded.len()
    }
}

/// The candidates of each device kind as an exclusion array for the scan,
/// and their counts; index 0 is [`DeviceKind::Cpu`], 1 the accelerators.
/// Built only for a set that mixes kinds: two `u32` per slot.
pub(crate) struct KindLanes {
    /// Per kind, per slot (padded): `0` for a candidate of that kind,
    /// `u32::MAX` otherwise.
    pub(crate) lanes: [Box<[u32]>; 2],
    pub(crate) counts: [u32; 2],
}

impl KindLanes {
    /// The index of `kind` in `lanes` and `counts`.
    #[inline(always)]
    pub(crate) const fn of(kind: DeviceKind) -> usize {
        match kind {
            DeviceKind::Cpu => 0,
            DeviceKind::Accelerator => 1,
        }
    }

    fn build<W>(len: usize, members: &[(&W, Member)]) -> Box<Self> {
        let mut lanes = [
            vec![u32::MAX; len].into_boxed_slice(),
            vec![u32::MAX; len].into_boxed_slice(),
        ];
        let mut counts = [0; 2];
        for (_, m) in members.iter().filter(|(_, m)| !m.draining) {
            let k = Self::of(m.info.device_kind());
            for slot in m.slots() {
                lanes[k][slot as usize] = 0;
                counts[k] += 1;
            }
        }
        Box::new(Self { lanes, counts })
    }
}

/// One published worker set.
pub(crate) struct Snapshot<W> {
    pub(crate) view: SetView,
    /// Each worker without ranks: its slot.
    pub(crate) index: HashMap<W, u32>,
    /// Each worker with ranks: its first slot. Apart from `index`, so that a
    /// pinned booking on a worker without ranks is the lookup it always was
    /// (see [`docs::internal::sets`](crate::docs::internal::sets), "Data-parallel ranks").
    pub(crate) ranked: HashMap<W, u32>,
    /// Per slot: the member's key, so a pick names its worker with one load.
    pub(crate) keys: Box<[Option<W>]>,
}

/// A worker's slots: `count` of them from `first`, rank `r` in `first + r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ranks {
    pub(crate) first: u32,
    pub(crate) count: u32,
}

impl Ranks {
    /// The slot of rank `rank`.
    #[inline]
    pub(crate) fn slot(self, rank: u32) -> Result<u32, crate::error::Error> {
        if rank < self.count {
            Ok(self.first + rank)
        } else {
            Err(crate::error::Error::UnknownRank {
                rank,
                ranks: self.count,
            })
        }
    }

    /// Every slot, rank 0 first.
    pub(crate) fn slots(self) -> core::ops::Range<u32> {
        self.first..self.first + self.count
    }
}

impl<W: Eq + Hash> Snapshot<W> {
    /// `worker`'s slots, if it is in the set (a candidate or draining).
    #[inline]
    pub(crate) fn ranks_of(&self, worker: &W) -> Option<Ranks> {
        if let Some(&first) = self.index.get(worker) {
            return Some(Ranks { first, count: 1 });
        }
        let &first = self.ranked.get(worker)?;
        let count = self.view.info[first as usize].rank_count();
        Some(Ranks { first, count })
    }

    /// How many workers the set holds (draining ones included).
    pub(crate) fn workers(&self) -> usize {
        self.index.len() + self.ranked.len()
    }
}

impl<W> Snapshot<W> {
    /// Whether `slot` holds a worker of this set (a candidate or draining).
    #[inline]
    pub(crate) fn holds(&self, slot: u32) -> bool {
        matches!(self.keys.get(slot as usize), Some(Some(_)))
    }

    /// The key of member `slot` (every slot a pick returns is one).
    #[inline(always)]
    pub(crate) fn key(&self, slot: u32) -> &W {
        match self.keys.get(slot as usize) {
            Some(Some(key)) => key,
            _ => unreachable!("workerpick: a pick named a slot outside its snapshot (internal bug)"),
        }
    }
}

/// One member as the writer describes it when building a snapshot.
#[derive(Clone, Copy)]
pub(crate) struct Member {
    /// Its first slot: rank 0's (its ranks hold the slots after it).
    pub(crate) slot: u32,
    /// Rank 0's identity generation (see `generation_of`).
    pub(crate) generation: u32,
    /// Rank 0's incarnation (see `SetView::incs`; rank `r`'s is this `+ r`).
    pub(crate) incarnation: u32,
    pub(crate) info: WorkerInfo,
    /// Draining: in the set (its load, reports and attributes are kept) but
    /// not a candidate for any pick.
    pub(crate) draining: bool,
    /// When its slow start began (it joined or resumed), while it ramps.
    pub(crate) ramp_from: Option<std::time::Instant>,
    /// Its effective capacity in the snapshot being built (its capacity
    /// scaled by slow start); set by the writer when staging.
    pub(crate) weight: u32,
}

impl Member {
    /// How many data-parallel ranks (slots) it has.
    #[inline]
    pub(crate) fn ranks(&self) -> u32 {
        self.info.rank_count()
    }

    /// Its slots, rank 0 first: `slot` and the `ranks() − 1` after it.
    #[inline]
    pub(crate) fn slots(&self) -> core::ops::Range<u32> {
        self.slot..self.slot + self.ranks()
    }

    /// The identity generation of its rank `rank`: every rank is an identity
    /// of its own (a mask, a credit or a report names one rank).
    #[inline]
    pub(crate) fn generation_of(&self, rank: u32) -> u32 {
        self.generation.wrapping_add(rank)
    }

    /// The incarnation of its rank `rank` (see `SetView::incs`).
    #[inline]
    pub(crate) fn incarnation_of(&self, rank: u32) -> u32 {
        self.incarnation.wrapping_add(rank)
    }

    /// A fresh member of `slot`.
    pub(crate) fn new(slot: u32, generation: u32, incarnation: u32, info: WorkerInfo) -> Self {
        Self {
            slot,
            generation,
            incarnation,
            info,
            draining: false,
            ramp_from: None,
            weight: 1,
        }
    }
}

impl<W: Clone + Eq + Hash> Snapshot<W> {
    /// Builds a snapshot over `members` (in set order) for storage of
    /// `capacity` slots. Returns it with the writer's liveness handle.
    pub(crate) fn build(
        epoch: u64,
        departed_at: u64,
        capacity: usize,
        members: &[(&W, Member)],
        affinity: Option<Arc<Ring>>,
    ) -> (Self, Arc<Liveness>) {
        let len = padded(capacity);
        let mut excluded = vec![u32::MAX; len].into_boxed_slice();
        let mut gens = vec![0; len].into_boxed_slice();
        let mut incs = vec![0; len].into_boxed_slice();
        let mut info = vec![WorkerInfo::default(); len].into_boxed_slice();
        let mut index = HashMap::with_capacity(members.len());
        let mut keys: Box<[Option<W>]> = (0..len).map(|_| None).collect();
        let mut ranked = HashMap::new();
        for (key, m) in members {
            if m.ranks() == 1 {
                let s = m.slot as usize;
                if !m.draining {
                    excluded[s] = 0;
                }
                gens[s] = m.generation;
                incs[s] = m.incarnation;
                info[s] = m.info;
                index.insert((*key).clone(), m.slot);
                keys[s] = Some((*key).clone());
                continue;
            }
            for rank in 0..m.ranks() {
                let s = (m.slot + rank) as usize;
                if !m.draining {
                    excluded[s] = 0;
                }
                gens[s] = m.generation_of(rank);
                incs[s] = m.incarnation_of(rank);
                info[s] = m.info;
                keys[s] = Some((*key).clone());
            }
            ranked.insert((*key).clone(), m.slot);
        }
        // A set without ranks lists one slot per member, as it always did.
        let (candidates, weights, draining) = if ranked.is_empty() {
            let live = || members.iter().filter(|(_, m)| !m.draining);
            let candidates: Box<[u32]> = live().map(|(_, m)| m.slot).collect();
            let weights: Vec<u32> = live().map(|(_, m)| m.weight).collect();
            let draining: Box<[u32]> = members
                .iter()
                .filter(|(_, m)| m.draining)
                .map(|(_, m)| m.slot)
                .collect();
            (candidates, weights, draining)
        } else {
            let mut candidates = Vec::new();
            let mut weights = Vec::new();
            let mut draining = Vec::new();
            for (_, m) in members {
                if m.draining {
                    draining.extend(m.slots());
                } else {
                    candidates.extend(m.slots());
                    weights.extend(m.slots().map(|_| m.weight));
                }
            }
            (
                candidates.into_boxed_slice(),
                weights,
                draining.into_boxed_slice(),
            )
        };
        let liveness = Arc::new(Liveness {
            epoch,
            alive: AtomicU32::new(1),
        });
        let mut kinds = members
            .iter()
            .filter(|(_, m)| !m.draining)
            .map(|(_, m)| m.info.device_kind());
        let one_device_kind = kinds.next().is_none_or(|first| kinds.all(|k| k == first));
        let kinds = (!one_device_kind).then(|| KindLanes::build(len, members));
        let view = SetView {
            epoch,
            departed_at,
            remaps: Box::new(Remaps::new()),
            // Slots are distinct, so all below `len` means exactly `0..len`.
            dense: candidates.iter().all(|&slot| (slot as usize) < candidates.len()),
            weights: Weights::build(len, &candidates, &weights),
            affinity,
            members: candidates,
            draining,
            excluded,
            gens,
            incs,
            info,
            one_device_kind,
            kinds,
            liveness: liveness.clone(),
        };
        (
            Self {
                view,
                index,
                ranked,
                keys,
            },
            liveness,
        )
    }
}
