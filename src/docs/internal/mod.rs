//! The maintainers' pages: how the storage, the scans and the summarised
//! picks are built, and what proves them. The users' pages are one level up;
//! [`design`](crate::docs::design) is where a maintainer starts.

pub mod admission;
pub mod bounds;
pub mod proofs;
pub mod scan;
pub mod sets;
