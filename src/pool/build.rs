//! Building a pool: its limit, scan backend, latency signal and first workers.

use super::Pool;
use crate::error::Error;
use crate::raw::RawPool;
use crate::scan::{Backend, Kernel};
use crate::storage::latency::{Latency, LatencyConfig};
use crate::storage::{DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT};
use core::hash::Hash;

/// # Building a pool
impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// An empty pool for up to [`DEFAULT_MAX_WORKERS`](crate::DEFAULT_MAX_WORKERS) worker slots.
    pub fn new() -> Self {
        Self::with_limit(crate::sync::MODEL_MAX_WORKERS.unwrap_or(DEFAULT_MAX_WORKERS))
    }

    /// An empty pool for up to `max` worker slots (live workers plus removed
    /// ones still draining), `1..=`[`MAX_WORKERS_LIMIT`](crate::MAX_WORKERS_LIMIT).
    /// The counters for all of them are reserved up front, 4 bytes a slot, so
    /// that they never move.
    ///
    /// ```
    /// use workerpick::{Error, Pool};
    /// let pool = Pool::with_max_workers(2).unwrap();
    /// pool.replace([1, 2]).unwrap();
    /// assert_eq!(pool.insert(3), Err(Error::CapacityExceeded { limit: 2 }));
    /// assert!(Pool::<u32>::with_max_workers(0).is_err());
    /// ```
    pub fn with_max_workers(max: usize) -> Result<Self, Error> {
        if !(1..=MAX_WORKERS_LIMIT).contains(&max) {
            return Err(Error::InvalidConfig {
                what: "max_workers",
                why: format!("must be between 1 and {}, got {max}", MAX_WORKERS_LIMIT),
            });
        }
        Ok(Self::with_limit(max))
    }

    fn with_limit(max: usize) -> Self {
        Self {
            raw: RawPool::with_limit(max),
        }
    }

    /// A pool holding `workers`, in order; a repeated worker is an error.
    pub fn from_workers(workers: impl IntoIterator<Item = W>) -> Result<Self, Error> {
        let pool = Self::new();
        pool.replace(workers)?;
        Ok(pool)
    }

    /// Uses `backend` for the least-loaded scan instead of the detected best
    /// (one the CPU lacks runs the scalar code). Checked against the CPU here,
    /// once: picks run the kernel with no further test.
    pub fn with_scan_backend(mut self, backend: Backend) -> Self {
        self.raw.backend = Kernel::of(backend);
        self
    }

    /// Keeps a latency signal for every worker: a peak-EWMA estimate of its
    /// round trip, fed by [`Timed`](crate::Timed) reservations and read by the
    /// latency-aware modes ([`LatencyPowerOfTwo`](crate::LatencyPowerOfTwo),
    /// [`LatencyLeastLoaded`](crate::LatencyLeastLoaded)). Set before the pool
    /// is shared; a pool without it pays nothing for it. An invalid τ is an
    /// [`Error::InvalidConfig`]. Allocates 8 bytes per worker slot.
    ///
    /// ```
    /// use std::time::Duration;
    /// use workerpick::latency::LatencyConfig;
    /// use workerpick::Pool;
    /// let pool = Pool::from_workers([1, 2]).unwrap().with_latency(LatencyConfig::new()).unwrap();
    /// assert_eq!(pool.latency(&1), Some(Duration::from_millis(30))); // the default RTT
    /// assert!(Pool::from_workers([1]).unwrap().with_latency(LatencyConfig::new().tau(Duration::ZERO)).is_err());
    /// ```
    pub fn with_latency(mut self, config: LatencyConfig) -> Result<Self, Error> {
        let table = Latency::new(self.raw.slots.max(), config)?;
        self.raw.slots.counters.set_latency(table);
        Ok(self)
    }

    /// Drops the per-block lower bounds that pools with a limit of 1 024
    /// slots or more keep for least-loaded picks: every pick then scans all
    /// the counters. For the benchmarks and tests that compare the two; not
    /// part of the API.
    #[doc(hidden)]
    pub fn with_flat_scan(mut self) -> Self {
        self.raw.slots.counters.drop_bounds();
        self
    }
}
