use crate::affinity::ring::Ring;
use crate::affinity::admitted;
use crate::context::{Context, Intent};
use crate::error::Error;
use crate::selectors::{Builtin, Choice, Configure, Selector};

/// Below this many candidates every pick sums the loads itself: the scan is
/// as cheap as reading a cached total.
const CACHE_FROM: usize = 64;

/// A pick of a pool of `n ≥ CACHE_FROM` candidates rescans the total with
/// probability `REFRESH / n`: about `REFRESH` counter loads per pick,
/// amortised, and a total at most ~`n / REFRESH` bookings old.
const REFRESH: u32 = 8;

/// Consistent hashing with bounded loads: a request's key picks a point on a
/// ring of the candidates, and the pick walks the ring from there to the
/// first healthy candidate whose load is at most
/// `⌈f/100 · (total + r) / n⌉` — `f` the balance factor in percent
/// (`1 + ε`, HAProxy's and Envoy's `hash-balance-factor`), `total` the
/// healthy candidates' load, `r` the request's weight, `n` their count. With
/// capacity weights, worker `i`'s bound is `⌈f/100 · (total + r) · cᵢ / Σc⌉`.
/// Balance factor 0 is plain consistent hashing (no bound).
///
/// The pool must build the ring: call
/// [`Pool::enable_affinity`](crate::Pool::enable_affinity) once. Pools that
/// never do pay nothing for this mode, and its picks there go to the
/// least-loaded candidate, keys ignored (so that code which runs every
/// [`Mode`](crate::Mode) on any pool keeps working). Removing a worker moves
/// only the keys whose first choice it was; adding one takes about
/// `1/(n + 1)` of the keys. Draining workers are not on the ring; unhealthy
/// ones are skipped; a mask narrows the walk to its workers. A request
/// without a key goes to the least-loaded candidate.
///
/// The booking is validated against the load the bound was checked on (a
/// compare-and-swap, as for [`LeastLoaded`](crate::LeastLoaded)). In pools
/// of 64 candidates or more, unmasked picks read a cached total that each
/// pick rescans with probability `8/n`; see
/// [`docs::affinity`](crate::docs::affinity) for why and how stale it can be.
///
/// ```
/// use workerpick::{Affinity, Pool, Request};
/// let pool = Pool::from_workers(0..8).unwrap();
/// pool.enable_affinity();
/// let mode = Affinity::new();
/// let first = pool.preview_with(&mode, &Request::new().key(42)).unwrap();
/// // The same key goes to the same worker while it has room …
/// let held = pool.reserve_with(&mode, &Request::new().key(42)).unwrap();
/// assert_eq!(*held.worker(), first);
/// // … and elsewhere once it is over ⌈1.25 · (total + 1) / 8⌉.
/// let more: Vec<_> = (0..3).map(|_| pool.reserve_with(&mode, &Request::new().key(42)).unwrap()).collect();
/// assert!(more.iter().any(|r| *r.worker() != first));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Affinity {
    factor: u32,
}

impl Affinity {
    /// The balance factor [`new`](Self::new) uses, in percent (ε = 0.25).
    pub const DEFAULT_BALANCE_FACTOR: u32 = 125;

    /// Bounded-load affinity with balance factor 125 % (ε = 0.25).
    pub const fn new() -> Self {
        Self {
            factor: Self::DEFAULT_BALANCE_FACTOR,
        }
    }

    /// Plain consistent hashing: every key to its first healthy candidate,
    /// however loaded.
    pub const fn unbounded() -> Self {
        Self { factor: 0 }
    }

    /// Bounded-load affinity with balance factor `percent` = 100 · (1 + ε);
    /// 0 is [`unbounded`](Self::unbounded). Values 1 to 99 would bound every
    /// worker below the average and are refused.
    ///
    /// ```
    /// use workerpick::Affinity;
    /// assert_eq!(Affinity::with_balance_factor(200).unwrap().balance_factor(), 200);
    /// assert!(Affinity::with_balance_factor(50).is_err());
    /// ```
    pub fn with_balance_factor(percent: u32) -> Result<Self, Error> {
        if (1..100).contains(&percent) {
            return Err(Error::InvalidConfig {
                what: "balance-factor",
                why: format!("{percent} % is below the average load; use 0 (no bound) or at least 100"),
            });
        }
        Ok(Self { factor: percent })
    }

    /// The balance factor in percent (0: unbounded).
    pub const fn balance_factor(&self) -> u32 {
        self.factor
    }
}

impl Default for Affinity {
    fn default() -> Self {
        Self::new()
    }
}

/// The load bound of one pick.
#[derive(Clone, Copy)]
enum Bound {
    None,
    /// Every candidate's bound (equal capacities).
    Flat(u64),
    /// `load ≤ ⌈num · c / den⌉`, `c` the candidate's capacity.
    Weighted { num: u128, den: u128 },
}

