/// Where a [`Route`](super::Route) finds the inner service of the worker it
/// picked.
///
/// Any `Fn(&W) -> S` is one (membership then follows the pool itself); so is
/// [`Discovered`](super::Discovered).
///
/// ```
/// use workerpick::service::Upstreams;
/// let by_port = |port: &u16| format!("http://127.0.0.1:{port}");
/// assert_eq!(by_port.service(&8080).as_deref(), Some("http://127.0.0.1:8080"));
/// ```
pub trait Upstreams<W>: Send + Sync + 'static {
    /// The inner service of one worker; cloned or made once per request.
    type Service;

    /// `worker`'s service, or `None` if it has none (it was removed).
    fn service(&self, worker: &W) -> Option<Self::Service>;
}

impl<W, S, F> Upstreams<W> for F
where
    F: Fn(&W) -> S + Send + Sync + 'static,
{
    type Service = S;

    #[inline]
    fn service(&self, worker: &W) -> Option<S> {
        Some(self(worker))
    }
}
