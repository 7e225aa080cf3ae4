//! The compare-and-swap by which a pick raises a bound (`bounds`'s bounds
//! and floor, `scores`' bounds and floor), the second look that follows it,
//! and, under `--cfg workerpick_plain_raise`,
//! the same as a plain store: WRONG, kept only to show that the loom models
//! `summary_race` and `scores_race` fail without the compare-and-swap
//! (`RUSTFLAGS="--cfg loom --cfg workerpick_plain_raise"`).

use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// The rest of every raise after its compare-and-swap, which `swapped` says
/// landed: a `SeqCst` fence, a second look at what the raised value bounds
/// (`least`), and `repair` with what it found if that is below `to`, the
/// value raised to. Either the second look sees a decrement the first look
/// missed, or the release's `SeqCst` load saw the raise (see `docs::internal::bounds`).
/// Whether the raise landed.
#[inline(always)]
pub(super) fn second_look(
    swapped: bool,
    to: u32,
    least: impl FnOnce() -> u32,
    repair: impl FnOnce(u32),
) -> bool {
    if !swapped {
        return false;
    }
    fence(Ordering::SeqCst);
    let now = least();
    if now < to {
        repair(now);
    }
    true
}

/// The raise of a 64-bit bound (the floor, a bound on scores): a
/// compare-and-swap from `seen`.
#[cfg(not(workerpick_plain_raise))]
#[inline(always)]
pub(super) fn swap_wide(cell: &AtomicU64, seen: u64, to: u64) -> bool {
    cell.compare_exchange(seen, to, Ordering::SeqCst, Ordering::Relaxed)
        .is_ok()
}

/// The 64-bit raise as a plain store: WRONG.
#[cfg(workerpick_plain_raise)]
#[inline(always)]
pub(super) fn swap_wide(cell: &AtomicU64, seen: u64, to: u64) -> bool {
    let _ = seen;
    cell.store(to, Ordering::SeqCst);
    true
}

/// The raise itself: a compare-and-swap from `seen`.
#[cfg(not(workerpick_plain_raise))]
#[inline(always)]
pub(super) fn swap(cell: &AtomicU32, seen: u32, to: u32) -> bool {
    cell.compare_exchange(seen, to, Ordering::SeqCst, Ordering::Relaxed)
        .is_ok()
}

/// The raise as a plain store: WRONG.
#[cfg(workerpick_plain_raise)]
#[inline(always)]
pub(super) fn swap(cell: &AtomicU32, seen: u32, to: u32) -> bool {
    let _ = seen;
    cell.store(to, Ordering::SeqCst);
    true
}
