//! The admission scenario holds the targets: interactive TTFT p99
//! with the queue within 2x of the stream alone, far below the unprotected
//! run's, with at least 99 % of the batch work done by the time the unprotected run
//! has done all of its work.

use workerpick_sim::admission::{Scenario, Setup, run_all};

#[test]
fn the_queue_protects_interactive_requests_and_keeps_the_batch_going() {
    let s = Scenario::default();
    let runs = run_all(&s);
    let of = |setup| runs.iter().find(|r| r.setup == setup).unwrap();
    let (alone, unprotected, queued) = (of(Setup::Alone), of(Setup::Unprotected), of(Setup::Queued));
    let table = workerpick_sim::admission::table(&s, &runs);
    println!("{table}");
    assert!(queued.ttft_ms.1 <= 2.0 * alone.ttft_ms.1, "{table}");
    assert!(unprotected.ttft_ms.1 > 4.0 * queued.ttft_ms.1, "{table}");
    let end = workerpick_sim::admission::unprotected_end(&runs);
    assert!(queued.batch_done_by(end) >= 0.99, "{table}");
}
