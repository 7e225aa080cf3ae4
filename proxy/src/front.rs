//! The proxy's front end: accepts HTTP/1 connections on 127.0.0.1 and hands
//! each request to a routing service; routing errors become clear 502/503
//! responses, never a hung request.

use crate::route::RouteService;
use crate::server::Server;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::cell::RefCell;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tower::ServiceExt;
use workerpick::service::BoxError;

/// The body of every proxy response.
pub type ProxyBody = UnsyncBoxBody<Bytes, BoxError>;

/// Serves `route` on an ephemeral port of 127.0.0.1; stop it with
/// [`Server::stop`], which closes every connection and so drops the requests
/// in flight (and with them their reservations).
pub async fn start<R: RouteService>(route: R) -> io::Result<Server> {
    // One routing service per connection: for workerpick's `Route`, a clone
    // is a handle of its own on the pool.
    Server::start(move || PerConnection(RefCell::new(route.clone()))).await
}

/// Adapts a `tower` service (`&mut self`, `poll_ready`) to hyper's (`&self`).
///
/// hyper calls a connection's service from that connection's task, one call
/// at a time, and the borrow ends before `call` returns, so the `RefCell` is
/// never contended.
struct PerConnection<R>(RefCell<R>);

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Infallible>> + Send>>;

impl<R: RouteService> hyper::service::Service<Request<Incoming>> for PerConnection<R> {
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, req: Request<Incoming>) -> ResponseFuture {
        let mut route = self.0.borrow_mut();
        let ready = route.poll_ready(&mut Context::from_waker(Waker::noop()));
        let response = match ready {
            // workerpick's `Route` is always ready: route on this
            // connection's handle.
            Poll::Ready(Ok(())) => route.call(req),
            // A `Buffer` that is full: wait for capacity on a clone.
            Poll::Pending => {
                let route = route.clone();
                return Box::pin(async move { Ok(respond(route.oneshot(req).await)) });
            }
            Poll::Ready(Err(e)) => return Box::pin(std::future::ready(Ok(error_response(e)))),
        };
        Box::pin(async move { Ok(respond(response.await)) })
    }
}

fn respond<B>(routed: Result<Response<B>, BoxError>) -> Response<ProxyBody>
where
    B: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static,
{
    match routed {
        Ok(response) => response.map(|body| body.map_err(Into::into).boxed_unsync()),
        Err(e) => error_response(e),
    }
}

/// 503 when no upstream could be picked (an empty pool, a worker removed
/// under the request), 502 when the chosen upstream failed (refused the
/// connection, broke the response).
pub fn error_response(e: BoxError) -> Response<ProxyBody> {
    let (status, what) = match e.downcast_ref::<workerpick::Error>() {
        Some(pick) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("no upstream available: {pick}\n"),
        ),
        None => (
            StatusCode::BAD_GATEWAY,
            format!("upstream failed: {}\n", chain(&*e)),
        ),
    };
    let body = Full::new(Bytes::from(what))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

/// An error with its sources, one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
