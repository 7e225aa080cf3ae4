//! `service::Route`: the tower integration, driven by hand with a no-op waker
//! (no runtime), against stand-in upstream services whose readiness and
//! responses the tests control.
#![cfg(feature = "tower")]

use futures_core::Stream;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use tower::discover::Change;
use tower_service::Service;
use workerpick::service::{BoxError, Discovered, OnBodyEnd, Route};
use workerpick::{Error, LeastLoaded, Pool, Registry, RoundRobin, Selector};

/// A gate the test opens: shut means `Pending`.
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);
impl Gate {
    fn open() -> Self {
        let g = Self::default();
        g.set(true);
        g
    }
    fn set(&self, open: bool) {
        self.0.store(open, Ordering::SeqCst);
    }
    fn is_open(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// An upstream that answers with its id once `respond` opens, and is ready
/// once `ready` opens; `broken` fails its readiness.
#[derive(Clone)]
struct Upstream {
    id: u32,
    ready: Gate,
    respond: Gate,
    broken: bool,
}

impl Upstream {
    fn quick(id: u32) -> Self {
        Self {
            id,
            ready: Gate::open(),
            respond: Gate::open(),
            broken: false,
        }
    }
}

struct Answer(u32, Gate);
impl Future for Answer {
    type Output = Result<u32, Infallible>;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if self.1.is_open() {
            Poll::Ready(Ok(self.0))
        } else {
            Poll::Pending
        }
    }
}

impl Service<()> for Upstream {
    type Response = u32;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<u32, BoxError>> + Send>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.broken {
            return Poll::Ready(Err("upstream refused".into()));
        }
        if self.ready.is_open() {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }
    fn call(&mut self, _: ()) -> Self::Future {
        let answer = Answer(self.id, self.respond.clone());
        Box::pin(async move { answer.await.map_err(Into::into) })
    }
}

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

fn run<F: Future + Unpin>(f: &mut F) -> F::Output {
    loop {
        if let Poll::Ready(out) = poll(f) {
            return out;
        }
    }
}

fn ready<S: Service<R>, R>(s: &mut S) {
    assert!(matches!(
        s.poll_ready(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(Ok(()))
    ));
}

fn idle(pool: &Pool<u32>) -> bool {
    pool.loads().iter().all(|&(_, l)| l == 0)
}

fn pick_error(e: BoxError) -> Error {
    *e.downcast::<Error>().expect("a pick error")
}

#[test]
fn round_robin_splits_evenly_and_releases_on_each_response() {
    let pool = Arc::new(Pool::from_workers(0u32..3).unwrap());
    let mut route = Route::new(&pool, Arc::new(RoundRobin::new()), |w: &u32| Upstream::quick(*w));
    let mut per = [0; 3];
    for _ in 0..300 {
        ready(&mut route);
        per[run(&mut route.call(())).unwrap() as usize] += 1;
        assert!(idle(&pool));
    }
    assert_eq!(per, [100; 3]);
}

#[test]
fn the_load_stays_booked_until_the_response_arrives() {
    let pool = Arc::new(Pool::from_workers([7u32]).unwrap());
    let respond = Gate::default();
    let upstream = Upstream {
        respond: respond.clone(),
        ..Upstream::quick(7)
    };
    let mut route = Route::new(&pool, Arc::new(LeastLoaded::new()), move |_: &u32| {
        upstream.clone()
    });
    let mut call = route.call(());
    assert!(poll(&mut call).is_pending());
    assert_eq!(pool.in_flight(&7), Some(1));
    respond.set(true);
    assert_eq!(run(&mut call).unwrap(), 7);
    assert_eq!(pool.in_flight(&7), Some(0));
}

#[test]
fn a_cancelled_request_releases_its_load() {
    let pool = Arc::new(Pool::from_workers([1u32, 2]).unwrap());
    let shut = Gate::default();
    let upstream = move |w: &u32| Upstream {
        respond: shut.clone(),
        ..Upstream::quick(*w)
    };
    let mut route = Route::new(&pool, Arc::new(LeastLoaded::new()), upstream);
    let mut calls: Vec<_> = (0..4).map(|_| route.call(())).collect();
    calls.iter_mut().for_each(|c| assert!(poll(c).is_pending()));
    assert_eq!((pool.in_flight(&1), pool.in_flight(&2)), (Some(2), Some(2)));
    drop(calls.pop()); // a client disconnect before the first poll is done
    drop(calls);
    assert!(idle(&pool));
}

#[test]
fn an_empty_pool_is_ready_and_fails_the_call_at_once() {
    let pool = Arc::new(Pool::<u32>::new());
    let mut route = Route::new(&pool, Arc::new(LeastLoaded::new()), |w: &u32| Upstream::quick(*w));
    ready(&mut route);
    let Poll::Ready(Err(e)) = poll(&mut route.call(())) else {
        panic!("an empty pool must fail at the first poll");
    };
    assert_eq!(pick_error(e), Error::NoWorkers);
}

#[test]
fn a_worker_that_is_not_ready_holds_its_booking_and_others_take_the_traffic() {
    let pool = Arc::new(Pool::from_workers([1u32, 2]).unwrap());
    let slow_ready = Gate::default();
    let gate = slow_ready.clone();
    let upstream = move |w: &u32| Upstream {
        ready: if *w == 1 { gate.clone() } else { Gate::open() },
        ..Upstream::quick(*w)
    };
    let mut route = Route::new(&pool, Arc::new(LeastLoaded::new()), upstream);
    // Pin the first request to worker 1 by loading worker 2 first.
    let on_two = pool.owned_handle().reserve_worker(&2, 1).unwrap();
    let mut waiting = route.call(());
    assert!(poll(&mut waiting).is_pending(), "worker 1 is not ready");
    assert_eq!(pool.in_flight(&1), Some(1), "booked while waiting for readiness");
    drop(on_two);
    for _ in 0..10 {
        assert_eq!(
            run(&mut route.call(())).unwrap(),
            2,
            "least-loaded avoids the waiting worker"
        );
    }
    slow_ready.set(true);
    assert_eq!(run(&mut waiting).unwrap(), 1);
    assert!(idle(&pool));
}

#[test]
fn a_readiness_error_fails_the_request_and_releases() {
    let pool = Arc::new(Pool::from_workers([1u32]).unwrap());
    let upstream = |w: &u32| Upstream {
        broken: true,
        ..Upstream::quick(*w)
    };
    let mut route = Route::new(&pool, Arc::new(RoundRobin::new()), upstream);
    let mut call = route.call(());
    let Poll::Ready(Err(e)) = poll(&mut call) else {
        panic!()
    };
    assert_eq!(e.to_string(), "upstream refused");
    assert_eq!(
        pool.in_flight(&1),
        Some(0),
        "released before the future is dropped"
    );
}

#[test]
fn a_selector_resolved_by_name_routes_too() {
    let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
    let mode: Arc<dyn Selector> = Registry::new().resolve("power-of-two").unwrap();
    let mut route = Route::new(&pool, mode, |w: &u32| Upstream::quick(*w));
    for _ in 0..50 {
        assert!(run(&mut route.call(())).unwrap() < 4);
    }
    assert!(idle(&pool));
}

/// A body of `left` frames.
struct Frames {
    left: u32,
}
impl http_body::Body for Frames {
    type Data = &'static [u8];
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<&'static [u8]>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(http_body::Frame::data(b"token".as_slice()))))
    }
}

#[derive(Clone)]
struct Streaming;
impl Service<u32> for Streaming {
    type Response = http::Response<Frames>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<http::Response<Frames>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, frames: u32) -> Self::Future {
        std::future::ready(Ok(http::Response::new(Frames { left: frames })))
    }
}

