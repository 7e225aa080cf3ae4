//! Least-loaded for router replicas that share load (replica summaries or
//! workers' reports): this router's own bookings, which it knows exactly, weigh
//! more than the others' reported load, which is a sync period old. See
//! [`docs::load`](crate::docs::load), "Reported load".

use crate::context::{Context, Slot};
use crate::error::Error;
use crate::selectors::{Builtin, Choice, Configure, Selector};

/// Least-loaded over `discount × own + reported`: this pool's own in-flight
/// count at full weight, load reported from outside (peer replicas'
/// summaries, workers' reports) divided by `discount`. Ties are broken
/// uniformly at random; in a weighted pool the score, plus the request, is
/// divided by capacity. With nothing reported it picks as
/// [`LeastLoaded`](crate::LeastLoaded) does.
///
/// Why: replicas whose views of one another are equally stale all see the
/// same worker as the least loaded and send it their next requests at once
/// (herding). Each replica's own bookings differ and are exact, so weighing
/// them more makes the replicas choose differently, and choose on what they
/// know. Counted at full weight (`discount` 1), stale shared load herds; left
/// out, replicas count alone. The simulator's replica scenario measures it:
/// with a sync period of 1/20 of the service time, four replicas stay within
/// 10 % of one router's p99 on identical and on mixed workers. A longer period
/// costs more than any pick rule saves: see the README.
///
/// A scalar pass over the candidates (two counter reads each); the booking
/// is validated on the total load it read, as least-loaded's is.
///
/// ```
/// use workerpick::{Pool, ReplicaLeastLoaded};
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let _mine = pool.reserve_worker(&"a", 1).unwrap(); // a: 1 booked here
/// pool.report_load(&"b", 1); // b: 1 reported by a peer
/// // Equal load, but the peer's counts half: b.
/// assert_eq!(*pool.reserve(&ReplicaLeastLoaded::new()).unwrap().worker(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaLeastLoaded {
    discount: u32,
}

impl ReplicaLeastLoaded {
    /// The largest discount: reported load then barely counts.
    pub const MAX_DISCOUNT: u32 = 1 << 16;

    /// Reported load at half weight (the simulator's best at short periods).
    pub const fn new() -> Self {
        Self { discount: 2 }
    }

    /// Reported load divided by `discount` (1 ..= [`MAX_DISCOUNT`](Self::MAX_DISCOUNT);
    /// 1 is plain least-loaded).
    ///
    /// ```
    /// use workerpick::ReplicaLeastLoaded;
    /// assert!(ReplicaLeastLoaded::with_discount(4).is_ok());
    /// assert!(ReplicaLeastLoaded::with_discount(0).is_err());
    /// ```
    pub fn with_discount(discount: u32) -> Result<Self, Error> {
        if (1..=Self::MAX_DISCOUNT).contains(&discount) {
            Ok(Self { discount })
        } else {
            Err(Error::InvalidConfig {
                what: "replica-least-loaded discount",
                why: format!(
                    "{discount} is outside 1..={}; 1 counts reported load in full, 2 at half",
                    Self::MAX_DISCOUNT
                ),
            })
        }
    }

    /// What reported load is divided by.
    pub const fn discount(&self) -> u32 {
        self.discount
    }
}

impl Default for ReplicaLeastLoaded {
    fn default() -> Self {
        Self::new()
    }
}

impl Selector for ReplicaLeastLoaded {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        // Healthy candidates first; if none is, all of them (as every mode does).
        self.least(cx, true).or_else(|| self.least(cx, false))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for ReplicaLeastLoaded {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the fewest booked, its own bookings over the other replicas' reported load");
    const SPLITS_EVENLY: bool = true;
    const PARAMETERS: &'static [&'static str] = &["discount"];

    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        match param("discount")? {
            Some(discount) => Self::with_discount(discount),
            None => Ok(Self::new()),
        }
    }
}

