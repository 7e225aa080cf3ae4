use crate::candidates::{Candidates, admits, still_eligible};
use crate::context::{Context, Intent, Slot};
use crate::snapshot::ring::Ring;
use crate::error::Error;
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::sync::atomic::Ordering::Relaxed;
use core::cell::Cell;

/// Below this many candidates a pick that needs the total sums the loads
/// itself: the scan is as cheap as reading a cached total.
const CACHE_FROM: usize = 64;

/// A pick of a pool of `n ≥ CACHE_FROM` candidates retires the cached total
/// with probability `REFRESH / n`, and the next pick that needs one rescans:
/// at most `REFRESH` counter loads per pick, amortised, and a total about
/// `n / REFRESH` picks old.
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
/// compare-and-swap, as for [`LeastLoaded`](crate::LeastLoaded)). A worker
/// with nothing in flight fits any bound, so a key whose worker is idle
/// needs no total. In pools of 64 candidates or more, unmasked picks that
/// need one read a total cached on the ring, which each pick retires with
/// probability `8/n`: a cached total serves a run of picks of mean `n/8`
/// (more than `k` with probability `(1 − 8/n)^k`). Bookings since its scan
/// only make the bound stricter; load released since its scan, `D`, makes
/// it `⌈f/100 · (total + D + r) / n⌉` against the live total until a pick
/// retires it. See [`docs::affinity`](crate::docs::affinity) for why.
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
    /// however loaded (the least-loaded candidate when every one is
    /// unhealthy).
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

/// The load bound of one pick: a candidate of capacity `c` fits when
/// `load ≤ ⌈num · c / den⌉`, i.e. `load · den < num · c + den` — a multiply
/// per candidate compared, no division (a 64-bit one is ~10–40 cycles, a
/// 128-bit one a library call).
#[derive(Clone, Copy)]
enum Bound {
    None,
    /// Equal capacities (`c` = 1). `num < 2^41 · (total + r)` and
    /// `den ≤ 100 · 2^32`: the products fit in 128 bits.
    Flat { num: u128, den: u128 },
    Weighted { num: u128, den: u128 },
}

impl Bound {
    #[inline(always)]
    fn of(factor: u32, (total, units): (u64, u64), weight: u32, weighted: bool) -> Self {
        if factor == 0 {
            return Bound::None;
        }
        let num = u128::from(factor) * (u128::from(total) + u128::from(weight));
        let den = 100 * u128::from(units.max(1));
        if weighted {
            Bound::Weighted { num, den }
        } else {
            Bound::Flat { num, den }
        }
    }

    #[inline(always)]
    fn admits(self, load: u32, capacity: u32) -> bool {
        match self {
            Bound::None => true,
            Bound::Flat { num, den } => u128::from(load) * den < num + den,
            Bound::Weighted { num, den } => u128::from(load) * den < num * u128::from(capacity) + den,
        }
    }
}

/// Every candidate of `cx`, in set order: one pass, also over a stale mask
/// (where `Context::candidate(i)` filters from the start each time).
fn each<'a>(cx: &Context<'a>) -> impl Iterator<Item = Slot<'a>> {
    let (fresh, stale) = match cx.candidates {
        Candidates::Fresh { slots, .. } => (slots, None),
        Candidates::Stale { mask, .. } => (&[][..], Some(mask)),
    };
    let set = cx.set;
    let stale = stale.into_iter().flat_map(move |mask| {
        (0..mask.slots.len())
            .filter(move |&j| still_eligible(set, mask, j))
            .map(move |j| mask.slots[j])
    });
    fresh.iter().copied().chain(stale).map(Slot::new)
}

/// The healthy candidates' load and capacity units, summed now.
fn scan(cx: &Context<'_>) -> (u64, u64) {
    let (marks, weighted) = (cx.health_any(), cx.set.weights.is_some());
    if !marks && !weighted {
        // The common case: every candidate counts, each for one unit. The
        // whole of a dense set is its first counters: a plain loop over them.
        let load = match cx.candidates {
            Candidates::Fresh { slots, lanes: None } => {
                let counters = cx.counters.slice(slots.len());
                counters.iter().map(|c| u64::from(c.load(Relaxed))).sum()
            }
            _ => each(cx).map(|s| u64::from(cx.load(s))).sum(),
        };
        return (load, cx.len() as u64);
    }
    let (mut load, mut units) = (0u64, 0u64);
    for slot in each(cx).filter(|&s| !marks || cx.is_healthy(s)) {
        load += u64::from(cx.load(slot));
        units += u64::from(cx.capacity(slot));
    }
    (load, units)
}

