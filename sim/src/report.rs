//! The report in three formats: a table for people, CSV and JSON for tools.

use super::outcome::Outcome;
use super::replicas::{Run, Sharing};
use super::stats::ms;
use super::{Config, ModeReport, fleet};
use serde_json::{Value, json};
use std::fmt::Write;

/// How to print the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Sections with a header line each, for reading.
    Table,
    /// One row per measurement: `scenario,mode,worker,metric,value`.
    Csv,
    /// One JSON document.
    Json,
}

/// Renders `reports` (run with `config`; `timer_ns` is the clock's own cost).
pub fn render(format: Format, config: &Config, reports: &[ModeReport], timer_ns: u64) -> String {
    render_with(format, config, reports, None, timer_ns)
}

/// Renders `reports` and, after them, the fleet scenarios' report, if any.
pub fn render_with(
    format: Format,
    config: &Config,
    reports: &[ModeReport],
    scenarios: Option<(&fleet::Scenarios, &fleet::Report)>,
    timer_ns: u64,
) -> String {
    match format {
        Format::Table => {
            let mut o = super::table::table(config, reports, timer_ns);
            if let Some((s, r)) = scenarios {
                o.push_str(&fleet::table::sections(s, r, super::table::SECTIONS + 1));
            }
            o
        }
        Format::Csv => {
            let mut o = csv(reports);
            if let Some((_, r)) = scenarios {
                o.push_str(&fleet::export::csv(r));
            }
            o
        }
        Format::Json => {
            let mut v = json(config, reports, timer_ns);
            if let Some((s, r)) = scenarios {
                v["fleet_scenarios"] = fleet::export::json(s, r);
            }
            serde_json::to_string_pretty(&v).expect("plain values")
        }
    }
}

fn csv(reports: &[ModeReport]) -> String {
    let mut o = String::from("scenario,mode,worker,metric,value\n");
    let mut row = |scenario: &str, mode: &str, worker: Option<usize>, metric: &str, value: f64| {
        let worker = worker.map_or(String::new(), |w| format!("w{w}"));
        let _ = writeln!(o, "{scenario},{mode},{worker},{metric},{value}");
    };
    for r in reports {
        let m = r.mode.as_str();
        for (scenario, l) in [("fleet", &r.load), ("classic400", &r.classic)] {
            row(scenario, m, None, "requests_per_s", l.requests_per_s());
            row(scenario, m, None, "latency_mean_us", l.latency_us.mean);
            row(scenario, m, None, "latency_p99_us", l.latency_us.p99 as f64);
            row(scenario, m, None, "pick_p50_ns", l.select_ns.p50 as f64);
            row(scenario, m, None, "pick_p99_ns", l.select_ns.p99 as f64);
            for (w, x) in l.workers.iter().enumerate() {
                row(scenario, m, Some(w), "requests", x.requests as f64);
                row(
                    scenario,
                    m,
                    Some(w),
                    "peak_in_flight",
                    f64::from(x.peak_in_flight),
                );
                row(scenario, m, Some(w), "end_in_flight", f64::from(x.end_in_flight));
            }
        }
        if let Some(c) = &r.load.churn {
            let w = Some(c.worker as usize);
            row(
                "churn",
                m,
                w,
                "in_flight_at_removal",
                f64::from(c.in_flight_at_removal),
            );
            row("churn", m, w, "served_while_out", c.served_while_out as f64);
            row("churn", m, w, "kept_at_readd", f64::from(c.kept_at_readd));
        }
        for run in &r.replicas {
            let scenario = format!("replicas-{}-{}", run.replicas, run.sharing.name());
            let x = &run.outcome;
            row(&scenario, m, None, "latency_mean_us", x.latency_us.mean);
            row(&scenario, m, None, "latency_p99_us", x.latency_us.p99 as f64);
            for (w, (&served, &peak)) in x.served.iter().zip(&x.peak_in_flight).enumerate() {
                row(&scenario, m, Some(w), "requests", served as f64);
                row(&scenario, m, Some(w), "peak_in_flight", f64::from(peak));
            }
        }
        row("idle", m, None, "selections_per_s", r.selections_per_s);
        let b = &r.bursts;
        row("bursts", m, None, "bursts", b.bursts as f64);
        row("bursts", m, None, "even_splits", b.even as f64);
        row("bursts", m, None, "max_on_one_worker", f64::from(b.max_on_one));
        for (w, &c) in b.end_in_flight.iter().enumerate() {
            row("bursts", m, Some(w), "end_in_flight", f64::from(c));
        }
    }
    o
}

