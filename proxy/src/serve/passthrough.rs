//! The pass-through path under `--queue`: a request (weight 1) waits in the
//! queue for an upstream with room, is forwarded there, and holds its place
//! until its answer's body ends (or the client goes away); the release
//! admits the next waiter. Picks and failures are counted as on the plain
//! path.

use super::Shared;
use super::queue::{Lobby, Place, Refusal};
use crate::llm::Body;
use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body::{Frame, SizeHint};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Instant;
use tower::Service;
use workerpick::service::{BoxError, Forward};

/// Waits for room, forwards `request`, and answers; `client` is added to
/// its `X-Forwarded-For`.
pub(super) async fn forward(
    shared: Arc<Shared>,
    lobby: Arc<Lobby>,
    client: Option<HeaderValue>,
    mut request: Request<Incoming>,
) -> Response<Body> {
    let ask = match lobby.ask(request.headers(), Instant::now()) {
        Ok(ask) => ask,
        Err(refusal) => return refused(&refusal),
    };
    let ticket = match lobby.enqueue(ask.entry(1, 0), None) {
        Ok(ticket) => ticket,
        Err(refusal) => return refused(&refusal),
    };
    let place = match lobby.admit(ticket, ask.deadline).await {
        Ok(place) => place,
        Err(refusal) => return refused(&refusal),
    };
    let upstream = place.worker().clone();
    if let Some(picks) = shared.picks.get(&upstream.0) {
        picks.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(client) = client {
        request.headers_mut().append("x-forwarded-for", client);
    }
    let sent = Forward::new(shared.client.clone(), upstream.0.clone())
        .call(request)
        .await;
    match sent {
        Ok(answer) => {
            shared
                .ejection
                .record(&upstream, answer.status().is_server_error());
            answer.map(|inner| {
                Holding {
                    inner,
                    place: Some(place),
                }
                .boxed_unsync()
            })
        }
        Err(e) => {
            shared.ejection.record(&upstream, true);
            drop(place);
            text(
                workerpick::service::error_status(&e),
                format!("upstream {}: {e}\n", upstream.0),
            )
        }
    }
}

/// A refusal as a plain-text answer.
fn refused(refusal: &Refusal) -> Response<Body> {
    text(refusal.status, format!("{}\n", refusal.message))
}

fn text(status: http::StatusCode, message: String) -> Response<Body> {
    let mut answer = Response::new(
        Full::new(Bytes::from(message))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}

/// An upstream's body holding its request's place until it ends.
struct Holding {
    inner: Incoming,
    place: Option<Place>,
}

impl http_body::Body for Holding {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) if !this.inner.is_end_stream() => {}
            Poll::Pending => {}
            _ => this.place = None,
        }
        polled.map(|frame| frame.map(|f| f.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
