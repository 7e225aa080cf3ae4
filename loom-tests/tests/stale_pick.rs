//! Model 3: a pick that loaded a snapshot races a swap that removes its worker
//! and adds another that may reuse the storage.
//!
//! The reservation lands on the worker it names and on no other, and the
//! storage of a removed worker is reused only after its last release (and
//! only once no snapshot that named it is alive).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_idle, assert_storage_settled, model};
use workerpick::{Error, LeastLoaded, Pool, Request};

/// A least-loaded pick restricted to worker 0 loads its snapshot, scans, and
/// books with a compare-and-swap while another thread removes 0 and inserts
/// 2. If 2 took over 0's storage under the pick, the swap would charge 2.
#[test]
fn stale_pick_never_charges_the_slots_next_owner() {
    model("stale_pick", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let only_0 = pool.eligibility(|w| *w == 0);
        let picker = {
            let pool = pool.clone();
            thread::spawn(move || {
                // `Pool::reserve_with` drops its snapshot as soon as the
                // booking is made (a `Handle` would keep it to its next pick).
                let req = Request::new().eligible(&only_0);
                match pool.reserve_with(&LeastLoaded::new(), &req) {
                    Ok(r) => {
                        assert_eq!(pool.in_flight(&0), Some(1), "the booking on 0 is gone");
                        assert_eq!(pool.in_flight(&2).unwrap_or(0), 0, "charged 0's successor");
                        assert_eq!(*r.worker(), 0, "booked outside the mask");
                    }
                    Err(e) => assert_eq!(e, Error::NoEligibleWorker),
                }
            })
        };
        let swapper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&0).unwrap();
                pool.insert(2).unwrap();
                assert_eq!(pool.in_flight(&2), Some(0), "2 inherited someone's load");
            })
        };
        picker.join().unwrap();
        swapper.join().unwrap();
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}

/// Worker 0 is removed while a charged guard (one thread) and an uncharged,
/// pinned guard (another) hold it, and 2 is inserted: 2 never gets 0's
/// storage while either guard lives, and 0's storage is free after both.
#[test]
fn removed_workers_storage_is_reused_only_after_its_last_release() {
    model("reuse_after_release", || {
        let pool = Arc::new(Pool::from_workers([0u32, 1]).unwrap());
        let holder = {
            let pool = pool.clone();
            thread::spawn(move || {
                if let Ok(r) = pool.reserve_worker(&0, 1) {
                    assert_eq!(pool.in_flight(&0), Some(1), "a removed worker lost its load");
                    // The guard's last read of its key, after every snapshot
                    // and lock it used: only the release orders it before reuse.
                    assert_eq!(*r.worker(), 0);
                }
            })
        };
        let swapper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.remove(&0).unwrap();
                pool.insert(2).unwrap();
                assert_eq!(pool.in_flight(&2), Some(0), "2 inherited 0's load");
            })
        };
        if let Ok(pin) = pool.reserve_worker(&0, 0) {
            assert_eq!(*pin.worker(), 0, "a pinned guard changed owner");
        }
        holder.join().unwrap();
        swapper.join().unwrap();
        assert_idle(&pool, [0, 1, 2]);
        assert_storage_settled(&pool);
    });
}
