//! Least-loaded when its answer is unhealthy: every candidate it compared
//! was unhealthy, a mark is short of its penalty, or a healthy load reached
//! the penalty's range. Exact, by health first and then by own load.

use crate::context::{Context, Slot};
use crate::selectors::rules::least_by_health;

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
        least_by_health(self)
    }
}
