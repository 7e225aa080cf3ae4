use super::admission::{Admission, Permit};
use super::{BoxError, Route, RouteBody, error_response};
use crate::selectors::Selector;
use core::cell::RefCell;
use core::convert::Infallible;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::{HeaderValue, Request, Response};
use hyper::body::Bytes;
use std::net::IpAddr;
use tower_service::Service;

/// A [`Route`] as a hyper 1 service: hyper calls `&self`, a `Route` picks
/// with `&mut self` (its handle's random state), so one `HyperRoute` serves
/// one connection and borrows its route for the instant of each pick.
///
/// Make one per connection from a clone of a shared route (one small
/// allocation per connection); a request then costs no allocation beyond
/// hyper's and the inner service's (the module docs list them, "Allocations";
/// the suite counts 0 of its own). Pick and upstream errors become
/// responses ([`error_response`]: 503 or 502), so the service never fails
/// and the connection stays open.
///
/// It is `Send` but not `Sync`: hyper's connection task owns it, and the
/// borrow never outlives a `call`, so it cannot be contended.
///
/// ```
/// use http::Request;
/// use hyper::service::Service;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Waker};
/// use workerpick::service::{HttpRoute, HyperRoute, http_client};
/// use workerpick::{Pool, Registry};
///
/// let pool = Arc::new(Pool::new()); // no upstreams yet
/// let mode = Registry::new().resolve("least-loaded").unwrap();
/// let route: HttpRoute<String> = HttpRoute::forward(&pool, mode, http_client());
/// let per_connection = HyperRoute::new(route.clone());
/// let mut answer = per_connection.call(Request::new(String::new()));
/// let Poll::Ready(Ok(response)) = std::pin::Pin::new(&mut answer).poll(&mut Context::from_waker(Waker::noop())) else {
///     panic!()
/// };
/// assert_eq!(response.status(), 503); // the empty pool, as a response
/// ```
pub struct HyperRoute<W, U, Sel: ?Sized = dyn Selector, C = super::OnBodyEnd> {
    client: Option<HeaderValue>,
    admission: Option<Admission>,
    route: RefCell<Route<W, U, Sel, C>>,
}

impl<W, U, Sel: ?Sized, C> HyperRoute<W, U, Sel, C> {
    /// Serves with `route` (give each connection its own clone).
    pub fn new(route: Route<W, U, Sel, C>) -> Self {
        Self {
            client: None,
            admission: None,
            route: RefCell::new(route),
        }
    }

    /// Adds `client` (the connection's peer) to each request's
    /// `X-Forwarded-For`, after what earlier proxies wrote there. The address
    /// is formatted once, here; each request then appends one header line.
    pub fn forwarded_for(mut self, client: IpAddr) -> Self {
        self.client = HeaderValue::try_from(client.to_string()).ok();
        self
    }

    /// Sheds what is over `admission`'s bound (shared by every connection
    /// given a clone of it): such a request is answered 503 at once, never
    /// picked or queued; an admitted one holds its place until its response
    /// body is dropped, or until it fails.
    pub fn admission(mut self, admission: Admission) -> Self {
        self.admission = Some(admission);
        self
    }

    /// The route back.
    pub fn into_inner(self) -> Route<W, U, Sel, C> {
        self.route.into_inner()
    }
}

impl<W, U, Sel: ?Sized, C> core::fmt::Debug for HyperRoute<W, U, Sel, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HyperRoute").finish_non_exhaustive()
    }
}

impl<W, U, Sel, C, ReqB, B> hyper::service::Service<Request<ReqB>> for HyperRoute<W, U, Sel, C>
where
    Sel: ?Sized,
    Route<W, U, Sel, C>: Service<Request<ReqB>, Response = Response<B>, Error = BoxError>,
{
    type Response = Response<RouteBody<B>>;
    type Error = Infallible;
    type Future = HyperFuture<<Route<W, U, Sel, C> as Service<Request<ReqB>>>::Future>;

    fn call(&self, mut request: Request<ReqB>) -> Self::Future {
        let permit = match &self.admission {
            Some(admission) => match admission.try_admit() {
                Some(permit) => Some(permit),
                None => {
                    return HyperFuture {
                        inner: None,
                        permit: None,
                    };
                }
            },
            None => None,
        };
        if let Some(client) = &self.client {
            super::headers::forwarded_for(request.headers_mut(), client);
        }
        // `Route::poll_ready` is always ready (see the module docs), so it
        // needs no waker and no wait: the pick happens in `call`.
        HyperFuture {
            inner: Some(self.route.borrow_mut().call(request)),
            permit,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`HyperRoute`]: the route's own future, its
    /// error turned into a response (or, shed, a 503 at once).
    pub struct HyperFuture<F> {
        // `None`: shed.
        #[pin]
        inner: Option<F>,
        permit: Option<Permit>,
    }
}

impl<F, B> Future for HyperFuture<F>
where
    F: Future<Output = Result<Response<B>, BoxError>>,
{
    type Output = Result<Response<RouteBody<B>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            let mut shed = Response::new(RouteBody::message(Bytes::from_static(
                b"over the admission limit: shed\n",
            )));
            *shed.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            return Poll::Ready(Ok(shed));
        };
        Poll::Ready(Ok(match core::task::ready!(inner.poll(cx)) {
            Ok(response) => response.map(|body| RouteBody::upstream(body).holding(this.permit.take())),
            Err(e) => {
                drop(this.permit.take());
                error_response(&e)
            }
        }))
    }
}
