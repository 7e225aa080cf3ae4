//! The load signals a pick compares, and how they combine. See
//! [`docs::design`](crate::docs::design), "Load signals".

pub(crate) mod health;
pub(crate) mod ratio;
