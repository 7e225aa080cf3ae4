//! Session bindings: first request binds, idle TTL, hard and soft fallback,
//! bounded memory, bindings gone with their worker, replica hand-off.
#![cfg(feature = "sessions")]

use std::time::Duration;
use workerpick::{Affinity, Error, LeastLoaded, Pool, Request, Rng, RoundRobin, Sessions, Stickiness};

fn table(stickiness: Stickiness) -> Sessions {
    Sessions::new(Duration::from_secs(60), 1000, stickiness)
}

#[test]
fn a_session_sticks_to_its_first_worker_whatever_the_load() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let s = table(Stickiness::Soft);
    let mut h = pool.handle();
    let req = Request::new().key(1);
    let first = s.reserve(&mut h, &LeastLoaded, &req).unwrap();
    let home = *first.worker();
    let more: Vec<_> = (0..10)
        .map(|_| s.reserve(&mut h, &LeastLoaded, &req).unwrap())
        .collect();
    assert!(more.iter().all(|r| *r.worker() == home));
    assert_eq!(pool.in_flight(&home), Some(11));
    assert_eq!(s.len(), 1);
    // Unkeyed requests are not bound.
    drop(s.reserve(&mut h, &LeastLoaded, &Request::new()).unwrap());
    assert_eq!(s.len(), 1);
}

#[test]
fn soft_falls_back_and_rebinds_hard_fails_once() {
    for stickiness in [Stickiness::Soft, Stickiness::Hard] {
        let pool = Pool::from_workers(0..4u32).unwrap();
        let s = table(stickiness);
        let mut h = pool.handle();
        let req = Request::new().key(9);
        let home = *s.reserve(&mut h, &RoundRobin::new(), &req).unwrap().worker();
        pool.remove(&home).unwrap();
        let next = s.reserve(&mut h, &RoundRobin::new(), &req);
        match stickiness {
            Stickiness::Soft => {
                let w = *next.unwrap().worker();
                assert_ne!(w, home);
                // Rebound: stays there.
                for _ in 0..5 {
                    assert_eq!(*s.reserve(&mut h, &RoundRobin::new(), &req).unwrap().worker(), w);
                }
            }
            _ => {
                assert_eq!(next.err(), Some(Error::SessionWorkerGone));
                assert!(Error::SessionWorkerGone.to_string().contains("retry"));
                // The binding went with the worker: the retry binds anew.
                let w = *s.reserve(&mut h, &RoundRobin::new(), &req).unwrap().worker();
                assert_ne!(w, home);
            }
        }
    }
}

#[test]
fn draining_unhealthy_and_masked_out_workers_do_not_take_bound_sessions() {
    let pool = Pool::from_workers(0..4u32).unwrap();
    let s = table(Stickiness::Hard);
    let mut h = pool.handle();
    let home = *s
        .reserve(&mut h, &RoundRobin::new(), &Request::new().key(1))
        .unwrap()
        .worker();
    let other = pool.eligibility(|w| *w != home);
    let masked = Request::new().key(1).eligible(&other);
    assert_eq!(
        s.reserve(&mut h, &LeastLoaded, &masked).err(),
        Some(Error::SessionWorkerGone)
    );
    let home = *s
        .reserve(&mut h, &RoundRobin::new(), &Request::new().key(2))
        .unwrap()
        .worker();
    pool.set_healthy(&home, false).unwrap();
    assert_eq!(
        s.reserve(&mut h, &LeastLoaded, &Request::new().key(2)).err(),
        Some(Error::SessionWorkerGone)
    );
    let home = *s
        .reserve(&mut h, &LeastLoaded, &Request::new().key(3))
        .unwrap()
        .worker();
    pool.drain(&home).unwrap();
    assert_eq!(
        s.reserve(&mut h, &LeastLoaded, &Request::new().key(3)).err(),
        Some(Error::SessionWorkerGone)
    );
}

