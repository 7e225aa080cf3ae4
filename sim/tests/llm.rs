//! The LLM scenario: routing by cache credit beats routing by load alone on
//! hit rate and time to first token (seeded, deterministic).

use workerpick_sim::llm::{self, Policy, Scenario};

#[test]
fn cost_beats_least_loaded_on_hits_and_ttft() {
    let s = Scenario {
        requests: 4000,
        ..Scenario::default()
    };
    let runs: Vec<_> = [Policy::LeastLoaded, Policy::Thresholds, Policy::Cost(0.0)]
        .into_iter()
        .map(|p| llm::run(&s, p))
        .collect();
    println!("{}", llm::table(&s, &runs));
    let (ll, sg, cost) = (&runs[0], &runs[1], &runs[2]);
    assert!(cost.hit_rate > ll.hit_rate + 0.1, "{cost:?} vs {ll:?}");
    assert!(cost.ttft_ms.0 < ll.ttft_ms.0, "{cost:?} vs {ll:?}");
    assert!(cost.ttft_ms.1 < 0.7 * ll.ttft_ms.1, "{cost:?} vs {ll:?}");
    assert!(cost.ttft_ms.1 < sg.ttft_ms.1, "{cost:?} vs {sg:?}");
    // The same seed, the same run.
    assert_eq!(llm::run(&s, Policy::Cost(0.0)).ttft_ms, cost.ttft_ms);
}

#[test]
fn cost_beats_the_thresholds_policy_on_every_seed() {
    for seed in [1, 2, 3, 4, Scenario::default().seed] {
        let s = Scenario {
            seed,
            ..Scenario::default()
        };
        let (th, ll, cost) = (
            llm::run(&s, Policy::Thresholds),
            llm::run(&s, Policy::LeastLoaded),
            llm::run(&s, Policy::Cost(0.0)),
        );
        assert!(cost.hit_rate >= th.hit_rate, "seed {seed}: {cost:?} vs {th:?}");
        assert!(cost.ttft_ms.1 < th.ttft_ms.1, "seed {seed}: {cost:?} vs {th:?}");
        assert!(
            cost.ttft_ms.1 <= 0.7 * ll.ttft_ms.1,
            "seed {seed}: {cost:?} vs {ll:?}"
        );
    }
}

#[test]
fn every_policy_runs() {
    let s = Scenario {
        requests: 1500,
        ..Scenario::default()
    };
    let runs = llm::run_all(&s);
    println!("{}", llm::table(&s, &runs));
    assert_eq!(runs.len(), Policy::ALL.len());
    assert!(runs.iter().all(|r| r.hit_rate > 0.0 && r.throughput > 0.0));
}
