use super::{BoxError, Upstreams};
use crate::error::Error;
use crate::pool::Pool;
use crate::sync::{Mutex, Published, lock};
use core::future::Future;
use core::hash::Hash;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::collections::HashMap;
use std::sync::Arc;
use tower::discover::{Change, Discover};

/// Workers and their inner services, changed together: a worker joins the
/// pool only once its service is known, and leaves the pool before its
/// service is forgotten. Feed it by hand or from a `Discover` stream.
///
/// ```
/// use std::sync::Arc;
/// use workerpick::Pool;
/// use workerpick::service::{Discovered, Upstreams};
///
/// let members = Discovered::new(Arc::new(Pool::new()));
/// members.insert(1u32, "svc-1").unwrap();
/// assert_eq!(members.service(&1), Some("svc-1"));
/// members.remove(&1).unwrap();
/// assert!(members.pool().is_empty() && members.service(&1).is_none());
/// ```
pub struct Discovered<W, S> {
    inner: Arc<Inner<W, S>>,
}

struct Inner<W, S> {
    pool: Arc<Pool<W>>,
    services: Published<HashMap<W, S>>,
    writer: Mutex<()>,
}

impl<W, S> Discovered<W, S>
where
    W: Clone + Eq + Hash + Send + Sync,
    S: Clone,
{
    /// An empty service map over `pool` (whose own members get no service
    /// until inserted here).
    pub fn new(pool: Arc<Pool<W>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                services: Published::new(crate::sync::Arc::new(HashMap::new())),
                writer: Mutex::new(()),
            }),
        }
    }

    /// The pool to route over.
    pub fn pool(&self) -> &Arc<Pool<W>> {
        &self.inner.pool
    }

    /// Adds `worker` with `service`, or replaces the service of a member.
    pub fn insert(&self, worker: W, service: S) -> Result<(), Error> {
        let _writer = lock(&self.inner.writer);
        let before = self.inner.services.load();
        let mut after = HashMap::clone(&before);
        after.insert(worker.clone(), service);
        self.inner.services.store(crate::sync::Arc::new(after));
        if self.inner.pool.contains(&worker) {
            return Ok(());
        }
        self.inner.pool.insert(worker).inspect_err(|_| {
            self.inner.services.store(crate::sync::Arc::clone(&before));
        })
    }

    /// Removes `worker`: new picks stop choosing it at once; requests in
    /// flight on it finish with the service they hold.
    pub fn remove(&self, worker: &W) -> Result<(), Error> {
        let _writer = lock(&self.inner.writer);
        self.inner.pool.remove(worker)?;
        let mut after = HashMap::clone(&self.inner.services.load());
        after.remove(worker);
        self.inner.services.store(crate::sync::Arc::new(after));
        Ok(())
    }

    /// Applies one change from a `Discover` stream.
    pub fn apply(&self, change: Change<W, S>) -> Result<(), Error> {
        match change {
            Change::Insert(worker, service) => self.insert(worker, service),
            Change::Remove(worker) => self.remove(&worker),
        }
    }

    /// A future that applies every change `discover` yields, and ends with
    /// it (or with its first error, or a change the pool refuses). Spawn it
    /// on your runtime.
    pub fn discover<D>(&self, discover: D) -> Membership<W, S, D>
    where
        D: Discover<Key = W, Service = S>,
    {
        Membership {
            members: self.clone(),
            discover,
        }
    }
}

impl<W, S> Clone for Discovered<W, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<W, S> Upstreams<W> for Discovered<W, S>
where
    W: Eq + Hash + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    type Service = S;

    fn service(&self, worker: &W) -> Option<S> {
        self.inner.services.load().get(worker).cloned()
    }
}

impl<W, S> core::fmt::Debug for Discovered<W, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Discovered").finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// Drives a `Discover` stream into a [`Discovered`] (see
    /// [`Discovered::discover`]).
    #[must_use = "membership changes apply only while this future is polled"]
    pub struct Membership<W, S, D> {
        members: Discovered<W, S>,
        #[pin]
        discover: D,
    }
}

impl<W, S, D> Future for Membership<W, S, D>
where
    W: Clone + Eq + Hash + Send + Sync,
    S: Clone,
    D: Discover<Key = W, Service = S>,
    D::Error: Into<BoxError>,
{
    type Output = Result<(), BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match core::task::ready!(this.discover.as_mut().poll_discover(cx)) {
                None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(e.into())),
                Some(Ok(change)) => this.members.apply(change)?,
            }
        }
    }
}
