use super::ReservedBody;

/// When a [`Route`](super::Route) gives a request's reservation back: it
/// receives the reservation with the inner service's response and returns
/// what the caller gets.
pub trait Completion<G, R>: Clone {
    /// The response the caller receives.
    type Output;

    /// Takes over `guard` (the request's reservation) for `response`.
    fn complete(&self, guard: G, response: R) -> Self::Output;
}

/// Releases the reservation when the inner service's response arrives.
///
/// ```
/// use workerpick::service::{Completion, OnResponse};
/// let released = std::rc::Rc::new(());
/// assert_eq!(OnResponse.complete(released.clone(), 7), 7);
/// assert_eq!(std::rc::Rc::strong_count(&released), 1); // the guard is gone
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OnResponse;

impl<G, R> Completion<G, R> for OnResponse {
    type Output = R;

    fn complete(&self, guard: G, response: R) -> R {
        drop(guard);
        response
    }
}

/// For `http` responses: holds the reservation until the body has sent its
/// last frame, failed, or been dropped (the client went away).
///
/// ```
/// use workerpick::service::{Completion, OnBodyEnd};
/// let guard = std::rc::Rc::new(());
/// let response = http::Response::new(String::from("streamed"));
/// let held = OnBodyEnd.complete(guard.clone(), response);
/// assert_eq!(std::rc::Rc::strong_count(&guard), 2); // held by the body
/// drop(held);
/// assert_eq!(std::rc::Rc::strong_count(&guard), 1);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OnBodyEnd;

impl<G, B: http_body::Body> Completion<G, http::Response<B>> for OnBodyEnd {
    type Output = http::Response<ReservedBody<B, G>>;

    fn complete(&self, guard: G, response: http::Response<B>) -> Self::Output {
        response.map(|body| ReservedBody::new(body, guard))
    }
}
