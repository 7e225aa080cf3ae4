//! `workerpick-proxy serve` as a user runs it: the binary, started on
//! 127.0.0.1 with an ephemeral port in front of real upstreams (two healthy,
//! one answering 500, one refusing connections), driven by an HTTP client.
//! It balances by capacity, ejects the failing upstreams, reports all of it
//! on /metrics, and on SIGTERM finishes the request in flight before it exits.
//! An ejected upstream gets traffic again once its `--eject-ms` has passed:
//! ejected again if it still fails, kept once it has recovered.

mod common;

use bytes::Bytes;
use common::start_proxy;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::convert::Infallible;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use workerpick_proxy::server::Server;
use workerpick_proxy::upstream::{Speed, Upstream, refusing_addr};

/// The test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(60);

type TestClient = Client<HttpConnector, Empty<Bytes>>;

async fn get(client: &TestClient, url: &str) -> (StatusCode, String) {
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The value of `family{upstream="addr"}` on a metrics page.
fn metric(page: &str, family: &str, upstream: &str) -> u64 {
    let key = format!("{family}{{upstream=\"{upstream}\"}} ");
    let line = page.lines().find_map(|l| l.strip_prefix(&key));
    line.unwrap_or_else(|| panic!("no {key} in:\n{page}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_balances_ejects_failing_upstreams_reports_metrics_and_drains_on_sigterm() {
    tokio::time::timeout(LIMIT, async {
        let speed = Speed {
            first_byte: Duration::from_millis(1),
            per_token: Duration::from_millis(50),
        };
        let small = Upstream::start(speed).await.unwrap();
        let big = Upstream::start(speed).await.unwrap();
        let failing = Server::start(|| {
            service_fn(|_| async {
                let mut answer = Response::new(Full::new(Bytes::from_static(b"broken\n")));
                *answer.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                Ok::<_, Infallible>(answer)
            })
        })
        .await
        .unwrap();
        let down = refusing_addr().await.unwrap();

        let (proxy, addr) = start_proxy(&[
            "--mode".into(),
            "round-robin".into(),
            "--fail-after".into(),
            "2".into(),
            "--eject-ms".into(),
            "60000".into(),
            "--drain-ms".into(),
            "10000".into(),
            "--upstream".into(),
            small.addr().to_string(),
            "--upstream".into(),
            format!("{}=2", big.addr()),
            "--upstream".into(),
            failing.addr().to_string(),
            "--upstream".into(),
            down.to_string(),
        ]);
        let client: TestClient = Client::builder(TokioExecutor::new()).build_http();

        // Each failing upstream fails twice, is ejected, and gets no more.
        let mut statuses = Vec::new();
        for _ in 0..40 {
            statuses.push(get(&client, &format!("http://{addr}/stream?tokens=0")).await.0);
        }
        let count = |s: StatusCode| statuses.iter().filter(|&&x| x == s).count();
        assert_eq!(count(StatusCode::INTERNAL_SERVER_ERROR), 2, "{statuses:?}"); // passed through
        assert_eq!(count(StatusCode::BAD_GATEWAY), 2, "{statuses:?}"); // connection refused
        assert_eq!(count(StatusCode::OK), 36, "{statuses:?}");
        assert!(
            statuses[12..].iter().all(|&s| s == StatusCode::OK),
            "{statuses:?}"
        );
        // Capacity 2 against 1: the big one takes more (round-robin's turns
        // skipped over the ejected upstreams shift the exact split).
        let (s, b) = (small.served(), big.served());
        assert_eq!(s + b, 36);
        assert!(s > 0 && b > s, "small {s}, big {b}");

        let (status, page) = get(&client, &format!("http://{addr}/metrics")).await;
        assert_eq!(status, StatusCode::OK);
        let (small_a, big_a, failing_a, down_a) = (
            small.addr().to_string(),
            big.addr().to_string(),
            failing.addr().to_string(),
            down.to_string(),
        );
        assert_eq!(metric(&page, "workerpick_upstream_picks_total", &small_a), s);
        assert_eq!(metric(&page, "workerpick_upstream_picks_total", &big_a), b);
        for (upstream, errors, healthy) in [
            (&small_a, 0, 1),
            (&big_a, 0, 1),
            (&failing_a, 2, 0),
            (&down_a, 2, 0),
        ] {
            assert_eq!(
                metric(&page, "workerpick_upstream_errors_total", upstream),
                errors
            );
            assert_eq!(metric(&page, "workerpick_upstream_healthy", upstream), healthy);
            assert_eq!(metric(&page, "workerpick_upstream_in_flight", upstream), 0);
        }
        assert!(page.contains("# TYPE workerpick_upstream_picks_total counter"));

        // SIGTERM during a 10-chunk (500 ms) stream: it arrives whole, then the proxy exits 0.
        let slow = tokio::spawn({
            let client = client.clone();
            let url = format!("http://{addr}/stream?tokens=10");
            async move { get(&client, &url).await }
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        let pid = proxy.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let (status, body) = slow.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "token\n".repeat(10));
        let mut proxy = proxy;
        let exited = (0..100).find_map(|_| {
            let done = proxy.0.try_wait().unwrap();
            if done.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            done
        });
        assert!(
            exited
                .expect("the proxy did not exit within 5 s of SIGTERM")
                .success()
        );

        small.stop().await;
        big.stop().await;
        failing.stop().await;
    })
    .await
    .expect("the test ran past its limit");
}

/// An upstream that answers 500 while `failing` is set and 200 otherwise,
/// counting the requests it answered 200.
struct Switchable {
    server: Server,
    failing: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
}

async fn switchable(failing: bool) -> Switchable {
    let failing = Arc::new(AtomicBool::new(failing));
    let served = Arc::new(AtomicU64::new(0));
    let (f, n) = (failing.clone(), served.clone());
    let server = Server::start(move || {
        let (f, n) = (f.clone(), n.clone());
        service_fn(move |_| {
            let (f, n) = (f.clone(), n.clone());
            async move {
                let mut answer = Response::new(Full::new(Bytes::from_static(b"ok\n")));
                if f.load(SeqCst) {
                    *answer.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                } else {
                    n.fetch_add(1, SeqCst);
                }
                Ok::<_, Infallible>(answer)
            }
        })
    })
    .await
    .unwrap();
    Switchable {
        server,
        failing,
        served,
    }
}

/// `--eject-ms` of the re-admission test.
const EJECT_MS: u64 = 300;

/// An upstream that fails is ejected, and once `--eject-ms` has passed it gets
/// traffic again: still failing, it is ejected again after `--fail-after`
/// failures; recovered, it keeps its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ejected_upstream_gets_traffic_again_after_its_eject_time() {
    tokio::time::timeout(LIMIT, async {
        let steady = switchable(false).await;
        let flaky = switchable(true).await;
        let (proxy, addr) = start_proxy(&[
            "--mode".into(),
            "round-robin".into(),
            "--fail-after".into(),
            "2".into(),
            "--eject-ms".into(),
            EJECT_MS.to_string(),
            "--upstream".into(),
            steady.server.addr().to_string(),
            "--upstream".into(),
            flaky.server.addr().to_string(),
        ]);
        let client: TestClient = Client::builder(TokioExecutor::new()).build_http();
        let url = format!("http://{addr}/");
        let flaky_a = flaky.server.addr().to_string();
        let page = || async { get(&client, &format!("http://{addr}/metrics")).await.1 };
        let healthy = |page: &str| metric(page, "workerpick_upstream_healthy", &flaky_a);
        let picks = |page: &str| metric(page, "workerpick_upstream_picks_total", &flaky_a);
        let ejections = |page: &str| metric(page, "workerpick_upstream_ejections_total", &flaky_a);
        // Sends requests until the flaky upstream is ejected; returns when.
        let eject = || async {
            for _ in 0..20 {
                get(&client, &url).await;
                if healthy(&page().await) == 0 {
                    return Instant::now();
                }
            }
            panic!("the flaky upstream was never ejected:\n{}", page().await);
        };
        // Polls until it is healthy again; returns how long after `since`.
        let readmitted = |since: Instant| async move {
            while healthy(&page().await) == 0 {
                assert!(since.elapsed() < Duration::from_secs(10), "never re-admitted");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            since.elapsed()
        };

        let ejected = eject().await;
        assert_eq!(ejections(&page().await), 1);
        // Ejected: every request goes to the steady one, and succeeds.
        let before = picks(&page().await);
        for _ in 0..10 {
            assert_eq!(get(&client, &url).await.0, StatusCode::OK);
        }
        let out_for = ejected.elapsed();
        assert_eq!(picks(&page().await), before, "picked while ejected");
        assert!(
            out_for < Duration::from_millis(EJECT_MS),
            "the 10 requests took {out_for:?}: the check proves nothing"
        );

        // The timer re-admits it (not before): still failing, it is tried
        // again and ejected again.
        let took = readmitted(ejected).await;
        assert!(
            took >= Duration::from_millis(EJECT_MS * 2 / 3),
            "re-admitted after {took:?}"
        );
        let before = picks(&page().await);
        let ejected = eject().await;
        let page_now = page().await;
        assert!(
            picks(&page_now) >= before + 2,
            "no traffic after re-admission:\n{page_now}"
        );
        assert_eq!(ejections(&page_now), 2);

        // Recovered: once re-admitted it serves its share and stays in.
        flaky.failing.store(false, SeqCst);
        let took = readmitted(ejected).await;
        assert!(
            took >= Duration::from_millis(EJECT_MS * 2 / 3),
            "re-admitted after {took:?}"
        );
        let served = flaky.served.load(SeqCst);
        for _ in 0..10 {
            assert_eq!(get(&client, &url).await.0, StatusCode::OK);
        }
        let got = flaky.served.load(SeqCst) - served;
        assert!(got >= 4, "the recovered upstream got {got} of 10 requests");
        let page_now = page().await;
        assert_eq!(healthy(&page_now), 1);
        assert_eq!(ejections(&page_now), 2);

        drop(proxy);
        steady.server.stop().await;
        flaky.server.stop().await;
    })
    .await
    .expect("the test ran past its limit");
}
