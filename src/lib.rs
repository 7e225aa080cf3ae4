//! Lock-free worker selection for high-QPS routers.
//!
//! A router calls `workerpick` once per request to choose a worker. The worker
//! set is an immutable snapshot swapped atomically; each worker's in-flight
//! load is a packed `u32` counter; a charged pick returns a [`Reservation`]
//! that gives the load back exactly once. No pick or release takes a lock;
//! through a [`Handle`] none allocates either (a pick there lends the worker;
//! [`Pool::select`] returns a clone of it, which allocates if the worker
//! type's `Clone` does).
//!
//! | mode | rule | books load |
//! |---|---|---|
//! | [`Random`] | one uniform draw over the candidates | on `reserve` |
//! | [`RoundRobin`] | a shared cache-padded cursor, `fetch_add(1)` per pick | on `reserve` |
//! | [`PowerOfTwo`] | two distinct draws, the less loaded wins; CAS-validated booking | yes |
//! | [`LeastLoaded`] | SIMD min over all candidates, uniform tie-break; CAS-validated booking | yes |
//! | [`DeviceAware`] | a full cache hit first (least loaded, books nothing), else the least-loaded CPU or accelerator by the CPU ratio | yes, except a full cache hit |
//! | [`Affinity`] | the request key's first worker on a consistent-hash ring within `⌈(1 + ε)·(total + 1)/n⌉` (pools that call [`Pool::enable_affinity`]) | yes; CAS-validated booking |
//! | [`Cost`] | the least `load − α·credit` (cache credit from [`CacheHits`]), or a range-normalised softmax over it; CAS-validated booking | yes |
//! | [`LatencyPowerOfTwo`] | as power-of-two, comparing the peak-EWMA round trip × (load + 1) ([`Pool::with_latency`]) | yes; CAS-validated booking |
//! | [`LatencyLeastLoaded`] | the least round trip × (load + 1) over all candidates | yes; CAS-validated booking |
//! | [`ReplicaLeastLoaded`] | least `own + reported ÷ d` (`d` = 2 by default): a replica's exact bookings over its peers' stale reports, against herding | yes; CAS-validated booking |
//!
//! ```
//! use workerpick::{LeastLoaded, Pool, PowerOfTwo, Request};
//!
//! let pool = Pool::from_workers(["gpu-0", "gpu-1", "gpu-2"]).unwrap();
//! let mut router = pool.handle(); // one per router thread: caches the snapshot
//!
//! // Book a request on the least-loaded worker; the load is given back on drop.
//! let r = router.reserve(&LeastLoaded::new()).unwrap();
//! assert_eq!(pool.in_flight(r.worker()), Some(1));
//!
//! // Token-aware load: charge 512 on the less loaded of two random workers.
//! let big = router.reserve_with(&PowerOfTwo::new(), &Request::new().weight(512)).unwrap();
//! assert_eq!(big.weight(), 512);
//! drop((r, big));
//! assert!(pool.loads().iter().all(|&(_, load)| load == 0));
//! ```
//!
//! In async routers, share the pool as an `Arc<Pool<W>>` and pick through an
//! [`OwnedHandle`]: its [`OwnedReservation`]s are `'static + Send + Sync` and
//! move into spawned tasks. The `futures` feature adds `hold::ReservedFuture` and
//! `hold::ReservedStream` (load held for a response's lifetime); the `tower` feature
//! adds `service::Route`, a `tower` `Service` that routes each request; the
//! `sessions` feature adds `sessions::Sessions`, session bindings with an idle TTL.
//!
//! For disaggregated LLM serving, [`pairs::Pairs`] picks a prefill worker and a
//! decode worker from two pools: preview the decode choice, decide with a
//! [`pairs::Decider`] (or the caller's [`pairs::Plan`]), then book both sides or neither.
//!
//! # What is here
//!
//! At the top, what every router uses:
//!
//! | group | names |
//! |---|---|
//! | the pool and its handles | [`Pool`] (its methods grouped: building, membership, picking, fleet controls, reports and sync, latency, affinity, inspection), [`Handle`], [`OwnedHandle`], [`PoolStats`] |
//! | modes | the table above, [`Mode`] (by name), [`Registry`] and [`Params`] (configured by name), [`Selector`] (the trait they share) |
//! | a request | [`Request`] (weight, key, mask, cache credit, knobs), [`Eligibility`] (a mask), [`CacheHits`] (cache credit) and [`WorkerToken`] (a worker as a cache index stores it), [`Rng`] |
//! | bookings | [`Reservation`], [`OwnedReservation`] |
//! | the fleet | [`WorkerInfo`] (attributes, data-parallel ranks), [`DeviceKind`], [`SlowStart`] |
//! | errors | [`Error`] |
//!
//! The rest, by topic:
//!
//! | module | what |
//! |---|---|
//! | [`pairs`] | prefill/decode pairs: [`Pairs`], [`Decider`], [`Plan`], their requests, previews and guards |
//! | [`replicas`] | several routers: the replica [`Summary`], the limits on reported load |
//! | `sessions` | session bindings with an idle TTL (feature `sessions`) |
//! | [`latency`] | the latency signal: [`LatencyConfig`], [`Timed`] samples |
//! | `hold` | load held for a response's lifetime (feature `futures`) |
//! | [`tuning`] | the cost mode's knobs: [`CreditWeight`], [`Temperature`] |
//! | [`custom`] | writing a mode: [`Context`], [`Slot`], [`Choice`], [`Intent`] |
//! | [`limits`] | worker slots, capacities, ranks, the unhealthy load |
//! | [`queue`] | admission: requests wait for room by priority and fair share |
//! | [`prefix`], `kv_events` | the prefix index, and engine KV events into it (features `kv-events`, `kv-events-zmq`) |
//! | `service` | tower and hyper glue (features `tower`, `hyper`) |
//! | [`scan`] | the SIMD backends |
//! | [`docs`] | design, proofs, performance, limitations |
//!
//! The names these modules hold are also at the root under their earlier
//! paths, hidden from these docs, so code written before the grouping
//! builds unchanged.
//!
//! See [`docs`] for the design, its invariants and their proofs.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]

