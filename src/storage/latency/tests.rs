use super::clock::READS;
use crate::{
    LatencyConfig, LatencyLeastLoaded, LatencyPowerOfTwo, LeastLoaded, Pool, PowerOfTwo, Request, Reservation,
};
use std::time::Duration;

fn reads() -> u64 {
    READS.with(|r| r.get())
}

/// A pool of a few slots: the default 65 536 make every table slow to
/// build under Miri.
fn small(workers: impl IntoIterator<Item = u32>) -> Result<Pool<u32>, crate::error::Error> {
    let pool = Pool::with_max_workers(16)?;
    pool.replace(workers)?;
    Ok(pool)
}

fn latency_pool(n: u32) -> Pool<u32> {
    small(0..n).unwrap().with_latency(LatencyConfig::new()).unwrap()
}

/// Samples `rtt_us` on worker `w` at the table's current millisecond.
fn sample(pool: &Pool<u32>, w: u32, rtt_us: u32) {
    let table = pool.raw.slots.counters.latency().unwrap();
    let slot = pool.snapshot().index[&w];
    table.sample(slot, table.now(), rtt_us);
}

#[test]
fn plain_pools_read_no_clock() {
    let pool = small(0..4u32).unwrap();
    assert!(pool.raw.slots.counters.latency().is_none());
    let before = reads();
    for _ in 0..10 {
        drop(pool.reserve(&PowerOfTwo::new()).unwrap());
        drop(pool.reserve(&LeastLoaded::new()).unwrap());
        drop(pool.reserve(&LatencyPowerOfTwo::new()).unwrap().timed());
        let mut r = pool.reserve(&LatencyLeastLoaded::new()).unwrap().timed();
        r.fail();
    }
    assert_eq!(reads(), before, "a pool without a latency table read the clock");
    assert_eq!(pool.latency(&0), None);
    // The plain reservation carries no timing state.
    assert_eq!(core::mem::size_of::<Reservation<'_, u32>>(), 3 * 8);
}

#[test]
fn timed_reservations_read_the_clock_twice_and_plain_ones_never() {
    let pool = latency_pool(2);
    let before = reads();
    drop(pool.reserve(&PowerOfTwo::new()).unwrap());
    drop(pool.reserve(&LatencyPowerOfTwo::new()).unwrap());
    assert_eq!(reads(), before, "untimed picks read no clock, even by latency");
    drop(pool.reserve(&LatencyPowerOfTwo::new()).unwrap().timed());
    assert_eq!(reads(), before + 2);
}

#[test]
fn no_history_reads_the_default() {
    let pool = small([7u32])
        .unwrap()
        .with_latency(LatencyConfig::new().default_rtt(Duration::from_millis(4)))
        .unwrap();
    assert_eq!(pool.latency(&7), Some(Duration::from_millis(4)));
}

#[test]
fn failure_counts_as_the_penalty() {
    let pool = small([1u32, 2])
        .unwrap()
        .with_latency(LatencyConfig::new().failure_penalty(Duration::from_millis(250)))
        .unwrap();
    pool.reserve_worker(&1, 1).unwrap().timed().end_failed();
    assert!(pool.latency(&1).unwrap() >= Duration::from_millis(249));
    // A success is its own (short) time.
    drop(pool.reserve_worker(&2, 1).unwrap().timed());
    assert!(pool.latency(&2).unwrap() < Duration::from_millis(250));
}

#[test]
fn owned_reservations_are_timed_too() {
    let pool = std::sync::Arc::new(latency_pool(1));
    let mut r = pool
        .owned_handle()
        .reserve(&LatencyPowerOfTwo::new())
        .unwrap()
        .timed();
    r.fail();
    assert!(r.is_failed());
    drop(r);
    // The 1 s penalty, decayed by the time between the sample and the read.
    assert!(pool.latency(&0).unwrap() > Duration::from_millis(900));
    assert_eq!(pool.in_flight(&0), Some(0));
}

#[test]
fn power_of_two_compares_latency_times_load() {
    let pool = latency_pool(2);
    sample(&pool, 0, 10_000);
    sample(&pool, 1, 1_000);
    // Worker 1 is 10x faster: it wins while 1 000·(l + 1) < 10 000·1, l < 9.
    let p2c = LatencyPowerOfTwo::new();
    let held: Vec<_> = (0..9).map(|_| pool.reserve(&p2c).unwrap()).collect();
    assert_eq!((pool.in_flight(&0), pool.in_flight(&1)), (Some(0), Some(9)));
    let tenth = pool.reserve_worker(&1, 1).unwrap();
    // 11 000 > 10 000.
    assert_eq!(*pool.reserve(&p2c).unwrap().worker(), 0);
    drop((held, tenth));
}

#[test]
#[cfg_attr(miri, ignore = "400 picks: a statistical test, run natively")]
fn least_loaded_compares_latency_times_load_and_ties_are_uniform() {
    let pool = latency_pool(3);
    sample(&pool, 0, 9_000);
    sample(&pool, 1, 3_000);
    sample(&pool, 2, 3_000);
    let ll = LatencyLeastLoaded::new();
    let mut hits = [0u32; 3];
    for _ in 0..400 {
        hits[*pool.reserve(&ll).unwrap().worker() as usize] += 1;
    }
    assert_eq!(hits[0], 0);
    assert!(hits[1] > 120 && hits[2] > 120, "{hits:?}");
    // Held load moves the minimum: 1 and 2 take the first four (3 000·3 =
    // 9 000 only ties worker 0 at load 2 each), and at 3 each, 12 000 > 9 000.
    let mut held: Vec<_> = (0..4).map(|_| pool.reserve(&ll).unwrap()).collect();
    assert_eq!((pool.in_flight(&1), pool.in_flight(&2)), (Some(2), Some(2)));
    held.extend([1, 2].map(|w| pool.reserve_worker(&w, 1).unwrap()));
    assert_eq!(*pool.reserve(&ll).unwrap().worker(), 0);
    drop(held);
}

#[test]
#[cfg_attr(miri, ignore = "80 picks over masks: run natively")]
fn masks_and_health_narrow_the_latency_modes() {
    let pool = latency_pool(3);
    sample(&pool, 0, 100);
    let mask = pool.eligibility(|&w| w != 0);
    let req = Request::new().eligible(&mask);
    for _ in 0..20 {
        assert_ne!(
            *pool
                .reserve_with(&LatencyLeastLoaded::new(), &req)
                .unwrap()
                .worker(),
            0
        );
        assert_ne!(
            *pool
                .reserve_with(&LatencyPowerOfTwo::new(), &req)
                .unwrap()
                .worker(),
            0
        );
    }
    pool.set_healthy(&0, false).unwrap();
    for _ in 0..20 {
        assert_ne!(*pool.reserve(&LatencyLeastLoaded::new()).unwrap().worker(), 0);
    }
}

#[test]
fn reuse_forgets_the_history() {
    let pool = latency_pool(1);
    pool.reserve_worker(&0, 1).unwrap().timed().end_failed();
    pool.remove(&0).unwrap();
    pool.reclaim();
    pool.insert(5).unwrap();
    assert_eq!(pool.latency(&5), Some(Duration::from_millis(30)));
}