fn outcome_json(l: &Outcome) -> Value {
    json!({
        "requests": l.requests,
        "elapsed_s": l.elapsed.as_secs_f64(),
        "requests_per_s": l.requests_per_s(),
        "latency_us": { "mean": l.latency_us.mean, "p50": l.latency_us.p50, "p99": l.latency_us.p99, "max": l.latency_us.max },
        "pick_ns": { "mean": l.select_ns.mean, "p50": l.select_ns.p50, "p99": l.select_ns.p99, "max": l.select_ns.max },
        "workers": l.workers.iter().enumerate().map(|(w, x)| json!({
            "worker": format!("w{w}"),
            "requests": x.requests,
            "peak_in_flight": x.peak_in_flight,
            "end_in_flight": x.end_in_flight,
        })).collect::<Vec<_>>(),
        "unserved": l.unserved,
        "served_twice": l.served_twice,
        "churn": l.churn.as_ref().map(|c| json!({
            "worker": format!("w{}", c.worker),
            "in_flight_at_removal": c.in_flight_at_removal,
            "served_while_out": c.served_while_out,
            "kept_at_readd": c.kept_at_readd,
            "removed_ms": c.removed_ms,
            "readded_ms": c.readded_ms,
        })),
    })
}

fn replica_json(run: &Run) -> Value {
    let (sharing, period) = match run.sharing {
        Sharing::Local => ("local", None),
        Sharing::Reported(p) => ("reported", Some(ms(p))),
        Sharing::Synced(p) => ("synced", Some(ms(p))),
    };
    let x = &run.outcome;
    json!({
        "replicas": run.replicas,
        "sharing": sharing,
        "period_ms": period,
        "requests": x.requests,
        "virtual_ms": ms(x.virtual_time),
        "latency_us": { "mean": x.latency_us.mean, "p50": x.latency_us.p50, "p99": x.latency_us.p99, "max": x.latency_us.max },
        "peak_in_flight": x.peak(),
        "workers": (0..x.served.len()).map(|w| json!({
            "worker": format!("w{w}"),
            "requests": x.served[w],
            "peak_in_flight": x.peak_in_flight[w],
            "end_in_flight": x.end_in_flight[w],
        })).collect::<Vec<_>>(),
    })
}

fn json(config: &Config, reports: &[ModeReport], timer_ns: u64) -> Value {
    let load = &config.load;
    json!({
        "config": {
            "speeds": load.fleet.speeds,
            "slots_per_worker": load.fleet.slots,
            "service_ms": ms(load.fleet.service),
            "requests": load.requests,
            "concurrency": load.concurrency,
            "threads": load.threads,
            "seed": load.seed,
            "bursts": config.bursts,
            "classic_requests": config.classic_requests,
            "timer_overhead_ns": timer_ns,
            "replica_scenario": config.replicas.as_ref().map(|s| json!({
                "replicas": s.replicas,
                "periods_ms": s.periods.iter().map(|&p| ms(p)).collect::<Vec<_>>(),
                "utilization": s.utilization,
                "requests": s.requests,
                "seed": s.seed,
            })),
        },
        "modes": reports.iter().map(|r| json!({
            "mode": r.mode,
            "fleet": outcome_json(&r.load),
            "selections_per_s": r.selections_per_s,
            "bursts": {
                "bursts": r.bursts.bursts,
                "even_splits": r.bursts.even,
                "max_on_one_worker": r.bursts.max_on_one,
                "end_in_flight": r.bursts.end_in_flight,
            },
            "classic400": outcome_json(&r.classic),
            "replicas": r.replicas.iter().map(replica_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "violations": super::violations(reports),
    })
}
