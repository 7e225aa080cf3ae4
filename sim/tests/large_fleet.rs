//! A fleet past the default pool limit (65 536 workers): the simulator sizes
//! its pool to the fleet, least-loaded takes the summarised pick, and the
//! invariants still hold (every request served once, every count back to 0).

use workerpick_sim as sim;

use sim::engine::{pool_limit, scan_kind};
use sim::{Fleet, Load, Progress};
use std::time::Duration;
use workerpick::DeviceKind::Accelerator;

struct Silent;

impl Progress for Silent {
    fn stage(&self, _: &str) {}
    fn advance(&self, _: u64) {}
}

const WORKERS: usize = 100_000;

fn load(flat_scan: bool) -> Load {
    Load {
        fleet: Fleet {
            speeds: vec![1.0; WORKERS],
            devices: vec![Accelerator; WORKERS],
            slots: 2,
            service: Duration::from_micros(200),
            flat_scan,
            capacities: Vec::new(),
            weighted: false,
        },
        concurrency: 16,
        requests: 300,
        threads: 2,
        seed: 3,
        churn: None,
        sample_every: Duration::from_millis(50),
        join: None,
    }
}

#[test]
fn a_100k_fleet_runs_summarised_and_keeps_the_invariants() {
    assert_eq!(pool_limit(WORKERS), 1 << 17);
    assert_eq!(scan_kind(pool_limit(WORKERS), WORKERS, false), "summarised");
    assert_eq!(scan_kind(pool_limit(WORKERS), WORKERS, true), "flat");
    assert_eq!(scan_kind(pool_limit(8), 8, false), "flat");
    // The default limit keeps the bounds too: a 1 024-worker fleet reads them.
    assert_eq!(scan_kind(pool_limit(1024), 1024, false), "summarised");
    let selector = sim::modes::selector("least-loaded").unwrap();
    let out = sim::engine::run(&load(false), &*selector, &Silent);
    assert_eq!(out.pick_error, None);
    assert_eq!(out.unserved, 0, "every request served");
    assert_eq!(out.served_twice, 0, "no request served twice");
    assert_eq!(out.workers.len(), WORKERS);
    assert!(
        out.workers.iter().all(|w| w.end_in_flight == 0),
        "every count back to 0"
    );
    assert_eq!(out.workers.iter().map(|w| w.requests).sum::<u64>(), 300);
    // Least-loaded on an idle fleet larger than the concurrency: nobody holds two.
    assert!(out.workers.iter().all(|w| w.peak_in_flight <= 1));
    assert!(out.select_ns.mean > 0.0, "the pick was timed");
}

/// A quarter of the fleet on CPUs, as the default speeds make it: each mode's
/// pool is built with one snapshot for the attributes (`Pool::set_infos`).
/// Set one by one (before), each CPU published a snapshot of the whole
/// fleet: 25 000 snapshots of 100 000 workers, minutes of setup per pool.
#[test]
fn a_100k_fleet_with_cpus_is_built_in_seconds() {
    let mut load = load(false);
    for w in (0..WORKERS).filter(|w| w % 4 == 3) {
        load.fleet.devices[w] = workerpick::DeviceKind::Cpu;
    }
    let selector = sim::modes::selector("device-aware").unwrap();
    let start = std::time::Instant::now();
    let out = sim::engine::run(&load, &*selector, &Silent);
    let took = start.elapsed();
    assert_eq!(out.pick_error, None);
    assert_eq!(out.unserved, 0, "every request served");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}
