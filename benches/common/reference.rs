//! The lock-based design `workerpick` replaces, kept in bench code
//! so every group measures it beside ours in the same run.
//!
//! What makes it "the reference" and not a strawman:
//! - per-worker atomic counters in a `DashMap` keyed by worker;
//! - ONE admission mutex, taken around pick + increment and around release
//!   (this is what makes its least-loaded exact, and what stops it scaling);
//! - the mode is a boxed plugin (`&dyn Policy`) that reads each load through a
//!   closure (`&dyn Fn(&W) -> u32`, a `DashMap` lookup per worker);
//! - least-loaded breaks ties by reservoir sampling (one draw per tie).
//!
//! It is not made artificially slow: the random source and the round-robin
//! cursor live under the mutex it already holds, and the masked path reuses a
//! scratch buffer, so it allocates nothing per pick either once warm.

use dashmap::DashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A per-request filter, as the reference receives it: a closure.
pub type Filter<'a, W> = &'a (dyn Fn(&W) -> bool + Sync);

/// What a policy sees while the admission mutex is held.
pub struct Pick<'a, W> {
    workers: &'a [W],
    /// Indices into `workers` when a filter narrowed them.
    narrowed: Option<&'a [u32]>,
    load: &'a dyn Fn(&W) -> u32,
    pub rng: &'a mut fastrand::Rng,
    pub cursor: &'a mut usize,
    pub preview: bool,
}

impl<W> Pick<'_, W> {
    pub fn len(&self) -> usize {
        self.narrowed.map_or(self.workers.len(), <[u32]>::len)
    }

    pub fn worker(&self, i: usize) -> &W {
        match self.narrowed {
            None => &self.workers[i],
            Some(idx) => &self.workers[idx[i] as usize],
        }
    }

    pub fn load(&self, i: usize) -> u32 {
        (self.load)(self.worker(i))
    }
}

/// A mode plugin: returns the index of the chosen candidate.
pub trait Policy<W>: Send + Sync {
    fn pick(&self, cx: &mut Pick<'_, W>) -> Option<usize>;
}

pub struct RefRandom;
pub struct RefRoundRobin;
pub struct RefPowerOfTwo;
pub struct RefLeastLoaded;

impl<W> Policy<W> for RefRandom {
    fn pick(&self, cx: &mut Pick<'_, W>) -> Option<usize> {
        let n = cx.len();
        (n > 0).then(|| cx.rng.usize(..n))
    }
}

impl<W> Policy<W> for RefRoundRobin {
    fn pick(&self, cx: &mut Pick<'_, W>) -> Option<usize> {
        let n = cx.len();
        if n == 0 {
            return None;
        }
        let i = *cx.cursor % n;
        if !cx.preview {
            *cx.cursor = cx.cursor.wrapping_add(1);
        }
        Some(i)
    }
}

impl<W> Policy<W> for RefPowerOfTwo {
    fn pick(&self, cx: &mut Pick<'_, W>) -> Option<usize> {
        let n = cx.len();
        if n < 2 {
            return (n == 1).then_some(0);
        }
        let a = cx.rng.usize(..n);
        let b = (a + 1 + cx.rng.usize(..n - 1)) % n;
        Some(if cx.load(a) <= cx.load(b) { a } else { b })
    }
}

impl<W> Policy<W> for RefLeastLoaded {
    fn pick(&self, cx: &mut Pick<'_, W>) -> Option<usize> {
        let mut best = None;
        let mut min = u32::MAX;
        let mut ties = 0usize;
        for i in 0..cx.len() {
            let v = cx.load(i);
            if best.is_none() || v < min {
                (best, min, ties) = (Some(i), v, 1);
            } else if v == min {
                // Reservoir sampling: the k-th tie replaces the choice with
                // probability 1/k, so every tie ends up equally likely.
                ties += 1;
                if cx.rng.usize(..ties) == 0 {
                    best = Some(i);
                }
            }
        }
        best
    }
}

/// Everything the admission mutex guards.
struct Admission<W> {
    workers: Vec<W>,
    rng: fastrand::Rng,
    cursor: usize,
    scratch: Vec<u32>,
}

/// The lock-based pool.
pub struct Reference<W> {
    counters: DashMap<W, AtomicU32>,
    admission: Mutex<Admission<W>>,
}

/// A booking on the reference pool; released under the admission mutex.
pub struct RefReservation<'a, W: Eq + Hash> {
    pool: &'a Reference<W>,
    worker: W,
}

impl<W: Clone + Eq + Hash + Send + Sync> Reference<W> {
    pub fn new(workers: impl IntoIterator<Item = W>, seed: u64) -> Self {
        let workers: Vec<W> = workers.into_iter().collect();
        let counters = workers.iter().map(|w| (w.clone(), AtomicU32::new(0))).collect();
        let scratch = Vec::with_capacity(workers.len());
        Self {
            counters,
            admission: Mutex::new(Admission {
                workers,
                rng: fastrand::Rng::with_seed(seed),
                cursor: 0,
                scratch,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Admission<W>> {
        self.admission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn load_of(&self, w: &W) -> u32 {
        self.counters.get(w).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Runs `policy` under the held mutex; books one unit on the choice when
    /// `charge` (still under the mutex).
    fn admit(
        &self,
        a: &mut Admission<W>,
        policy: &dyn Policy<W>,
        filter: Option<Filter<'_, W>>,
        charge: bool,
        preview: bool,
    ) -> Option<W> {
        let Admission {
            workers,
            rng,
            cursor,
            scratch,
        } = a;
        let narrowed = filter.map(|keep| {
            scratch.clear();
            scratch.extend((0..workers.len() as u32).filter(|&i| keep(&workers[i as usize])));
            &scratch[..]
        });
        let load = |w: &W| self.load_of(w);
        let mut cx = Pick {
            workers,
            narrowed,
            load: &load,
            rng,
            cursor,
            preview,
        };
        let i = policy.pick(&mut cx)?;
        let w = cx.worker(i).clone();
        if charge && let Some(c) = self.counters.get(&w) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        Some(w)
    }

    pub fn select(&self, policy: &dyn Policy<W>, filter: Option<Filter<'_, W>>) -> Option<W> {
        self.admit(&mut self.lock(), policy, filter, false, false)
    }

    pub fn preview(&self, policy: &dyn Policy<W>, filter: Option<Filter<'_, W>>) -> Option<W> {
        self.admit(&mut self.lock(), policy, filter, false, true)
    }

    pub fn reserve(
        &self,
        policy: &dyn Policy<W>,
        filter: Option<Filter<'_, W>>,
    ) -> Option<RefReservation<'_, W>> {
        let worker = self.admit(&mut self.lock(), policy, filter, true, false)?;
        Some(RefReservation { pool: self, worker })
    }

    pub fn in_flight(&self, w: &W) -> u32 {
        self.load_of(w)
    }
}

impl<W: Eq + Hash> RefReservation<'_, W> {
    pub fn worker(&self) -> &W {
        &self.worker
    }
}

impl<W: Eq + Hash> Drop for RefReservation<'_, W> {
    fn drop(&mut self) {
        let _held = self
            .pool
            .admission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = self.pool.counters.get(&self.worker) {
            c.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
