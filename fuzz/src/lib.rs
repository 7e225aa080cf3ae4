//! The logic of the fuzz targets, one module per target. Each target in
//! `fuzz_targets/` only hands its input to `run`; the root crate's stable test
//! `tests/fuzz_replay.rs` includes these same files and replays the committed
//! seed corpus through `run_bytes`, so `cargo test` covers every target.

pub mod concurrent;
#[cfg(feature = "kv-events")]
pub mod kv_events;
pub mod ops;
pub mod page;
pub mod prefix;
pub mod ranks;
pub mod scan;
pub mod summary;
