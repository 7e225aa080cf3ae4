//! Request affinity: the consistent-hash ring that
//! [`Affinity`](crate::Affinity) walks, built by the writer with each
//! snapshot of a pool that enabled it, and (feature `sessions`) the
//! session bindings. See
//! [`docs::affinity`](crate::docs::affinity) ("Bounded-load affinity").

pub(crate) mod ring;
#[cfg(feature = "sessions")]
pub(crate) mod sessions;

use crate::candidates::{Candidates, still_eligible};
use crate::context::{Context, Slot};

/// `index` as a candidate of this pick, if the set's candidates include it.
/// Unmasked, that is not checked: callers hold set members already.
#[inline(always)]
pub(crate) fn admitted<'a>(cx: &Context<'a>, index: u32) -> Option<Slot<'a>> {
    let ok = match cx.candidates {
        // Unmasked: any candidate of the set (callers check membership).
        Candidates::Fresh { lanes: None, .. } => true,
        Candidates::Fresh { lanes: Some(e), .. } => e.get(index as usize) == Some(&0),
        Candidates::Stale { mask, .. } => {
            (0..mask.slots.len()).any(|j| mask.slots[j] == index && still_eligible(cx.set, mask, j))
        }
    };
    ok.then(|| Slot::new(index))
}
