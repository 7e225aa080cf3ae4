//! The plain reserve + drop through a cached `Handle`, built the way a user
//! builds the crate: from outside its workspace, by path, default features.
//!
//!   outside time [ROUNDS]   each operation in turn, ROUNDS rounds of ~2 ms
//!                           batches, interleaved; prints the minimum and the
//!                           median ns an operation of each
//!   outside count OP [OPS]  runs OP (e.g. `random/8`) OPS times in `measure`,
//!                           for callgrind's --toggle-collect
//!   outside sweep OP [STEP] the handle placed at each STEP-byte offset of a
//!                           4 KiB page (the counters stay where they are):
//!                           prints offset and minimum ns, to show whether
//!                           the time depends on where the data lie
//!
//! Each selector's loop is written three ways: `OP` as ci/baseline-compare
//! writes it (`.ok().map(..)`), `OP-unwrap` as benches/single.rs does, and
//! `OP-held` with the reservation where other code can see it (in memory: a
//! router hands it to the request's future). `floor` is one locked increment
//! and one locked decrement, the least any reserve + drop does.
//!
//! ci/outside.sh builds it twice (this package's release profile, the user's
//! build, and `intree`, the workspace's settings) and runs both alternately.

use std::hint::black_box;
use std::time::Instant;
use workerpick::{Handle, LeastLoaded, Pool, PowerOfTwo, Random, Rng, RoundRobin, Selector};

/// The operations: (name, workers).
const OPERATIONS: [(&str, u32); 21] = [
    ("floor", 1),
    ("random", 8),
    ("round-robin", 8),
    ("power-of-two", 8),
    ("least-loaded", 8),
    ("random", 1024),
    ("round-robin", 1024),
    ("power-of-two", 1024),
    ("least-loaded", 1024),
    ("random-unwrap", 8),
    ("round-robin-unwrap", 8),
    ("power-of-two-unwrap", 8),
    ("least-loaded-unwrap", 8),
    ("random-unwrap", 1024),
    ("round-robin-unwrap", 1024),
    ("power-of-two-unwrap", 1024),
    ("least-loaded-unwrap", 1024),
    ("random-held", 8),
    ("round-robin-held", 8),
    ("power-of-two-held", 8),
    ("least-loaded-held", 8),
];

type H = Handle<'static, u32>;

/// Reserve, read the worker, drop (release): what a router does per
/// request, written as ci/baseline-compare/main.rs writes it.
#[inline(never)]
fn reserve<S: Selector>(h: &mut H, s: &S, ops: u64) {
    for _ in 0..ops {
        black_box(h.reserve(black_box(s)).ok().map(|r| *r.worker()));
    }
}

