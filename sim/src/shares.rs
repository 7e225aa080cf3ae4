//! Fair shares across two routers over one fleet, in virtual time: the
//! scenario of dynamo #15187, where a 4:1 policy became 163:162 once two
//! routers each held it on their own.
//!
//! Tenant `heavy` (weight 4) reaches router 0 only and tenant `light`
//! (weight 1, prompts twice as long) router 1 only; both stay backlogged
//! (each router keeps `backlog` requests queued). Each router's admission
//! queue (`workerpick::queue`, `shared_fleet`: its limit counts the peer's
//! booked load) books on its own `Pool` of the same workers; a request holds
//! its prompt's blocks for `us_per_block` each, then gives them back. Every
//! `sync_ms` the routers exchange a summary: the pool's loads alone, or the
//! queue's, which carries the fair-share counters. The share is the uncached
//! tokens served per tenant after a warm-up. One router holding both
//! tenants is the reference: a queue's own order, and the work done where
//! no exchange holds a router back.

use std::sync::Arc;
use workerpick::queue::{Admitted, Entry, Queue, QueueConfig, Ticket};
use workerpick::{LeastLoaded, Pool, Rng};

/// The fleet and the load.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Workers in the fleet.
    pub workers: u32,
    /// Blocks booked on a worker before it is saturated.
    pub limit_blocks: u32,
    /// The heavy and the light tenant's prompt blocks, uniform in each range.
    pub blocks: [(u32, u32); 2],
    /// The tenants' weights.
    pub weights: [u32; 2],
    /// Time a request holds each of its blocks, µs.
    pub us_per_block: u64,
    /// Requests each router keeps queued.
    pub backlog: usize,
    /// How long to run, ms.
    pub run_ms: u64,
    /// The warm-up, ms.
    pub warmup_ms: u64,
    /// Seed of the prompt sizes.
    pub seed: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            workers: 8,
            limit_blocks: 128,
            blocks: [(16, 48), (32, 96)],
            weights: [4, 1],
            us_per_block: 250,
            backlog: 16,
            run_ms: 20_000,
            warmup_ms: 2_000,
            seed: 42,
        }
    }
}

/// How the two tenants reach the fleet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Setup {
    /// One router holds both tenants.
    OneRouter,
    /// Two routers exchanging the pool's loads every `sync_ms`.
    LoadsOnly {
        /// The exchange period, ms.
        sync_ms: u64,
    },
    /// Two routers exchanging the queue's summary (loads and counters).
    Counters {
        /// The exchange period, ms.
        sync_ms: u64,
    },
}

impl Setup {
    /// The table's rows, in order.
    pub const ALL: [Setup; 5] = [
        Setup::OneRouter,
        Setup::LoadsOnly { sync_ms: 1 },
        Setup::Counters { sync_ms: 1 },
        Setup::Counters { sync_ms: 10 },
        Setup::Counters { sync_ms: 100 },
    ];

    /// The exchange period, µs (`None`: one router, nothing to exchange).
    fn sync_us(self) -> Option<u64> {
        match self {
            Setup::OneRouter => None,
            Setup::LoadsOnly { sync_ms } | Setup::Counters { sync_ms } => Some(sync_ms * 1000),
        }
    }

    fn name(self) -> String {
        match self {
            Setup::OneRouter => "one router, both tenants".into(),
            Setup::LoadsOnly { sync_ms } => format!("two routers, loads every {sync_ms} ms"),
            Setup::Counters { sync_ms } => format!("two routers, counters every {sync_ms} ms"),
        }
    }
}

/// What one setup did.
#[derive(Clone, Debug)]
pub struct Run {
    /// Which setup.
    pub setup: Setup,
    /// Uncached tokens (in blocks) served per tenant after the warm-up.
    pub served: [u64; 2],
}

impl Run {
    /// Heavy's tokens ÷ light's.
    pub fn ratio(&self) -> f64 {
        self.served[0] as f64 / self.served[1].max(1) as f64
    }
}

