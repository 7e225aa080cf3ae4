//! The thread counts the thread benchmarks run at.

/// From `WORKERPICK_BENCH_THREADS` (comma-separated; default `1,2`, this
/// machine's cores).
pub fn thread_counts() -> Vec<usize> {
    let spec = std::env::var("WORKERPICK_BENCH_THREADS").unwrap_or_else(|_| "1,2".into());
    spec.split(',')
        .map(|t| {
            t.trim()
                .parse()
                .expect("WORKERPICK_BENCH_THREADS: comma-separated counts")
        })
        .collect()
}
