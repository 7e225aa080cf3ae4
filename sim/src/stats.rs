//! Summaries of measured values.

use std::time::{Duration, Instant};

/// Mean and percentiles of a set of measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest value.
    pub max: u64,
}

/// Summarises `values` (sorted in place; empty gives all zeros).
pub fn summary(mut values: Vec<u64>) -> Summary {
    if values.is_empty() {
        return Summary::default();
    }
    values.sort_unstable();
    let rank = |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    Summary {
        mean: values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64,
        p50: rank(0.50),
        p99: rank(0.99),
        max: values[values.len() - 1],
    }
}

/// What `Instant::now()` twice costs here, in ns (the median of many tries):
/// the floor under every selection latency the simulator reports.
pub fn timer_overhead_ns() -> u64 {
    let samples = (0..10_000)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    summary(samples).p50
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
