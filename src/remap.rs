//! Eligibility masks older than the set, translated once per snapshot.
//!
//! A mask names worker identities as they were when it was built. Once a
//! worker has left the set, some of the mask's entries no longer name members
//! and a pick must skip them. Rather than filter the mask on every pick (which
//! makes a pick that indexes candidates quadratic), the first pick that meets
//! the mask on a snapshot builds the mask's surviving candidates and caches
//! them in the snapshot; later picks find them with a load or two. The
//! translation is freed with the snapshot, so memory stays bounded by the
//! snapshots alive.

use crate::sync::atomic::{AtomicPtr, Ordering};
use core::ptr;

/// Masks a snapshot caches translations for; a further stale mask takes the
/// slower path that filters on every pick.
#[cfg(not(loom))]
const CELLS: usize = 32;
#[cfg(loom)]
const CELLS: usize = 2;

/// One mask's candidates in one snapshot, in the mask's order.
pub(crate) struct Remapped {
    /// The mask build it translates (`Eligibility::id`).
    pub(crate) mask: u64,
    pub(crate) slots: Vec<u32>,
    /// Per slot of the snapshot: `0` for a candidate, else `u32::MAX`.
    pub(crate) excluded: Box<[u32]>,
}

/// A snapshot's translations. Each cell is filled at most once, never
/// replaced, and freed only with the snapshot.
pub(crate) struct Remaps {
    cells: [AtomicPtr<Remapped>; CELLS],
}

impl Remaps {
    pub(crate) fn new() -> Self {
        Self {
            cells: core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// The translation of mask build `mask`, made with `build` if no cell
    /// holds one yet; `None` when every cell holds another mask's.
    pub(crate) fn get_or_insert(&self, mask: u64, build: impl FnOnce() -> Remapped) -> Option<&Remapped> {
        let start = (mask % CELLS as u64) as usize;
        let mut build = Some(build);
        let mut mine: Option<Box<Remapped>> = None;
        for k in 0..CELLS {
            let cell = &self.cells[(start + k) % CELLS];
            // Acquire pairs with the Release of the filling swap below: the
            // translation's contents are visible before its pointer.
            let mut p = cell.load(Ordering::Acquire);
            if p.is_null() {
                let new = match (mine.take(), build.take()) {
                    (Some(made), _) => made,
                    (None, Some(build)) => Box::new(build()),
                    (None, None) => return None,
                };
                let raw = Box::into_raw(new);
                // Release pairs with the Acquire loads here; Acquire on
                // failure for the same reason as the load above.
                match cell.compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire) {
                    // SAFETY: `raw` is now the cell's, freed only in `drop`.
                    // Not a `OnceLock` (safe code): its initialisation
                    // blocks racing callers, and this runs on the pick,
                    // which must stay lock-free; here racers each build and
                    // the loser frees its own copy.
                    Ok(_) => return Some(unsafe { &*raw }),
                    Err(other) => {
                        // SAFETY: the swap failed, so `raw` is still ours alone.
                        mine = Some(unsafe { Box::from_raw(raw) });
                        p = other;
                    }
                }
            }
            // SAFETY: a non-null cell points to a `Remapped` that stays put
            // until `drop`, which `&self` excludes.
            let r = unsafe { &*p };
            if r.mask == mask {
                return Some(r);
            }
        }
        None
    }
}

impl Drop for Remaps {
    fn drop(&mut self) {
        for cell in &self.cells {
            let p = cell.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: filled by `Box::into_raw` in `get_or_insert`; `&mut
                // self` means no reference into it is alive.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn translation(mask: u64, built: &AtomicUsize) -> Remapped {
        built.fetch_add(1, Ordering::Relaxed);
        Remapped {
            mask,
            slots: vec![mask as u32],
            excluded: vec![0].into_boxed_slice(),
        }
    }

    #[test]
    fn racing_picks_agree_on_one_translation_per_mask() {
        let remaps = Remaps::new();
        let built = AtomicUsize::new(0);
        let masks: Vec<u64> = (1..=6).chain([1 + CELLS as u64]).collect();
        std::thread::scope(|s| {
            for t in 0..3 {
                let (remaps, built, masks) = (&remaps, &built, &masks);
                s.spawn(move || {
                    for &m in masks.iter().cycle().skip(t).take(masks.len()) {
                        let r = remaps.get_or_insert(m, || translation(m, built)).unwrap();
                        assert_eq!((r.mask, r.slots[0]), (m, m as u32));
                    }
                });
            }
        });
        // A translation that lost its cell's race is dropped, never published.
        for &m in &masks {
            let r = remaps
                .get_or_insert(m, || unreachable!("{m} was cached"))
                .unwrap();
            assert_eq!(r.mask, m);
        }
        assert!(built.load(Ordering::Relaxed) >= masks.len());
    }

    #[test]
    fn a_full_cache_declines_without_building() {
        let remaps = Remaps::new();
        let built = AtomicUsize::new(0);
        for m in 0..CELLS as u64 {
            assert!(remaps.get_or_insert(m, || translation(m, &built)).is_some());
        }
        assert!(
            remaps
                .get_or_insert(CELLS as u64 + 5, || translation(0, &built))
                .is_none()
        );
        assert_eq!(built.load(Ordering::Relaxed), CELLS);
    }
}
