//! Phased load: a request's booking is its prefill share (the uncached
//! blocks) and its decode share; the prefill share goes back at the first
//! streamed SSE `data:` event, the rest when the response ends. A booking
//! dropped early (the client went away, the upstream failed, the body
//! errored) gives back everything at once, its `--max-in-flight` place
//! with it.

use super::Counters;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use workerpick::OwnedReservation;
use workerpick::service::{BoxError, Permit};

use crate::serve::Addr;
use crate::serve::queue::Place;

/// A request's booking: a plain reservation, or a place admitted by
/// `--queue` (whose releases admit the next waiters).
pub enum Reserved {
    /// Booked by the pick at once.
    Plain(OwnedReservation<Addr>),
    /// Admitted by the queue.
    Queued(Place),
}

impl Reserved {
    /// The upstream it is booked on.
    pub fn worker(&self) -> &Addr {
        match self {
            Self::Plain(r) => r.worker(),
            Self::Queued(p) => p.worker(),
        }
    }

    /// The rank it is booked on.
    pub fn rank(&self) -> u32 {
        match self {
            Self::Plain(r) => r.rank(),
            Self::Queued(p) => p.rank(),
        }
    }

    /// Gives back `n` of its load now; returns how much it gave back.
    pub fn release_part(&mut self, n: u32) -> u32 {
        match self {
            Self::Plain(r) => r.release_part(n),
            Self::Queued(p) => p.release_part(n),
        }
    }
}

/// One request's load on its upstream, in two shares, and its place under
/// the proxy's `--max-in-flight` bound.
pub struct Booking {
    reservation: Option<Reserved>,
    permit: Option<Permit>,
    prefill: u32,
    decode: u32,
    counters: Arc<Counters>,
}

impl Booking {
    /// Takes over `reservation`, booked as `prefill + decode` (any cached
    /// blocks already given back), and counts both shares in flight;
    /// `permit` (the request's admission) goes back with the rest.
    pub fn new(
        reservation: Reserved,
        permit: Option<Permit>,
        prefill: u32,
        decode: u32,
        counters: Arc<Counters>,
    ) -> Self {
        counters.prefill.fetch_add(u64::from(prefill), Relaxed);
        counters.decode.fetch_add(u64::from(decode), Relaxed);
        Self {
            reservation: Some(reservation),
            permit,
            prefill,
            decode,
            counters,
        }
    }

    /// The first token: the prefill share goes back.
    pub fn first_token(&mut self) {
        if self.prefill == 0 {
            return;
        }
        if let Some(r) = &mut self.reservation {
            r.release_part(self.prefill);
        }
        self.counters.prefill.fetch_sub(u64::from(self.prefill), Relaxed);
        self.prefill = 0;
    }

    /// Whether the prefill share is still booked.
    pub fn in_prefill(&self) -> bool {
        self.prefill != 0
    }

    /// Everything goes back now.
    pub fn finish(&mut self) {
        if self.reservation.take().is_some() {
            self.counters.prefill.fetch_sub(u64::from(self.prefill), Relaxed);
            self.counters.decode.fetch_sub(u64::from(self.decode), Relaxed);
            self.prefill = 0;
        }
        self.permit = None;
    }
}

impl Drop for Booking {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Finds the first SSE `data:` in a body's frames, one split across two
/// frames included.
#[derive(Default)]
struct Marker {
    /// The last bytes seen (at most 4: a `data:` less its last byte).
    tail: Vec<u8>,
}

impl Marker {
    const MARK: &'static [u8] = b"data:";

    /// Whether `data:` ends in `frame` (or began in the frames before it).
    fn saw(&mut self, frame: &[u8]) -> bool {
        let head = &frame[..frame.len().min(Self::MARK.len() - 1)];
        self.tail.extend_from_slice(head);
        if self.tail.windows(Self::MARK.len()).any(|w| w == Self::MARK)
            || frame.windows(Self::MARK.len()).any(|w| w == Self::MARK)
        {
            return true;
        }
        let keep = Self::MARK.len() - 1;
        if frame.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&frame[frame.len() - keep..]);
        } else {
            let drop = self.tail.len().saturating_sub(keep);
            self.tail.drain(..drop);
        }
        false
    }
}

/// An upstream's response body, holding its request's [`Booking`]: the
/// first SSE `data:` gives back the prefill share, the end (or an error, or
/// a drop) the rest.
pub struct PhasedBody {
    inner: Incoming,
    booking: Booking,
    marker: Marker,
}

impl PhasedBody {
    /// `inner`, holding `booking` until it ends.
    pub fn new(inner: Incoming, booking: Booking) -> Self {
        Self {
            inner,
            booking,
            marker: Marker::default(),
        }
    }
}

impl Body for PhasedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                if this.booking.in_prefill()
                    && let Some(data) = frame.data_ref()
                    && this.marker.saw(data)
                {
                    this.booking.first_token();
                }
                if this.inner.is_end_stream() {
                    this.booking.finish();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.booking.finish();
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                this.booking.finish();
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::Marker;

    fn first(frames: &[&[u8]]) -> Option<usize> {
        let mut m = Marker::default();
        frames.iter().position(|f| m.saw(f))
    }

    #[test]
    fn the_first_data_event_is_found_whole_or_split_across_frames() {
        assert_eq!(first(&[b": keep-alive\n\n", b"data: {}\n\n"]), Some(1));
        assert_eq!(first(&[b"event: x\nda", b"ta: {}"]), Some(1));
        assert_eq!(first(&[b"d", b"a", b"t", b"a", b":"]), Some(4));
        assert_eq!(first(&[b"{\"choices\": []}"]), None, "not a stream");
        assert_eq!(first(&[b"dat", b"x:", b"a:"]), None);
    }
}
