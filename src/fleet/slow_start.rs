//! Slow start: a worker that joins (or resumes) works up to its capacity
//! over a window, on Envoy's curve, applied in [`LEVELS`] steps that are each
//! a new snapshot (eighths keep the capacities' least common multiple small
//! for the SIMD scan). Steps are published by writers, or by a reservation
//! now and then while some worker ramps. See
//! [`docs::fleets`](crate::docs::fleets), "Slow start steps".

use crate::snapshot::Member;
use std::time::{Duration, Instant};

/// How many capacity levels a ramp goes through (the last is full capacity).
pub(crate) const LEVELS: u32 = 8;

/// A slow-start configuration (see [`Pool::set_slow_start`](crate::Pool::set_slow_start)).
///
/// ```
/// use std::time::Duration;
/// use workerpick::SlowStart;
/// let ramp = SlowStart::new(Duration::from_secs(30)).aggression(2.0).min_weight_percent(5);
/// assert_eq!(ramp.window(), Duration::from_secs(30));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowStart {
    window: Duration,
    aggression: f64,
    min_percent: u32,
}

impl SlowStart {
    /// A linear ramp (aggression 1) over `window`, starting at 10 % of the
    /// worker's capacity. A window whose steps fall past the range of
    /// [`Instant`] (such as `Duration::MAX`) never ends: the worker keeps the
    /// level it has reached.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            aggression: 1.0,
            min_percent: 10,
        }
    }

    /// The curve's aggression: 1 is linear; the factor is
    /// `(t / window)^(1 / aggression)`, so larger values give the worker more
    /// of its capacity early in the window and smaller ones hold it low for
    /// longer. Values that are not positive and finite are taken as 1.
    pub fn aggression(mut self, aggression: f64) -> Self {
        self.aggression = if aggression.is_finite() && aggression > 0.0 {
            aggression
        } else {
            1.0
        };
        self
    }

    /// The least share of its capacity a ramping worker gets, in percent
    /// (clamped to `1..=100`).
    pub fn min_weight_percent(mut self, percent: u32) -> Self {
        self.min_percent = percent.clamp(1, 100);
        self
    }

    /// The window.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// The level (`1..=LEVELS`) of a worker ramping for `age`.
    pub(crate) fn level(&self, age: Duration) -> u32 {
        if age >= self.window || self.window.is_zero() {
            return LEVELS;
        }
        let t = age.as_secs_f64() / self.window.as_secs_f64();
        let factor = t
            .powf(1.0 / self.aggression)
            .max(f64::from(self.min_percent) / 100.0);
        ((factor * f64::from(LEVELS)).ceil() as u32).clamp(1, LEVELS)
    }

    /// The age at which a worker at `level` moves to the next one.
    pub(crate) fn next_step(&self, level: u32) -> Duration {
        if level >= LEVELS {
            return self.window;
        }
        // The factor passes level / LEVELS at t = window * (level / LEVELS)^aggression.
        // Not `mul_f64`: it panics where the product rounds past `Duration::MAX`.
        let share = (f64::from(level) / f64::from(LEVELS)).powf(self.aggression);
        Duration::try_from_secs_f64(self.window.as_secs_f64() * share.min(1.0))
            .map_or(self.window, |at| at.min(self.window))
    }
}

/// The writer's slow start: the configuration, and the effective capacities it
/// gives members at a given time.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ramp(Option<SlowStart>);

impl Ramp {
    pub(crate) fn new(slow_start: Option<SlowStart>) -> Self {
        Self(slow_start.filter(|s| !s.window.is_zero()))
    }

    /// Whether members that join now ramp.
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Sets each member's effective capacity at `now`, in units of
    /// `1 / LEVELS` of a capacity; returns when the next one changes. Members
    /// past their window (or with no ramp) get `LEVELS` times their capacity.
    pub(crate) fn weigh<'m>(
        &self,
        members: impl Iterator<Item = &'m mut Member>,
        now: Instant,
    ) -> Option<Instant> {
        let mut due: Option<Instant> = None;
        for m in members {
            let capacity = m.info.capacity_weight();
            let level = match (self.0, m.ramp_from) {
                (Some(ramp), Some(from)) => {
                    let age = now.saturating_duration_since(from);
                    let level = ramp.level(age);
                    // A step past the clock's range is never due: the
                    // worker keeps its level (a writer must not panic).
                    let next = ramp
                        .next_step(level)
                        .max(age.saturating_add(Duration::from_millis(1)));
                    if level < LEVELS
                        && !m.draining
                        && let Some(at) = from.checked_add(next)
                    {
                        due = Some(due.map_or(at, |d| d.min(at)));
                    }
                    level
                }
                _ => LEVELS,
            };
            m.weight = capacity * level;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri perturbs powf on purpose; these check levels at their edges"
    )]
    fn linear_ramp_levels() {
        let s = SlowStart::new(Duration::from_secs(8));
        // 10 % floor: level 1 until the factor passes 1/8.
        assert_eq!(s.level(Duration::ZERO), 1);
        assert_eq!(s.level(Duration::from_millis(999)), 1);
        assert_eq!(s.level(Duration::from_millis(1001)), 2);
        assert_eq!(s.level(Duration::from_secs(4)), 4);
        assert_eq!(s.level(Duration::from_millis(7001)), 8);
        assert_eq!(s.level(Duration::from_secs(9)), 8);
        assert_eq!(s.next_step(1), Duration::from_secs(1));
        assert_eq!(s.next_step(4), Duration::from_secs(4));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri perturbs powf on purpose; these check levels at their edges"
    )]
    fn aggression_shapes_the_curve() {
        let linear = SlowStart::new(Duration::from_secs(10));
        let steep = linear.aggression(2.0);
        let half = Duration::from_secs(5);
        // (0.5)^(1/2) = 0.707: the 6th level, against the 4th.
        assert_eq!((steep.level(half), linear.level(half)), (6, 4));
        assert_eq!(linear.aggression(0.5).level(half), 2); // 0.25: held low
        for level in 1..LEVELS {
            let at = steep.next_step(level);
            assert!(steep.level(at + Duration::from_millis(1)) > level);
        }
    }
}
