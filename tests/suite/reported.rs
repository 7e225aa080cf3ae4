//! Load reported from outside: workers' own reports and replicas' summaries count in
//! every load-aware pick, replace their source's earlier report, age out, never wrap,
//! and never outlive the worker they were made for.

use std::collections::HashMap;
use std::time::Duration;
use workerpick::{
    Choice, Context, DeviceAware, Error, LeastLoaded, MAX_REPORTED_LOAD, Pool, PowerOfTwo, Selector,
    WorkerInfo,
};

fn picks<S: Selector>(pool: &Pool<&'static str>, mode: &S, n: usize) -> HashMap<&'static str, usize> {
    let mut seen = HashMap::new();
    for _ in 0..n {
        *seen.entry(*pool.reserve(mode).unwrap().worker()).or_default() += 1;
    }
    seen
}

#[test]
fn every_load_aware_mode_avoids_a_worker_reported_busy() {
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    assert!(pool.report_load(&"a", 5));
    assert_eq!(pool.reported_load(&"a"), Some(5));
    assert_eq!(
        picks(&pool, &LeastLoaded::new(), 100),
        HashMap::from([("b", 100)])
    );
    assert_eq!(picks(&pool, &PowerOfTwo, 100), HashMap::from([("b", 100)]));
    // Device-aware compares accelerators by load the same way.
    assert_eq!(
        picks(&pool, &DeviceAware::new(), 100),
        HashMap::from([("b", 100)])
    );
    // Local bookings still count: with b holding 5 of its own, both tie at 5.
    let held: Vec<_> = (0..5).map(|_| pool.reserve_worker(&"b", 1).unwrap()).collect();
    let seen = picks(&pool, &LeastLoaded::new(), 400);
    assert!(
        seen["a"] > 100 && seen["b"] > 100,
        "ties broken both ways: {seen:?}"
    );
    assert_eq!(pool.in_flight(&"a"), Some(0), "reported load is not booked");
    drop(held);
    // Withdrawn: back to local counts only.
    assert!(pool.report_load(&"a", 0));
    assert_eq!(pool.reported_load(&"a"), Some(0));
    let seen = picks(&pool, &LeastLoaded::new(), 400);
    assert!(seen["a"] > 100 && seen["b"] > 100, "{seen:?}");
}

#[test]
fn least_loaded_scans_reported_load_at_every_size() {
    // Past the 8- and 32-lane short paths and into the vector scan's segments.
    for n in [3u32, 8, 9, 31, 33, 200, 1500] {
        let pool = Pool::from_workers(0..n).unwrap();
        // Every worker but one reported busy, that one busy only locally.
        let idle = n / 2;
        let reports: Vec<(u32, u32)> = (0..n).filter(|&w| w != idle).map(|w| (w, 2 + w % 5)).collect();
        assert_eq!(
            pool.report_loads(reports.iter().map(|(w, l)| (w, *l))),
            n as usize - 1
        );
        let _own = pool.reserve_worker(&idle, 1).unwrap();
        let r = pool.reserve(&LeastLoaded::new()).unwrap();
        assert_eq!(*r.worker(), idle, "{n} workers");
    }
}

/// A custom selector sees the effective load, and its parts.
struct Inspect;
impl Selector for Inspect {
    fn name(&self) -> &str {
        "inspect"
    }
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let s = cx.candidate(0)?;
        assert_eq!((cx.local_load(s), cx.reported_load(s), cx.load(s)), (2, 7, 9));
        Some(Choice::validated(s, cx.load(s)))
    }
}

#[test]
fn a_custom_selector_books_against_the_effective_load_it_saw() {
    let pool = Pool::from_workers(["w"]).unwrap();
    let _two = pool.reserve_worker(&"w", 2).unwrap();
    pool.report_load(&"w", 7);
    let r = pool.reserve(&Inspect).unwrap();
    assert_eq!(pool.in_flight(&"w"), Some(3));
    drop(r);
    assert_eq!(
        pool.stats().fallbacks,
        0,
        "validated against 9 = 2 + 7, first time"
    );
}

