use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A bound on the requests in flight through every [`HyperRoute`] that shares
/// it: a request over the bound is answered 503 at once (shed), not queued.
/// A request counts from its `call` until its response body is dropped
/// (after its last frame, or earlier if the client goes away), or until it
/// fails.
///
/// Admitting is one compare-and-swap on a shared counter, and the permit a
/// reference-count increment: no lock, no allocation. The bound is exact:
/// never more than `limit` requests hold a permit at once, and no request is
/// shed while fewer than `limit` do.
///
/// This is the global bound. A bound per worker is the pool's own: give each
/// worker a capacity ([`WorkerInfo::capacity`](crate::WorkerInfo::capacity))
/// and set the admission limit to the fleet's total, or mark a worker
/// unhealthy ([`Pool::set_healthy`](crate::Pool::set_healthy)) while its own
/// [`Pool::in_flight`](crate::Pool::in_flight) is over its bound.
///
/// ```
/// use workerpick::service::Admission;
/// let admission = Admission::new(2);
/// assert_eq!((admission.limit(), admission.in_flight(), admission.shed()), (2, 0, 0));
/// ```
///
/// [`HyperRoute`]: super::HyperRoute
#[derive(Clone, Debug)]
pub struct Admission {
    gate: Arc<Gate>,
}

#[derive(Debug)]
struct Gate {
    limit: u32,
    admitted: AtomicU32,
    shed: AtomicU64,
}

/// One admitted request's place under an [`Admission`] bound, given back
/// when dropped. [`HyperRoute`](super::HyperRoute) holds one until its
/// response body is dropped; a path of your own that answers outside the
/// route holds one from [`Admission::try_admit`] for as long as its answer.
#[derive(Debug)]
#[must_use = "the place is given back as soon as the permit is dropped"]
pub struct Permit(Arc<Gate>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::Release);
    }
}

impl Admission {
    /// At most `limit` requests in flight at once (0 sheds every request).
    pub fn new(limit: u32) -> Self {
        Self {
            gate: Arc::new(Gate {
                limit,
                admitted: AtomicU32::new(0),
                shed: AtomicU64::new(0),
            }),
        }
    }

    /// The bound.
    pub fn limit(&self) -> u32 {
        self.gate.limit
    }

    /// Requests holding a permit now.
    pub fn in_flight(&self) -> u32 {
        self.gate.admitted.load(Ordering::Relaxed)
    }

    /// Requests shed so far.
    pub fn shed(&self) -> u64 {
        self.gate.shed.load(Ordering::Relaxed)
    }

    /// A permit, or `None` (counted as shed) when `limit` are in flight:
    /// what [`HyperRoute`](super::HyperRoute) does for each request, for a
    /// path of your own that shares the bound.
    ///
    /// ```
    /// use workerpick::service::Admission;
    /// let admission = Admission::new(1);
    /// let permit = admission.try_admit().expect("room for one");
    /// assert!(admission.try_admit().is_none());
    /// drop(permit);
    /// assert_eq!((admission.in_flight(), admission.shed()), (0, 1));
    /// ```
    pub fn try_admit(&self) -> Option<Permit> {
        let gate = &self.gate;
        let admitted = gate
            .admitted
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                (n < gate.limit).then_some(n + 1)
            });
        match admitted {
            Ok(_) => Some(Permit(gate.clone())),
            Err(_) => {
                gate.shed.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_sheds_beyond_and_readmits_after_a_release() {
        let admission = Admission::new(2);
        let a = admission.try_admit().unwrap();
        let b = admission.try_admit().unwrap();
        assert!(admission.try_admit().is_none());
        assert_eq!((admission.in_flight(), admission.shed()), (2, 1));
        drop(a);
        let c = admission.try_admit().unwrap();
        assert!(admission.try_admit().is_none());
        drop((b, c));
        assert_eq!((admission.in_flight(), admission.shed()), (0, 2));
        assert!(Admission::new(0).try_admit().is_none());
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn never_more_than_the_limit_from_many_threads() {
        let admission = Admission::new(3);
        let peak = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        if let Some(permit) = admission.try_admit() {
                            peak.fetch_max(admission.in_flight(), Ordering::Relaxed);
                            drop(permit);
                        }
                    }
                });
            }
        });
        assert!(peak.load(Ordering::Relaxed) <= 3);
        assert_eq!(admission.in_flight(), 0);
    }
}
