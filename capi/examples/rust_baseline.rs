//! The Rust calls `tests/bench.c` makes through the C ABI, made directly:
//! an `OwnedHandle` reserving through a resolved `Arc<dyn Selector>`, the
//! reservation dropped at once. Prints `mode/workers ns-per-request`.
//! Usage: `rust_baseline [milliseconds-per-case]`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use workerpick::{Pool, Registry, Request};

fn main() {
    let ms = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let budget = Duration::from_millis(ms);
    for mode in ["least-loaded", "power-of-two", "round-robin"] {
        for n in [8u64, 64, 1024] {
            let pool = Arc::new(Pool::from_workers(0..n).expect("distinct workers"));
            let selector = Registry::new().resolve(mode).expect("a built-in mode");
            let mut handle = pool.owned_handle();
            let request = Request::new();
            let (start, mut count) = (Instant::now(), 0u64);
            while start.elapsed() < budget {
                for _ in 0..1000 {
                    let r = handle.reserve_with(&*selector, black_box(&request));
                    drop(black_box(r.expect("workers to pick from")));
                }
                count += 1000;
            }
            let ns = start.elapsed().as_secs_f64() / count as f64 * 1e9;
            println!("{mode}/{n} {ns:.1}");
        }
    }
}
