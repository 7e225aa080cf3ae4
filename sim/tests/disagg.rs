//! The disaggregated-serving scenario (seeded, deterministic): splitting
//! prefill from decode takes the prefill stalls out of the decode GPUs'
//! inter-token latency, and the decider's threshold trades that against
//! time to first token.

use workerpick_sim::disagg::{self, Fleet, Layout};

#[test]
fn the_threshold_trades_inter_token_latency_against_ttft() {
    let f = Fleet::default();
    let runs = disagg::run_all(&f);
    println!("{}", disagg::table(&f, &runs));
    let by = |l: Layout| &runs[Layout::SWEEP.iter().position(|&x| x == l).expect("in the sweep")];
    let (agg, all, mid) = (
        by(Layout::Aggregated),
        by(Layout::Disaggregated(0)),
        by(Layout::Disaggregated(48)),
    );
    // Decode GPUs that never prefill emit every token on time.
    assert!(all.itl_ms.1 < 0.5 * agg.itl_ms.1, "{all:?} vs {agg:?}");
    // Sending every prefill to a quarter of the GPUs overloads them.
    assert!(all.ttft_ms.1 > 10.0 * agg.ttft_ms.1, "{all:?} vs {agg:?}");
    // Between them, the decider keeps short prefills local: most of the
    // inter-token gain for a bounded TTFT cost.
    assert!(mid.itl_ms.1 < 0.6 * agg.itl_ms.1, "{mid:?} vs {agg:?}");
    assert!(mid.ttft_ms.1 < 3.0 * agg.ttft_ms.1, "{mid:?} vs {agg:?}");
    // A higher threshold splits fewer requests.
    for w in runs[1..].windows(2) {
        assert!(
            w[0].disaggregated >= w[1].disaggregated,
            "{:?} then {:?}",
            w[0],
            w[1]
        );
    }
    assert_eq!(agg.disaggregated, 0.0);
    // The same seed, the same run.
    assert_eq!(disagg::run(&f, Layout::Disaggregated(48)).itl_ms, mid.itl_ms);
}
