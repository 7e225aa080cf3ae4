//! The command line refuses what it cannot run, before doing any work, with a
//! one-line message; and its summary draws no conclusion from nothing.

use std::ffi::OsStr;
use std::fmt::Debug;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs the simulator with `args`; returns (exit code, stdout, stderr, time).
fn simulate<S: AsRef<OsStr>>(args: &[S]) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args(args)
        .output()
        .expect("the simulate binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        start.elapsed(),
    )
}

/// `args` are refused at once (exit 2, nothing on stdout) with one line
/// on stderr that names `flag`.
fn refused<S: AsRef<OsStr> + Debug>(args: &[S], flag: &str) {
    let (code, stdout, stderr, took) = simulate(args);
    assert_eq!(code, Some(2), "{args:?}: stdout {stdout:?} stderr {stderr:?}");
    assert_eq!(stdout, "", "{args:?}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr:?}");
    assert!(stderr.starts_with("simulate: "), "{args:?}: {stderr:?}");
    assert!(stderr.contains(flag), "{args:?}: {stderr:?} does not name {flag}");
    assert!(took < Duration::from_secs(5), "{args:?}: took {took:?}");
}

#[test]
fn workers_beyond_the_pool_limit_are_refused() {
    refused(&["--workers", "100000000000"], "--workers");
    refused(&["--workers", "100000000"], "--workers");
}

/// Fleets the pool accepts but a run cannot finish in reasonable time (before:
/// accepted, then silent for minutes).
#[test]
fn fleets_too_large_to_finish_are_refused() {
    refused(&["-w", "67108864"], "--workers");
    refused(&["--workers", "2000000", "--speeds", "1"], "--workers");
}

#[test]
fn a_plot_it_cannot_write_is_refused_before_the_run() {
    refused(&["--plot", "load.png"], "--plot");
    refused(&["--plot", "load"], "--plot");
    refused(&["--plot", "/no/such/directory/load.svg"], "--plot");
    // One line per worker: a legend of thousands says nothing.
    refused(&["--plot", "load.svg", "--workers", "1000"], "--plot");
}

/// Before: `--llm-plot llm.png` wrote SVG into a `.png` and exited 0, and a
/// path it could not write failed only after the whole run.
#[test]
fn an_llm_plot_it_cannot_write_is_refused_before_the_run() {
    refused(&["--llm-plot", "llm.png"], "--llm-plot");
    refused(&["--llm-plot", "llm"], "--llm-plot");
    refused(&["--llm-plot", "/no/such/directory/llm.svg"], "--llm-plot");
    // The scenario it draws is skipped: nothing would be written.
    refused(&["--llm-plot", "llm.svg", "--llm-requests", "0"], "--llm-plot");
}

/// Before: checked only once every earlier scenario had run and printed.
#[test]
fn scenario_sizes_past_the_limit_are_refused_before_the_run() {
    refused(&["--llm-requests", "100000000000"], "--llm-requests");
    refused(&["--latency-requests", "100000000000"], "--latency-requests");
}

/// A fleet far beyond one thread per worker slot runs, on threads bounded by
/// the requests in flight (before: one thread per slot, a spawn failure at
/// 5 000 workers).
#[test]
fn a_large_fleet_runs_on_a_bounded_number_of_threads() {
    let out = table(&[
        "--workers",
        "20000",
        "--speeds",
        "1",
        "--slots",
        "8",
        "-n",
        "400",
        "--bursts",
        "2",
        "--modes",
        "least-loaded,random",
    ]);
    assert!(out.contains("Invariants held"), "{out}");
    // Summarised, not one row per worker (nor one speed or CPU name each).
    // (Some 130 lines with the summary first; a row per worker would be 20 000.)
    assert!(out.lines().count() < 140, "{} lines", out.lines().count());
    assert!(out.lines().all(|l| l.len() < 400), "a line per fleet");
    for row in [
        "min",
        "median",
        "p99",
        "max",
        "total",
        "least-loaded: most requests",
    ] {
        assert!(out.contains(row), "{row}: {out}");
    }
}

#[test]
fn a_small_fleet_lists_every_worker() {
    let out = table(&["-n", "40", "--bursts", "2", "--modes", "random"]);
    for w in 0..8 {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("w{w} "))),
            "w{w}: {out}"
        );
    }
}

#[test]
fn sizes_that_would_exhaust_memory_or_threads_are_refused() {
    refused(&["--threads", "100000"], "--threads");
    refused(&["--requests", "1000000000000"], "--requests");
    refused(&["--concurrency", "1000000000"], "--concurrency");
    // Before: an allocation of 1.6 TB, and an abort.
    refused(&["--bursts", "100000000000"], "--bursts");
}

/// Arguments that are not UTF-8, or empty, are refused like any other
/// (never a panic).
#[test]
fn arguments_that_are_not_text_are_refused() {
    let bad = OsStr::from_bytes(b"\xffw");
    refused(&[bad], "\u{fffd}w");
    refused(&[OsStr::new("--modes"), bad], "UTF-8");
    refused(&[""], "''");
    refused(&["--workers", ""], "--workers");
    refused(&["--modes", ""], "selector");
}

#[test]
fn speeds_too_small_to_finish_are_refused() {
    refused(&["--speeds", "1e-300"], "--speeds");
    refused(&["--speeds", "1,0.000001"], "--speeds");
}

#[test]
fn negative_numbers_are_refused_by_name() {
    refused(&["--workers", "-3"], "--workers");
    refused(&["-n", "-1"], "--requests");
    refused(&["--speeds", "-1"], "--speeds");
    refused(&["--service-ms", "-2"], "--service-ms");
    refused(&["--out-ms", "-1"], "--out-ms");
    refused(&["--out-ms", "1e300"], "--out-ms");
}