#[test]
fn a_reused_slot_never_inherits_a_binding() {
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    let s = table(Stickiness::Soft);
    let mut h = pool.handle();
    let req = Request::new().key(5);
    let home = *s.reserve(&mut h, &RoundRobin::new(), &req).unwrap().worker();
    pool.remove(&home).unwrap();
    pool.reclaim();
    pool.insert("c").unwrap(); // likely in the freed slot
    drop(h);
    let mut h = pool.handle();
    let w = *s.reserve(&mut h, &LeastLoaded, &req).unwrap().worker();
    assert_ne!(w, home);
    // Soft rebinding: the session now lives on `w`, a worker of the set.
    assert!(pool.contains(&w));
}

#[test]
fn idle_sessions_expire() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    let s = Sessions::new(Duration::from_millis(30), 1000, Stickiness::Soft);
    let mut h = pool.handle_with_rng(Rng::with_seed(1));
    let req = Request::new().key(77);
    let rr = RoundRobin::new();
    let home = *s.reserve(&mut h, &rr, &req).unwrap().worker();
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(s.sweep(&pool), 1);
    assert!(s.is_empty());
    // Expired: bound anew by the selector (round-robin moved on).
    let again = *s.reserve(&mut h, &rr, &req).unwrap().worker();
    assert_ne!(again, home);
}

