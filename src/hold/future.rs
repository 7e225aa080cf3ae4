use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// A future that holds `guard` (a [`Reservation`](crate::Reservation) or an
    /// [`OwnedReservation`](crate::OwnedReservation)) until it completes.
    ///
    /// The guard is dropped when the inner future returns `Ready`, before its
    /// output is handed on, or with the wrapper if that comes first. Either
    /// way it drops exactly once.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    /// use workerpick::hold::ReservedFuture;
    /// use workerpick::{LeastLoaded, Pool};
    ///
    /// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
    /// let r = pool.owned_handle().reserve(&LeastLoaded::new()).unwrap();
    /// let worker = *r.worker();
    /// let mut call = Box::pin(ReservedFuture::new(async { 200 }, r));
    /// assert_eq!(pool.in_flight(&worker), Some(1));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert_eq!(call.as_mut().poll(&mut cx), Poll::Ready(200));
    /// assert_eq!(pool.in_flight(&worker), Some(0)); // released on completion
    /// ```
    #[must_use = "futures do nothing unless polled; dropping this releases its reservation"]
    #[derive(Debug)]
    pub struct ReservedFuture<F, G> {
        #[pin]
        inner: F,
        guard: Option<G>,
    }
}

impl<F, G> ReservedFuture<F, G> {
    /// Holds `guard` until `inner` completes.
    pub fn new(inner: F, guard: G) -> Self {
        Self {
            inner,
            guard: Some(guard),
        }
    }

    /// The guard, until the inner future has completed.
    pub fn guard(&self) -> Option<&G> {
        self.guard.as_ref()
    }
}

impl<F: Future, G> Future for ReservedFuture<F, G> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = core::task::ready!(this.inner.poll(cx));
        drop(this.guard.take());
        Poll::Ready(out)
    }
}
