//! Out-of-line paths run on a copy of the context, so that the hot path need
//! not keep the whole context in memory (see [`Context::detached`]).

use super::{Context, Slot};
use crate::candidates::Candidates;
use crate::scan::Kernel;

/// What an out-of-line path reads of the context (see `Context::detached`).
#[derive(Clone, Copy)]
pub(crate) enum Walk {
    /// Candidates and health only: no lanes, no scan.
    Health,
    /// Everything.
    Full,
}

impl<'a> Context<'a> {
    /// Runs an out-of-line path `f` on a copy of this context, and names the
    /// slot it returns. Handing `&mut self` to a call that is not inlined
    /// would keep the whole context in memory on the hot path too (a dozen
    /// stores per pick); the copy is made only where `f` is called. Paths
    /// that only walk the candidates and read health (`Walk::Health`) get a
    /// copy without the scan's lanes and backend, which the hot path then
    /// need not load at all.
    #[inline(always)]
    pub(crate) fn detached<'b>(
        &'b mut self,
        walk: Walk,
        f: impl FnOnce(&mut Context<'b>) -> Option<u32>,
    ) -> Option<Slot<'a>> {
        self.detached_with(walk, f).map(Slot::new)
    }

    /// [`detached`](Self::detached) with the whole context, for a path that
    /// answers a slot and the load it compared.
    #[inline(always)]
    pub(crate) fn detached_choice<'b>(
        &'b mut self,
        f: impl FnOnce(&mut Context<'b>) -> Option<(u32, u32)>,
    ) -> Option<(Slot<'a>, u32)> {
        self.detached_with(Walk::Full, f)
            .map(|(slot, load)| (Slot::new(slot), load))
    }

    #[inline(always)]
    fn detached_with<'b, R>(&'b mut self, walk: Walk, f: impl FnOnce(&mut Context<'b>) -> R) -> R {
        // Field by field: the copy borrows `rng` for 'b, the rest is shared.
        let Context {
            set,
            counters,
            reports,
            candidates,
            masked,
            ref mut rng,
            intent,
            request,
            kernel,
            features,
            #[cfg(test)]
            ref reads,
        } = *self;
        let (candidates, kernel) = match (walk, candidates) {
            (Walk::Health, Candidates::Fresh { slots, .. }) => {
                (Candidates::Fresh { slots, lanes: None }, &Kernel::SCALAR)
            }
            (Walk::Health, stale) => (stale, &Kernel::SCALAR),
            // Derived again here, so that an unmasked pick's hot path does
            // not compute the lanes only this copy reads.
            (Walk::Full, _) if !masked => (Candidates::whole(set), kernel),
            (Walk::Full, c) => (c, kernel),
        };
        let mut cx = Context {
            set,
            counters,
            reports,
            candidates,
            masked,
            rng,
            intent,
            request,
            kernel,
            features,
            #[cfg(test)]
            reads: core::cell::Cell::new(reads.get()),
        };
        let out = f(&mut cx);
        #[cfg(test)]
        reads.set(cx.reads.get());
        out
    }
}
