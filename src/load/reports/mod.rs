//! Load reported from outside the pool: workers' own reports and peer
//! replicas' [`Summary`]s, kept per source under a report lock of their own
//! (picks never take it), folded into the counters (`load/reported.rs`), and
//! aged out after [`DEFAULT_REPORT_MAX_AGE`] unless refreshed. How reported
//! load combines with the other signals, and why nothing is lost or
//! inherited: [`docs::load`](crate::docs::load), "Reported load".

mod reported;
mod shares;
mod state;
mod summary;

pub use crate::load::reported::MAX_REPORTED_LOAD;
pub use reported::DEFAULT_REPORT_MAX_AGE;
pub(crate) use reported::{Reported, now_and_then};
pub use shares::Shares;
pub(crate) use state::Applied;
pub use summary::{SessionBinding, Summary};
