//! Capacity weights as the picks use them: tables built with each snapshot
//! from the members' effective capacities, and none when all are equal, so
//! that an unweighted pool picks exactly as before: [`alias`] (random),
//! [`schedule`] (round-robin), [`scale`] (least-loaded's SIMD factors);
//! power-of-two needs none. The rules per mode:
//! [`docs::fleets`](crate::docs::fleets), "Weight tables".

pub(crate) mod alias;
pub(crate) mod scale;
pub(crate) mod schedule;

use alias::Alias;
use scale::Scale;
use schedule::Schedule;

/// The weight tables of one snapshot.
pub(crate) struct Weights {
    /// Per slot (padded like the snapshot's lanes): the effective capacity of
    /// the candidate in it, 0 for any other lane.
    pub(crate) capacity: Box<[u32]>,
    /// Weighted random over the candidates, in set order.
    pub(crate) alias: Alias,
    /// Weighted round-robin over the candidates, in set order.
    pub(crate) schedule: Schedule,
    /// The least-loaded scan's per-lane factors, when the capacities' least
    /// common multiple is small enough for them (else the exact scalar path).
    pub(crate) scale: Option<Scale>,
    /// The version under which the writer installed `scale` as the bounds on
    /// scores' factors (`bounds::scores`); 0 when it did not (no factors,
    /// or a pool without a summary).
    pub(crate) version: u32,
}

impl Weights {
    /// The tables for candidates `slots` (set order) of effective capacities
    /// `capacities` over `lanes` lanes; `None` when all capacities are equal
    /// (or there are none): the unweighted picks are then exactly right.
    pub(crate) fn build(lanes: usize, slots: &[u32], capacities: &[u32]) -> Option<Box<Self>> {
        let first = *capacities.first()?;
        if capacities.iter().all(|&c| c == first) {
            return None;
        }
        let g = capacities.iter().fold(0, |g, &c| gcd(g, c));
        let reduced: Vec<u32> = capacities.iter().map(|&c| c / g).collect();
        let mut capacity = vec![0; lanes].into_boxed_slice();
        for (&slot, &c) in slots.iter().zip(&reduced) {
            capacity[slot as usize] = c;
        }
        Some(Box::new(Self {
            alias: Alias::build(&reduced, slots),
            schedule: Schedule::build(&reduced),
            scale: Scale::build(lanes, slots, &reduced),
            capacity,
            version: 0,
        }))
    }

    /// The effective capacity of the candidate in `slot` (reduced by the
    /// capacities' common divisor).
    #[inline(always)]
    pub(crate) fn of(&self, slot: u32) -> u32 {
        self.capacity.get(slot as usize).copied().unwrap_or(0)
    }
}

/// The greatest common divisor (`gcd(0, x) = x`).
pub(crate) fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
