//! Per-block lower bounds, and the least-loaded picks that read them instead
//! of every lane on large pools: bounds on the counters ([`loads`]) and on
//! the weighted scores ([`scores`]), the raise both share ([`raise`]), and
//! the two picks ([`least`], [`least_scored`]), which run on the scan's
//! kernels. The invariant and its proof: [`docs::internal::bounds`](crate::docs::internal::bounds).

pub(crate) mod least;
pub(crate) mod least_scored;
pub(crate) mod loads;
mod raise;
pub(crate) mod scores;
mod tied;
