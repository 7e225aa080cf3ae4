//! The Mooncake trace replayed on a simulated LLM fleet, in virtual time:
//! what the crate's prefix index ([`workerpick::prefix`]) gives the cost
//! mode, against routing by load alone, an oracle that reads the engines'
//! caches, and SGLang's cache-aware rule.
//!
//! The replay follows the trace's README (and Dynamo's and SMG's replays):
//! - each request is released at its `timestamp` ÷ the speed-up; the fleet
//!   is scaled by copying the trace into disjoint id spaces (`copies`);
//! - each worker is an engine whose KV cache is an LRU of `cache_blocks`
//!   blocks ([`cache::BlockLru`]); it prefills one request at a time
//!   (FIFO), for `prefill_us_per_token` per *uncached* token, and reports
//!   the blocks it stored and evicted, as engine KV events, `event_delay_ms`
//!   later;
//! - a request's cached part is the leading `hash_ids` its worker holds when
//!   its prefill starts; TTFT = queueing + that prefill; decode then takes
//!   `decode_ms_per_token` per output token beside the other decodes.
//!
//! Every policy books the same phased load (the prompt's blocks and a
//! decode share, less the blocks its credit says are cached once chosen,
//! less the prefill at the first token). The credits:
//! - **exact**: a [`PrefixIndex`] fed only by the engines' events;
//! - **approximate**: a [`PrefixIndex`] fed only by the router's own
//!   decisions ([`PrefixIndex::routed`], 120 s TTL);
//! - **oracle**: the engines' LRUs read directly at routing time;
//! - [`sglang::CacheAware`]: its own tree of routed prompts.

pub mod cache;
pub mod sglang;
pub mod trace;

use cache::{BlockLru, Changes};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;
use trace::{BLOCK_TOKENS, Trace};
use workerpick::prefix::{BlockKey, IndexConfig, IndexStats, Matches, PrefixIndex, keys_of_ids};
use workerpick::{
    CacheHits, Cost, CreditWeight, LeastLoaded, Pool, PowerOfTwo, Random, Request, Reservation, Rng,
    RoundRobin,
};

/// The fleet and how the trace is replayed on it.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Workers (engines) in the fleet.
    pub workers: u32,
    /// Copies of the trace, each in its own id space, released together.
    pub copies: u32,
    /// Arrival time = timestamp ÷ this.
    pub speedup: f64,
    /// Blocks each engine caches.
    pub cache_blocks: usize,
    /// Prefill time per uncached prompt token, µs.
    pub prefill_us_per_token: f64,
    /// Decode time per output token, ms.
    pub decode_ms_per_token: f64,
    /// Load booked for a request's decode, beside its prompt's blocks.
    pub decode_charge: u32,
    /// How long an engine's event takes to reach the exact index, ms.
    pub event_delay_ms: f64,
    /// The indexes' capacity, as a multiple of the fleet's total cache.
    pub index_slack: u32,
    /// Seeds the routers' draws.
    pub seed: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            workers: 16,
            copies: 2,
            speedup: 5.0,
            cache_blocks: 2048,
            prefill_us_per_token: 20.0,
            decode_ms_per_token: 20.0,
            decode_charge: 4,
            event_delay_ms: 5.0,
            index_slack: 1,
            seed: 42,
        }
    }
}

/// A routing policy of the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Uniformly random.
    Random,
    /// Round-robin.
    RoundRobin,
    /// Least-loaded by booked blocks, blind to the caches.
    LeastLoaded,
    /// The less loaded of two random workers, blind to the caches.
    PowerOfTwo,
    /// SGLang's cache-aware rule ([`sglang::CacheAware`]).
    CacheAware,
    /// Cost, credit from an index fed only by routing decisions.
    CostApproximate,
    /// Cost, credit from an index fed only by the engines' events.
    CostExact,
    /// Cost, credit read from the engines' caches themselves.
    CostOracle,
    /// Cost with an index fed nothing: the control (no credit ever).
    CostBlind,
}

