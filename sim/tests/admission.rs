//! The admission scenario holds the targets: interactive TTFT p99
//! with the queue within 2x of the stream alone, far below the unprotected
//! run's, with at least 99 % of the batch work done by the time the unprotected run
//! has done all of its work.

use workerpick_sim::admission::{Scenario, Setup, run_all};

#[test]
fn the_queue_protects_interactive_requests_and_keeps_the_batch_going() {
    holds_the_targets(&Scenario::default());
}

/// The same with the Mooncake trace as the interactive stream: the full
/// trace where it lies beside the checkout, else the built-in excerpt.
#[test]
fn the_queue_protects_the_mooncake_trace_beside_a_batch() {
    let trace = workerpick_sim::mooncake::trace::resolve(None).expect("a trace");
    let s = Scenario::mooncake(&trace.requests);
    assert_eq!(s.interactive, trace.requests.len());
    holds_the_targets(&s);
}

fn holds_the_targets(s: &Scenario) {
    let runs = run_all(s);
    let of = |setup| runs.iter().find(|r| r.setup == setup).unwrap();
    let (alone, unprotected, queued) = (of(Setup::Alone), of(Setup::Unprotected), of(Setup::Queued));
    let table = workerpick_sim::admission::table(s, &runs);
    println!("{table}");
    assert!(queued.ttft_ms.1 <= 2.0 * alone.ttft_ms.1, "{table}");
    assert!(unprotected.ttft_ms.1 > 4.0 * queued.ttft_ms.1, "{table}");
    let end = workerpick_sim::admission::unprotected_end(&runs);
    assert!(queued.batch_done_by(end) >= 0.99, "{table}");
}
