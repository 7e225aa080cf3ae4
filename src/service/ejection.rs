use super::{BoxError, Upstreams};
use crate::pool::Pool;
use arc_swap::ArcSwap;
use core::future::Future;
use core::hash::Hash;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use http::{Request, Response};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use tower_service::Service;

/// Failure ejection (Envoy's "consecutive 5xx" outlier detection): a worker
/// whose requests fail `fail_after` times in a row (a 5xx answer, or an
/// error from its service: connect refused, reset, timeout) is marked
/// unhealthy in the pool ([`Pool::set_healthy`]) for `eject_for`, then let
/// back in with its count at zero; one success resets the count.
///
/// [`watch`](Ejection::watch) wraps the [`Upstreams`] of a
/// [`Route`](super::Route) so that every answer is counted; a path of your
/// own that forwards outside the route calls [`record`](Ejection::record).
/// Counting is a few relaxed atomics per answer, off the pick; the
/// per-worker counters are found through a map swapped whole (copy on
/// write) when a worker is first seen. Ejecting spawns the re-admission
/// timer on tokio: record from within a tokio runtime.
///
/// There is no floor (Envoy's `max_ejection_percent`): a fleet whose
/// every worker fails is ejected whole, and requests then fail fast with [`Error::NoEligibleWorker`](crate::Error::NoEligibleWorker)
/// until the first re-admission.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use workerpick::Pool;
/// use workerpick::service::Ejection;
///
/// let pool = Arc::new(Pool::from_workers(["a", "b"]).unwrap());
/// let ejection = Ejection::new(&pool, 2, Duration::from_millis(20));
/// ejection.record(&"a", true);
/// assert_eq!(pool.is_healthy(&"a"), Some(true)); // one failure in a row
/// ejection.record(&"a", true);
/// assert_eq!(pool.is_healthy(&"a"), Some(false)); // two: ejected
/// assert_eq!((ejection.stats(&"a").errors, ejection.stats(&"a").ejections), (2, 1));
/// tokio::time::sleep(Duration::from_millis(60)).await;
/// assert_eq!(pool.is_healthy(&"a"), Some(true)); // let back in
/// # }
/// ```
pub struct Ejection<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for Ejection<W> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<W> core::fmt::Debug for Ejection<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ejection")
            .field("fail_after", &self.shared.fail_after)
            .field("eject_for", &self.shared.eject_for)
            .finish_non_exhaustive()
    }
}

struct Shared<W> {
    pool: Arc<Pool<W>>,
    fail_after: u32,
    eject_for: Duration,
    counts: ArcSwap<HashMap<W, Arc<Counts>>>,
}

#[derive(Default)]
struct Counts {
    errors: AtomicU64,
    consecutive: AtomicU32,
    ejected: AtomicBool,
    ejections: AtomicU64,
}

/// One worker's failure counts ([`Ejection::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EjectionStats {
    /// Failed answers so far.
    pub errors: u64,
    /// Failed answers in a row now.
    pub consecutive: u32,
    /// Times it was ejected.
    pub ejections: u64,
    /// Whether it is ejected now.
    pub ejected: bool,
}