impl Policy {
    /// The policies of the default table.
    pub const ALL: [Policy; 8] = [
        Policy::Random,
        Policy::RoundRobin,
        Policy::LeastLoaded,
        Policy::PowerOfTwo,
        Policy::CacheAware,
        Policy::CostApproximate,
        Policy::CostExact,
        Policy::CostOracle,
    ];

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
            Policy::PowerOfTwo => "power-of-two",
            Policy::CacheAware => "sglang cache-aware",
            Policy::CostApproximate => "cost + approx index",
            Policy::CostExact => "cost + exact index",
            Policy::CostOracle => "cost + oracle",
            Policy::CostBlind => "cost + empty index",
        }
    }
}

/// What one policy did.
#[derive(Clone, Debug)]
pub struct Run {
    /// The policy.
    pub policy: Policy,
    /// Requests replayed.
    pub requests: usize,
    /// Prompt blocks served from the worker's cache, of all prompt blocks.
    pub hit_rate: f64,
    /// Time to first token, ms: p50 and p99.
    pub ttft_ms: (f64, f64),
    /// The queueing part of TTFT (arrival to prefill start), ms: p99.
    pub wait_p99_ms: f64,
    /// The most blocks any one worker prefilled.
    pub most_prefilled: u64,
    /// Mean time to find a request's credit (lookup and fill), ns; 0 for
    /// the policies that read none.
    pub lookup_ns: f64,
    /// Requests whose credit for the chosen worker was above, and below,
    /// the blocks its engine held then (0 for the policies that read none).
    pub credit_wrong: (u64, u64),
    /// The index's own account at the end, for the policies that use one.
    pub index: Option<IndexStats>,
}

impl Run {
    /// The share of requests whose credit was wrong either way.
    pub fn credit_wrong_rate(&self) -> f64 {
        (self.credit_wrong.0 + self.credit_wrong.1) as f64 / self.requests.max(1) as f64
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Request `i`'s prefill ends.
    Prefilled(usize),
    /// Request `i`'s decode ends.
    Done(usize),
    /// Arrival `j` of the expanded trace.
    Arrive(usize),
}

/// An engine's KV event on its way to the exact index.
enum EngineEvent {
    Stored(u32, Option<BlockKey>, Vec<BlockKey>),
    Removed(u32, Vec<BlockKey>),
}

struct InFlight<'p> {
    keys: Vec<BlockKey>,
    input: u32,
    output: u32,
    worker: u32,
    arrived: f64,
    prefill_blocks: u32,
    ttft: f64,
    /// When its prefill started, µs.
    started: f64,
    reservation: Option<Reservation<'p, u32>>,
}

/// Where a policy's credit comes from.
enum Credit {
    None,
    /// The index, and whether it is the exact one (fed by events).
    Index(Box<PrefixIndex<u32>>, bool),
    Oracle,
    Tree(sglang::CacheAware),
}

/// The approximate index's size over the exact one's: it holds one
/// (block, worker) pair per routed block for the TTL, more than the engines
/// cache at once (a trace's 120 s at this rate routes ~4x the fleet's cache).
const APPROX_TIMES: u64 = 4;

/// An index of `times` × the slack × the fleet's cache.
fn index(s: &Scenario, config: IndexConfig, times: u64) -> Box<PrefixIndex<u32>> {
    let cap = (times * u64::from(s.index_slack.max(1)) * u64::from(s.workers) * s.cache_blocks as u64)
        .clamp(1, u64::from(workerpick::prefix::MAX_INDEX_CAPACITY) / 2) as u32;
    Box::new(
        PrefixIndex::new(
            config
                .capacity(cap)
                .entries(cap * 2)
                .max_holders(s.workers)
                .manual_clock(),
        )
        .expect("a valid index size"),
    )
}

