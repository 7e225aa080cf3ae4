//! A panic in the key type's `Clone`, `Hash` or `Eq` during a membership
//! change leaves the pool as it was or as the call would have left it.
//!
//! Each scenario is swept: the k-th user callback of the call panics, for
//! k = 1, 2, … until the call runs to the end without reaching the k-th.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use workerpick::{DeviceKind, Error, Pool, Reservation, WorkerInfo};

thread_local! {
    /// Callbacks left before one panics; `None` when disarmed. Writers run on
    /// the calling thread, so a per-thread fuse sees all of a call's callbacks.
    static FUSE: Cell<Option<u32>> = const { Cell::new(None) };
}

fn tick() {
    FUSE.with(|f| {
        if let Some(left) = f.get() {
            if left <= 1 {
                f.set(None);
                panic!("planted panic in a key callback");
            }
            f.set(Some(left - 1));
        }
    });
}

#[derive(Debug)]
struct Key(u32);

impl Clone for Key {
    fn clone(&self) -> Self {
        tick();
        Key(self.0)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        tick();
        self.0 == other.0
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        tick();
        self.0.hash(state);
    }
}

/// Runs `op` with the k-th callback planted to panic. `None` when it panicked.
fn armed<T>(k: u32, op: impl FnOnce() -> T) -> Option<T> {
    FUSE.with(|f| f.set(Some(k)));
    let out = catch_unwind(AssertUnwindSafe(op)).ok();
    FUSE.with(|f| f.set(None));
    out
}

fn members(pool: &Pool<Key>) -> Vec<u32> {
    pool.loads().into_iter().map(|(k, _)| k.0).collect()
}

/// Every query agrees with the others and with the load the test holds.
fn check_consistent(pool: &Pool<Key>, universe: &[u32], held: &BTreeMap<u32, u32>, at: &str) {
    let loads = pool.loads();
    assert_eq!(loads.len(), pool.len(), "{at}: len");
    for &id in universe {
        let key = Key(id);
        let listed = loads.iter().find(|(k, _)| k.0 == id).map(|&(_, l)| l);
        let want = held.get(&id).copied().unwrap_or(0);
        assert_eq!(
            pool.contains(&key),
            listed.is_some(),
            "{at}: contains({id}) vs loads"
        );
        match listed {
            Some(load) => {
                assert_eq!(load, want, "{at}: load of member {id}");
                assert_eq!(pool.in_flight(&key), Some(want), "{at}: in_flight({id})");
                assert!(pool.info(&key).is_some(), "{at}: info({id})");
            }
            None => {
                let draining = (want > 0).then_some(want);
                assert_eq!(
                    pool.in_flight(&key),
                    draining,
                    "{at}: in_flight of non-member {id}"
                );
            }
        }
    }
    let s = pool.stats();
    assert_eq!(s.workers, loads.len(), "{at}: stats.workers");
    assert_eq!(
        s.capacity,
        s.workers + s.draining + s.free_slots,
        "{at}: stats add up: {s:?}"
    );
}

/// After the reservations drop, every slot is either a member's or free.
fn check_drained(pool: &Pool<Key>, universe: &[u32], at: &str) {
    pool.reclaim();
    check_consistent(pool, universe, &BTreeMap::new(), at);
    let s = pool.stats();
    assert_eq!(
        s.draining, 0,
        "{at}: nothing drains once reservations dropped: {s:?}"
    );
    assert_eq!(
        s.capacity,
        s.workers + s.free_slots,
        "{at}: no slot leaked: {s:?}"
    );
}

/// A pool over `0..n` with `load` booked on each of `loaded`.
fn setup<'p>(
    pool: &'p Pool<Key>,
    loaded: &[u32],
    load: u32,
) -> (Vec<Reservation<'p, Key>>, BTreeMap<u32, u32>) {
    let guards = loaded
        .iter()
        .map(|&id| pool.reserve_worker(&Key(id), load).unwrap())
        .collect();
    (guards, loaded.iter().map(|&id| (id, load)).collect())
}

