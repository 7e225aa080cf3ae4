//! A [`tower`](https://docs.rs/tower) integration: [`Route`] is a cloneable
//! `Service` that picks a worker for each request with any [`Selector`](crate::Selector),
//! forwards the request to that worker's inner service, and keeps the
//! reservation until the response is done — for `http` responses, with
//! [`OnBodyEnd`], until the body's last frame.
//!
//! # How it differs from `tower::balance`
//! `tower::balance::p2c::Balance` owns its services and needs `&mut self` to
//! choose, so many tasks share it through a `Buffer` (a channel and a worker
//! task). A `Route` keeps no per-request state of its own: each clone carries
//! an [`OwnedHandle`](crate::OwnedHandle) on the shared pool, picks lock-free in
//! `call`, and calls a clone of the chosen worker's service. Clone it into as
//! many tasks as you like; no `Buffer`, no background task.
//!
//! # `poll_ready`
//! `Route::poll_ready` is always ready: which worker serves a request is
//! decided in `call`, from the load at that moment, so readiness cannot be
//! promised earlier.
//! - An empty pool (or a mask that excludes everyone) is not a readiness
//!   problem: `call` returns a future that fails at its first poll with
//!   [`Error::NoWorkers`](crate::Error::NoWorkers) (or `AllDraining`,
//!   `NoEligibleWorker`),
//!   boxed. It never hangs.
//! - The chosen worker's inner service is polled for readiness inside the
//!   response future, while the reservation is already held: a slow-to-ready
//!   worker shows as loaded, so the load-aware modes steer other requests
//!   away from it while this one waits. An error from its `poll_ready` fails
//!   this request and releases the booking.
//!
//! What `poll_ready` cannot promise: that the upstream will accept the
//! request, that its connection will open, or that the load booked by `call`
//! stays the lowest while the request waits. It is no back-pressure signal;
//! a caller that must bound the work in flight does it before `call`:
//! `tower::limit::ConcurrencyLimit` queues (its `poll_ready` waits for a
//! slot), an [`Admission`] bound on a [`HyperRoute`] sheds (a request over
//! it is answered 503 at once and never reaches `Route::call`), and the
//! health mark ([`Pool::set_healthy`](crate::Pool::set_healthy)) is how a
//! failing upstream stops receiving picks.
//!
//! # HTTP on hyper 1 (feature `hyper`)
//! - [`HyperRoute`] serves a `Route` as a hyper service (`&self`): one per
//!   connection, no allocation per request; pick errors answer 503 and
//!   upstream failures 502 ([`error_response`]), all in one body type,
//!   [`RouteBody`]. With an [`Admission`] bound it sheds (503) what is over
//!   the bound, and with [`HyperRoute::forwarded_for`] it names the client
//!   in `X-Forwarded-For`.
//! - [`Forward`] sends a request to one `host:port` through hyper-util's
//!   pooled client ([`http_client`]); [`ForwardTo`] names one per worker, and
//!   [`HttpRoute`] is the whole routing service, a type you can name in a
//!   struct or an axum state.
//! - [`Ejection`] takes a worker out of the picks for a while after
//!   consecutive failures (5xx answers or errors) and lets it back in:
//!   [`Ejection::watch`] counts every answer of a route's upstreams.
//!
//! ```no_run
//! # #[cfg(feature = "hyper")]
//! # async fn proxy() -> std::io::Result<()> {
//! use hyper_util::rt::TokioIo;
//! use std::sync::Arc;
//! use workerpick::service::{HttpRoute, HyperRoute, http_client};
//! use workerpick::{Pool, Registry};
//!
//! let upstreams = ["127.0.0.1:8081".parse().unwrap(), "127.0.0.1:8082".parse().unwrap()];
//! let pool = Arc::new(Pool::from_workers(upstreams).unwrap());
//! let mode = Registry::new().resolve("least-loaded").unwrap();
//! let route: HttpRoute = HttpRoute::forward(&pool, mode, http_client());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! loop {
//!     let (stream, _) = listener.accept().await?;
//!     let serve = HyperRoute::new(route.clone());
//!     tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), serve));
//! }
//! # }
//! ```
//!
//! # A fleet that is down: 502, not 503
//! A pick fails, and [`HyperRoute`] answers 503, only when no worker can be
//! named: an empty pool, every worker draining, none eligible under the
//! request's mask. Health marks never empty the candidates. With every worker
//! marked unhealthy ([`Pool::set_healthy`](crate::Pool::set_healthy)), picks
//! go on over all of them as if none were marked, by load (Envoy's panic
//! routing): when every upstream fails at once, the health signal is more
//! often what is wrong (a burst of errors, a deploy, a shared dependency
//! blipping) than the whole fleet, and refusing every request would make a
//! blip an outage. So each request still tries an upstream, and a fleet that
//! is really down answers 502 (an upstream that cannot be reached; one that
//! answers passes its own 5xx through), not 503. This is a
//! choice, not an accident: to shed with 503 instead, count the marks you set
//! and answer before routing while all are set.
//!
//! # Allocations
//! [`HyperRoute`] and [`Route`] allocate nothing per request of their own
//! (the suite's `http::hyper_route_allocates_nothing_per_request` counts 0
//! with a stand-in upstream, `OnBodyEnd`, an [`Admission`] bound and
//! `X-Forwarded-For`). What does allocate per request: hyper's connection
//! (parsing) and hyper-util's client ([`Forward`]: its request future and
//! pool checkout); the request's header map, if it has no room for the
//! `X-Forwarded-For` line; and an error answer (the boxed error and its
//! 502/503 message). Cloning a `Route` (one per connection) allocates a handle.
//!
//! # Membership
//! - [`Upstreams`] maps the chosen worker to its inner service. A closure
//!   `Fn(&W) -> S` works: membership is then the pool's own `insert`/`remove`,
//!   and the closure makes (clones) the service per request.
//! - [`Discovered`] keeps a map from worker to service, fed by
//!   `insert`/`remove` or by a `tower::discover::Discover` stream through
//!   [`Discovered::discover`], a future you spawn on your runtime.
//!
//! A worker removed while one of its requests is in flight serves that request
//! to the end (the request holds its own service clone) and keeps its load
//! booked until then; picks that start after the removal never choose it. A
//! pick that races the removal and finds the service gone fails with
//! [`Error::UnknownWorker`](crate::Error::UnknownWorker) and books nothing.
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::Arc;
//! use std::task::{Context, Poll, Waker};
//! use tower_service::Service;
//! use workerpick::service::Route;
//! use workerpick::{Pool, Registry};
//!
//! /// A stand-in upstream: answers with its own name.
//! #[derive(Clone)]
//! struct Upstream(&'static str);
//! impl Service<String> for Upstream {
//!     type Response = String;
//!     type Error = Infallible;
//!     type Future = std::future::Ready<Result<String, Infallible>>;
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
//!         Poll::Ready(Ok(()))
//!     }
//!     fn call(&mut self, req: String) -> Self::Future {
//!         std::future::ready(Ok(format!("{} from {}", req, self.0)))
//!     }
//! }
//!
//! let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
//! let mode = Registry::new().resolve("round-robin").unwrap(); // from configuration
//! let mut route = Route::new(&pool, mode, |w: &&'static str| Upstream(w));
//! let mut cx = Context::from_waker(Waker::noop());
//! assert!(route.poll_ready(&mut cx).is_ready());
//! let mut call = route.call("hi".to_string());
//! let Poll::Ready(Ok(answer)) = std::pin::Pin::new(&mut call).poll(&mut cx) else { panic!() };
//! assert_eq!(answer, "hi from a");
//! ```