impl Bound {
    fn of(factor: u32, (total, units): (u64, u64), weight: u32, weighted: bool) -> Self {
        if factor == 0 {
            return Bound::None;
        }
        let num = u128::from(factor) * (u128::from(total) + u128::from(weight));
        let den = 100 * u128::from(units.max(1));
        if weighted {
            return Bound::Weighted { num, den };
        }
        // A 64-bit division when it fits (always, short of 2^57 in flight):
        // a 128-bit one is a library call of tens of ns.
        Bound::Flat(match (u64::try_from(num), u64::try_from(den)) {
            (Ok(num), Ok(den)) => num.div_ceil(den),
            _ => u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX),
        })
    }

    #[inline(always)]
    fn admits(self, load: u32, capacity: u32) -> bool {
        match self {
            Bound::None => true,
            Bound::Flat(cap) => u64::from(load) <= cap,
            // load ≤ ⌈x / den⌉ ⟺ load · den < x + den.
            Bound::Weighted { num, den } => u128::from(load) * den < num * u128::from(capacity) + den,
        }
    }
}

/// The healthy candidates' load and capacity units, summed now.
fn scan(cx: &Context<'_>) -> (u64, u64) {
    let (mut load, mut units) = (0u64, 0u64);
    let (marks, weighted) = (cx.health_any(), cx.set.weights.is_some());
    if !marks && !weighted {
        // The common case: every candidate counts, each for one unit.
        for i in 0..cx.len() {
            let Some(slot) = cx.candidate(i) else { break };
            load += u64::from(cx.load(slot));
        }
        return (load, cx.len() as u64);
    }
    for i in 0..cx.len() {
        let Some(slot) = cx.candidate(i) else { break };
        if !marks || cx.is_healthy(slot) {
            load += u64::from(cx.load(slot));
            units += u64::from(cx.capacity(slot));
        }
    }
    (load, units)
}

impl Affinity {
    /// The first admitted, healthy candidate on the ring from `key` that
    /// fits `bound`.
    #[inline(always)]
    fn walk<'a>(cx: &Context<'a>, ring: &Ring, key: u64, bound: Bound) -> Option<Choice<'a>> {
        let len = ring.len();
        let mut i = ring.start(key);
        let mut last = u32::MAX;
        let marks = cx.health_any();
        // Each point once at most: a full turn visits every candidate.
        for _ in 0..len {
            let owner = ring.owner(i);
            if owner != last {
                last = owner;
                if let Some(slot) = admitted(cx, owner)
                    && (!marks || cx.is_healthy(slot))
                {
                    let load = cx.load(slot);
                    if bound.admits(load, cx.capacity(slot)) {
                        return Some(Choice::validated(slot, load));
                    }
                }
            }
            i += 1;
            if i == len {
                i = 0;
            }
        }
        None
    }
}

impl Selector for Affinity {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let (Some(ring), Some(key)) = (cx.set.affinity.as_deref(), cx.request().get_key()) else {
            let (slot, load) = cx.least_loaded()?;
            return Some(Choice::validated(slot, load));
        };
        if ring.len() == 0 {
            return None;
        }
        let weight = cx.request().get_weight();
        let weighted = cx.set.weights.is_some();
        if self.factor == 0 {
            return Self::walk(cx, ring, key, Bound::None);
        }
        let n = cx.len();
        let cached = !cx.is_masked() && n >= CACHE_FROM;
        let mut stale = false;
        let totals = match ring.cached() {
            Some(t) if cached && cx.rng().below(n as u32) >= REFRESH => {
                stale = true;
                t
            }
            _ => {
                let t = scan(cx);
                if cached && cx.intent() != Intent::Preview {
                    ring.store(t.0, t.1);
                }
                t
            }
        };
        if let Some(c) = Self::walk(cx, ring, key, Bound::of(self.factor, totals, weight, weighted)) {
            return Some(c);
        }
        // Nobody fits: a cached total older than the load (or every
        // candidate unhealthy). Once more on a fresh total, then the least
        // loaded (healthy first: the unhealthy carry `UNHEALTHY_LOAD`).
        if stale {
            let t = scan(cx);
            if cx.intent() != Intent::Preview {
                ring.store(t.0, t.1);
            }
            if let Some(c) = Self::walk(cx, ring, key, Bound::of(self.factor, t, weight, weighted)) {
                return Some(c);
            }
        }
        let (slot, load) = cx.least_loaded()?;
        Some(Choice::validated(slot, load))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Affinity {
    const PARAMETERS: &'static [&'static str] = &["balance-factor"];

    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        Self::with_balance_factor(param("balance-factor")?.unwrap_or(Self::DEFAULT_BALANCE_FACTOR))
    }
}
