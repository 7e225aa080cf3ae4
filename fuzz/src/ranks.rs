//! Target `ranks`: an arbitrary sequence of operations on a `Pool<u8>` whose
//! workers have data-parallel ranks, replayed on a sequential model keyed by
//! `(worker, rank)`.
//!
//! The model holds the members (with their rank counts), the live guards as
//! `(worker, rank, weight)`, each rank's own reported load, the workers'
//! health and drain, the masks, and the storage: which slots each worker
//! holds, found by the plainest rule the pool documents (the lowest run of
//! free-or-new slots), and which removed workers still drain. After every
//! operation every rank's load, reported load and health, every guard's
//! worker and rank, and the storage counts equal the model's; every pick names
//! a candidate rank of a member the mask admits, a healthy one while one is,
//! and, where no control bends the rules, least-loaded's and round-robin's
//! exact choice.

use arbitrary::{Arbitrary, Unstructured};
use std::collections::{BTreeSet, HashMap, HashSet};
use workerpick::{
    CacheHits, Cost, Eligibility, Error, Handle, LeastLoaded, Pool, PowerOfTwo, Random, Request, Reservation,
    Rng, RoundRobin, Selector, WorkerInfo,
};

/// Workers are `0..KEYS`.
pub const KEYS: u8 = 6;
const HANDLES: usize = 2;
const MASKS: usize = 2;
const MAX_OPS: usize = 256;

/// One scenario.
#[derive(Arbitrary, Debug)]
pub struct Input {
    pub seed: u64,
    /// `Pool::with_max_workers(8 + limit % 24)`.
    pub limit: u8,
    pub ops: Vec<Op>,
}

/// One operation.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// `insert_with(key, ranks(1 + ranks % 4))`.
    Insert {
        key: u8,
        ranks: u8,
    },
    Remove(u8),
    /// `replace` with these keys (new ones get one rank).
    Replace(Vec<u8>),
    /// `set_info` with `1 + ranks % 4` ranks (refused unless it is the count).
    SetRanks {
        key: u8,
        ranks: u8,
    },
    /// `set_capacity(key, 1 + capacity % 3)`.
    SetCapacity {
        key: u8,
        capacity: u8,
    },
    Reclaim,
    /// Mask slot `slot % MASKS` from the current set, admitting worker `k`
    /// when bit `k` is set.
    BuildMask {
        slot: u8,
        admit: u8,
    },
    /// A pick: select, preview or reserve.
    Pick(Pick),
    /// `reserve_rank(key, rank % 5, weight % 4)`.
    ReserveRank {
        key: u8,
        rank: u8,
        weight: u8,
        handle: Option<u8>,
    },
    /// `reserve_worker(key, weight % 4)`: its least-loaded rank.
    ReserveWorker {
        key: u8,
        weight: u8,
    },
    /// Drops guard `index % guards`.
    Release(u8),
    /// `retarget` of guard `guard % guards` onto `key`.
    Retarget {
        guard: u8,
        key: u8,
    },
    /// `report_rank_load(key, rank % 5, load % 16)`.
    ReportRank {
        key: u8,
        rank: u8,
        load: u8,
    },
    /// `report_load(key, load % 16)`, spread over the ranks.
    Report {
        key: u8,
        load: u8,
    },
    SetHealthy {
        key: u8,
        healthy: bool,
    },
    Drain(u8),
    Resume(u8),
    /// Replaces a handle with a fresh one.
    RenewHandle(u8),
}

/// How a pick is made.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Pick {
    pub mode: Mode,
    pub kind: Kind,
    /// A handle, or the pool's own picks.
    pub handle: Option<u8>,
    /// A mask slot, or every candidate.
    pub mask: Option<u8>,
    /// Cache credit on one rank: `(key, rank % 5, 1 + n % 8)` of 8 needed.
    pub credit: Option<(u8, u8, u8)>,
    pub weight: u8,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Random,
    RoundRobin,
    PowerOfTwo,
    LeastLoaded,
    Cost,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Select,
    Preview,
    Reserve,
}

fn key(k: u8) -> u8 {
    k % KEYS
}

fn ranks(r: u8) -> u32 {
    1 + u32::from(r % 4)
}

/// A candidate as the model names it.
type Rank = (u8, u32);

#[derive(Clone, Debug)]
struct Member {
    key: u8,
    ranks: u32,
    first: u32,
    capacity: u32,
}

