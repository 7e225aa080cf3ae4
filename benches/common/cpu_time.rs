//! A criterion measurement of the calling thread's CPU time instead of wall
//! time. On a shared machine (2 cores, other jobs compiling) a single-thread
//! benchmark is descheduled for a large and varying share of the wall clock;
//! its own CPU time is what one operation costs. Preemption still pollutes
//! caches, so figures stay somewhat above a quiet machine's.
//!
//! Only for single-thread benchmarks: a thread blocked on a mutex uses no CPU
//! time, so contention must be measured on the wall clock (`benches/threads.rs`).

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// The calling thread's CPU time in ns.
#[cfg(target_os = "linux")]
fn now() -> u64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid, writable `struct timespec` (two 64-bit fields on
    // the 64-bit Linux targets this runs on); the clock id is Linux's.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    t.sec as u64 * 1_000_000_000 + t.nsec as u64
}

/// Elsewhere: the wall clock (the same as criterion's default).
#[cfg(not(target_os = "linux"))]
fn now() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Thread CPU time, in ns, formatted like criterion's wall time.
pub struct CpuTime;

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        now()
    }
    fn end(&self, start: u64) -> u64 {
        now() - start
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanos
    }
}

struct Nanos;

impl ValueFormatter for Nanos {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "µs"),
            t if t < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per_iter = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => n as f64,
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n as f64,
            Throughput::Bits(n) => n as f64,
        };
        let _ = typical;
        values.iter_mut().for_each(|v| *v = per_iter * 1e9 / *v);
        "elem/s (cpu)"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
