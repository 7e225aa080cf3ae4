//! Interactive requests beside a batch backlog on an LLM fleet, in virtual
//! time: what the admission queue (`workerpick::queue`) buys the interactive
//! tenant, and what it costs the batch one.
//!
//! Each worker prefills one request at a time (FIFO), `prefill_us_per_block`
//! per prompt block, then decodes beside its other requests. A request books
//! its prompt's blocks and gives them back at its first token (its booking
//! lives to its end). Three runs: the interactive stream alone; with the
//! batch backlog routed at once (least-loaded, unprotected); and with both
//! through a queue (interactive class 0, batch class 1, a worker saturated
//! at `limit_blocks` booked: at 1, while a prefill is booked on it). Each
//! run goes on until all its work is done. Batch work done is the share of
//! the batch's prompt blocks prefilled by the time the unprotected run has
//! prefilled everything: the queue reorders the fleet's work, and this says
//! whether it lost any of it.
//!
//! The interactive stream is synthetic (Poisson arrivals, uniform sizes) or,
//! with [`Scenario::trace`], the Mooncake trace's requests: each arrives at
//! its timestamp ÷ `trace_speedup`, with a prompt of its `hash_ids` (one
//! 512-token block each) and its `output_length`. This scenario models no
//! KV cache (the Mooncake replay does): the trace gives it real arrival
//! bursts and real prompt and output lengths.

use crate::llm::{quantile, unit};
use crate::mooncake::trace::TraceRequest;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use workerpick::queue::{Admitted, Entry, Queue, QueueConfig, Ticket};
use workerpick::{LeastLoaded, Pool, Request, Reservation, Rng};

/// The workload and the fleet.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Workers in the fleet.
    pub workers: u32,
    /// Interactive requests, arriving at `rate` a second (Poisson).
    pub interactive: usize,
    /// Interactive arrivals per second.
    pub rate: f64,
    /// Interactive prompt blocks, uniform in the range.
    pub interactive_blocks: (u32, u32),
    /// Batch requests, all queued at time 0.
    pub batch: usize,
    /// Batch prompt blocks, uniform in the range.
    pub batch_blocks: (u32, u32),
    /// Output tokens of every request, uniform in the range.
    pub output_tokens: (u32, u32),
    /// Prefill time per prompt block, µs.
    pub prefill_us_per_block: f64,
    /// Decode time per output token, µs.
    pub decode_us_per_token: f64,
    /// The queue's in-flight limit per worker, in booked blocks.
    pub limit_blocks: u32,
    /// Seed of the arrivals and the draws.
    pub seed: u64,
    /// The interactive stream from a trace instead: its first `interactive`
    /// requests (`rate` and `interactive_blocks` unused).
    pub trace: Option<Arc<[TraceRequest]>>,
    /// The trace's timestamps are divided by this.
    pub trace_speedup: f64,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            workers: 8,
            interactive: 4000,
            rate: 400.0,
            interactive_blocks: (16, 48),
            batch: 5000,
            batch_blocks: (32, 64),
            output_tokens: (32, 256),
            prefill_us_per_block: 250.0,
            decode_us_per_token: 400.0,
            limit_blocks: 1,
            seed: 42,
            trace: None,
            trace_speedup: 1.0,
        }
    }
}

impl Scenario {
    /// The Mooncake trace as the interactive stream, sped up about 116
    /// times: ~400 requests a second on average, as the synthetic stream,
    /// but in the trace's bursts (a second of it holds up to twice that).
    pub fn mooncake(trace: &[TraceRequest]) -> Self {
        Self {
            interactive: trace.len(),
            trace: Some(trace.into()),
            trace_speedup: 116.0,
            ..Self::default()
        }
    }

    /// The interactive requests: arrival (µs), prompt blocks, output tokens.
    fn interactive_jobs(&self, rng: &mut Rng) -> Vec<(f64, u32, u32)> {
        if let Some(trace) = &self.trace {
            let start = trace.first().map_or(0, |r| r.timestamp_ms);
            return trace
                .iter()
                .take(self.interactive)
                .map(|r| {
                    let at = (r.timestamp_ms - start) as f64 * 1e3 / self.trace_speedup;
                    (at, (r.hash_ids.len() as u32).max(1), r.output_length.max(1))
                })
                .collect();
        }
        let mut at = 0.0f64;
        (0..self.interactive)
            .map(|_| {
                at += -(1.0 - unit(rng.next_u64())).ln() / self.rate * 1e6;
                let blocks = draw(rng, self.interactive_blocks);
                (at, blocks, draw(rng, self.output_tokens))
            })
            .collect()
    }
}

/// How requests reach the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// The interactive stream, no batch.
    Alone,
    /// Both, each request booked at once.
    Unprotected,
    /// Both, through the admission queue.
    Queued,
}

impl Setup {
    /// Every setup, in table order.
    pub const ALL: [Setup; 3] = [Setup::Alone, Setup::Unprotected, Setup::Queued];

