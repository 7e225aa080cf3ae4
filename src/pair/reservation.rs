//! A pair's bookings, each released on its own schedule.

use super::decider::Plan;
use super::side::PairGuard;
use crate::owned::reservation::OwnedReservation;
use core::fmt;

/// The bookings of one prefill/decode pair: the prefill's load is given back
/// at the hand-off ([`hand_off`](Self::hand_off)), the decode's when this
/// drops (at the end of the stream; wrap it in a
/// `ReservedStream` (feature `futures`) to tie the two together).
///
/// For [`Plan::Disaggregate`] it holds a booking on each pool; for
/// [`Plan::Local`] one booking on the decode worker whose prefill share
/// leaves at the hand-off. Each unit of load is given back exactly once.
///
/// ```
/// use workerpick::pairs::{Decider, PairRequest, Pairs, Plan};
/// use workerpick::{LeastLoaded, Pool, Request};
/// let prefill = Pool::from_workers(["p0"]).unwrap();
/// let decode = Pool::from_workers(["d0"]).unwrap();
/// let mut pairs = Pairs::new(prefill.handle(), decode.handle(), Decider::new(128));
/// let req = PairRequest::new(Request::new().weight(512), Request::new().weight(1));
/// let mut pair = pairs.reserve(&LeastLoaded::new(), &LeastLoaded::new(), &req).unwrap();
/// assert_eq!(pair.plan(), Plan::Disaggregate); // 512 uncached tokens > 128
/// assert_eq!((prefill.in_flight(&"p0"), decode.in_flight(&"d0")), (Some(512), Some(1)));
/// pair.hand_off(); // the KV cache has moved to the decode worker
/// assert_eq!((prefill.in_flight(&"p0"), decode.in_flight(&"d0")), (Some(0), Some(1)));
/// drop(pair); // the stream ended
/// assert_eq!(decode.in_flight(&"d0"), Some(0));
/// ```
#[must_use = "dropping a PairReservation releases both sides' load at once; hold it while the request is in flight"]
pub struct PairReservation<P, D> {
    /// Declared first: a pair dropped whole gives back the prefill first.
    prefill: Option<P>,
    decode: D,
    /// The prefill's share of `decode`'s load, until the hand-off (Local).
    local_prefill: u32,
    plan: Plan,
}

/// A [`PairReservation`] of owned bookings: `'static + Send + Sync` when the
/// workers are, for spawned tasks.
pub type OwnedPairReservation<P, D> = PairReservation<OwnedReservation<P>, OwnedReservation<D>>;

impl<P: PairGuard, D: PairGuard> PairReservation<P, D> {
    #[inline(always)]
    pub(crate) fn disaggregated(prefill: P, decode: D) -> Self {
        Self {
            prefill: Some(prefill),
            decode,
            local_prefill: 0,
            plan: Plan::Disaggregate,
        }
    }

    /// A local pair whose prefill share is not charged yet
    /// ([`set_local_share`](Self::set_local_share) records it once it is).
    #[inline(always)]
    pub(crate) fn local(decode: D) -> Self {
        Self {
            prefill: None,
            decode,
            local_prefill: 0,
            plan: Plan::Local,
        }
    }

    /// The prefill's share of a local pair's decode booking, once charged.
    #[inline(always)]
    pub(crate) fn set_local_share(&mut self, share: u32) {
        self.local_prefill = share;
    }

    /// Where the prefill runs.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// The prefill worker, until the hand-off; `None` for a local prefill.
    pub fn prefill(&self) -> Option<&P::Worker> {
        self.prefill.as_ref().map(PairGuard::worker)
    }

    /// The prefill worker's data-parallel rank, until the hand-off; `None`
    /// for a local prefill.
    pub fn prefill_rank(&self) -> Option<u32> {
        self.prefill.as_ref().map(PairGuard::rank)
    }

    /// The decode worker.
    pub fn decode(&self) -> &D::Worker {
        self.decode.worker()
    }

    /// The decode worker's data-parallel rank (0 for a worker without ranks).
    pub fn decode_rank(&self) -> u32 {
        self.decode.rank()
    }

    /// The decode booking, to charge tokens generated
    /// ([`Reservation::add_charge`](crate::Reservation::add_charge)).
    pub fn decode_guard_mut(&mut self) -> &mut D {
        &mut self.decode
    }

    /// Whether the prefill's load is still held.
    pub fn prefilling(&self) -> bool {
        self.prefill.is_some() || self.local_prefill > 0
    }

    /// Gives back the prefill's load now (the prompt is prefilled and its KV
    /// cache is on the decode worker), keeping the decode's; a second call
    /// gives back nothing.
    #[inline]
    pub fn hand_off(&mut self) {
        drop(self.prefill.take());
        let share = core::mem::take(&mut self.local_prefill);
        if share > 0 {
            self.decode.release_part(share);
        }
    }

    /// Hands off and returns the decode booking alone.
    pub fn into_decode(mut self) -> D {
        self.hand_off();
        self.decode
    }
}

impl<P: PairGuard, D: PairGuard> fmt::Debug for PairReservation<P, D>
where
    P::Worker: fmt::Debug,
    D::Worker: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairReservation")
            .field("plan", &self.plan)
            .field("prefill", &self.prefill())
            .field("decode", self.decode())
            .field("decode_weight", &self.decode.weight())
            .finish()
    }
}
