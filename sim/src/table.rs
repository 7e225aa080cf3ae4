//! The report as a table for people: one section per question, each with a
//! header line saying what it shows.

use super::outcome::{Outcome, WorkerOutcome};
use super::stats::ms;
use super::{CLASSIC_CONCURRENCY, CLASSIC_WORKERS, Config, Fleet, ModeReport};
use std::fmt::Write;
use workerpick::DeviceKind;

/// The numbered sections the table may have (the fleet scenarios' follow).
pub const SECTIONS: usize = 6;

/// Fleets up to this size get a row per worker; larger ones their
/// distribution (CSV and JSON always hold every worker).
pub const LISTED_WORKERS: usize = 64;

/// Most CPU names the header lists.
const LISTED_CPUS: usize = 16;

/// Most distinct speeds the header counts, and section 2 gives a mean row for.
const LISTED_SPEEDS: usize = 8;

/// Renders the table (`timer_ns` is the clock's own cost).
pub fn table(config: &Config, reports: &[ModeReport], timer_ns: u64) -> String {
    let load = &config.load;
    let fleet = &load.fleet;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "workerpick load simulator\n\
         Fleet:   {} worker(s), relative speeds {}; each serves {} at once, the rest queue.\n\
         Service: {:.1} ms at speed 1, scaled by 1/speed, ±50% per request.\n\
         Load:    {} requests per mode, {} in flight at a time, from {} router threads\n         \
         (one pool.handle() each); seed {}.",
        fleet.speeds.len(),
        speeds_text(&fleet.speeds),
        fleet.slots,
        ms(fleet.service),
        load.requests,
        load.concurrency,
        load.threads,
        load.seed,
    );
    let cpus: Vec<String> = (0..fleet.speeds.len())
        .filter(|&w| fleet.devices[w] == DeviceKind::Cpu)
        .map(|w| format!("w{w}"))
        .collect();
    if cpus.len() == fleet.speeds.len() {
        let _ = writeln!(
            o,
            "Devices: every worker on a CPU (device-aware has nothing to weigh them against)."
        );
    } else if cpus.len() > LISTED_CPUS {
        let _ = writeln!(
            o,
            "Devices: {} on CPUs ({} ...), the rest on accelerators (only device-aware looks).",
            cpus.len(),
            cpus[..LISTED_CPUS].join(" ")
        );
    } else if !cpus.is_empty() {
        let _ = writeln!(
            o,
            "Devices: {} on CPUs, the rest on accelerators (only device-aware looks).",
            cpus.join(" ")
        );
    }
    if let Some(c) = load.churn {
        let _ = writeln!(
            o,
            "Churn:   mid-run, w{} is removed while it is serving and inserted again under the same key\n         \
             {:.1} ms later.",
            c.worker,
            ms(c.out_for)
        );
    }

    section(&mut o, "What this run shows (from the numbers below)");
    o.push_str(&summary(reports));

    section(
        &mut o,
        "1) Each mode on that fleet: throughput, request latency (pick + queueing + service), pick cost",
    );
    let mw = mode_width(reports);
    let _ = writeln!(
        o,
        "{:<mw$}{:>8}{:>15}{:>11}{:>13}{:>9}{:>16}",
        "mode", "req/s", "latency mean", "p99", "pick p50 ns", "p99 ns", "picks/s idle"
    );
    for r in reports {
        let l = &r.load;
        let _ = writeln!(
            o,
            "{:<mw$}{:>8}{:>12.2} ms{:>8.2} ms{:>13}{:>9}{:>16}",
            r.mode,
            si(l.requests_per_s()),
            l.latency_us.mean / 1e3,
            l.latency_us.p99 as f64 / 1e3,
            l.select_ns.p50,
            l.select_ns.p99,
            si(r.selections_per_s),
        );
    }
    let _ = writeln!(
        o,
        "pick = one handle.reserve() call timed in the request path, on a router thread that just woke up\n\
         (cold caches; the timer itself costs ~{timer_ns} ns);\n\
         picks/s = {} threads reserving and releasing back to back on {} idle worker(s) for {} ms, on {} CPU(s).",
        load.threads,
        fleet.speeds.len(),
        config.rate_window.as_millis(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let workers = fleet.speeds.len();
    let limit = crate::engine::pool_limit(workers);
    let means: Vec<String> = reports
        .iter()
        .map(|r| format!("{} {:.0}", r.mode, r.load.select_ns.mean))
        .collect();
    let _ = writeln!(
        o,
        "pick mean ns (timer included): {};\n\
         pool limit {limit} slots: least-loaded scans {} (the simulator's restatement of the crate's rule).",
        means.join(", "),
        crate::engine::scan_kind(limit, workers, fleet.flat_scan),
    );

    if workers > LISTED_WORKERS {
        distribution(&mut o, fleet, reports);
    } else {
        per_worker(&mut o, fleet, reports);
    }
    let cw = column_width(reports);
    let rw = cw - 6;
    let _ = write!(o, "{:<13}", "total");
    for r in reports {
        let total: u64 = r.load.workers.iter().map(|w| w.requests).sum();
        let _ = write!(o, "  {:>rw$}{:>6}", total, "");
    }
    let _ = write!(o, "\n{:<13}", "end in-flight");
    for r in reports {
        let _ = write!(o, "  {:>cw$}", ends(&r.load));
    }
    o.push('\n');
    if workers > LISTED_WORKERS {
        extremes(&mut o, fleet, reports);
    }

    if let Some(c) = load.churn {
        section(
            &mut o,
            &format!(
                "3) Fleet change: w{} removed while serving, re-added under the same key — no reservation lost",
                c.worker
            ),
        );
        let _ = writeln!(
            o,
            "{:<mw$}{:>22}{:>18}{:>21}{:>15}",
            "mode", "in flight at removal", "served while out", "load kept at re-add", "end in-flight"
        );
        for r in reports {
            if let Some(ch) = &r.load.churn {
                let _ = writeln!(
                    o,
                    "{:<mw$}{:>22}{:>18}{:>21}{:>15}",
                    r.mode,
                    ch.in_flight_at_removal,
                    ch.served_while_out,
                    ch.kept_at_readd,
                    r.load.workers[ch.worker as usize].end_in_flight
                );
            }
        }
        let _ = writeln!(
            o,
            "Once removed, w{0} gets no new picks, but its reservations stay valid and keep counting until they\n\
             drop; re-adding the same key shows the load it still holds. Nothing is lost: see totals in 2).",
            c.worker
        );
    }

    section(
        &mut o,
        &format!(
            "4) Classic check: {} bursts of {CLASSIC_CONCURRENCY} reservations held together ({} threads), {CLASSIC_WORKERS} idle workers",
            config.bursts,
            load.threads.clamp(1, CLASSIC_CONCURRENCY)
        ),
    );
    let even = CLASSIC_CONCURRENCY / CLASSIC_WORKERS;
    let split = vec![even.to_string(); CLASSIC_WORKERS].join("/");
    let _ = writeln!(
        o,
        "{:<mw$}{:>22}{:>24}{:>16}",
        "mode",
        format!("bursts split {split}"),
        "most on one worker",
        "end in-flight"
    );
    for r in reports {
        let b = &r.bursts;
        let _ = writeln!(
            o,
            "{:<mw$}{:>22}{:>24}{:>16}",
            r.mode,
            format!("{} of {}", b.even, b.bursts),
            b.max_on_one,
            all_zero(&b.end_in_flight)
        );
    }

    section(
        &mut o,
        &format!(
            "5) Classic check: {} requests, {CLASSIC_CONCURRENCY} in flight at a time, {CLASSIC_WORKERS} equal workers — requests per worker",
            config.classic_requests
        ),
    );
    let _ = write!(o, "{:<mw$}", "mode");
    for w in 0..CLASSIC_WORKERS {
        let _ = write!(o, "{:>7}", format!("w{w}"));
    }
    let _ = writeln!(o, "{:>16}", "end in-flight");
    for r in reports {
        let _ = write!(o, "{:<mw$}", r.mode);
        for w in &r.classic.workers {
            let _ = write!(o, "{:>7}", w.requests);
        }
        let _ = writeln!(o, "{:>16}", ends(&r.classic));
    }

    if let Some(scenario) = &config.replicas
        && reports.iter().any(|r| !r.replicas.is_empty())
    {
        section(
            &mut o,
            "6) Router replicas: R routers in front of the same fleet, each with its own pool",
        );
        o.push_str(&super::replicas::table::header(scenario));
        let workers = fleet.speeds.len();
        if workers > super::replicas::MAX_WORKERS {
            let _ = writeln!(
                o,
                "On the first {} of the {workers} workers (same speed mix): every pick here scans the fleet,\n\
                 and some ten runs per mode of {} picks on all of them would take minutes.",
                super::replicas::MAX_WORKERS,
                scenario.requests
            );
        }
        for r in reports.iter().filter(|r| !r.replicas.is_empty()) {
            o.push('\n');
            o.push_str(&super::replicas::table::block(&r.mode, scenario, &r.replicas));
        }
    }

    section(&mut o, "Reading it");
    let mixed = fleet.devices.iter().any(|&d| d != fleet.devices[0]);
    o.push_str(&reading(reports, fleet.speeds.as_slice(), mixed));
    o
}

/// The width of the mode column in sections 1, 3, 4 and 5: the longest
/// mode name and two spaces, at least the 14 the short names had.
fn mode_width(reports: &[ModeReport]) -> usize {
    reports
        .iter()
        .map(|r| r.mode.len() + 2)
        .max()
        .unwrap_or(0)
        .max(14)
}

/// The width of a mode's column in section 2 (requests and peak side by
/// side, the name over both): the longest name, at least 14.
fn column_width(reports: &[ModeReport]) -> usize {
    reports.iter().map(|r| r.mode.len()).max().unwrap_or(0).max(14)
}

/// Section 2's head: its title and the modes' column headers.
fn head(o: &mut String, title: &str, first: &str, reports: &[ModeReport]) {
    section(o, title);
    let (cw, rw) = (column_width(reports), column_width(reports) - 6);
    let _ = write!(o, "{first:<13}");
    for r in reports {
        let _ = write!(o, "  {:>cw$}", r.mode);
    }
    let _ = write!(o, "\n{:13}", "");
    for _ in reports {
        let _ = write!(o, "  {:>rw$}{:>6}", "req", "peak");
    }
    o.push('\n');
}

/// Section 2 for a small fleet: a row per worker.
fn per_worker(o: &mut String, fleet: &Fleet, reports: &[ModeReport]) {
    head(
        o,
        "2) Requests served and peak in flight (serving + queued) per worker, same runs",
        "worker  speed",
        reports,
    );
    let rw = column_width(reports) - 6;
    for (w, speed) in fleet.speeds.iter().enumerate() {
        let cpu = if fleet.devices[w] == DeviceKind::Cpu {
            " cpu"
        } else {
            ""
        };
        let _ = write!(o, "{:<7}{:>6}", format!("w{w}{cpu}"), speed);
        for r in reports {
            let x = &r.load.workers[w];
            let _ = write!(o, "  {:>rw$}{:>6}", x.requests, x.peak_in_flight);
        }
        o.push('\n');
    }
}

/// Section 2 for a large fleet: how requests and peaks spread over it (each
/// column on its own: a row's figures may come from different workers) and
/// the mean per speed.
fn distribution(o: &mut String, fleet: &Fleet, reports: &[ModeReport]) {
    head(
        o,
        &format!(
            "2) Requests served and peak in flight (serving + queued) over the {} workers, same runs",
            fleet.speeds.len()
        ),
        "over workers",
        reports,
    );
    let sorted: Vec<(Vec<u64>, Vec<u32>)> = reports
        .iter()
        .map(|r| {
            let mut req: Vec<u64> = r.load.workers.iter().map(|x| x.requests).collect();
            let mut peak: Vec<u32> = r.load.workers.iter().map(|x| x.peak_in_flight).collect();
            req.sort_unstable();
            peak.sort_unstable();
            (req, peak)
        })
        .collect();
    let rw = column_width(reports) - 6;
    for (name, q) in [
        ("min", 0.0),
        ("p1", 0.01),
        ("median", 0.5),
        ("p99", 0.99),
        ("max", 1.0),
    ] {
        let _ = write!(o, "{name:<13}");
        for (req, peak) in &sorted {
            let _ = write!(o, "  {:>rw$}{:>6}", at(req, q), at(peak, q));
        }
        o.push('\n');
    }
    let speeds = distinct(&fleet.speeds);
    if speeds.len() <= LISTED_SPEEDS {
        for &(speed, n) in &speeds {
            let _ = write!(o, "{:<13}", format!("mean at {speed}"));
            for r in reports {
                let (sum, peak) = r
                    .load
                    .workers
                    .iter()
                    .zip(&fleet.speeds)
                    .filter(|&(_, &s)| s == speed)
                    .fold((0u64, 0u64), |(a, b), (x, _)| {
                        (a + x.requests, b + u64::from(x.peak_in_flight))
                    });
                let _ = write!(
                    o,
                    "  {:>rw$.1}{:>6.1}",
                    sum as f64 / n as f64,
                    peak as f64 / n as f64
                );
            }
            o.push('\n');
        }
    }
}

/// After section 2 of a large fleet: each mode's busiest and idlest worker.
fn extremes(o: &mut String, fleet: &Fleet, reports: &[ModeReport]) {
    for r in reports {
        let by_requests =
            |a: &(usize, &WorkerOutcome), b: &(usize, &WorkerOutcome)| a.1.requests.cmp(&b.1.requests);
        let workers = r.load.workers.iter().enumerate();
        if let (Some((most, m)), Some((fewest, f))) =
            (workers.clone().max_by(by_requests), workers.min_by(by_requests))
        {
            let _ = writeln!(
                o,
                "{}: most requests w{most} (speed {}, {} requests), fewest w{fewest} (speed {}, {})",
                r.mode, fleet.speeds[most], m.requests, fleet.speeds[fewest], f.requests
            );
        }
    }
}

/// The `q`-quantile of `sorted` (nearest rank; 0 when empty).
fn at<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Each distinct value of `speeds` with how many workers have it, in first-seen order.
fn distinct(speeds: &[f64]) -> Vec<(f64, usize)> {
    let mut seen: Vec<(f64, usize)> = Vec::new();
    for &s in speeds {
        match seen.iter_mut().find(|(v, _)| *v == s) {
            Some((_, n)) => *n += 1,
            None => seen.push((s, 1)),
        }
        if seen.len() > LISTED_SPEEDS {
            break;
        }
    }
    seen
}

/// The header's speeds: each worker's for a small fleet, else how many have each.
fn speeds_text(speeds: &[f64]) -> String {
    if speeds.len() <= LISTED_WORKERS {
        return speeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" ");
    }
    let seen = distinct(speeds);
    if seen.len() > LISTED_SPEEDS {
        let min = speeds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = speeds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        return format!("from {min} to {max}");
    }
    seen.iter()
        .map(|(s, n)| format!("{s} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The few lines first in the table: the extremes of sections 1 to 6, each
/// computed from the run.
fn summary(reports: &[ModeReport]) -> String {
    let mut o = String::new();
    let extremes = |key: &dyn Fn(&ModeReport) -> u64| {
        let lo = reports.iter().min_by_key(|r| key(r))?;
        let hi = reports.iter().max_by_key(|r| key(r))?;
        (key(lo) != key(hi)).then_some((lo, hi))
    };
    if reports.iter().all(|r| r.load.requests > 0) {
        if let Some((lo, hi)) = extremes(&|r| r.load.latency_us.p99) {
            let _ = writeln!(
                o,
                "- p99 latency on the fleet (1): lowest {} {:.2} ms, highest {} {:.2} ms.",
                lo.mode,
                lo.load.latency_us.p99 as f64 / 1e3,
                hi.mode,
                hi.load.latency_us.p99 as f64 / 1e3
            );
        }
        if let Some((lo, hi)) = extremes(&|r| r.load.select_ns.p50) {
            let _ = writeln!(
                o,
                "- Pick cost, p50 (1): cheapest {} {} ns, dearest {} {} ns.",
                lo.mode, lo.load.select_ns.p50, hi.mode, hi.load.select_ns.p50
            );
        }
        let peak =
            |r: &ModeReport| u64::from(r.load.workers.iter().map(|w| w.peak_in_flight).max().unwrap_or(0));
        if let Some((lo, hi)) = extremes(&peak) {
            let _ = writeln!(
                o,
                "- Most in flight on one worker (2): {} under {}, {} under {}.",
                peak(lo),
                lo.mode,
                peak(hi),
                hi.mode
            );
        }
    }
    let bursts: Vec<&ModeReport> = reports.iter().filter(|r| r.bursts.bursts > 0).collect();
    if !bursts.is_empty() {
        let uneven: Vec<&str> = bursts
            .iter()
            .filter(|r| r.bursts.even != r.bursts.bursts)
            .map(|r| r.mode.as_str())
            .collect();
        let _ = write!(
            o,
            "- Bursts split evenly every time (4): {} of {} modes",
            bursts.len() - uneven.len(),
            bursts.len()
        );
        let _ = if uneven.is_empty() {
            writeln!(o, ".")
        } else {
            writeln!(o, "; not {}.", uneven.join(", "))
        };
    }
    let verdicts: Vec<(&str, bool)> = reports
        .iter()
        .filter_map(|r| Some((r.mode.as_str(), super::replicas::table::meets(&r.replicas)?)))
        .collect();
    if !verdicts.is_empty() {
        let missed: Vec<&str> = verdicts.iter().filter(|v| !v.1).map(|v| v.0).collect();
        let _ = write!(
            o,
            "- {} replicas synced within {:.0}% of one router's p99 (6): {} of {} modes",
            super::replicas::table::TARGET_REPLICAS,
            super::replicas::table::TARGET_WITHIN * 100.0,
            verdicts.len() - missed.len(),
            verdicts.len()
        );
        let _ = if missed.is_empty() {
            writeln!(o, ".")
        } else {
            writeln!(o, "; not {}.", missed.join(", "))
        };
    }
    let broken = super::violations(reports).len();
    let _ = if broken == 0 {
        writeln!(
            o,
            "- Invariants held in every run (each request served once, in-flight counts back to 0)."
        )
    } else {
        writeln!(o, "- {broken} invariant(s) BROKEN: see \"Reading it\".")
    };
    o
}

fn section(o: &mut String, title: &str) {
    let _ = writeln!(o, "\n== {title}");
}

/// A few sentences drawn from the numbers above.
/// `mixed`: the fleet has CPUs and accelerators both.
fn reading(reports: &[ModeReport], speeds: &[f64], mixed: bool) -> String {
    let mut o = String::new();
    let by_p99 = |a: &&ModeReport, b: &&ModeReport| a.load.latency_us.p99.cmp(&b.load.latency_us.p99);
    if reports.iter().any(|r| r.load.requests == 0) {
        o.push_str("- The fleet run sent no requests: nothing to compare the modes on.\n");
    } else if let (Some(best), Some(worst)) = (reports.iter().min_by(by_p99), reports.iter().max_by(by_p99))
        && best.mode != worst.mode
    {
        let _ = writeln!(
            o,
            "- {}: p99 latency {:.1} ms against {:.1} ms for {} ({:.1}x lower), at {:.1}x the requests/s.",
            best.mode,
            best.load.latency_us.p99 as f64 / 1e3,
            worst.load.latency_us.p99 as f64 / 1e3,
            worst.mode,
            worst.load.latency_us.p99 as f64 / best.load.latency_us.p99.max(1) as f64,
            best.load.requests_per_s() / worst.load.requests_per_s().max(1e-9),
        );
        let slowest = (0..speeds.len())
            .min_by(|&a, &b| speeds[a].total_cmp(&speeds[b]))
            .unwrap_or(0);
        let uneven = speeds.iter().any(|&s| s != speeds[slowest]);
        // Device-aware's effect is on CPUs beside accelerators; without both it has none.
        let telling = uneven && (mixed || best.mode != "device-aware");
        if let Some(how) = super::modes::how(&best.mode).filter(|_| telling) {
            let _ = writeln!(
                o,
                "  {how}, so the slowest worker (w{slowest}, speed {}) got {} requests, not {}.",
                speeds[slowest], best.load.workers[slowest].requests, worst.load.workers[slowest].requests,
            );
        }
    }
    let exact: Vec<&str> = reports
        .iter()
        .filter(|r| r.bursts.bursts > 0 && r.bursts.even == r.bursts.bursts)
        .map(|r| r.mode.as_str())
        .collect();
    if !exact.is_empty() {
        let _ = writeln!(o, "- Every burst split evenly under: {}.", exact.join(", "));
    }
    o.push_str(
        "- Rule of thumb: least-loaded when workers differ or requests vary (exact, one SIMD scan per pick);\n  \
         power-of-two when the fleet is huge and a scan is too much; ",
    );
    if mixed {
        o.push_str("device-aware when CPUs and accelerators\n  serve together; ");
    }
    o.push_str("round-robin or random only for identical workers and uniform requests.\n");
    let broken = super::violations(reports);
    if broken.is_empty() {
        o.push_str(
            "- Invariants held: every request served exactly once, every in-flight count back to 0.\n",
        );
    } else {
        for v in broken {
            let _ = writeln!(o, "- BROKEN: {v}");
        }
    }
    o
}

fn ends(o: &Outcome) -> String {
    all_zero(&o.workers.iter().map(|w| w.end_in_flight).collect::<Vec<_>>())
}

fn all_zero(v: &[u32]) -> String {
    if v.iter().all(|&c| c == 0) {
        "all 0".into()
    } else {
        format!("{v:?}")
    }
}

/// `x` with an SI suffix: 3.91k, 52.1M.
fn si(x: f64) -> String {
    let (v, unit) = match x {
        x if x >= 1e9 => (x / 1e9, "G"),
        x if x >= 1e6 => (x / 1e6, "M"),
        x if x >= 1e3 => (x / 1e3, "k"),
        x => (x, ""),
    };
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}
