//! The Mooncake replay: the exact index's credit is the engines' own, an
//! index fed nothing routes as load alone does, the reference rule does what
//! its documentation says, and a trace that does not parse is refused by line.

use std::process::Command;
use workerpick::Rng;
use workerpick::prefix::BlockKey;
use workerpick_sim::mooncake::cache::{BlockLru, Changes};
use workerpick_sim::mooncake::sglang::CacheAware;
use workerpick_sim::mooncake::trace::{self, Trace, TraceError};
use workerpick_sim::mooncake::{self, Policy, Scenario};

/// A conversation trace in the Mooncake format, with more reuse than the
/// excerpt's first minutes: 60 sessions of 8 turns under 4 system prompts,
/// each turn's prompt its session's history plus 4 new blocks, a request
/// every 250 ms, the sessions' turns interleaved at random.
fn conversations() -> Trace {
    let mut rng = Rng::with_seed(7);
    let mut order: Vec<(u64, u64)> = Vec::new();
    for turn in 0..8 {
        let mut round: Vec<(u64, u64)> = (0..60).map(|s| (s, turn)).collect();
        for i in (1..round.len()).rev() {
            round.swap(i, rng.below(i as u32 + 1) as usize);
        }
        order.extend(round);
    }
    let mut text = String::new();
    for (i, (session, turn)) in order.iter().enumerate() {
        let mut ids: Vec<u64> = vec![0];
        ids.extend((0..10).map(|b| 1 + (session % 4) * 10 + b));
        ids.extend((0..4 * (turn + 1)).map(|b| 1_000 + session * 1_000 + b));
        let input = ids.len() * 512 - 100;
        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
        text += &format!(
            "{{\"timestamp\": {}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{}]}}\n",
            i * 250,
            50 + rng.below(300),
            list.join(", ")
        );
    }
    Trace {
        requests: trace::parse(&text).expect("parses"),
        source: "conversations".into(),
    }
}

/// A small fleet whose caches hold about half the trace's distinct blocks:
/// engines evict, so the index applies removals as well as stores.
fn small() -> Scenario {
    Scenario {
        workers: 4,
        copies: 1,
        speedup: 1.0,
        cache_blocks: 400,
        event_delay_ms: 0.0,
        ..Scenario::default()
    }
}

#[test]
fn the_exact_index_credits_what_the_engines_hold_when_events_arrive_at_once() {
    let t = conversations();
    let s = small();
    let exact = mooncake::run(&s, &t, Policy::CostExact);
    let oracle = mooncake::run(&s, &t, Policy::CostOracle);
    assert_eq!(exact.requests, 480);
    // Not a trivial run: blocks were reused, and evicted.
    assert!(exact.hit_rate > 0.3, "{exact:?}");
    let stats = exact.index.expect("an index");
    assert!(
        stats.blocks < 480 * 20,
        "evicted blocks left the index: {stats:?}"
    );
    assert_eq!(exact.credit_wrong, (0, 0), "{exact:?}");
    assert_eq!((stats.dropped_full, stats.removed_not_held), (0, 0), "{stats:?}");
    // The same credit as the oracle's (picks may differ only where ties
    // break another way): its hit rate within a point.
    assert!(
        (exact.hit_rate - oracle.hit_rate).abs() < 0.01,
        "{exact:?} vs {oracle:?}"
    );
    assert_eq!(oracle.credit_wrong, (0, 0), "{oracle:?}");
}

#[test]
fn late_events_cost_the_exact_index_little() {
    let t = conversations();
    let s = Scenario {
        event_delay_ms: 5.0,
        ..small()
    };
    let exact = mooncake::run(&s, &t, Policy::CostExact);
    let oracle = mooncake::run(&s, &t, Policy::CostOracle);
    assert!(
        (exact.hit_rate - oracle.hit_rate).abs() < 0.02,
        "{exact:?} vs {oracle:?}"
    );
    assert!(exact.credit_wrong_rate() < 0.1, "{exact:?}");
}

#[test]
fn an_index_fed_nothing_routes_as_least_loaded_does() {
    let t = conversations();
    let s = small();
    let blind = mooncake::run(&s, &t, Policy::CostBlind);
    let least = mooncake::run(&s, &t, Policy::LeastLoaded);
    let exact = mooncake::run(&s, &t, Policy::CostExact);
    assert!(
        (blind.hit_rate - least.hit_rate).abs() < 0.02,
        "{blind:?} vs {least:?}"
    );
    // It never credits a block; the events are what the exact index adds.
    assert_eq!(blind.credit_wrong.0, 0, "{blind:?}");
    assert_eq!(blind.index.expect("an index").holdings, 0);
    assert!(exact.hit_rate > blind.hit_rate + 0.1, "{exact:?} vs {blind:?}");
}