impl ReplicaLeastLoaded {
    /// The least score among the candidates (the healthy ones if `healthy`),
    /// with the total load read for it.
    fn least<'a>(&self, cx: &mut Context<'a>, healthy: bool) -> Option<Choice<'a>> {
        let d = u128::from(self.discount);
        // (slot, load read, score numerator, capacity), ties counted.
        let mut best: Option<(Slot<'a>, u32, u128, u128)> = None;
        let mut ties = 0u32;
        for i in 0..cx.len() {
            let slot = cx.candidate(i)?;
            if healthy && !cx.is_healthy(slot) {
                continue;
            }
            let load = cx.load(slot);
            let reported = cx.reported_load(slot).min(load);
            // The request itself is an own booking: it counts in full.
            let score = d * u128::from(load - reported + 1) + u128::from(reported);
            let cap = u128::from(cx.capacity(slot).max(1));
            // score / cap against best.score / best.cap, exactly (< 2^82 each side).
            let order = best.map(|(_, _, s, c)| (score * c).cmp(&(s * cap)));
            match order {
                None | Some(core::cmp::Ordering::Less) => {
                    best = Some((slot, load, score, cap));
                    ties = 1;
                }
                Some(core::cmp::Ordering::Equal) => {
                    ties += 1;
                    if cx.rng().below(ties) == 0 {
                        best = Some((slot, load, score, cap));
                    }
                }
                Some(core::cmp::Ordering::Greater) => {}
            }
        }
        best.map(|(slot, load, _, _)| Choice::validated(slot, load))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pool, WorkerInfo};

    #[test]
    fn with_nothing_reported_it_is_least_loaded() {
        let pool = Pool::from_workers(0..4).unwrap();
        let rule = ReplicaLeastLoaded::new();
        let held: Vec<_> = (0..8).map(|_| pool.reserve(&rule).unwrap()).collect();
        assert!((0..4).all(|w| pool.in_flight(&w) == Some(2)));
        drop(held);
    }

    #[test]
    fn own_bookings_weigh_discount_times_reported_load() {
        let pool = Pool::from_workers(["a", "b"]).unwrap();
        let _a = pool.reserve_worker(&"a", 1).unwrap();
        pool.report_load(&"b", 2);
        // a: 2 x (1 + 1) = 4; b: 2 x 1 + 2 = 4: a tie, both are picked.
        let half = ReplicaLeastLoaded::new();
        let picked: std::collections::HashSet<_> = (0..64).map(|_| pool.preview(&half).unwrap()).collect();
        assert_eq!(picked.len(), 2);
        // In full (discount 1): a 2, b 3: always a.
        let full = ReplicaLeastLoaded::with_discount(1).unwrap();
        assert!((0..64).all(|_| pool.preview(&full).unwrap() == "a"));
        // At a quarter: a 8, b 6: always b.
        let quarter = ReplicaLeastLoaded::with_discount(4).unwrap();
        assert!((0..64).all(|_| pool.preview(&quarter).unwrap() == "b"));
    }

    #[test]
    fn unhealthy_workers_only_when_all_are() {
        let pool = Pool::from_workers(["a", "b"]).unwrap();
        let _b = pool.reserve_worker(&"b", 5).unwrap();
        pool.set_healthy(&"a", false).unwrap();
        let rule = ReplicaLeastLoaded::new();
        assert_eq!(pool.preview(&rule).unwrap(), "b");
        pool.set_healthy(&"b", false).unwrap();
        assert_eq!(pool.preview(&rule).unwrap(), "a");
    }

    #[test]
    fn capacity_divides_the_score() {
        let pool = Pool::new();
        pool.insert_with("big", WorkerInfo::new().capacity(4)).unwrap();
        pool.insert_with("small", WorkerInfo::new()).unwrap();
        let _big = pool.reserve_worker(&"big", 2).unwrap();
        // big: 2 x 3 / 4 = 1.5; small: 2 x 1 / 1 = 2.
        assert_eq!(pool.preview(&ReplicaLeastLoaded::new()).unwrap(), "big");
    }

    #[test]
    fn a_discount_out_of_range_says_so() {
        let e = ReplicaLeastLoaded::with_discount(0).unwrap_err().to_string();
        assert!(e.contains("outside 1..=65536"), "{e}");
        assert!(ReplicaLeastLoaded::with_discount(ReplicaLeastLoaded::MAX_DISCOUNT + 1).is_err());
        assert_eq!(ReplicaLeastLoaded::default().discount(), 2);
    }
}
