//! The cost mode: per candidate, load less weighted cache credit, then the
//! minimum (`T = 0`) or a range-normalised softmax draw (`T > 0`). The rule
//! and its arithmetic are in [`docs::llm`](crate::docs::llm).

mod pass;
// Statistics and property tests over safe code: too slow under Miri, and the
// scan they call is covered there by its own tests.
#[cfg(all(test, not(miri)))]
mod tests;

use crate::context::Context;
use crate::error::Error;
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::credit::tuning::{CreditWeight, Temperature};

/// Routes each request by a cost that weighs the blocks of its prompt a
/// worker already caches against that worker's load: Dynamo's KV selector
/// and the main path of LLM routers, with no closure per worker.
///
/// For candidate `i` with load `L_i` (booked plus reported, as every mode
/// reads it) and credit `o_i` (the request's [`CacheHits`](crate::CacheHits)
/// for `i`: the blocks it holds; 0 with none), the cost is
/// `c_i = L_i − α·o_i`, kept exactly as `1000·L_i − α_milli·o_i` in an `i64`
/// (see [`CreditWeight`]: nothing wraps). Dynamo's
/// `α·(request blocks − o_i) + L_i` differs from it by a constant, so both
/// rank and sample alike.
///
/// - **Temperature 0**: the least cost, ties uniform at random, booked with
///   a compare-and-swap on the load it compared (exact as
///   [`LeastLoaded`](crate::LeastLoaded) is). When few workers are
///   credited, the SIMD least-loaded scan over all candidates and a pass over
///   the credited ones give the same minimum without reading every credit.
/// - **Temperature `T > 0`**: `P(i) = exp(−(c_i − c_min)/((c_max − c_min)·T)) / Σ_j …`,
///   uniform when all costs are equal; one draw from the pick's [`Rng`](crate::Rng),
///   three passes, nothing allocated. The chosen worker's booking is
///   validated on its load too.
/// - **Busy threshold**: a candidate whose *reported* load is over it is
///   left out; if all are, the pick fails with
///   [`Error::NoAcceptableWorker`].
/// - **Health**: an unhealthy candidate is chosen only when no healthy one is
///   left (credit cannot outweigh ill health); masks and draining as in
///   every mode. Capacity weights are not applied: costs compare loads in the
///   units they are booked in (blocks, tokens), as Dynamo's do.
///
/// The weight and temperature set here are the defaults; a request overrides
/// them with [`Request::credit_weight`](crate::Request::credit_weight) and
/// [`Request::temperature`](crate::Request::temperature).
///
/// ```
/// use workerpick::{CacheHits, Cost, Pool, Request};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let _busy = pool.reserve_worker(&"b", 3).unwrap(); // b: load 3
/// let mut hits = CacheHits::new();
/// // The request's prompt is 8 blocks; b caches 5 of them, c 1.
/// hits.rebuild_sparse(&pool, 8, [(&"b", 5), (&"c", 1)]);
/// // Costs (α = 1): a 0, b 3 − 5 = −2, c 0 − 1 = −1.
/// let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
/// assert_eq!(*r.worker(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    weight: CreditWeight,
    temperature: Temperature,
    busy: Option<u32>,
}

impl Cost {
    /// `α = 1`, `T = 0`, no busy threshold.
    pub const fn new() -> Self {
        Self {
            weight: CreditWeight::ONE,
            temperature: Temperature::ZERO,
            busy: None,
        }
    }

    /// With credit weight `weight` (`α`).
    pub const fn with_weight(mut self, weight: CreditWeight) -> Self {
        self.weight = weight;
        self
    }

    /// With temperature `t`.
    ///
    /// ```
    /// use workerpick::tuning::Temperature;
    /// use workerpick::Cost;
    /// let soft = Cost::new().with_temperature(Temperature::new(0.5).unwrap());
    /// assert_eq!(soft.temperature().get(), 0.5);
    /// ```
    pub const fn with_temperature(mut self, t: Temperature) -> Self {
        self.temperature = t;
        self
    }

    /// Leaves out candidates whose reported load (see
    /// [`Pool::report_load`](crate::Pool::report_load)) is over `reported`.
    pub const fn with_busy_threshold(mut self, reported: u32) -> Self {
        self.busy = Some(reported);
        self
    }

    /// The credit weight.
    pub const fn weight(&self) -> CreditWeight {
        self.weight
    }

    /// The temperature.
    pub const fn temperature(&self) -> Temperature {
        self.temperature
    }

    /// The busy threshold, if set.
    pub const fn busy_threshold(&self) -> Option<u32> {
        self.busy
    }
}

impl Default for Cost {
    fn default() -> Self {
        Self::new()
    }
}

impl Selector for Cost {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let tuning = cx.request().tuning;
        let rule = pass::Rule {
            weight: tuning.weight.unwrap_or(self.weight),
            busy: self.busy,
            health: cx.health_any(),
        };
        let t = tuning.temperature.unwrap_or(self.temperature).get();
        if t > 0.0 {
            if let Some(answer) = pass::softmax_sparse(cx, rule, t) {
                return answer;
            }
            return pass::softmax(cx, rule, t);
        }
        if let Some(answer) = pass::minimum_sparse(cx, rule) {
            return answer;
        }
        match pass::minimum_dense(cx, rule) {
            Some(answer) => answer,
            None => pass::minimum(cx, rule),
        }
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Cost {
    const LOAD_RULE: Option<&'static str> = Some("sends each request to the least load less cache credit");
    const SPLITS_EVENLY: bool = true;
    const PARAMETERS: &'static [&'static str] = &["credit-weight-milli", "temperature-milli", "busy-threshold"];

    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        let mut cost = Self::new();
        if let Some(w) = param("credit-weight-milli")? {
            cost = cost.with_weight(CreditWeight::from_milli(w)?);
        }
        if let Some(t) = param("temperature-milli")? {
            cost = cost.with_temperature(Temperature::from_milli(t));
        }
        if let Some(b) = param("busy-threshold")? {
            cost = cost.with_busy_threshold(b);
        }
        Ok(cost)
    }
}