#[derive(Clone, Debug)]
struct Retired {
    ranks: u32,
    first: u32,
    removed_at: u64,
}

#[derive(Clone, Debug, Default)]
struct MaskModel {
    epoch: u64,
    entries: Vec<(u8, u64)>,
}

/// The sequential reference.
#[derive(Debug, Default)]
struct Model {
    members: Vec<Member>,
    retired: HashMap<u8, Retired>,
    identity: HashMap<u8, u64>,
    next_identity: u64,
    free: BTreeSet<u32>,
    capacity: u32,
    max: u32,
    epoch: u64,
    handle_epochs: [u64; HANDLES],
    guards: Vec<(u8, u32, u32)>,
    reported: HashMap<Rank, u32>,
    unhealthy: HashSet<u8>,
    draining: HashSet<u8>,
    masks: [Option<MaskModel>; MASKS],
}

impl Model {
    fn member(&self, k: u8) -> Option<&Member> {
        self.members.iter().find(|m| m.key == k)
    }

    fn booked(&self, (k, r): Rank) -> u32 {
        self.guards
            .iter()
            .filter(|&&(g, gr, _)| (g, gr) == (k, r))
            .map(|&(_, _, w)| w)
            .sum()
    }

    fn pins(&self, (k, r): Rank) -> usize {
        self.guards
            .iter()
            .filter(|&&(g, gr, w)| (g, gr) == (k, r) && w == 0)
            .count()
    }

    /// The load a pick compares: booked plus reported.
    fn effective(&self, rank: Rank) -> u32 {
        self.booked(rank) + self.reported.get(&rank).copied().unwrap_or(0)
    }

    fn publish(&mut self) {
        self.epoch += 1;
    }

    /// Whether the exact rules of least-loaded and round-robin hold: no
    /// health mark and every capacity 1.
    fn plain(&self) -> bool {
        self.unhealthy.is_empty() && self.members.iter().all(|m| m.capacity == 1)
    }

    fn reclaim(&mut self) -> usize {
        let oldest = self
            .handle_epochs
            .iter()
            .copied()
            .chain([self.epoch])
            .min()
            .unwrap_or(0);
        let quiet: Vec<u8> = self
            .retired
            .iter()
            .filter(|&(&k, r)| {
                r.removed_at <= oldest
                    && (0..r.ranks).all(|rank| self.booked((k, rank)) == 0 && self.pins((k, rank)) == 0)
            })
            .map(|(&k, _)| k)
            .collect();
        for k in &quiet {
            let r = self.retired.remove(k).expect("listed");
            self.free.extend(r.first..r.first + r.ranks);
            self.identity.remove(k);
        }
        quiet.len()
    }

    /// The lowest slot from which `len` slots are all free or new (the plain
    /// rule: try every start in order).
    fn lowest_run(&self, len: u32) -> u32 {
        (0..)
            .find(|&s| (s..s + len).all(|i| i >= self.capacity || self.free.contains(&i)))
            .expect("past the range every slot is new")
    }

    /// Takes `len` slots from `first` for a fresh identity of `k`.
    fn take(&mut self, k: u8, first: u32, len: u32) {
        for s in first..first + len {
            self.free.remove(&s);
        }
        self.capacity = self.capacity.max(first + len);
        self.identity.insert(k, self.next_identity);
        self.next_identity += 1;
    }

    fn insert(&mut self, k: u8, ranks: u32) -> Result<(), Error> {
        if self.member(k).is_some() {
            return Err(Error::DuplicateWorker);
        }
        if self.retired.get(&k).is_some_and(|r| r.ranks != ranks) {
            self.reclaim();
            if self.retired.contains_key(&k) {
                return Err(Error::InvalidConfig {
                    what: "worker ranks",
                    why: String::new(),
                });
            }
        }
        let first = if let Some(r) = self.retired.remove(&k) {
            r.first
        } else {
            let mut first = self.lowest_run(ranks);
            if first + ranks > self.capacity && self.reclaim() > 0 {
                first = self.lowest_run(ranks);
            }
            if first + ranks > self.max {
                return Err(Error::CapacityExceeded {
                    limit: self.max as usize,
                });
            }
            self.take(k, first, ranks);
            first
        };
        self.members.push(Member {
            key: k,
            ranks,
            first,
            capacity: 1,
        });
        self.publish();
        Ok(())
    }

