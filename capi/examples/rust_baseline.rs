//! The Rust calls `tests/bench.c` makes through the C ABI, made directly:
//! an `OwnedHandle` reserving through a resolved `Arc<dyn Selector>`, the
//! reservation dropped at once. Prints `mode/workers ns-per-request`.
//! Usage: `rust_baseline [milliseconds-per-case]` (1 to 60000, default 300).

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use workerpick::{Pool, Registry, Request};

/// This thread's CPU time: on a shared machine, time spent waiting for a
/// core is not the call's (`tests/bench.c` reads the same clock).
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn main() -> ExitCode {
    let ms = match std::env::args_os().nth(1) {
        None => 300,
        Some(arg) => match arg.to_str().and_then(|a| a.parse().ok()) {
            Some(ms @ 1..=60_000) => ms,
            _ => {
                eprintln!(
                    "rust_baseline: milliseconds-per-case must be a whole number from 1 to 60000, not `{}`",
                    arg.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        },
    };
    let budget = Duration::from_millis(ms);
    for mode in ["least-loaded", "power-of-two", "round-robin"] {
        for n in [8u64, 64, 1024] {
            let pool = Arc::new(Pool::from_workers(0..n).expect("distinct workers"));
            let selector = Registry::new().resolve(mode).expect("a built-in mode");
            let mut handle = pool.owned_handle();
            let request = Request::new();
            let (start, mut count) = (cpu_time(), 0u64);
            while cpu_time() - start < budget {
                for _ in 0..1000 {
                    let r = handle.reserve_with(&*selector, black_box(&request));
                    drop(black_box(r.expect("workers to pick from")));
                }
                count += 1000;
            }
            let ns = (cpu_time() - start).as_secs_f64() / count as f64 * 1e9;
            println!("{mode}/{n} {ns:.1}");
        }
    }
    ExitCode::SUCCESS
}