mod affinity;
mod booking;
mod bounds;
mod candidates;
mod context;
mod credit;
mod device;
pub mod docs;
mod eligibility;
mod error;
mod fleet;
mod handle;
#[cfg(feature = "futures")]
#[cfg_attr(docsrs, doc(cfg(feature = "futures")))]
pub mod hold;
#[cfg(feature = "kv-events")]
#[cfg_attr(docsrs, doc(cfg(feature = "kv-events")))]
pub mod kv_events;
mod load;
mod membership;
mod mode;
mod names;
mod owned;
mod pair;
mod pool;
pub mod prefix;
pub mod queue;
mod raw;
mod registry;
mod remap;
mod request;
mod reservation;
mod rng;
pub mod scan;
mod selectors;
#[cfg(feature = "tower")]
pub mod service;
mod snapshot;
mod storage;
mod sync;
mod weights;

#[cfg(loom)]
#[doc(hidden)]
pub use affinity::binding::{Outcome, Target};
pub use credit::{CacheHits, WorkerToken};
pub use device::{DeviceKind, WorkerInfo};
pub use eligibility::Eligibility;
pub use error::Error;
pub use fleet::slow_start::SlowStart;
pub use handle::Handle;
pub use mode::Mode;
pub use owned::handle::OwnedHandle;
pub use owned::reservation::OwnedReservation;
pub use pool::{Pool, PoolStats};
pub use registry::{Params, Registry};
pub use request::Request;
pub use reservation::Reservation;
pub use rng::Rng;
pub use selectors::Selector;
use selectors::reexport;
selectors::builtins!(reexport);

/// Prefill/decode pairs: a prefill worker and a decode worker picked from two
/// pools, previewed, decided and booked together or not at all. See
/// [`docs::llm`].
pub mod pairs {
    pub use crate::pair::{
        Decider, OwnedPairReservation, PairGuard, PairHandle, PairPreview, PairRequest, PairReservation,
        Pairs, Plan,
    };
}

/// Several routers over one fleet: the replica [`Summary`]
/// each sends the others, and the limits on reported load. See
/// [`docs::fleets`].
pub mod replicas {
    pub use crate::load::reports::{DEFAULT_REPORT_MAX_AGE, MAX_REPORTED_LOAD, SessionBinding, Summary};
}

/// Session bindings with an idle TTL (feature `sessions`): each session
/// stays on one worker while that worker can take it. See
/// [`docs::affinity`].
#[cfg(feature = "sessions")]
pub mod sessions {
    pub use crate::affinity::sessions::{PinnedSessions, Sessions, Stickiness};
}

/// The latency signal: a peak-EWMA round trip per worker
/// ([`Pool::with_latency`]), fed by [`Timed`] reservations.
pub mod latency {
    pub use crate::storage::latency::{LatencyConfig, Timeable, Timed};
}

/// Writing a mode of your own: the [`Selector`] trait's inputs and answer.
/// See [`docs::design`] for what a mode must honour.
pub mod custom {
    pub use crate::context::{Context, Intent, Slot};
    pub use crate::selectors::{Choice, Selector};
}

/// The cost mode's knobs, per mode or per [`Request`].
pub mod tuning {
    pub use crate::credit::tuning::{CreditWeight, Temperature};
}

/// The crate's limits: worker slots, capacities, ranks, and the load that
/// marks a worker unhealthy.
pub mod limits {
    pub use crate::device::{MAX_CAPACITY, MAX_RANKS};
    pub use crate::load::health::UNHEALTHY_LOAD;
    pub use crate::storage::{DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT};
}

// The paths before the names were grouped, kept for code written against
// them (hidden from the docs; the grouped paths are the ones documented).
#[cfg(feature = "sessions")]
#[doc(hidden)]
pub use affinity::sessions::{PinnedSessions, Sessions, Stickiness};
#[doc(hidden)]
pub use context::{Context, Intent, Slot};
#[doc(hidden)]
pub use device::{MAX_CAPACITY, MAX_RANKS};
#[cfg(feature = "futures")]
#[doc(hidden)]
pub use hold::{ReservedFuture, ReservedStream};
#[doc(hidden)]
pub use load::health::UNHEALTHY_LOAD;
#[doc(hidden)]
pub use load::reports::{DEFAULT_REPORT_MAX_AGE, MAX_REPORTED_LOAD, SessionBinding, Summary};
#[doc(hidden)]
pub use pair::{
    Decider, OwnedPairReservation, PairGuard, PairHandle, PairPreview, PairRequest, PairReservation, Pairs,
    Plan,
};
#[doc(hidden)]
pub use selectors::Choice;
#[doc(hidden)]
pub use selectors::{CreditWeight, Temperature};
#[doc(hidden)]
pub use storage::latency::{LatencyConfig, Timeable, Timed};
#[doc(hidden)]
pub use storage::{DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
