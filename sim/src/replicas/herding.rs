//! Herding: router replicas that sync load summaries send their next
//! requests to the same worker that looks idle to all of them, and on
//! identical workers a sync every half service time leaves least-loaded
//! further from one router than counting alone. This check holds the rule the
//! crate offers against it ([`ReplicaLeastLoaded`], with a sync period of
//! [`FAST`] of the service time) to one router's p99, on identical and on
//! mixed workers, beside plain least-loaded and local counts.

use super::{Outcome, Run, Scenario, Sharing};
use crate::engine::Fleet;
use crate::stats::ms;
use std::fmt::Write;
use std::time::Duration;
use workerpick::{DeviceKind, LeastLoaded, Mode, ReplicaLeastLoaded, Selector};

/// The slow sync period, as a fraction of the mean service time (1 ms at 2 ms).
pub const SLOW: f64 = 0.5;
/// The rule's sync period, as a fraction of the mean service time (0.1 ms at 2 ms).
pub const FAST: f64 = 0.05;
/// Router replicas in every replicated row.
pub const REPLICAS: usize = 4;
/// How far above one router's p99 the rule may be.
pub const TARGET_WITHIN: f64 = 0.10;
/// The mixed fleet's speeds, cycled over its workers (the simulator's default fleet).
pub const MIXED: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.25];

/// The check's shape.
#[derive(Clone, Debug)]
pub struct Herding {
    /// Workers in each fleet.
    pub workers: usize,
    /// Requests a worker serves at once.
    pub slots: usize,
    /// Mean service time at speed 1.
    pub service: Duration,
    /// Offered load, as a fraction of what the fleet serves at most.
    pub utilization: f64,
    /// Requests per run.
    pub requests: usize,
    /// Seeds every run.
    pub seed: u64,
}

impl Default for Herding {
    /// The simulator's defaults: 8 workers of 4 slots, 2 ms, 80 %, 40 000 requests.
    fn default() -> Self {
        Self {
            workers: 8,
            slots: 4,
            service: Duration::from_millis(2),
            utilization: 0.8,
            requests: 40_000,
            seed: 42,
        }
    }
}

/// Who picks and how the replicas share: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// One router, least-loaded: what the others are held to.
    OneRouter,
    /// [`REPLICAS`] replicas, least-loaded, each counting its own bookings only.
    Local,
    /// Least-loaded over synced loads, every [`SLOW`] of the service time.
    NaiveSlow,
    /// The rule's selector, synced every [`SLOW`].
    RuleSlow,
    /// Least-loaded over synced loads, every [`FAST`] of the service time.
    NaiveFast,
    /// The rule: [`ReplicaLeastLoaded`], synced every [`FAST`].
    Rule,
}

impl Row {
    /// Every row, in the table's order.
    pub const ALL: [Row; 6] = [
        Row::OneRouter,
        Row::Local,
        Row::NaiveSlow,
        Row::RuleSlow,
        Row::NaiveFast,
        Row::Rule,
    ];
}

/// One fleet's runs, a row each.
#[derive(Clone, Debug)]
pub struct Runs {
    /// The fleet's name: `identical` or `mixed`.
    pub fleet: &'static str,
    /// Per row of [`Row::ALL`], in its order.
    pub runs: Vec<(Row, Run)>,
}

impl Runs {
    /// The run of `row`.
    pub fn of(&self, row: Row) -> &Outcome {
        &self
            .runs
            .iter()
            .find(|(r, _)| *r == row)
            .expect("every row runs")
            .1
            .outcome
    }

    /// `row`'s p99 against one router's, as a fraction above it.
    pub fn above(&self, row: Row) -> f64 {
        let one = self.of(Row::OneRouter).latency_us.p99 as f64;
        self.of(row).latency_us.p99 as f64 / one.max(1.0) - 1.0
    }
}

