//! Least-loaded when its answer is unhealthy: every candidate it compared
//! was unhealthy, a mark is short of its penalty, or a healthy load reached
//! the penalty's range. Exact, by health first and then by own load.

use crate::context::{Context, Slot, below, same};
use crate::load::ratio::Ratio;
use crate::sync::atomic::Ordering::Relaxed;

impl<'a> Context<'a> {
    /// Least-loaded when its answer is unhealthy: the least-loaded healthy
    /// candidate while one is; else (every candidate unhealthy) the scan's
    /// answer `found` if every mark carries its whole penalty (equal offsets
    /// keep the healthy fleet's order), or the least by own load.
    #[cold]
    #[inline(never)]
    pub(super) fn least_unhealthy(&mut self, found: (Slot<'a>, u32)) -> Option<(Slot<'a>, u32)> {
        if self.weights().is_none() && !self.reports.health.any_short() && !self.any_healthy_candidate() {
            return Some(found);
        }
        self.least_by_health()
    }

    /// The exact least candidate by [`weigh`](Self::weigh), ties uniform (one
    /// draw, none when unique); the load returned is the counter read.
    pub(crate) fn least_by_health(&mut self) -> Option<(Slot<'a>, u32)> {
        let mut least: Option<((bool, Ratio), Slot<'a>, u32)> = None;
        let mut ties = 0;
        for i in 0..self.len() {
            let slot = self.candidate(i)?;
            let load = self.counters.get(slot.index()).load(Relaxed);
            let key = self.weigh(slot, load);
            match least {
                Some((m, _, _)) if same(key, m) => ties += 1,
                Some((m, _, _)) if !below(key, m) => {}
                _ => {
                    least = Some((key, slot, load));
                    ties = 1;
                }
            }
        }
        let (key, first, load) = least?;
        if ties > 1 {
            let mut k = self.rng.below(ties);
            for i in 0..self.len() {
                let slot = self.candidate(i)?;
                let now = self.counters.get(slot.index()).load(Relaxed);
                if same(self.weigh(slot, now), key) {
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
