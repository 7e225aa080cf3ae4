//! [`Sessions`]: a session's requests go to the worker its first request
//! went to, while that worker is there and the session is not idle past its
//! TTL. See [`docs::affinity`](crate::docs::affinity) ("Session bindings").

use crate::context::{Context, Slot};
use crate::error::Error;
use crate::handle::Handle;
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::selectors::{Choice, Selector};
use core::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// What a bound session's request does when its worker is gone (removed,
/// draining, unhealthy, or outside the request's mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stickiness {
    /// Fail with [`Error::SessionWorkerGone`] (once: the binding goes with
    /// its worker, and the session's next request binds anew).
    Hard,
    /// Take the selector's pick instead, and bind the session to it.
    Soft,
}

/// One binding: where, in which pool, and when last used.
struct Binding {
    pool: u64,
    /// The worker's slot and identity generation: a slot reused by another
    /// worker has another generation, so a binding never lands on it.
    slot: u32,
    generation: u32,
    /// Milliseconds since the table's start, at the last request.
    used: AtomicU64,
}

/// Session bindings with an idle TTL, in a lock-free hash map.
///
/// [`reserve`](Self::reserve) routes a request whose
/// [`key`](Request::key) is its session id: to the session's worker when it
/// has one (booked without a load check, as a pinned target is), else
/// through the selector, binding the session to the worker it picks.
/// Requests without a key are not bound.
///
/// Lookups are lock-free (`papaya`'s read path: an epoch pin and a probe,
/// no allocation). Binding a new session allocates its entry. The table
/// holds at most `max_sessions` bindings: when full, a new binding first
/// sweeps out the idle and orphaned ones, and if none was, the session is
/// routed unbound. A binding is good for one pool, the pool of its first
/// request.
///
/// ```
/// use std::time::Duration;
/// use workerpick::{Affinity, Error, Pool, Request, Sessions, Stickiness};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let sessions = Sessions::new(Duration::from_secs(300), 10_000, Stickiness::Hard);
/// let mut h = pool.handle();
/// let chat = Request::new().key(7);
/// let first = sessions.reserve(&mut h, &Affinity::new(), &chat).unwrap();
/// let home = *first.worker();
/// // Every later turn goes home, however loaded it is.
/// let turns: Vec<_> = (0..5).map(|_| sessions.reserve(&mut h, &Affinity::new(), &chat).unwrap()).collect();
/// assert!(turns.iter().all(|r| *r.worker() == home));
/// drop((first, turns));
/// pool.remove(&home).unwrap();
/// assert_eq!(sessions.reserve(&mut h, &Affinity::new(), &chat).err(), Some(Error::SessionWorkerGone));
/// ```
pub struct Sessions {
    map: papaya::HashMap<u64, Binding>,
    ttl_ms: u64,
    max: usize,
    stickiness: Stickiness,
    start: Instant,
}

impl core::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sessions")
            .field("bound", &self.map.len())
            .field("ttl_ms", &self.ttl_ms)
            .field("max", &self.max)
            .field("stickiness", &self.stickiness)
            .finish()
    }
}

/// The binding-aware pick: the bound slot if it is a healthy candidate,
/// else (soft) the inner selector's.
struct Bound<'s, S: ?Sized> {
    inner: &'s S,
    /// `(slot, generation)` the session is bound to, packed; `u64::MAX`: none.
    target: u64,
    /// The bound worker was not available (set by `choose`).
    gone: AtomicBool,
    /// The last slot and generation `choose` answered, packed.
    chosen: AtomicU64,
    /// Fail, rather than fall back, when the bound worker is gone.
    hard: bool,
}

fn pack(slot: u32, generation: u32) -> u64 {
    (u64::from(slot) << 32) | u64::from(generation)
}

impl<S: Selector + ?Sized> Selector for Bound<'_, S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        if self.target != u64::MAX {
            let (slot, generation) = ((self.target >> 32) as u32, self.target as u32);
            let live = cx.set.is_member(slot) && cx.set.gens.get(slot as usize) == Some(&generation);
            if live
                && let Some(s) = crate::affinity::admitted(cx, slot)
                && cx.is_healthy(s)
            {
                self.chosen.store(self.target, Relaxed);
                return Some(Choice::unvalidated(s));
            }
            self.gone.store(true, Relaxed);
            if self.hard {
                return None;
            }
        }
        let choice = self.inner.choose(cx)?;
        let slot: Slot<'a> = choice.slot();
        let generation = cx.set.gens.get(slot.index() as usize).copied().unwrap_or(0);
        self.chosen.store(pack(slot.index(), generation), Relaxed);
        Some(choice)
    }
}

