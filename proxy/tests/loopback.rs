//! The proxy on real loopback sockets: upstreams, proxy and clients all on
//! 127.0.0.1 with ephemeral ports, started and stopped by each test. Every
//! workerpick mode carries streamed requests, some cancelled before their
//! answer and some mid-stream; every request is answered, the split across
//! upstreams fits the mode, and no load stays booked.

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use workerpick::Pool;
use workerpick_proxy::load::Plan;
use workerpick_proxy::upstream::{Speed, refusing_addr};
use workerpick_proxy::{Fleet, Router, drain, measure, modes, route};

/// Each test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(90);

const PLAN: Plan = Plan {
    requests: 800,
    concurrency: 16,
    tokens: 4,
    cancel_every: 10,
    deadline: Duration::from_secs(30),
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_answers_every_request_splits_as_it_should_and_leaves_no_load() {
    tokio::time::timeout(LIMIT, async {
        let fleet = Fleet::start(&Speed::fleet(4)).await.unwrap();
        for mode in modes() {
            let r = measure(&fleet, Router::Workerpick(mode), PLAN).await.unwrap();
            let o = &r.outcome;
            assert_eq!(
                (o.failed, o.unsent),
                (0, 0),
                "{mode}: requests without an answer: {o:?}"
            );
            assert!(o.errors.is_empty(), "{mode}: error answers {:?}", o.errors);
            assert_eq!(o.ok + o.cancelled, PLAN.requests, "{mode}");
            assert_eq!(o.cancelled, 2 * PLAN.requests / PLAN.cancel_every, "{mode}");
            assert_eq!(
                r.left_booked,
                Some(0),
                "{mode}: load left booked after the disconnects"
            );
            let split = &r.per_upstream;
            let total: u64 = split.iter().sum();
            let mean = total as f64 / split.len() as f64;
            assert!(
                total >= (PLAN.requests - PLAN.requests / PLAN.cancel_every) as u64,
                "{mode}: {split:?}"
            );
            let within = |tolerance: f64| split.iter().all(|&n| (n as f64 - mean).abs() <= mean * tolerance);
            match mode {
                // The cursor deals in turn; requests cancelled before they
                // reach an upstream blur it a little.
                "round-robin" => assert!(within(0.1), "{mode}: {split:?}"),
                // ~200 a worker: 30% is about five standard deviations.
                "random" => assert!(within(0.3), "{mode}: {split:?}"),
                // Load-aware: the fastest upstream (8x the slowest) finishes
                // sooner, so it is picked more.
                _ => assert!(
                    split[0] > split[3] && split[0] as f64 > mean,
                    "{mode}: the fastest upstream should get the most: {split:?}"
                ),
            }
        }
        fleet.stop().await;
    })
    .await
    .expect("bounded in time");
}

async fn get(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
    proxy: SocketAddr,
) -> (StatusCode, String) {
    let uri = format!("http://{proxy}/stream?tokens=2")
        .parse::<http::Uri>()
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), client.get(uri))
        .await
        .expect("never a hung request")
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_pool_a_removed_worker_and_a_refusing_upstream_get_clear_errors() {
    tokio::time::timeout(LIMIT, async {
        let fleet = Fleet::start(&Speed::fleet(2)).await.unwrap();
        let [fast, slow] = fleet.addrs().try_into().unwrap();
        let refusing = refusing_addr().await.unwrap();
        let pool = Arc::new(Pool::<SocketAddr>::new());
        let proxy = workerpick_proxy::front::start(
            route::workerpick(&pool, "least-loaded", workerpick::service::http_client()).unwrap(),
        )
        .await
        .unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();

        // Empty pool: 503, at once.
        let (status, text) = get(&client, proxy.addr()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
        assert!(text.contains("no upstream available"), "{text}");

        // An upstream that refuses connections: 502, and its booking released.
        pool.insert(refusing).unwrap();
        for _ in 0..5 {
            let (status, text) = get(&client, proxy.addr()).await;
            assert_eq!(status, StatusCode::BAD_GATEWAY, "{text}");
            assert!(text.contains("upstream failed"), "{text}");
        }
        assert_eq!(drain(&pool, Duration::from_secs(2)).await, 0);

        // Replace it with two live upstreams, then remove one: the next
        // requests all go to the other.
        pool.replace([fast, slow]).unwrap();
        for _ in 0..10 {
            assert_eq!(get(&client, proxy.addr()).await.0, StatusCode::OK);
        }
        pool.remove(&slow).unwrap();
        let slow_before = fleet.served()[1];
        for _ in 0..20 {
            assert_eq!(get(&client, proxy.addr()).await.0, StatusCode::OK);
        }
        assert_eq!(
            fleet.served()[1],
            slow_before,
            "a removed upstream gets no new request"
        );

        // The last one removed: 503 again, nothing booked.
        pool.remove(&fast).unwrap();
        assert_eq!(
            get(&client, proxy.addr()).await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        // Removed workers are out of `loads()`: ask for each one.
        for w in [fast, slow, refusing] {
            assert_eq!(pool.in_flight(&w).unwrap_or(0), 0, "{w}: load left booked");
        }

        proxy.stop().await;
        fleet.stop().await;
    })
    .await
    .expect("bounded in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_booked_during_a_stream_is_released_when_the_client_goes_away() {
    tokio::time::timeout(LIMIT, async {
        // One slow upstream: a long stream, so the disconnect lands mid-stream.
        let slow = Speed {
            first_byte: Duration::from_millis(1),
            per_token: Duration::from_millis(20),
        };
        let fleet = Fleet::start(&[slow]).await.unwrap();
        let pool = Arc::new(Pool::from_workers(fleet.addrs()).unwrap());
        let proxy = workerpick_proxy::front::start(
            route::workerpick(&pool, "power-of-two", workerpick::service::http_client()).unwrap(),
        )
        .await
        .unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let uri = format!("http://{}/stream?tokens=200", proxy.addr())
            .parse::<http::Uri>()
            .unwrap();
        let mut bodies = Vec::new();
        for _ in 0..8 {
            let mut body = client.get(uri.clone()).await.unwrap().into_body();
            body.frame().await.unwrap().unwrap();
            bodies.push(body);
        }
        assert_eq!(pool.in_flight(&fleet.addrs()[0]), Some(8), "held while streaming");
        drop(bodies); // eight clients go away mid-stream
        assert_eq!(drain(&pool, Duration::from_secs(5)).await, 0);
        proxy.stop().await;
        fleet.stop().await;
    })
    .await
    .expect("bounded in time");
}
