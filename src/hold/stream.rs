use core::pin::Pin;
use core::task::{Context, Poll};
use futures_core::Stream;

pin_project_lite::pin_project! {
    /// A stream that holds `guard` until it ends: for a response streamed
    /// token by token, the worker's load stays booked until the last item.
    ///
    /// The guard is dropped when the inner stream yields `None`, or with the
    /// wrapper if that comes first (the client went away): exactly once.
    ///
    /// ```
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll, Waker};
    /// use futures_core::Stream;
    /// use workerpick::hold::ReservedStream;
    /// use workerpick::{Pool, RoundRobin};
    ///
    /// /// Yields 3, 2, 1.
    /// struct Countdown(u32);
    /// impl Stream for Countdown {
    ///     type Item = u32;
    ///     fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<u32>> {
    ///         let n = self.0;
    ///         self.0 = n.saturating_sub(1);
    ///         Poll::Ready((n > 0).then_some(n))
    ///     }
    /// }
    ///
    /// let pool = Pool::from_workers([1]).unwrap();
    /// let r = pool.reserve(&RoundRobin::new()).unwrap();
    /// let mut tokens = ReservedStream::new(Countdown(3), r);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut next = || Pin::new(&mut tokens).poll_next(&mut cx);
    /// assert_eq!(next(), Poll::Ready(Some(3)));
    /// assert_eq!(pool.in_flight(&1), Some(1)); // still streaming
    /// assert_eq!((next(), next(), next()), (Poll::Ready(Some(2)), Poll::Ready(Some(1)), Poll::Ready(None)));
    /// assert_eq!(pool.in_flight(&1), Some(0));
    /// ```
    #[must_use = "streams do nothing unless polled; dropping this releases its reservation"]
    #[derive(Debug)]
    pub struct ReservedStream<S, G> {
        #[pin]
        inner: S,
        guard: Option<G>,
    }
}

impl<S, G> ReservedStream<S, G> {
    /// Holds `guard` until `inner` ends.
    pub fn new(inner: S, guard: G) -> Self {
        Self {
            inner,
            guard: Some(guard),
        }
    }

    /// The guard, until the inner stream has ended.
    pub fn guard(&self) -> Option<&G> {
        self.guard.as_ref()
    }

    /// The guard, mutably, until the inner stream has ended: to give back a
    /// phase of its load while the stream runs, such as the prefill's share
    /// at the first token ([`Reservation::release_part`](crate::Reservation::release_part)).
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use futures_core::Stream;
    /// use workerpick::hold::ReservedStream;
    /// use workerpick::Pool;
    ///
    /// # struct Tokens(u32);
    /// # impl Stream for Tokens {
    /// #     type Item = u32;
    /// #     fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<u32>> {
    /// #         self.0 = self.0.saturating_sub(1);
    /// #         Poll::Ready((self.0 > 0).then_some(self.0))
    /// #     }
    /// # }
    /// let pool = Pool::from_workers(["a"]).unwrap();
    /// let r = pool.reserve_worker(&"a", 512 + 16).unwrap(); // prefill + decode
    /// let mut tokens = pin!(ReservedStream::new(Tokens(3), r));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(tokens.as_mut().poll_next(&mut cx).is_ready()); // the first token
    /// tokens.as_mut().guard_mut().unwrap().release_part(512);
    /// assert_eq!(pool.in_flight(&"a"), Some(16));
    /// while let Poll::Ready(Some(_)) = tokens.as_mut().poll_next(&mut cx) {}
    /// assert_eq!(pool.in_flight(&"a"), Some(0));
    /// ```
    pub fn guard_mut(self: Pin<&mut Self>) -> Option<&mut G> {
        self.project().guard.as_mut()
    }
}

impl<S: Stream, G> Stream for ReservedStream<S, G> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        let item = core::task::ready!(this.inner.poll_next(cx));
        if item.is_none() {
            drop(this.guard.take());
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
