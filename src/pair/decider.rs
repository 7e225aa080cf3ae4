/// Where a request's prefill runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plan {
    /// The decode worker prefills the prompt itself: one booking, on the
    /// decode pool, whose prefill share is given back at the hand-off.
    Local,
    /// A prefill worker from the prefill pool runs the prefill and hands the
    /// KV cache over: two bookings, one per pool.
    Disaggregate,
}

/// llm-d's rule: disaggregate when the decode worker would have to compute
/// more than `threshold` uncached tokens itself, else prefill locally.
///
/// The uncached tokens are what the decode request's
/// [`CacheHits`](crate::CacheHits) say the chosen decode worker lacks
/// (`needed − held`, in the cache index's unit); without cache hits nothing
/// is known cached, and the prefill request's weight stands for them.
///
/// ```
/// use workerpick::pairs::{Decider, Plan};
/// let d = Decider::new(256);
/// assert_eq!(d.decide(256), Plan::Local);
/// assert_eq!(d.decide(257), Plan::Disaggregate);
/// assert_eq!(Decider::never().decide(u32::MAX), Plan::Local);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decider {
    threshold: u32,
}

impl Decider {
    /// Disaggregates above `threshold` uncached tokens.
    pub const fn new(threshold: u32) -> Self {
        Self { threshold }
    }

    /// Never disaggregates (an aggregated fleet).
    pub const fn never() -> Self {
        Self::new(u32::MAX)
    }

    /// The threshold.
    pub const fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The plan for `uncached` tokens on the decode choice.
    #[inline]
    pub const fn decide(&self, uncached: u32) -> Plan {
        if uncached > self.threshold {
            Plan::Disaggregate
        } else {
            Plan::Local
        }
    }
}

impl Default for Decider {
    /// A threshold of 0: any uncached token sends the prefill away.
    fn default() -> Self {
        Self::new(0)
    }
}
