use core::pin::Pin;
use core::task::{Context, Poll};
use http_body::{Body, Frame, SizeHint};

pin_project_lite::pin_project! {
    /// An `http` body that holds a reservation until its last frame: the end
    /// of the stream, an error, or the body's drop, exactly once.
    ///
    /// ```
    /// use workerpick::service::ReservedBody;
    /// let guard = std::rc::Rc::new(());
    /// let empty = ReservedBody::new(String::new(), guard.clone());
    /// assert!(empty.guard().is_none()); // nothing left to send: released at once
    /// assert_eq!(std::rc::Rc::strong_count(&guard), 1);
    /// ```
    #[derive(Debug)]
    pub struct ReservedBody<B, G> {
        #[pin]
        inner: B,
        guard: Option<G>,
    }
}

impl<B: Body, G> ReservedBody<B, G> {
    /// Holds `guard` until `inner` ends (at once if it already has).
    pub fn new(inner: B, guard: G) -> Self {
        let guard = (!inner.is_end_stream()).then_some(guard);
        Self { inner, guard }
    }
}

impl<B, G> ReservedBody<B, G> {
    /// The guard, until the body has ended.
    pub fn guard(&self) -> Option<&G> {
        self.guard.as_ref()
    }
}

impl<B: Body, G> Body for ReservedBody<B, G> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let mut this = self.project();
        let frame = core::task::ready!(this.inner.as_mut().poll_frame(cx));
        let last = match &frame {
            Some(Ok(_)) => this.inner.is_end_stream(),
            None | Some(Err(_)) => true,
        };
        if last {
            drop(this.guard.take());
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