impl Sessions {
    /// A table of at most `max_sessions` bindings, each dropped after `ttl`
    /// without a request.
    pub fn new(ttl: Duration, max_sessions: usize, stickiness: Stickiness) -> Self {
        Self {
            map: papaya::HashMap::new(),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            max: max_sessions,
            stickiness,
            start: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn expired(&self, b: &Binding, now: u64) -> bool {
        now.saturating_sub(b.used.load(Relaxed)) > self.ttl_ms
    }

    /// How many bindings the table holds (expired ones included until swept).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the table holds no binding.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Books `request` on its session's worker, or through `selector` (see
    /// [`Sessions`]). Fails with [`Error::SessionWorkerGone`] when the
    /// stickiness is [`Hard`](Stickiness::Hard) and the bound worker is not
    /// available; otherwise as the selector's reservation fails.
    pub fn reserve<'p, W, S>(
        &self,
        handle: &mut Handle<'p, W>,
        selector: &S,
        request: &Request<'_>,
    ) -> Result<Reservation<'p, W>, Error>
    where
        W: Clone + Eq + Hash + Send + Sync,
        S: Selector + ?Sized,
    {
        let Some(key) = request.get_key() else {
            return handle.reserve_with(selector, request);
        };
        let pool = handle.pool().id;
        let now = self.now();
        let map = self.map.pin();
        let target = match map.get(&key) {
            Some(b) if b.pool == pool && !self.expired(b, now) => {
                // A store only when the millisecond moved: hot sessions'
                // entries stay mostly read-shared.
                if b.used.load(Relaxed) != now {
                    b.used.store(now, Relaxed);
                }
                pack(b.slot, b.generation)
            }
            _ => u64::MAX,
        };
        let bound = Bound {
            inner: selector,
            target,
            gone: AtomicBool::new(false),
            chosen: AtomicU64::new(u64::MAX),
            hard: self.stickiness == Stickiness::Hard,
        };
        let picked = handle.reserve_with(&bound, request);
        if bound.gone.load(Relaxed) {
            map.remove(&key);
            if bound.hard {
                return Err(Error::SessionWorkerGone);
            }
        }
        let r = picked?;
        let chosen = bound.chosen.load(Relaxed);
        if chosen != target && chosen != u64::MAX {
            if map.len() >= self.max {
                self.sweep_with(&map, now, handle.pool());
            }
            if map.len() < self.max {
                map.insert(
                    key,
                    Binding {
                        pool,
                        slot: (chosen >> 32) as u32,
                        generation: chosen as u32,
                        used: AtomicU64::new(now),
                    },
                );
            }
        }
        Ok(r)
    }

    /// Drops `session`'s binding; returns whether it had one.
    pub fn unbind(&self, session: u64) -> bool {
        self.map.pin().remove(&session).is_some()
    }

    /// Drops every binding idle past the TTL or whose worker left `pool`;
    /// returns how many. [`reserve`](Self::reserve) does this when the table
    /// is full; call it from a timer to keep the table small.
    pub fn sweep<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> usize {
        self.sweep_with(&self.map.pin(), self.now(), pool)
    }

    fn sweep_with<W: Clone + Eq + Hash + Send + Sync, G: papaya::Guard>(
        &self,
        map: &papaya::HashMapRef<'_, u64, Binding, std::hash::RandomState, G>,
        now: u64,
        pool: &Pool<W>,
    ) -> usize {
        let snap = pool.snapshot();
        let before = map.len();
        map.retain(|_, b| {
            !self.expired(b, now)
                && !(b.pool == pool.id
                    && !(snap.holds(b.slot) && snap.view.gens.get(b.slot as usize) == Some(&b.generation)))
        });
        before - map.len()
    }

    /// The live bindings of `pool`'s sessions, by worker: what a replica
    /// hands another so that both route a session alike.
    pub fn export<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> Vec<(u64, W)> {
        let snap = pool.snapshot();
        let now = self.now();
        self.map
            .pin()
            .iter()
            .filter(|(_, b)| b.pool == pool.id && !self.expired(b, now))
            .filter(|(_, b)| snap.holds(b.slot) && snap.view.gens.get(b.slot as usize) == Some(&b.generation))
            .map(|(&k, b)| (k, snap.key(b.slot).clone()))
            .collect()
    }

    /// Binds each session to its worker in `pool` (as
    /// [`export`](Self::export) gave them), fresh for a full TTL; sessions
    /// whose worker is not in `pool` are skipped. Returns how many were bound.
    pub fn import<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &Pool<W>,
        bindings: impl IntoIterator<Item = (u64, W)>,
    ) -> usize {
        let snap = pool.snapshot();
        let now = self.now();
        let map = self.map.pin();
        let mut n = 0;
        for (session, worker) in bindings {
            // A worker with ranks takes its sessions back on rank 0.
            let Some(slot) = snap.ranks_of(&worker).map(|r| r.first) else {
                continue;
            };
            if map.len() >= self.max && map.get(&session).is_none() {
                break;
            }
            map.insert(
                session,
                Binding {
                    pool: pool.id,
                    slot,
                    generation: snap.view.gens[slot as usize],
                    used: AtomicU64::new(now),
                },
            );
            n += 1;
        }
        n
    }
}