/// Replays `trace` under `policy`.
pub fn run(s: &Scenario, trace: &Trace, policy: Policy) -> Run {
    assert!(
        s.workers > 0 && s.copies > 0 && s.speedup > 0.0,
        "a fleet and a trace"
    );
    let pool = Pool::from_workers(0..s.workers).expect("a fleet");
    let mut router = pool.handle_with_rng(Rng::with_seed(s.seed));
    let mut rng = Rng::with_seed(s.seed ^ 0x5617);
    let reqs = &trace.requests;
    let span = reqs
        .iter()
        .flat_map(|r| r.hash_ids.iter())
        .max()
        .map_or(1, |m| m + 1);
    let arrivals = reqs.len() * s.copies as usize;
    let mut credit = match policy {
        Policy::Random | Policy::RoundRobin | Policy::LeastLoaded | Policy::PowerOfTwo => Credit::None,
        Policy::CostExact | Policy::CostBlind => {
            Credit::Index(index(s, IndexConfig::exact(BLOCK_TOKENS), 1), true)
        }
        Policy::CostApproximate => Credit::Index(
            index(s, IndexConfig::approximate(BLOCK_TOKENS), APPROX_TIMES),
            false,
        ),
        Policy::CostOracle => Credit::Oracle,
        Policy::CacheAware => Credit::Tree(sglang::CacheAware::new(s.workers, s.cache_blocks)),
    };
    let feeds_events = policy == Policy::CostExact;
    let cost = Cost::new()
        .with_weight(CreditWeight::from_milli(crate::llm::CREDIT_WEIGHT_MILLI).expect("a valid weight"));
    let (rr, ll) = (RoundRobin::new(), LeastLoaded::new());
    let mut caches: Vec<BlockLru> = (0..s.workers).map(|_| BlockLru::new(s.cache_blocks)).collect();
    let mut queues: Vec<VecDeque<usize>> = (0..s.workers).map(|_| VecDeque::new()).collect();
    let mut busy = vec![false; s.workers as usize];
    let mut prefilled = vec![0u64; s.workers as usize];
    let mut pending: VecDeque<(u64, EngineEvent)> = VecDeque::new();
    let mut changes = Changes::default();
    let (mut found, mut hits) = (Matches::new(), CacheHits::new());
    let workers: Vec<u32> = (0..s.workers).collect();
    let mut held: Vec<(&u32, u32)> = Vec::new();
    let mut flights: Vec<InFlight<'_>> = Vec::with_capacity(arrivals);
    let mut events: BinaryHeap<Reverse<(u64, Event)>> = BinaryHeap::new();
    let (mut cached, mut total) = (0u64, 0u64);
    let (mut lookups, mut lookup_ns) = (0u64, 0u128);
    let mut wrong = (0u64, 0u64);
    let ns = |us: f64| (us * 1e3) as u64;
    let delay = ns(s.event_delay_ms * 1e3);
    let arrival_us = |j: usize| reqs[j / s.copies as usize].timestamp_ms as f64 * 1e3 / s.speedup;
    if arrivals > 0 {
        events.push(Reverse((ns(arrival_us(0)), Event::Arrive(0))));
    }

    // Starts the next prefill on worker `w` if it is idle.
    macro_rules! start {
        ($w:expr, $now:expr) => {{
            let w: usize = $w;
            if !busy[w] {
                if let Some(i) = queues[w].pop_front() {
                    flights[i].started = $now as f64 / 1e3;
                    let f = &flights[i];
                    let hit = caches[w].prefix(&f.keys);
                    caches[w].admit(&f.keys, &mut changes);
                    if feeds_events {
                        let at = $now + delay;
                        // Evictions first, as the engine freed before it
                        // stored.
                        if !changes.removed.is_empty() {
                            let gone = std::mem::take(&mut changes.removed);
                            pending.push_back((at, EngineEvent::Removed(w as u32, gone)));
                        }
                        for &(first, n) in &changes.stored {
                            let parent = first.checked_sub(1).map(|p| f.keys[p]);
                            let run = f.keys[first..first + n].to_vec();
                            pending.push_back((at, EngineEvent::Stored(w as u32, parent, run)));
                        }
                    }
                    let n = f.keys.len() as u32;
                    cached += u64::from(hit);
                    total += u64::from(n);
                    prefilled[w] += u64::from(n - hit);
                    let uncached = f.input.saturating_sub(hit * BLOCK_TOKENS).max(1);
                    busy[w] = true;
                    let end = $now + ns(f64::from(uncached) * s.prefill_us_per_token);
                    events.push(Reverse((end, Event::Prefilled(i))));
                }
            }
        }};
    }

    while let Some(Reverse((at, event))) = events.pop() {
        let now_us = at as f64 / 1e3;
        match event {
            Event::Arrive(j) => {
                let r = &reqs[j / s.copies as usize];
                let offset = span * (j % s.copies as usize) as u64;
                let mut keys = Vec::with_capacity(r.hash_ids.len());
                keys_of_ids(r.hash_ids.iter().map(|id| id + offset), &mut keys);
                let n = keys.len() as u32;
                let t0 = Instant::now();
                match &mut credit {
                    Credit::None | Credit::Tree(_) => {}
                    Credit::Index(index, exact) => {
                        if *exact {
                            // The events that reached the router by now.
                            while pending.front().is_some_and(|(t, _)| *t <= at) {
                                let (_, e) = pending.pop_front().expect("non-empty");
                                match e {
                                    EngineEvent::Stored(w, parent, run) => {
                                        index
                                            .stored_after(&pool, &w, 0, parent, &run)
                                            .expect("a known worker");
                                    }
                                    EngineEvent::Removed(w, gone) => {
                                        index.removed(&w, 0, &gone);
                                    }
                                }
                            }
                        } else {
                            index.set_now(at / 1_000_000);
                        }
                        let t0 = Instant::now();
                        index.lookup(&keys, &mut found);
                        found.fill(&pool, &mut hits);
                        lookup_ns += t0.elapsed().as_nanos();
                        lookups += 1;
                    }
                    Credit::Oracle => {
                        held.clear();
                        held.extend(
                            workers
                                .iter()
                                .map(|w| (w, caches[*w as usize].prefix(&keys)))
                                .filter(|&(_, o)| o > 0),
                        );
                        hits.rebuild_sparse(&pool, n, held.iter().copied());
                        lookup_ns += t0.elapsed().as_nanos();
                        lookups += 1;
                    }
                }
                let weight = n + s.decode_charge;
                let req = Request::new().weight(weight).cache_hits(&hits);
                let (mut res, credit_blocks) = match &mut credit {
                    Credit::Tree(tree) => {
                        let t0 = Instant::now();
                        let (w, o) = tree.pick(&keys, &mut rng);
                        lookup_ns += t0.elapsed().as_nanos();
                        lookups += 1;
                        tree.routed(w, &keys);
                        (pool.reserve_worker(&w, weight).expect("a worker"), o)
                    }
                    Credit::None => {
                        let res = match policy {
                            Policy::Random => router.reserve_with(&Random, &req),
                            Policy::RoundRobin => router.reserve_with(&rr, &req),
                            Policy::PowerOfTwo => router.reserve_with(&PowerOfTwo, &req),
                            _ => router.reserve_with(&ll, &req),
                        };
                        (res.expect("a worker"), 0)
                    }
                    Credit::Index(..) | Credit::Oracle => {
                        let res = router.reserve_with(&cost, &req).expect("a worker");
                        let o = hits.held_by(&pool, res.worker());
                        (res, o)
                    }
                };
                let w = *res.worker();
                if !matches!(credit, Credit::None) {
                    let truth = caches[w as usize].prefix(&keys);
                    if credit_blocks > truth {
                        wrong.0 += 1;
                    } else if credit_blocks < truth {
                        wrong.1 += 1;
                    }
                }
                if let Credit::Index(index, false) = &credit {
                    index.routed(&pool, &w, 0, &keys).expect("a known worker");
                }
                // The blocks the credit says are cached need no prefill.
                let credit_blocks = credit_blocks.min(n);
                res.release_part(credit_blocks);
                flights.push(InFlight {
                    keys,
                    input: r.input_length,
                    output: r.output_length,
                    worker: w,
                    arrived: now_us,
                    prefill_blocks: n - credit_blocks,
                    ttft: 0.0,
                    started: 0.0,
                    reservation: Some(res),
                });
                queues[w as usize].push_back(flights.len() - 1);
                start!(w as usize, at);
                if j + 1 < arrivals {
                    events.push(Reverse((ns(arrival_us(j + 1)), Event::Arrive(j + 1))));
                }
            }
            Event::Prefilled(i) => {
                let f = &mut flights[i];
                f.ttft = now_us - f.arrived;
                if let Some(r) = f.reservation.as_mut() {
                    r.release_part(f.prefill_blocks);
                }
                let w = f.worker as usize;
                let end = at + ns(f64::from(f.output) * s.decode_ms_per_token * 1e3);
                events.push(Reverse((end, Event::Done(i))));
                busy[w] = false;
                start!(w, at);
            }
            Event::Done(i) => {
                let f = &mut flights[i];
                f.reservation = None;
                if let Credit::Tree(tree) = &mut credit {
                    tree.running[f.worker as usize] -= 1;
                }
            }
        }
    }
    let mut ttft: Vec<f64> = flights.iter().map(|f| f.ttft / 1e3).collect();
    let mut wait: Vec<f64> = flights.iter().map(|f| (f.started - f.arrived) / 1e3).collect();
    let index = match &credit {
        Credit::Index(index, _) => Some(index.stats()),
        _ => None,
    };
    Run {
        policy,
        requests: flights.len(),
        hit_rate: cached as f64 / total.max(1) as f64,
        ttft_ms: (quantile(&mut ttft, 0.5), quantile(&mut ttft, 0.99)),
        wait_p99_ms: quantile(&mut wait, 0.99),
        most_prefilled: prefilled.iter().copied().max().unwrap_or(0),
        lookup_ns: if lookups == 0 {
            0.0
        } else {
            lookup_ns as f64 / lookups as f64
        },
        credit_wrong: wrong,
        index,
    }
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    crate::llm::quantile(v, q)
}