    /// A member leaves: its reports, health and drain go; it drains.
    fn retire(&mut self, m: Member) {
        for r in 0..m.ranks {
            self.reported.remove(&(m.key, r));
        }
        self.unhealthy.remove(&m.key);
        self.draining.remove(&m.key);
        self.retired.insert(
            m.key,
            Retired {
                ranks: m.ranks,
                first: m.first,
                removed_at: self.epoch,
            },
        );
    }

    fn remove(&mut self, k: u8) -> Result<(), Error> {
        let i = self
            .members
            .iter()
            .position(|m| m.key == k)
            .ok_or(Error::UnknownWorker)?;
        let m = self.members.remove(i);
        self.publish();
        self.retire(m);
        self.reclaim();
        Ok(())
    }

    fn replace(&mut self, keys: &[u8]) -> Result<(), Error> {
        if (0..keys.len()).any(|i| keys[..i].contains(&keys[i])) {
            return Err(Error::DuplicateWorker);
        }
        // New keys take one slot each, lowest free first: reclaim while the
        // free list is short, as often as that frees something.
        loop {
            let fresh = keys
                .iter()
                .filter(|&&k| self.member(k).is_none() && !self.retired.contains_key(&k))
                .count() as u32;
            if fresh as usize <= self.free.len() {
                break;
            }
            if self.reclaim() > 0 {
                continue;
            }
            if fresh as usize > self.free.len() + (self.max - self.capacity) as usize {
                return Err(Error::CapacityExceeded {
                    limit: self.max as usize,
                });
            }
            break;
        }
        let old = std::mem::take(&mut self.members);
        for &k in keys {
            let member = match old.iter().find(|m| m.key == k) {
                Some(m) => m.clone(),
                None => match self.retired.remove(&k) {
                    Some(r) => Member {
                        key: k,
                        ranks: r.ranks,
                        first: r.first,
                        capacity: 1,
                    },
                    None => {
                        let first = self.lowest_run(1);
                        self.take(k, first, 1);
                        Member {
                            key: k,
                            ranks: 1,
                            first,
                            capacity: 1,
                        }
                    }
                },
            };
            self.members.push(member);
        }
        self.publish();
        for m in old {
            if !keys.contains(&m.key) {
                self.retire(m);
            }
        }
        self.reclaim();
        Ok(())
    }

    /// Every candidate rank through mask slot `mask`: in set order, or, for
    /// a mask built before the set last changed, in the mask's order (the
    /// set's then) among the workers it named that are still the same.
    fn candidates(&self, mask: Option<u8>) -> Result<Vec<Rank>, Error> {
        let order: Vec<u8> = match mask.map(|s| &self.masks[usize::from(s) % MASKS]) {
            None => self.members.iter().map(|m| m.key).collect(),
            Some(None) => Vec::new(),
            Some(Some(m)) if m.epoch == self.epoch => m.entries.iter().map(|&(k, _)| k).collect(),
            Some(Some(m)) => m
                .entries
                .iter()
                .filter(|&&(k, id)| self.identity.get(&k) == Some(&id))
                .map(|&(k, _)| k)
                .collect(),
        };
        let cands: Vec<Rank> = order
            .into_iter()
            .filter_map(|k| self.member(k))
            .filter(|m| !self.draining.contains(&m.key))
            .flat_map(|m| (0..m.ranks).map(move |r| (m.key, r)))
            .collect();
        if !cands.is_empty() {
            Ok(cands)
        } else if self.members.is_empty() {
            Err(Error::NoWorkers)
        } else if self.members.iter().all(|m| self.draining.contains(&m.key)) {
            Err(Error::AllDraining)
        } else {
            Err(Error::NoEligibleWorker)
        }
    }

    /// The rank a pinned booking on `k` lands on: its least-loaded rank as
    /// the counters read (the lowest on a tie).
    fn least_rank(&self, k: u8) -> Result<u32, Error> {
        let m = self.member(k).ok_or(Error::UnknownWorker)?;
        Ok((0..m.ranks).min_by_key(|&r| self.effective((k, r))).unwrap_or(0))
    }

    /// [`least_rank`](Self::least_rank), refused on a draining worker.
    fn pinned_rank(&self, k: u8) -> Result<u32, Error> {
        let rank = self.least_rank(k)?;
        if self.draining.contains(&k) {
            return Err(Error::Draining);
        }
        Ok(rank)
    }
}