#[cfg(feature = "hyper")]
mod admission;
mod body;
mod completion;
mod discovered;
#[cfg(feature = "hyper")]
mod ejection;
#[cfg(feature = "hyper")]
mod forward;
#[cfg(feature = "hyper")]
mod headers;
#[cfg(feature = "hyper")]
mod hyper_route;
mod route;
#[cfg(feature = "hyper")]
mod route_body;
mod upstreams;

#[cfg(feature = "hyper")]
pub use admission::{Admission, Permit};
pub use body::ReservedBody;
pub use completion::{Completion, OnBodyEnd, OnResponse};
pub use discovered::{Discovered, Membership};
#[cfg(feature = "hyper")]
pub use ejection::{Ejected, EjectedFuture, Ejecting, Ejection, EjectionStats};
#[cfg(feature = "hyper")]
pub use forward::{Forward, ForwardFuture, ForwardTo, HttpClient, HttpRoute, http_client};
#[cfg(feature = "hyper")]
pub use hyper_route::{HyperFuture, HyperRoute};
pub use route::{Route, RouteFuture};
#[cfg(feature = "hyper")]
pub use route_body::{RouteBody, error_response, error_status};
pub use upstreams::Upstreams;

/// The error type of [`Route`]'s responses, as in `tower`: a pick error
/// ([`Error`](crate::Error)) or the inner service's error, boxed. Downcast to
/// tell them apart.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
