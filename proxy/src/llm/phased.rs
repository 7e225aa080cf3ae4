//! Phased load: a request's booking is its prefill share (the uncached
//! blocks) and its decode share; the prefill share goes back at the first
//! streamed SSE `data:` event, the rest when the response ends. A booking
//! dropped early (the client went away, the upstream failed, the body
//! errored) gives back everything at once.

use super::Counters;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use workerpick::OwnedReservation;
use workerpick::service::BoxError;

use crate::serve::Addr;

/// One request's load on its upstream, in two shares.
pub struct Booking {
    reservation: Option<OwnedReservation<Addr>>,
    prefill: u32,
    decode: u32,
    counters: Arc<Counters>,
}

impl Booking {
    /// Takes over `reservation`, booked as `prefill + decode` (any cached
    /// blocks already given back), and counts both shares in flight.
    pub fn new(
        reservation: OwnedReservation<Addr>,
        prefill: u32,
        decode: u32,
        counters: Arc<Counters>,
    ) -> Self {
        counters.prefill.fetch_add(u64::from(prefill), Relaxed);
        counters.decode.fetch_add(u64::from(decode), Relaxed);
        Self {
            reservation: Some(reservation),
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
    }
}

impl Drop for Booking {
    fn drop(&mut self) {
        self.finish();
    }
}

/// An upstream's response body, holding its request's [`Booking`]: the
/// first SSE `data:` gives back the prefill share, the end (or an error, or
/// a drop) the rest.
pub struct PhasedBody {
    inner: Incoming,
    booking: Booking,
    /// The last bytes of the previous frame: a `data:` split across two.
    tail: [u8; 4],
    tail_len: usize,
}

impl PhasedBody {
    /// `inner`, holding `booking` until it ends.
    pub fn new(inner: Incoming, booking: Booking) -> Self {
        Self {
            inner,
            booking,
            tail: [0; 4],
            tail_len: 0,
        }
    }

    fn saw(&mut self, data: &[u8]) {
        const MARK: &[u8] = b"data:";
        let mut joined = [0u8; 4 + MARK.len()];
        let head = &data[..data.len().min(MARK.len())];
        joined[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
        joined[self.tail_len..self.tail_len + head.len()].copy_from_slice(head);
        let across = &joined[..self.tail_len + head.len()];
        if across.windows(MARK.len()).any(|w| w == MARK) || data.windows(MARK.len()).any(|w| w == MARK) {
            self.booking.first_token();
            return;
        }
        // Keep the last bytes for the next frame.
        let keep = data.len().min(4);
        if keep == 4 {
            self.tail.copy_from_slice(&data[data.len() - 4..]);
            self.tail_len = 4;
        } else {
            let old = self.tail_len.min(4 - keep);
            let mut t = [0u8; 4];
            t[..old].copy_from_slice(&self.tail[self.tail_len - old..self.tail_len]);
            t[old..old + keep].copy_from_slice(data);
            self.tail = t;
            self.tail_len = old + keep;
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
                {
                    let data = data.clone();
                    this.saw(&data);
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
