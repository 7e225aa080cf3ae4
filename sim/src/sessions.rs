//! Multi-turn sessions over a fleet with KV caches: what affinity buys.
//!
//! Each session sends turns one after another (a think time after each
//! answer); its prompt is the whole conversation so far, so a worker that
//! still holds the session's context prefills only the new turn. A few hot
//! sessions run many agents at once under one session key (the load that
//! overloads plain hashing). Every request books one unit on the worker the
//! mode picks, keyed by its session, and holds it until its answer is done.
//!
//! A discrete-event run on one thread with seeded draws: the same
//! configuration gives the same numbers on any machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;
use workerpick::{
    Affinity, CacheHits, Cost, LeastLoaded, Pool, PowerOfTwo, Request, Reservation, Rng, RoundRobin,
    Selector, Stickiness,
};

/// The scenario.
#[derive(Clone, Debug)]
pub struct Sessions {
    /// Workers in the fleet.
    pub workers: u32,
    /// Requests a worker serves at once; more wait in its queue.
    pub slots: usize,
    /// Sessions' contexts a worker's KV cache holds (least recently used out).
    pub cache_sessions: usize,
    /// Ordinary sessions (one request at a time each).
    pub sessions: u32,
    /// Hot sessions, and the agents each runs at once under its key.
    pub hot: (u32, u32),
    /// Turns per flow (a session or an agent).
    pub turns: u32,
    /// Tokens of the first prompt, and tokens each turn adds.
    pub tokens: (u32, u32),
    /// Prefill µs per uncached token, decode µs per request.
    pub cost_us: (u64, u64),
    /// Mean think time between turns, µs.
    pub think_us: u64,
    /// Seeds every draw.
    pub seed: u64,
}

impl Default for Sessions {
    fn default() -> Self {
        Self {
            workers: 16,
            slots: 4,
            cache_sessions: 24,
            sessions: 240,
            hot: (3, 32),
            turns: 8,
            tokens: (2000, 400),
            cost_us: (20, 40_000),
            think_us: 300_000,
            seed: 42,
        }
    }
}

/// What one mode did.
#[derive(Clone, Debug)]
pub struct SessionRun {
    /// The mode, as the table names it.
    pub mode: String,
    /// The affinity balance factor in percent, when the mode has one.
    pub balance_factor: Option<u32>,
    /// Requests served.
    pub requests: usize,
    /// Share of requests whose session context the chosen worker held.
    pub hit_rate: f64,
    /// Time to first token (queueing + prefill), ms.
    pub ttft_p50_ms: f64,
    /// Its 99th percentile, ms.
    pub ttft_p99_ms: f64,
    /// The most requests any worker held at once.
    pub peak_load: u32,
    /// Bookings that left a worker above `⌈f/100 · total / n⌉ + 1` (bounded
    /// affinity only; must be 0).
    pub over_bound: usize,
}

/// One row of the table: a mode, its balance factor when it has one, and
/// whether its requests go through session bindings (`Sessions`, soft) first.
pub struct Mode {
    /// As the table names it.
    pub name: String,
    /// The affinity balance factor in percent, when the mode has one.
    pub balance_factor: Option<u32>,
    /// What picks (a new session's first worker, when bound).
    pub selector: Arc<dyn Selector>,
    /// Whether a session's requests go to the worker its first one went to.
    pub bound: bool,
}

/// The modes compared: bounded affinity at ε = 0.25 and 1, plain consistent
/// hashing, the load-only modes, the cost mode (load less cache credit:
/// the request's cache hits name the workers holding its session's
/// context), and session bindings over bounded affinity.
pub fn modes() -> Vec<Mode> {
    let mode = |name: &str, balance_factor, selector: Arc<dyn Selector>, bound| Mode {
        name: name.into(),
        balance_factor,
        selector,
        bound,
    };
    vec![
        mode("affinity ε=0.25", Some(125), Arc::new(Affinity::new()), false),
        mode(
            "affinity ε=1",
            Some(200),
            Arc::new(Affinity::with_balance_factor(200).expect("valid")),
            false,
        ),
        mode(
            "hashing (unbounded)",
            None,
            Arc::new(Affinity::unbounded()),
            false,
        ),
        mode("round-robin", None, Arc::new(RoundRobin::new()), false),
        mode("least-loaded", None, Arc::new(LeastLoaded), false),
        mode("power-of-two", None, Arc::new(PowerOfTwo), false),
        mode("cost", None, Arc::new(Cost::new()), false),
        mode("sessions + ε=0.25", None, Arc::new(Affinity::new()), true),
    ]
}

/// One flow's next turn, in the event queue.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A flow sends turn `turn` of session `session`.
    Arrive { flow: u32, session: u32, turn: u32 },
    /// Request `id` on `worker` is done.
    Done { id: usize, worker: u32 },
}

/// A worker's KV cache: the contexts of the sessions it served last.
struct Cache {
    held: Vec<(u32, u64)>,
    cap: usize,
}

