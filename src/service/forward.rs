use super::{BoxError, OnBodyEnd, Route, Upstreams};
use crate::pool::Pool;
use crate::selectors::Selector;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use http::uri::{Authority, PathAndQuery, Scheme, Uri};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use tower_service::Service;

/// The pooled HTTP/1 client [`Forward`] sends with (hyper-util's legacy
/// `Client`: keep-alive connections per upstream, reused across requests).
pub type HttpClient<B = Incoming> = Client<HttpConnector, B>;

/// A [`Route`] that forwards to upstream addresses, nameable in a struct or
/// an axum state: workers are `host:port` authorities, each request's load is
/// held until its response body ends ([`OnBodyEnd`]).
pub type HttpRoute<B = Incoming, Sel = dyn Selector> = Route<Authority, ForwardTo<B>, Sel, OnBodyEnd>;

/// A client for forwarding: keep-alive, `TCP_NODELAY` (streamed chunks are
/// small writes), and a one-second connect timeout so a dead upstream fails
/// fast rather than holding its request.
///
/// ```
/// let client: workerpick::service::HttpClient<String> = workerpick::service::http_client();
/// ```
pub fn http_client<B>() -> HttpClient<B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(Duration::from_secs(1)));
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build(connector)
}

/// One upstream as a `tower` service: points the request's URI at
/// `http://{authority}` (keeping its path and query, and its end-to-end
/// headers, `Host` included) and sends it through a shared pooled client.
/// Hop-by-hop headers (`Connection` and those it names, `Keep-Alive`,
/// `Transfer-Encoding`, `TE`, `Trailer`, `Upgrade`, `Proxy-*`) are dropped
/// both ways, so protocol upgrades (WebSocket) do not pass through.
///
/// Making one is two reference-count increments (the client, the
/// authority); sending rewrites the URI without allocating.
#[derive(Clone, Debug)]
pub struct Forward<B = Incoming> {
    client: HttpClient<B>,
    authority: Authority,
}

impl<B> Forward<B> {
    /// Forwards to `authority` (`host:port`) through `client`.
    pub fn new(client: HttpClient<B>, authority: Authority) -> Self {
        Self { client, authority }
    }

    /// The upstream it forwards to.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }
}

impl<B> Service<Request<B>> for Forward<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<Incoming>;
    type Error = BoxError;
    type Future = ForwardFuture;

    /// Always ready: the pooled client opens or reuses a connection inside
    /// the response future.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ForwardFuture {
        let (mut head, body) = request.into_parts();
        super::headers::strip_hop_by_hop(&mut head.headers);
        let mut uri = core::mem::take(&mut head.uri).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(self.authority.clone());
        if uri.path_and_query.is_none() {
            uri.path_and_query = Some(PathAndQuery::from_static("/"));
        }
        match Uri::from_parts(uri) {
            Ok(uri) => {
                head.uri = uri;
                ForwardFuture {
                    state: Sending::Sent {
                        response: self.client.request(Request::from_parts(head, body)),
                    },
                }
            }
            Err(e) => ForwardFuture {
                state: Sending::Refused { error: Some(e) },
            },
        }
    }
}

pin_project_lite::pin_project! {
    #[project = SendingProj]
    enum Sending {
        Sent { #[pin] response: ResponseFuture },
        Refused { error: Option<http::uri::InvalidUriParts> },
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`Forward`].
    pub struct ForwardFuture {
        #[pin]
        state: Sending,
    }
}

impl Future for ForwardFuture {
    type Output = Result<Response<Incoming>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            SendingProj::Sent { response } => response.poll(cx).map(|answer| match answer {
                Ok(mut response) => {
                    super::headers::strip_hop_by_hop(response.headers_mut());
                    Ok(response)
                }
                Err(e) => Err(e.into()),
            }),
            SendingProj::Refused { error } => Poll::Ready(Err(error.take().map_or_else(
                || "workerpick: a ForwardFuture was polled after it completed".into(),
                Into::into,
            ))),
        }
    }
}

/// Where an [`HttpRoute`] finds each worker's service: a [`Forward`] to the
/// worker's authority through one shared client. Membership is the pool's
/// own (`insert`/`remove` an `Authority`).
///
/// ```
/// use std::sync::Arc;
/// use workerpick::service::{ForwardTo, HttpRoute, Upstreams, http_client};
/// use workerpick::{Pool, Registry};
///
/// let upstreams = ["127.0.0.1:8081".parse().unwrap(), "127.0.0.1:8082".parse().unwrap()];
/// let pool = Arc::new(Pool::from_workers(upstreams).unwrap());
/// let route: HttpRoute = HttpRoute::forward(&pool, Registry::new().resolve("least-loaded").unwrap(), http_client());
/// let forward = ForwardTo::<String>::new(http_client()).service(&"127.0.0.1:8081".parse().unwrap()).unwrap();
/// assert_eq!(forward.authority(), "127.0.0.1:8081");
/// # drop(route);
/// ```
#[derive(Clone, Debug)]
pub struct ForwardTo<B = Incoming> {
    client: HttpClient<B>,
}

impl<B> ForwardTo<B> {
    /// Forwards through `client` (see [`http_client`]).
    pub fn new(client: HttpClient<B>) -> Self {
        Self { client }
    }

    /// The shared client.
    pub fn client(&self) -> &HttpClient<B> {
        &self.client
    }
}

impl<B: Send + 'static> Upstreams<Authority> for ForwardTo<B> {
    type Service = Forward<B>;

    fn service(&self, worker: &Authority) -> Option<Forward<B>> {
        Some(Forward::new(self.client.clone(), worker.clone()))
    }
}

impl<B, Sel> Route<Authority, ForwardTo<B>, Sel, OnBodyEnd>
where
    B: Send + 'static,
    Sel: Selector + ?Sized,
{
    /// Routes over `pool` with `selector`, forwarding each request to the
    /// chosen authority through `client` and holding its load until the
    /// response body ends: a reverse proxy's whole routing service.
    pub fn forward(pool: &Arc<Pool<Authority>>, selector: Arc<Sel>, client: HttpClient<B>) -> Self {
        Route::new(pool, selector, ForwardTo::new(client)).until(OnBodyEnd)
    }
}
