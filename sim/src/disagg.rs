//! Disaggregated serving in virtual time: the same GPUs as prefill and
//! decode workers, against all of them aggregated, with the decider's
//! threshold swept.
//!
//! The workload is the LLM scenario's (sessions under shared system prompts,
//! each worker an LRU prefix cache that the router reads exactly). A worker
//! prefills one prompt at a time, `prefill_us_per_block` per uncached block,
//! and decodes its running requests together, one token each every
//! `decode_us_per_token` (batch size is not charged). A prefill holds the
//! whole GPU: a worker's decodes wait while it prefills, which is what
//! stretches inter-token latency in an aggregated fleet. A disaggregated
//! request prefills on a prefill worker, then its KV blocks move to the
//! decode worker (`transfer_us_per_block` each) before its first token.
//! Routing is `workerpick::Pairs` over least-loaded picks on both pools.

use crate::llm::{self, Lru, Workload, quantile, unit};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use workerpick::{
    CacheHits, Decider, LeastLoaded, PairRequest, PairReservation, Pairs, Plan, Pool, Request, Reservation,
    Rng,
};

/// The fleet and its costs; the workload is [`llm::Scenario`]'s.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// The workload (its `workers` is the number of GPUs).
    pub load: llm::Scenario,
    /// GPUs given to prefill in the disaggregated fleets.
    pub prefill_workers: u32,
    /// KV transfer time per block, in µs.
    pub transfer_us_per_block: f64,
}

impl Default for Fleet {
    fn default() -> Self {
        Self {
            load: llm::Scenario {
                requests: 6_000,
                rate: 300.0,
                ..llm::Scenario::default()
            },
            prefill_workers: 2,
            transfer_us_per_block: 20.0,
        }
    }
}

/// A fleet layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every GPU prefills and decodes.
    Aggregated,
    /// Prefill and decode pools; disaggregate above this many uncached blocks.
    Disaggregated(u32),
}

impl Layout {
    /// The default sweep: aggregated, then thresholds from 0 up.
    pub const SWEEP: [Layout; 5] = [
        Layout::Aggregated,
        Layout::Disaggregated(0),
        Layout::Disaggregated(16),
        Layout::Disaggregated(48),
        Layout::Disaggregated(96),
    ];

    /// The name in the table.
    pub fn name(self) -> String {
        match self {
            Layout::Aggregated => "aggregated".into(),
            Layout::Disaggregated(t) => format!("disagg, > {t} blocks"),
        }
    }
}

/// What one layout did.
#[derive(Clone, Debug)]
pub struct Run {
    /// The layout's name.
    pub layout: String,
    /// Requests prefilled on a prefill worker, of all.
    pub disaggregated: f64,
    /// Time to first token, ms: p50 and p99.
    pub ttft_ms: (f64, f64),
    /// Inter-token latency, ms: p50 and p99 over every token after the first.
    pub itl_ms: (f64, f64),
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Prefilled(usize),
    Transferred(usize),
    Tick(u32),
    Arrive,
}

struct Flight<'p> {
    chain: Vec<u64>,
    arrived: f64,
    prefiller: u32,
    decoder: u32,
    left: u32,
    last: f64,
    ttft: f64,
    pair: Option<PairReservation<Reservation<'p, u32>, Reservation<'p, u32>>>,
}

#[derive(Default)]
struct Gpu {
    queue: VecDeque<usize>,
    prefilling: bool,
    running: Vec<usize>,
    tick_set: bool,
    tick_waits: bool,
}

