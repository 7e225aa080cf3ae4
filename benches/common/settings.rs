//! The criterion settings every bench shares (ours and the peers'), scaled by
//! two knobs that `ci/bench-report.sh` passes through:
//!
//! - `WORKERPICK_BENCH_MS`: measurement time per benchmark in ms (default
//!   600; the warm-up is a third of it);
//! - `WORKERPICK_BENCH_SAMPLES`: samples per benchmark (default 50; slow and
//!   threaded benchmarks take fewer, never under criterion's minimum of 10).
//!
//! The defaults keep the whole report run near ten minutes on 2 shared cores;
//! `WORKERPICK_BENCH_MS=20 WORKERPICK_BENCH_SAMPLES=10` is a smoke run.

use criterion::Criterion;
use criterion::measurement::Measurement;
use std::time::Duration;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected a whole number"))
    })
}

/// The measurement time per benchmark.
pub fn measurement() -> Duration {
    Duration::from_millis(knob("WORKERPICK_BENCH_MS", 600).max(1))
}

/// Samples per benchmark, at most `cap` (and never under criterion's 10).
pub fn samples(cap: usize) -> usize {
    (knob("WORKERPICK_BENCH_SAMPLES", 50) as usize).min(cap).max(10)
}

/// The shared settings, on measurement `m`.
pub fn criterion<M: Measurement>(m: M) -> Criterion<M> {
    Criterion::default()
        .with_measurement(m)
        .warm_up_time(measurement() / 3)
        .measurement_time(measurement())
        .sample_size(samples(usize::MAX))
        .nresamples(10_000)
}
