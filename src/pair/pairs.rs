//! Pair picks: preview the decode worker, decide, book both sides or neither.

use super::decider::{Decider, Plan};
use super::reservation::PairReservation;
use super::side::{PairGuard, PairHandle};
use crate::error::Error;
use crate::pool::Pool;
use crate::request::Request;
use crate::selectors::Selector;
use core::hash::Hash;

/// One request to a pair: the prefill pool's side (its weight is the
/// prefill's load) and the decode pool's (its weight is the decode's load;
/// its [`CacheHits`](crate::CacheHits), built from the decode pool, say what
/// each decode worker has cached), and optionally the caller's own [`Plan`].
#[derive(Clone, Copy, Debug)]
pub struct PairRequest<'a> {
    prefill: Request<'a>,
    decode: Request<'a>,
    plan: Option<Plan>,
}

impl<'a> PairRequest<'a> {
    /// A request whose plan the [`Decider`] makes.
    pub fn new(prefill: Request<'a>, decode: Request<'a>) -> Self {
        Self {
            prefill,
            decode,
            plan: None,
        }
    }

    /// The caller's plan, instead of the decider's.
    pub fn plan(mut self, plan: Plan) -> Self {
        self.plan = Some(plan);
        self
    }

    /// The prefill pool's side.
    pub fn get_prefill(&self) -> &Request<'a> {
        &self.prefill
    }

    /// The decode pool's side.
    pub fn get_decode(&self) -> &Request<'a> {
        &self.decode
    }

    /// The caller's plan, if [`plan`](Self::plan) set one.
    pub fn get_plan(&self) -> Option<Plan> {
        self.plan
    }

    /// Tokens rank `rank()` of `worker` of `pool` would prefill itself (see
    /// [`Decider`]); the rank is asked only where cache hits need it.
    fn uncached<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        pool: &Pool<W>,
        worker: &W,
        rank: impl FnOnce() -> u32,
    ) -> u32 {
        match self.decode.get_cache_hits() {
            Some(hits) => hits
                .needed()
                .saturating_sub(hits.held_by_rank(pool, worker, rank())),
            None => self.prefill.get_weight(),
        }
    }

    fn decide<W: Clone + Eq + Hash + Send + Sync>(
        &self,
        decider: &Decider,
        pool: &Pool<W>,
        worker: &W,
        rank: impl FnOnce() -> u32,
    ) -> (u32, Plan) {
        let uncached = self.uncached(pool, worker, rank);
        (uncached, self.plan.unwrap_or_else(|| decider.decide(uncached)))
    }
}

/// What a pair pick would do now, found with no side effect: the decode
/// worker and its data-parallel rank, its load as seen, its uncached tokens
/// and the plan.
///
/// Change the plan with [`decide`](Self::decide), then book it with
/// [`Pairs::admit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairPreview<D> {
    decode: D,
    rank: u32,
    load: u32,
    uncached: u32,
    plan: Plan,
    by_caller: bool,
}

impl<D> PairPreview<D> {
    /// The decode worker the pick would choose.
    pub fn decode(&self) -> &D {
        &self.decode
    }

    /// The decode worker's rank the pick would choose (0 for a worker
    /// without ranks).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The in-flight load of the decode worker's rank when previewed.
    pub fn load(&self) -> u32 {
        self.load
    }

    /// The tokens it would have to prefill itself.
    pub fn uncached(&self) -> u32 {
        self.uncached
    }

    /// The plan: the decider's, or the caller's.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// The caller's decision, kept by [`Pairs::admit`] even when it picks
    /// another decode worker.
    pub fn decide(mut self, plan: Plan) -> Self {
        self.plan = plan;
        self.by_caller = true;
        self
    }
}

/// Pair picks over a prefill pool and a decode pool, through one handle on
/// each ([`Handle`](crate::Handle)s or [`OwnedHandle`](crate::OwnedHandle)s), in any
/// modes, with a [`Decider`] for requests that bring no plan of their own.
///
/// Dynamo's flow is [`preview`](Self::preview), then [`admit`](Self::admit);
/// [`reserve`](Self::reserve) does both in one pick. Either books both sides
/// or neither: when the second booking fails (an empty or draining pool, a
/// worker removed meanwhile, a load overflow) the first is given back before
/// the error returns.
///
/// ```
/// use workerpick::pairs::{Decider, PairRequest, Pairs, Plan};
/// use workerpick::{CacheHits, LeastLoaded, Pool, Request};
/// let prefill = Pool::from_workers(["p0", "p1"]).unwrap();
/// let decode = Pool::from_workers(["d0", "d1"]).unwrap();
/// let _busy = decode.reserve_worker(&"d1", 8).unwrap();
/// let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(2));
///
/// // 16 KV blocks needed; d0 holds 15 of them: 1 uncached block, prefill locally.
/// let hits = CacheHits::build(&decode, 16, |w| if *w == "d0" { 15 } else { 0 });
/// let req = PairRequest::new(Request::new().weight(64), Request::new().cache_hits(&hits));
/// let seen = pairs.preview(&LeastLoaded::new(), &req).unwrap();
/// assert_eq!((*seen.decode(), seen.uncached(), seen.plan()), ("d0", 1, Plan::Local));
/// assert_eq!(decode.in_flight(&"d0"), Some(0)); // a preview books nothing
///
/// // The caller overrides the decider, then admits what it saw.
/// let pair = pairs.admit(&seen.decide(Plan::Disaggregate), &LeastLoaded::new(), &LeastLoaded::new(), &req).unwrap();
/// assert_eq!((pair.plan(), *pair.decode()), (Plan::Disaggregate, "d0"));
/// assert_eq!(prefill.loads().iter().map(|&(_, l)| l).sum::<u32>(), 64);
/// ```
#[derive(Debug)]
pub struct Pairs<HP, HD> {
    prefill: HP,
    decode: HD,
    decider: Decider,
}

