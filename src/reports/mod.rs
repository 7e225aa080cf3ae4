//! Load reported from outside the pool: by the workers themselves, and by the other
//! router replicas in front of the same fleet (their [`Summary`]s).
//!
//! Every load-aware pick compares *effective* load: the pool's own in-flight count
//! plus the reported load, saturating at `u32::MAX`. The reported part is advisory:
//! it is read with the counters in the same scan, never booked or validated, and it
//! may be stale. Local bookings stay exact, validated by compare-and-swap on the
//! pool's own counter.
//!
//! Reports are kept per source: each worker's own report, and each peer router's
//! last summary. A new report from a source replaces that source's earlier one, and
//! a source not heard from for the age limit ([`Pool::set_report_max_age`], 5 s by
//! default) stops counting, so a reporter that dies cannot pin a worker as busy.
//! Ageing is checked whenever a report arrives, on [`Pool::expire_reports`], and by
//! picks themselves: one pick in 1024 per thread reads the clock while some report
//! is present, and if a source is due, the pick that sees it (only if no writer
//! holds the reports) drops it.
//!
//! Writers of reports serialize on a lock of their own; picks never take it. What a
//! pick reads is one array of cells, one per slot, equal to the sum of every
//! source's report for that slot, and a switch that is on while any cell is not
//! zero: a pool without reports scans its counters alone, as fast as before.

mod api;
mod board;
mod state;
mod summary;

pub use board::DEFAULT_REPORT_MAX_AGE;
pub(crate) use board::{Board, Reported};
pub use summary::Summary;