/// A quick run of `args` (each test gives `--requests` and `--bursts`); its table.
fn table(args: &[&str]) -> String {
    // The fleet scenarios have tests of their own (tests/fleet.rs, and the
    // last test here).
    let base = [
        "--service-ms",
        "0.2",
        "--no-fleet-scenarios",
        "--llm-requests",
        "0",
        "--no-mooncake",
    ];
    let args: Vec<&str> = base.iter().chain(args).copied().collect();
    let (code, stdout, stderr, _) = simulate(&args);
    assert_eq!(code, Some(0), "{args:?}: {stderr}");
    stdout
}

#[test]
fn no_requests_no_recommendation() {
    let out = table(&["-n", "0", "--bursts", "4", "--modes", "random,least-loaded"]);
    assert!(!out.contains("p99 latency"), "{out}");
    assert!(out.contains("no requests"), "{out}");
}

#[test]
fn no_bursts_no_even_split() {
    let out = table(&["-n", "40", "--bursts", "0", "--modes", "random"]);
    assert!(!out.contains("split evenly under"), "{out}");
}

#[test]
fn an_all_cpu_fleet_has_no_accelerators() {
    let out = table(&[
        "-n",
        "40",
        "--bursts",
        "4",
        "--workers",
        "4",
        "--cpus",
        "0,1,2,3",
        "--modes",
        "device-aware",
    ]);
    assert!(!out.contains("accelerator"), "{out}");
}

#[test]
fn replica_scenarios_it_cannot_run_are_refused() {
    refused(&["--replicas", "0"], "--replicas");
    refused(&["--replicas", "1,100000"], "--replicas");
    refused(&["--periods-ms", "0"], "--periods-ms");
    refused(&["--periods-ms", "1,NaN"], "--periods-ms");
    refused(&["--utilization", "0"], "--utilization");
    refused(&["--utilization", "3"], "--utilization");
    refused(&["--replica-requests", "1000000000000"], "--replica-requests");
}

#[test]
fn the_replica_scenario_runs_for_load_aware_modes_and_can_be_skipped() {
    let args = [
        "-n",
        "40",
        "--bursts",
        "2",
        "--replicas",
        "1,4",
        "--periods-ms",
        "0.5",
    ];
    let with = |extra: &[&str]| table(&[&args[..], extra].concat());
    let out = with(&["--modes", "random,least-loaded", "--replica-requests", "400"]);
    assert!(out.contains("== 6) Router replicas"), "{out}");
    assert!(out.contains("synced every 0.5 ms"), "{out}");
    assert!(
        out.contains("least-loaded, 4 replicas synced every 0.5 ms"),
        "{out}"
    );
    assert!(!out.contains("random, 4 replicas"), "{out}");
    // The herding check follows, on identical and mixed workers, with its verdict.
    assert!(out.contains("Herding: 4 router replicas"), "{out}");
    // --service-ms 0.2: the rule syncs every 1/20 of it.
    assert!(
        out.contains("replica-least-loaded, synced every 0.01 ms (the rule)"),
        "{out}"
    );
    assert!(
        out.contains("The rule, replica-least-loaded synced every 0.01 ms (1/20"),
        "{out}"
    );
    let out = with(&["--modes", "least-loaded", "--replica-requests", "0"]);
    assert!(!out.contains("== 6)"), "{out}");
    assert!(!out.contains("Herding"), "{out}");
    let out = with(&["--modes", "random", "--replica-requests", "400"]);
    assert!(!out.contains("== 6)"), "{out}");
}

#[test]
fn fleet_scenarios_it_cannot_run_are_refused() {
    refused(&["--scale-up-ms", "-1"], "--scale-up-ms");
    refused(&["--scale-up-ms", "1e9"], "--scale-up-ms");
    refused(&["--fleet-requests", "1000000000000"], "--fleet-requests");
    // Too many requests to last the window at this service time.
    refused(
        &["--service-ms", "0.00001", "--scale-up-ms", "60000"],
        "--scale-up-ms",
    );
}

#[test]
fn the_fleet_scenarios_follow_the_report_and_can_be_skipped() {
    let args = [
        "--service-ms",
        "0.5",
        "-n",
        "40",
        "--bursts",
        "2",
        "--replica-requests",
        "0",
        "--scale-up-ms",
        "40",
        "--llm-requests",
        "0",
        "--no-mooncake",
    ];
    let run = |extra: &[&str]| {
        let args = [&args[..], extra].concat();
        let (code, stdout, stderr, _) = simulate(&args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        stdout
    };
    let out = run(&["--modes", "least-loaded", "--fleet-requests", "400"]);
    assert!(out.contains("== 7) Weighted fleet"), "{out}");
    assert!(out.contains("== 8) Scale-up: w4 joins"), "{out}");
    assert!(out.contains("least-loaded: w4 took"), "{out}");
    // Random has a weighted rule but no load for slow start to hold back.
    let out = run(&["--modes", "random", "--fleet-requests", "400"]);
    assert!(
        out.contains("== 7) Weighted fleet") && !out.contains("Scale-up"),
        "{out}"
    );
    let out = run(&["--modes", "least-loaded", "--no-fleet-scenarios"]);
    assert!(
        !out.contains("Weighted fleet") && !out.contains("Scale-up"),
        "{out}"
    );
    let out = run(&["--modes", "least-loaded", "--fleet-requests", "0"]);
    assert!(
        !out.contains("Weighted fleet") && out.contains("== 7) Scale-up"),
        "{out}"
    );
}
