//! Heap allocations per 1000 operations, per mode and operation, ours and the
//! reference, counted by a global allocator. Ours must be 0: the binary fails
//! if any of our paths allocates. Also checks that the reference design does
//! what it claims (exact least-loaded, loads back to zero), since every ratio
//! in the report leans on it.
//!
//! Prints a table and writes `target/bench-report/allocations.txt`
//! (allocations per operation) for the report.

mod common;

use common::counting::{Counting, per};
use common::reference::Reference;
use common::{MODES, reference_policy, report_dir, test_mode};
use std::hint::black_box;
use workerpick::{Mode, Pool, Request, Rng, Selector};

#[global_allocator]
static GLOBAL: Counting = Counting;

const WORKERS: usize = 1024;

struct Row {
    mode: &'static str,
    op: &'static str,
    imp: &'static str,
    allocs: u64,
}

fn measure<S: Selector>(mode: Mode, sel: &S, ops: u64, rows: &mut Vec<Row>) {
    let pool = Pool::from_workers(0..WORKERS as u64).unwrap();
    let reference = Reference::new(0..WORKERS as u64, 1);
    let policy = reference_policy(mode);
    let mut h = pool.handle_with_rng(Rng::with_seed(1));
    let half = pool.eligibility(|w| w.is_multiple_of(2));
    let masked = Request::new().eligible(&half);
    let keep_half = |w: &u64| w.is_multiple_of(2);
    let dynamic: &dyn Selector = black_box(sel);
    let mut row = |op, imp, allocs| {
        rows.push(Row {
            mode: mode.name(),
            op,
            imp,
            allocs,
        })
    };
    row(
        "select",
        "workerpick-handle",
        per(ops, || {
            black_box(*h.select(sel).unwrap());
        }),
    );
    row(
        "select",
        "workerpick-handle-dyn",
        per(ops, || {
            black_box(*h.select(dynamic).unwrap());
        }),
    );
    row(
        "select",
        "workerpick-pool",
        per(ops, || {
            black_box(pool.select(sel).unwrap());
        }),
    );
    row(
        "select",
        "reference",
        per(ops, || {
            black_box(reference.select(policy, None));
        }),
    );
    row(
        "reserve",
        "workerpick-handle",
        per(ops, || drop(h.reserve(sel).unwrap())),
    );
    row(
        "reserve",
        "workerpick-handle-dyn",
        per(ops, || drop(h.reserve(dynamic).unwrap())),
    );
    row(
        "reserve",
        "workerpick-pool",
        per(ops, || drop(pool.reserve(sel).unwrap())),
    );
    row(
        "reserve",
        "reference",
        per(ops, || drop(reference.reserve(policy, None))),
    );
    row(
        "preview",
        "workerpick-handle",
        per(ops, || {
            black_box(*h.preview(sel).unwrap());
        }),
    );
    row(
        "preview",
        "reference",
        per(ops, || {
            black_box(reference.preview(policy, None));
        }),
    );
    row(
        "masked-reserve",
        "workerpick-handle",
        per(ops, || drop(h.reserve_with(sel, &masked).unwrap())),
    );
    row(
        "masked-reserve",
        "reference",
        per(ops, || drop(reference.reserve(policy, Some(&keep_half)))),
    );
    // Reservations held across operations, then released: the guards
    // themselves live on the caller's stack.
    let mut held = Vec::with_capacity(64);
    row(
        "reserve-held-64",
        "workerpick-handle",
        per(ops, || {
            held.push(h.reserve(sel).unwrap());
            if held.len() == 64 {
                held.clear();
            }
        }),
    );
    drop(held);
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
}

/// The reference must be a faithful baseline: exact least-loaded while nobody
/// releases, and every booking given back.
fn check_reference() {
    let r = Reference::new(0..4u64, 7);
    let held: Vec<_> = (0..8)
        .map(|_| r.reserve(reference_policy(Mode::LeastLoaded), None).unwrap())
        .collect();
    assert!(
        (0..4).all(|w| r.in_flight(&w) == 2),
        "reference least-loaded is not exact"
    );
    let odd = |w: &u64| w % 2 == 1;
    for mode in MODES {
        let g = r.reserve(reference_policy(mode), Some(&odd)).unwrap();
        assert!(odd(g.worker()), "reference ignored the filter");
    }
    drop(held);
    assert!((0..4).all(|w| r.in_flight(&w) == 0), "reference leaked a booking");
}

fn main() {
    check_reference();
    let ops = if test_mode() { 10 } else { 1000 };
    let mut rows = Vec::new();
    for mode in MODES {
        with_selector!(mode, |sel| measure(mode, &sel, ops, &mut rows));
    }

    println!("allocations per {ops} operations, {WORKERS} workers");
    println!(
        "{:<14} {:<16} {:<22} {:>8}",
        "mode", "op", "implementation", "allocs"
    );
    for r in &rows {
        println!("{:<14} {:<16} {:<22} {:>8}", r.mode, r.op, r.imp, r.allocs);
    }
    let bad: Vec<_> = rows
        .iter()
        .filter(|r| r.imp != "reference" && r.allocs != 0)
        .collect();

    if !test_mode() {
        // `mode/op/impl=allocations per op` lines, read by the report.
        let mut lines = format!("scan_backend={}\n", workerpick::scan::Backend::detect().name());
        for r in &rows {
            lines += &format!("{}/{}/{}={}\n", r.mode, r.op, r.imp, r.allocs as f64 / ops as f64);
        }
        let dir = report_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("allocations.txt"), lines).unwrap();
    }
    if !bad.is_empty() {
        for r in bad {
            eprintln!("ALLOCATES: {} {} {}: {}", r.mode, r.op, r.imp, r.allocs);
        }
        std::process::exit(1);
    }
}
