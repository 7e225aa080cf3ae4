//! Pair picks: preview-then-admit books what was previewed while loads stand
//! still and decides again when they moved; both sides or neither.

use crate::credit::CacheHits;
use crate::error::Error;
use crate::pool::Pool;
use crate::request::Request;
use crate::rng::Rng;
use crate::selectors::{Cost, LeastLoaded, PowerOfTwo};
use crate::{Decider, PairRequest, Pairs, Plan};

fn idle<W: Clone + Eq + core::hash::Hash + Send + Sync>(pool: &Pool<W>) -> bool {
    pool.loads().iter().all(|&(_, load)| load == 0)
}

#[test]
fn admit_books_the_previewed_worker_when_loads_stand_still() {
    let prefill = Pool::from_workers(0u32..4).unwrap();
    let decode = Pool::from_workers(10u32..18).unwrap();
    let hits = CacheHits::build(&decode, 8, |w| if *w % 2 == 0 { 6 } else { 1 });
    for seed in 0..if cfg!(miri) { 2 } else { 32 } {
        let mut pairs = Pairs::new(
            prefill.handle_with_rng(Rng::with_seed(seed)),
            decode.handle_with_rng(Rng::with_seed(seed + 100)),
            Decider::new(4),
        );
        // Every decode worker idle: a least-loaded pick is a random tie-break,
        // which a fresh pick at admission would redraw.
        let req = PairRequest::new(
            Request::new().weight(32),
            Request::new().weight(2).cache_hits(&hits),
        );
        let seen = pairs.preview(&PowerOfTwo::new(), &req).unwrap();
        assert!(idle(&decode), "a preview booked load");
        let want = if seen.decode() % 2 == 0 {
            (2, Plan::Local)
        } else {
            (7, Plan::Disaggregate)
        };
        assert_eq!((seen.uncached(), seen.plan()), want);
        let pair = pairs
            .admit(&seen, &LeastLoaded::new(), &LeastLoaded::new(), &req)
            .unwrap();
        assert_eq!((pair.decode(), pair.plan()), (seen.decode(), seen.plan()));
        let on_decode = if seen.plan() == Plan::Local { 34 } else { 2 };
        assert_eq!(decode.in_flight(seen.decode()), Some(on_decode));
        drop(pair);
        assert!(idle(&prefill) && idle(&decode));
    }
}

#[test]
fn admit_decides_again_when_the_previewed_load_moved() {
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::from_workers(["d0", "d1"]).unwrap();
    let hits = CacheHits::build(&decode, 16, |w| if *w == "d0" { 16 } else { 0 });
    let req = PairRequest::new(Request::new().weight(16), Request::new().cache_hits(&hits));
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(8));
    // α = 1 credit: d0 costs 0 − 16, d1 costs 0.
    let seen = pairs.preview(&Cost::new(), &req).unwrap();
    assert_eq!(
        (*seen.decode(), seen.uncached(), seen.plan()),
        ("d0", 0, Plan::Local)
    );
    // Another router fills d0 meanwhile: it now costs 40 − 16 > d1's 0.
    let busy = decode.reserve_worker(&"d0", 40).unwrap();
    let pair = pairs
        .admit(&seen, &LeastLoaded::new(), &Cost::new(), &req)
        .unwrap();
    assert_eq!(
        (*pair.decode(), pair.plan(), pair.prefill()),
        ("d1", Plan::Disaggregate, Some(&"p0"))
    );
    drop(pair);
    // A plan the caller set stays through the new pick.
    let seen = pairs.preview(&Cost::new(), &req).unwrap().decide(Plan::Local);
    assert_eq!(*seen.decode(), "d1");
    let more = decode.reserve_worker(&"d1", 100).unwrap();
    let pair = pairs
        .admit(&seen, &LeastLoaded::new(), &Cost::new(), &req)
        .unwrap();
    assert_eq!((*pair.decode(), pair.plan()), ("d0", Plan::Local));
    drop((pair, busy, more));
    assert!(idle(&prefill) && idle(&decode));
}

