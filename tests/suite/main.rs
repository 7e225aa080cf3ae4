//! The integration tests, one binary: a module per concern (each was its own test
//! binary, and linking the crate, and most of them proptest, into 26 binaries made a cold `cargo test`
//! spend minutes linking on 2 cores).
//!
//! Three binaries stay apart: `tests/stress.rs` (the real-thread stress tests that the
//! Miri and aarch64 gates run on their own), `tests/fuzz_replay.rs` (the fuzz targets'
//! logic names its siblings through `crate::`, so it needs a crate root of its own) and
//! this one.
//!
//! `hold`, `route`, `http`, `sessions`, `kv_events` and `kv_events_zmq` test the `futures`,
//! `tower`, `hyper`, `sessions`, `kv-events` and `kv-events-zmq` features: without them (a
//! plain `cargo test`, which builds neither msgpack nor ZMQ) those modules are empty, and
//! `cargo test --all-features --test suite` runs them (`ci/test.sh` does).
//!
//! Run one module: `cargo test --test suite -- fleet::`.

// Counts each thread's allocations, for `alloc` and `device_aware`; other tests
// allocate freely on their own threads.
#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

mod common;

mod accounting;
mod affinity;
mod alloc;
mod churn;
mod device_aware;
mod ejection;
mod fleet;
mod fuzz_regressions;
mod hold;
mod http;
mod kv_events;
mod kv_events_zmq;
mod latency;
mod layout;
mod owned;
mod panic_safety;
mod phased;
mod prefix;
mod queue;
mod ranks;
mod registry;
mod reported;
mod route;
mod sessions;
mod small_defects;
mod summarised;
mod summarised_weighted;
mod threads;
mod writer_memory;
