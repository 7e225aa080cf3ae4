use crate::credit::CacheHits;
use crate::credit::tuning::{CreditWeight, Temperature, Tuning};
use crate::eligibility::Eligibility;

/// Per-request inputs to a pick: which workers are eligible, how much load the
/// request charges, and an optional request key for sticky selectors.
///
/// Built on the stack and passed by reference; nothing here allocates.
///
/// ```
/// use workerpick::{LeastLoaded, Pool, Request};
/// let pool = Pool::from_workers(0u32..4).unwrap();
/// let mask = pool.eligibility(|w| *w >= 2);
/// let req = Request::new().eligible(&mask).weight(3);
/// let r = pool.reserve_with(&LeastLoaded::new(), &req).unwrap();
/// assert!(*r.worker() >= 2);
/// assert_eq!(pool.in_flight(r.worker()), Some(3));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub(crate) mask: Option<&'a Eligibility>,
    pub(crate) weight: u32,
    pub(crate) key: Option<u64>,
    pub(crate) cache: Option<&'a CacheHits>,
    pub(crate) tuning: Tuning,
}

impl<'a> Request<'a> {
    /// All workers eligible, weight 1, no key.
    pub const fn new() -> Self {
        Self {
            mask: None,
            weight: 1,
            key: None,
            cache: None,
            tuning: Tuning {
                weight: None,
                temperature: None,
            },
        }
    }

    /// Restricts the candidates to the workers `mask` admits.
    pub const fn eligible(mut self, mask: &'a Eligibility) -> Self {
        self.mask = Some(mask);
        self
    }

    /// The load a reservation charges (token-aware load); `0` charges nothing.
    /// A booking that would take a worker's load past `u32::MAX` fails with
    /// [`Error::LoadOverflow`](crate::Error::LoadOverflow).
    pub const fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// A request key (a session id hash, a prefix hash) for selectors that use one.
    pub const fn key(mut self, key: u64) -> Self {
        self.key = Some(key);
        self
    }

    /// Per-worker cache hits: full hits for the device-aware mode, credit
    /// for the cost mode.
    pub const fn cache_hits(mut self, hits: &'a CacheHits) -> Self {
        self.cache = Some(hits);
        self
    }

    /// The cost mode's credit weight for this request, instead of the mode's.
    ///
    /// ```
    /// use workerpick::tuning::CreditWeight;
    /// use workerpick::{CacheHits, Cost, Pool, Request};
    /// let pool = Pool::from_workers(["a", "b"]).unwrap();
    /// let _load = pool.reserve_worker(&"b", 4).unwrap();
    /// let hits = CacheHits::build(&pool, 4, |w| if *w == "b" { 3 } else { 0 });
    /// let req = Request::new().cache_hits(&hits);
    /// // α = 1: b costs 4 − 3 = 1, more than a's 0.
    /// assert_eq!(pool.select_with(&Cost::new(), &req).unwrap(), "a");
    /// // α = 2: b costs 4 − 6 = −2.
    /// let w = CreditWeight::from_milli(2000).unwrap();
    /// assert_eq!(pool.select_with(&Cost::new(), &req.credit_weight(w)).unwrap(), "b");
    /// ```
    pub const fn credit_weight(mut self, weight: CreditWeight) -> Self {
        self.tuning.weight = Some(weight);
        self
    }

    /// The cost mode's temperature for this request, instead of the mode's.
    pub const fn temperature(mut self, t: Temperature) -> Self {
        self.tuning.temperature = Some(t);
        self
    }

    /// The load a reservation for this request charges, as set by
    /// [`weight`](Self::weight). Getters take `get_` because the builder
    /// already holds the concept's name (as `std::process::Command` does).
    ///
    /// ```
    /// use workerpick::Request;
    /// assert_eq!(Request::new().get_weight(), 1);
    /// assert_eq!(Request::new().weight(512).get_weight(), 512);
    /// ```
    pub const fn get_weight(&self) -> u32 {
        self.weight
    }

    /// The request key, if [`key`](Self::key) set one.
    ///
    /// ```
    /// use workerpick::Request;
    /// assert_eq!(Request::new().key(7).get_key(), Some(7));
    /// assert_eq!(Request::new().get_key(), None);
    /// ```
    pub const fn get_key(&self) -> Option<u64> {
        self.key
    }

    /// The cache hits, if [`cache_hits`](Self::cache_hits) set them.
    ///
    /// ```
    /// use workerpick::Request;
    /// assert!(Request::new().get_cache_hits().is_none());
    /// ```
    pub const fn get_cache_hits(&self) -> Option<&'a CacheHits> {
        self.cache
    }
}

impl Default for Request<'_> {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) const DEFAULT_REQUEST: Request<'static> = Request::new();
