//! Load reported from outside the pool: by the workers themselves, and by the other
//! router replicas in front of the same fleet (their [`Summary`]s).
//!
//! Every load-aware pick compares *effective* load: the pool's own in-flight count
//! plus the reported load. The reported part is folded into the same counter the
//! bookings change, so a pick reads one counter per worker, scans one array, and
//! validates its booking with the one compare-and-swap it always made: reported
//! load costs a pick nothing. A report moves a counter by compare-and-swap too, so
//! it never overwrites a booking or a release; the part of each counter that was
//! reported is kept beside it (the board), which is how the pool still knows its
//! own bookings exactly ([`Pool::in_flight`], [`Pool::summary`]). Reported load is
//! capped at [`MAX_REPORTED_LOAD`] per worker, half the counter's range.
//!
//! Reports are kept per source: each worker's own report, and each peer router's
//! last summary. A new report from a source replaces that source's earlier one, and
//! a source not heard from for the age limit ([`Pool::set_report_max_age`], 5 s by
//! default) stops counting, so a reporter that dies cannot pin a worker as busy.
//! Ageing is checked whenever a report arrives, on [`Pool::expire_reports`], and by
//! reservations: one in 1024 per thread reads the clock while some report is
//! counted, and if a source is due, the one that sees it drops it (unless a report
//! writer holds the lock; it never waits).
//!
//! Writers of reports serialize on a lock of their own; picks never take it.
//!
//! [`Pool::in_flight`]: crate::Pool::in_flight
//! [`Pool::summary`]: crate::Pool::summary
//! [`Pool::set_report_max_age`]: crate::Pool::set_report_max_age
//! [`Pool::expire_reports`]: crate::Pool::expire_reports

mod reported;
mod state;
mod summary;

pub use crate::load::reported::MAX_REPORTED_LOAD;
pub use reported::DEFAULT_REPORT_MAX_AGE;
pub(crate) use reported::{Reported, now_and_then};
pub(crate) use state::Applied;
pub use summary::Summary;