impl<W: Clone + Eq + Hash + Send + Sync + 'static> Ejection<W> {
    /// Ejects `pool`'s workers after `fail_after` failures in a row (at
    /// least 1) for `eject_for`.
    pub fn new(pool: &Arc<Pool<W>>, fail_after: u32, eject_for: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                pool: pool.clone(),
                fail_after: fail_after.max(1),
                eject_for,
                counts: ArcSwap::from_pointee(HashMap::new()),
            }),
        }
    }

    fn counts(&self, worker: &W) -> Arc<Counts> {
        if let Some(c) = self.shared.counts.load().get(worker) {
            return c.clone();
        }
        let mut found = None;
        self.shared.counts.rcu(|map| {
            let mut map = HashMap::clone(map);
            found = Some(map.entry(worker.clone()).or_default().clone());
            map
        });
        found.expect("rcu ran its closure")
    }

    /// Counts one answer of `worker`'s: `failed` (a 5xx or an error) or not;
    /// ejects it when this is its `fail_after`th failure in a row.
    pub fn record(&self, worker: &W, failed: bool) {
        let counts = self.counts(worker);
        if !failed {
            counts.consecutive.store(0, Ordering::Relaxed);
            return;
        }
        counts.errors.fetch_add(1, Ordering::Relaxed);
        let run = counts
            .consecutive
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if run < self.shared.fail_after || counts.ejected.swap(true, Ordering::AcqRel) {
            return;
        }
        counts.ejections.fetch_add(1, Ordering::Relaxed);
        // A worker no longer in the pool has no mark to set.
        let _ = self.shared.pool.set_healthy(worker, false);
        let (shared, worker) = (self.shared.clone(), worker.clone());
        tokio::spawn(async move {
            tokio::time::sleep(shared.eject_for).await;
            counts.consecutive.store(0, Ordering::Relaxed);
            let _ = shared.pool.set_healthy(&worker, true);
            // Pairs with the swap above: a failure from here on may eject again.
            counts.ejected.store(false, Ordering::Release);
        });
    }

    /// Drops `worker`'s counts (for a worker gone for good: the counts of
    /// every worker ever recorded are kept until then, so a fleet that
    /// churns through new names forgets the old ones here). An ejection
    /// under way still lets it back in when its time is up.
    pub fn forget(&self, worker: &W) {
        if self.shared.counts.load().contains_key(worker) {
            self.shared.counts.rcu(|map| {
                let mut map = HashMap::clone(map);
                map.remove(worker);
                map
            });
        }
    }

    /// `worker`'s counts (all zero before its first answer).
    pub fn stats(&self, worker: &W) -> EjectionStats {
        match self.shared.counts.load().get(worker) {
            Some(c) => EjectionStats {
                errors: c.errors.load(Ordering::Relaxed),
                consecutive: c.consecutive.load(Ordering::Relaxed),
                ejections: c.ejections.load(Ordering::Relaxed),
                ejected: c.ejected.load(Ordering::Acquire),
            },
            None => EjectionStats::default(),
        }
    }

    /// `upstreams` with every answer of their services counted here.
    pub fn watch<U: Upstreams<W>>(&self, upstreams: U) -> Ejecting<W, U> {
        Ejecting {
            ejection: self.clone(),
            upstreams,
        }
    }
}

/// [`Upstreams`] whose services count their answers in an [`Ejection`]
/// ([`Ejection::watch`]).
pub struct Ejecting<W, U> {
    ejection: Ejection<W>,
    upstreams: U,
}

impl<W, U> core::fmt::Debug for Ejecting<W, U> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ejecting")
            .field("ejection", &self.ejection)
            .finish_non_exhaustive()
    }
}

impl<W, U> Upstreams<W> for Ejecting<W, U>
where
    W: Clone + Eq + Hash + Send + Sync + 'static,
    U: Upstreams<W>,
{
    type Service = Ejected<W, U::Service>;

    fn service(&self, worker: &W) -> Option<Self::Service> {
        Some(Ejected {
            inner: self.upstreams.service(worker)?,
            ejection: self.ejection.clone(),
            worker: worker.clone(),
        })
    }
}

/// One worker's service, its answers counted ([`Ejecting`]).
pub struct Ejected<W, S> {
    inner: S,
    ejection: Ejection<W>,
    worker: W,
}

impl<W, S, B, RB> Service<Request<B>> for Ejected<W, S>
where
    W: Clone + Eq + Hash + Send + Sync + 'static,
    S: Service<Request<B>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = EjectedFuture<W, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self.inner.poll_ready(cx) {
            Poll::Ready(Err(e)) => {
                self.ejection.record(&self.worker, true);
                Poll::Ready(Err(e.into()))
            }
            ready => ready.map_err(Into::into),
        }
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        EjectedFuture {
            inner: self.inner.call(request),
            watch: Some((self.ejection.clone(), self.worker.clone())),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of an [`Ejected`] service.
    pub struct EjectedFuture<W, F> {
        #[pin]
        inner: F,
        watch: Option<(Ejection<W>, W)>,
    }
}

impl<W, F, RB, E> Future for EjectedFuture<W, F>
where
    W: Clone + Eq + Hash + Send + Sync + 'static,
    F: Future<Output = Result<Response<RB>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<RB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = core::task::ready!(this.inner.poll(cx)).map_err(Into::into);
        if let Some((ejection, worker)) = this.watch.take() {
            let failed = answer.as_ref().map_or(true, |r| r.status().is_server_error());
            ejection.record(&worker, failed);
        }
        Poll::Ready(answer)
    }
}
