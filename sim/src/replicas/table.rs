//! The replica scenario's section of the table.

use super::{Run, Scenario, Sharing};
use crate::stats::ms;
use std::fmt::Write;

/// The target the scenario is held to: this many replicas, synced, within
/// this fraction of the single router's p99.
pub const TARGET_REPLICAS: usize = 4;
/// See [`TARGET_REPLICAS`].
pub const TARGET_WITHIN: f64 = 0.10;

/// The section's heading and explanation.
pub fn header(scenario: &Scenario) -> String {
    format!(
        "Poisson arrivals at {:.0}% of what the fleet can serve, each sent to a random replica; {} requests\n\
         per run, played in virtual time (seed {}). Each replica books with its own pool; the workers hold\n\
         and queue requests as above. Each cell: the latency's p99 (arrival to end of service) / the most\n\
         requests one worker held at once.\n\
         local = each counts its own bookings only; reported = each worker reports what it holds to every\n\
         replica once a period (each takes it less its own); synced = each replica sends summary() to the\n\
         others once a period, which apply_summary() it.\n",
        scenario.utilization * 100.0,
        scenario.requests,
        scenario.seed,
    )
}

/// One mode's block: a row per way of sharing, a column per replica count.
pub fn block(mode: &str, scenario: &Scenario, runs: &[Run]) -> String {
    let mut o = String::new();
    let multi: Vec<usize> = scenario.replicas.iter().copied().filter(|&r| r > 1).collect();
    let _ = write!(o, "{:<22}{:>14}", mode, "one router");
    for r in &multi {
        let _ = write!(o, "{:>14}", format!("{r} replicas"));
    }
    o.push('\n');
    let mut rows = vec![Sharing::Local];
    rows.extend(scenario.periods.iter().map(|&p| Sharing::Reported(p)));
    rows.extend(scenario.periods.iter().map(|&p| Sharing::Synced(p)));
    for sharing in rows {
        let label = match sharing {
            Sharing::Local => "local counts only".to_owned(),
            Sharing::Reported(p) => format!("reported every {} ms", ms(p)),
            Sharing::Synced(p) => format!("synced every {} ms", ms(p)),
        };
        let _ = write!(o, "{label:<22}");
        let single = (sharing == Sharing::Local)
            .then(|| find(runs, 1, Sharing::Local))
            .flatten();
        let _ = write!(o, "{:>14}", single.map_or(String::new(), cell));
        for &r in &multi {
            let _ = write!(o, "{:>14}", find(runs, r, sharing).map_or("-".into(), cell));
        }
        o.push('\n');
    }
    if let Some(line) = verdict(mode, runs) {
        o.push_str(&line);
    }
    o
}

/// The run with `replicas` routers sharing as `sharing` says, if it ran.
pub fn find(runs: &[Run], replicas: usize, sharing: Sharing) -> Option<&Run> {
    runs.iter()
        .find(|r| r.replicas == replicas && r.sharing == sharing)
}

fn cell(run: &Run) -> String {
    format!(
        "{:.1} ms /{:>3}",
        run.outcome.latency_us.p99 as f64 / 1e3,
        run.outcome.peak()
    )
}

/// Whether `runs` meet the target ([`TARGET_REPLICAS`] replicas synced at
/// the shortest period within [`TARGET_WITHIN`] of one router's p99), if
/// the grid had those runs.
pub fn meets(runs: &[Run]) -> Option<bool> {
    let single = find(runs, 1, Sharing::Local)?.outcome.latency_us.p99 as f64;
    let (_, synced) = runs
        .iter()
        .filter(|r| r.replicas == TARGET_REPLICAS)
        .filter_map(|r| match r.sharing {
            Sharing::Synced(p) => Some((p, r.outcome.latency_us.p99 as f64)),
            _ => None,
        })
        .min_by_key(|&(p, _)| p)?;
    (single > 0.0).then(|| synced / single - 1.0 <= TARGET_WITHIN)
}

/// One line on the target: the best synced run of [`TARGET_REPLICAS`] replicas
/// against the single router, and local counts for contrast.
pub fn verdict(mode: &str, runs: &[Run]) -> Option<String> {
    let single = find(runs, 1, Sharing::Local)?.outcome.latency_us.p99 as f64;
    let local = find(runs, TARGET_REPLICAS, Sharing::Local)?
        .outcome
        .latency_us
        .p99 as f64;
    let (period, synced) = runs
        .iter()
        .filter(|r| r.replicas == TARGET_REPLICAS)
        .filter_map(|r| match r.sharing {
            Sharing::Synced(p) => Some((p, r.outcome.latency_us.p99 as f64)),
            _ => None,
        })
        .min_by_key(|&(p, _)| p)?;
    if single <= 0.0 {
        return None;
    }
    let above = synced / single - 1.0;
    let met = if above <= TARGET_WITHIN { "meets" } else { "misses" };
    Some(format!(
        "{mode}, {TARGET_REPLICAS} replicas synced every {} ms: p99 {:+.0}% against one router ({met} the \
         {:.0}% target); local counts only: {:+.0}%.\n",
        ms(period),
        above * 100.0,
        TARGET_WITHIN * 100.0,
        (local / single - 1.0) * 100.0,
    ))
}