#[test]
fn the_table_stays_bounded_under_session_churn() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    let s = Sessions::new(Duration::from_millis(20), 64, Stickiness::Soft);
    let mut h = pool.handle();
    for round in 0..4u64 {
        for k in 0..500 {
            drop(
                s.reserve(&mut h, &LeastLoaded, &Request::new().key(round * 1000 + k))
                    .unwrap(),
            );
            assert!(s.len() <= 64);
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    // Orphans go too: remove every worker a binding names.
    for w in 0..8 {
        pool.remove(&w).unwrap();
    }
    pool.insert(100).unwrap();
    s.sweep(&pool);
    assert!(s.is_empty(), "{}", s.len());
}

#[test]
fn bindings_survive_a_replica_hand_off() {
    // Two routers over the same fleet (replicas); the first hands its
    // bindings to the second, which then routes every session alike.
    let a = Pool::from_workers(["w0", "w1", "w2", "w3"]).unwrap();
    let b = Pool::from_workers(["w3", "w2", "w1", "w0"]).unwrap();
    let (sa, sb) = (table(Stickiness::Hard), table(Stickiness::Hard));
    let mut ha = a.handle();
    let homes: Vec<_> = (0..40u64)
        .map(|k| {
            *sa.reserve(&mut ha, &RoundRobin::new(), &Request::new().key(k))
                .unwrap()
                .worker()
        })
        .collect();
    let exported = sa.export(&a);
    assert_eq!(exported.len(), 40);
    assert_eq!(sb.import(&b, exported), 40);
    let mut hb = b.handle();
    for (k, home) in homes.iter().enumerate() {
        let r = sb
            .reserve(&mut hb, &LeastLoaded, &Request::new().key(k as u64))
            .unwrap();
        assert_eq!(r.worker(), home);
    }
}

#[test]
fn bindings_travel_with_the_replica_summary() {
    // Replica a binds sessions and sends one summary; replica b applies it
    // (over JSON when serde is on) and then routes every session to a's
    // worker for it, whatever b's own loads say, and books as a did.
    let a = Pool::from_workers(["w0", "w1", "w2", "w3"]).unwrap();
    let b = Pool::from_workers(["w3", "w2", "w1", "w0"]).unwrap();
    let (sa, sb) = (table(Stickiness::Hard), table(Stickiness::Hard));
    let (mut ha, rr) = (a.handle(), RoundRobin::new());
    let held: Vec<_> = (0..40u64)
        .map(|k| sa.reserve(&mut ha, &rr, &Request::new().key(k)).unwrap())
        .collect();
    let summary = sa.summary(&a);
    assert_eq!(summary.bindings().len(), 40);
    assert_eq!(summary.loads().iter().map(|&(_, l)| l).sum::<u32>(), 40);
    assert!(
        summary
            .bindings()
            .iter()
            .all(|b| b.idle() < Duration::from_secs(1))
    );
    // Through JSON (its `&'static str` workers borrow from the wire text).
    #[cfg(feature = "serde")]
    let wire: &'static str = Box::leak(serde_json::to_string(&summary).unwrap().into_boxed_str());
    #[cfg(feature = "serde")]
    let summary: workerpick::Summary<&str> = serde_json::from_str(wire).unwrap();
    assert!(sb.apply_summary(&b, &summary));
    assert!(!sb.apply_summary(&b, &summary), "a summary applies once");
    assert_eq!(b.reported_load(&"w0"), Some(10), "the loads came with it");
    let mut hb = b.handle();
    for (k, r) in held.iter().enumerate() {
        let there = sb
            .reserve(&mut hb, &LeastLoaded, &Request::new().key(k as u64))
            .unwrap();
        assert_eq!(there.worker(), r.worker(), "session {k}");
    }
    // A's own summary does not come back to it.
    assert!(!sa.apply_summary(&a, &sa.summary(&a)));
}

#[test]
fn an_imported_binding_keeps_its_idle_age_and_the_latest_use_wins() {
    use workerpick::SessionBinding;
    let pool = Pool::from_workers(["w0", "w1"]).unwrap();
    let s = Sessions::new(Duration::from_millis(500), 100, Stickiness::Hard);
    // Idle past the TTL where it was made: not imported.
    assert_eq!(
        s.import(&pool, [SessionBinding::new(1, "w0", Duration::from_secs(1))]),
        0
    );
    // Idle 400 of its 500 ms: imported, and gone after another ~100 ms.
    assert_eq!(
        s.import(&pool, [SessionBinding::new(2, "w1", Duration::from_millis(400))]),
        1
    );
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(s.sweep(&pool), 1, "it expired on its own schedule");
    // A binding used here after the one offered was last used elsewhere
    // stays; an older local one gives way.
    let mut h = pool.handle();
    let home = *s
        .reserve(&mut h, &RoundRobin::new(), &Request::new().key(3))
        .unwrap()
        .worker();
    let away = if home == "w0" { "w1" } else { "w0" };
    assert_eq!(
        s.import(&pool, [SessionBinding::new(3, away, Duration::from_millis(200))]),
        0
    );
    assert_eq!(
        *s.reserve(&mut h, &RoundRobin::new(), &Request::new().key(3))
            .unwrap()
            .worker(),
        home
    );
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(s.import(&pool, [SessionBinding::new(3, away, Duration::ZERO)]), 1);
    assert_eq!(
        *s.reserve(&mut h, &RoundRobin::new(), &Request::new().key(3))
            .unwrap()
            .worker(),
        away
    );
    // Unknown workers are skipped.
    assert_eq!(s.import(&pool, [SessionBinding::new(4, "w9", Duration::ZERO)]), 0);
}

#[cfg(feature = "serde")]
#[test]
fn summaries_without_bindings_keep_their_wire_format() {
    // What a summary looked like on the wire before bindings existed reads
    // as one without them, and one without them writes exactly that.
    let old = r#"{"origin":7,"seq":3,"loads":[["w1",2]]}"#;
    let summary: workerpick::Summary<String> = serde_json::from_str(old).unwrap();
    assert!(summary.bindings().is_empty());
    assert_eq!(serde_json::to_string(&summary).unwrap(), old);
}

#[test]
fn threads_bind_each_session_to_one_worker_while_workers_churn() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let pool = Pool::from_workers(0..16u32).unwrap();
    pool.enable_affinity();
    let s = Sessions::new(Duration::from_secs(60), 10_000, Stickiness::Soft);
    let stop = AtomicBool::new(false);
    let until = std::time::Instant::now() + Duration::from_millis(800);
    std::thread::scope(|sc| {
        for t in 0..3u64 {
            let (pool, s, stop) = (&pool, &s, &stop);
            sc.spawn(move || {
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                let mut rng = Rng::with_seed(t + 50);
                while !stop.load(Ordering::Relaxed) {
                    let req = Request::new().key(rng.next_u64() % 200);
                    let r = s.reserve(&mut h, &Affinity::new(), &req).unwrap();
                    // Only workers of the set are ever picked (the churn
                    // below removes 15 at most and re-adds it).
                    assert!(*r.worker() < 16);
                }
            });
        }
        let mut rng = Rng::with_seed(9);
        while std::time::Instant::now() < until {
            let w = 1 + rng.below(15);
            pool.remove(&w).unwrap();
            pool.insert(w).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(s.len() <= 200);
    pool.reclaim();
    assert!(pool.loads().iter().all(|&(_, l)| l == 0));
}

mod through_the_queue {
    //! Keyed requests through an admission queue with a session table
    //! (`Queue::with_sessions`): the binding holds while its worker has room.
    use super::table;
    use std::sync::Arc;
    use workerpick::queue::{Entry, Queue, QueueConfig, QueueError};
    use workerpick::{Error, LeastLoaded, Pool, Stickiness};

    fn queue(stickiness: Stickiness, limit: u32) -> (Queue<u32, LeastLoaded>, Arc<workerpick::Sessions>) {
        let pool = Arc::new(Pool::from_workers(0..4u32).unwrap());
        let sessions = Arc::new(table(stickiness));
        let config = QueueConfig::new().in_flight_limit(limit);
        let q = Queue::new(pool, LeastLoaded::new(), config)
            .unwrap()
            .with_sessions(sessions.clone());
        (q, sessions)
    }

    #[test]
    fn a_bound_session_stays_home_while_home_has_room() {
        let (q, sessions) = queue(Stickiness::Soft, 8);
        let first = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        let home = *first.worker();
        // Least-loaded alone would spread these over the idle workers.
        let more: Vec<_> = (0..7)
            .map(|_| q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap())
            .collect();
        assert!(more.iter().all(|a| *a.worker() == home));
        assert_eq!(q.pool().in_flight(&home), Some(8));
        assert_eq!(sessions.len(), 1);
        // Unkeyed requests are not bound, and go where the selector says.
        let other = q.enqueue(Entry::new()).unwrap().wait().unwrap();
        assert_ne!(*other.worker(), home);
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn a_soft_session_moves_when_home_is_full_and_stays_moved() {
        let (q, _) = queue(Stickiness::Soft, 1);
        let first = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        let home = *first.worker();
        let second = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        let moved = *second.worker();
        assert_ne!(moved, home, "home is at its limit");
        drop((first, second));
        let third = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        assert_eq!(*third.worker(), moved, "rebound where it was booked");
    }

    #[test]
    fn a_hard_session_waits_for_home_and_a_release_there_admits_it() {
        let (q, _) = queue(Stickiness::Hard, 1);
        let first = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        let home = *first.worker();
        let mut waiting = q.enqueue(Entry::new().key(1)).unwrap();
        assert!(
            waiting.try_admit().unwrap().is_none(),
            "waits though three workers are idle"
        );
        assert_eq!(q.waiting(), 1);
        drop(first); // home's release admits it there
        let admitted = waiting.try_admit().unwrap().expect("admitted");
        assert_eq!(*admitted.worker(), home);
    }

    #[test]
    fn a_hard_session_whose_worker_left_fails_once_then_binds_anew() {
        let (q, sessions) = queue(Stickiness::Hard, 4);
        let home = *q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap().worker();
        q.pool().remove(&home).unwrap();
        let gone = q
            .enqueue(Entry::new().key(1))
            .and_then(|t| t.wait())
            .map(|a| *a.worker());
        assert_eq!(gone, Err(QueueError::Pick(Error::SessionWorkerGone)));
        assert!(sessions.is_empty(), "the binding went with its worker");
        let next = q.enqueue(Entry::new().key(1)).unwrap().wait().unwrap();
        assert_ne!(*next.worker(), home);
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn a_waiter_admitted_by_a_pump_follows_and_sets_its_binding() {
        // Every worker full: the keyed waiter is booked later by a pump on
        // another worker's release, and the session binds there.
        let (q, _) = queue(Stickiness::Soft, 1);
        let held: Vec<_> = (0..4)
            .map(|_| q.enqueue(Entry::new()).unwrap().wait().unwrap())
            .collect();
        let mut waiting = q.enqueue(Entry::new().key(9)).unwrap();
        assert!(waiting.try_admit().unwrap().is_none());
        drop(held);
        let admitted = waiting.try_admit().unwrap().expect("admitted by the release");
        let home = *admitted.worker();
        drop(admitted);
        for _ in 0..5 {
            assert_eq!(
                *q.enqueue(Entry::new().key(9)).unwrap().wait().unwrap().worker(),
                home
            );
        }
    }
}
