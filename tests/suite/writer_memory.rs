//! The writer's bookkeeping stays bounded by what readers still hold, without
//! the caller ever calling `reclaim`.

use workerpick::{DeviceKind, Pool, WorkerInfo};

const CALLS: u32 = 20_000;

#[test]
fn set_info_alone_keeps_bookkeeping_bounded() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    let cpu = WorkerInfo::new().device(DeviceKind::Cpu);
    for i in 0..CALLS {
        let info = if i % 2 == 0 { cpu } else { WorkerInfo::new() };
        pool.set_info(&(i % 8), info).unwrap();
    }
    let s = pool.stats();
    assert!(
        s.snapshots <= 2,
        "{CALLS} set_info calls left {} snapshots tracked",
        s.snapshots
    );
}

#[test]
fn membership_churn_with_held_snapshots_keeps_bookkeeping_bounded() {
    let pool = Pool::from_workers(0..8u32).unwrap();
    // Two router handles that pick now and then keep old snapshots alive.
    let mut a = pool.handle();
    let mut b = pool.handle();
    let mode = workerpick::LeastLoaded::new();
    for i in 0..CALLS {
        let w = 100 + i % 16;
        let held = pool.reserve_worker(&(i % 8), 1).unwrap();
        pool.insert(w).unwrap();
        pool.set_info(&w, WorkerInfo::new().group(i % 3)).unwrap();
        pool.remove(&w).unwrap();
        if i % 7 == 0 {
            drop(a.reserve(&mode).unwrap());
        }
        if i % 11 == 0 {
            drop(b.reserve(&mode).unwrap());
        }
        drop(held);
    }
    let s = pool.stats();
    // The current snapshot, one per handle, and at most one in between.
    assert!(s.snapshots <= 4, "{} snapshots tracked after churn", s.snapshots);
    assert!(s.capacity <= 8 + 16 + 2, "slots grew to {}", s.capacity);
    assert_eq!(s.capacity, s.workers + s.draining + s.free_slots);
}