#[test]
fn reported_load_is_capped_and_local_counts_stay_exact() {
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    pool.report_load(&"a", u32::MAX - 1);
    let peer = Pool::from_workers(["a"]).unwrap();
    let _p = peer.reserve_worker(&"a", 7).unwrap();
    pool.apply_summary(&peer.summary());
    assert_eq!(
        pool.reported_load(&"a"),
        Some(MAX_REPORTED_LOAD),
        "sums are capped"
    );
    pool.report_load(&"b", MAX_REPORTED_LOAD);
    // Bookings still land, exactly, on both (the other half of the range is theirs).
    let held: Vec<_> = (0..10)
        .map(|_| pool.reserve(&LeastLoaded::new()).unwrap())
        .collect();
    let total: u32 = ["a", "b"].iter().map(|w| pool.in_flight(w).unwrap()).sum();
    assert_eq!(total, 10);
    let big = pool.reserve_worker(&"b", u32::MAX / 2 - 16).unwrap();
    assert_eq!(
        pool.reserve_worker(&"b", 100).err(),
        Some(Error::LoadOverflow),
        "no wrap"
    );
    drop((held, big));
    assert_eq!((pool.in_flight(&"a"), pool.in_flight(&"b")), (Some(0), Some(0)));
    assert_eq!(pool.reported_load(&"b"), Some(MAX_REPORTED_LOAD));
    // A report that does not fit beside the bookings counts as much as fits, and
    // in full from its next report on.
    let c = Pool::from_workers(["c"]).unwrap();
    let huge = c.reserve_worker(&"c", u32::MAX - 100).unwrap();
    c.report_load(&"c", 500);
    assert_eq!(
        (c.reported_load(&"c"), c.in_flight(&"c")),
        (Some(100), Some(u32::MAX - 100))
    );
    drop(huge);
    c.report_load(&"c", 500);
    assert_eq!((c.reported_load(&"c"), c.in_flight(&"c")), (Some(500), Some(0)));
}

#[test]
fn reports_age_out_after_the_limit() {
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    pool.set_report_max_age(Duration::from_millis(40));
    assert_eq!(pool.report_max_age(), Duration::from_millis(40));
    pool.report_load(&"a", 9);
    assert_eq!(pool.expire_reports(), 0, "fresh");
    std::thread::sleep(Duration::from_millis(80));
    // No call on the reports: a pick notices, within 1024 picks on this thread.
    for _ in 0..2048 {
        drop(pool.reserve(&LeastLoaded::new()).unwrap());
    }
    assert_eq!(pool.reported_load(&"a"), Some(0), "aged out through picks");

    pool.report_load(&"b", 4);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(pool.expire_reports(), 1);
    assert_eq!(pool.reported_load(&"b"), Some(0));
}

#[test]
fn a_report_for_a_departed_worker_is_dropped_and_never_inherited() {
    let pool = Pool::with_max_workers(2).unwrap();
    pool.replace(["a", "b"]).unwrap();
    pool.report_load(&"a", 6);
    let peer = Pool::from_workers(["a"]).unwrap();
    let _r = peer.reserve_worker(&"a", 3).unwrap();
    assert!(pool.apply_summary(&peer.summary()));
    assert_eq!(pool.reported_load(&"a"), Some(9));
    pool.remove(&"a").unwrap();
    assert_eq!(pool.reported_load(&"a"), None);
    // "c" takes a's slot (the limit is 2): it starts with nothing reported.
    pool.insert("c").unwrap();
    assert_eq!(pool.reported_load(&"c"), Some(0));
    // a comes back (in a's old slot or not): its earlier reports are gone too.
    pool.remove(&"c").unwrap();
    pool.insert("a").unwrap();
    assert_eq!(pool.reported_load(&"a"), Some(0));
    // The peer's next summary replaces its report without subtracting the old one.
    let _more = peer.reserve_worker(&"a", 1).unwrap();
    assert!(pool.apply_summary(&peer.summary()));
    assert_eq!(pool.reported_load(&"a"), Some(4));
}

#[test]
fn summaries_replace_per_peer_and_ignore_old_and_own() {
    let fleet = ["w0", "w1", "w2"];
    let (p, q, me) = (
        Pool::from_workers(fleet).unwrap(),
        Pool::from_workers(fleet).unwrap(),
        Pool::from_workers(fleet).unwrap(),
    );
    let r1 = p.reserve_worker(&"w0", 2).unwrap();
    let first = p.summary();
    assert!(me.apply_summary(&first));
    let _q = q.reserve_worker(&"w0", 5).unwrap();
    assert!(me.apply_summary(&q.summary()));
    assert_eq!(me.reported_load(&"w0"), Some(7), "peers add up");
    assert_eq!(me.reporting_peers(), 2);

    drop(r1);
    let _r2 = p.reserve_worker(&"w1", 1).unwrap();
    let second = p.summary();
    assert!(second.seq() > first.seq());
    assert!(me.apply_summary(&second));
    assert_eq!(me.reported_load(&"w0"), Some(5), "p's report replaced, not added");
    assert_eq!(me.reported_load(&"w1"), Some(1));
    assert!(!me.apply_summary(&first), "an older summary changes nothing");
    assert_eq!(me.reported_load(&"w1"), Some(1));
    assert!(!me.apply_summary(&me.summary()), "own summary ignored");
    assert_eq!(second.origin(), p.summary().origin());
    assert_ne!(p.summary().origin(), q.summary().origin());
}

#[test]
fn a_silent_peer_ages_out() {
    let (peer, me) = (
        Pool::from_workers([1, 2]).unwrap(),
        Pool::from_workers([1, 2]).unwrap(),
    );
    me.set_report_max_age(Duration::from_millis(40));
    let _r = peer.reserve_worker(&1, 3).unwrap();
    me.apply_summary(&peer.summary());
    assert_eq!(me.reported_load(&1), Some(3));
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(me.expire_reports(), 1);
    assert_eq!((me.reported_load(&1), me.reporting_peers()), (Some(0), 0));
}

