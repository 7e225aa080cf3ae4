//! [`Sessions`]: a session's requests go to the worker its first request
//! went to, while that worker is there and the session is not idle past its
//! TTL. See [`docs::affinity`](crate::docs::affinity) ("Session bindings").

use crate::affinity::binding::{self, Outcome, Target};
use crate::affinity::clock::Clock;
use crate::error::Error;
use crate::handle::Handle;
use crate::load::reports::{SessionBinding, Summary};
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::selectors::Selector;
use core::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

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
    target: Target,
    /// Milliseconds since the table's start, at the last request.
    used: AtomicU64,
}

/// The map's hasher: a session id xor a per-table random seed, through one
/// folded 64×64→128-bit multiply. std's SipHash cost ~7 ns of a ~100 ns
/// bound session; the seed keeps callers from choosing ids that collide
/// (the map's memory is bounded anyway: `max_sessions`).
#[derive(Clone)]
struct Seeded(u64);

impl BuildHasher for Seeded {
    type Hasher = Folded;

    fn build_hasher(&self) -> Folded {
        Folded(self.0)
    }
}

struct Folded(u64);

impl Hasher for Folded {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed (`write_u64`); this is for completeness.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        let p = u128::from(self.0 ^ x) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (p >> 64) as u64 ^ p as u64;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
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
/// request. Two first requests of one session at once both find it unbound
/// and both go through the selector, perhaps to two workers: the binding
/// that stays is the last written, and every later request follows it.
///
/// ```
/// use std::time::Duration;
/// use workerpick::sessions::{Sessions, Stickiness};
/// use workerpick::{Affinity, Error, Pool, Request};
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
    map: papaya::HashMap<u64, Binding, Seeded>,
    ttl_ms: u64,
    max: usize,
    stickiness: Stickiness,
    clock: Clock,
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

impl Sessions {
    /// A table of at most `max_sessions` bindings, each dropped after `ttl`
    /// without a request.
    pub fn new(ttl: Duration, max_sessions: usize, stickiness: Stickiness) -> Self {
        Self {
            map: papaya::HashMap::with_hasher(Seeded(fastrand::u64(..))),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            max: max_sessions,
            stickiness,
            clock: Clock::new(),
        }
    }

    #[inline]
    fn now(&self) -> u64 {
        self.clock.millis()
    }

    #[inline]
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
    #[inline(always)]
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
        self.reserve_in(&self.map.pin(), handle, selector, request)
    }

