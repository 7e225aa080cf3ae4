//! The exact least-loaded rule in scalar code: the specification the SIMD
//! scans match, and what answers when they cannot.

use crate::context::{Context, Slot};

/// The least-loaded candidate among those `keep` admits, ties uniform at
/// random with one draw (none when unique): what
/// [`Context::least_loaded_by`] answers.
pub(crate) fn least_by<'a>(
cx: &mut Context<'a>,
mut keep: impl FnMut(&Context<'a>, Slot<'a>) -> bool,
) -> Option<(Slot<'a>, u32)> {
    if let Some(w) = cx.weights() {
        return cx.least_weighted_by(w, keep);
    }
    let mut least = Minimum::NONE;
    for i in 0..cx.len() {
        let slot = cx.candidate(i)?;
        if keep(cx, slot) {
            least.add(slot, cx.current(slot));
        }
    }
    let slot = least.draw(cx, keep)?;
    Some((slot, least.min))
}

/// The running minimum over some candidates, in candidate order: the least
/// load, how many candidates tie at it, and the first of them. The one rule
/// the scalar least-loaded paths share ([`least_by`] and
/// device-aware's groups): one pass adds every candidate, then
/// [`draw`](Self::draw) picks a tie uniformly.
#[derive(Clone, Copy)]
pub(crate) struct Minimum<'a> {
    pub(crate) min: u32,
    ties: u32,
    first: Option<Slot<'a>>,
}

impl<'a> Minimum<'a> {
    /// Over no candidate.
    pub(crate) const NONE: Self = Self {
        min: u32::MAX,
        ties: 0,
        first: None,
    };

    /// Adds `slot`, whose load is `load`.
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: Slot<'a>, load: u32) {
        if self.first.is_none() || load < self.min {
            self.min = load;
            self.ties = 1;
            self.first = Some(slot);
        } else if load == self.min {
            self.ties += 1;
        }
    }

    /// A candidate at the minimum, drawn uniformly among the ties (`None` if
    /// none was added). `member` must admit exactly the candidates that were
    /// added. No draw when the minimum is unique; otherwise one draw and a
    /// second pass to find that tie. If the drawn tie moved meanwhile, the
    /// first minimum seen: the booking's compare-and-swap settles it.
    #[inline]
    pub(crate) fn draw(
        &self,
        cx: &mut Context<'a>,
        mut member: impl FnMut(&Context<'a>, Slot<'a>) -> bool,
    ) -> Option<Slot<'a>> {
        if self.ties <= 1 {
            return self.first;
        }
        let mut k = cx.rng.below(self.ties);
        for i in 0..cx.len() {
            let Some(slot) = cx.candidate(i) else { break };
            if member(cx, slot) && cx.current(slot) == self.min {
                if k == 0 {
                    return Some(slot);
                }
                k -= 1;
            }
        }
        self.first
    }
}
