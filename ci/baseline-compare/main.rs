//! The plain-pool hot paths of two builds of workerpick in one process: `base`
//! (a pinned commit) and `tree` (the working tree), linked side by side by
//! ci/baseline-compare.sh. Each operation goes through a cached `Handle` on a
//! `Pool::from_workers` pool with default settings and reads the worker.
//!
//!   compare [ROUNDS]     interleaved timing: base, tree, base, ... per operation;
//!                        prints the median ns of each and their ratio
//!   count OP OPS         runs OP (e.g. `tree/random_reserve/8`) OPS times in
//!                        `measure`, for callgrind's --toggle-collect

use std::hint::black_box;
use std::time::Instant;

/// One plain-pool operation: (name, workers).
const OPERATIONS: [&str; 6] = [
    "random_select",
    "round_robin_select",
    "random_reserve",
    "round_robin_reserve",
    "power_of_two_reserve",
    "least_loaded_reserve",
];
const SIZES: [u32; 2] = [8, 1024];

macro_rules! build {
    ($krate:ident) => {
        mod $krate {
            use std::hint::black_box;
            use $krate::{LeastLoaded, Pool, PowerOfTwo, Random, Rng, RoundRobin};

            /// A runner: `ops` operations on a pool of `workers`, built once.
            pub struct Bench {
                pool: &'static Pool<u32>,
                handle: $krate::Handle<'static, u32>,
                op: &'static str,
            }

            impl Bench {
                pub fn new(op: &'static str, workers: u32) -> Bench {
                    let pool: &'static Pool<u32> =
                        Box::leak(Box::new(Pool::from_workers(0..workers).expect("a valid pool")));
                    let handle = pool.handle_with_rng(Rng::with_seed(0x1a1));
                    let mut bench = Bench { pool, handle, op };
                    bench.run(16);
                    bench
                }

                #[inline(never)]
                pub fn run(&mut self, ops: u64) {
                    let _ = self.pool;
                    let h = &mut self.handle;
                    match self.op {
                        "random_select" => random_select(h, ops),
                        "round_robin_select" => round_robin_select(h, ops),
                        "random_reserve" => reserve(h, &Random::new(), ops),
                        "round_robin_reserve" => reserve(h, &RoundRobin::new(), ops),
                        "power_of_two_reserve" => reserve(h, &PowerOfTwo::new(), ops),
                        "least_loaded_reserve" => reserve(h, &LeastLoaded::new(), ops),
                        other => panic!("unknown operation {other}"),
                    }
                }
            }

            type H = $krate::Handle<'static, u32>;

            #[inline(never)]
            fn random_select(h: &mut H, ops: u64) {
                let s = Random::new();
                for _ in 0..ops {
                    black_box(h.select(black_box(&s)).ok().copied());
                }
            }

            #[inline(never)]
            fn round_robin_select(h: &mut H, ops: u64) {
                let s = RoundRobin::new();
                for _ in 0..ops {
                    black_box(h.select(black_box(&s)).ok().copied());
                }
            }

            /// Reserve, read the worker, drop (release).
            #[inline(never)]
            fn reserve<S: $krate::Selector>(h: &mut H, s: &S, ops: u64) {
                for _ in 0..ops {
                    black_box(h.reserve(black_box(s)).ok().map(|r| *r.worker()));
                }
            }
        }
    };
}

build!(base);
build!(tree);

enum Bench {
    Base(base::Bench),
    Tree(tree::Bench),
}

impl Bench {
    fn new(side: &str, op: &'static str, workers: u32) -> Bench {
        match side {
            "base" => Bench::Base(base::Bench::new(op, workers)),
            "tree" => Bench::Tree(tree::Bench::new(op, workers)),
            other => usage(&format!("unknown side `{other}` (base or tree)")),
        }
    }
    fn run(&mut self, ops: u64) {
        match self {
            Bench::Base(b) => b.run(ops),
            Bench::Tree(b) => b.run(ops),
        }
    }
}