#[test]
fn the_approximate_index_learns_from_routing_alone() {
    let t = conversations();
    let s = small();
    let approx = mooncake::run(&s, &t, Policy::CostApproximate);
    let least = mooncake::run(&s, &t, Policy::LeastLoaded);
    let stats = approx.index.expect("an index");
    assert!(stats.holdings > 0, "{stats:?}");
    assert!(approx.hit_rate > least.hit_rate + 0.1, "{approx:?} vs {least:?}");
}

#[test]
fn every_policy_serves_every_request_and_the_table_names_them() {
    let t = trace::excerpt();
    let s = Scenario {
        workers: 4,
        speedup: 4.0,
        ..Scenario::default()
    };
    let runs = mooncake::run_all(&s, &t);
    assert_eq!(runs.len(), Policy::ALL.len());
    for r in &runs {
        assert_eq!(r.requests, 600, "{r:?}");
        assert!(r.ttft_ms.0 > 0.0 && r.ttft_ms.1 >= r.ttft_ms.0, "{r:?}");
        assert!((0.0..1.0).contains(&r.hit_rate), "{r:?}");
    }
    let table = mooncake::table(&s, &t, &runs);
    for p in Policy::ALL {
        assert!(table.lines().any(|l| l.starts_with(p.name())), "{p:?}: {table}");
    }
}

#[test]
fn the_reference_rule_follows_the_match_then_the_balance() {
    let keys: Vec<BlockKey> = (0..10).map(BlockKey::from_raw).collect();
    let mut rng = Rng::with_seed(1);
    let mut r = CacheAware::new(3, 100);
    r.routed(2, &keys[..5]);
    // Half the prompt matched on w2: over the 30 % threshold.
    assert_eq!(r.pick(&keys, &mut rng), (2, 5));
    // 2 of 10 is not: the smallest tree (w0 or w1, both empty) instead.
    let other: Vec<BlockKey> = (0..2)
        .map(BlockKey::from_raw)
        .chain((100..108).map(BlockKey::from_raw))
        .collect();
    assert_ne!(r.pick(&other, &mut rng).0, 2);
    // Imbalanced (more than 64 apart and 1.5x): the least loaded, match or not.
    r.running = vec![10, 100, 80];
    assert_eq!(r.pick(&keys, &mut rng), (0, 0));
}

#[test]
fn an_engine_cache_reports_what_it_stored_and_evicts_a_chain_from_its_tail() {
    let k = |ids: &[u64]| ids.iter().copied().map(BlockKey::from_raw).collect::<Vec<_>>();
    let mut lru = BlockLru::new(4);
    let mut c = Changes::default();
    lru.admit(&k(&[1, 2, 3]), &mut c);
    assert_eq!((c.stored.clone(), c.removed.len()), (vec![(0, 3)], 0));
    lru.admit(&k(&[1, 5, 3, 6]), &mut c);
    // 1 and 3 were held: two runs of new blocks.
    assert_eq!(c.stored, vec![(1, 1), (3, 1)]);
    // Five blocks for four places: the least recent, 2, goes.
    assert_eq!(c.removed, k(&[2]));
    lru.admit(&k(&[7, 8]), &mut c);
    // The older chain loses its tail first; its head stays reusable.
    assert_eq!(c.removed, k(&[6, 3]));
    assert_eq!(lru.prefix(&k(&[1, 5, 3])), 2);
    // A prompt longer than the cache keeps its head: nothing of it is
    // reported stored and then removed (an index fed the events in order
    // never holds more than the cache).
    lru.admit(&k(&[1, 9, 10, 11, 12, 13]), &mut c);
    assert_eq!(c.stored, vec![(1, 3)]);
    assert_eq!(c.removed, k(&[5, 8, 7]));
    assert_eq!((lru.len(), lru.prefix(&k(&[1, 9, 10, 11, 12]))), (4, 4));
}