/// What every reserve + drop does at least: one locked increment and one
/// locked decrement of a counter (this host's price of the two).
#[inline(never)]
fn floor(ops: u64) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    for _ in 0..ops {
        black_box(COUNTER.fetch_add(1, Ordering::Relaxed));
        COUNTER.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The reservation held where other code sees it (a router hands it to the
/// request's future): it lives in memory, not only in registers.
#[inline(never)]
fn reserve_held<S: Selector>(h: &mut H, s: &S, ops: u64) {
    for _ in 0..ops {
        if let Ok(r) = h.reserve(black_box(s)) {
            black_box(&r);
        }
    }
}

/// The same, written as benches/single.rs writes it (`unwrap`).
#[inline(never)]
fn reserve_unwrap<S: Selector>(h: &mut H, s: &S, ops: u64) {
    for _ in 0..ops {
        black_box(*h.reserve(black_box(s)).unwrap().worker());
    }
}

/// One operation on its own pool of `workers`, built once.
struct Bench {
    handle: H,
    op: &'static str,
}

impl Bench {
    fn new(op: &'static str, workers: u32) -> Bench {
        let pool: &'static Pool<u32> =
            Box::leak(Box::new(Pool::from_workers(0..workers).expect("a valid pool")));
        let mut bench = Bench {
            handle: pool.handle_with_rng(Rng::with_seed(0x1a1)),
            op,
        };
        bench.run(16);
        bench
    }

    #[inline(never)]
    fn run(&mut self, ops: u64) {
        let h = &mut self.handle;
        match self.op {
            "floor" => floor(ops),
            "random" => reserve(h, &Random::new(), ops),
            "round-robin" => reserve(h, &RoundRobin::new(), ops),
            "power-of-two" => reserve(h, &PowerOfTwo::new(), ops),
            "least-loaded" => reserve(h, &LeastLoaded::new(), ops),
            "random-unwrap" => reserve_unwrap(h, &Random::new(), ops),
            "round-robin-unwrap" => reserve_unwrap(h, &RoundRobin::new(), ops),
            "power-of-two-unwrap" => reserve_unwrap(h, &PowerOfTwo::new(), ops),
            "least-loaded-unwrap" => reserve_unwrap(h, &LeastLoaded::new(), ops),
            "random-held" => reserve_held(h, &Random::new(), ops),
            "round-robin-held" => reserve_held(h, &RoundRobin::new(), ops),
            "power-of-two-held" => reserve_held(h, &PowerOfTwo::new(), ops),
            "least-loaded-held" => reserve_held(h, &LeastLoaded::new(), ops),
            other => usage(&format!("unknown operation `{other}`")),
        }
    }
}

/// The region callgrind counts (`--toggle-collect=*measure*`).
#[inline(never)]
fn measure(bench: &mut Bench, ops: u64) {
    bench.run(black_box(ops));
}

/// ns an operation of one timed batch of `ops`.
fn time(bench: &mut Bench, ops: u64) -> f64 {
    let start = Instant::now();
    bench.run(ops);
    start.elapsed().as_nanos() as f64 / ops as f64
}

/// An argument it cannot run: one line, exit code 2.
fn usage(why: &str) -> ! {
    eprintln!("outside: {why}; usage: outside time [ROUNDS] | outside count OP/WORKERS [OPS]");
    std::process::exit(2)
}

fn parse<T: std::str::FromStr>(arg: Option<&String>, default: T) -> T {
    arg.map_or(Some(default), |a| a.parse().ok())
        .unwrap_or_else(|| usage("not a number"))
}

/// The operation `spec` (`OP/WORKERS`) names.
fn find(spec: &str) -> (&'static str, u32) {
    let (op, workers) = spec.split_once('/').unwrap_or_else(|| usage("not OP/WORKERS"));
    OPERATIONS
        .into_iter()
        .find(|&(o, w)| o == op && w.to_string() == workers)
        .unwrap_or_else(|| usage(&format!("unknown operation `{spec}`")))
}

/// One pool; its bench (the handle and its random source) moved to each
/// `step`-byte offset of a page-aligned buffer in turn, timed there.
fn sweep(op: &'static str, workers: u32, step: usize) {
    use std::alloc::{Layout, alloc, dealloc};
    let layout = Layout::from_size_align(8192, 4096).expect("a valid layout");
    // SAFETY: `layout` has a non-zero size.
    let page = unsafe { alloc(layout) };
    assert!(!page.is_null(), "out of memory");
    let mut bench = Bench::new(op, workers);
    let mut ops = 1000u64;
    while time(&mut bench, ops) * (ops as f64) < 1e6 {
        ops *= 2;
    }
    println!("{:>6} {:>7}", "offset", "min ns");
    for offset in (0..4096).step_by(step) {
        let at = page.wrapping_add(offset).cast::<Bench>();
        // SAFETY: `offset` is a multiple of 8 (`Bench`'s alignment) and
        // leaves `size_of::<Bench>()` bytes in the 8 KiB buffer; the bench
        // is moved in, used, and moved back out before the next offset.
        unsafe {
            at.write(bench);
            let best = (0..5).map(|_| time(&mut *at, ops)).fold(f64::INFINITY, f64::min);
            println!("{offset:>6} {best:>7.2}");
            bench = at.read();
        }
    }
    // SAFETY: allocated above with `layout`; nothing in it is still used.
    unsafe { dealloc(page, layout) };
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("count") => {
            let spec = args.get(1).unwrap_or_else(|| usage("count needs OP/WORKERS"));
            let (op, workers) = find(spec);
            let mut bench = Bench::new(op, workers);
            measure(&mut bench, parse(args.get(2), 1000u64));
        }
        Some("sweep") => {
            let spec = args.get(1).unwrap_or_else(|| usage("sweep needs OP/WORKERS"));
            let (op, workers) = find(spec);
            let step: usize = parse(args.get(2), 64);
            if step == 0 || !step.is_multiple_of(8) {
                usage("STEP must be a positive multiple of 8");
            }
            sweep(op, workers, step);
        }
        Some("time") | None => {
            let rounds: usize = parse(args.get(1), 11);
            if rounds == 0 {
                usage("ROUNDS must be at least 1");
            }
            let mut benches: Vec<(Bench, u64, Vec<f64>)> = OPERATIONS
                .into_iter()
                .map(|(op, workers)| {
                    let mut bench = Bench::new(op, workers);
                    let mut ops = 1000u64;
                    while time(&mut bench, ops) * (ops as f64) < 2e6 {
                        ops *= 2;
                    }
                    (bench, ops, Vec::new())
                })
                .collect();
            for _ in 0..rounds {
                for (bench, ops, times) in &mut benches {
                    times.push(time(bench, *ops));
                }
            }
            for ((op, workers), (_, _, times)) in OPERATIONS.into_iter().zip(&mut benches) {
                times.sort_by(f64::total_cmp);
                println!(
                    "{:<20} {:>7.2} {:>7.2}",
                    format!("{op}/{workers}"),
                    times[0],
                    times[times.len() / 2]
                );
            }
        }
        Some(other) => usage(&format!("unknown command `{other}`")),
    }
}
