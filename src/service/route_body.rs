use crate::service::BoxError;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::{Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Bytes;

pin_project_lite::pin_project! {
    /// The one body type of a [`HyperRoute`](super::HyperRoute)'s responses:
    /// the upstream's body, streamed through, or a short text message the
    /// router wrote itself (a 503 or 502, see [`error_response`]).
    ///
    /// ```
    /// use http_body::Body;
    /// use workerpick::service::RouteBody;
    /// let body = RouteBody::<String>::message("no upstream\n");
    /// assert_eq!(body.size_hint().exact(), Some(12));
    /// ```
    #[derive(Debug)]
    pub struct RouteBody<B> {
        #[pin]
        kind: Kind<B>,
        // The request's place under an admission bound, given back with the body.
        permit: Option<super::admission::Permit>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    #[derive(Debug)]
    enum Kind<B> {
        Upstream { #[pin] body: B },
        // `None` once sent.
        Message { text: Option<Bytes> },
    }
}

impl<B> RouteBody<B> {
    /// The upstream's body, streamed through.
    pub fn upstream(body: B) -> Self {
        RouteBody {
            kind: Kind::Upstream { body },
            permit: None,
        }
    }

    /// A complete body of `text`.
    pub fn message(text: impl Into<Bytes>) -> Self {
        RouteBody {
            kind: Kind::Message {
                text: Some(text.into()),
            },
            permit: None,
        }
    }

    /// Holds `permit` until the body is dropped.
    pub(crate) fn holding(mut self, permit: Option<super::admission::Permit>) -> Self {
        self.permit = permit;
        self
    }
}

impl<B> Body for RouteBody<B>
where
    B: Body,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.project().kind.project() {
            KindProj::Upstream { body } => body
                .poll_frame(cx)
                .map(|frame| frame.map(|f| f.map(|f| f.map_data(Into::into)).map_err(Into::into))),
            KindProj::Message { text } => Poll::Ready(text.take().map(|t| Ok(Frame::data(t)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Upstream { body } => body.is_end_stream(),
            Kind::Message { text } => text.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Upstream { body } => body.size_hint(),
            Kind::Message { text } => SizeHint::with_exact(text.as_ref().map_or(0, |t| t.len() as u64)),
        }
    }
}

/// The status a routing error answers with: 503 Service Unavailable when no
/// worker could take the request (an empty pool, every worker draining, none
/// eligible under the request's mask, a worker removed under the pick),
/// 502 Bad Gateway when the chosen upstream failed (refused the connection,
/// broke the response). Health is not among the 503s: with every worker
/// marked unhealthy, picks go on over all of them (see the [module
/// docs](super), "A fleet that is down"), and a dead fleet answers 502.
///
/// ```
/// use http::StatusCode;
/// use workerpick::Error;
/// use workerpick::service::{BoxError, error_status};
/// assert_eq!(error_status(&BoxError::from(Error::NoWorkers)), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(error_status(&BoxError::from("connection refused")), StatusCode::BAD_GATEWAY);
/// ```
pub fn error_status(error: &BoxError) -> StatusCode {
    if error.downcast_ref::<crate::error::Error>().is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::BAD_GATEWAY
    }
}

/// A routing error as a response: [`error_status`], and the error with its
/// sources on one line of text.
///
/// ```
/// use workerpick::Error;
/// use workerpick::service::{RouteBody, error_response};
/// let response = error_response::<String>(&Error::NoEligibleWorker.into());
/// assert_eq!(response.status(), 503);
/// ```
pub fn error_response<B>(error: &BoxError) -> Response<RouteBody<B>> {
    let status = error_status(error);
    let mut text = String::from(if status == StatusCode::SERVICE_UNAVAILABLE {
        "no upstream available: "
    } else {
        "upstream failed: "
    });
    text.push_str(&error.to_string());
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text.push('\n');
    let mut response = Response::new(RouteBody::message(text));
    *response.status_mut() = status;
    response
}
