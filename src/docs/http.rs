//! The HTTP glue: admission and readiness.
//!
//!
//! # Admission and readiness in the HTTP glue
//! `Route::poll_ready` is always ready (the worker is chosen in `call`), so
//! it cannot push back. The bound is `service::Admission` (feature `hyper`)
//! on `HyperRoute`: one compare-and-swap loop on a shared counter before
//! the pick (exact: never over the limit, never a spurious shed), a 503
//! without a pick when full, and a permit (an `Arc` clone) carried by the
//! response body and given back when hyper drops it.
