//! Which workers a pick may return: the whole set, or a request's
//! eligibility mask resolved against the set the pick loaded (as it is while
//! no worker left since the mask was built, else translated once per set, or
//! filtered entry by entry when the set's translation cache is full).

use crate::eligibility::{Eligibility, UNBUILT};
use crate::error::Error;
use crate::remap::Remapped;
use crate::request::Request;
use crate::snapshot::SetView;

/// Which candidates a pick may return.
#[derive(Clone, Copy)]
pub(crate) enum Candidates<'a> {
    /// The whole set, or a mask built from this very snapshot: `slots` are the
    /// candidates and `lanes` is the matching exclusion array for the scan, `None`
    /// when the candidates are exactly the lanes `0..slots.len()`.
    Fresh {
        slots: &'a [u32],
        lanes: Option<&'a [u32]>,
    },
    /// A mask built before a worker left, when the snapshot's translation
    /// cache is full (see `remap`): its workers that are still in the set
    /// under the same identity, filtered on every call. `n` of them: a
    /// `usize`, as the length it shares its place with in `Fresh`; a `u32`
    /// there split that length into two 4-byte stores, which the pick's
    /// 8-byte load of it then waited on (store forwarding).
    Stale { mask: &'a Eligibility, n: usize },
}

impl<'a> Candidates<'a> {
    /// The candidates for `request` in `set`: the whole set, or the mask's
    /// workers. A mask (or cache hits) from another pool is refused.
    #[inline(always)]
    pub(crate) fn of(set: &'a SetView, pool_id: u64, request: &Request<'a>) -> Result<Self, Error> {
        if let Some(hits) = request.cache {
            hits.check_pool(pool_id)?;
        }
        match request.mask {
            None => Ok(Self::whole(set)),
            // The error is built here, not returned by `masked`: a `Result`
            // with `Error`'s 4-byte fields in it came back through memory as
            // 4-byte halves, which the pick's 8-byte loads then waited on.
            Some(mask) => match Self::masked(set, pool_id, mask) {
                Some(candidates) => Ok(candidates),
                None => Err(foreign_mask()),
            },
        }
    }

    /// The whole set.
    #[inline(always)]
    pub(crate) fn whole(set: &'a SetView) -> Self {
        Candidates::Fresh {
            slots: &set.members,
            lanes: if set.dense { None } else { Some(&set.excluded) },
        }
    }

    /// The mask's workers; `None` for a mask built for another pool.
    fn masked(set: &'a SetView, pool_id: u64, mask: &'a Eligibility) -> Option<Self> {
        if mask.pool == UNBUILT {
            // `Eligibility::new()`, never built: it admits nothing.
            return Some(Candidates::Fresh {
                slots: &[],
                lanes: None,
            });
        }
        if mask.pool != pool_id {
            return None;
        }
        // No worker left since the mask was built: every entry still names a
        // member under the same identity, and the lanes of workers that
        // joined since are excluded (or past the mask's end).
        if set.departed_at <= mask.epoch && mask.epoch <= set.epoch {
            return Some(Candidates::Fresh {
                slots: &mask.slots,
                lanes: Some(&mask.excluded),
            });
        }
        if let Some(r) = set.remaps.get_or_insert(mask.id, || remap(set, mask)) {
            return Some(Candidates::Fresh {
                slots: &r.slots,
                lanes: Some(&r.excluded),
            });
        }
        let n = (0..mask.slots.len())
            .filter(|&j| still_eligible(set, mask, j))
            .count();
        Some(Candidates::Stale { mask, n })
    }
}

#[cold]
fn foreign_mask() -> Error {
    Error::InvalidConfig {
        what: "eligibility mask",
        why: "it was built for another pool; build it with this pool's `eligibility`".into(),
    }
}

/// `mask`'s entries that still name members of `set` under the same identity.
#[cold]
fn remap(set: &SetView, mask: &Eligibility) -> Remapped {
    let mut excluded = vec![u32::MAX; set.scan_len()].into_boxed_slice();
    // Sized for the whole mask: one allocation, no regrowth.
    let mut slots = Vec::with_capacity(mask.slots.len());
    for j in (0..mask.slots.len()).filter(|&j| still_eligible(set, mask, j)) {
        let slot = mask.slots[j];
        excluded[slot as usize] = 0;
        slots.push(slot);
    }
    Remapped {
        mask: mask.id,
        slots,
        excluded,
    }
}

#[cfg(test)]
thread_local! {
    /// Mask entries checked against a set, for the complexity tests.
    pub(crate) static ELIGIBILITY_CHECKS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Whether entry `j` of a stale mask still names a member with the same identity.
pub(crate) fn still_eligible(set: &SetView, mask: &Eligibility, j: usize) -> bool {
    #[cfg(test)]
    ELIGIBILITY_CHECKS.with(|c| c.set(c.get() + 1));
    let slot = mask.slots[j];
    set.is_member(slot) && set.gens[slot as usize] == mask.gens[j]
}

/// Whether `index`, a member of `set`, is one of `candidates`. Unmasked,
/// that is not checked: callers hold set members already.
#[inline(always)]
pub(crate) fn admits(set: &SetView, candidates: &Candidates<'_>, index: u32) -> bool {
    match *candidates {
        Candidates::Fresh { lanes: None, .. } => true,
        Candidates::Fresh { lanes: Some(e), .. } => e.get(index as usize) == Some(&0),
        Candidates::Stale { mask, .. } => {
            (0..mask.slots.len()).any(|j| mask.slots[j] == index && still_eligible(set, mask, j))
        }
    }
}