impl Herding {
    /// The two fleets: all workers at speed 1, and the mixed speeds.
    pub fn fleets(&self) -> [(&'static str, Fleet); 2] {
        let fleet = |speeds: Vec<f64>| Fleet {
            devices: speeds
                .iter()
                .map(|&s| {
                    if s < 1.0 {
                        DeviceKind::Cpu
                    } else {
                        DeviceKind::Accelerator
                    }
                })
                .collect(),
            speeds,
            slots: self.slots,
            service: self.service,
            flat_scan: false,
            capacities: Vec::new(),
            weighted: false,
        };
        [
            ("identical", fleet(vec![1.0; self.workers])),
            (
                "mixed",
                fleet(MIXED.iter().copied().cycle().take(self.workers).collect()),
            ),
        ]
    }

    /// The sync period `fraction` of the service time stands for (at least
    /// 1 ns: a period of 0 would never let virtual time pass).
    pub fn period(&self, fraction: f64) -> Duration {
        self.service.mul_f64(fraction).max(Duration::from_nanos(1))
    }

    /// Runs every row on both fleets.
    pub fn run(&self) -> Vec<Runs> {
        let scenario = Scenario {
            replicas: vec![1, REPLICAS],
            periods: vec![self.period(FAST), self.period(SLOW)],
            utilization: self.utilization,
            requests: self.requests,
            seed: self.seed,
        };
        let (naive, rule) = (LeastLoaded::new(), ReplicaLeastLoaded::new());
        self.fleets()
            .into_iter()
            .map(|(name, fleet)| {
                let runs = Row::ALL
                    .iter()
                    .map(|&row| {
                        let (selector, replicas, sharing): (&dyn Selector, _, _) = match row {
                            Row::OneRouter => (&naive, 1, Sharing::Local),
                            Row::Local => (&naive, REPLICAS, Sharing::Local),
                            Row::NaiveSlow => (&naive, REPLICAS, Sharing::Synced(self.period(SLOW))),
                            Row::RuleSlow => (&rule, REPLICAS, Sharing::Synced(self.period(SLOW))),
                            Row::NaiveFast => (&naive, REPLICAS, Sharing::Synced(self.period(FAST))),
                            Row::Rule => (&rule, REPLICAS, Sharing::Synced(self.period(FAST))),
                        };
                        let outcome = scenario.run_one(&fleet, selector, replicas, sharing);
                        (
                            row,
                            Run {
                                replicas,
                                sharing,
                                outcome,
                            },
                        )
                    })
                    .collect();
                Runs { fleet: name, runs }
            })
            .collect()
    }

    /// The row's label.
    pub fn label(&self, row: Row) -> String {
        let every = |f: f64| format!("synced every {} ms", ms(self.period(f)));
        match row {
            Row::OneRouter => "one router, least-loaded".into(),
            Row::Local => "local counts only".into(),
            Row::NaiveSlow => format!("least-loaded, {}", every(SLOW)),
            Row::RuleSlow => format!("{}, {}", Mode::ReplicaLeastLoaded.name(), every(SLOW)),
            Row::NaiveFast => format!("least-loaded, {}", every(FAST)),
            Row::Rule => format!("{}, {} (the rule)", Mode::ReplicaLeastLoaded.name(), every(FAST)),
        }
    }

    /// The table: a row per [`Row`], p50 / p99 and p99 against one router per fleet.
    pub fn table(&self, runs: &[Runs]) -> String {
        let mut o = format!(
            "Herding: {REPLICAS} router replicas, {} workers of {} slots, {:.1} ms service ±50%, Poisson arrivals at {:.0}%\n\
             of capacity sent to random replicas, {} requests per run in virtual time (seed {}). Latency p50 / p99 in ms,\n\
             and p99 against one router. {} counts its own bookings in full and the peers' at 1/{}.\n",
            self.workers,
            self.slots,
            ms(self.service),
            self.utilization * 100.0,
            self.requests,
            self.seed,
            Mode::ReplicaLeastLoaded.name(),
            ReplicaLeastLoaded::new().discount(),
        );
        let _ = write!(o, "{:<52}", "who picks, how the replicas share");
        for r in runs {
            let _ = write!(o, "{:>24}", format!("{} workers", r.fleet));
        }
        o.push('\n');
        for row in Row::ALL {
            let _ = write!(o, "{:<52}", self.label(row));
            for r in runs {
                let l = &r.of(row).latency_us;
                let vs = if row == Row::OneRouter {
                    String::new()
                } else {
                    format!(" ({:+.0}%)", r.above(row) * 100.0)
                };
                let _ = write!(
                    o,
                    "{:>24}",
                    format!("{:.2} / {:.2}{vs}", l.p50 as f64 / 1e3, l.p99 as f64 / 1e3)
                );
            }
            o.push('\n');
        }
        o.push_str(&self.verdict(runs));
        o
    }

    /// One line: whether the rule stays within [`TARGET_WITHIN`] on every fleet.
    pub fn verdict(&self, runs: &[Runs]) -> String {
        let met = runs.iter().all(|r| r.above(Row::Rule) <= TARGET_WITHIN);
        let each = runs
            .iter()
            .map(|r| format!("{:+.0}% on {} workers", r.above(Row::Rule) * 100.0, r.fleet))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "The rule, {} synced every {} ms ({} of the service time): p99 {each} against one router ({} the {:.0}% target).\n",
            Mode::ReplicaLeastLoaded.name(),
            ms(self.period(FAST)),
            fraction(FAST),
            if met { "meets" } else { "misses" },
            TARGET_WITHIN * 100.0,
        )
    }
}

/// `f` as `1/n` when it is one.
fn fraction(f: f64) -> String {
    let n = (1.0 / f).round();
    if (1.0 / n - f).abs() < 1e-9 {
        format!("1/{n}")
    } else {
        format!("{f}")
    }
}
