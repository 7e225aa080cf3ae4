//! The routing services the proxy can sit on: workerpick's [`Route`] over an
//! `Arc<Pool<SocketAddr>>`, and `tower::balance::p2c` behind a `Buffer`,
//! both forwarding with the library's `service::Forward` through its pooled
//! client (`service::http_client`), as `serve` does.

use http::uri::Authority;
use http::{Request, Response};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;
use tower::Service;
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PendingRequests};
use workerpick::service::{BoxError, Forward, HttpClient, OnBodyEnd, Route};
use workerpick::{Error, Pool, Registry};

/// `addr` as the authority a [`Forward`] sends to.
fn authority(addr: SocketAddr) -> Authority {
    Authority::try_from(addr.to_string()).expect("a socket address is an authority")
}

/// workerpick's router over `pool`, in the mode named `mode` (a registry
/// name), holding each request's load until its response body ends.
pub fn workerpick(
    pool: &Arc<Pool<SocketAddr>>,
    mode: &str,
    client: HttpClient,
) -> Result<impl RouteService, Error> {
    let selector = Registry::new().resolve(mode)?;
    Ok(Route::new(pool, selector, move |addr: &SocketAddr| {
        Forward::new(client.clone(), authority(*addr))
    })
    .until(OnBodyEnd))
}

/// tower's own power-of-two-choices balancer over `addrs`, shared through a
/// `Buffer` (it needs `&mut self` to choose). Call inside a tokio runtime.
pub fn tower_p2c(addrs: &[SocketAddr], client: HttpClient) -> impl RouteService {
    let services: Vec<_> = addrs
        .iter()
        .map(|&addr| {
            PendingRequests::new(
                Forward::new(client.clone(), authority(addr)),
                CompleteOnResponse::default(),
            )
        })
        .collect();
    Buffer::new(Balance::new(ServiceList::new(services)), 1024)
}

/// A routing service the proxy front end can serve: a cloneable `tower`
/// service from requests to responses with an `http` body of bytes.
pub trait RouteService:
    Service<Request<Incoming>, Response = Response<Self::Body>, Error = BoxError, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
    /// The response body.
    type Body: http_body::Body<Data = bytes::Bytes, Error: Into<BoxError>> + Send + 'static;
}

impl<S, B> RouteService for S
where
    S: Service<Request<Incoming>, Response = Response<B>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes, Error: Into<BoxError>> + Send + 'static,
{
    type Body = B;
}