    fn name(self) -> &'static str {
        match self {
            Setup::Alone => "interactive alone",
            Setup::Unprotected => "unprotected",
            Setup::Queued => "admission queue",
        }
    }
}

/// What one setup did.
#[derive(Clone, Debug)]
pub struct Run {
    /// Which setup.
    pub setup: Setup,
    /// Interactive time to first token, ms: p50 and p99.
    pub ttft_ms: (f64, f64),
    /// When each batch prefill ended (µs) and its blocks, in time order.
    pub batch_prefills: Vec<(f64, u32)>,
    /// When the last prefill of any request ended, µs.
    pub last_prefill_us: f64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Prefilled(usize),
    Done(usize),
    Arrive(usize),
}

struct Job {
    batch: bool,
    blocks: u32,
    tokens: u32,
    arrived: f64,
    ttft: f64,
    worker: usize,
}

/// A booking, plain or through the queue.
enum Held<'q> {
    Plain(Reservation<'q, u32>),
    Queued(Admitted<'q, u32, LeastLoaded>),
}

/// Wakes by noting the ticket's request.
struct Note(usize, Arc<Mutex<Vec<usize>>>);

impl Wake for Note {
    fn wake(self: Arc<Self>) {
        self.1.lock().unwrap().push(self.0);
    }
}

fn draw(rng: &mut Rng, (lo, hi): (u32, u32)) -> u32 {
    lo + rng.below(hi - lo)
}

/// Runs `setup` over the scenario.
pub fn run(s: &Scenario, setup: Setup) -> Run {
    let pool = Arc::new(Pool::from_workers(0..s.workers).expect("a fleet"));
    let config = QueueConfig::new()
        .capacity(s.interactive + s.batch)
        .classes(2)
        .tenants(&[1, 1])
        .in_flight_limit(s.limit_blocks);
    let queue = Queue::new(pool.clone(), LeastLoaded::new(), config).expect("a valid config");
    let ll = LeastLoaded::new();
    let mut rng = Rng::with_seed(s.seed ^ 0xadd);
    let mut jobs: Vec<Job> = s
        .interactive_jobs(&mut rng)
        .into_iter()
        .map(|(arrived, blocks, tokens)| Job {
            batch: false,
            blocks,
            tokens,
            arrived,
            ttft: 0.0,
            worker: 0,
        })
        .collect();
    if setup != Setup::Alone {
        for _ in 0..s.batch {
            let blocks = draw(&mut rng, s.batch_blocks);
            let tokens = draw(&mut rng, s.output_tokens);
            jobs.push(Job {
                batch: true,
                blocks,
                tokens,
                arrived: 0.0,
                ttft: 0.0,
                worker: 0,
            });
        }
    }
    let woken = Arc::new(Mutex::new(Vec::new()));
    let mut tickets: Vec<Option<Ticket<'_, u32, LeastLoaded>>> = (0..jobs.len()).map(|_| None).collect();
    let mut held: Vec<Option<Held<'_>>> = (0..jobs.len()).map(|_| None).collect();
    let mut fifo: Vec<VecDeque<usize>> = (0..s.workers).map(|_| VecDeque::new()).collect();
    let mut busy = vec![false; s.workers as usize];
    let mut events: BinaryHeap<Reverse<(u64, Event)>> = BinaryHeap::new();
    let ns = |t: f64| (t * 1e3) as u64;
    for (i, j) in jobs.iter().enumerate() {
        events.push(Reverse((ns(j.arrived), Event::Arrive(i))));
    }
    let (mut batch_prefills, mut last_prefill) = (Vec::new(), 0.0f64);
    let mut now;

    macro_rules! start {
        ($w:expr) => {{
            let w: usize = $w;
            if !busy[w]
                && let Some(i) = fifo[w].pop_front()
            {
                busy[w] = true;
                let t = now + f64::from(jobs[i].blocks) * s.prefill_us_per_block;
                events.push(Reverse((ns(t), Event::Prefilled(i))));
            }
        }};
    }
    // Hands an admitted request to its worker.
    macro_rules! dispatch {
        ($i:expr, $h:expr) => {{
            let (i, h): (usize, Held<'_>) = ($i, $h);
            let w = match &h {
                Held::Plain(r) => *r.worker(),
                Held::Queued(a) => *a.worker(),
            } as usize;
            jobs[i].worker = w;
            held[i] = Some(h);
            fifo[w].push_back(i);
            start!(w);
        }};
    }
    // Polls the tickets a release admitted.
    macro_rules! admit_woken {
        () => {{
            let ids: Vec<usize> = std::mem::take(&mut *woken.lock().unwrap());
            for i in ids {
                let waker = Waker::from(Arc::new(Note(i, woken.clone())));
                let mut cx = Context::from_waker(&waker);
                let ticket = tickets[i].as_mut().expect("a woken ticket");
                if let Poll::Ready(r) = std::pin::Pin::new(ticket).poll(&mut cx) {
                    tickets[i] = None;
                    dispatch!(i, Held::Queued(r.expect("admitted")));
                }
            }
        }};
    }

    while let Some(Reverse((t, event))) = events.pop() {
        now = t as f64 / 1e3;
        match event {
            Event::Arrive(i) => {
                let weight = jobs[i].blocks;
                if setup == Setup::Queued {
                    let class = usize::from(jobs[i].batch);
                    let entry = Entry::new().class(class).tenant(class).weight(weight);
                    let mut ticket = queue.enqueue(entry).expect("room in the queue");
                    let waker = Waker::from(Arc::new(Note(i, woken.clone())));
                    match std::pin::Pin::new(&mut ticket).poll(&mut Context::from_waker(&waker)) {
                        Poll::Ready(r) => dispatch!(i, Held::Queued(r.expect("admitted"))),
                        Poll::Pending => tickets[i] = Some(ticket),
                    }
                    admit_woken!();
                } else {
                    let r = pool
                        .reserve_with(&ll, &Request::new().weight(weight))
                        .expect("a worker");
                    dispatch!(i, Held::Plain(r));
                }
            }
            Event::Prefilled(i) => {
                let j = &mut jobs[i];
                j.ttft = now - j.arrived;
                if j.batch {
                    batch_prefills.push((now, j.blocks));
                }
                last_prefill = now;
                let w = j.worker;
                match held[i].as_mut().expect("booked") {
                    Held::Plain(r) => drop(r.release_part(j.blocks)),
                    Held::Queued(a) => drop(a.release_part(j.blocks)),
                }
                let end = now + f64::from(j.tokens) * s.decode_us_per_token;
                events.push(Reverse((ns(end), Event::Done(i))));
                busy[w] = false;
                start!(w);
                admit_woken!();
            }
            Event::Done(i) => {
                held[i] = None;
                admit_woken!();
            }
        }
    }
    assert!(
        tickets.iter().all(Option::is_none) && held.iter().all(Option::is_none),
        "work left over"
    );
    let mut ttft: Vec<f64> = jobs.iter().filter(|j| !j.batch).map(|j| j.ttft / 1e3).collect();
    Run {
        setup,
        ttft_ms: (quantile(&mut ttft, 0.5), quantile(&mut ttft, 0.99)),
        batch_prefills,
        last_prefill_us: last_prefill,
    }
}

/// Every setup of [`Setup::ALL`] on `s`.
pub fn run_all(s: &Scenario) -> Vec<Run> {
    Setup::ALL.iter().map(|&setup| run(s, setup)).collect()
}

impl Run {
    /// The share of this run's batch blocks prefilled by `at` (µs).
    pub fn batch_done_by(&self, at: f64) -> f64 {
        let total: u64 = self.batch_prefills.iter().map(|&(_, b)| u64::from(b)).sum();
        let done: u64 = self
            .batch_prefills
            .iter()
            .take_while(|&&(t, _)| t <= at)
            .map(|&(_, b)| u64::from(b))
            .sum();
        done as f64 / total.max(1) as f64
    }
}

/// When the unprotected run among `runs` prefilled its last request, µs.
pub fn unprotected_end(runs: &[Run]) -> f64 {
    runs.iter()
        .find(|r| r.setup == Setup::Unprotected)
        .map_or(0.0, |r| r.last_prefill_us)
}

/// The runs as a table: interactive TTFT, and the batch work done by the
/// time the unprotected run had done all of its work.
pub fn table(s: &Scenario, runs: &[Run]) -> String {
    let stream = match &s.trace {
        Some(t) => format!(
            "{} interactive requests of the Mooncake trace at {}x speed ({} blocks of 512 tokens each)",
            s.interactive.min(t.len()),
            s.trace_speedup,
            blocks_range(t, s.interactive)
        ),
        None => format!(
            "{} interactive requests at {}/s ({}-{} blocks)",
            s.interactive, s.rate, s.interactive_blocks.0, s.interactive_blocks.1
        ),
    };
    let mut out = format!(
        "Admission: {stream} beside {} batch requests \
         queued at once ({}-{} blocks), {} workers, queue limit {} booked blocks a worker\n",
        s.batch, s.batch_blocks.0, s.batch_blocks.1, s.workers, s.limit_blocks
    );
    let end = unprotected_end(runs);
    out += &format!(
        "{:<18} {:>10} {:>10} {:>14} {:>22}\n",
        "setup", "TTFT p50", "TTFT p99", "all done at", "batch done by then"
    );
    for r in runs {
        let share = if r.setup == Setup::Alone {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * r.batch_done_by(end))
        };
        out += &format!(
            "{:<18} {:>8.1}ms {:>8.1}ms {:>12.2}s {:>22}\n",
            r.setup.name(),
            r.ttft_ms.0,
            r.ttft_ms.1,
            r.last_prefill_us / 1e6,
            share
        );
    }
    out
}

/// The prompt sizes of the first `n` requests, as "lo-hi".
fn blocks_range(trace: &[TraceRequest], n: usize) -> String {
    let sizes = trace.iter().take(n).map(|r| r.hash_ids.len());
    let (lo, hi) = sizes.fold((usize::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
    format!("{lo}-{hi}")
}