/// Runs `setup` over the scenario.
pub fn run(s: &Scenario, setup: Setup) -> Run {
    let config = QueueConfig::new()
        .capacity(2 * s.backlog)
        .tenants(&s.weights)
        .in_flight_limit(s.limit_blocks)
        .shared_fleet();
    let routers = if setup.sync_us().is_some() { 2 } else { 1 };
    let queues: Vec<Queue<u32, LeastLoaded>> = (0..routers)
        .map(|_| {
            let pool = Arc::new(Pool::from_workers(0..s.workers).expect("a fleet"));
            Queue::new(pool, LeastLoaded::new(), config.clone()).expect("a valid config")
        })
        .collect();
    // Tenant t arrives at router t (at router 0 when there is one).
    let at = |tenant: usize| tenant.min(routers - 1);
    let mut rng = Rng::with_seed(s.seed ^ 0x5_4a7e);
    let mut queued: [Vec<(u32, Ticket<'_, u32, LeastLoaded>)>; 2] = [Vec::new(), Vec::new()];
    let mut running: Vec<(u64, Admitted<'_, u32, LeastLoaded>)> = Vec::new();
    let mut served = [0u64; 2];
    for now in (0..s.run_ms * 1000).step_by(100) {
        for (tenant, tickets) in queued.iter_mut().enumerate() {
            while tickets.len() < s.backlog {
                let (lo, hi) = s.blocks[tenant];
                let blocks = lo + rng.below(hi - lo + 1);
                let entry = Entry::new().tenant(tenant).weight(blocks);
                tickets.push((
                    blocks,
                    queues[at(tenant)].enqueue(entry).expect("room in the queue"),
                ));
            }
        }
        // A finished request's release admits at its router.
        running.retain(|(end, _)| *end > now);
        if setup.sync_us().is_some_and(|period| now % period == 0) {
            let counters = matches!(setup, Setup::Counters { .. });
            let summaries: Vec<_> = queues
                .iter()
                .map(|q| if counters { q.summary() } else { q.pool().summary() })
                .collect();
            queues[0].apply_summary(&summaries[1]);
            queues[1].apply_summary(&summaries[0]);
        }
        for (tenant, tickets) in queued.iter_mut().enumerate() {
            let mut i = 0;
            while i < tickets.len() {
                match tickets[i].1.try_admit().expect("admitted or waiting") {
                    Some(admitted) => {
                        let (blocks, ticket) = tickets.swap_remove(i);
                        drop(ticket); // spent
                        if now >= s.warmup_ms * 1000 {
                            served[tenant] += u64::from(blocks);
                        }
                        running.push((now + u64::from(blocks) * s.us_per_block, admitted));
                    }
                    None => i += 1,
                }
            }
        }
    }
    Run { setup, served }
}

/// Every setup of [`Setup::ALL`] on `s`.
pub fn run_all(s: &Scenario) -> Vec<Run> {
    Setup::ALL.iter().map(|&setup| run(s, setup)).collect()
}

/// The runs as a table: each tenant's share against the configured ratio,
/// and the work served against one router's.
pub fn table(s: &Scenario, runs: &[Run]) -> String {
    let want = f64::from(s.weights[0]) / f64::from(s.weights[1]);
    let total = |r: &Run| (r.served[0] + r.served[1]) as f64;
    let one = runs
        .iter()
        .find(|r| r.setup == Setup::OneRouter)
        .map_or(0.0, total);
    let mut out = format!(
        "Fair shares across routers: tenant heavy (weight {}, {}-{} blocks) at router 0, light \
         (weight {}, {}-{} blocks) at router 1, both backlogged; {} workers of {} blocks each, shared_fleet\n",
        s.weights[0],
        s.blocks[0].0,
        s.blocks[0].1,
        s.weights[1],
        s.blocks[1].0,
        s.blocks[1].1,
        s.workers,
        s.limit_blocks
    );
    out += &format!(
        "{:<36} {:>14} {:>14} {:>12} {:>10} {:>12}\n",
        "setup", "heavy blocks", "light blocks", "heavy:light", "vs want", "vs 1 router"
    );
    for r in runs {
        out += &format!(
            "{:<36} {:>14} {:>14} {:>10.2}:1 {:>+9.1}% {:>11.1}%\n",
            r.setup.name(),
            r.served[0],
            r.served[1],
            r.ratio(),
            100.0 * (r.ratio() / want - 1.0),
            100.0 * total(r) / one.max(1.0)
        );
    }
    out
}
