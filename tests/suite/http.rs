//! The `hyper` feature on loopback: an `HttpRoute` served by `HyperRoute`
//! forwards to a real upstream (URI rewritten, path and query kept), holds
//! the load until the body ends, and answers 503 with no workers and 502
//! for an upstream that refuses connections; hop-by-hop headers stay on their
//! connection both ways, `X-Forwarded-For` names the client, and an admission
//! bound sheds with 503.
#![cfg(feature = "hyper")]

use http::Request;
use http_body::Body;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use workerpick::service::{Admission, HttpRoute, HyperRoute, http_client};
use workerpick::{Pool, Registry};

/// An upstream on 127.0.0.1 that answers with the path and query it received.
async fn echo() -> http::uri::Authority {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let answer = hyper::service::service_fn(|req: Request<Incoming>| async move {
                let seen = req.uri().path_and_query().map_or("", |p| p.as_str()).to_string();
                Ok::<_, Infallible>(http::Response::new(seen))
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), answer),
            );
        }
    });
    addr.to_string().parse().unwrap()
}

async fn body_text<B: Body<Error: std::fmt::Debug> + Unpin>(body: B) -> String
where
    B::Data: AsRef<[u8]>,
{
    let mut body = std::pin::pin!(body);
    let mut text = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        if let Ok(data) = frame.unwrap().into_data() {
            text.extend_from_slice(data.as_ref());
        }
    }
    String::from_utf8(text).unwrap()
}

#[tokio::test]
async fn forwards_holds_load_until_the_body_ends_and_maps_errors() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let up = echo().await;
        let pool = Arc::new(Pool::from_workers([up.clone()]).unwrap());
        let route: HttpRoute<String> = HttpRoute::forward(
            &pool,
            Registry::new().resolve("least-loaded").unwrap(),
            http_client(),
        );
        let front = HyperRoute::new(route.clone());

        let response = front
            .call(
                Request::get("http://front.example/a/b?x=1")
                    .body(String::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(pool.in_flight(&up), Some(1)); // held by the body
        assert_eq!(body_text(response.into_body()).await, "/a/b?x=1");
        assert_eq!(pool.in_flight(&up), Some(0));

        // A refusing upstream: 502, and its load released.
        let refused = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let refused: http::uri::Authority = refused.to_string().parse().unwrap();
        pool.remove(&up).unwrap();
        pool.insert(refused.clone()).unwrap();
        let response = front.call(Request::new(String::new())).await.unwrap();
        assert_eq!(response.status(), 502);
        assert!(
            body_text(response.into_body())
                .await
                .starts_with("upstream failed: ")
        );
        assert_eq!(pool.in_flight(&refused), Some(0));

        // No workers: 503.
        pool.remove(&refused).unwrap();
        let response = front.call(Request::new(String::new())).await.unwrap();
        assert_eq!(response.status(), 503);
        assert!(
            body_text(response.into_body())
                .await
                .starts_with("no upstream available: ")
        );
    })
    .await
    .unwrap();
}

/// An upstream that answers with the request headers it received, one
/// `name: value` a line, and sends hop-by-hop headers of its own.
async fn header_echo() -> http::uri::Authority {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let answer = hyper::service::service_fn(|req: Request<Incoming>| async move {
                let mut seen: Vec<String> = req
                    .headers()
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap()))
                    .collect();
                seen.sort();
                let response = http::Response::builder()
                    .header("connection", "x-internal")
                    .header("x-internal", "1")
                    .header("keep-alive", "timeout=5")
                    .header("x-public", "1")
                    .body(seen.join("\n"))
                    .unwrap();
                Ok::<_, Infallible>(response)
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), answer),
            );
        }
    });
    addr.to_string().parse().unwrap()
}