struct Run<'p> {
    pool: &'p Pool<u8>,
    handles: Vec<Handle<'p, u8>>,
    guards: Vec<Reservation<'p, u8>>,
    masks: Vec<Eligibility>,
    round_robin: RoundRobin,
    model: Model,
    seed: u64,
    step: usize,
}

/// Decodes `data` as libFuzzer's `fuzz_target!` does and runs it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// Replays `input` on a pool and on the model, checking after every step.
pub fn run(input: Input) {
    fastrand::seed(input.seed);
    let max = 8 + u32::from(input.limit % 24);
    let pool = Pool::<u8>::with_max_workers(max as usize).expect("a limit in range");
    let mut run = Run {
        pool: &pool,
        handles: Vec::new(),
        guards: Vec::new(),
        masks: (0..MASKS).map(|_| Eligibility::new()).collect(),
        round_robin: RoundRobin::new(),
        model: Model {
            max,
            ..Model::default()
        },
        seed: input.seed,
        step: 0,
    };
    for h in 0..HANDLES {
        run.handles
            .push(pool.handle_with_rng(Rng::with_seed(input.seed ^ h as u64)));
    }
    for op in input.ops.iter().take(MAX_OPS) {
        run.step += 1;
        run.apply(op);
        run.check(op);
    }
    run.finish();
}

