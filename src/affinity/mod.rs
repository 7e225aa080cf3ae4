//! Request affinity: the consistent-hash ring that
//! [`Affinity`](crate::Affinity) walks, built by the writer with each
//! snapshot of a pool that enabled it. See
//! [`docs::design`](crate::docs::design) ("Bounded-load affinity").

mod api;
pub(crate) mod ring;