    /// Pins the table for a run of requests on this thread: each
    /// [`PinnedSessions::reserve`] then skips entering (and leaving) the
    /// map's epoch, which costs [`reserve`](Self::reserve) a locked exchange
    /// (~6 ns of a bound session's ~40 here). While a pin lives, bindings
    /// dropped by any thread are not freed: pin for a batch of requests, not
    /// for a thread's life, and never across an idle wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::sessions::{Sessions, Stickiness};
    /// use workerpick::{LeastLoaded, Pool, Request};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let sessions = Sessions::new(Duration::from_secs(300), 1000, Stickiness::Soft);
    /// let mut h = pool.handle();
    /// let batch = [7, 8, 7, 7];
    /// let pinned = sessions.pin();
    /// let served: Vec<_> = batch
    ///     .iter()
    ///     .map(|&s| pinned.reserve(&mut h, &LeastLoaded, &Request::new().key(s)).unwrap())
    ///     .collect();
    /// assert!(served[2].worker() == served[0].worker() && served[3].worker() == served[0].worker());
    /// ```
    pub fn pin(&self) -> PinnedSessions<'_> {
        PinnedSessions {
            sessions: self,
            map: self.map.pin(),
        }
    }

    #[inline(always)]
    fn reserve_in<'p, W, S, G: papaya::Guard>(
        &self,
        map: &papaya::HashMapRef<'_, u64, Binding, Seeded, G>,
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
        let now = self.now();
        let target = self.target_in(map, key, handle.pool().id(), now);
        let hard = self.stickiness == Stickiness::Hard;
        let mut outcome = Outcome::default();
        let picked = binding::reserve(handle, selector, request, target, hard, &mut outcome);
        if outcome.rebinds(target) {
            self.rebind(map, key, target, outcome, now, handle.pool());
        }
        picked
    }

    /// Where `key` is bound in pool `pool`, if its binding is live; marks
    /// it used.
    #[inline(always)]
    fn target_in<G: papaya::Guard>(
        &self,
        map: &papaya::HashMapRef<'_, u64, Binding, Seeded, G>,
        key: u64,
        pool: u64,
        now: u64,
    ) -> Option<Target> {
        match map.get(&key) {
            Some(b) if b.pool == pool && !self.expired(b, now) => {
                // A store only when the millisecond moved: hot sessions'
                // entries stay mostly read-shared.
                if b.used.load(Relaxed) != now {
                    b.used.store(now, Relaxed);
                }
                Some(b.target)
            }
            _ => None,
        }
    }

    /// Whether a binding's worker is the only one its session may use.
    pub(crate) fn is_hard(&self) -> bool {
        self.stickiness == Stickiness::Hard
    }

    /// Where `key` is bound in `pool`, for a booking made elsewhere (the
    /// admission queue's); marks the binding used.
    pub(crate) fn bound<W>(&self, key: u64, pool: &Pool<W>) -> Option<Target> {
        self.target_in(&self.map.pin(), key, pool.id(), self.now())
    }

    /// After a booking made elsewhere for `key`, bound at `target` when it
    /// began: drops a gone binding, binds to where it was booked.
    pub(crate) fn settle<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        key: u64,
        target: Option<Target>,
        outcome: Outcome,
        pool: &Pool<W>,
    ) {
        if outcome.rebinds(target) {
            self.rebind(&self.map.pin(), key, target, outcome, self.now(), pool);
        }
    }

    /// Drops the binding a pick found gone, and binds the session to the
    /// worker the pick chose instead. Out of line: a bound session's
    /// request, the hot path, does neither.
    #[cold]
    #[inline(never)]
    fn rebind<W: Clone + Eq + Hash + Send + Sync, G: papaya::Guard>(
        &self,
        map: &papaya::HashMapRef<'_, u64, Binding, Seeded, G>,
        key: u64,
        target: Option<Target>,
        outcome: Outcome,
        now: u64,
        pool: &Pool<W>,
    ) {
        if outcome.gone {
            // Only the binding this pick saw: another router thread may have
            // bound the session anew meanwhile.
            let _ = map.remove_if(&key, |_, b| b.pool == pool.id() && Some(b.target) == target);
        }
        // After a gone binding, the new one even where the pick went back to
        // the same worker (every candidate unhealthy, that one least loaded).
        if let Some(chosen) = outcome.chosen
            && (outcome.gone || Some(chosen) != target)
        {
            if map.len() >= self.max {
                self.sweep_with(map, now, pool);
            }
            if map.len() < self.max {
                map.insert(
                    key,
                    Binding {
                        pool: pool.id(),
                        target: chosen,
                        used: AtomicU64::new(now),
                    },
                );
            }
        }
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
        map: &papaya::HashMapRef<'_, u64, Binding, Seeded, G>,
        now: u64,
        pool: &Pool<W>,
    ) -> usize {
        let snap = pool.snapshot();
        let before = map.len();
        // Kept: fresh, and (if of this pool) on a worker still in it.
        map.retain(|_, b| !self.expired(b, now) && (b.pool != pool.id() || b.target.in_set(&snap).is_some()));
        before - map.len()
    }

    /// The live bindings of `pool`'s sessions, by worker, each with how long
    /// it has been idle: what a replica hands another so that both route a
    /// session alike ([`summary`](Self::summary) carries them in the
    /// replica summary).
    pub fn export<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> Vec<SessionBinding<W>> {
        let snap = pool.snapshot();
        let now = self.now();
        self.map
            .pin()
            .iter()
            .filter(|(_, b)| b.pool == pool.id() && !self.expired(b, now) && b.target.in_set(&snap).is_some())
            .map(|(&session, b)| SessionBinding {
                session,
                worker: snap.key(b.target.slot()).clone(),
                idle_ms: now.saturating_sub(b.used.load(Relaxed)),
            })
            .collect()
    }

    /// Binds each session to its worker in `pool` (as
    /// [`export`](Self::export) gave them), idle as long as it says: a
    /// binding expires here when it would have where it was made. A session
    /// already bound here to a worker still in `pool` keeps its binding if
    /// that one was used more recently (the binding used last wins, so
    /// replicas that exchange bindings both ways converge). Sessions whose worker is not in `pool`
    /// are skipped, and new ones once the table is full. Returns how many
    /// were bound.
    pub fn import<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &Pool<W>,
        bindings: impl IntoIterator<Item = SessionBinding<W>>,
    ) -> usize {
        let snap = pool.snapshot();
        let now = self.now();
        let map = self.map.pin();
        let mut n = 0;
        for binding in bindings {
            // A worker with ranks takes its sessions back on rank 0.
            let Some(slot) = snap.ranks_of(&binding.worker).map(|r| r.first) else {
                continue;
            };
            if binding.idle_ms > self.ttl_ms {
                continue;
            }
            let used = now.saturating_sub(binding.idle_ms);
            let target = Target::new(slot, snap.view.gens[slot as usize]);
            match map.get(&binding.session) {
                Some(b)
                    if b.pool == pool.id()
                        && !self.expired(b, now)
                        && b.target.in_set(&snap).is_some()
                        && b.used.load(Relaxed) >= used =>
                {
                    continue;
                }
                None if map.len() >= self.max => continue,
                _ => {}
            }
            map.insert(
                binding.session,
                Binding {
                    pool: pool.id(),
                    target,
                    used: AtomicU64::new(used),
                },
            );
            n += 1;
        }
        n
    }

    /// `pool`'s [`summary`](Pool::summary) with this table's live bindings
    /// of its sessions: one message that tells another replica both what
    /// this router has booked and where its sessions live.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::sessions::{Sessions, Stickiness};
    /// use workerpick::{Affinity, Pool, Request};
    /// let (a, b) = (Pool::from_workers(["w0", "w1", "w2"]).unwrap(), Pool::from_workers(["w0", "w1", "w2"]).unwrap());
    /// let (sa, sb) = (
    ///     Sessions::new(Duration::from_secs(60), 1000, Stickiness::Soft),
    ///     Sessions::new(Duration::from_secs(60), 1000, Stickiness::Soft),
    /// );
    /// // Session 7 binds on replica a, to whichever worker a's pick chose …
    /// let home = *sa.reserve(&mut a.handle(), &Affinity::new(), &Request::new().key(7)).unwrap().worker();
    /// // … and after a's summary, replica b sends it there too, however b's loads differ.
    /// let _busy = b.reserve_worker(&home, 5).unwrap();
    /// assert!(sb.apply_summary(&b, &sa.summary(&a)));
    /// let r = sb.reserve(&mut b.handle(), &Affinity::new(), &Request::new().key(7)).unwrap();
    /// assert_eq!(*r.worker(), home);
    /// ```
    pub fn summary<W: Clone + Eq + Hash + Send + Sync>(&self, pool: &Pool<W>) -> Summary<W> {
        let mut summary = pool.summary();
        summary.bindings = self.export(pool);
        summary
    }

    /// Applies another replica's summary to `pool`
    /// ([`Pool::apply_summary`]) and, when the pool took it (not this
    /// replica's own, not older than one applied before), imports its
    /// bindings ([`import`](Self::import)). Returns whether the pool took it.
    pub fn apply_summary<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &Pool<W>,
        summary: &Summary<W>,
    ) -> bool {
        if !pool.apply_summary(summary) {
            return false;
        }
        self.import(pool, summary.bindings.iter().cloned());
        true
    }
}

/// A [`Sessions`] table pinned for a run of requests on one thread
/// ([`Sessions::pin`]).
pub struct PinnedSessions<'s> {
    sessions: &'s Sessions,
    map: papaya::HashMapRef<'s, u64, Binding, Seeded, papaya::LocalGuard<'s>>,
}

impl core::fmt::Debug for PinnedSessions<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("PinnedSessions").field(self.sessions).finish()
    }
}

impl PinnedSessions<'_> {
    /// [`Sessions::reserve`], in the pinned table.
    #[inline(always)]
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
        self.sessions.reserve_in(&self.map, handle, selector, request)
    }
}