/// The next frame: `Some(true)` for a good one, `None` at the end.
fn frame<B: http_body::Body + Unpin>(b: &mut B) -> Poll<Option<bool>> {
    Pin::new(b)
        .poll_frame(&mut Context::from_waker(Waker::noop()))
        .map(|f| f.map(|f| f.is_ok()))
}

#[test]
fn with_on_body_end_the_load_lasts_until_the_last_frame() {
    let pool = Arc::new(Pool::from_workers([1u32]).unwrap());
    let mut route = Route::new(&pool, Arc::new(RoundRobin::new()), |_: &u32| Streaming).until(OnBodyEnd);
    let mut body = run(&mut route.call(3)).unwrap().into_body();
    for _ in 0..3 {
        assert_eq!(pool.in_flight(&1), Some(1), "held while streaming");
        assert!(frame(&mut body) == Poll::Ready(Some(true)));
    }
    assert!(frame(&mut body) == Poll::Ready(None));
    assert_eq!(pool.in_flight(&1), Some(0));
    drop(body);
    assert_eq!(pool.in_flight(&1), Some(0), "released exactly once");

    // The client goes away mid-stream.
    let mut body = run(&mut route.call(3)).unwrap().into_body();
    assert!(frame(&mut body) == Poll::Ready(Some(true)));
    assert_eq!(pool.in_flight(&1), Some(1));
    drop(body);
    assert_eq!(pool.in_flight(&1), Some(0));
}