#[test]
fn the_excerpt_is_the_traces_first_requests() {
    let t = trace::excerpt();
    assert_eq!(t.requests.len(), 300);
    assert_eq!(t.requests[0].hash_ids.len(), 14);
    assert!(
        t.requests
            .windows(2)
            .all(|w| w[0].timestamp_ms <= w[1].timestamp_ms)
    );
    assert!(
        t.requests.iter().all(|r| r.hash_ids[0] == 0),
        "every prompt shares block 0"
    );
}

#[test]
fn trace_lines_that_do_not_parse_are_refused_by_line() {
    let good = r#"{"timestamp": 5, "input_length": 600, "output_length": 9, "hash_ids": [0, 1]}"#;
    let parsed = trace::parse(&format!("{good}\n\n{}\n", good.replace("5,", "2,"))).expect("parses");
    assert_eq!(parsed.iter().map(|r| r.timestamp_ms).collect::<Vec<_>>(), [2, 5]);
    let bad = |line: &str, says: &str| {
        let e: TraceError = trace::parse(&format!("{good}\n{line}\n")).expect_err(line);
        assert_eq!(e.line, 2, "{line}: {e}");
        assert!(e.to_string().starts_with("line 2: "), "{e}");
        assert!(e.to_string().contains(says), "{line}: {e} does not say {says}");
    };
    bad("{\"timestamp\": 5", "not JSON");
    bad("[1, 2]", "not a JSON object");
    bad(
        r#"{"input_length": 600, "output_length": 9, "hash_ids": [0, 1]}"#,
        "no `timestamp`",
    );
    bad(
        r#"{"timestamp": -1, "input_length": 600, "output_length": 9, "hash_ids": [0, 1]}"#,
        "`timestamp` is -1",
    );
    bad(
        r#"{"timestamp": 1, "input_length": "600", "output_length": 9, "hash_ids": [0, 1]}"#,
        "`input_length`",
    );
    bad(
        r#"{"timestamp": 1, "input_length": 600, "output_length": 9, "hash_ids": 7}"#,
        "not an array",
    );
    bad(
        r#"{"timestamp": 1, "input_length": 600, "output_length": 9, "hash_ids": [0, 1.5]}"#,
        "`hash_ids[1]`",
    );
    bad(
        r#"{"timestamp": 1, "input_length": 600, "output_length": 9, "hash_ids": [0]}"#,
        "need 2",
    );
    bad(
        r#"{"timestamp": 1, "input_length": 600, "output_length": 9}"#,
        "no `hash_ids`",
    );
    let e = trace::parse("\n  \n").expect_err("empty");
    assert_eq!((e.line, e.to_string()), (0, "no requests in the trace".into()));
}

/// Runs the simulator with only the Mooncake section (and what it cannot skip).
fn simulate(extra: &[&str]) -> (Option<i32>, String, String) {
    let quiet = [
        "-n",
        "0",
        "--bursts",
        "0",
        "--replica-requests",
        "0",
        "--no-fleet-scenarios",
        "--no-sessions",
        "--llm-requests",
        "0",
        "--latency-requests",
        "0",
        "--modes",
        "random",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args(quiet.iter().chain(extra))
        .output()
        .expect("the simulate binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_command_line_replays_a_trace_refuses_a_bad_one_and_can_skip_it() {
    let dir = std::env::temp_dir().join(format!("mooncake-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let excerpt = concat!(env!("CARGO_MANIFEST_DIR"), "/src/mooncake/excerpt.jsonl");
    let (code, out, err) = simulate(&["--trace", excerpt, "--mooncake-speedups", "20"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Mooncake trace replay: 300 requests"), "{out}");
    assert!(out.contains("cost + exact index"), "{out}");
    let broken = dir.join("broken.jsonl");
    std::fs::write(
        &broken,
        "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\nnope\n",
    )
    .unwrap();
    let (code, out, err) = simulate(&["--trace", broken.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{out} {err}");
    assert_eq!(out, "");
    assert!(
        err.starts_with("simulate: --trace ") && err.contains("line 2: not JSON"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let (code, _, err) = simulate(&["--trace", dir.join("absent.jsonl").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("absent.jsonl"), "{err}");
    let (code, _, err) = simulate(&["--mooncake-speedups", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--mooncake-speedups"), "{err}");
    let (code, _, err) = simulate(&["--mooncake-index-slack", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--mooncake-index-slack"), "{err}");
    // Skipped: not even the trace is read.
    let (code, out, err) = simulate(&["--no-mooncake", "--trace", broken.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("Mooncake"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