/// Sweeps `op` over every panic point. `before`/`after` are the member lists
/// the call starts from and should produce; `retry` says what the call gives
/// when run again on the state it left.
fn sweep(
    name: &str,
    initial: &[u32],
    loaded: &[u32],
    draining: &[u32],
    universe: &[u32],
    after: &[u32],
    op: &dyn Fn(&Pool<Key>) -> Result<(), Error>,
) {
    for k in 1.. {
        let at = format!("{name}, panic at callback {k}");
        let pool = Pool::from_workers(initial.iter().chain(draining).map(|&i| Key(i))).unwrap();
        let (guards, held) = setup(&pool, loaded, 5);
        for id in draining {
            pool.remove(&Key(*id)).unwrap();
        }
        let done = armed(k, || op(&pool));
        check_consistent(&pool, universe, &held, &at);
        let now = members(&pool);
        if let Some(result) = done {
            assert_eq!(result, Ok(()), "{at}");
            assert_eq!(now, after, "{at}");
            drop(guards);
            check_drained(&pool, universe, &at);
            return;
        }
        assert!(now == initial || now == after, "{at}: half-done set {now:?}");
        if now == initial {
            assert_eq!(op(&pool), Ok(()), "{at}: retry");
            assert_eq!(members(&pool), after, "{at}: retry");
        }
        check_consistent(&pool, universe, &held, &format!("{at}, retried"));
        // Re-adding a removed worker shows its live load.
        for &id in loaded.iter().filter(|id| !after.contains(id)) {
            pool.insert(Key(id)).unwrap();
            assert_eq!(pool.in_flight(&Key(id)), Some(5), "{at}: re-added {id}");
            pool.remove(&Key(id)).unwrap();
        }
        drop(guards);
        check_drained(&pool, universe, &at);
        assert!(k < 10_000, "{name}: the sweep does not end");
    }
}

#[test]
fn remove_of_a_loaded_worker() {
    sweep(
        "remove",
        &[0, 1, 2, 3],
        &[1, 2],
        &[],
        &[0, 1, 2, 3],
        &[0, 2, 3],
        &|p| p.remove(&Key(1)),
    );
}

#[test]
fn insert_of_a_new_worker() {
    sweep(
        "insert",
        &[0, 1, 2],
        &[1],
        &[],
        &[0, 1, 2, 3],
        &[0, 1, 2, 3],
        &|p| p.insert(Key(3)),
    );
}

#[test]
fn insert_of_a_draining_worker() {
    // Worker 1 left with load held; it comes back.
    sweep("re-insert", &[0, 2], &[1], &[1], &[0, 1, 2], &[0, 2, 1], &|p| {
        p.insert(Key(1))
    });
}

#[test]
fn replace_keeping_some_dropping_some_adding_some() {
    sweep(
        "replace",
        &[0, 1, 2, 3],
        &[1, 3, 9],
        &[9],
        &[0, 1, 2, 3, 4, 5, 9],
        &[3, 4, 0, 9, 5],
        &|p| p.replace([3, 4, 0, 9, 5].map(Key)),
    );
}

#[test]
fn set_info_of_a_member() {
    let cpu = WorkerInfo::new().device(DeviceKind::Cpu);
    sweep("set_info", &[0, 1, 2], &[1], &[], &[0, 1, 2], &[0, 1, 2], &|p| {
        p.set_info(&Key(1), cpu)?;
        assert_eq!(p.info(&Key(1)), Some(cpu));
        Ok(())
    });
}

#[test]
fn set_infos_of_members() {
    let cpu = WorkerInfo::new().device(DeviceKind::Cpu);
    sweep("set_infos", &[0, 1, 2], &[1], &[], &[0, 1, 2], &[0, 1, 2], &|p| {
        p.set_infos([(Key(2), cpu), (Key(0), cpu)])?;
        assert_eq!(p.info(&Key(0)), Some(cpu));
        assert_eq!(p.info(&Key(2)), Some(cpu));
        Ok(())
    });
}

#[test]
fn retained_load_survives_a_panicking_remove_and_reinsert() {
    // The reported sequence: a remove that panics must not leave a second
    // slot for the same key after a later insert.
    let pool = Pool::from_workers([0, 1, 2].map(Key)).unwrap();
    let held = pool.reserve_worker(&Key(1), 5).unwrap();
    for k in 1..50 {
        if armed(k, || pool.remove(&Key(1))).is_some() {
            break;
        }
        let in_set = pool.contains(&Key(1));
        assert_eq!(
            pool.remove(&Key(1)).is_ok(),
            in_set,
            "panic at {k}: remove agrees with contains"
        );
        pool.insert(Key(1)).unwrap();
    }
    assert_eq!(pool.in_flight(&Key(1)), Some(5));
    drop(held);
    check_drained(&pool, &[0, 1, 2], "after the loop");
}