/// Every policy of [`Policy::ALL`] on `trace`.
pub fn run_all(s: &Scenario, trace: &Trace) -> Vec<Run> {
    Policy::ALL.iter().map(|&p| run(s, trace, p)).collect()
}

/// The runs as a table, with the scenario in its header line.
pub fn table(s: &Scenario, trace: &Trace, runs: &[Run]) -> String {
    let mut out = format!(
        "Mooncake trace replay: {} requests x {} copies from {}, at {}x speed, on {} workers of {} cached blocks \
         (512 tokens), prefill {} us/token, events {} ms late\n",
        trace.requests.len(),
        s.copies,
        trace.source,
        s.speedup,
        s.workers,
        s.cache_blocks,
        s.prefill_us_per_token,
        s.event_delay_ms
    );
    out += &format!(
        "{:<20} {:>9} {:>10} {:>10} {:>10} {:>14} {:>13} {:>10} {:>10}\n",
        "policy",
        "hit rate",
        "TTFT p50",
        "TTFT p99",
        "wait p99",
        "most prefilled",
        "credit wrong",
        "lookup",
        "index"
    );
    for r in runs {
        let lookup = if r.lookup_ns > 0.0 {
            format!("{:.2}us", r.lookup_ns / 1e3)
        } else {
            "-".into()
        };
        let wrong = if matches!(
            r.policy,
            Policy::Random | Policy::RoundRobin | Policy::LeastLoaded | Policy::PowerOfTwo
        ) {
            "-".into()
        } else {
            format!("{:.1}%", r.credit_wrong_rate() * 100.0)
        };
        let index = r.index.map_or("-".into(), |i| {
            format!("{:.1}MiB", i.bytes as f64 / (1 << 20) as f64)
        });
        out += &format!(
            "{:<20} {:>8.1}% {:>8.0}ms {:>8.0}ms {:>8.0}ms {:>14} {:>13} {:>10} {:>10}\n",
            r.policy.name(),
            r.hit_rate * 100.0,
            r.ttft_ms.0,
            r.ttft_ms.1,
            r.wait_p99_ms,
            r.most_prefilled,
            wrong,
            lookup,
            index
        );
    }
    for r in runs {
        if let Some(i) = r.index.filter(|i| i.dropped_full > 0) {
            out += &format!(
                "  {}: {} stores dropped for want of room (index of {} blocks)\n",
                r.policy.name(),
                i.dropped_full,
                u64::from(s.index_slack) * u64::from(s.workers) * s.cache_blocks as u64
            );
        }
    }
    out
}
