//! The slow-not-busy scenario: the latency-aware power-of-two keeps the tail
//! off a worker whose latency spikes (p999 at most a quarter of
//! least-loaded's), and a worker that fails fast does not attract traffic.

use workerpick_sim::latency::{Scenario, table};

#[test]
fn latency_aware_picks_cut_the_tail_and_shun_a_failing_worker() {
    let s = Scenario::spiking();
    let runs = s.run_all();
    println!("{}", table(&s, &runs));
    let by = |m: &str| runs.iter().find(|r| r.mode == m).expect(m).clone();
    let (ll, lp2c) = (by("least-loaded"), by("latency-power-of-two"));
    assert!(
        lp2c.p999_ms * 4.0 <= ll.p999_ms,
        "latency p2c p999 {} vs least-loaded {}",
        lp2c.p999_ms,
        ll.p999_ms
    );
    assert!(by("latency-least-loaded").p999_ms * 4.0 <= ll.p999_ms);

    let s = Scenario::failing();
    let runs = s.run_all();
    println!("{}", table(&s, &runs));
    let by = |m: &str| runs.iter().find(|r| r.mode == m).expect(m).clone();
    let (ll, lp2c, lll) = (
        by("least-loaded"),
        by("latency-power-of-two"),
        by("latency-least-loaded"),
    );
    let fair = 1.0 / f64::from(s.workers);
    // Least-loaded sends the failing worker more than its share: it looks idle.
    assert!(ll.failing_share > fair, "{}", ll.failing_share);
    for r in [lp2c, lll] {
        assert!(r.failing_share < fair / 4.0, "{}: {}", r.mode, r.failing_share);
    }
}
