//! The heterogeneous-fleet scenarios, printed after the main report: a
//! weighted fleet (capacity weights set, against an unweighted pool over the
//! same workers) and a scale-up (a cold worker joins a busy fleet, with and
//! without slow start). Both run on the main run's engine: router threads,
//! a real pool, simulated service.

pub mod export;
pub mod scale_up;
pub mod table;
pub mod weighted;

use super::Progress;
use super::engine::{self, Load};
use super::modes;
use super::outcome::Outcome;

pub use scale_up::{ScaleUp, ScaleUpRun};
pub use weighted::{Weighted, WeightedRun};

/// Which scenarios to run, and their shapes.
#[derive(Clone, Debug, Default)]
pub struct Scenarios {
    /// The weighted fleet, if it runs.
    pub weighted: Option<Weighted>,
    /// The scale-up, if it runs.
    pub scale_up: Option<ScaleUp>,
}

/// What the scenarios measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Per mode: the weighted pool's run and the unweighted one's.
    pub weighted: Vec<WeightedRun>,
    /// Per mode: the run without slow start and the one with it.
    pub scale_up: Vec<ScaleUpRun>,
}

impl Scenarios {
    /// Units of progress (requests) the scenarios report.
    pub fn progress_total(&self) -> u64 {
        let weighted = self.weighted.as_ref().map_or(0, Weighted::progress_total);
        let scale_up = self.scale_up.as_ref().map_or(0, ScaleUp::progress_total);
        weighted + scale_up
    }

    /// Whether any scenario runs.
    pub fn any(&self) -> bool {
        self.weighted.is_some() || self.scale_up.is_some()
    }
}

/// Runs the scenarios, in order.
pub fn run(scenarios: &Scenarios, progress: &dyn Progress) -> Result<Report, String> {
    Ok(Report {
        weighted: match &scenarios.weighted {
            Some(w) => w.run(progress)?,
            None => Vec::new(),
        },
        scale_up: match &scenarios.scale_up {
            Some(s) => s.run(progress)?,
            None => Vec::new(),
        },
    })
}

impl Report {
    /// The invariants every run must keep (each request served once, every
    /// in-flight count back to 0); each broken one as a sentence.
    pub fn violations(&self) -> Vec<String> {
        let runs = self
            .weighted
            .iter()
            .flat_map(|r| {
                [
                    (&r.mode, "weighted fleet, weighted", &r.weighted),
                    (&r.mode, "weighted fleet, unweighted", &r.unweighted),
                ]
            })
            .chain(self.scale_up.iter().flat_map(|r| {
                [
                    (&r.mode, "scale-up without slow start", &r.without),
                    (&r.mode, "scale-up with slow start", &r.with),
                ]
            }));
        runs.flat_map(|(mode, what, o)| {
            o.violations()
                .into_iter()
                .map(move |v| format!("{mode}, {what}: {v}"))
        })
        .collect()
    }
}

/// The modes among `names` (any spelling the registry accepts) that are in
/// `supported`, by their canonical names, in the order given, once each.
fn among(names: &[String], supported: &[&str]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let canonical = modes::selector(name)?.name().to_owned();
        if supported.contains(&canonical.as_str()) && !out.contains(&canonical) {
            out.push(canonical);
        }
    }
    Ok(out)
}

/// Runs each of `modes` on `load(first)` then on `load(!first)`, naming each
/// stage by `stage(mode, flag)`: a scenario's two runs per mode, in order.
fn each_mode_twice(
    modes: &[String],
    first: bool,
    load: impl Fn(bool) -> Load,
    stage: impl Fn(&str, bool) -> String,
    progress: &dyn Progress,
) -> Result<Vec<(String, Outcome, Outcome)>, String> {
    modes
        .iter()
        .map(|mode| {
            let selector = modes::selector(mode)?;
            progress.stage(&stage(mode, first));
            let a = engine::run(&load(first), &*selector, progress);
            progress.stage(&stage(mode, !first));
            let b = engine::run(&load(!first), &*selector, progress);
            Ok((selector.name().to_owned(), a, b))
        })
        .collect()
}
