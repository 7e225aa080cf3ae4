//! Notes rendered with the API docs; nothing to call here.
//!
//! For users of the crate: [`fleets`] (capacities, slow start, draining,
//! health), [`load`] (the load signals a pick compares), [`affinity`],
//! [`llm`] (the cost pick, phased load, pairs), [`prefix`] (the prefix
//! index), [`admission`] (the queue in front of the pick), [`http`] (the HTTP glue), [`performance`] and [`limitations`].
//!
//! For maintainers: [`design`] (how the crate is built, what must stay true
//! and what proves it), which links the pages under [`internal`].

pub mod admission;
pub mod affinity;
pub mod design;
pub mod fleets;
pub mod http;
pub mod internal;
pub mod limitations;
pub mod llm;
pub mod load;
pub mod performance;
pub mod prefix;
