//! Model 11: a pair booking races the removal of the worker on either side.
//! It books both sides or neither; every unit booked is given back once,
//! and the removed worker's storage settles.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{Decider, LeastLoaded, PairRequest, Pairs, Plan, Pool, Request};

/// One pair pick (prefill 3, decode 1) on one-worker pools, 0 for prefill
/// and 1 for decode, while another thread removes `side`'s worker.
fn pair_races_removal(plan: Plan, remove_prefill: bool) {
    let prefill = Arc::new(Pool::from_workers([0u32]).unwrap());
    let decode = Arc::new(Pool::from_workers([1u32]).unwrap());
    let remover = {
        let (pool, worker) = if remove_prefill {
            (prefill.clone(), 0)
        } else {
            (decode.clone(), 1)
        };
        thread::spawn(move || pool.remove(&worker).unwrap())
    };
    let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(0));
    let req = PairRequest::new(Request::new().weight(3), Request::new()).plan(plan);
    match pairs.reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req) {
        Ok(mut pair) => {
            assert_eq!(pair.plan(), plan);
            let (on_prefill, on_decode) = if plan == Plan::Local { (0, 4) } else { (3, 1) };
            assert_eq!(prefill.in_flight(&0).unwrap_or(0), on_prefill, "prefill side");
            assert_eq!(decode.in_flight(&1), Some(on_decode), "decode side");
            pair.hand_off();
            assert_eq!(
                prefill.in_flight(&0).unwrap_or(0),
                0,
                "the hand-off kept prefill load"
            );
            assert_eq!(decode.in_flight(&1), Some(1), "the hand-off took decode load");
        }
        Err(_) => {
            // Nothing booked half: neither side holds anything.
            assert_eq!(
                prefill.in_flight(&0).unwrap_or(0),
                0,
                "a failed pair left prefill load"
            );
            assert_eq!(
                decode.in_flight(&1).unwrap_or(0),
                0,
                "a failed pair left decode load"
            );
        }
    }
    drop(pairs);
    remover.join().unwrap();
    assert_idle(&prefill, [0]);
    assert_idle(&decode, [1]);
    assert_storage_settled(&prefill);
    assert_storage_settled(&decode);
}

#[test]
fn pair_booking_races_a_prefill_removal() {
    model("pair_prefill_removal", || {
        pair_races_removal(Plan::Disaggregate, true)
    });
}

#[test]
fn pair_booking_races_a_decode_removal() {
    model("pair_decode_removal", || {
        pair_races_removal(Plan::Disaggregate, false)
    });
}

#[test]
fn local_pair_booking_races_a_decode_removal() {
    model("pair_local_decode_removal", || {
        pair_races_removal(Plan::Local, false)
    });
}