#[tokio::test]
async fn drops_hop_by_hop_headers_both_ways_and_adds_x_forwarded_for() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let up = header_echo().await;
        let pool = Arc::new(Pool::from_workers([up.clone()]).unwrap());
        let route: HttpRoute<String> = HttpRoute::forward(
            &pool,
            Registry::new().resolve("least-loaded").unwrap(),
            http_client(),
        );
        let front = HyperRoute::new(route).forwarded_for("192.0.2.1".parse().unwrap());
        let request = Request::get("http://front.example/")
            .header("host", "front.example")
            .header("connection", "keep-alive, x-secret, x-forwarded-for")
            .header("x-secret", "1")
            .header("keep-alive", "timeout=5")
            .header("proxy-authorization", "Basic eA==")
            .header("x-forwarded-for", "203.0.113.7")
            .header("x-kept", "yes")
            .body(String::new())
            .unwrap();
        let response = front.call(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        let seen = body_text(response.into_body()).await;
        // hyper's client adds nothing here: a GET with an empty body.
        assert_eq!(
            seen,
            "host: front.example\nx-forwarded-for: 192.0.2.1\nx-forwarded-for: 203.0.113.7\nx-kept: yes",
        );
        assert!(headers.get("connection").is_none(), "{headers:?}");
        assert!(headers.get("x-internal").is_none(), "{headers:?}");
        assert!(headers.get("keep-alive").is_none(), "{headers:?}");
        assert_eq!(headers.get("x-public").unwrap(), "1");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_admission_bound_sheds_with_503_until_a_body_is_done() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let up = echo().await;
        let pool = Arc::new(Pool::from_workers([up.clone()]).unwrap());
        let route: HttpRoute<String> = HttpRoute::forward(
            &pool,
            Registry::new().resolve("least-loaded").unwrap(),
            http_client(),
        );
        let admission = Admission::new(1);
        // Two connections, one bound.
        let (one, two) = (
            HyperRoute::new(route.clone()).admission(admission.clone()),
            HyperRoute::new(route).admission(admission.clone()),
        );
        let first = one.call(Request::new(String::new())).await.unwrap();
        assert_eq!(first.status(), 200);
        assert_eq!(admission.in_flight(), 1); // held by its body
        let shed = two.call(Request::new(String::new())).await.unwrap();
        assert_eq!(shed.status(), 503);
        assert_eq!(
            body_text(shed.into_body()).await,
            "over the admission limit: shed\n"
        );
        assert_eq!((admission.shed(), pool.in_flight(&up)), (1, Some(1))); // never picked
        assert_eq!(body_text(first.into_body()).await, "/");
        assert_eq!(admission.in_flight(), 0);
        let again = two.call(Request::new(String::new())).await.unwrap();
        assert_eq!(again.status(), 200);
        drop(again);
        assert_eq!((admission.in_flight(), pool.in_flight(&up)), (0, Some(0)));
    })
    .await
    .unwrap();
}

/// A stand-in upstream for counting: answers at once with an empty body,
/// allocating nothing.
#[derive(Clone)]
struct Stub;

impl tower_service::Service<Request<String>> for Stub {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request<String>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(String::new())))
    }
}

/// `HyperRoute` allocates nothing of its own per request: over a stand-in
/// upstream that allocates nothing, a request picked with least-loaded, its
/// load held until the body ends (`OnBodyEnd`), under an admission bound and
/// with `X-Forwarded-For` added, costs 0 heap allocations, counted on this
/// thread from `call` to the body's drop. What a real proxy allocates per
/// request besides is hyper's (the connection's parsing, hyper-util's client
/// and its pool) and, where a request's header map is full, the map's growth
/// for the `X-Forwarded-For` line. A pick error or an upstream failure
/// allocates its boxed error and the 502/503 message.
#[test]
fn hyper_route_allocates_nothing_per_request() {
    use crate::common::counting::allocations;
    use std::task::{Context, Poll, Waker};
    use workerpick::service::{OnBodyEnd, Route};

    let pool = Arc::new(Pool::from_workers([1u32, 2, 3]).unwrap());
    let route = Route::new(
        &pool,
        Registry::new().resolve("least-loaded").unwrap(),
        |_: &u32| Stub,
    )
    .until(OnBodyEnd);
    let front = HyperRoute::new(route)
        .admission(Admission::new(8))
        .forwarded_for("192.0.2.1".parse().unwrap());
    // Built outside the count, with room for the header the route adds.
    let request = || {
        let mut r = Request::new(String::new());
        r.headers_mut().reserve(8);
        r
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut serve = |r: Request<String>| {
        let mut answer = std::pin::pin!(front.call(r));
        let Poll::Ready(Ok(response)) = answer.as_mut().poll(&mut cx) else {
            panic!("the stub answers at once")
        };
        assert_eq!(response.status(), 200);
        drop(response); // the body: the load and the admission place go back
    };
    // Warm: the handle's first snapshot, the client address's first clone.
    for _ in 0..4 {
        serve(request());
    }
    let requests: Vec<_> = (0..100).map(|_| request()).collect();
    let n = allocations(|| requests.into_iter().for_each(&mut serve));
    assert_eq!(n, 0, "{n} allocations over 100 requests");
    assert_eq!((1..=3).map(|w| pool.in_flight(&w).unwrap()).sum::<u32>(), 0);

    // The counter is live: an error answer allocates its message.
    let empty = Arc::new(Pool::<u32>::new());
    let failing = HyperRoute::new(
        Route::new(
            &empty,
            Registry::new().resolve("least-loaded").unwrap(),
            |_: &u32| Stub,
        )
        .until(OnBodyEnd),
    );
    let n = allocations(|| {
        let mut answer = std::pin::pin!(failing.call(Request::new(String::new())));
        let Poll::Ready(Ok(response)) = answer.as_mut().poll(&mut cx) else {
            panic!()
        };
        assert_eq!(response.status(), 503);
    });
    assert!(n > 0, "a 503's message allocates");
}