impl Cache {
    fn holds(&self, session: u32) -> bool {
        self.held.iter().any(|&(s, _)| s == session)
    }

    fn touch(&mut self, session: u32, now: u64) {
        if let Some(e) = self.held.iter_mut().find(|(s, _)| *s == session) {
            e.1 = now;
        } else if self.held.len() < self.cap {
            self.held.push((session, now));
        } else if let Some(lru) = self.held.iter_mut().min_by_key(|(_, t)| *t) {
            *lru = (session, now);
        }
    }
}

struct Worker {
    busy: usize,
    queue: std::collections::VecDeque<(usize, u64, u64)>,
    cache: Cache,
}

impl Sessions {
    /// Runs every mode of [`modes`].
    pub fn run(&self) -> Vec<SessionRun> {
        modes().iter().map(|m| self.run_one(m)).collect()
    }

    /// Runs one mode.
    pub fn run_one(&self, m: &Mode) -> SessionRun {
        let (selector, balance_factor) = (&*m.selector, m.balance_factor);
        let pool = Pool::from_workers(0..self.workers).expect("fleet fits");
        pool.enable_affinity();
        // Sessions never idle past an hour here: bindings last the run.
        let sessions = workerpick::Sessions::new(Duration::from_secs(3600), 1 << 16, Stickiness::Soft);
        let mut credit = CacheHits::new();
        let mut h = pool.handle_with_rng(Rng::with_seed(self.seed));
        let mut rng = Rng::with_seed(self.seed ^ 0x5e55);
        let mut workers: Vec<Worker> = (0..self.workers)
            .map(|_| Worker {
                busy: 0,
                queue: Default::default(),
                cache: Cache {
                    held: Vec::new(),
                    cap: self.cache_sessions,
                },
            })
            .collect();
        let mut events = BinaryHeap::new();
        let mut seq = 0u64;
        let mut push = |events: &mut BinaryHeap<_>, at: u64, e: Event| {
            seq += 1;
            events.push(Reverse((at, seq, e)));
        };
        let mut flow = 0;
        for s in 0..self.sessions {
            let at = rng.below(self.think_us as u32 * 2) as u64;
            push(
                &mut events,
                at,
                Event::Arrive {
                    flow,
                    session: s,
                    turn: 0,
                },
            );
            flow += 1;
        }
        for hs in 0..self.hot.0 {
            for _ in 0..self.hot.1 {
                let at = rng.below(self.think_us as u32 * 2) as u64;
                let session = self.sessions + hs;
                push(
                    &mut events,
                    at,
                    Event::Arrive {
                        flow,
                        session,
                        turn: 0,
                    },
                );
                flow += 1;
            }
        }
        let mut held: Vec<Option<(Reservation<'_, u32>, u32, u32)>> = Vec::new();
        let (mut hits, mut ttft, mut peak, mut over) = (0usize, Vec::new(), 0u32, 0usize);
        while let Some(Reverse((now, _, e))) = events.pop() {
            match e {
                Event::Arrive { flow, session, turn } => {
                    // The cost mode's credit (α = 1 against a load of one per
                    // request): a worker holding the session's context is
                    // worth its slots of load, one full set of requests
                    // served at once before a queue forms (a hit saves a
                    // whole context's prefill, about one request's service).
                    let worth = self.slots as u32;
                    credit.rebuild(&pool, worth, |&w| {
                        if workers[w as usize].cache.holds(session) {
                            worth
                        } else {
                            0
                        }
                    });
                    let req = Request::new().key(u64::from(session)).cache_hits(&credit);
                    let r = if m.bound {
                        sessions.reserve(&mut h, selector, &req)
                    } else {
                        h.reserve_with(selector, &req)
                    }
                    .expect("a worker");
                    let w = *r.worker();
                    let loads = pool.loads();
                    let load = pool.in_flight(&w).unwrap_or(0);
                    peak = peak.max(load);
                    if let Some(f) = balance_factor {
                        let total: u64 = loads.iter().map(|&(_, l)| u64::from(l)).sum();
                        let bound = (u64::from(f) * total).div_ceil(100 * u64::from(self.workers)) + 1;
                        over += usize::from(u64::from(load) > bound);
                    }
                    let wk = &mut workers[w as usize];
                    let context = u64::from(self.tokens.0 + turn * self.tokens.1);
                    let uncached = if wk.cache.holds(session) {
                        hits += 1;
                        u64::from(self.tokens.1)
                    } else {
                        context
                    };
                    wk.cache.touch(session, now);
                    let prefill = uncached * self.cost_us.0;
                    let id = held.len();
                    held.push(Some((r, flow, session * 1024 + turn)));
                    if wk.busy < self.slots {
                        wk.busy += 1;
                        ttft.push(prefill);
                        push(
                            &mut events,
                            now + prefill + self.cost_us.1,
                            Event::Done { id, worker: w },
                        );
                    } else {
                        wk.queue.push_back((id, now, prefill));
                    }
                }
                Event::Done { id, worker } => {
                    let (r, flow, tag) = held[id].take().expect("done once");
                    drop(r);
                    let (session, turn) = (tag / 1024, tag % 1024);
                    let wk = &mut workers[worker as usize];
                    if let Some((next, arrived, prefill)) = wk.queue.pop_front() {
                        ttft.push(now - arrived + prefill);
                        push(
                            &mut events,
                            now + prefill + self.cost_us.1,
                            Event::Done { id: next, worker },
                        );
                    } else {
                        wk.busy -= 1;
                    }
                    if turn + 1 < self.turns {
                        let think = rng.below(self.think_us as u32 * 2) as u64;
                        push(
                            &mut events,
                            now + think,
                            Event::Arrive {
                                flow,
                                session,
                                turn: turn + 1,
                            },
                        );
                    }
                }
            }
        }
        ttft.sort_unstable();
        let pct = |p: f64| ttft[((ttft.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0;
        SessionRun {
            mode: m.name.clone(),
            balance_factor,
            requests: ttft.len(),
            hit_rate: hits as f64 / ttft.len() as f64,
            ttft_p50_ms: pct(0.5),
            ttft_p99_ms: pct(0.99),
            peak_load: peak,
            over_bound: over,
        }
    }
}

/// Keys moved by a membership change of an affinity pool.
#[derive(Clone, Copy, Debug)]
pub struct Disruption {
    /// Workers before the change.
    pub workers: u32,
    /// Share of keys that moved when one worker left.
    pub removed_moved: f64,
    /// The removed worker's share of the keys before (the least that must move).
    pub removed_share: f64,
    /// Keys that moved between workers that stayed (must be 0).
    pub collateral: usize,
    /// Share of keys that moved when one worker joined (ideal: 1/(n+1)).
    pub added_moved: f64,
    /// The same removal under `key mod n` hashing, for contrast.
    pub modulo_moved: f64,
}

/// Removes one of `workers` workers and adds one, over `keys` keys.
pub fn disruption(workers: u32, keys: u64) -> Disruption {
    let pool = Pool::from_workers(0..workers).expect("fleet fits");
    pool.enable_affinity();
    let mode = Affinity::unbounded();
    let homes = |pool: &Pool<u32>| -> Vec<u32> {
        (0..keys)
            .map(|k| {
                pool.preview_with(&mode, &Request::new().key(k))
                    .expect("a worker")
            })
            .collect()
    };
    let before = homes(&pool);
    let gone = workers / 2;
    pool.remove(&gone).expect("a member");
    let after = homes(&pool);
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    let collateral = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| **b != gone && b != a)
        .count();
    let share = before.iter().filter(|&&b| b == gone).count();
    pool.insert(gone).expect("not a member");
    pool.insert(workers).expect("not a member");
    let grown = homes(&pool);
    let added = before.iter().zip(&grown).filter(|(b, a)| b != a).count();
    let n = u64::from(workers);
    let modulo = (0..keys).filter(|k| k % n != k % (n - 1)).count();
    let k = keys as f64;
    Disruption {
        workers,
        removed_moved: moved as f64 / k,
        removed_share: share as f64 / k,
        collateral,
        added_moved: added as f64 / k,
        modulo_moved: modulo as f64 / k,
    }
}

/// The scenario's table.
pub fn render(s: &Sessions, runs: &[SessionRun], d: &Disruption) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nMulti-turn sessions: {} workers × {} slots, KV cache of {} sessions each; {} sessions + {} hot × {} agents, {} turns",
        s.workers, s.slots, s.cache_sessions, s.sessions, s.hot.0, s.hot.1, s.turns
    );
    let _ = writeln!(
        out,
        "{:<22} {:>8} {:>9} {:>9} {:>10} {:>10}",
        "mode", "hit rate", "TTFT p50", "TTFT p99", "peak load", "over bound"
    );
    for r in runs {
        let over = r
            .balance_factor
            .map_or("-".to_owned(), |_| r.over_bound.to_string());
        let _ = writeln!(
            out,
            "{:<22} {:>7.1}% {:>6.1} ms {:>6.1} ms {:>10} {:>10}",
            r.mode,
            100.0 * r.hit_rate,
            r.ttft_p50_ms,
            r.ttft_p99_ms,
            r.peak_load,
            over
        );
    }
    let _ = writeln!(
        out,
        "Affinity disruption over {} workers: one removed moves {:.2}% of keys (its own share {:.2}%, {} others'), one added moves {:.2}% (1/(n+1) = {:.2}%); key mod n moves {:.1}%",
        d.workers,
        100.0 * d.removed_moved,
        100.0 * d.removed_share,
        d.collateral,
        100.0 * d.added_moved,
        100.0 / f64::from(d.workers + 1),
        100.0 * d.modulo_moved
    );
    out
}