/// Runs `layout` over `f`.
pub fn run(f: &Fleet, layout: Layout) -> Run {
    let s = &f.load;
    let (p, decider) = match layout {
        Layout::Aggregated => (0, Decider::never()),
        Layout::Disaggregated(t) => (f.prefill_workers, Decider::new(t)),
    };
    let prefill = Pool::from_workers(0..p).expect("prefill workers");
    let decode = Pool::from_workers(p..s.workers).expect("decode workers");
    let mut pairs = Pairs::new(
        prefill.handle_with_rng(Rng::with_seed(s.seed)),
        decode.handle_with_rng(Rng::with_seed(s.seed ^ 1)),
        decider,
    );
    let ll = LeastLoaded::new();
    let mut rng = Rng::with_seed(s.seed ^ 0xa11);
    let mut work = Workload::new(s);
    let mut caches: Vec<Lru> = (0..s.workers).map(|_| Lru::new(s.cache_blocks)).collect();
    let mut gpus: Vec<Gpu> = (0..s.workers).map(|_| Gpu::default()).collect();
    let mut hits = CacheHits::new();
    let mut flights: Vec<Flight<'_>> = Vec::with_capacity(s.requests);
    let mut events: BinaryHeap<Reverse<(u64, Event)>> = BinaryHeap::new();
    let mut itl: Vec<f64> = Vec::new();
    let ns = |t: f64| (t * 1e3) as u64;
    let (mut arrivals, mut split) = (0usize, 0usize);
    events.push(Reverse((0, Event::Arrive)));

    // Starts the next prefill on GPU `w` if it is not prefilling.
    let start = |w: u32,
                 now: f64,
                 gpus: &mut [Gpu],
                 caches: &mut [Lru],
                 flights: &[Flight<'_>],
                 events: &mut BinaryHeap<Reverse<(u64, Event)>>| {
        let g = &mut gpus[w as usize];
        if g.prefilling {
            return;
        }
        if let Some(i) = g.queue.pop_front() {
            let chain = &flights[i].chain;
            let uncached = chain.len() as u32 - caches[w as usize].prefix(chain);
            caches[w as usize].touch_all(chain);
            g.prefilling = true;
            events.push(Reverse((
                ns(now + f64::from(uncached) * s.prefill_us_per_block),
                Event::Prefilled(i),
            )));
        }
    };
    // One decode step on GPU `w`: every running request's next token.
    let tick = |w: u32,
                now: f64,
                gpus: &mut [Gpu],
                flights: &mut [Flight<'_>],
                itl: &mut Vec<f64>,
                events: &mut BinaryHeap<Reverse<(u64, Event)>>| {
        let g = &mut gpus[w as usize];
        g.tick_set = false;
        if g.prefilling {
            g.tick_waits = true;
            return;
        }
        g.tick_waits = false;
        g.running.retain(|&i| {
            let fl = &mut flights[i];
            itl.push((now - fl.last) / 1e3);
            fl.last = now;
            fl.left -= 1;
            if fl.left == 0 {
                fl.pair = None;
            }
            fl.left > 0
        });
        if !g.running.is_empty() {
            g.tick_set = true;
            events.push(Reverse((ns(now + s.decode_us_per_token), Event::Tick(w))));
        }
    };
    // Request `i` starts decoding on its decode worker: its first token now.
    let join = |i: usize,
                now: f64,
                gpus: &mut [Gpu],
                flights: &mut [Flight<'_>],
                events: &mut BinaryHeap<Reverse<(u64, Event)>>| {
        let fl = &mut flights[i];
        fl.ttft = now - fl.arrived;
        fl.last = now;
        let g = &mut gpus[fl.decoder as usize];
        g.running.push(i);
        if !g.tick_set && !g.tick_waits {
            g.tick_set = true;
            events.push(Reverse((
                ns(now + s.decode_us_per_token),
                Event::Tick(fl.decoder),
            )));
        }
    };

    while let Some(Reverse((at, event))) = events.pop() {
        let now = at as f64 / 1e3;
        match event {
            Event::Arrive => {
                let mut chain = Vec::new();
                work.next(s, &mut chain);
                let n = chain.len() as u32;
                hits.rebuild(&decode, n, |&w| caches[w as usize].prefix(&chain));
                let req = PairRequest::new(
                    Request::new().weight(n),
                    Request::new().weight(s.decode_charge).cache_hits(&hits),
                );
                let pair = pairs.reserve(&ll, &ll, &req).expect("a pair");
                let decoder = *pair.decode();
                let prefiller = pair.prefill().copied().unwrap_or(decoder);
                split += usize::from(pair.plan() == Plan::Disaggregate);
                let lo = s.output_tokens.0;
                flights.push(Flight {
                    chain,
                    arrived: now,
                    prefiller,
                    decoder,
                    left: lo + rng.below(s.output_tokens.1 - lo),
                    last: 0.0,
                    ttft: 0.0,
                    pair: Some(pair),
                });
                let i = flights.len() - 1;
                gpus[prefiller as usize].queue.push_back(i);
                start(prefiller, now, &mut gpus, &mut caches, &flights, &mut events);
                arrivals += 1;
                if arrivals < s.requests {
                    let gap = -(1.0 - unit(rng.next_u64())).ln() / s.rate * 1e6;
                    events.push(Reverse((ns(now + gap), Event::Arrive)));
                }
            }
            Event::Prefilled(i) => {
                let fl = &mut flights[i];
                let (w, local) = (fl.prefiller, fl.prefiller == fl.decoder);
                if let Some(pair) = fl.pair.as_mut() {
                    pair.hand_off();
                }
                gpus[w as usize].prefilling = false;
                if local {
                    join(i, now, &mut gpus, &mut flights, &mut events);
                } else {
                    let t = fl.chain.len() as f64 * f.transfer_us_per_block;
                    events.push(Reverse((ns(now + t), Event::Transferred(i))));
                }
                start(w, now, &mut gpus, &mut caches, &flights, &mut events);
                if gpus[w as usize].tick_waits && !gpus[w as usize].prefilling {
                    tick(w, now, &mut gpus, &mut flights, &mut itl, &mut events);
                }
            }
            Event::Transferred(i) => {
                let d = flights[i].decoder as usize;
                caches[d].touch_all(&flights[i].chain);
                join(i, now, &mut gpus, &mut flights, &mut events);
            }
            Event::Tick(w) => tick(w, now, &mut gpus, &mut flights, &mut itl, &mut events),
        }
    }
    let mut ttft: Vec<f64> = flights.iter().map(|fl| fl.ttft / 1e3).collect();
    Run {
        layout: layout.name(),
        disaggregated: split as f64 / flights.len().max(1) as f64,
        ttft_ms: (quantile(&mut ttft, 0.5), quantile(&mut ttft, 0.99)),
        itl_ms: (quantile(&mut itl, 0.5), quantile(&mut itl, 0.99)),
    }
}

/// Every layout of [`Layout::SWEEP`] on `f`.
pub fn run_all(f: &Fleet) -> Vec<Run> {
    Layout::SWEEP.iter().map(|&l| run(f, l)).collect()
}

/// The runs as a table.
pub fn table(f: &Fleet, runs: &[Run]) -> String {
    let s = &f.load;
    let mut out = format!(
        "Disaggregated serving: {} GPUs ({} for prefill when disaggregated), {} requests at {}/s, \
         KV transfer {} us/block, prefill {} us/block, decode {} us/token\n",
        s.workers,
        f.prefill_workers,
        s.requests,
        s.rate,
        f.transfer_us_per_block,
        s.prefill_us_per_block,
        s.decode_us_per_token
    );
    out += &format!(
        "{:<22} {:>8} {:>10} {:>10} {:>9} {:>9}\n",
        "layout", "split", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99"
    );
    for r in runs {
        out += &format!(
            "{:<22} {:>7.1}% {:>8.1}ms {:>8.1}ms {:>7.2}ms {:>7.2}ms\n",
            r.layout,
            r.disaggregated * 100.0,
            r.ttft_ms.0,
            r.ttft_ms.1,
            r.itl_ms.0,
            r.itl_ms.1
        );
    }
    out
}
