//! Runs the load simulator (`src/main.rs`) on a small fleet and
//! checks what it must always show: every request served exactly once, every
//! in-flight count back to 0 (a worker removed mid-run included), and an exact
//! 8/8/8/8 split of every burst under round-robin and least-loaded.

use workerpick_sim as sim;

use sim::report::{Format, render};
use sim::{Churn, Config, Fleet, Load, ModeReport, Progress};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use workerpick::DeviceKind::{Accelerator, Cpu};

fn small() -> Config {
    Config {
        modes: sim::modes::all(),
        load: Load {
            fleet: Fleet {
                speeds: vec![1.0, 1.0, 1.0, 0.5],
                devices: vec![Accelerator, Accelerator, Accelerator, Cpu],
                slots: 2,
                service: Duration::from_micros(300),
                flat_scan: false,
                capacities: Vec::new(),
                weighted: false,
            },
            concurrency: 8,
            requests: 1200,
            threads: 3,
            seed: 7,
            churn: Some(Churn {
                worker: 0,
                at: 0.25,
                out_for: Duration::from_micros(300),
            }),
            sample_every: Duration::from_millis(1),
            join: None,
        },
        bursts: 20,
        classic_requests: 400,
        rate_window: Duration::from_millis(5),
        replicas: Some(sim::replicas::Scenario {
            replicas: vec![1, 2],
            periods: vec![Duration::from_millis(1)],
            utilization: 0.8,
            requests: 600,
            seed: 7,
        }),
    }
}

#[derive(Default)]
struct Counted(AtomicU64);

impl Progress for Counted {
    fn stage(&self, what: &str) {
        assert!(!what.is_empty());
    }
    fn advance(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }
}

fn per_worker(o: &sim::Outcome) -> Vec<u64> {
    o.workers.iter().map(|w| w.requests).collect()
}

fn check(config: &Config, reports: &[ModeReport]) {
    assert_eq!(sim::violations(reports), Vec::<String>::new());
    for r in reports {
        for o in [&r.load, &r.classic] {
            assert!(
                o.workers.iter().all(|w| w.end_in_flight == 0),
                "{}: {:?}",
                r.mode,
                o.workers
            );
            assert_eq!(per_worker(o).iter().sum::<u64>(), o.requests as u64, "{}", r.mode);
            assert_eq!(
                (o.unserved, o.served_twice, o.draining_at_end),
                (0, 0, 0),
                "{}",
                r.mode
            );
            assert!(o.workers.iter().all(|w| w.peak_in_flight >= 1 || w.requests == 0));
        }
        assert_eq!(r.load.requests, config.load.requests);
        assert_eq!(r.classic.requests, config.classic_requests);
        let churn = r
            .load
            .churn
            .as_ref()
            .expect("the worker was removed and re-added");
        assert!(churn.readded_ms >= churn.removed_ms);
        assert!(
            churn.in_flight_at_removal >= 1,
            "{}: removed while serving",
            r.mode
        );
        assert_eq!(r.bursts.bursts, config.bursts);
        assert!(r.bursts.end_in_flight.iter().all(|&c| c == 0));
        assert_eq!(
            r.bursts.mismatched, 0,
            "{}: pool counts match the reservations",
            r.mode
        );
        assert!(r.selections_per_s > 0.0);
    }
    for exact in ["round-robin", "least-loaded", "device-aware"] {
        let r = reports.iter().find(|r| r.mode == exact).unwrap();
        assert_eq!(r.bursts.even, config.bursts, "{exact}: every burst 8/8/8/8");
        assert_eq!(r.bursts.max_on_one, 8, "{exact}");
    }
    // The cursor hands out each of the 400 tickets once: exactly 100 each.
    let rr = reports.iter().find(|r| r.mode == "round-robin").unwrap();
    assert_eq!(per_worker(&rr.classic), [100; 4]);
}

