//! The response-lifetime wrappers give their guard back exactly once: on
//! completion, on the stream's end, on an early drop, and on a panic.
#![cfg(feature = "futures")]

use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use workerpick::{LeastLoaded, Pool, ReservedFuture, ReservedStream};

/// A guard that counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counted() -> (Counted, Arc<AtomicUsize>) {
    let n = Arc::new(AtomicUsize::new(0));
    (Counted(n.clone()), n)
}

/// Pending `0` more times, then ready with `1`; panics when told to.
struct Slow {
    pending: u32,
    panic: bool,
}
impl Future for Slow {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
        assert!(!self.panic, "inner future panicked");
        if self.pending == 0 {
            return Poll::Ready(1);
        }
        self.pending -= 1;
        Poll::Pending
    }
}

/// Yields `left` items, pending once before each.
struct Tokens {
    left: u32,
    ready: bool,
}
impl Stream for Tokens {
    type Item = u32;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<u32>> {
        let ready = self.ready;
        self.ready = !ready;
        if !ready {
            return Poll::Pending;
        }
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(self.left))
    }
}

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

fn next<S: Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
    Pin::new(s).poll_next(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_future_releases_on_completion_before_it_is_dropped() {
    let (guard, drops) = counted();
    let mut f = ReservedFuture::new(
        Slow {
            pending: 2,
            panic: false,
        },
        guard,
    );
    assert!(poll(&mut f).is_pending());
    assert!(poll(&mut f).is_pending());
    assert!(f.guard().is_some());
    assert_eq!(poll(&mut f), Poll::Ready(1));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(f.guard().is_none());
    drop(f);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "exactly once");
}

#[test]
fn a_future_dropped_early_releases_once() {
    let (guard, drops) = counted();
    let mut f = ReservedFuture::new(
        Slow {
            pending: 5,
            panic: false,
        },
        guard,
    );
    assert!(poll(&mut f).is_pending());
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(f); // cancelled
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_future_releases_once() {
    let (guard, drops) = counted();
    let mut f = ReservedFuture::new(
        Slow {
            pending: 0,
            panic: true,
        },
        guard,
    );
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll(&mut f)));
    assert!(unwound.is_err());
    drop(f);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_stream_holds_until_its_end() {
    let (guard, drops) = counted();
    let mut s = ReservedStream::new(
        Tokens {
            left: 3,
            ready: false,
        },
        guard,
    );
    let mut items = Vec::new();
    loop {
        match next(&mut s) {
            Poll::Pending => assert_eq!(drops.load(Ordering::SeqCst), 0),
            Poll::Ready(Some(t)) => {
                items.push(t);
                assert_eq!(drops.load(Ordering::SeqCst), 0, "held while streaming");
            }
            Poll::Ready(None) => break,
        }
    }
    assert_eq!(items, [2, 1, 0]);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(s.guard().is_none());
    assert_eq!(
        next(&mut s),
        Poll::Pending,
        "the inner stream decides what comes after its end"
    );
    drop(s);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "exactly once");
}

#[test]
fn a_stream_dropped_midway_releases_once() {
    let (guard, drops) = counted();
    let mut s = ReservedStream::new(
        Tokens {
            left: 10,
            ready: true,
        },
        guard,
    );
    assert_eq!(next(&mut s), Poll::Ready(Some(9)));
    drop(s); // the client went away
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn with_real_reservations_the_pool_ends_idle() {
    let pool = Arc::new(Pool::from_workers(0u32..3).unwrap());
    let mut h = pool.owned_handle();
    let mut futures: Vec<_> = (0..6)
        .map(|i| {
            ReservedFuture::new(
                Slow {
                    pending: i % 3,
                    panic: false,
                },
                h.reserve(&LeastLoaded::new()).unwrap(),
            )
        })
        .collect();
    assert!(pool.loads().iter().all(|&(_, l)| l == 2));
    for f in &mut futures[..3] {
        while poll(f).is_pending() {}
    }
    assert_eq!(pool.loads().iter().map(|&(_, l)| l).sum::<u32>(), 3);
    drop(futures);
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
}