#[test]
fn admit_picks_again_when_the_previewed_worker_left() {
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::from_workers(["d0", "d1"]).unwrap();
    let req = PairRequest::new(Request::new().weight(3), Request::new());
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(8));
    let seen = pairs.preview(&LeastLoaded::new(), &req).unwrap();
    let other = if *seen.decode() == "d0" { "d1" } else { "d0" };
    decode.drain(seen.decode()).unwrap();
    let mut pair = pairs
        .admit(&seen, &LeastLoaded::new(), &LeastLoaded::new(), &req)
        .unwrap();
    assert_eq!((*pair.decode(), pair.plan()), (other, Plan::Local));
    assert_eq!(decode.in_flight(&other), Some(4));
    pair.hand_off();
    assert_eq!(decode.in_flight(&other), Some(1));
    pair.hand_off();
    assert_eq!(decode.in_flight(&other), Some(1));
}

#[test]
fn a_failed_second_booking_leaves_nothing_booked() {
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::from_workers(["d0"]).unwrap();
    prefill.drain(&"p0").unwrap();
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(0));
    let req = PairRequest::new(Request::new().weight(5), Request::new().weight(2));
    assert!(
        pairs
            .reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req)
            .is_err()
    );
    let seen = pairs.preview(&LeastLoaded::new(), &req).unwrap();
    assert_eq!(seen.plan(), Plan::Disaggregate);
    assert!(
        pairs
            .admit(&seen, &LeastLoaded::new(), &LeastLoaded::new(), &req)
            .is_err()
    );
    assert_eq!(decode.in_flight(&"d0"), Some(0));
    // A local prefill that would overflow the decode worker's counter.
    let _full = decode.reserve_worker(&"d0", u32::MAX - 4).unwrap();
    let req = PairRequest::new(Request::new().weight(5), Request::new().weight(2)).plan(Plan::Local);
    let err = pairs
        .reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req)
        .unwrap_err();
    assert_eq!(err, Error::LoadOverflow);
    assert_eq!(decode.in_flight(&"d0"), Some(u32::MAX - 4));
    assert!(idle(&prefill));
}

#[test]
fn owned_pairs_move_into_threads() {
    use std::sync::Arc;
    let prefill = Arc::new(Pool::from_workers(["p0", "p1"]).unwrap());
    let decode = Arc::new(Pool::from_workers(["d0"]).unwrap());
    let mut pairs = Pairs::new(prefill.owned_handle(), decode.owned_handle(), Decider::new(1));
    let req = PairRequest::new(Request::new().weight(9), Request::new());
    let mut pair = pairs
        .reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req)
        .unwrap();
    assert_eq!(pair.plan(), Plan::Disaggregate);
    pair.decode_guard_mut().add_charge(2).unwrap();
    std::thread::spawn(move || {
        pair.hand_off();
        let decode = pair.into_decode();
        assert_eq!(decode.weight(), 3);
    })
    .join()
    .unwrap();
    assert!(idle(&prefill) && idle(&decode));
}

#[cfg(feature = "futures")]
#[test]
fn a_reserved_stream_holds_the_decode_side_to_the_end() {
    use crate::ReservedStream;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use futures_core::Stream;

    struct Tokens(u32);
    impl Stream for Tokens {
        type Item = u32;
        fn poll_next(mut self: core::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<u32>> {
            self.0 = self.0.saturating_sub(1);
            Poll::Ready((self.0 > 0).then_some(self.0))
        }
    }
    let prefill = Pool::from_workers(["p0"]).unwrap();
    let decode = Pool::from_workers(["d0"]).unwrap();
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(0));
    let req = PairRequest::new(Request::new().weight(64), Request::new().weight(4));
    let pair = pairs
        .reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req)
        .unwrap();
    let mut tokens = pin!(ReservedStream::new(Tokens(3), pair));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(tokens.as_mut().poll_next(&mut cx).is_ready()); // the first token
    tokens.as_mut().guard_mut().unwrap().hand_off();
    assert_eq!(
        (prefill.in_flight(&"p0"), decode.in_flight(&"d0")),
        (Some(0), Some(4))
    );
    while let Poll::Ready(Some(_)) = tokens.as_mut().poll_next(&mut cx) {}
    assert_eq!(decode.in_flight(&"d0"), Some(0));
}
