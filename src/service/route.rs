use super::{BoxError, Completion, OnResponse, Upstreams};
use crate::error::Error;
use crate::owned::handle::OwnedHandle;
use crate::owned::reservation::OwnedReservation;
use crate::pool::Pool;
use crate::selectors::Selector;
use core::future::Future;
use core::hash::Hash;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;
use tower_service::Service;

/// A `tower` `Service` that routes each request to a worker picked by a
/// [`Selector`] and holds that worker's load until the response is done (see
/// the [module docs](super) for `poll_ready`, membership and errors).
///
/// Cloning is cheap (a new [`OwnedHandle`]: one small allocation), and each
/// clone routes on its own: share one per task or connection, no `Buffer`.
pub struct Route<W, U, Sel: ?Sized = dyn Selector, C = OnResponse> {
    handle: OwnedHandle<W>,
    upstreams: Arc<U>,
    selector: Arc<Sel>,
    completion: C,
}

impl<W, U, Sel> Route<W, U, Sel, OnResponse>
where
    W: Clone + Eq + Hash + Send + Sync + 'static,
    U: Upstreams<W>,
    Sel: Selector + ?Sized,
{
    /// Routes over `pool` with `selector`, calling the services `upstreams`
    /// names; each request's reservation is released when its response
    /// arrives (see [`until`](Self::until) to hold it longer).
    pub fn new(pool: &Arc<Pool<W>>, selector: Arc<Sel>, upstreams: U) -> Self {
        Self {
            handle: pool.owned_handle(),
            upstreams: Arc::new(upstreams),
            selector,
            completion: OnResponse,
        }
    }
}

impl<W, U, Sel: ?Sized, C> Route<W, U, Sel, C> {
    /// The same route, giving reservations back as `completion` says (e.g.
    /// [`OnBodyEnd`](super::OnBodyEnd) for streamed `http` bodies).
    pub fn until<C2>(self, completion: C2) -> Route<W, U, Sel, C2> {
        Route {
            handle: self.handle,
            upstreams: self.upstreams,
            selector: self.selector,
            completion,
        }
    }

    /// The pool this route picks from.
    pub fn pool(&self) -> &Arc<Pool<W>>
    where
        W: Clone + Eq + Hash + Send + Sync,
    {
        self.handle.pool()
    }
}

impl<W, U, Sel: ?Sized, C: Clone> Clone for Route<W, U, Sel, C>
where
    W: Clone + Eq + Hash + Send + Sync,
{
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            upstreams: self.upstreams.clone(),
            selector: self.selector.clone(),
            completion: self.completion.clone(),
        }
    }
}

impl<W, U, Sel: ?Sized, C> core::fmt::Debug for Route<W, U, Sel, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Route").finish_non_exhaustive()
    }
}

impl<W, U, Sel, C, Req> Service<Req> for Route<W, U, Sel, C>
where
    W: Clone + Eq + Hash + Send + Sync + 'static,
    U: Upstreams<W>,
    U::Service: Service<Req>,
    <U::Service as Service<Req>>::Error: Into<BoxError>,
    Sel: Selector + ?Sized,
    C: Completion<OwnedReservation<W>, <U::Service as Service<Req>>::Response>,
{
    type Response = C::Output;
    type Error = BoxError;
    type Future = RouteFuture<U::Service, Req, OwnedReservation<W>, C>;

    /// Always ready: the worker is chosen in `call` (see the module docs).
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let guard = match self.handle.reserve(&*self.selector) {
            Ok(guard) => guard,
            Err(e) => return RouteFuture::failed(e, self.completion.clone()),
        };
        match self.upstreams.service(guard.worker()) {
            Some(service) => RouteFuture {
                state: State::Waiting {
                    service,
                    request: Some(request),
                    guard: Some(guard),
                },
                completion: self.completion.clone(),
            },
            // Removed between the pick and the lookup; the guard drops here.
            None => RouteFuture::failed(Error::UnknownWorker, self.completion.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<S, Req, F, G> {
        Failed { error: Option<Error> },
        Waiting { service: S, request: Option<Req>, guard: Option<G> },
        Calling { #[pin] call: F, guard: Option<G> },
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`Route`]: waits for the chosen worker's
    /// service to be ready, calls it, and hands the reservation to the
    /// [`Completion`] policy with the response. Dropping it early releases
    /// the reservation.
    pub struct RouteFuture<S, Req, G, C>
    where
        S: Service<Req>,
    {
        #[pin]
        state: State<S, Req, S::Future, G>,
        completion: C,
    }
}

impl<S: Service<Req>, Req, G, C> RouteFuture<S, Req, G, C> {
    fn failed(error: Error, completion: C) -> Self {
        Self {
            state: State::Failed { error: Some(error) },
            completion,
        }
    }
}

impl<S, Req, G, C> Future for RouteFuture<S, Req, G, C>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Completion<G, S::Response>,
{
    type Output = Result<C::Output, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            let next = match this.state.as_mut().project() {
                StateProj::Failed { error } => {
                    return Poll::Ready(Err(error.take().map_or_else(polled_again, Into::into)));
                }
                StateProj::Waiting {
                    service,
                    request,
                    guard,
                } => {
                    if let Err(e) = core::task::ready!(service.poll_ready(cx)) {
                        drop(guard.take());
                        return Poll::Ready(Err(e.into()));
                    }
                    let Some(request) = request.take() else {
                        return Poll::Ready(Err(polled_again()));
                    };
                    State::Calling {
                        call: service.call(request),
                        guard: guard.take(),
                    }
                }
                StateProj::Calling { call, guard } => {
                    let response = core::task::ready!(call.poll(cx));
                    let Some(guard) = guard.take() else {
                        return Poll::Ready(Err(polled_again()));
                    };
                    return Poll::Ready(match response {
                        Ok(response) => Ok(this.completion.complete(guard, response)),
                        Err(e) => Err(e.into()),
                    });
                }
            };
            this.state.set(next);
        }
    }
}

fn polled_again() -> BoxError {
    "workerpick: a RouteFuture was polled after it completed".into()
}
