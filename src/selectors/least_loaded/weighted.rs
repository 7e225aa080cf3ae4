//! Weighted least-loaded: the least `(load + r) / capacity`, exactly. The
//! SIMD scan over per-lane scores (`weights::scale`), the per-block bounds on
//! scores for large pools (`bounds`), and the scalar rule they match.

use crate::candidates::Candidates;
use crate::context::{Context, Slot};
use crate::load::ratio::Ratio;
use crate::rng::Rng;
use crate::bounds::least_scored::{Scored, least_scored as bounded};
use crate::scan::{self, Kernel, Least, Weighting};
use crate::storage::counters::Counters;
use crate::bounds::loads::{SUMMARISED_LANES, LoadBounds};
use crate::sync::atomic::Ordering::Relaxed;
use crate::weights::Weights;
use crate::weights::scale::Scale;

impl<'a> Context<'a> {
    /// The weighted least-loaded candidate and its load: the SIMD scan over
    /// the lanes' scores (see [`scale`](super::scale)) when the factors exist
    /// and the candidates are fresh, checked against the counter it names;
    /// else, or when the least score may be clamped, the exact scalar path.
    #[inline(always)]
    pub(super) fn least_weighted(&mut self, w: &'a Weights) -> Option<(Slot<'a>, u32)> {
        let add = self.request.weight;
        if let (Some(scale), Candidates::Fresh { slots, lanes }) = (&w.scale, self.candidates)
            && let Some(limit) = scale.limit(add)
        {
            let counters = self.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
            let weighting = Weighting {
                scale: &scale.scale,
                limit,
                add,
            };
            // Large unmasked pools read per-block bounds on the scores
            // instead (for requests of weight 1: see `bounds::least_scored`).
            if !self.masked
                && w.version != 0
                && add == 1
                && counters.len() >= SUMMARISED_LANES
                && let Some((index, load)) = least_scored(
                    self.backend(),
                    self.counters,
                    self.rng,
                    w,
                    scale,
                    limit,
                    counters.len(),
                    lanes,
                )
            {
                return Some((Slot::new(index), load));
            }
            for _ in 0..4 {
                match scan::least_weighted(self.backend(), counters, lanes, weighting, |m| self.rng.below(m)) {
                    Least::Found { index, min } if min < scale.exact_below() => {
                        // The scan read the counter once; the booking's
                        // compare-and-swap needs the load behind that score.
                        let load = self.counters.get(index as u32).load(Relaxed);
                        if scale.score(index as u32, load, limit, add) == min {
                            return Some((Slot::new(index as u32), load));
                        }
                    }
                    Least::Moved => {}
                    Least::Empty => return None,
                    Least::Found { .. } | Least::Saturated => break,
                }
            }
        }
        self.least_weighted_by(w, |_, _| true)
    }

    /// The exact weighted least-loaded candidate and its load, among those
    /// `keep` admits: the least `(load + r) / capacity`, ties uniform.
    pub(super) fn least_weighted_by(
        &mut self,
        w: &Weights,
        mut keep: impl FnMut(&Self, Slot<'a>) -> bool,
    ) -> Option<(Slot<'a>, u32)> {
        let add = self.request.weight;
        let mut least = LeastRatio::NONE;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) {
                let load = self.counters.get(slot.index()).load(Relaxed);
                least.add(slot, load, Ratio::new(load, add, w.of(slot.index())));
            }
        }
        let (ratio, first, load) = least.least?;
        if least.ties <= 1 {
            return Some((first, load));
        }
        let mut k = self.rng.below(least.ties);
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            if keep(self, slot) {
                let now = self.counters.get(slot.index()).load(Relaxed);
                if Ratio::new(now, add, w.of(slot.index())).eq(ratio) {
                    if k == 0 {
                        return Some((slot, now));
                    }
                    k -= 1;
                }
            }
        }
        Some((first, load))
    }
}


/// The weighted least-loaded pick through the per-block bounds on scores
/// (`bounds::least_scored`) over the first `n` lanes, or `None` when the caller scans
/// flat. Out of line, with the setting up of the pick: only a weighted pool
/// of [`SUMMARISED_LANES`] lanes or more gets here, and inline this would
/// make every pick's caller larger (measured with the callgrind gate).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn least_scored(
    kernel: Kernel,
    counters: &Counters,
    rng: &mut Rng,
    w: &Weights,
    scale: &Scale,
    limit: u32,
    n: usize,
    lanes: Option<&[u32]>,
) -> Option<(u32, u32)> {
    let scores = counters.bounds_for_pick().and_then(LoadBounds::scores)?;
    let scored = Scored {
        weighting: Weighting {
            scale: &scale.scale,
            limit,
            add: 1,
        },
        exact_below: scale.exact_below(),
        version: w.version,
        by_factor: &scale.by_factor,
        classes: &scale.classes,
    };
    bounded(kernel, scores, counters.all(), n, lanes, scored, rng)
}

/// The running least ratio over candidates in order, its tie count and the
/// first candidate holding it (the weighted `Minimum`).
pub(crate) struct LeastRatio<'a> {
    pub(crate) least: Option<(Ratio, Slot<'a>, u32)>,
    pub(crate) ties: u32,
}

impl<'a> LeastRatio<'a> {
    pub(crate) const NONE: Self = Self { least: None, ties: 0 };

    /// Adds `slot`, holding `load`, of ratio `r`.
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: Slot<'a>, load: u32, r: Ratio) {
        match self.least {
            Some((m, _, _)) if r.eq(m) => self.ties += 1,
            Some((m, _, _)) if !r.lt(m) => {}
            _ => {
                self.least = Some((r, slot, load));
                self.ties = 1;
            }
        }
    }
}
