//! The scenarios' sections of the table report.

use super::super::outcome::Outcome;
use super::super::stats::ms;
use super::weighted::{off_by, shares};
use super::{Report, Scenarios};
use std::fmt::Write;

/// The sections for `report` (run with `scenarios`), numbered from `first`.
pub fn sections(scenarios: &Scenarios, report: &Report, first: usize) -> String {
    let mut o = String::new();
    let mut n = first;
    if let Some(w) = &scenarios.weighted
        && !report.weighted.is_empty()
    {
        weighted(&mut o, n, w, report);
        n += 1;
    }
    if let Some(s) = &scenarios.scale_up
        && !report.scale_up.is_empty()
    {
        scale_up(&mut o, n, s, report);
    }
    if !report.weighted.is_empty() || !report.scale_up.is_empty() {
        let broken = report.violations();
        if broken.is_empty() {
            o.push_str("- Invariants held in these runs too: every request served once, every in-flight count back to 0.\n");
        }
        for v in broken {
            let _ = writeln!(o, "- BROKEN: {v}");
        }
    }
    o
}

fn p(o: &Outcome, pick: fn(&super::super::stats::Summary) -> u64) -> f64 {
    pick(&o.latency_us) as f64 / 1e3
}

fn weighted(o: &mut String, n: usize, w: &super::Weighted, report: &Report) {
    let caps: Vec<String> = w.capacities.iter().map(u32::to_string).collect();
    let _ = writeln!(
        o,
        "\n== {n}) Weighted fleet: capacities {}, a capacity-c worker serving {}c at once ({} slots), {} in flight",
        caps.join(":"),
        w.slots,
        w.fleet_slots(),
        w.concurrency
    );
    let _ = writeln!(
        o,
        "Service {:.1} ms ±50% on every worker; {} requests per run from {} router threads. \"weighted\": the\n\
         pool is told each capacity (WorkerInfo::capacity); \"unweighted\": the same fleet, every worker alike to it.",
        ms(w.service),
        w.requests,
        w.threads
    );
    let want = w.capacity_shares();
    let _ = write!(o, "{:<14}{:<12}", "mode", "pool");
    for i in 0..want.len() {
        let _ = write!(o, "{:>8}", format!("w{i}"));
    }
    let _ = writeln!(o, "{:>10}{:>9}{:>9}", "off by", "p50 ms", "p99 ms");
    let _ = write!(o, "{:<26}", "capacity share");
    for s in &want {
        let _ = write!(o, "{:>7.1}%", s * 100.0);
    }
    o.push('\n');
    for r in &report.weighted {
        for (label, x) in [("weighted", &r.weighted), ("unweighted", &r.unweighted)] {
            let mode = if label == "weighted" { r.mode.as_str() } else { "" };
            let _ = write!(o, "{mode:<14}{label:<12}");
            for s in shares(x) {
                let _ = write!(o, "{:>7.1}%", s * 100.0);
            }
            let _ = writeln!(
                o,
                "{:>7.1} pt{:>9.2}{:>9.2}",
                off_by(x, &want) * 100.0,
                p(x, |s| s.p50),
                p(x, |s| s.p99)
            );
        }
    }
    let _ = writeln!(o, "\np99 side by side{:>10}{:>12}", "weighted", "unweighted");
    for r in &report.weighted {
        let (a, b) = (p(&r.weighted, |s| s.p99), p(&r.unweighted, |s| s.p99));
        let _ = writeln!(
            o,
            "{:<16}{:>7.2} ms{:>9.2} ms   ({:.1}x)",
            r.mode,
            a,
            b,
            b / a.max(1e-9)
        );
    }
    let worst = |pick: fn(&super::WeightedRun) -> &Outcome| {
        report
            .weighted
            .iter()
            .map(|r| (off_by(pick(r), &want), r.mode.as_str()))
            .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a })
    };
    let (on, on_mode) = worst(|r| &r.weighted);
    let (off, _) = worst(|r| &r.unweighted);
    let best_off = report
        .weighted
        .iter()
        .map(|r| off_by(&r.unweighted, &want))
        .fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        o,
        "- Weighted, every mode's shares came within {:.1} points of the capacity shares (widest: {on_mode});\n  \
         unweighted, {:.1} to {:.1} points off: the small workers get more than they can serve and queue.",
        on * 100.0,
        best_off * 100.0,
        off * 100.0
    );
}

fn scale_up(o: &mut String, n: usize, s: &super::ScaleUp, report: &Report) {
    let w = s.newcomer();
    let window = ms(s.window);
    let _ = writeln!(
        o,
        "\n== {n}) Scale-up: w{w} joins {} busy workers ({} slots each, {} in flight) after {:.0} ms, cold",
        s.workers,
        s.slots,
        s.concurrency,
        ms(s.before)
    );
    let _ = writeln!(
        o,
        "Cold: its service time starts at {}x the usual ({:.1} ms ±50%) and falls linearly to it over {window:.0} ms;\n\
         slow start: SlowStart::new({window:.0} ms), its weight ramping from 10%. Requests picked in w{w}'s first {window:.0} ms:",
        s.cold,
        ms(s.service),
    );
    let _ = writeln!(
        o,
        "{:<14}{:<12}{:>10}{:>11}{:>11}{:>11}{:>12}{:>11}",
        "mode",
        "slow start",
        format!("w{w} share"),
        format!("1st {:.0} ms", window / 4.0),
        format!("w{w} p50"),
        format!("w{w} p99"),
        "others p99",
        format!("w{w} peak")
    );
    for r in &report.scale_up {
        for (label, x) in [("off", &r.without), ("on", &r.with)] {
            let mode = if label == "off" { r.mode.as_str() } else { "" };
            let label = if label == "on" {
                format!("{window:.0} ms")
            } else {
                label.to_owned()
            };
            match &x.join {
                Some(j) => {
                    let _ = writeln!(
                        o,
                        "{mode:<14}{label:<12}{:>9.1}%{:>10.1}%{:>8.2} ms{:>8.2} ms{:>9.2} ms{:>11}",
                        j.share() * 100.0,
                        j.early_share() * 100.0,
                        j.joined_latency_us.p50 as f64 / 1e3,
                        j.joined_latency_us.p99 as f64 / 1e3,
                        j.others_latency_us.p99 as f64 / 1e3,
                        x.workers[w as usize].peak_in_flight
                    );
                }
                None => {
                    let _ = writeln!(o, "{mode:<14}{label:<12}  (the run ended before w{w} joined)");
                }
            }
        }
    }
    let _ = writeln!(
        o,
        "(share: of the requests picked in the window, and in its first quarter; others: the warm workers'\n\
         requests in the window; peak: the most w{w} held at once, serving and queued.)"
    );
    for r in &report.scale_up {
        if let (Some(off), Some(on)) = r.windows() {
            let ratio = |j: &crate::join::JoinOutcome| {
                j.joined_latency_us.p99 as f64 / j.others_latency_us.p99.max(1) as f64
            };
            let _ = writeln!(
                o,
                "- {}: w{w} took {:.1}% of the window's requests without slow start ({:.1}% of its first quarter),\n  \
                 {:.1}% with it ({:.1}%); its p99 was {:.1}x the warm workers' without, {:.1}x with.",
                r.mode,
                off.share() * 100.0,
                off.early_share() * 100.0,
                on.share() * 100.0,
                on.early_share() * 100.0,
                ratio(off),
                ratio(on)
            );
        }
    }
}
