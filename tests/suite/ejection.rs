//! `service::Ejection`: consecutive failures (5xx answers or errors) of a
//! route's upstreams take the worker out of the picks for a while, a
//! success resets the count, and the worker comes back after `eject_for`;
//! a worker that joins later is counted too.
#![cfg(feature = "hyper")]

use http::{Request, Response, StatusCode};
use std::future::{Ready, poll_fn, ready};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service;
use workerpick::service::{BoxError, Ejection, OnResponse, Route};
use workerpick::{Pool, Registry};

/// Worker `name`'s service: "bad" answers 500, "down" fails, others 200.
#[derive(Clone)]
struct Upstream(&'static str);

impl Service<Request<()>> for Upstream {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Ready<Result<Response<&'static str>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        ready(match self.0 {
            "down" => Err("connection refused".into()),
            "bad" => Ok(Response::builder()
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .body(self.0)
                .unwrap()),
            name => Ok(Response::new(name)),
        })
    }
}

#[tokio::test]
async fn consecutive_failures_eject_a_worker_until_its_time_is_up() {
    let pool = Arc::new(Pool::from_workers(["bad", "good", "down"]).unwrap());
    let ejection = Ejection::new(&pool, 3, Duration::from_millis(100));
    let selector = Registry::new().resolve("round-robin").unwrap();
    let upstreams = ejection.watch(|name: &&'static str| Upstream(name));
    let mut route = Route::new(&pool, selector, upstreams).until(OnResponse);
    let mut answers = Vec::new();
    for _ in 0..12 {
        poll_fn(|cx| route.poll_ready(cx)).await.unwrap();
        let answer = route.call(Request::new(())).await;
        answers.push(answer.map(|r| *r.body()).unwrap_or("error"));
    }
    // Three rounds of each, then only "good".
    assert_eq!(answers.iter().filter(|a| **a == "bad").count(), 3, "{answers:?}");
    assert_eq!(
        answers.iter().filter(|a| **a == "error").count(),
        3,
        "{answers:?}"
    );
    assert_eq!(answers[9..], ["good"; 3], "{answers:?}");
    for worker in ["bad", "down"] {
        assert_eq!(pool.is_healthy(&worker), Some(false), "{worker}");
        let s = ejection.stats(&worker);
        assert_eq!((s.errors, s.consecutive, s.ejections, s.ejected), (3, 3, 1, true));
    }
    assert_eq!(ejection.stats(&"good").errors, 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Back, with the count at zero: three more failures to eject again.
    assert_eq!(pool.is_healthy(&"bad"), Some(true));
    let s = ejection.stats(&"bad");
    assert_eq!((s.consecutive, s.ejected), (0, false));
    ejection.record(&"bad", true);
    ejection.record(&"bad", true);
    ejection.record(&"bad", false); // a success resets the run
    ejection.record(&"bad", true);
    ejection.record(&"bad", true);
    assert_eq!(pool.is_healthy(&"bad"), Some(true));
    ejection.record(&"bad", true);
    assert_eq!(pool.is_healthy(&"bad"), Some(false));
    assert_eq!(ejection.stats(&"bad").ejections, 2);
    // Nothing is left booked by the failed requests.
    assert!(pool.loads().iter().all(|&(_, l)| l == 0), "{:?}", pool.loads());
}

#[tokio::test]
async fn a_worker_that_joins_later_is_counted_and_a_removed_one_is_harmless() {
    let pool = Arc::new(Pool::from_workers(["a"]).unwrap());
    let ejection = Ejection::new(&pool, 1, Duration::from_secs(60));
    pool.insert("late").unwrap();
    ejection.record(&"late", true);
    assert_eq!(pool.is_healthy(&"late"), Some(false));
    assert_eq!(ejection.stats(&"late").ejections, 1);
    // Not (or no longer) a worker: counted, nothing to mark.
    ejection.record(&"gone", true);
    assert_eq!(ejection.stats(&"gone").errors, 1);
    ejection.forget(&"gone");
    assert_eq!(ejection.stats(&"gone"), Default::default());
    assert_eq!(pool.is_healthy(&"a"), Some(true));
}

#[test]
fn racing_failures_eject_a_worker_once() {
    // Two threads fail the same new worker at once, far past the threshold:
    // its counts are made once (the map's copy-on-write), and the swap on
    // `ejected` lets one failure eject it; the others find it ejected. A
    // plain check instead ejects on every failure past the threshold.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    for round in 0..20 {
        let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
        // Long enough that no re-admission happens during the round.
        let ejection = Ejection::new(&pool, 4, Duration::from_secs(600));
        let barrier = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                let (ejection, barrier, rt) = (&ejection, &barrier, &rt);
                s.spawn(move || {
                    let _entered = rt.enter();
                    barrier.wait();
                    for _ in 0..500 {
                        ejection.record(&"a", true);
                    }
                });
            }
        });
        let s = ejection.stats(&"a");
        assert_eq!(
            (s.errors, s.ejections, s.ejected),
            (1000, 1, true),
            "round {round}"
        );
        assert_eq!(pool.is_healthy(&"a"), Some(false));
        assert_eq!(pool.is_healthy(&"b"), Some(true));
    }
    rt.shutdown_background();
}
