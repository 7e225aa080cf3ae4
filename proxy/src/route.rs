//! The routing services the proxy can sit on: workerpick's [`Route`] over an
//! `Arc<Pool<SocketAddr>>`, and `tower::balance::p2c` behind a `Buffer`.
//! (For a service of your own, the library's `hyper` feature has the same
//! pieces: `service::Forward`, `HttpRoute` and `HyperRoute`; `serve` uses them.)

use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PendingRequests};
use workerpick::service::{BoxError, OnBodyEnd, Route};
use workerpick::{Error, Pool, Registry};

/// The HTTP client the proxy forwards with (pooled keep-alive connections).
pub type HttpClient = Client<HttpConnector, Incoming>;

/// A client for forwarding: keep-alive, no connect retries, a short connect
/// timeout so a dead upstream fails fast.
pub fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(Duration::from_secs(1)));
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build(connector)
}

/// One upstream as a `tower` service: rewrites the request's URI to point at
/// `addr` and forwards it.
#[derive(Clone, Debug)]
pub struct Upstream {
    client: HttpClient,
    addr: SocketAddr,
}

impl Upstream {
    /// Forwards to `addr` through `client`.
    pub fn new(client: HttpClient, addr: SocketAddr) -> Self {
        Self { client, addr }
    }
}

impl Service<Request<Incoming>> for Upstream {
    type Response = Response<Incoming>;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response<Incoming>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Incoming>) -> Self::Future {
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
        let uri: Result<Uri, _> = format!("http://{}{}", self.addr, path).parse();
        let client = self.client.clone();
        Box::pin(async move {
            *req.uri_mut() = uri?;
            Ok(client.request(req).await?)
        })
    }
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
        Upstream::new(client.clone(), *addr)
    })
    .until(OnBodyEnd))
}

/// tower's own power-of-two-choices balancer over `addrs`, shared through a
/// `Buffer` (it needs `&mut self` to choose). Call inside a tokio runtime.
pub fn tower_p2c(addrs: &[SocketAddr], client: HttpClient) -> impl RouteService {
    let services: Vec<_> = addrs
        .iter()
        .map(|&addr| PendingRequests::new(Upstream::new(client.clone(), addr), CompleteOnResponse::default()))
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