/// Sections 1 to 5 of `table` line up: in each, the column header and
/// every row (a mode's, or in section 2 a worker's and the totals) are as
/// long as one another, so no mode name pushes its row out of line (before:
/// the 20-character latency-power-of-two against a 14-character column).
fn aligned(table: &str, modes: &[String]) {
    for n in 1..=5 {
        let start = table
            .find(&format!("== {n})"))
            .unwrap_or_else(|| panic!("section {n}"));
        let body = &table[start..];
        let body = &body[..body[3..].find("\n== ").map_or(body.len(), |e| e + 3)];
        let mut lines = body.lines().skip(1);
        let header = lines.next().unwrap();
        let row = |l: &&str| {
            let first = l.split_whitespace().next().unwrap_or("");
            modes.iter().any(|m| m == first)
                || (n == 2 && (first.starts_with('w') || ["req", "total", "end"].contains(&first)))
        };
        let rows: Vec<&str> = lines.filter(row).collect();
        assert!(!rows.is_empty(), "section {n}: no rows in\n{body}");
        for r in rows {
            assert_eq!(
                r.chars().count(),
                header.chars().count(),
                "section {n}, out of line:\n{header}\n{r}"
            );
        }
    }
}

#[test]
fn small_run_keeps_every_invariant() {
    let config = small();
    let progress = Counted::default();
    let reports = sim::run(&config, &progress).unwrap();
    assert_eq!(reports.len(), config.modes.len());
    assert!(config.modes.iter().any(|m| m == "device-aware"));
    check(&config, &reports);
    assert_eq!(progress.0.into_inner(), config.progress_total());

    // Every output renders and says what it shows.
    let table = render(Format::Table, &config, &reports, 20);
    for header in [
        "== 1)",
        "== 2)",
        "== 3)",
        "== 4)",
        "== 5)",
        "== 6)",
        "Invariants held",
    ] {
        assert!(table.contains(header), "{header} missing from:\n{table}");
    }
    aligned(&table, &config.modes);
    // The summary comes first, before the sections it sums up.
    let summary = table.find("== What this run shows").expect("a summary");
    assert!(summary < table.find("== 1)").unwrap(), "{table}");
    assert!(
        table[summary..]
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("- p99 latency"),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&render(Format::Json, &config, &reports, 20)).unwrap();
    assert_eq!(json["modes"].as_array().unwrap().len(), reports.len());
    // The replica scenario ran for the modes that look at load, and only for them.
    for (r, m) in reports.iter().zip(json["modes"].as_array().unwrap()) {
        let runs = m["replicas"].as_array().unwrap().len();
        let expected = if sim::modes::looks_at_load(&r.mode) { 4 } else { 0 };
        assert_eq!((runs, r.replicas.len()), (expected, expected), "{}", r.mode);
    }
    assert_eq!(json["violations"].as_array().unwrap().len(), 0);
    let csv = render(Format::Csv, &config, &reports, 20);
    assert!(csv.starts_with("scenario,mode,worker,metric,value\n"));
    assert!(csv.lines().skip(1).all(|l| l.split(',').count() == 5));

    let path = std::env::temp_dir().join(format!("workerpick-simulate-{}.svg", std::process::id()));
    sim::plot::svg(&path, &reports, &config.load.fleet).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("least-loaded"));
}

#[test]
fn the_checks_catch_a_leak() {
    let config = Config {
        modes: vec!["round-robin".into()],
        bursts: 2,
        classic_requests: 8,
        ..small()
    };
    let mut reports = sim::run(&config, &()).unwrap();
    assert!(sim::violations(&reports).is_empty());
    reports[0].load.workers[1].end_in_flight = 1;
    reports[0].bursts.even -= 1;
    reports[0].classic.served_twice = 1;
    let broken = sim::violations(&reports);
    assert_eq!(broken.len(), 3, "{broken:?}");
}

#[test]
fn unknown_mode_lists_the_known_ones() {
    assert_eq!(sim::modes::selector("rr").unwrap().name(), "round-robin");
    let err = sim::modes::selector("fastest").err().unwrap();
    assert!(err.contains("least-loaded"), "{err}");
}

#[test]
fn percentiles_are_nearest_rank() {
    let s = sim::stats::summary((1..=100).collect());
    assert_eq!((s.p50, s.p99, s.max), (50, 99, 100));
    assert_eq!(s.mean, 50.5);
    assert!(sim::stats::timer_overhead_ns() < 1_000_000);
}
