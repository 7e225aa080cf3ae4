//! Instructions per operation, for `ci/bench-report.sh` to count under
//! callgrind: instruction counts do not depend on the machine's load, so they
//! show what bounds a figure when the timings are noisy.
//!
//! `ir list` names the operations; `ir run NAME COUNT` runs one COUNT times on
//! an idle pool (the script subtracts a COUNT = 0 run). Under
//! `cargo bench -- --test` it runs each operation once.

mod common;

use common::Mode;
use common::reference::Reference;
use std::hint::black_box;
use workerpick::{Pool, Rng, Selector};

/// (mode, workers) pairs counted: the targets' worker counts.
const CASES: [(Mode, usize); 6] = [
    (Mode::Random, 64),
    (Mode::RoundRobin, 64),
    (Mode::PowerOfTwo, 64),
    (Mode::LeastLoaded, 8),
    (Mode::LeastLoaded, 1024),
    (Mode::LeastLoaded, 10_000),
];
/// Every pick reads the worker it got, as a router must; `reserve-bare` does
/// not, to show what that read costs.
const OPS: [&str; 6] = [
    "select",
    "select-dyn",
    "reserve",
    "reserve-bare",
    "reserve-dyn",
    "reserve-reference",
];

fn names() -> Vec<String> {
    CASES
        .iter()
        .flat_map(|(m, n)| OPS.iter().map(move |op| format!("{}/{n}/{op}", m.name())))
        .collect()
}

fn run<S: Selector>(sel: &S, mode: Mode, n: usize, op: &str, count: u64) {
    let pool = Pool::from_workers(0..n as u64).unwrap();
    let reference = Reference::new(0..n as u64, 1);
    let mut h = pool.handle_with_rng(Rng::with_seed(1));
    let dynamic: &dyn Selector = black_box(sel);
    // One warm-up call each so first-use costs are outside the count.
    let count = count + 1;
    match op {
        "select" => (0..count).for_each(|_| {
            black_box(*h.select(sel).unwrap());
        }),
        "select-dyn" => (0..count).for_each(|_| {
            black_box(*h.select(dynamic).unwrap());
        }),
        "reserve" => (0..count).for_each(|_| {
            black_box(*h.reserve(sel).unwrap().worker());
        }),
        "reserve-bare" => (0..count).for_each(|_| drop(h.reserve(sel).unwrap())),
        "reserve-dyn" => (0..count).for_each(|_| {
            black_box(*h.reserve(dynamic).unwrap().worker());
        }),
        "reserve-reference" => (0..count).for_each(|_| {
            black_box(*reference.reserve(mode.reference(), None).unwrap().worker());
        }),
        _ => panic!("unknown operation {op}"),
    }
}

fn run_named(name: &str, count: u64) {
    let mut parts = name.splitn(3, '/');
    let (mode, n, op) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let mode = Mode::ALL
        .into_iter()
        .find(|m| m.name() == mode)
        .expect("unknown mode");
    let n: usize = n.parse().expect("worker count");
    with_selector!(mode, |sel| run(&sel, mode, n, op, count));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.first().map(String::as_str) {
        Some("list") => names().iter().for_each(|n| println!("{n}")),
        Some("run") => run_named(&args[1], args[2].parse().expect("COUNT")),
        // `cargo bench` (with or without --test): a smoke run of each.
        _ => {
            for name in names() {
                run_named(&name, 1);
            }
            println!(
                "ir: ran each of {} operations once (counts: ci/bench-report.sh)",
                names().len()
            );
        }
    }
}