/// A `Discover` stream: a queue of changes, then the end.
struct Changes(VecDeque<Change<u32, Upstream>>);
impl Stream for Changes {
    type Item = Result<Change<u32, Upstream>, Infallible>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.pop_front().map(Ok))
    }
}

#[test]
fn a_discover_stream_drives_membership_and_a_removed_worker_drains() {
    let pool = Arc::new(Pool::new());
    let members = Discovered::new(pool.clone());
    let slow = Upstream {
        respond: Gate::default(),
        ..Upstream::quick(1)
    };
    let joins = Changes((0..3).map(|w| Change::Insert(w, Upstream::quick(w))).collect());
    run(&mut members.discover(joins)).unwrap();
    assert_eq!(pool.len(), 3);
    members.insert(1, slow.clone()).unwrap(); // replaces worker 1's service

    let mut route = Route::new(members.pool(), Arc::new(RoundRobin::new()), members.clone());
    let answers: Vec<_> = (0..2).map(|_| route.call(())).collect();
    let [mut first, mut on_one] = answers.try_into().ok().unwrap();
    assert_eq!(run(&mut first).unwrap(), 0);
    assert!(poll(&mut on_one).is_pending());

    run(&mut members.discover(Changes([Change::Remove(1)].into()))).unwrap();
    for _ in 0..20 {
        assert_ne!(
            run(&mut route.call(())).unwrap(),
            1,
            "never picked after its removal"
        );
    }
    assert_eq!(pool.in_flight(&1), Some(1), "its request is still in flight");
    slow.respond.set(true);
    assert_eq!(
        run(&mut on_one).unwrap(),
        1,
        "served to the end by the removed worker"
    );
    assert_eq!(pool.in_flight(&1), None, "drained and gone");
    assert!(idle(&pool));

    let refused = members.discover(Changes([Change::Remove(9)].into()));
    assert_eq!(
        pick_error(run(&mut Box::pin(refused)).unwrap_err()),
        Error::UnknownWorker
    );
}

#[test]
fn clones_route_from_many_threads_without_a_buffer() {
    let pool = Arc::new(Pool::from_workers(0u32..4).unwrap());
    let route = Route::new(&pool, Arc::new(LeastLoaded::new()), |w: &u32| Upstream::quick(*w));
    let per_thread = 2000;
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mut route = route.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..per_thread {
                    ready(&mut route);
                    let mut call = route.call(());
                    // Keep every fourth call pending a while, so the load varies.
                    if i % 4 == 0 {
                        held.push(call);
                    } else {
                        run(&mut call).unwrap();
                    }
                    if held.len() > 8 {
                        held.drain(..).for_each(|mut c| assert!(run(&mut c).unwrap() < 4));
                    }
                }
                held.len()
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(idle(&pool));
}