/// The region callgrind counts (`--toggle-collect=*measure*`).
#[inline(never)]
fn measure(bench: &mut Bench, ops: u64) {
    bench.run(black_box(ops));
}

/// ns per operation of one timed batch.
fn time(bench: &mut Bench, ops: u64) -> f64 {
    let start = Instant::now();
    bench.run(ops);
    start.elapsed().as_nanos() as f64 / ops as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// An argument it cannot run: one line, exit code 2 (never a panic).
fn usage(why: &str) -> ! {
    eprintln!("compare: {why}; usage: compare [ROUNDS] | count SIDE/OP/WORKERS [OPS]");
    std::process::exit(2)
}

/// The `i`th argument as a whole number in `range`, or `default` when absent.
fn number<T: std::str::FromStr + PartialOrd>(args: &[String], i: usize, range: std::ops::RangeInclusive<T>, default: T) -> T {
    match args.get(i) {
        None => default,
        Some(a) => match a.parse() {
            Ok(n) if range.contains(&n) => n,
            _ => usage(&format!("`{a}` is not a whole number in range")),
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().unwrap_or_else(|a| usage(&format!("`{}` is not UTF-8", a.to_string_lossy()))))
        .collect();
    match args.first().map(String::as_str) {
        Some("count") => {
            let spec = args.get(1).map_or_else(|| usage("count needs SIDE/OP/WORKERS"), String::as_str);
            let ops: u64 = number(&args, 2, 1..=u64::MAX, 1000);
            let [side, op, workers] = spec.split('/').collect::<Vec<_>>()[..] else {
                usage(&format!("`{spec}` is not SIDE/OP/WORKERS"))
            };
            let op = OPERATIONS
                .into_iter()
                .find(|o| *o == op)
                .unwrap_or_else(|| usage(&format!("unknown operation `{op}` (one of {})", OPERATIONS.join(", "))));
            let workers = workers
                .parse()
                .ok()
                .filter(|w| (1..=65_536).contains(w))
                .unwrap_or_else(|| usage(&format!("`{workers}` is not a worker count from 1 to 65536")));
            let mut bench = Bench::new(side, op, workers);
            measure(&mut bench, ops);
        }
        Some("compare") | None => {
            let rounds: usize = number(&args, 1, 1..=9999, 21);
            let tolerance: f64 = std::env::var("TOLERANCE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.05);
            println!("{:<28} {:>9} {:>9} {:>7}", "operation/workers", "base ns", "tree ns", "ratio");
            let mut worst = 0.0f64;
            for workers in SIZES {
                for op in OPERATIONS {
                    let mut base = Bench::new("base", op, workers);
                    let mut tree = Bench::new("tree", op, workers);
                    // Batch size: ~2 ms per batch.
                    let mut ops = 1000u64;
                    while time(&mut base, ops) * (ops as f64) < 2e6 {
                        ops *= 2;
                    }
                    let (mut b, mut t, mut r) = (Vec::new(), Vec::new(), Vec::new());
                    for round in 0..rounds {
                        // Alternate which side goes first, so neither always follows the other.
                        let (x, y) = if round % 2 == 0 {
                            let x = time(&mut base, ops);
                            (x, time(&mut tree, ops))
                        } else {
                            let y = time(&mut tree, ops);
                            (time(&mut base, ops), y)
                        };
                        b.push(x);
                        t.push(y);
                        r.push(y / x);
                    }
                    let ratio = median(&mut r);
                    worst = worst.max(ratio);
                    let flag = if ratio > tolerance { "  over" } else { "" };
                    println!(
                        "{:<28} {:>9.2} {:>9.2} {:>7.3}{flag}",
                        format!("{op}/{workers}"),
                        median(&mut b),
                        median(&mut t),
                        ratio
                    );
                }
            }
            println!("worst median ratio {worst:.3} (tolerance {tolerance})");
        }
        Some(other) => usage(&format!("unknown command `{other}` (compare or count)")),
    }
}