impl Affinity {
    /// The first admitted, healthy candidate on the ring from entry `start`
    /// that fits the bound `of` gives, which it asks for only when a
    /// candidate is busy: an idle one fits any bound (`0 ≤ ⌈x⌉` for `x ≥ 0`),
    /// so a key whose worker is idle costs no total.
    #[inline(always)]
    fn walk<'a>(cx: &Context<'a>, ring: &Ring, start: usize, of: impl FnOnce() -> Bound) -> Option<Choice<'a>> {
        let len = ring.len();
        let mut i = start;
        let mut last = u32::MAX;
        let marks = cx.health_any();
        let (mut bound, mut of) = (None, Some(of));
        // Each entry once at most: a full turn visits every candidate.
        for _ in 0..len {
            let owner = ring.owner(i);
            if owner != last {
                last = owner;
                if let Some(slot) = admitted(cx, owner)
                    && (!marks || cx.is_healthy(slot))
                {
                    let load = cx.load(slot);
                    if load == 0 {
                        return Some(Choice::validated(slot, load));
                    }
                    let b = *bound.get_or_insert_with(|| of.take().map_or(Bound::None, |f| f()));
                    if b.admits(load, cx.capacity(slot)) {
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
        let start = ring.start(key);
        if self.factor == 0 {
            // With every candidate unhealthy the walk finds none: the least
            // loaded, as a bounded pick that nobody fits.
            if let Some(c) = Self::walk(cx, ring, start, || Bound::None) {
                return Some(c);
            }
            let (slot, load) = cx.least_loaded()?;
            return Some(Choice::validated(slot, load));
        }
        let (factor, weight, weighted) = (self.factor, cx.request().get_weight(), cx.set.weights.is_some());
        let n = cx.len();
        // Large unmasked pools read the total cached on the ring; every pick
        // retires it with probability `REFRESH / n`, and the next pick that
        // needs a total then rescans and stores it. Smaller or masked pools
        // sum their candidates whenever the walk asks. Previews store nothing.
        let large = !cx.is_masked() && n >= CACHE_FROM;
        let retire = large && cx.rng().below(n as u32) < REFRESH;
        let preview = cx.intent() == Intent::Preview;
        // The common case, ahead of the walk's set-up: unmasked, no worker
        // marked unhealthy, and the key's first worker (a candidate: the
        // ring is built over them) idle, which fits any bound.
        if !cx.is_masked() && !cx.health_any() {
            let slot = Slot::new(ring.owner(start));
            let load = cx.load(slot);
            if load == 0 {
                if retire && !preview {
                    ring.retire();
                }
                return Some(Choice::validated(slot, load));
            }
        }
        // Which total the walk asked for: `Some(true)` the cached one.
        let asked = Cell::new(None);
        let totals = |cx: &Context<'_>| {
            if large
                && !retire
                && let Some(t) = ring.cached()
            {
                asked.set(Some(true));
                return t;
            }
            asked.set(Some(false));
            let t = scan(cx);
            if large && !preview {
                ring.store(t.0, t.1);
            }
            t
        };
        let found = Self::walk(cx, ring, start, || Bound::of(factor, totals(cx), weight, weighted));
        if retire && asked.get().is_none() && !preview {
            ring.retire();
        }
        if found.is_some() {
            return found;
        }
        // Nobody fits: a cached total older than the load (or every
        // candidate unhealthy). Once more on a fresh total, then the least
        // loaded (healthy first: the unhealthy carry `UNHEALTHY_LOAD`).
        if asked.get() == Some(true) {
            let t = scan(cx);
            if !preview {
                ring.store(t.0, t.1);
            }
            if let Some(c) = Self::walk(cx, ring, start, || Bound::of(factor, t, weight, weighted)) {
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
    const LOAD_RULE: Option<&'static str> = Some("sends each request to its key's place on the ring, passing over workers above the load bound");
    const SPLITS_EVENLY: bool = false;
    const PARAMETERS: &'static [&'static str] = &["balance-factor"];

    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        Self::with_balance_factor(param("balance-factor")?.unwrap_or(Self::DEFAULT_BALANCE_FACTOR))
    }
}

/// `index` as a candidate of this pick, if the pick's candidates include it
/// (see [`admits`]).
#[inline(always)]
fn admitted<'a>(cx: &Context<'a>, index: u32) -> Option<Slot<'a>> {
    admits(cx.set, &cx.candidates, index).then(|| Slot::new(index))
}
