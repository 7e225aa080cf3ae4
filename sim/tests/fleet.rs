//! The heterogeneous-fleet scenarios on a small, quick configuration: shares
//! and counts only (wall-clock latencies on a shared machine are too noisy to
//! assert on).

use workerpick_sim as sim;

use sim::fleet::weighted::{MODES, off_by, shares};
use sim::fleet::{Report, ScaleUp, Scenarios, Weighted};
use sim::report::{Format, render_with};
use std::time::Duration;

fn modes(names: &[&str]) -> Vec<String> {
    names.iter().map(|&m| m.to_owned()).collect()
}

/// The rest of a run's report: the main run skipped, so only the scenarios'
/// sections come after its header.
fn empty_config() -> sim::Config {
    sim::Config {
        modes: Vec::new(),
        load: sim::Load {
            fleet: sim::Fleet {
                speeds: vec![1.0],
                devices: vec![workerpick::DeviceKind::Accelerator],
                slots: 1,
                service: Duration::from_millis(1),
                flat_scan: false,
                capacities: Vec::new(),
                weighted: false,
            },
            concurrency: 1,
            requests: 0,
            threads: 1,
            seed: 1,
            churn: None,
            sample_every: Duration::from_millis(1),
            join: None,
        },
        bursts: 0,
        classic_requests: 0,
        rate_window: Duration::from_millis(1),
        replicas: None,
    }
}

/// Every format renders the scenarios' report.
fn renders(scenarios: &Scenarios, report: &Report, header: &str) {
    let config = empty_config();
    let with = Some((scenarios, report));
    let table = render_with(Format::Table, &config, &[], with, 20);
    assert!(table.contains(header), "{header} missing from:\n{table}");
    let csv = render_with(Format::Csv, &config, &[], with, 20);
    assert!(csv.lines().skip(1).all(|l| l.split(',').count() == 5), "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&render_with(Format::Json, &config, &[], with, 20)).unwrap();
    let fleet = &json["fleet_scenarios"];
    assert_eq!(fleet["violations"].as_array().unwrap().len(), 0);
    let runs = |key: &str| fleet[key]["runs"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (runs("weighted"), runs("scale_up")),
        (report.weighted.len(), report.scale_up.len())
    );
}

#[test]
fn weighted_modes_split_by_capacity_and_unweighted_ones_do_not() {
    let weighted = Weighted::new(Duration::from_millis(1), 3000, 3, 11, &modes(&MODES)).unwrap();
    assert_eq!(weighted.modes, MODES);
    let want = weighted.capacity_shares();
    assert_eq!(want, [0.5, 0.25, 0.125, 0.125]);
    let scenarios = Scenarios {
        weighted: Some(weighted),
        scale_up: None,
    };
    let report = sim::fleet::run(&scenarios, &()).unwrap();
    assert_eq!(report.violations(), Vec::<String>::new());
    assert_eq!(report.weighted.len(), MODES.len());
    for r in &report.weighted {
        let (on, off) = (off_by(&r.weighted, &want), off_by(&r.unweighted, &want));
        // Every weighted mode, power-of-two included (it draws its pair in
        // proportion to capacity), within 3 points.
        assert!(
            on <= 0.03,
            "{}: weighted shares {:?} are {on:.3} off {want:?}",
            r.mode,
            shares(&r.weighted)
        );
        // Unweighted, the small workers get at least a fifth each.
        assert!(
            off >= 0.15 && shares(&r.unweighted)[2] >= 0.18,
            "{}: unweighted shares {:?}",
            r.mode,
            shares(&r.unweighted)
        );
        assert!(on < off / 2.0, "{}: {on} against {off}", r.mode);
    }
    // Round-robin's schedule hands out exactly 4:2:1:1 of the tickets.
    let rr = report.weighted.iter().find(|r| r.mode == "round-robin").unwrap();
    assert_eq!(
        rr.weighted.workers.iter().map(|w| w.requests).collect::<Vec<_>>(),
        [1500, 750, 375, 375]
    );
    renders(&scenarios, &report, "== 7) Weighted fleet");
}

#[test]
fn slow_start_keeps_a_cold_newcomer_from_being_flooded() {
    let names = modes(&["least-loaded", "power-of-two", "random"]);
    let scale_up = ScaleUp::new(Duration::from_millis(1), Duration::from_millis(150), 3, 5, &names).unwrap();
    // Random has no load to compare: the scenario leaves it out.
    assert_eq!(scale_up.modes, ["least-loaded", "power-of-two"]);
    let scenarios = Scenarios {
        weighted: None,
        scale_up: Some(scale_up),
    };
    let report = sim::fleet::run(&scenarios, &()).unwrap();
    assert_eq!(report.violations(), Vec::<String>::new());
    for r in &report.scale_up {
        let (Some(off), Some(on)) = r.windows() else {
            panic!("{}: the newcomer joined in both runs", r.mode);
        };
        assert_eq!(off.worker, 4);
        assert!(
            off.window_requests > 100 && on.window_requests > 100,
            "{off:?} {on:?}"
        );
        // It joins with no load: without slow start it is picked at once.
        assert!(
            off.joined_requests > 0 && off.early_joined > 0,
            "{}: {off:?}",
            r.mode
        );
        assert!(
            on.share() < off.share(),
            "{}: window share {:.3} with slow start, {:.3} without",
            r.mode,
            on.share(),
            off.share()
        );
        // Where it is coldest, slow start holds it to a small part of what it took.
        assert!(
            on.early_share() <= off.early_share() / 2.0,
            "{}: first-quarter share {:.3} with slow start, {:.3} without",
            r.mode,
            on.early_share(),
            off.early_share()
        );
    }
    renders(&scenarios, &report, "== 7) Scale-up: w4 joins");
}
