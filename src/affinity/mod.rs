//! Request affinity: the consistent-hash ring that
//! [`Affinity`](crate::Affinity) walks, built by the writer with each
//! snapshot of a pool that enabled it, and (feature `sessions`) the
//! session bindings. See
//! [`docs::affinity`](crate::docs::affinity) ("Bounded-load affinity").

#[cfg(any(feature = "sessions", loom))]
pub(crate) mod binding;
#[cfg(feature = "sessions")]
mod clock;
pub(crate) mod ring;
#[cfg(feature = "sessions")]
pub(crate) mod sessions;

use crate::candidates::{Candidates, still_eligible};
use crate::context::{Context, Slot};
use crate::snapshot::SetView;

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

/// `index` as a candidate of this pick, if the pick's candidates include it
/// (see [`admits`]).
#[inline(always)]
pub(crate) fn admitted<'a>(cx: &Context<'a>, index: u32) -> Option<Slot<'a>> {
    admits(cx.set, &cx.candidates, index).then(|| Slot::new(index))
}