impl<HP: PairHandle, HD: PairHandle> Pairs<HP, HD> {
    /// Pairs over `prefill`'s pool and `decode`'s.
    pub fn new(prefill: HP, decode: HD, decider: Decider) -> Self {
        Self {
            prefill,
            decode,
            decider,
        }
    }

    /// The decider.
    pub fn decider(&self) -> Decider {
        self.decider
    }

    /// The prefill pool's handle.
    pub fn prefill_handle(&mut self) -> &mut HP {
        &mut self.prefill
    }

    /// The decode pool's handle.
    pub fn decode_handle(&mut self) -> &mut HD {
        &mut self.decode
    }

    /// The decode worker `decode_selector` would choose for `request` now,
    /// and the plan for it; nothing is booked and no cursor moves (see
    /// [`Pool::preview`]). Clones the worker.
    pub fn preview<S: Selector + ?Sized>(
        &mut self,
        decode_selector: &S,
        request: &PairRequest<'_>,
    ) -> Result<PairPreview<HD::Worker>, Error> {
        let (worker, rank, load) = self
            .decode
            .pair_preview_loaded(decode_selector, &request.decode)?;
        let worker = worker.clone();
        let (uncached, plan) = request.decide(&self.decider, self.decode.pair_pool(), &worker, || rank);
        Ok(PairPreview {
            decode: worker,
            rank,
            load,
            uncached,
            plan,
            by_caller: request.plan.is_some(),
        })
    }

    /// Books what `preview` saw when the previewed decode worker's rank's
    /// load is still the one seen (and it still takes bookings): that rank, with
    /// the preview's plan. Otherwise the choice is stale: it picks the
    /// decode worker again and decides again for it (a plan the caller set
    /// stays). Then it books the prefill side: both or neither.
    pub fn admit<SP: Selector + ?Sized, SD: Selector + ?Sized>(
        &mut self,
        preview: &PairPreview<HD::Worker>,
        prefill_selector: &SP,
        decode_selector: &SD,
        request: &PairRequest<'_>,
    ) -> Result<PairReservation<HP::Guard, HD::Guard>, Error> {
        let weight = request.decode.get_weight();
        let unchanged = self.decode.pair_rank_load(&preview.decode, preview.rank) == Some(preview.load);
        let booked = if unchanged {
            self.decode
                .pair_reserve_rank(&preview.decode, preview.rank, weight)
                .ok()
        } else {
            None
        };
        let (decode, plan) = match booked {
            Some(decode) => (decode, preview.plan),
            None => {
                let decode = self.decode.pair_reserve(decode_selector, &request.decode)?;
                let plan = if preview.by_caller {
                    preview.plan
                } else {
                    request
                        .decide(&self.decider, self.decode.pair_pool(), decode.worker(), || {
                            decode.rank()
                        })
                        .1
                };
                (decode, plan)
            }
        };
        self.book_prefill(decode, plan, prefill_selector, request)
    }

    /// Picks and books a pair in one go: the decode worker first, then the
    /// plan for it, then the prefill side; both or neither.
    #[inline(always)]
    pub fn reserve<SP: Selector + ?Sized, SD: Selector + ?Sized>(
        &mut self,
        prefill_selector: &SP,
        decode_selector: &SD,
        request: &PairRequest<'_>,
    ) -> Result<PairReservation<HP::Guard, HD::Guard>, Error> {
        let decode = self.decode.pair_reserve(decode_selector, &request.decode)?;
        let plan = match request.plan {
            Some(plan) => plan,
            None => {
                request
                    .decide(&self.decider, self.decode.pair_pool(), decode.worker(), || {
                        decode.rank()
                    })
                    .1
            }
        };
        self.book_prefill(decode, plan, prefill_selector, request)
    }

    /// Books the prefill side for `decode`, already booked; on failure
    /// `decode` drops here, so nothing stays booked.
    #[inline(always)]
    fn book_prefill<SP: Selector + ?Sized>(
        &mut self,
        decode: HD::Guard,
        plan: Plan,
        prefill_selector: &SP,
        request: &PairRequest<'_>,
    ) -> Result<PairReservation<HP::Guard, HD::Guard>, Error> {
        match plan {
            Plan::Local => {
                // Charged in its place in the pair (which gives it back if the
                // charge fails), not before the move: a charge through
                // `&mut decode` kept `decode` on the stack for both plans, and
                // its move into the pair then read back two stores with one
                // 16-byte load (a store-forwarding stall on the hot path).
                let share = request.prefill.get_weight();
                let mut pair = PairReservation::local(decode);
                pair.decode_guard_mut().add_charge(share)?;
                pair.set_local_share(share);
                Ok(pair)
            }
            Plan::Disaggregate => {
                let prefill = self.prefill.pair_reserve(prefill_selector, &request.prefill)?;
                Ok(PairReservation::disaggregated(prefill, decode))
            }
        }
    }
}