#[test]
fn workers_outside_the_set_are_skipped() {
    let peer = Pool::from_workers(["x", "y"]).unwrap();
    let me = Pool::from_workers(["y"]).unwrap();
    let _x = peer.reserve_worker(&"x", 1).unwrap();
    let _y = peer.reserve_worker(&"y", 2).unwrap();
    assert!(me.apply_summary(&peer.summary()));
    assert_eq!(me.reported_load(&"y"), Some(2));
    assert_eq!(me.report_loads([(&"x", 1), (&"y", 1)]), 1);
}

#[test]
fn exact_under_concurrent_reservations_with_equal_reported_load() {
    // Reported load the same everywhere shifts every worker equally: T threads
    // reserving k times over W workers still end at exactly kT/W each.
    let (threads, k, workers) = (2usize, 600usize, 6u32);
    let pool = Pool::from_workers(0..workers).unwrap();
    pool.report_loads((0..workers).collect::<Vec<_>>().iter().map(|w| (w, 11)));
    std::thread::scope(|s| {
        let held: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut h = pool.handle();
                    (0..k)
                        .map(|_| h.reserve(&LeastLoaded::new()).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let held: Vec<_> = held.into_iter().map(|t| t.join().unwrap()).collect();
        for w in 0..workers {
            assert_eq!(
                pool.in_flight(&w),
                Some((threads * k) as u32 / workers),
                "worker {w}"
            );
        }
        drop(held);
    });
    assert!((0..workers).all(|w| pool.in_flight(&w) == Some(0)));
}

#[cfg(feature = "serde")]
#[test]
fn a_summary_round_trips_through_serde() {
    let peer = Pool::from_workers(["a".to_string(), "b".to_string()]).unwrap();
    let _r = peer.reserve_worker(&"b".to_string(), 4).unwrap();
    let summary = peer.summary();
    let wire = serde_json::to_string(&summary).unwrap();
    let back: workerpick::Summary<String> = serde_json::from_str(&wire).unwrap();
    assert_eq!(back, summary);
    let me = Pool::from_workers(["a".to_string(), "b".to_string()]).unwrap();
    assert!(me.apply_summary(&back));
    assert_eq!(me.reported_load(&"b".to_string()), Some(4));
}

/// A summary reads back for any key type that deserializes, with no other
/// bound: a receiver generic over the key (as `workerpick-nats`'s is) must
/// compile. Serde bounds the type parameters of a field marked plain
/// `default` by `Default`, which the optional fields once were.
#[cfg(feature = "serde")]
#[test]
fn a_summary_reads_back_for_any_deserializable_key() {
    fn read<W: serde::de::DeserializeOwned>(wire: &str) -> workerpick::Summary<W> {
        serde_json::from_str(wire).unwrap()
    }
    let summary = read::<String>(r#"{"origin":7,"seq":3,"loads":[["w1",2]]}"#);
    assert!(summary.rank_loads().is_empty() && summary.bindings().is_empty());
}

#[test]
fn device_info_is_kept_apart_from_reports() {
    let pool = Pool::new();
    pool.insert_with("gpu", WorkerInfo::new()).unwrap();
    pool.report_load(&"gpu", 2);
    pool.set_info(&"gpu", WorkerInfo::new().group(3)).unwrap();
    assert_eq!(
        pool.reported_load(&"gpu"),
        Some(2),
        "an attribute change keeps the report"
    );
}

#[test]
fn an_age_limit_too_long_to_reach_means_never() {
    let (peer, me) = (Pool::from_workers([1]).unwrap(), Pool::from_workers([1]).unwrap());
    me.set_report_max_age(Duration::MAX);
    let _r = peer.reserve_worker(&1, 2).unwrap();
    assert!(me.apply_summary(&peer.summary()));
    assert!(me.report_load(&1, 3));
    assert_eq!(me.expire_reports(), 0);
    assert_eq!(me.reported_load(&1), Some(5));
}

/// On a pool large enough to keep per-block lower bounds, a report that lowers a
/// counter lowers its block's bound too, as a release does: otherwise a pick that
/// trusts the bounds would skip the block holding the least loaded worker.
#[test]
fn a_withdrawn_report_lowers_a_summarised_block() {
    let n = 5000u32;
    let pool = Pool::with_max_workers(1 << 17).unwrap();
    pool.replace(0..n).unwrap();
    let ids: Vec<u32> = (0..n).collect();
    pool.report_loads(ids.iter().map(|w| (w, 5)));
    let mut h = pool.handle();
    // Picks raise every block's bound to 5, the least counter in it.
    for _ in 0..4 * n {
        drop(h.reserve(&LeastLoaded::new()).unwrap());
    }
    for lone in [3000, 17, n - 1] {
        pool.report_load(&lone, 0);
        for _ in 0..20 {
            assert_eq!(*h.reserve(&LeastLoaded::new()).unwrap().worker(), lone);
        }
        pool.report_load(&lone, 5);
    }
}
