//! The multi-turn sessions scenario: affinity keeps sessions on the worker
//! holding their KV cache, within its load bound, the cost mode trades load
//! against the held context, session bindings keep sessions home however
//! loaded, and a membership change moves only the keys it must.

use workerpick_sim::sessions::{Sessions, disruption};

#[test]
fn affinity_hits_the_cache_within_its_bound() {
    let s = Sessions::default();
    let runs = s.run();
    let by = |name: &str| runs.iter().find(|r| r.mode == name).expect(name);
    let (bounded, wide, ll, hashing) = (
        by("affinity ε=0.25"),
        by("affinity ε=1"),
        by("least-loaded"),
        by("hashing (unbounded)"),
    );
    for r in [bounded, wide] {
        assert_eq!(r.over_bound, 0, "{}: a booking above the bound", r.mode);
        assert!(
            r.hit_rate > 2.0 * ll.hit_rate,
            "{} {} vs {}",
            r.mode,
            r.hit_rate,
            ll.hit_rate
        );
        assert!(
            r.ttft_p99_ms < ll.ttft_p99_ms,
            "{} {} vs {}",
            r.mode,
            r.ttft_p99_ms,
            ll.ttft_p99_ms
        );
    }
    // Unbounded hashing piles a hot session on one worker.
    assert!(
        hashing.peak_load > 2 * bounded.peak_load,
        "{} vs {}",
        hashing.peak_load,
        bounded.peak_load
    );
    assert!(bounded.ttft_p99_ms < hashing.ttft_p99_ms);
    // Seeded: the same numbers again.
    let again = s.run();
    for (a, b) in runs.iter().zip(&again) {
        assert_eq!(
            (a.hit_rate, a.ttft_p99_ms, a.peak_load),
            (b.hit_rate, b.ttft_p99_ms, b.peak_load)
        );
    }
}

#[test]
fn cache_credit_and_session_bindings_in_the_table() {
    let runs = Sessions::default().run();
    let by = |name: &str| runs.iter().find(|r| r.mode == name).expect(name);
    let (cost, bound, ll, bounded) = (
        by("cost"),
        by("sessions + ε=0.25"),
        by("least-loaded"),
        by("affinity ε=0.25"),
    );
    // The cost mode trades load against the held context: far more hits
    // than least-loaded, and no hot spot.
    assert!(
        cost.hit_rate > 2.0 * ll.hit_rate,
        "{} vs {}",
        cost.hit_rate,
        ll.hit_rate
    );
    assert!(cost.ttft_p99_ms < ll.ttft_p99_ms);
    assert!(cost.peak_load <= ll.peak_load);
    // Bindings keep every session home, however loaded: the most hits, and a
    // hot session's agents pile up as under unbounded hashing.
    assert!(bound.hit_rate >= bounded.hit_rate);
    assert!(
        bound.peak_load > 2 * bounded.peak_load,
        "{} vs {}",
        bound.peak_load,
        bounded.peak_load
    );
}

#[test]
fn a_removal_moves_only_the_removed_workers_keys() {
    let d = disruption(100, 20_000);
    assert_eq!(d.collateral, 0);
    assert_eq!(d.removed_moved, d.removed_share);
    assert!(d.added_moved <= 1.0 / 101.0 + 0.01, "{}", d.added_moved);
    assert!(d.modulo_moved > 0.9);
}