impl<'p> Run<'p> {
    fn handle(&mut self, h: u8) -> &mut Handle<'p, u8> {
        let h = usize::from(h) % HANDLES;
        self.model.handle_epochs[h] = self.model.epoch;
        &mut self.handles[h]
    }

    fn apply(&mut self, op: &Op) {
        let pool = self.pool;
        match *op {
            Op::Insert { key: k, ranks: r } => {
                let (k, r) = (key(k), ranks(r));
                let got = pool.insert_with(k, WorkerInfo::new().ranks(r));
                assert_same(
                    got,
                    self.model.insert(k, r),
                    &format!("insert {k} with {r} ranks"),
                );
            }
            Op::Remove(k) => {
                let k = key(k);
                assert_eq!(pool.remove(&k), self.model.remove(k), "remove {k}");
            }
            Op::Replace(ref keys) => {
                let keys: Vec<u8> = keys.iter().take(2 * KEYS as usize).map(|&k| key(k)).collect();
                assert_eq!(
                    pool.replace(keys.iter().copied()),
                    self.model.replace(&keys),
                    "replace {keys:?}"
                );
            }
            Op::SetRanks { key: k, ranks: r } => {
                let (k, r) = (key(k), ranks(r));
                let want = match self.model.member(k) {
                    None => Err(Error::UnknownWorker),
                    Some(m) if m.ranks != r => Err(Error::InvalidConfig {
                        what: "worker ranks",
                        why: String::new(),
                    }),
                    Some(_) => {
                        self.model
                            .members
                            .iter_mut()
                            .find(|m| m.key == k)
                            .expect("a member")
                            .capacity = 1;
                        self.model.publish();
                        Ok(())
                    }
                };
                assert_same(
                    pool.set_info(&k, WorkerInfo::new().ranks(r)),
                    want,
                    &format!("set_info {k}"),
                );
            }
            Op::SetCapacity { key: k, capacity } => {
                let (k, c) = (key(k), 1 + u32::from(capacity % 3));
                let want = match self.model.members.iter_mut().find(|m| m.key == k) {
                    None => Err(Error::UnknownWorker),
                    Some(m) => {
                        m.capacity = c;
                        self.model.publish();
                        Ok(())
                    }
                };
                assert_eq!(pool.set_capacity(&k, c), want, "set_capacity {k}");
            }
            Op::Reclaim => assert_eq!(pool.reclaim(), self.model.reclaim(), "reclaim"),
            Op::BuildMask { slot, admit } => {
                let s = usize::from(slot) % MASKS;
                self.masks[s] = pool.eligibility(|&k| admit & (1 << k) != 0);
                let m = &self.model;
                let entries: Vec<(u8, u64)> = m
                    .members
                    .iter()
                    .filter(|w| admit & (1 << w.key) != 0 && !m.draining.contains(&w.key))
                    .map(|w| (w.key, m.identity[&w.key]))
                    .collect();
                let len: u32 = entries
                    .iter()
                    .map(|&(k, _)| m.member(k).expect("a member").ranks)
                    .sum();
                assert_eq!(self.masks[s].len(), len as usize, "mask length counts ranks");
                self.model.masks[s] = Some(MaskModel {
                    epoch: m.epoch,
                    entries,
                });
            }
            Op::Pick(pick) => self.pick(pick),
            Op::ReserveRank {
                key: k,
                rank,
                weight,
                handle,
            } => {
                let (k, rank, w) = (key(k), u32::from(rank % 5), u32::from(weight % 4));
                let got = match handle {
                    None => pool.reserve_rank(&k, rank, w),
                    Some(h) => self.handle(h).reserve_rank(&k, rank, w),
                };
                let want = match self.model.member(k) {
                    None => Err(Error::UnknownWorker),
                    Some(m) if rank >= m.ranks => Err(Error::UnknownRank { rank, ranks: m.ranks }),
                    Some(_) if self.model.draining.contains(&k) => Err(Error::Draining),
                    Some(_) => Ok(()),
                };
                self.keep(got, want.map(|()| (k, rank, w)), "reserve_rank");
            }
            Op::ReserveWorker { key: k, weight } => {
                let (k, w) = (key(k), u32::from(weight % 4));
                let want = self.model.pinned_rank(k).map(|r| (k, r, w));
                self.keep(pool.reserve_worker(&k, w), want, "reserve_worker");
            }
            Op::Release(i) => {
                if !self.guards.is_empty() {
                    let i = usize::from(i) % self.guards.len();
                    drop(self.guards.remove(i));
                    self.model.guards.remove(i);
                }
            }
            Op::Retarget { guard, key: k } => {
                if self.guards.is_empty() {
                    return;
                }
                let (i, k) = (usize::from(guard) % self.guards.len(), key(k));
                let (from_k, from_r, w) = self.model.guards[i];
                // Onto the rank it holds already: nothing moves, drain or not.
                let want = match self.model.least_rank(k) {
                    Ok(r) if (k, r) == (from_k, from_r) => Ok(None),
                    _ => self.model.pinned_rank(k).map(Some),
                };
                let got = self.guards[i].retarget(&k);
                assert_eq!(got, want.clone().map(drop), "retarget to {k}");
                if let Ok(Some(r)) = want {
                    self.model.guards[i] = (k, r, w);
                }
            }
            Op::ReportRank { key: k, rank, load } => {
                let (k, rank, load) = (key(k), u32::from(rank % 5), u32::from(load % 16));
                let valid = self.model.member(k).is_some_and(|m| rank < m.ranks);
                assert_eq!(
                    pool.report_rank_load(&k, rank, load),
                    valid,
                    "report_rank_load {k} {rank}"
                );
                if valid {
                    self.model.reported.insert((k, rank), load);
                }
            }
            Op::Report { key: k, load } => {
                let (k, load) = (key(k), u32::from(load % 16));
                let ranks = self.model.member(k).map(|m| m.ranks);
                assert_eq!(pool.report_load(&k, load), ranks.is_some(), "report_load {k}");
                if let Some(n) = ranks {
                    for r in 0..n {
                        self.model
                            .reported
                            .insert((k, r), load / n + u32::from(r < load % n));
                    }
                }
            }
            Op::SetHealthy { key: k, healthy } => {
                let k = key(k);
                let want = match self.model.member(k) {
                    None => Err(Error::UnknownWorker),
                    Some(_) if healthy => Ok(!self.model.unhealthy.remove(&k)),
                    Some(_) => Ok(self.model.unhealthy.insert(k)),
                };
                assert_eq!(pool.set_healthy(&k, healthy), want, "set_healthy {k} {healthy}");
            }
            Op::Drain(k) | Op::Resume(k) => {
                let (k, drain) = (key(k), matches!(op, Op::Drain(_)));
                let want = if self.model.member(k).is_some() {
                    let changed = if drain {
                        self.model.draining.insert(k)
                    } else {
                        self.model.draining.remove(&k)
                    };
                    if changed {
                        self.model.publish();
                    }
                    Ok(())
                } else {
                    Err(Error::UnknownWorker)
                };
                let got = if drain { pool.drain(&k) } else { pool.resume(&k) };
                assert_eq!(got, want, "drain {k}: {drain}");
            }
            Op::RenewHandle(h) => {
                let h = usize::from(h) % HANDLES;
                self.handles[h] = pool.handle_with_rng(Rng::with_seed(self.seed ^ self.step as u64));
                self.model.handle_epochs[h] = self.model.epoch;
            }
        }
    }

    /// Keeps a pinned reservation, checked against the model's.
    fn keep(
        &mut self,
        got: Result<Reservation<'p, u8>, Error>,
        want: Result<(u8, u32, u32), Error>,
        what: &str,
    ) {
        match (got, want) {
            (Ok(r), Ok(g)) => {
                assert_eq!((*r.worker(), r.rank(), r.weight()), g, "{what}");
                self.guards.push(r);
                self.model.guards.push(g);
            }
            (got, want) => assert_eq!(got.map(|_| ()).err(), want.err(), "{what}"),
        }
    }

    fn pick(&mut self, pick: Pick) {
        let pool = self.pool;
        let weight = u32::from(pick.weight % 4);
        let mut hits = CacheHits::new();
        let credited = pick
            .credit
            .map(|(k, r, n)| (key(k), u32::from(r % 5), 1 + u32::from(n % 8)));
        if let Some((k, r, n)) = credited {
            hits.rebuild_sparse_ranked(pool, 8, [(&k, r, n)]);
            let held = self.model.member(k).is_some_and(|m| r < m.ranks);
            assert_eq!(
                hits.held_by_rank(pool, &k, r),
                if held { n } else { 0 },
                "credit {k} {r}"
            );
        }
        let mask = pick.mask.map(|s| &self.masks[usize::from(s) % MASKS]);
        let mut request = Request::new().weight(weight);
        if let Some(mask) = mask {
            request = request.eligible(mask);
        }
        if credited.is_some() {
            request = request.cache_hits(&hits);
        }
        let want = self.model.candidates(pick.mask);
        let cursor = self.round_robin.cursor();
        let (cost, random, p2c, ll) = (Cost::new(), Random::new(), PowerOfTwo::new(), LeastLoaded::new());
        let s: &dyn Selector = match pick.mode {
            Mode::Random => &random,
            Mode::RoundRobin => &self.round_robin,
            Mode::PowerOfTwo => &p2c,
            Mode::LeastLoaded => &ll,
            Mode::Cost => &cost,
        };
        let (got, guard): (Result<Rank, Error>, _) = match (pick.kind, pick.handle) {
            (Kind::Select, None) => (pool.select_ranked(s, &request), None),
            (Kind::Preview, None) => (pool.preview_ranked(s, &request), None),
            (Kind::Reserve, None) => split(pool.reserve_with(s, &request)),
            (kind, Some(h)) => {
                // Field by field: the mask and the cursor stay borrowed.
                let h = usize::from(h) % HANDLES;
                self.model.handle_epochs[h] = self.model.epoch;
                let h = &mut self.handles[h];
                match kind {
                    Kind::Select => (h.select_ranked(s, &request).map(|(w, r)| (*w, r)), None),
                    Kind::Preview => (h.preview_ranked(s, &request).map(|(w, r)| (*w, r)), None),
                    Kind::Reserve => split(h.reserve_with(s, &request)),
                }
            }
        };
        let ctx = format!("{pick:?}");
        let cands = match want {
            Err(e) => {
                assert_eq!(got, Err(e), "{ctx}");
                return;
            }
            Ok(cands) => cands,
        };
        let chosen = got.unwrap_or_else(|e| panic!("{ctx}: {e} with candidates {cands:?}"));
        assert!(
            cands.contains(&chosen),
            "{ctx}: {chosen:?} is not among {cands:?}"
        );
        let healthy: Vec<Rank> = cands
            .iter()
            .copied()
            .filter(|(k, _)| !self.model.unhealthy.contains(k))
            .collect();
        if !healthy.is_empty() {
            assert!(
                healthy.contains(&chosen),
                "{ctx}: unhealthy {chosen:?} over {healthy:?}"
            );
        }
        if self.model.plain() {
            let least = cands.iter().map(|&c| self.model.effective(c)).min();
            let exact_least =
                pick.mode == Mode::LeastLoaded || (pick.mode == Mode::Cost && credited.is_none());
            if exact_least {
                assert_eq!(
                    Some(self.model.effective(chosen)),
                    least,
                    "{ctx}: not the least loaded"
                );
            }
            if pick.mode == Mode::RoundRobin {
                assert_eq!(chosen, cands[cursor % cands.len()], "{ctx}: round-robin's ticket");
            }
        }
        if let Some(r) = guard {
            assert_eq!(
                (*r.worker(), r.rank(), r.weight()),
                (chosen.0, chosen.1, weight),
                "{ctx}"
            );
            self.guards.push(r);
            self.model.guards.push((chosen.0, chosen.1, weight));
        }
    }

    fn check(&self, op: &Op) {
        let (pool, m) = (self.pool, &self.model);
        let ctx = || format!("after step {} ({op:?})", self.step);
        let mut want: Vec<(u8, u32, u32)> = Vec::new();
        let (live, draining): (Vec<&Member>, Vec<&Member>) =
            m.members.iter().partition(|w| !m.draining.contains(&w.key));
        for w in live.into_iter().chain(draining) {
            want.extend((0..w.ranks).map(|r| (w.key, r, m.booked((w.key, r)))));
        }
        assert_eq!(pool.rank_loads(), want, "rank loads, {}", ctx());
        for k in 0..KEYS {
            let (ranks, member) = match (m.member(k), m.retired.get(&k)) {
                (Some(w), _) => (w.ranks, true),
                (None, Some(r)) => (r.ranks, false),
                (None, None) => (0, false),
            };
            let total: u32 = (0..ranks).map(|r| m.booked((k, r))).sum();
            let want = if member {
                Some(total)
            } else {
                Some(total).filter(|&t| t > 0)
            };
            assert_eq!(pool.in_flight(&k), want, "in_flight {k}, {}", ctx());
            assert_eq!(pool.contains(&k), member, "contains {k}, {}", ctx());
            if member {
                for r in 0..ranks {
                    let reported = m.reported.get(&(k, r)).copied().unwrap_or(0);
                    assert_eq!(
                        pool.reported_rank_load(&k, r),
                        Some(reported),
                        "reported {k}/{r}, {}",
                        ctx()
                    );
                    assert_eq!(
                        pool.in_flight_rank(&k, r),
                        Some(m.booked((k, r))),
                        "{k}/{r}, {}",
                        ctx()
                    );
                }
                assert_eq!(
                    pool.is_healthy(&k),
                    Some(!m.unhealthy.contains(&k)),
                    "health {k}, {}",
                    ctx()
                );
                assert_eq!(
                    pool.info(&k).map(|i| i.rank_count()),
                    Some(ranks),
                    "ranks {k}, {}",
                    ctx()
                );
            }
        }
        for (g, &want) in self.guards.iter().zip(&m.guards) {
            assert_eq!((*g.worker(), g.rank(), g.weight()), want, "guard, {}", ctx());
        }
        let s = pool.stats();
        let held = m
            .members
            .iter()
            .map(|w| w.ranks)
            .chain(m.retired.values().map(|r| r.ranks));
        let want = (
            m.members.len(),
            m.retired.len(),
            m.free.len(),
            m.capacity as usize,
            held.sum::<u32>() as usize,
        );
        assert_eq!(
            (s.workers, s.draining, s.free_slots, s.capacity, s.slots),
            want,
            "stats (workers, draining, free, capacity, slots), {}",
            ctx()
        );
    }

    /// Drops every guard and handle: every count is 0, and once reclaimed no
    /// removed worker remains and every slot is free or a member's.
    fn finish(mut self) {
        self.guards.clear();
        self.model.guards.clear();
        self.handles.clear();
        self.model.handle_epochs = [self.model.epoch; HANDLES];
        assert!(
            self.pool.rank_loads().iter().all(|&(_, _, l)| l == 0),
            "a count left after every guard"
        );
        self.pool.reclaim();
        self.model.reclaim();
        let s = self.pool.stats();
        assert_eq!(s.draining, 0, "a removed worker was never reclaimed: {s:?}");
        assert_eq!(s.capacity, s.slots + s.free_slots, "{s:?}");
    }
}

/// A reservation's `(worker, rank)` and the reservation itself.
fn split<'p>(r: Result<Reservation<'p, u8>, Error>) -> (Result<Rank, Error>, Option<Reservation<'p, u8>>) {
    match r {
        Ok(r) => (Ok((*r.worker(), r.rank())), Some(r)),
        Err(e) => (Err(e), None),
    }
}

/// Equal, but for the text of an `InvalidConfig`.
fn assert_same(got: Result<(), Error>, want: Result<(), Error>, what: &str) {
    match (&got, &want) {
        (Err(Error::InvalidConfig { what: a, .. }), Err(Error::InvalidConfig { what: b, .. })) => {
            assert_eq!(a, b, "{what}")
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}
