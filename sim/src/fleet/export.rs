//! The scenarios in the CSV and JSON reports.

use super::super::outcome::Outcome;
use super::super::stats::{Summary, ms};
use super::weighted::shares;
use super::{Report, Scenarios};
use serde_json::{Value, json};
use std::fmt::Write;

/// CSV rows (`scenario,mode,worker,metric,value`, no header) for `report`.
pub fn csv(report: &Report) -> String {
    let mut o = String::new();
    let mut row = |scenario: &str, mode: &str, worker: Option<usize>, metric: &str, value: f64| {
        let worker = worker.map_or(String::new(), |w| format!("w{w}"));
        let _ = writeln!(o, "{scenario},{mode},{worker},{metric},{value}");
    };
    for r in &report.weighted {
        for (scenario, x) in [
            ("weighted-fleet", &r.weighted),
            ("unweighted-fleet", &r.unweighted),
        ] {
            row(scenario, &r.mode, None, "latency_p50_us", x.latency_us.p50 as f64);
            row(scenario, &r.mode, None, "latency_p99_us", x.latency_us.p99 as f64);
            for (w, (s, x)) in shares(x).into_iter().zip(&x.workers).enumerate() {
                row(scenario, &r.mode, Some(w), "requests", x.requests as f64);
                row(scenario, &r.mode, Some(w), "share", s);
            }
        }
    }
    for r in &report.scale_up {
        for (scenario, x) in [
            ("scale-up-no-slow-start", &r.without),
            ("scale-up-slow-start", &r.with),
        ] {
            if let Some(j) = &x.join {
                let w = Some(j.worker as usize);
                row(scenario, &r.mode, w, "window_share", j.share());
                row(scenario, &r.mode, w, "window_requests", j.joined_requests as f64);
                row(
                    scenario,
                    &r.mode,
                    w,
                    "window_latency_p50_us",
                    j.joined_latency_us.p50 as f64,
                );
                row(
                    scenario,
                    &r.mode,
                    w,
                    "window_latency_p99_us",
                    j.joined_latency_us.p99 as f64,
                );
                row(
                    scenario,
                    &r.mode,
                    w,
                    "peak_in_flight",
                    f64::from(x.workers[j.worker as usize].peak_in_flight),
                );
                row(
                    scenario,
                    &r.mode,
                    None,
                    "window_requests",
                    j.window_requests as f64,
                );
                row(
                    scenario,
                    &r.mode,
                    None,
                    "window_latency_p99_us",
                    j.fleet_latency_us.p99 as f64,
                );
                row(
                    scenario,
                    &r.mode,
                    None,
                    "window_others_latency_p99_us",
                    j.others_latency_us.p99 as f64,
                );
                row(scenario, &r.mode, w, "first_quarter_share", j.early_share());
            }
        }
    }
    o
}

fn latency(s: &Summary) -> Value {
    json!({ "mean": s.mean, "p50": s.p50, "p99": s.p99, "max": s.max })
}

fn run(x: &Outcome) -> Value {
    json!({
        "requests": x.requests,
        "elapsed_s": x.elapsed.as_secs_f64(),
        "latency_us": latency(&x.latency_us),
        "workers": x.workers.iter().zip(shares(x)).enumerate().map(|(w, (x, share))| json!({
            "worker": format!("w{w}"),
            "requests": x.requests,
            "share": share,
            "peak_in_flight": x.peak_in_flight,
        })).collect::<Vec<_>>(),
        "joined": x.join.as_ref().map(|j| json!({
            "worker": format!("w{}", j.worker),
            "joined_ms": j.joined_ms,
            "window_ms": j.window_ms,
            "window_requests": j.window_requests,
            "joined_requests": j.joined_requests,
            "share": j.share(),
            "latency_us": latency(&j.joined_latency_us),
            "first_quarter_share": j.early_share(),
            "fleet_latency_us": latency(&j.fleet_latency_us),
            "others_latency_us": latency(&j.others_latency_us),
        })),
    })
}

/// The JSON value for `report` (run with `scenarios`).
pub fn json(scenarios: &Scenarios, report: &Report) -> Value {
    json!({
        "weighted": scenarios.weighted.as_ref().map(|w| json!({
            "capacities": w.capacities,
            "capacity_shares": w.capacity_shares(),
            "slots_per_capacity": w.slots,
            "service_ms": ms(w.service),
            "concurrency": w.concurrency,
            "requests": w.requests,
            "runs": report.weighted.iter().map(|r| json!({
                "mode": r.mode,
                "weighted": run(&r.weighted),
                "unweighted": run(&r.unweighted),
            })).collect::<Vec<_>>(),
        })),
        "scale_up": scenarios.scale_up.as_ref().map(|s| json!({
            "workers_before": s.workers,
            "slots": s.slots,
            "service_ms": ms(s.service),
            "concurrency": s.concurrency,
            "cold": s.cold,
            "window_ms": ms(s.window),
            "joins_after_ms": ms(s.before),
            "requests": s.requests(),
            "runs": report.scale_up.iter().map(|r| json!({
                "mode": r.mode,
                "without_slow_start": run(&r.without),
                "with_slow_start": run(&r.with),
            })).collect::<Vec<_>>(),
        })),
        "violations": report.violations(),
    })
}
