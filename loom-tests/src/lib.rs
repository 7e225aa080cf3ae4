//! Loom models of workerpick's concurrency invariants.
//!
//! The models live in `tests/`, one file per invariant, and only build with
//! `RUSTFLAGS="--cfg loom"` (see `README.md` in this directory). This library
//! holds what they share: the [`model`] wrapper and a few pool checks.
#![cfg(loom)]

use loom::model::Builder;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use workerpick::{Handle, Pool, Rng};

/// The preemption bound when `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTIONS: usize = 3;

/// The bound on branches in one execution when `LOOM_MAX_BRANCHES` is not set.
pub const MAX_BRANCHES: usize = 10_000;

fn builder() -> Builder {
    let mut b = Builder::new();
    // `Builder::new` reads LOOM_MAX_PREEMPTIONS, LOOM_MAX_BRANCHES, ... from
    // the environment; only the preemption bound gets our own default.
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    // Loom's default bound on branches (atomic operations and switches in one
    // execution) is 1 000; a weighted summarised pick that raises its bounds
    // and the floor makes more.
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        b.max_branches = MAX_BRANCHES;
    }
    b
}

/// Explores every interleaving of `f` (up to the preemption bound).
///
/// Silent while the model holds. When it fails, it says which model failed,
/// finds the failing iteration again (recording each iteration's schedule in
/// a checkpoint file), replays just that iteration with loom's full trace
/// (every atomic access and its source location), and then fails with the
/// original panic.
pub fn model<F>(name: &'static str, f: F)
where
    F: Fn() + Send + Sync + 'static,
{
    let iterations = Arc::new(AtomicUsize::new(0));
    let f = {
        let iterations = iterations.clone();
        Arc::new(move || {
            iterations.fetch_add(1, Ordering::Relaxed);
            f()
        })
    };
    let run = |b: &Builder| {
        let f = f.clone();
        panic::catch_unwind(AssertUnwindSafe(|| b.check(move || f())))
    };
    let start = Instant::now();
    let Err(failure) = run(&builder()) else {
        // Shown with `--nocapture`: how much each model explores.
        println!(
            "loom model `{name}`: {} iterations in {:.2?}",
            iterations.load(Ordering::Relaxed),
            start.elapsed()
        );
        return;
    };
    eprintln!("\n=== loom model `{name}` FAILED: replaying the failing iteration with its trace ===");
    let path = checkpoint(name);
    let _ = std::fs::remove_file(&path);
    let mut find = builder();
    find.checkpoint_file = Some(path.clone());
    find.checkpoint_interval = 1;
    if run(&find).is_ok() {
        eprintln!("(the failure did not recur on the second exploration; no trace)");
        panic::resume_unwind(failure);
    }
    let mut replay = builder();
    replay.checkpoint_file = Some(path.clone());
    replay.location = true;
    replay.log = true;
    let trace = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_test_writer()
        .without_time()
        .finish();
    let _ = tracing::subscriber::with_default(trace, || run(&replay));
    eprintln!("=== end of trace of loom model `{name}`; schedule saved in {path:?} ===\n");
    panic::resume_unwind(failure);
}

fn checkpoint(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("loom-{name}-{}.json", std::process::id()))
}

/// Spawns `n` loom threads that pick on `pool`: thread `t` runs `body(pool, handle, t)`
/// with a handle whose draws are seeded with `t`. Join the returned threads.
pub fn spawn_pickers<F>(
    pool: &loom::sync::Arc<Pool<u32>>,
    n: u64,
    body: F,
) -> Vec<loom::thread::JoinHandle<()>>
where
    F: Fn(&Pool<u32>, &mut Handle<'_, u32>, u64) + Clone + Send + 'static,
{
    (0..n)
        .map(|t| {
            let (pool, body) = (pool.clone(), body.clone());
            loom::thread::spawn(move || {
                let mut h = pool.handle_with_rng(Rng::with_seed(t));
                body(&pool, &mut h, t)
            })
        })
        .collect()
}

/// Asserts that none of `workers` has load in flight (a member at 0, or gone).
#[track_caller]
pub fn assert_idle(pool: &Pool<u32>, workers: impl IntoIterator<Item = u32>) {
    for w in workers {
        let load = pool.in_flight(&w);
        assert!(
            matches!(load, None | Some(0)),
            "worker {w} still has load {load:?}"
        );
    }
}

/// Reclaims what can be reclaimed, then checks that the storage adds up:
/// every allocated slot is held (by a member or a draining worker, one per
/// rank) or free, and nothing is left draining once all reservations are gone.
#[track_caller]
pub fn assert_storage_settled(pool: &Pool<u32>) {
    pool.reclaim();
    let s = pool.stats();
    assert_eq!(s.workers, pool.len(), "{s:?}");
    assert_eq!(s.draining, 0, "a removed worker was never reclaimed: {s:?}");
    assert_eq!(
        s.capacity,
        s.slots + s.free_slots,
        "slots leaked or double-freed: {s:?}"
    );
}
